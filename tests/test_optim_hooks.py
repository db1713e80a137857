"""Optimizer hooks (step pre-/post-hooks, global and per optimizer; state_dict and load_state_dict
pre-/post-hooks): each scenario runs on torch.optim and aiograd.optim with the same parameters,
and the call orders, the hooks' arguments, the results and the error messages are compared."""

from __future__ import annotations

import copy
import importlib
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.optim as optim
from aiograd._core._node import RemovableHandle

pytestmark = requires_torch


def _libs() -> list[tuple[Any, Any, Any]]:
    """(tensor module, optim package, optimizer module) for torch, then aiograd."""
    # (torch.optim deletes its attribute ``optimizer``: the module is imported by name)
    return [(torch, torch.optim, importlib.import_module("torch.optim.optimizer")), (ag, optim, optim.optimizer)]


def _param(T: Any, value: list[float]) -> Any:
    p = T.nn.Parameter(T.tensor(value))
    p.grad = T.tensor([0.5] * len(value))
    return p


def _plain(x: Any) -> Any:
    """Hook arguments as comparable data."""
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (ag.Tensor, torch.Tensor)):
        return np.round(np.asarray(x.tolist(), dtype=np.float64), 5).tolist()
    if isinstance(x, (torch.optim.Optimizer, optim.Optimizer)):
        return f"<{type(x).__name__}>"
    if callable(x):
        return f"<fn {x.__name__}>"
    return x


def _both(case: Callable[..., Any]) -> tuple[Any, Any]:
    theirs, ours = (case(*lib) for lib in _libs())
    return ours, theirs


# ------------------------------------------------------------------------------ step hooks
def test_step_hooks_order_and_arguments():
    def case(T: Any, optim_: Any, module: Any) -> Any:
        log: list[Any] = []
        p = _param(T, [1.0, 2.0])
        opt = optim_.SGD([p], lr=0.1)
        handles = [
            opt.register_step_pre_hook(lambda o, args, kwargs: log.append(("pre", o is opt, _plain(args), _plain(kwargs)))),
            opt.register_step_post_hook(lambda o, args, kwargs: log.append(("post", _plain(args), _plain(p)))),
            module.register_optimizer_step_pre_hook(lambda o, args, kwargs: log.append(("global-pre", _plain(p)))),
            module.register_optimizer_step_post_hook(lambda o, args, kwargs: log.append(("global-post", _plain(args)))),
        ]
        try:
            opt.step()

            def closure() -> float:
                log.append("closure")
                return 3.0

            log.append(("loss", opt.step(closure)))
            log.append(("loss", opt.step(closure=closure)))  # a keyword argument: in kwargs
        finally:
            for handle in handles:
                handle.remove()
        opt.step()  # no hooks any more
        log.append(_plain(p))
        return log

    ours, theirs = _both(case)
    assert [e if isinstance(e, str) else e[0] for e in theirs[:4]] == ["global-pre", "pre", "post", "global-post"]
    assert ours == theirs


def test_pre_hook_replacing_the_arguments():
    def case(T: Any, optim_: Any, module: Any) -> Any:
        log: list[Any] = []
        p = _param(T, [1.0])
        opt = optim_.SGD([p], lr=1.0)

        def other() -> float:
            log.append("other closure")
            return 7.0

        def replace(o: Any, args: Any, kwargs: Any) -> Any:
            return (o, other), {}

        def lower_lr(o: Any, args: Any, kwargs: Any) -> None:
            o.param_groups[0]["lr"] = 0.25  # the step sees it: hooks run before the update

        opt.register_step_pre_hook(lower_lr)
        opt.register_step_pre_hook(replace)
        opt.register_step_post_hook(lambda o, args, kwargs: log.append(("post", _plain(args))))
        log.append(("loss", opt.step(lambda: 1.0)))
        log.append(_plain(p))
        return log

    ours, theirs = _both(case)
    assert ours == theirs


def test_pre_hook_returning_something_else_is_an_error():
    def case(T: Any, optim_: Any, module: Any) -> str:
        opt = optim_.SGD([_param(T, [1.0])], lr=0.1)
        opt.register_step_pre_hook(lambda o, args, kwargs: 3)
        with pytest.raises(RuntimeError) as info:
            opt.step()
        return str(info.value)

    ours, theirs = _both(case)
    # (the message starts with the step function's repr: its address differs)
    tail = " must return None or a tuple of (new_args, new_kwargs), but got 3."
    assert theirs.endswith(tail) and ours.endswith(tail)
    assert ours.startswith("<function ") and ".step at 0x" in ours


async def test_step_async_runs_each_hook_once():
    log: list[Any] = []
    p = _param(ag, [1.0, 2.0])
    opt = optim.Adam([p], lr=0.1)

    async def async_pre(o: Any, args: Any, kwargs: Any) -> None:
        log.append(("pre", len(args), args[0] is o, args[1].__name__))

    opt.register_step_pre_hook(async_pre)
    opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))
    handle = optim.optimizer.register_optimizer_step_post_hook(lambda o, args, kwargs: log.append("global-post"))
    try:

        async def closure() -> float:
            log.append("closure")
            return 2.0

        assert await opt.step_async(closure) == 2.0
    finally:
        handle.remove()
    assert log == [("pre", 2, True, "closure"), "closure", "post", "global-post"]
    with pytest.raises(TypeError, match="step_async"):
        opt.step()  # a plain step cannot await the async hook


