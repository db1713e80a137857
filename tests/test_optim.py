"""aiograd.optim against torch.optim: 100 steps of each optimizer and option on the same loss
(each library computing its own gradients) give the same parameters and state; state dicts have
torch's layout, round-trip, and a torch optimizer's state dict loads and continues identically;
errors and warnings are torch's word for word; a step modifies the parameters in place (same
objects, version bumped) and runs on device arrays without host round trips."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Any

import fake_cupy
import numpy as np
import pytest
from helpers import requires_torch, rng, torch

import aiograd as ag
import aiograd.sync
from aiograd import optim
from aiograd._devices import _device

pytestmark = requires_torch

# ------------------------------------------------------------------------------ the shared problem
SHAPES = [(4, 6), (6,), (6, 1), (3,)]  # W1, b1, W2, and one parameter the loss never uses


def _initial(dtype: Any) -> list[np.ndarray]:
    g = rng(7)
    return [g.standard_normal(s).astype(dtype) * 0.5 for s in SHAPES]


def _data(dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    g = rng(8)
    return g.standard_normal((50, 4)).astype(dtype), g.standard_normal((50, 1)).astype(dtype)


def _batch(x: Any, y: Any, i: int) -> tuple[Any, Any]:
    """Step ``i``'s minibatch (5 of them): the gradients keep changing, as in training (with
    one batch RMSprop's centered variance decays to nothing and amplifies rounding)."""
    rows = slice(10 * (i % 5), 10 * (i % 5) + 10)
    return x[rows], y[rows]


def _loss(params: list[Any], x: Any, y: Any, sign: float = 1.0) -> Any:
    """The same MLP loss for either library (the 4th parameter gets no gradient); ``sign=-1``
    for ``maximize``, so that ascent converges (diverging runs amplify rounding differences)."""
    w1, b1, w2 = params[:3]
    return (((x @ w1 + b1).tanh() @ w2 - y) ** 2).mean() * sign


def _ag_params(dtype: Any) -> list[ag.Tensor]:
    return [ag.tensor(a.copy(), requires_grad=True) for a in _initial(dtype)]


def _torch_params(dtype: Any) -> list[Any]:
    return [torch.tensor(a.copy(), requires_grad=True) for a in _initial(dtype)]


def _groups(params: list[Any], two_groups: bool) -> Any:
    if not two_groups:
        return params
    return [{"params": params[:2]}, {"params": params[2:], "lr": 0.02}]


def _sign(opt: Any) -> float:
    return -1.0 if opt.param_groups[0]["maximize"] else 1.0


def _run_ag(opt: optim.Optimizer, params: list[ag.Tensor], dtype: Any, steps: int) -> None:
    x, y = (ag.tensor(a) for a in _data(dtype))
    for i in range(steps):
        opt.zero_grad()
        aiograd.sync.backward(_loss(params, *_batch(x, y, i), _sign(opt)))
        opt.step()


def _run_torch(opt: Any, params: list[Any], dtype: Any, steps: int) -> None:
    x, y = (torch.tensor(a) for a in _data(dtype))
    for i in range(steps):
        opt.zero_grad()
        _loss(params, *_batch(x, y, i), _sign(opt)).backward()
        opt.step()


CASES = [
    ("SGD", {"lr": 0.05}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.01, "momentum": 0.5, "maximize": True, "weight_decay": 0.1}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "maximize": True, "weight_decay": 0.05}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.001, "centered": True}),
    ("RMSprop", {"lr": 0.001, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.001, "alpha": 0.9, "centered": True, "momentum": 0.5, "weight_decay": 0.01}),
    ("RMSprop", {"lr": 0.001, "maximize": True, "weight_decay": 0.1}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CASES]
TOLERANCE = {np.float64: {"rtol": 1e-11, "atol": 1e-13}, np.float32: {"rtol": 5e-5, "atol": 5e-6}}


