"""Elementwise ops: arithmetic and its reflected forms, unary math, clamp, extrema, where, casts,
comparisons.

Most tests come from one table of ``OpSpec`` rows and the factory ``make_op_tests`` (MyGrad style),
which tests/test_ops_shape.py and tests/test_ops_linalg.py import as well. Every row gets:

* ``test_gradcheck``: central finite differences on float64 inputs (broadcasting shapes);
* ``test_gradgradcheck``: the same for the vector-Jacobian product (rows with ``gradgrad``);
* ``test_matches_torch``: forward values and first gradients against PyTorch on the same inputs;
* ``test_second_derivatives_match_torch``: grad of (grad . v) against PyTorch (``gradgrad``);
* ``test_float32_stays_float32``: float32 in, float32 out and float32 gradients;
* ``test_grad_fn_name``: the node's name, and that PyTorch gives the same one.

An op is written once as ``fn(lib, *inputs)`` and run with ``lib`` = aiograd and ``lib`` = torch:
methods and operators are spelled the same in both. ``const(lib, array)`` hands aiograd the
array itself (so ``array - x`` goes through the reflected operator) and torch a tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, apart, as_numpy, away_from, const, make_op_tests

import aiograd as ag
from aiograd.testing import gradcheck

# numpy's overflow / divide / invalid warnings are bugs here; so is any warning from an op.
pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough


# ================================================================================ the table
A = np.array([[0.5, -1.5, 2.0, 1.0]])  # a float64 constant operand, broadcast against (3, 1)
POS = np.array([[0.5], [1.5], [2.5]])  # a positive constant (base of ``array ** x``)
COND = np.array([[True], [False], [True]])  # broadcast against (4,) and (3, 4)

nonzero = away_from(0.0, gap=0.2)
positive = (0.3, 2.0)

SPECS = [
    # ---------------------------------------------------------------- add / sub
    OpSpec("add", lambda lib, x, y: x + y, ((3, 1), (4,)), grad_fn="AddBackward0"),
    OpSpec("add_fn_alpha", lambda lib, x, y: lib.add(x, y, alpha=2.5), ((2, 3), (3,))),
    OpSpec("add_scalar", lambda lib, x: x + 2, ((2, 3),), grad_fn="AddBackward0"),
    OpSpec("radd_scalar", lambda lib, x: 2.5 + x, ((2, 3),), grad_fn="AddBackward0", op="add"),
    OpSpec("radd_array", lambda lib, x: const(lib, A) + x, ((3, 1),), float32=False, op="add"),
    OpSpec("add_self", lambda lib, x: x + x, ((2, 3),)),
    OpSpec("sub", lambda lib, x, y: x - y, ((), (2, 3)), grad_fn="SubBackward0"),
    OpSpec("sub_fn_alpha", lambda lib, x, y: lib.sub(x, y, alpha=0.5), ((3, 1), (1, 4))),
    OpSpec("sub_scalar", lambda lib, x: x - 2, ((2, 3),), grad_fn="SubBackward0"),
    OpSpec("rsub_scalar", lambda lib, x: 2 - x, ((2, 3),), grad_fn="RsubBackward1", op="sub"),
    OpSpec("rsub_array", lambda lib, x: const(lib, A) - x, ((3, 1),), float32=False, op="sub"),
    # ---------------------------------------------------------------- mul / div
    OpSpec("mul", lambda lib, x, y: x * y, ((4, 1, 3), (2, 3)), grad_fn="MulBackward0"),
    OpSpec("mul_fn", lambda lib, x, y: lib.mul(x, y), ((3,), ())),
    OpSpec("mul_scalar", lambda lib, x: x * 2.5, ((2, 3),), grad_fn="MulBackward0"),
    OpSpec("rmul_scalar", lambda lib, x: 3 * x, ((2, 3),), grad_fn="MulBackward0", op="mul"),
    OpSpec("rmul_array", lambda lib, x: const(lib, A) * x, ((3, 1),), float32=False, op="mul"),
    OpSpec("mul_self", lambda lib, x: x * x, ((2, 3),)),
    OpSpec("div", lambda lib, x, y: x / y,
           lambda r: [r.uniform(-2, 2, (3, 1)), *nonzero([(4,)])(r)], grad_fn="DivBackward0"),
    OpSpec("div_fn", lambda lib, x, y: lib.div(x, y), lambda r: [r.uniform(-2, 2, (2, 3)), [1.5]]),
    OpSpec("true_divide", lambda lib, x, y: lib.true_divide(x, y),
           lambda r: [r.uniform(-2, 2, (3,)), r.uniform(0.5, 2, (3,))]),
    OpSpec("div_scalar", lambda lib, x: x / 3, ((2, 3),), grad_fn="DivBackward0"),
    OpSpec("rdiv_scalar", lambda lib, x: 3 / x, nonzero([(2, 3)]), op="div"),
    OpSpec("rdiv_array", lambda lib, x: const(lib, A) / x, nonzero([(3, 1)]), float32=False, op="div"),
    OpSpec("div_self", lambda lib, x: x / x, ((2, 3),), domain=positive),
    # ---------------------------------------------------------------- pow
    OpSpec("pow_int", lambda lib, x: x**3, ((2, 3),), grad_fn="PowBackward0"),
    OpSpec("pow_float", lambda lib, x: x**2.5, ((2, 3),), domain=positive, grad_fn="PowBackward0"),
    OpSpec("pow_negative", lambda lib, x: x**-1.5, ((2, 3),), domain=positive),
    OpSpec("pow_zero", lambda lib, x: x**0, ((2, 3),)),
    OpSpec("pow_one", lambda lib, x: x**1, ((2, 3),)),
    OpSpec("pow_fn", lambda lib, x: lib.pow(x, 2), ((2, 3),)),
    OpSpec("pow_tensor", lambda lib, x, y: x**y,
           lambda r: [r.uniform(0.3, 2, (3, 1)), r.uniform(-2, 2, (4,))], grad_fn="PowBackward1"),
    OpSpec("pow_array_exponent", lambda lib, x: x ** const(lib, A), ((3, 1),), domain=positive,
           float32=False, grad_fn="PowBackward1"),
    OpSpec("rpow_scalar", lambda lib, x: 2**x, ((2, 3),), grad_fn="PowBackward2", op="pow"),
    OpSpec("rpow_float", lambda lib, x: 0.5**x, ((2, 3),), grad_fn="PowBackward2", op="pow"),
    OpSpec("rpow_array", lambda lib, x: const(lib, POS) ** x, ((4,),), float32=False, op="pow"),
    # ---------------------------------------------------------------- neg and unary math
    OpSpec("neg", lambda lib, x: -x, ((2, 3),), grad_fn="NegBackward0"),
    OpSpec("neg_fn", lambda lib, x: lib.neg(x), ((2, 3),)),
    OpSpec("exp", lambda lib, x: x.exp(), ((2, 3),), grad_fn="ExpBackward0"),
    OpSpec("exp_fn", lambda lib, x: lib.exp(x), ((),)),
    OpSpec("log", lambda lib, x: x.log(), ((2, 3),), domain=positive, grad_fn="LogBackward0"),
    OpSpec("log1p", lambda lib, x: lib.log1p(x), ((2, 3),), domain=(-0.7, 2.0),
           grad_fn="Log1PBackward0"),
    OpSpec("sqrt", lambda lib, x: x.sqrt(), ((2, 3),), domain=positive, grad_fn="SqrtBackward0"),
    OpSpec("abs", lambda lib, x: x.abs(), nonzero([(2, 3)]), grad_fn="AbsBackward0"),
    OpSpec("abs_builtin", lambda lib, x: abs(x), nonzero([(2, 3)])),
    OpSpec("sign", lambda lib, x: lib.sign(x), nonzero([(2, 3)]), grad_fn="SignBackward0"),
    OpSpec("sin", lambda lib, x: x.sin(), ((2, 3),), domain=(-4, 4), grad_fn="SinBackward0"),
    OpSpec("cos", lambda lib, x: lib.cos(x), ((2, 3),), domain=(-4, 4), grad_fn="CosBackward0"),
    OpSpec("tanh", lambda lib, x: x.tanh(), ((2, 3),), domain=(-3, 3), grad_fn="TanhBackward0"),
    OpSpec("sigmoid", lambda lib, x: lib.sigmoid(x), ((2, 3),), domain=(-6, 6),
           grad_fn="SigmoidBackward0"),
    OpSpec("relu", lambda lib, x: x.relu(), nonzero([(2, 3)]), grad_fn="ReluBackward0"),
    OpSpec("relu_fn", lambda lib, x: lib.relu(x), nonzero([(4,)])),
    # ---------------------------------------------------------------- clamp
    OpSpec("clamp", lambda lib, x: x.clamp(-0.5, 0.5), away_from(-0.5, 0.5)([(3, 4)]),
           grad_fn="ClampBackward1"),
    OpSpec("clamp_min", lambda lib, x: x.clamp(min=0.3), away_from(0.3)([(3, 4)]),
           grad_fn="ClampBackward1"),
    OpSpec("clamp_max", lambda lib, x: lib.clamp(x, max=-0.2), away_from(-0.2)([(3, 4)])),
    OpSpec("clip", lambda lib, x: lib.clip(x, -1, 1), away_from(-1.0, 1.0)([(3, 4)])),
    # ---------------------------------------------------------------- maximum / minimum / where
    OpSpec("maximum", lambda lib, x, y: lib.maximum(x, y), apart((3, 1), (4,)),
           grad_fn="MaximumBackward0"),
    OpSpec("minimum", lambda lib, x, y: lib.minimum(x, y), apart((2, 3), (2, 3)),
           grad_fn="MinimumBackward0"),
    OpSpec("maximum_method", lambda lib, x, y: x.maximum(y), apart((3,), ())),
    OpSpec("where", lambda lib, x, y: lib.where(const(lib, COND), x, y), ((4,), (3, 4)),
           grad_fn="WhereBackward0"),
    OpSpec("where_scalar_other", lambda lib, x: lib.where(const(lib, COND), x, 0.0), ((1, 4),)),
    OpSpec("where_scalar_input", lambda lib, y: lib.where(const(lib, COND), 1.5, y), ((4,),)),
    # ---------------------------------------------------------------- clone / casts
    OpSpec("clone", lambda lib, x: x.clone() * 2, ((2, 3),)),
    OpSpec("clone_name", lambda lib, x: x.clone(), ((2, 3),), grad_fn="CloneBackward0"),
    OpSpec("double_of_float64", lambda lib, x: x.double() * x, ((2, 3),), float32=False),
    # ---------------------------------------------------------------- composites
    OpSpec("composite", lambda lib, x, y: (x * y).tanh() / (1 + (x - y) ** 2) + x.exp() * 0.1,
           ((3, 1), (1, 4)), op=None),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ edge cases
async def _grads_vs_torch(
    fn: Callable[..., Any], arrays: Sequence[Any], *, second: bool = False, where_torch_finite: bool = False
) -> None:
    """Forward and gradients (and optionally gradients of the summed gradient) vs torch.

    ``where_torch_finite``: compare second derivatives only where torch's are finite, and require
    ours to be finite everywhere (torch's double backward of pow gives 0 * inf = nan at a zero base).
    """
    xs = [ag.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    ts = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out, tout = fn(ag, *xs), fn(torch, *ts)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=0)
    u = np.linspace(0.5, 1.5, out.data.size).reshape(out.shape)
    grads = await ag.grad(out, xs, ag.tensor(u), create_graph=second, allow_unused=True)
    tgrads = torch.autograd.grad(tout, ts, torch.tensor(u), create_graph=second, allow_unused=True)
    for g, tg, x in zip(grads, tgrads, xs):
        np.testing.assert_allclose(as_numpy(g, x.data), as_numpy(tg, x.data), rtol=1e-12, atol=0)
    if second:
        s = sum(g.sum() for g in grads if g is not None)
        ts_ = sum(g.sum() for g in tgrads if g is not None)
        none = [None] * len(xs)  # a gradient that is a constant has no second derivative
        ours_ = await ag.grad(s, xs, allow_unused=True) if s.requires_grad else none
        theirs_ = torch.autograd.grad(ts_, ts, allow_unused=True) if ts_.requires_grad else none
        for g, tg, x in zip(ours_, theirs_, xs):
            ours, theirs = as_numpy(g, x.data), as_numpy(tg, x.data)
            if where_torch_finite:
                assert np.all(np.isfinite(ours))
                ours, theirs = ours[np.isfinite(theirs)], theirs[np.isfinite(theirs)]
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)


@requires_torch
async def test_pow_zero_base_matches_torch() -> None:
    # 0 ** 0, 0 ** 1, 0 ** 2 and 0 ** 3 (no warnings: no 0 ** -1 is computed on the way).
    base = [0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.5]
    expo = [0.0, 1.0, 2.0, 3.0, 0.0, -1.0, 2.5]
    await _grads_vs_torch(lambda lib, a, b: a**b, [base, expo])
    await _grads_vs_torch(lambda lib, a, b: a**b, [base, expo], second=True, where_torch_finite=True)
    await _grads_vs_torch(lambda lib, b: 0.0**b, [[0.0, 1.0, 2.5]])
    await _grads_vs_torch(lambda lib, a: a**0, [[0.0, 1.0, -2.0]], second=True)
    await _grads_vs_torch(lambda lib, a: a**2, [[0.0, 1.0, -2.0]], second=True)
    await _grads_vs_torch(lambda lib, a: a**1, [[0.0, 1.0, -2.0]], second=True)


async def test_pow_zero_exponent_gives_zero_gradient() -> None:
    a = ag.tensor([0.0, 3.0], requires_grad=True)
    b = ag.tensor([0.0, 0.0], requires_grad=True)
    ga, gb = await ag.grad((a**b).sum(), [a, b])
    assert ga.tolist() == [0.0, 0.0]
    assert gb.tolist() == [0.0, np.log(3.0)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_sigmoid_large_inputs(dtype: Any) -> None:
    values = np.array([-1000.0, -100.0, -40.0, -10.0, -1.0, 0.0, 1.0, 10.0, 40.0, 100.0, 1000.0])
    x = ag.tensor(values, dtype=dtype, requires_grad=True)
    y = x.sigmoid()  # the module's filterwarnings("error") turns an overflow warning into a failure
    assert y.dtype == dtype
    assert np.all(np.isfinite(y.data)) and np.all((y.data >= 0) & (y.data <= 1))
    (g,) = await ag.grad(y.sum(), x)
    assert g.dtype == dtype and np.all(np.isfinite(g.data))
    # accurate far out in the left tail, where 1 - sigmoid(-x) would round to 0
    exact = np.exp(values[:5].astype(np.float64)) / (1 + np.exp(values[:5].astype(np.float64)))
    tiny = np.finfo(dtype).tiny
    np.testing.assert_allclose(y.data[:5], exact.astype(dtype), rtol=1e-5, atol=tiny)
    if torch is not None:
        t = torch.tensor(values.astype(dtype), requires_grad=True)
        ty = t.sigmoid()
        (tg,) = torch.autograd.grad(ty.sum(), t)
        np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=1e-6, atol=tiny)
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-5, atol=tiny)


@requires_torch
async def test_sigmoid_and_tanh_second_derivatives_match_torch() -> None:
    values = [[-3.0, -0.5, 0.0, 0.7, 2.0]]
    await _grads_vs_torch(lambda lib, x: lib.sigmoid(x), values, second=True)
    await _grads_vs_torch(lambda lib, x: x.tanh(), values, second=True)
    await _grads_vs_torch(lambda lib, x, y: x**y, [[0.5, 1.2, 2.0], [-1.0, 0.5, 3.0]], second=True)


@requires_torch
@pytest.mark.parametrize("op", ["maximum", "minimum"])
async def test_extrema_ties_match_torch(op: str) -> None:
    # Ties split the gradient evenly, as PyTorch does; broadcasting ties too.
    a = [[1.0, 2.0, 3.0, -1.0], [0.0, 2.0, 5.0, -1.0]]
    b = [1.0, 0.0, 3.0, -1.0]
    await _grads_vs_torch(lambda lib, x, y: getattr(lib, op)(x, y), [a, b])
    await _grads_vs_torch(lambda lib, x, y: getattr(lib, op)(x, y), [[2.0, 2.0, 2.0], [2.0]])


@requires_torch
async def test_non_smooth_points_match_torch() -> None:
    # Subgradients PyTorch picks at the kinks: abs, relu and sign give 0 at 0; clamp passes the
    # gradient at its bounds.
    values = [[-1.0, -0.5, 0.0, 0.5, 1.0]]
    await _grads_vs_torch(lambda lib, x: x.abs(), values)
    await _grads_vs_torch(lambda lib, x: x.relu(), values)
    await _grads_vs_torch(lambda lib, x: lib.sign(x), values)
    await _grads_vs_torch(lambda lib, x: x.clamp(-0.5, 0.5), values)
    await _grads_vs_torch(lambda lib, x: x.clamp(min=0.0), values)
    await _grads_vs_torch(lambda lib, x: x.clamp(max=0.0), values)
    await _grads_vs_torch(lambda lib, x: x.clamp(0.5, -0.5), values)  # min > max: all max


async def test_clamp_needs_a_bound() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^torch.clamp: At least one of 'min' or 'max' must not be None$"):
        x.clamp()
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ag.clamp(x, None, None)


async def test_clamp_with_tensor_bounds() -> None:
    x = ag.tensor([-2.0, 0.0, 2.0], requires_grad=True)
    lo, hi = ag.tensor([-1.0]), ag.tensor([1.0, 1.0, 3.0])
    y = x.clamp(lo, hi)
    assert y.tolist() == [-1.0, 0.0, 2.0]
    (g,) = await ag.grad(y.sum(), x)
    assert g.tolist() == [0.0, 1.0, 1.0]


async def test_one_sided_clamp_values() -> None:
    x = ag.tensor([-2.0, 0.0, 2.0])
    assert x.clamp(min=-1).tolist() == [-1.0, 0.0, 2.0]
    assert x.clamp(max=1).tolist() == [-2.0, 0.0, 1.0]
    assert ag.clip(x, -1, 1).tolist() == [-1.0, 0.0, 1.0]


async def test_where_condition_forms() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ag.tensor([[10.0], [20.0]], requires_grad=True)
    cond = ag.tensor([True, False, True])
    out = ag.where(cond, x, y)  # a bool tensor condition, broadcast against (2, 1)
    assert out.tolist() == [[1.0, 10.0, 3.0], [1.0, 20.0, 3.0]]
    gx, gy = await ag.grad(out.sum(), [x, y])
    assert gx.tolist() == [2.0, 0.0, 2.0] and gy.tolist() == [[1.0], [1.0]]
    assert ag.where(x > 1.5, x, 0.0).tolist() == [0.0, 2.0, 3.0]
    with pytest.raises(
        RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor with dtype"
    ):
        ag.where(ag.tensor([1.0, 0.0, 1.0]), x, x)


# --------------------------------------------------------------------------- same tensor twice
@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (lambda x: x + x, [2.0, 2.0]),
        (lambda x: x - x, [0.0, 0.0]),
        (lambda x: x * x, [2.0, 4.0]),
        (lambda x: x / x, [0.0, 0.0]),
        (lambda x: x**x, [1.0, 4.0 * (np.log(2.0) + 1)]),  # d/dx x**x = x**x (log x + 1)
    ],
    ids=["add", "sub", "mul", "div", "pow"],
)
async def test_same_tensor_on_both_sides(fn: Any, expected: list[float]) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    out = fn(x)
    await out.sum().backward()
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)


# --------------------------------------------------------------------------- dtypes with numbers
@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + 1, lambda x: 1 + x, lambda x: x - 1.5, lambda x: 1.5 - x, lambda x: x * 2,
        lambda x: 2 * x, lambda x: x / 3, lambda x: 3 / x, lambda x: x**2, lambda x: x**0.5,
        lambda x: 2**x, lambda x: ag.add(x, 1, alpha=2), lambda x: ag.sub(x, 1, alpha=0.5),
        lambda x: x.clamp(0.1, 0.9), lambda x: ag.maximum(x, ag.tensor(0.5)), lambda x: ag.minimum(ag.tensor(0.5), x),
        lambda x: ag.where(x > 0.5, x, 0.0), lambda x: ag.where(x > 0.5, 1.0, x),
        lambda x: x.sigmoid() * 0.5 + 0.25,
    ],
    ids=["add", "radd", "sub", "rsub", "mul", "rmul", "div", "rdiv", "pow_int", "pow_float", "rpow",
         "add_alpha", "sub_alpha", "clamp", "maximum_0d", "minimum_0d_first", "where_other",
         "where_input", "sigmoid_affine"],
)
async def test_python_numbers_keep_float32(fn: Any) -> None:
    x = ag.tensor([0.25, 0.5, 0.75], dtype=np.float32, requires_grad=True)
    out = fn(x)
    assert out.dtype == np.float32
    (g,) = await ag.grad(out.sum(), x, create_graph=True)
    assert g.dtype == np.float32
    if g.requires_grad:  # not for ops whose gradient is a constant
        (gg,) = await ag.grad(g.sum(), x, allow_unused=True)
        assert gg is None or gg.dtype == np.float32


# --------------------------------------------------------------------------- reflected operators
async def test_reflected_operators_with_numpy_arrays() -> None:
    # numpy must hand these to the tensor's reflected operator (Tensor.__array_ufunc__ = None):
    # the result is a tensor in the graph, not an object array.
    arr = np.array([1.0, 2.0, 4.0])
    x = ag.tensor([0.5, 1.0, 2.0], requires_grad=True)
    cases = {
        "radd": (arr + x, arr + x.data, np.ones(3)),
        "rsub": (arr - x, arr - x.data, -np.ones(3)),
        "rmul": (arr * x, arr * x.data, arr),
        "rtruediv": (arr / x, arr / x.data, -arr / x.data**2),
        "rpow": (arr**x, arr**x.data, arr**x.data * np.log(arr)),
    }
    for name, (out, value, grad) in cases.items():
        assert isinstance(out, ag.Tensor), name
        assert out.requires_grad, name
        np.testing.assert_allclose(out.data, value, err_msg=name)
        (g,) = await ag.grad(out.sum(), x)
        np.testing.assert_allclose(g.data, grad, err_msg=name)


async def test_alpha_forms() -> None:
    x, y = ag.tensor([1.0, 2.0], requires_grad=True), ag.tensor([3.0, 4.0], requires_grad=True)
    out = ag.add(x, y, alpha=2) + x.sub(y, alpha=3)
    assert out.tolist() == [-1.0, 0.0]
    gx, gy = await ag.grad(out.sum(), [x, y])
    assert gx.tolist() == [2.0, 2.0] and gy.tolist() == [-1.0, -1.0]


async def test_pow_array_exponent() -> None:
    x = ag.tensor([2.0, 3.0], requires_grad=True)
    y = x ** np.array([0.0, 2.0])
    assert y.tolist() == [1.0, 9.0]
    (g,) = await ag.grad(y.sum(), x)
    assert g.tolist() == [0.0, 6.0]


# --------------------------------------------------------------------------- clone and casts
async def test_clone_copies_and_passes_gradient() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    assert y.grad_fn.name() == "CloneBackward0"
    assert not np.shares_memory(x.data, y.data)
    (g,) = await ag.grad((y * 3).sum(), x)
    assert g.tolist() == [3.0, 3.0]


@pytest.mark.parametrize(
    "cast",
    [lambda x: x.to(np.float32), lambda x: x.to(dtype=np.float32), lambda x: x.float(),
     lambda x: x.to("cpu", np.float32)],
    ids=["to", "to_dtype_kw", "float", "to_device_dtype"],
)
async def test_cast_down_and_gradient_back(cast: Any) -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = cast(x)
    assert y.dtype == np.float32 and y.grad_fn.name() == "ToCopyBackward0"
    (g,) = await ag.grad((y * y).sum(), x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g.data, [2.0, 4.0, 6.0])


async def test_cast_up_matches_torch_and_gradgrad() -> None:
    x = ag.tensor([0.5, -1.0, 2.0], dtype=np.float32, requires_grad=True)
    y = x.double()
    assert y.dtype == np.float64 and y.grad_fn.name() == "ToCopyBackward0"
    (g,) = await ag.grad((y**3).sum(), x, create_graph=True)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.data, 3 * x.data.astype(np.float64) ** 2, rtol=1e-6)
    (gg,) = await ag.grad(g.sum(), x)
    assert gg.dtype == np.float32
    np.testing.assert_allclose(gg.data, 6 * x.data, rtol=1e-6)
    # float64 round trip through float32 is differentiable end to end
    z = ag.tensor([1.0, 2.0], requires_grad=True)
    assert await gradcheck(lambda t: t.float().double() * t, [z], eps=1e-3, atol=1e-3)


async def test_cast_to_same_dtype_returns_self() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert x.to(np.float64) is x and x.double() is x and x.to("cpu") is x
    f = ag.tensor([1.0], dtype=np.float32)
    assert f.float() is f


async def test_long_and_bool_casts_are_not_differentiable() -> None:
    x = ag.tensor([1.5, 0.0, -2.5], requires_grad=True)
    n, b = x.long(), x.bool()
    assert n.dtype == np.int64 and n.tolist() == [1, 0, -2]
    assert b.dtype == np.bool_ and b.tolist() == [True, False, True]
    assert not n.requires_grad and n.grad_fn is None and not b.requires_grad


# --------------------------------------------------------------------------- comparisons
COMPARISONS = {
    "eq": (lambda a, b: a == b, np.equal),
    "ne": (lambda a, b: a != b, np.not_equal),
    "lt": (lambda a, b: a < b, np.less),
    "le": (lambda a, b: a <= b, np.less_equal),
    "gt": (lambda a, b: a > b, np.greater),
    "ge": (lambda a, b: a >= b, np.greater_equal),
}


@pytest.mark.parametrize("name", list(COMPARISONS))
async def test_comparisons(name: str) -> None:
    op, ufunc = COMPARISONS[name]
    a = ag.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    b = ag.tensor([3.0, 2.0, 1.0, 2.0], requires_grad=True)
    forms = {
        "operator": (op(a, b), ufunc(a.data, b.data)),
        "method": (getattr(a, name)(b), ufunc(a.data, b.data)),
        "function": (getattr(ag, name)(a, b), ufunc(a.data, b.data)),
        "scalar": (op(a, 2.0), ufunc(a.data, 2.0)),
        "reflected_scalar": (op(2.0, b), ufunc(2.0, b.data)),
        "array": (op(a, np.array([1.0, 2.0])), ufunc(a.data, np.array([1.0, 2.0]))),
    }
    for form, (out, expected) in forms.items():
        assert isinstance(out, ag.Tensor), form
        assert out.dtype == np.bool_, form
        assert not out.requires_grad and out.grad_fn is None, form
        np.testing.assert_array_equal(out.data, expected, err_msg=form)
    if torch is not None:
        ta, tb = torch.tensor(a.data), torch.tensor(b.data)
        np.testing.assert_array_equal(op(a, b).data, op(ta, tb).numpy())


async def test_comparisons_under_create_graph_are_constants() -> None:
    x = ag.tensor([-1.0, 2.0], requires_grad=True)
    y = ag.where(x > 0, x * x, -x)
    (g,) = await ag.grad(y.sum(), x, create_graph=True)
    assert g.tolist() == [-1.0, 4.0]
    (gg,) = await ag.grad(g.sum(), x)
    assert gg.tolist() == [0.0, 2.0]


# --------------------------------------------------------------------------- no grad recorded
async def test_no_graph_without_requires_grad_or_under_no_grad() -> None:
    x = ag.tensor([1.0, 2.0])
    assert (x * 2 + x.exp()).grad_fn is None
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.no_grad():
        out = (w * 2).tanh().sigmoid().clamp(0, 1)
    assert out.grad_fn is None and not out.requires_grad
