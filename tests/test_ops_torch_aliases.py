"""PyTorch's aliases and the smaller ``torch.*`` functions (aiograd/_ops/elementwise_more.py,
predicates.py, scans_more.py, torch_aliases.py): factory rows (gradcheck, gradgradcheck, values and
first and second derivatives against torch, float32, grad_fn names), then the ops without a
gradient and those returning Python values against torch, and PyTorch's errors word for word."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, away_from, make_op_tests

import aiograd as ag
from aiograd import sync

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def _probabilities(r: np.random.Generator) -> list[np.ndarray]:
    return [r.uniform(0.05, 0.95, (2, 3))]


def _distinct(shape: tuple[int, ...]) -> Any:
    """Values far apart (no ties), so that finite differences do not cross a switch."""
    def draw(r: np.random.Generator) -> list[np.ndarray]:
        n = int(np.prod(shape))
        return [(r.permutation(n) * 0.5 - n / 4 + r.uniform(0, 0.1, n)).reshape(shape)]
    return draw


def _apart_pair(r: np.random.Generator) -> list[np.ndarray]:
    a = r.uniform(-2, 2, (2, 3))
    return [a, a + r.choice([-1.0, 1.0], (2, 3)) * r.uniform(0.3, 1.0, (2, 3))]


SPECS = [
    # aliases registered as aliases=: rows under their own names still name their op
    OpSpec("multiply", lambda lib, x, y: lib.multiply(x, y), ((2, 3), (3,)), grad_fn="MulBackward0", op="mul"),
    OpSpec("subtract", lambda lib, x, y: x.subtract(y, alpha=2.0), ((2, 3), (2, 3)), grad_fn="SubBackward0", op="sub"),
    OpSpec("negative", lambda lib, x: lib.negative(x), ((2, 3),), grad_fn="NegBackward0", op="neg"),
    OpSpec("absolute", lambda lib, x: x.absolute(), away_from(0.0)([(2, 3)]), grad_fn="AbsBackward0", op="abs"),
    OpSpec("fix", lambda lib, x: lib.fix(x), ((2, 3),), grad_fn="TruncBackward0", op="trunc", gradgrad=False,
           why="a zero gradient: nothing to differentiate again"),
    OpSpec("arctan2", lambda lib, x, y: lib.arctan2(x, y), ((2, 3), (2, 3)), grad_fn="Atan2Backward0", op="atan2"),
    OpSpec("swapdims", lambda lib, x: lib.swapdims(x, 0, -1), ((2, 3, 4),), grad_fn="TransposeBackward0", op="transpose"),
    # thin ops of torch_aliases.py
    OpSpec("swapaxes", lambda lib, x: lib.swapaxes(x, 0, 1) * 2.0, ((2, 3),)),
    OpSpec("adjoint", lambda lib, x: x.adjoint(), ((4, 2, 3),), grad_fn="TransposeBackward0"),
    OpSpec("ravel", lambda lib, x: lib.ravel(x.transpose(0, 1)), ((2, 3),), grad_fn="ViewBackward0"),
    OpSpec("clamp_min", lambda lib, x: lib.clamp_min(x, 0.3), away_from(0.3)([(2, 3)]), grad_fn="ClampMinBackward0"),
    OpSpec("clamp_min_tensor", lambda lib, x, y: x.clamp_min(y), _apart_pair, grad_fn="ClampMinBackward1"),
    OpSpec("clamp_max", lambda lib, x: x.clamp_max(-0.2), away_from(-0.2)([(2, 3)]), grad_fn="ClampMaxBackward0"),
    OpSpec("clamp_max_tensor", lambda lib, x, y: lib.clamp_max(x, y), _apart_pair, grad_fn="ClampMaxBackward1"),
    OpSpec("rsub", lambda lib, x, y: lib.rsub(x, y, alpha=3.0), ((2, 3), (3,)), grad_fn="RsubBackward0"),
    OpSpec("rsub_number", lambda lib, x: lib.rsub(x, 2.5), ((2, 3),), grad_fn="RsubBackward1"),
    # elementwise_more.py
    OpSpec("exp2", lambda lib, x: lib.exp2(x), ((2, 3),), grad_fn="Exp2Backward0"),
    OpSpec("deg2rad", lambda lib, x: x.deg2rad(), ((2, 3),), domain=(-200.0, 200.0), grad_fn="Deg2RadBackward0"),
    OpSpec("rad2deg", lambda lib, x: lib.rad2deg(x), ((2, 3),), grad_fn="Rad2DegBackward0"),
    OpSpec("sinc", lambda lib, x: lib.sinc(x), ((2, 3),), grad_fn="SincBackward0"),
    OpSpec("sgn", lambda lib, x: lib.sgn(x) * x, away_from(0.0)([(2, 3)]), grad_fn=None, gradgrad=False,
           why="sgn's gradient is zero (a product with x to have one)"),
    OpSpec("logit", lambda lib, x: lib.logit(x), _probabilities, grad_fn="LogitBackward0"),
    OpSpec("logit_eps", lambda lib, x: x.logit(eps=0.2), away_from(0.2, 0.8, lo=0.0, hi=1.0)([(2, 3)]),
           grad_fn="LogitBackward0"),
    OpSpec("float_power", lambda lib, x, y: lib.float_power(x.abs() + 0.5, y), ((2, 3), (2, 3)),
           grad_fn="PowBackward1", float32=False, why="float_power's result is float64"),
    OpSpec("float_power_number", lambda lib, x: x.float_power(3), ((2, 3),), grad_fn="PowBackward0",
           float32=False, why="float_power's result is float64"),
    OpSpec("float_power_base", lambda lib, x: lib.float_power(2, x), ((2, 3),), grad_fn="PowBackward2",
           float32=False, why="float_power's result is float64"),
    OpSpec("copysign", lambda lib, x, y: lib.copysign(x, y), lambda r: [*away_from(0.0)([(2, 3)])(r), r.uniform(-2, 2, (3,))],
           grad_fn="CopysignBackward0"),
    OpSpec("copysign_number", lambda lib, x: x.copysign(-1.0), away_from(0.0)([(2, 3)]), grad_fn="CopysignBackward1"),
    OpSpec("fmax", lambda lib, x, y: lib.fmax(x, y), _apart_pair, grad_fn="FmaxBackward0"),
    OpSpec("fmin", lambda lib, x, y: x.fmin(y), _apart_pair, grad_fn="FminBackward0"),
    OpSpec("nextafter", lambda lib, x, y: lib.nextafter(x, y), _apart_pair, grad_fn="NextafterBackward0",
           gradgrad=False, why="its gradient is a mask: nothing to differentiate again"),
    OpSpec("heaviside", lambda lib, x, y: lib.heaviside(x.detach(), y.detach()), ((2, 3), (3,)), grad=False,
           why="no derivative in PyTorch"),
    OpSpec("signbit", lambda lib, x: lib.signbit(x), ((2, 3),), grad=False, why="a bool result"),
    # predicates.py
    OpSpec("isclose", lambda lib, x, y: lib.isclose(x, y, rtol=0.5), ((2, 3), (2, 3)), grad=False, why="a bool result"),
    OpSpec("isin", lambda lib, x, y: lib.isin(x.round(), y.round()), ((2, 3), (4,)), grad=False,
           why="a bool result"),
    # scans_more.py
    OpSpec("cummax", lambda lib, x: lib.cummax(x, 1).values, _distinct((3, 4)), grad_fn="CummaxBackward0"),
    OpSpec("cummax_0d", lambda lib, x: x.cummax(0)[0], ((),)),
    OpSpec("cummin", lambda lib, x: x.cummin(0).values, _distinct((3, 4)), grad_fn="CumminBackward0"),
    OpSpec("logcumsumexp", lambda lib, x: lib.logcumsumexp(x, 1), ((3, 4),), grad_fn="LogcumsumexpBackward0"),
    OpSpec("logcumsumexp_dim0", lambda lib, x: x.logcumsumexp(-2), ((2, 3, 4),)),
    OpSpec("aminmax", lambda lib, x: lib.aminmax(x).max * 2.0 + lib.aminmax(x).min, _distinct((2, 3))),
    OpSpec("aminmax_dim", lambda lib, x: x.aminmax(dim=1, keepdim=True)[0], _distinct((3, 4)),
           grad_fn="AminmaxBackward0"),
]

globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ against torch
def _np(x: Any) -> Any:
    if isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, tuple):
        return tuple(_np(v) for v in x)
    if hasattr(x, "detach"):
        return x.detach().numpy(force=True) if isinstance(x, torch.Tensor) else np.asarray(x.data)
    return str(x).removeprefix("torch.")


CASES = [
    "heaviside(T([-1.0, 0.0, 2.0, float('nan'), -0.0]), T([5.0]))",
    "signbit(T([-0.0, 0.0, 1.0, -2.0, float('-inf')]))",
    "signbit(T([1, -2, 0]))",
    "isclose(T([1.0, 2.0, float('nan'), float('inf')]), T([1.0, 2.1, float('nan'), float('inf')]))",
    "isclose(T([1.0, 2.0, float('nan')]), T([1.0, 2.00001, float('nan')]), equal_nan=True)",
    "isclose(T([1, 2]), T([1, 3]), atol=1)",
    "allclose(T([1.0, 2.0]), T([1.0, 2.0 + 1e-9]))",
    "allclose(T([1.0, float('nan')]), T([1.0, float('nan')]))",
    "equal(T([1.0, 2.0]), T([1, 2]))",
    "equal(T([1.0, 2.0]), T([1.0]))",
    "equal(T([float('nan')]), T([float('nan')]))",
    "isin(T([1, 2, 3]), T([2, 5]))",
    "isin(T([1, 2, 3]), T([2, 5]), invert=True)",
    "isin(T([1.0, 2.0]), 2)",
    "isin(2, T([1, 2]))",
    "result_type(T([1]), 1.0)",
    "result_type(T([1.0]), T(1.0, dtype=L.float64))",
    "promote_types(L.int32, L.float32)",
    "promote_types(L.uint8, L.int8)",
    "can_cast(L.float64, L.int32)",
    "can_cast(L.int32, L.float64)",
    "can_cast(L.int64, L.bool)",
    "typename(3)",
    "is_complex(T([1.0]))",
    "is_floating_point(T([1]))",
    "is_floating_point(T([1.0]))",
    "numel(T([[1, 2], [3, 4]]))",
    "positive(T([1.0, -2.0]))",
    "detach(T([1.0], requires_grad=True))",
    "cummax(T([1, 3, 2]), 0)",
    "cummin(T([True, False]), 0)",
    "cummax(T([[1.0, 3.0, 3.0, 2.0, float('nan'), 1.0, float('nan')]]), 1)",
    "cummin(T([[0.0, -0.0, 1.0]]), 1)",
    "aminmax(T([1, 3, 2]))",
    "aminmax(T([[1.0, 3.0], [4.0, 0.0]]), dim=0)",
    "aminmax(T([[1.0, 3.0], [4.0, 0.0]]), keepdim=True)",
    "logcumsumexp(T([float('-inf'), float('-inf'), 0.0, float('inf'), 1.0]), 0)",
    "logcumsumexp(T(2.0), 0)",
    "exp2(T([1, 2]))",
    "sinc(T([0, 1]))",
    "logit(T([1, 0]))",
    "float_power(T([1, 2]), 2)",
    "copysign(T([1, 2]), -1)",
    "fmax(T([1]), T([2.0]))",
    "sgn(T([True, False]))",
    "deg2rad(T([True]))",
]


def _outcome(lib: Any, case: str) -> Any:
    namespace = {"L": lib, "T": lib.tensor}
    try:
        return _np(eval(f"L.{case}", namespace))
    except Exception as e:
        return type(e).__name__, str(e)


@requires_torch
@pytest.mark.real_default_dtype
@pytest.mark.parametrize("case", CASES)
def test_values_and_errors_match_torch(case: str) -> None:
    theirs, ours = _outcome(torch, case), _outcome(ag, case)
    if isinstance(theirs, tuple) and theirs and isinstance(theirs[0], str):
        assert ours == theirs
        return
    theirs, ours = (theirs, ours) if isinstance(theirs, tuple) else ((theirs,), (ours,))
    for t, o in zip(theirs, ours, strict=True):
        if isinstance(t, np.ndarray):
            assert o.dtype == t.dtype and o.shape == t.shape, (o, t)
            np.testing.assert_array_equal(o, t)
        else:
            assert o == t


ERRORS = [
    "heaviside(T([1.0]), T([2]))",
    "nextafter(T([1]), T([2]))",
    "isclose(T([1.0]), T([1]))",
    "allclose(T([1.0]), T([1]))",
    "isclose(T([1.0]), T([1.0]), rtol=-1.0)",
    "equal(T([1.0]), 1.0)",
    "positive(T([True]))",
    "adjoint(T([1.0]))",
    "swapaxes(T([1.0]), 0, 1)",
    "fmax(T([1.0]), 2.0)",
    "logcumsumexp(T([1, 2]), 0)",
    "cummax(T([[1.0]]), dim=2)",
    "aminmax(T([]))",
    "is_floating_point(3)",
]


@requires_torch
@pytest.mark.real_default_dtype
@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_torch(case: str) -> None:
    theirs, ours = _outcome(torch, case), _outcome(ag, case)
    assert isinstance(theirs, tuple) and isinstance(theirs[0], str), theirs
    assert ours == theirs


@requires_torch
def test_grads_at_special_points_match_torch() -> None:
    """sinc at 0, logit at and outside its bounds, fmax/fmin with NaN, copysign at zeros,
    nextafter at equal operands, cummax ties and NaN, logcumsumexp at infinities."""
    nan, inf = float("nan"), float("inf")
    cases = [
        (lambda L, x: L.sinc(x), [[0.0, 1.0, -2.0, 0.5]]),
        (lambda L, x: L.logit(x), [[0.0, 0.5, 1.0, 1.2, -0.1]]),
        (lambda L, x: L.logit(x, eps=0.1), [[0.0, 0.05, 0.5, 0.95, 1.0]]),
        (lambda L, x, y: L.fmax(x, y), [[0.0, nan, 1.0, nan, 2.0], [nan, 1.0, 1.0, nan, -2.0]]),
        (lambda L, x, y: L.fmin(x, y), [[0.0, nan, 1.0, nan, 2.0], [nan, 1.0, 1.0, nan, -2.0]]),
        (lambda L, x, y: L.copysign(x, y), [[0.0, -0.0, 1.0, inf, nan], [-1.0, 1.0, -0.0, -2.0, 1.0]]),
        (lambda L, x, y: L.nextafter(x, y), [[1.0, 2.0, 0.0], [1.0, 3.0, -1.0]]),
        (lambda L, x: L.cummax(x, 0).values, [[1.0, 3.0, 3.0, 2.0, nan, 1.0]]),
        (lambda L, x: L.cummin(x, 0).values, [[1.0, 0.0, 0.0, 2.0, nan, nan]]),
        (lambda L, x: L.logcumsumexp(x, 0), [[-inf, -inf, 0.0, inf, 1.0]]),
        (lambda L, x: L.aminmax(x).min + L.aminmax(x).max, [[1.0, 3.0, 3.0, 1.0]]),
    ]
    for fn, values in cases:
        xt = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
        xa = [ag.tensor(v, dtype=ag.float64, requires_grad=True) for v in values]
        out_t, out_a = fn(torch, *xt), fn(ag, *xa)
        weights = np.reshape([2.0, -1.0, 3.0, 0.5, 1.5, -2.0][: out_t.numel()], tuple(out_t.shape))
        gt = torch.autograd.grad(out_t, xt, torch.tensor(weights, dtype=torch.float64), allow_unused=True)
        ga = sync.grad(out_a, xa, ag.tensor(weights, dtype=ag.float64), allow_unused=True)
        np.testing.assert_array_equal(out_a.detach().numpy(), out_t.detach().numpy())
        for a, t in zip(ga, gt, strict=True):
            np.testing.assert_array_equal(a.detach().numpy(), t.numpy(force=True), err_msg=str(values))


@requires_torch
def test_heaviside_backward_raises_as_torch() -> None:
    x = ag.tensor([1.0, 0.0], requires_grad=True)
    out = ag.heaviside(x, ag.tensor([0.5, 0.5]))
    assert type(out.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        sync.grad(out.sum(), [x])


def test_aliases_are_the_same_functions() -> None:
    assert ag.multiply is ag.mul and ag.subtract is ag.sub and ag.negative is ag.neg
    assert ag.absolute is ag.abs and ag.fix is ag.trunc and ag.arctan2 is ag.atan2 and ag.swapdims is ag.transpose
    x = ag.tensor([[1.0, -2.0]])
    assert x.multiply(2.0).tolist() == [[2.0, -4.0]] and x.negative().tolist() == [[-1.0, 2.0]]
    assert ag.positive(x) is x and x.positive() is x
