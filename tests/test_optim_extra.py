"""aiograd.optim's Adagrad, Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS, and the schedulers
ReduceLROnPlateau, SequentialLR, ChainedScheduler, CosineAnnealingWarmRestarts, PolynomialLR,
ConstantLR and CyclicLR, against torch: 100 steps on the same float64 parameters give the same
parameters (to 1e-12) and state; a torch state dict loads and continues identically; each
scheduler's learning rates are torch's over 100 steps; errors are torch's word for word."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.sync
from aiograd import optim
from aiograd.optim import lr_scheduler

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.real_default_dtype  # (state scalars follow the default dtype, as torch's)

SHAPES = [(4, 6), (6,), (6, 1), (3,)]  # W1, b1, W2, and one parameter the loss never uses


def _initial() -> list[np.ndarray]:
    g = np.random.default_rng(7)
    return [g.standard_normal(s) * 0.5 for s in SHAPES]


def _data() -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(8)
    return g.standard_normal((50, 4)), g.standard_normal((50, 1))


def _loss(params: list[Any], x: Any, y: Any, i: int | None, sign: float = 1.0) -> Any:
    """The same MLP loss for either library, on step ``i``'s minibatch of 10 rows (all 50 rows
    for ``i=None``)."""
    rows = slice(None) if i is None else slice(10 * (i % 5), 10 * (i % 5) + 10)
    w1, b1, w2 = params[:3]
    return (((x[rows] @ w1 + b1).tanh() @ w2 - y[rows]) ** 2).mean() * sign


def _pair() -> tuple[list[Any], list[Any]]:
    ours = [ag.tensor(a.copy(), requires_grad=True) for a in _initial()]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in _initial()]
    return ours, theirs


def _groups(params: list[Any], two: bool) -> Any:
    return [{"params": params[:2]}, {"params": params[2:], "lr": 0.02}] if two else params


def _run_ag(opt: Any, params: list[Any], steps: int, start: int = 0) -> None:
    x, y = (ag.tensor(a) for a in _data())
    sign = -1.0 if opt.param_groups[0].get("maximize") else 1.0
    for i in range(start, start + steps):
        opt.zero_grad()
        aiograd.sync.backward(_loss(params, x, y, i, sign))
        opt.step()


def _run_torch(opt: Any, params: list[Any], steps: int, start: int = 0) -> None:
    x, y = (torch.tensor(a) for a in _data())
    sign = -1.0 if opt.param_groups[0].get("maximize") else 1.0
    for i in range(start, start + steps):
        opt.zero_grad()
        _loss(params, x, y, i, sign).backward()
        opt.step()


CASES = [
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.05, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.1}),
    ("Adagrad", {"lr": 0.01, "maximize": True, "eps": 1e-6}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.01, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"lr": 0.01, "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.8, 0.9)}),
    ("RAdam", {"lr": 0.01, "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 1e-3, "alpha": 0.5, "t0": 30, "weight_decay": 0.01}),
    ("ASGD", {"lr": 0.01, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 0.1, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.003, "etas": (0.3, 1.5), "step_sizes": (1e-4, 0.02)}),
    ("Rprop", {"lr": 0.01, "maximize": True}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CASES]


def _torch_optimizer(name: str, groups: Any, kw: dict[str, Any]) -> Any:
    return getattr(torch.optim, name)(groups, foreach=False, **kw)  # the single-tensor arithmetic


def _assert_state_matches(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    for group in theirs["param_groups"]:
        group["foreach"] = None  # (torch's was given foreach=False)
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys()
    for index, state in theirs["state"].items():
        assert list(ours["state"][index]) == list(state), index  # torch's keys, in its order
        for key, value in state.items():
            mine = ours["state"][index][key]
            assert mine.dtype == np.dtype(str(value.dtype).removeprefix("torch.")), key
            np.testing.assert_allclose(mine.data, value.numpy(), rtol=1e-11, atol=1e-12, err_msg=key)


@pytest.mark.parametrize(("name", "kw"), CASES, ids=IDS)
def test_100_steps_match_torch(name: str, kw: dict[str, Any]) -> None:
    ours, theirs = _pair()
    opt = getattr(optim, name)(_groups(ours, True), **kw)
    topt = _torch_optimizer(name, _groups(theirs, True), kw)
    _run_ag(opt, ours, 100)
    _run_torch(topt, theirs, 100)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=0, atol=1e-12)
    assert not np.array_equal(ours[0].data, _initial()[0])  # (it did move)
    _assert_state_matches(opt.state_dict(), topt.state_dict())


def _to_aiograd(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ag.tensor(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_aiograd(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_aiograd(v) for v in value]
    return value


@pytest.mark.parametrize(("name", "kw"), [CASES[i] for i in (1, 4, 8, 12, 15, 18, 21)],
                         ids=[IDS[i] for i in (1, 4, 8, 12, 15, 18, 21)])
def test_a_torch_state_dict_loads_and_continues_identically(name: str, kw: dict[str, Any]) -> None:
    ours, theirs = _pair()
    topt = _torch_optimizer(name, _groups(theirs, True), kw)
    _run_torch(topt, theirs, 50)
    for a, t in zip(ours, theirs):
        a.data[...] = t.detach().numpy()
    opt = getattr(optim, name)(_groups(ours, True), lr=123.0)  # the options come from the dict
    opt.load_state_dict(_to_aiograd(topt.state_dict()))
    assert opt.param_groups[1]["lr"] == 0.02
    _run_ag(opt, ours, 50, start=50)
    _run_torch(topt, theirs, 50, start=50)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "kw", "message"),
    [
        ("Adagrad", {"lr_decay": -1.0}, "Invalid lr_decay value: -1.0"),
        ("Adagrad", {"initial_accumulator_value": -1.0}, "Invalid initial_accumulator_value value: -1.0"),
        ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
        ("NAdam", {"momentum_decay": -1.0}, "Invalid momentum_decay value: -1.0"),
        ("RAdam", {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
        ("ASGD", {"weight_decay": -1.0}, "Invalid weight_decay value: -1.0"),
        ("LBFGS", {"lr": -1.0}, "Invalid learning rate: -1.0"),
        ("Adadelta", {"rho": 1.5}, "Invalid rho value: 1.5"),
        ("Adadelta", {"eps": -1.0}, "Invalid epsilon value: -1.0"),
        ("Rprop", {"etas": (1.2, 0.5)}, "Invalid eta values: 1.2, 0.5"),
        ("Rprop", {"lr": -0.5}, "Invalid learning rate: -0.5"),
    ],
)
def test_invalid_options_are_refused_as_torch(name: str, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
        getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)], **kw)
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
        getattr(optim, name)([ag.zeros(1, requires_grad=True)], **kw)


# ------------------------------------------------------------------------------ LBFGS
def _regularised(params: list[Any], x: Any, y: Any) -> Any:
    """The full-batch loss plus an L2 penalty: bounded below and well conditioned, so that
    L-BFGS's iterations converge instead of amplifying rounding (the bare MLP loss has flat
    directions along which its unit steps run off)."""
    return _loss(params, x, y, None) + sum((p**2).sum() for p in params[:3]) * 0.05


def _lbfgs_pair(kw: dict[str, Any], steps: int) -> tuple[list[Any], list[Any], Any, Any, list[Any], list[Any]]:
    ours, theirs = _pair()
    x, y = (ag.tensor(a) for a in _data())
    tx, ty = (torch.tensor(a) for a in _data())
    opt, topt = optim.LBFGS(ours, **kw), torch.optim.LBFGS(theirs, **kw)
    losses, tlosses = [], []

    async def run() -> None:
        for _ in range(steps):
            async def closure() -> Any:
                opt.zero_grad()
                loss = _regularised(ours, x, y)
                await loss.backward()
                return loss

            losses.append(float(await opt.step(closure)))

    asyncio.run(run())
    for _ in range(steps):
        def tclosure() -> Any:
            topt.zero_grad()
            loss = _regularised(theirs, tx, ty)
            loss.backward()
            return loss.detach()
        tlosses.append(float(topt.step(tclosure)))
    return ours, theirs, opt, topt, losses, tlosses


@pytest.mark.parametrize(
    "kw",
    [{}, {"lr": 0.5, "history_size": 3, "max_iter": 5}, {"line_search_fn": "strong_wolfe"},
     {"line_search_fn": "strong_wolfe", "history_size": 4, "max_iter": 10, "tolerance_change": 1e-6}],
    ids=["defaults", "history_size=3", "strong_wolfe", "strong_wolfe-history_size=4"],
)
def test_lbfgs_matches_torch(kw: dict[str, Any]) -> None:
    steps = 5  # (each step is up to max_iter iterations: 5 steps are up to 100 updates)
    ours, theirs, opt, topt, losses, tlosses = _lbfgs_pair(kw, steps)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-11, atol=0)
    # (up to 100 iterations, each through dot products that numpy's and torch's BLAS sum in
    # their own orders: the parameters agree to about 1e-12)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=0, atol=1e-11)
    state, tstate = opt.state[ours[0]], topt.state[theirs[0]]
    assert set(state) == set(tstate)
    assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert len(state["old_dirs"]) == len(tstate["old_dirs"]) <= opt.param_groups[0]["history_size"]
    for key in ("d", "prev_flat_grad"):
        np.testing.assert_allclose(state[key].data, tstate[key].numpy(), rtol=0, atol=1e-12)


def test_lbfgs_refuses_groups_and_other_line_searches() -> None:
    message = r"^LBFGS doesn't support per-parameter options \(parameter groups\)$"
    ours, theirs = _pair()
    with pytest.raises(ValueError, match=message):
        torch.optim.LBFGS(_groups(theirs, True))
    with pytest.raises(ValueError, match=message):
        optim.LBFGS(_groups(ours, True))
    opt = optim.LBFGS(ours, line_search_fn="armijo")

    async def closure() -> Any:
        opt.zero_grad()
        loss = (ours[0] ** 2).sum()
        await loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        asyncio.run(opt.step(closure))


# ------------------------------------------------------------------------------ schedulers
def _scheduler_pair(make: Any, optimizer: str = "SGD", **opt_kw: Any) -> tuple[Any, Any, Any, Any]:
    """``make(lib, optimizer)`` builds the scheduler with either library's classes, on an
    optimizer with two groups of their own learning rates."""
    opt, topt = _optimizer_pair(optimizer, **opt_kw)
    return opt, make(lr_scheduler, opt), topt, make(torch.optim.lr_scheduler, topt)


def _optimizer_pair(optimizer: str = "SGD", **opt_kw: Any) -> tuple[Any, Any]:
    ours = [ag.zeros(2, requires_grad=True), ag.zeros(3, requires_grad=True)]
    theirs = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
    kw = {"momentum": 0.9, **opt_kw} if optimizer == "SGD" else opt_kw
    opt = getattr(optim, optimizer)([{"params": ours[:1], "lr": 0.1}, {"params": ours[1:], "lr": 0.03}], **kw)
    topt = getattr(torch.optim, optimizer)([{"params": theirs[:1], "lr": 0.1}, {"params": theirs[1:], "lr": 0.03}], **kw)
    return opt, topt


def _momenta(opt: Any) -> list[Any]:
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


SCHEDULERS = {
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=7),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=40, power=2.0),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=1e-3),
    "CosineAnnealingWarmRestarts-T_mult=1": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=9),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=7, step_size_down=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=6, mode="exp_range", gamma=0.97,
        base_momentum=0.7, max_momentum=0.95,
    ),
    "CyclicLR-no-momentum": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=10), m.ExponentialLR(o, gamma=0.9),
            m.CosineAnnealingLR(o, T_max=20)], milestones=[10, 40],
    ),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.2, total_iters=15), m.ExponentialLR(o, gamma=0.97), m.StepLR(o, 10, 0.5)]
    ),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_lr_sequence_matches_torch(name: str) -> None:
    opt, sched, topt, tsched = _scheduler_pair(SCHEDULERS[name])
    assert sched.get_last_lr() == tsched.get_last_lr()
    ours, theirs = [], []
    for _ in range(100):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        ours.append((sched.get_last_lr(), _momenta(opt)))
        theirs.append((tsched.get_last_lr(), _momenta(topt)))
    assert ours == theirs  # (exactly: the same formulas in the same order)
    assert len({tuple(lrs) for lrs, _ in ours}) > 1  # (it did schedule)
    assert [g["lr"] for g in opt.param_groups] == ours[-1][0]


def test_cyclic_lr_cycles_adams_beta1_and_keeps_state() -> None:
    make = SCHEDULERS["CyclicLR-exp_range"]
    opt, sched, topt, tsched = _scheduler_pair(make, "Adam")
    for _ in range(30):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert [g["betas"] for g in opt.param_groups] == [g["betas"] for g in topt.param_groups]
    state = sched.state_dict()
    assert set(state) == set(tsched.state_dict())
    again = make(lr_scheduler, opt)
    again.load_state_dict(state)
    assert again.last_epoch == 30 and again.scale_fn(2) == 0.97**2


def test_warm_restarts_with_fractional_epochs_match_torch() -> None:
    make = SCHEDULERS["CosineAnnealingWarmRestarts"]
    opt, sched, topt, tsched = _scheduler_pair(make)
    for epoch in np.arange(0, 60, 0.37):
        sched.step(float(epoch))  # (no deprecation warning here: its own step, as torch's)
        tsched.step(float(epoch))
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert (sched.T_cur, sched.T_i, sched.last_epoch) == (tsched.T_cur, tsched.T_i, tsched.last_epoch)
    with pytest.raises(ValueError, match="^Expected non-negative epoch, but got -1$"):
        sched.step(-1)


PLATEAUS = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 2, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 3},
    {"factor": 0.3, "patience": 1, "threshold_mode": "abs", "min_lr": [0.01, 1e-3], "eps": 1e-3},
    {"mode": "max", "patience": 0, "threshold": 0.05, "cooldown": 1, "min_lr": 1e-4},
]


@pytest.mark.parametrize("kw", PLATEAUS, ids=[str(i) for i in range(len(PLATEAUS))])
def test_reduce_lr_on_plateau_matches_torch(kw: dict[str, Any]) -> None:
    opt, sched, topt, tsched = _scheduler_pair(lambda m, o: m.ReduceLROnPlateau(o, **kw))
    metrics = 1.0 + np.sin(np.arange(100) / 3.0) * np.exp(-np.arange(100) / 40.0)
    lrs = []
    for i, metric in enumerate(metrics):
        opt.step()
        topt.step()
        sched.step(ag.tensor(metric) if i % 2 else metric)  # (a number or a one-element tensor)
        tsched.step(metric)
        assert sched.get_last_lr() == tsched.get_last_lr(), i
        assert (sched.best, sched.num_bad_epochs, sched.cooldown_counter) == (
            tsched.best, tsched.num_bad_epochs, tsched.cooldown_counter)
        lrs.append(sched.get_last_lr()[0])
    assert len(set(lrs)) > 1  # (it did reduce)
    state = sched.state_dict()
    assert set(state) == set(tsched.state_dict())


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda m, o: m.ReduceLROnPlateau(o, factor=1.0), ValueError, r"Factor should be < 1\.0\."),
        (lambda m, o: m.ReduceLROnPlateau(o, mode="mid"), ValueError, "mode mid is unknown!"),
        (lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
        (lambda m, o: m.ConstantLR(o, factor=2.0), ValueError,
         "Constant multiplicative factor expected to be between 0 and 1."),
        (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
        (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=0), ValueError,
         "Expected integer T_mult >= 1, but got 0"),
        (lambda m, o: m.CyclicLR(o, 0.01, 0.1, mode="sine"), ValueError, "mode is invalid and scale_fn is None"),
        (lambda m, o: m.CyclicLR(o, [0.01], 0.1), ValueError,
         r"base_lr must have the same length as optimizer.param_groups. base_lr has 1 values, param_groups has 2."),
        (lambda m, o: m.SequentialLR(o, [m.ConstantLR(o)], milestones=[3]), ValueError,
         "Sequential Schedulers expects number of schedulers provided to be one more than the number of "
         "milestone points, but got number of schedulers 1 and the number of milestones to be equal to 1"),
        (lambda m, o: m.SequentialLR(o, [m.ReduceLROnPlateau(o)], milestones=[]), ValueError,
         "SequentialLR does not support `ReduceLROnPlateau` scheduler"),
        (lambda m, o: m.ChainedScheduler([]), ValueError,
         "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
        (lambda m, o: m.ChainedScheduler([m.ConstantLR(o), object()]), TypeError,
         "ChainedScheduler at index 1 should have `optimizer` as its attribute."),
    ],
)
def test_scheduler_errors_are_torchs(make: Any, error: type[Exception], message: str) -> None:
    opt, topt = _optimizer_pair()
    with pytest.raises(error, match=message):
        make(torch.optim.lr_scheduler, topt)
    with pytest.raises(error, match=message):
        make(lr_scheduler, opt)


def test_sequential_and_chained_state_dicts_round_trip() -> None:
    for name in ("SequentialLR", "ChainedScheduler"):
        opt, sched, topt, tsched = _scheduler_pair(SCHEDULERS[name])
        for _ in range(25):
            opt.step()
            sched.step()
        state = sched.state_dict()
        assert [type(s) for s in state["_schedulers"]] == [dict] * len(sched._schedulers)
        assert set(state) == set(tsched.state_dict())
        opt2, again, _, _ = _scheduler_pair(SCHEDULERS[name])
        opt2.load_state_dict(opt.state_dict())  # (the current rates: the schedulers are recursive)
        again.load_state_dict(state)
        opt2.step()  # (a scheduler's first step after its optimizer's: no order warning)
        for _ in range(25):
            sched.step()
            again.step()
            assert again.get_last_lr() == sched.get_last_lr()