def _torch_optimizer(name: str, groups: Any, kw: dict[str, Any]) -> Any:
    return getattr(torch.optim, name)(groups, foreach=False, **kw)  # the single-tensor arithmetic


def _assert_state_matches(ours: dict[str, Any], theirs: dict[str, Any], tol: dict[str, float]) -> None:
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys()
    for index, state in theirs["state"].items():
        assert ours["state"][index].keys() == state.keys()
        for key, value in state.items():
            mine = ours["state"][index][key]
            assert mine.dtype == np.dtype(str(value.dtype).removeprefix("torch.")), key
            np.testing.assert_allclose(mine.data, value.numpy(), **tol, err_msg=key)


@pytest.mark.real_default_dtype  # (the step counter's dtype follows it, as torch's)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(("name", "kw"), CASES, ids=IDS)
def test_100_steps_match_torch(name: str, kw: dict[str, Any], dtype: Any) -> None:
    two_groups = name in ("SGD", "RMSprop")  # (a group with its own lr, too)
    ours = _ag_params(dtype)
    opt = getattr(optim, name)(_groups(ours, two_groups), **kw)
    _run_ag(opt, ours, dtype, 100)
    theirs = _torch_params(dtype)
    topt = _torch_optimizer(name, _groups(theirs, two_groups), kw)
    _run_torch(topt, theirs, dtype, 100)
    for a, t in zip(ours, theirs):
        assert a.dtype == dtype
        np.testing.assert_allclose(a.data, t.detach().numpy(), **TOLERANCE[dtype])
    np.testing.assert_array_equal(ours[3].data, _initial(dtype)[3])  # no gradient: no step
    sd, tsd = opt.state_dict(), topt.state_dict()
    for group in tsd["param_groups"]:
        group["foreach"] = None  # (torch's was given foreach=False to pin its arithmetic)
    _assert_state_matches(sd, tsd, TOLERANCE[dtype])


# ------------------------------------------------------------------------------ state dicts
def _to_aiograd(value: Any, as_numpy: bool) -> Any:
    if isinstance(value, torch.Tensor):
        return value.numpy().copy() if as_numpy else ag.tensor(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_aiograd(v, as_numpy) for k, v in value.items()}
    return value


@pytest.mark.parametrize("as_numpy", [False, True], ids=["tensors", "arrays"])
@pytest.mark.parametrize(("name", "kw"), [CASES[2], CASES[8], CASES[12], CASES[17]], ids=[IDS[2], IDS[8], IDS[12], IDS[17]])
def test_a_torch_state_dict_loads_and_continues_identically(name: str, kw: dict[str, Any], as_numpy: bool) -> None:
    dtype = np.float64
    theirs = _torch_params(dtype)
    topt = _torch_optimizer(name, _groups(theirs, True), kw)
    _run_torch(topt, theirs, dtype, 50)
    # aiograd takes over: torch's parameters and its optimizer's state, converted
    ours = [ag.tensor(t.detach().numpy().copy(), requires_grad=True) for t in theirs]
    opt = getattr(optim, name)(_groups(ours, True), **kw)
    opt.load_state_dict(_to_aiograd(topt.state_dict(), as_numpy))
    assert opt.param_groups[1]["lr"] == 0.02 and opt.param_groups[0]["params"] == ours[:2]
    step = opt.state[ours[0]].get("step")
    assert step is None or (step.dtype == np.float32 and float(step) == 50.0)
    _run_ag(opt, ours, dtype, 50)
    _run_torch(topt, theirs, dtype, 50)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("name", "kw"), CASES, ids=IDS)