async def test_lbfgs_step_hooks():
    log: list[Any] = []
    p = ag.nn.Parameter(ag.tensor([1.0, -1.0]))
    opt = optim.LBFGS([p], max_iter=2)
    opt.register_step_pre_hook(lambda o, args, kwargs: log.append(("pre", len(args))))
    opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))

    async def closure() -> Any:
        opt.zero_grad()
        loss = (p * p).sum()
        await loss.backward()
        return loss

    await opt.step(closure)
    await opt.step_async(closure)
    assert log == [("pre", 2), "post", ("pre", 2), "post"]


def test_copies_do_not_keep_the_hooks():
    def case(T: Any, optim_: Any, module: Any) -> Any:
        opt = optim_.SGD([_param(T, [1.0])], lr=0.1)
        opt.register_step_pre_hook(lambda o, args, kwargs: None)
        opt.register_state_dict_post_hook(lambda o, sd: None)
        clone = copy.deepcopy(opt)
        unpickled = pickle.loads(pickle.dumps(opt))
        return [
            (len(o._optimizer_step_pre_hooks), len(o._optimizer_state_dict_post_hooks))
            for o in (opt, clone, unpickled)
        ]

    ours, theirs = _both(case)
    assert ours == theirs == [(1, 1), (0, 0), (0, 0)]


# ------------------------------------------------------------------------------ state dict hooks
def test_state_dict_hooks_order_and_modifications():
    def case(T: Any, optim_: Any, module: Any) -> Any:
        log: list[Any] = []
        p = _param(T, [1.0, 2.0])
        opt = optim_.SGD([p], lr=0.1, momentum=0.9)
        opt.step()

        def pre(o: Any) -> None:
            log.append(("pre", o is opt))

        def add_key(o: Any, sd: Any) -> None:
            log.append(("add_key", sorted(sd)))
            sd["extra"] = 1

        def replace(o: Any, sd: Any) -> Any:
            log.append(("replace", sorted(sd)))
            return {"state": sd["state"], "param_groups": sd["param_groups"], "replaced": True}

        opt.register_state_dict_pre_hook(pre)
        opt.register_state_dict_pre_hook(lambda o: log.append("first pre"), prepend=True)
        h = opt.register_state_dict_post_hook(replace)
        opt.register_state_dict_post_hook(add_key, prepend=True)
        sd = opt.state_dict()
        log.append((sorted(sd), _plain(sd["state"]), sd["param_groups"][0]["lr"]))
        h.remove()
        log.append(sorted(opt.state_dict()))
        return log

    ours, theirs = _both(case)
    assert ours == theirs


def test_load_state_dict_hooks_order_and_modifications():
    def case(T: Any, optim_: Any, module: Any) -> Any:
        log: list[Any] = []
        p = _param(T, [1.0, 2.0])
        source = optim_.Adam([p], lr=0.1)
        source.step()
        saved = source.state_dict()
        q = _param(T, [3.0, 4.0])
        opt = optim_.Adam([q], lr=0.5)

        def pre(o: Any, sd: Any) -> None:
            log.append(("pre", sd is saved, sorted(sd)))  # a shallow copy
            sd["param_groups"] = [dict(g, lr=0.01) for g in sd["param_groups"]]

        def replace(o: Any, sd: Any) -> Any:
            log.append(("replace", sd["param_groups"][0]["lr"]))
            return dict(sd, param_groups=[dict(g, betas=(0.5, 0.6)) for g in sd["param_groups"]])

        def post(o: Any) -> None:
            log.append(("post", o.param_groups[0]["lr"], o.param_groups[0]["betas"], _plain(o.state[q]["exp_avg"])))

        opt.register_load_state_dict_pre_hook(replace)
        h = opt.register_load_state_dict_pre_hook(pre, prepend=True)
        opt.register_load_state_dict_post_hook(post)
        opt.register_load_state_dict_post_hook(lambda o: log.append("first post"), prepend=True)
        opt.load_state_dict(saved)
        log.append(("saved untouched", saved["param_groups"][0]["lr"]))
        h.remove()
        opt.load_state_dict(saved)
        return log

    ours, theirs = _both(case)
    assert ours == theirs


def test_every_registration_returns_a_removable_handle():
    opt = optim.SGD([_param(ag, [1.0])], lr=0.1)
    registrations = [
        opt.register_step_pre_hook, opt.register_step_post_hook, opt.register_state_dict_pre_hook,
        opt.register_state_dict_post_hook, opt.register_load_state_dict_pre_hook,
        opt.register_load_state_dict_post_hook, optim.optimizer.register_optimizer_step_pre_hook,
        optim.optimizer.register_optimizer_step_post_hook,
    ]
    for register in registrations:
        handle = register(lambda *args: None)
        assert isinstance(handle, RemovableHandle)
        handle.remove()
    assert not any(
        getattr(opt, name) for name in (
            "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
            "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
            "_optimizer_load_state_dict_post_hooks",
        )
    )
    assert not hasattr(torch.optim.Optimizer, "register_zero_grad_pre_hook")  # (torch 2.13 has none)
