"""aiograd.optim.lr_scheduler against torch.optim.lr_scheduler: the learning-rate sequences
(recursive and closed form) are torch's number for number, state dicts have torch's content and
resume, and the warnings and errors are torch's word for word."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd import optim
from aiograd.optim import lr_scheduler

pytestmark = requires_torch


def _decay(epoch: int) -> float:
    return 0.95**epoch


def _warmup(epoch: int) -> float:
    return min(1.0, (epoch + 1) / 5)


SCHEDULERS: list[tuple[str, dict[str, Any]]] = [
    ("StepLR", {"step_size": 7, "gamma": 0.5}),
    ("StepLR", {"step_size": 1}),
    ("MultiStepLR", {"milestones": [3, 8, 8, 20], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001}),
    ("CosineAnnealingLR", {"T_max": 7}),
    ("LambdaLR", {"lr_lambda": _decay}),
    ("LambdaLR", {"lr_lambda": [_decay, _warmup]}),
    ("LinearLR", {"start_factor": 0.25, "total_iters": 6}),
    ("LinearLR", {}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(SCHEDULERS)]


def _optimizers() -> tuple[optim.Optimizer, Any]:
    """The same two-group SGD in each library (lr 0.1 and 0.05)."""
    p = [ag.tensor(np.ones(2), requires_grad=True) for _ in range(2)]
    tp = [torch.ones(2, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    opt = optim.SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.05}], lr=0.1)
    topt = torch.optim.SGD([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.05}], lr=0.1)
    return opt, topt


def _sequence(opt: Any, scheduler: Any, epochs: int) -> list[tuple[list[float], list[float]]]:
    seen = [(list(scheduler.get_last_lr()), [g["lr"] for g in opt.param_groups])]
    for _ in range(epochs):
        opt.step()
        scheduler.step()
        seen.append((list(scheduler.get_last_lr()), [g["lr"] for g in opt.param_groups]))
    return seen


def _both(name: str, kw: dict[str, Any], **extra: Any) -> tuple[Any, Any, Any, Any]:
    opt, topt = _optimizers()
    return opt, getattr(lr_scheduler, name)(opt, **kw, **extra), topt, getattr(torch.optim.lr_scheduler, name)(topt, **kw, **extra)


@pytest.mark.parametrize(("name", "kw"), SCHEDULERS, ids=IDS)
def test_lr_sequence_is_torchs_exactly(name: str, kw: dict[str, Any]) -> None:
    opt, sched, topt, tsched = _both(name, kw)
    assert _sequence(opt, sched, 40) == _sequence(topt, tsched, 40)  # (==: the same floats)
    assert opt.param_groups[0]["initial_lr"] == 0.1 and sched.base_lrs == tsched.base_lrs


@pytest.mark.parametrize(("name", "kw"), SCHEDULERS, ids=IDS)
def test_closed_form_step_with_epoch_is_torchs_and_warns(name: str, kw: dict[str, Any]) -> None:
    opt, sched, topt, tsched = _both(name, kw)
    got, expected = [], []
    for epoch in (3, 10, 4, 17, 30):
        opt.step()
        topt.step()
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            sched.step(epoch)
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            tsched.step(epoch)
        assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
        assert [w.category for w in ours] == [w.category for w in theirs]
        got.append(sched.get_last_lr())
        expected.append(tsched.get_last_lr())
    assert got == expected


@pytest.mark.parametrize(("name", "kw"), SCHEDULERS, ids=IDS)
def test_state_dict_is_torchs_and_resumes(name: str, kw: dict[str, Any]) -> None:
    opt, sched, topt, tsched = _both(name, kw)
    _sequence(opt, sched, 12)
    _sequence(topt, tsched, 12)
    assert sched.state_dict() == tsched.state_dict()
    # A new optimizer and scheduler, resumed from the saved dicts, continue the sequence.
    saved_opt, saved_sched = opt.state_dict(), sched.state_dict()
    opt2, _ = _optimizers()
    sched2 = getattr(lr_scheduler, name)(opt2, **kw)
    opt2.load_state_dict(saved_opt)  # (after making the scheduler, whose first step sets lrs)
    sched2.load_state_dict(saved_sched)
    assert _sequence(opt2, sched2, 20)[1:] == _sequence(topt, tsched, 20)[1:]


@pytest.mark.parametrize(("name", "kw"), SCHEDULERS, ids=IDS)
def test_resuming_with_last_epoch_is_torchs(name: str, kw: dict[str, Any]) -> None:
    opt, topt = _optimizers()
    for o in (opt, topt):
        for group in o.param_groups:
            group["initial_lr"] = group["lr"] * 2
    sched = getattr(lr_scheduler, name)(opt, **kw, last_epoch=4)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kw, last_epoch=4)
    assert _sequence(opt, sched, 15) == _sequence(topt, tsched, 15)


def _warnings_of(action: Callable[[], Any]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [str(w.message) for w in caught]


def test_stepping_the_scheduler_first_warns_as_torch() -> None:
    opt, sched, topt, tsched = _both("StepLR", {"step_size": 2})
    ours, theirs = _warnings_of(sched.step), _warnings_of(tsched.step)
    assert ours == theirs and len(ours) == 1 and "before `optimizer.step()`" in ours[0]
    assert _warnings_of(sched.step) == _warnings_of(tsched.step) == []  # (only on the first step)


def test_an_optimizer_step_replaced_after_the_scheduler_warns_as_torch() -> None:
    opt, sched, topt, tsched = _both("ExponentialLR", {"gamma": 0.5})
    opt.step = lambda closure=None: None  # type: ignore[method-assign]
    topt.step = lambda closure=None: None
    ours, theirs = _warnings_of(sched.step), _warnings_of(tsched.step)
    assert ours == theirs and len(ours) == 1 and "overridden" in ours[0]


async def test_optimizer_step_wrapped_once_and_step_async_counts() -> None:
    opt, sched, _, _ = _both("StepLR", {"step_size": 3})
    wrapped = opt.step
    lr_scheduler.ExponentialLR(opt, gamma=0.5)
    assert opt.step is wrapped  # a second scheduler does not wrap again
    await opt.step_async()
    assert _warnings_of(sched.step) == []


def test_get_lr_outside_step_warns_as_torch() -> None:
    _, sched, _, tsched = _both("CosineAnnealingLR", {"T_max": 5})
    ours, theirs = _warnings_of(sched.get_lr), _warnings_of(tsched.get_lr)
    assert ours == theirs and ours == ["To get the last learning rate computed by the scheduler, please use `get_last_lr()`."]


def _same_error(ours: Callable[[], Any], theirs: Callable[[], Any], kind: type[Exception]) -> None:
    with pytest.raises(kind) as expected:
        theirs()
    with pytest.raises(kind) as got:
        ours()
    assert str(got.value) == str(expected.value)


def test_errors_are_torchs() -> None:
    opt, topt = _optimizers()
    _same_error(lambda: lr_scheduler.StepLR(object(), 3), lambda: torch.optim.lr_scheduler.StepLR(object(), 3), TypeError)
    _same_error(lambda: lr_scheduler.StepLR(opt, 3, last_epoch=2), lambda: torch.optim.lr_scheduler.StepLR(topt, 3, last_epoch=2), KeyError)
    _same_error(
        lambda: lr_scheduler.LambdaLR(opt, [_decay]), lambda: torch.optim.lr_scheduler.LambdaLR(topt, [_decay]), ValueError
    )
    for kw in ({"start_factor": 0.0}, {"start_factor": 1.5}, {"end_factor": -0.1}, {"end_factor": 2.0}):
        _same_error(
            lambda kw=kw: lr_scheduler.LinearLR(opt, **kw),
            lambda kw=kw: torch.optim.lr_scheduler.LinearLR(topt, **kw),
            ValueError,
        )


def test_lambda_objects_state_is_saved_as_torch() -> None:
    class Scale:
        def __init__(self) -> None:
            self.factor = 0.5

        def __call__(self, epoch: int) -> float:
            return self.factor**epoch

    opt, topt = _optimizers()
    sched = lr_scheduler.LambdaLR(opt, [Scale(), _decay])
    tsched = torch.optim.lr_scheduler.LambdaLR(topt, [Scale(), _decay])
    assert sched.state_dict()["lr_lambdas"] == tsched.state_dict()["lr_lambdas"] == [{"factor": 0.5}, None]
    saved = sched.state_dict()
    saved["lr_lambdas"][0]["factor"] = 0.25
    sched.load_state_dict(saved)
    assert sched.lr_lambdas[0].factor == 0.25 and "lr_lambdas" in saved


ONE_CYCLE = [
    ("SGD", {"max_lr": 0.5, "total_steps": 30}),
    ("SGD", {"max_lr": [0.5, 0.2], "epochs": 3, "steps_per_epoch": 10, "anneal_strategy": "linear"}),
    ("Adam", {"max_lr": 0.01, "total_steps": 30, "three_phase": True, "pct_start": 0.25}),
    ("Adam", {"max_lr": 0.01, "total_steps": 30, "cycle_momentum": False, "div_factor": 10.0}),
]


@pytest.mark.parametrize(("name", "kw"), ONE_CYCLE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(ONE_CYCLE)])
def test_one_cycle_lr_and_momentum_are_torchs(name: str, kw: dict[str, Any]) -> None:
    p = [ag.tensor(np.ones(2), requires_grad=True) for _ in range(2)]
    tp = [torch.ones(2, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    extra = {"momentum": 0.9} if name == "SGD" else {}
    opt = getattr(optim, name)([{"params": [p[0]]}, {"params": [p[1]]}], lr=0.1, **extra)
    topt = getattr(torch.optim, name)([{"params": [tp[0]]}, {"params": [tp[1]]}], lr=0.1, **extra)
    sched = lr_scheduler.OneCycleLR(opt, **kw)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, **kw)

    def groups(o: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in g.items() if k not in ("params", "foreach")} for g in o.param_groups]

    assert groups(opt) == groups(topt)
    for _ in range(30):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert sched.get_last_lr() == tsched.get_last_lr() and groups(opt) == groups(topt)
    _same_error(sched.step, tsched.step, ValueError)  # (one step past total_steps)


def test_one_cycle_errors_are_torchs() -> None:
    opt, topt = _optimizers()
    # (every optimizer here has a momentum or betas: a bare Optimizer has neither)
    rms = optim.Optimizer([ag.ones(1, requires_grad=True)], {"lr": 0.1})
    trms = torch.optim.Optimizer([torch.ones(1, requires_grad=True)], {"lr": 0.1})
    cases = [
        (opt, topt, {"max_lr": 1.0}),
        (opt, topt, {"max_lr": 1.0, "total_steps": 0}),
        (opt, topt, {"max_lr": 1.0, "epochs": 0, "steps_per_epoch": 3}),
        (opt, topt, {"max_lr": 1.0, "epochs": 2, "steps_per_epoch": -3}),
        (opt, topt, {"max_lr": 1.0, "total_steps": 5, "pct_start": 1}),
        (opt, topt, {"max_lr": 1.0, "total_steps": 5, "anneal_strategy": "exp"}),
        (opt, topt, {"max_lr": [1.0], "total_steps": 5}),
        (rms, trms, {"max_lr": 1.0, "total_steps": 5}),
    ]
    for ours, theirs, kw in cases:
        _same_error(
            lambda ours=ours, kw=kw: lr_scheduler.OneCycleLR(ours, **kw),
            lambda theirs=theirs, kw=kw: torch.optim.lr_scheduler.OneCycleLR(theirs, **kw),
            ValueError,
        )