def test_state_dict_round_trip_continues_as_if_uninterrupted(name: str, kw: dict[str, Any]) -> None:
    dtype = np.float64
    straight = _ag_params(dtype)
    _run_ag(getattr(optim, name)(_groups(straight, True), **kw), straight, dtype, 40)

    first = _ag_params(dtype)
    opt = getattr(optim, name)(_groups(first, True), **kw)
    _run_ag(opt, first, dtype, 20)
    saved = opt.state_dict()
    resumed = [ag.tensor(p.data.copy(), requires_grad=True) for p in first]
    again = getattr(optim, name)(_groups(resumed, True), lr=123.0)  # options come from the dict
    again.load_state_dict(saved)
    assert again.param_groups[1]["lr"] == 0.02
    _run_ag(again, resumed, dtype, 20)
    for a, b in zip(straight, resumed):
        np.testing.assert_array_equal(a.data, b.data)


def test_state_dict_layout_is_torchs_with_shared_parameters_and_names() -> None:
    p = [ag.tensor(np.ones(2), requires_grad=True) for _ in range(3)]
    tp = [torch.ones(2, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    opt = optim.SGD([{"params": [("a", p[0]), ("b", p[1])]}, {"params": [("c", p[2])], "lr": 0.5}], momentum=0.9)
    topt = torch.optim.SGD([{"params": [("a", tp[0]), ("b", tp[1])]}, {"params": [("c", tp[2])], "lr": 0.5}], momentum=0.9)
    assert opt.state_dict() == topt.state_dict()
    assert repr(opt) == repr(topt)


def test_load_state_dict_casts_to_the_parameters_dtype_and_keeps_step() -> None:
    p = ag.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    opt = optim.Adam([p])
    opt.load_state_dict({
        "state": {0: {"step": np.array(3.0, dtype=np.float32), "exp_avg": np.ones(3), "exp_avg_sq": np.ones(3)}},
        "param_groups": [dict(opt.state_dict()["param_groups"][0])],
    })
    assert opt.state[p]["exp_avg"].dtype == np.float32 and opt.state[p]["step"].dtype == np.float32
    # An old checkpoint's step as a number becomes the counter tensor (torch's __setstate__).
    opt.load_state_dict({"state": {0: {"step": 7, "exp_avg": np.ones(3), "exp_avg_sq": np.ones(3)}},
                         "param_groups": opt.state_dict()["param_groups"]})
    assert isinstance(opt.state[p]["step"], ag.Tensor) and float(opt.state[p]["step"]) == 7.0


# ------------------------------------------------------------------------------ in place, closures
def test_a_step_updates_in_place_and_bumps_the_version() -> None:
    w = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    data = w.data
    y = w * w  # saves w (version 0)
    aiograd.sync.backward(y.sum(), retain_graph=True)
    opt = optim.SGD([w], lr=0.1)
    opt.step()
    assert w.data is data and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.data, [0.8, 1.6, 2.4])

    tw = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    ty = tw * tw
    ty.sum().backward(retain_graph=True)
    torch.optim.SGD([tw], lr=0.1).step()
    with pytest.raises(RuntimeError) as expected:
        ty.sum().backward()
    with pytest.raises(RuntimeError) as got:
        aiograd.sync.backward(y.sum())
    # (aiograd's names: ``aiograd.DoubleTensor``, ``aiograd.set_detect_anomaly``)
    assert str(got.value) == str(expected.value).replace("torch.autograd.", "aiograd.").replace("torch.", "aiograd.")


def test_zero_grad_sets_none_or_zeros_in_place() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w])
    aiograd.sync.backward((w * 3.0).sum())
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_step_with_a_closure_returns_its_loss_under_enable_grad() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.5)

    def closure() -> Any:
        assert ag.is_grad_enabled()
        opt.zero_grad()
        loss = (w * w).sum()
        aiograd.sync.backward(loss)
        return loss

    with ag.no_grad():
        loss = opt.step(closure)
    assert float(loss) == 5.0 and w.tolist() == [0.0, 0.0]


def test_step_refuses_an_async_closure() -> None:
    w = ag.tensor([1.0], requires_grad=True)

    async def closure() -> Any:
        return None  # pragma: no cover (never run)

    with pytest.raises(TypeError, match=re.escape("use `await optimizer.step_async(closure)`")):
        optim.Adam([w]).step(closure)


async def test_step_async_awaits_a_closure_that_awaits_backward() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25, momentum=0.9)
    tw = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.25, momentum=0.9)

    async def closure() -> Any:
        assert ag.is_grad_enabled()
        opt.zero_grad()
        loss = (w * w * w).sum()
        await loss.backward()
        return loss

    def tclosure() -> Any:
        topt.zero_grad()
        loss = (tw * tw * tw).sum()
        loss.backward()
        return loss

    for _ in range(3):
        with ag.no_grad():
            loss = await opt.step_async(closure)
        assert float(loss) == topt.step(tclosure).item()
    np.testing.assert_allclose(w.data, tw.detach().numpy(), rtol=1e-12)
    assert await opt.step_async() is None  # (no closure: a plain step)


# ------------------------------------------------------------------------------ errors, warnings
def _same_error(ours: Any, theirs: Any, kind: type[Exception]) -> None:
    with pytest.raises(kind) as expected:
        theirs()
    with pytest.raises(kind) as got:
        ours()
    assert str(got.value) == str(expected.value).replace("torch.", "aiograd.")


def _pair(shape: tuple[int, ...] = (2,)) -> tuple[ag.Tensor, Any]:
    return ag.tensor(np.ones(shape), requires_grad=True), torch.ones(shape, dtype=torch.float64, requires_grad=True)


CONSTRUCTOR_ERRORS = [
    ("SGD", lambda p: ([], {}), ValueError),
    ("SGD", lambda p: (p, {}), TypeError),
    ("SGD", lambda p: ([p * 2], {}), ValueError),
    ("SGD", lambda p: ([p, 3], {}), TypeError),
    ("SGD", lambda p: ([{"params": {p}}], {}), TypeError),
    ("SGD", lambda p: ([{"params": [p]}, {"params": [p]}], {}), ValueError),
    ("SGD", lambda p: ([("a", p), p * 1], {}), ValueError),
    ("SGD", lambda p: ([{"params": [("a", p)]}, {"params": [p + 0]}], {}), ValueError),
    ("SGD", lambda p: ([p], {"lr": -1.0}), ValueError),
    ("SGD", lambda p: ([p], {"momentum": -0.5}), ValueError),
    ("SGD", lambda p: ([p], {"weight_decay": -0.5}), ValueError),
    ("SGD", lambda p: ([p], {"nesterov": True}), ValueError),
    ("SGD", lambda p: ([p], {"nesterov": True, "momentum": 0.9, "dampening": 0.1}), ValueError),
    ("SGD", lambda p: ([p], {"fused": True, "foreach": True}), RuntimeError),
    ("Adam", lambda p: ([p], {"lr": -1.0}), ValueError),
    ("Adam", lambda p: ([p], {"eps": -1.0}), ValueError),
    ("Adam", lambda p: ([p], {"betas": (1.0, 0.9)}), ValueError),
    ("Adam", lambda p: ([p], {"betas": (0.9, -0.1)}), ValueError),
    ("Adam", lambda p: ([p], {"betas": (0, 0.9)}), ValueError),
    ("Adam", lambda p: ([p], {"weight_decay": -1.0}), ValueError),
    ("AdamW", lambda p: ([p], {"betas": (0.9, 1.5)}), ValueError),
    ("RMSprop", lambda p: ([p], {"lr": -1.0}), ValueError),
    ("RMSprop", lambda p: ([p], {"eps": -1.0}), ValueError),
    ("RMSprop", lambda p: ([p], {"momentum": -1.0}), ValueError),
    ("RMSprop", lambda p: ([p], {"weight_decay": -1.0}), ValueError),
    ("RMSprop", lambda p: ([p], {"alpha": -1.0}), ValueError),
]


@pytest.mark.parametrize(("name", "make", "kind"), CONSTRUCTOR_ERRORS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONSTRUCTOR_ERRORS)])
def test_constructor_errors_are_torchs(name: str, make: Any, kind: type[Exception]) -> None:
    p, tp = _pair()
    args, kw = make(p)
    targs, tkw = make(tp)
    _same_error(lambda: getattr(optim, name)(args, **kw), lambda: getattr(torch.optim, name)(targs, **tkw), kind)


def test_add_param_group_and_load_errors_are_torchs() -> None:
    p, tp = _pair()
    q, tq = _pair()
    opt, topt = optim.SGD([p]), torch.optim.SGD([tp])
    _same_error(lambda: opt.add_param_group([q]), lambda: topt.add_param_group([tq]), TypeError)
    _same_error(lambda: opt.add_param_group({"params": p}), lambda: topt.add_param_group({"params": tp}), ValueError)
    opt.add_param_group({"params": q, "lr": 0.5})
    topt.add_param_group({"params": tq, "lr": 0.5})
    assert opt.state_dict() == topt.state_dict()
    one = optim.SGD([p])
    _same_error(lambda: one.load_state_dict(opt.state_dict()), lambda: torch.optim.SGD([tp]).load_state_dict(topt.state_dict()), ValueError)
    two = optim.SGD([{"params": [p, q]}, {"params": [ag.ones(1, requires_grad=True)]}])
    ttwo = torch.optim.SGD([{"params": [tp, tq]}, {"params": [torch.ones(1, requires_grad=True)]}])
    _same_error(lambda: two.load_state_dict(opt.state_dict()), lambda: ttwo.load_state_dict(topt.state_dict()), ValueError)


def test_required_options_and_duplicate_parameters_warn_as_torch() -> None:
    from aiograd.optim.optimizer import required

    p, tp = _pair()

    class Plain(optim.Optimizer):
        pass

    class TPlain(torch.optim.Optimizer):
        pass

    from torch.optim.optimizer import required as trequired

    _same_error(lambda: Plain([p], {"lr": required}), lambda: TPlain([tp], {"lr": trequired}), ValueError)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        optim.SGD([p, p])
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.optim.SGD([tp, tp])
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def test_differentiable_is_refused() -> None:
    p, _ = _pair()
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        optim.Adam([p], differentiable=True)


# ------------------------------------------------------------------------------ devices
@pytest.fixture
def fake_cupy_device() -> Iterator[str]:
    name = "fakecupy"
    _device.register_device_type(name, fake_cupy.device_type())
    try:
        yield name
    finally:
        del _device._SOURCES[name]
        _device._LOADED.pop(name, None)
        for key in [k for k in _device._interned if k[0] == name]:
            del _device._interned[key]


@pytest.mark.parametrize(("name", "kw"), [CASES[3], CASES[10], CASES[13], CASES[17]], ids=[IDS[3], IDS[10], IDS[13], IDS[17]])
def test_steps_on_device_arrays_stay_there_and_match_the_cpu(fake_cupy_device: str, name: str, kw: dict[str, Any]) -> None:
    """On the CuPy stand-in (which refuses host round trips), parameters and state stay device
    arrays and the numbers are the CPU's."""
    cpu = _ag_params(np.float64)
    dev = [ag.tensor(a.copy()).to(fake_cupy_device).requires_grad_() for a in _initial(np.float64)]
    opt_cpu = getattr(optim, name)(cpu, **kw)
    opt_dev = getattr(optim, name)(dev, **kw)
    for p, q in zip(cpu[:3], dev[:3]):
        g = ag.tensor(rng(1).standard_normal(p.shape))
        p.grad = g
        q.grad = g.to(fake_cupy_device)
    for _ in range(3):
        opt_cpu.step()
        opt_dev.step()
    for p, q in zip(cpu, dev):
        assert type(q.data) is fake_cupy.FakeArray
        np.testing.assert_allclose(q.data.get(), p.data, rtol=1e-14)
    for state in opt_dev.state.values():
        for key, value in state.items():
            assert type(value.data) is (np.ndarray if key == "step" else fake_cupy.FakeArray), key
