"""The rounding divisions and ``round(decimals=)`` of ``aiograd/_ops/rounding.py``, and the
operators ``%`` and ``//``: factory rows (gradcheck, gradgradcheck, values and gradients against
torch, float32, grad_fn names), then dtypes, number operands, reflected and in-place forms,
division by zero and the ``NotImplemented`` node, against torch. Dtypes are always explicit."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, away_from, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

ZERO = "its gradient is a constant zero (torch's new_zeros): nothing to differentiate again"
HALF_HUNDREDTHS = tuple(k / 100 + 0.005 for k in range(-200, 200))


def quotients(shape: tuple[int, ...]) -> Any:
    """Operands whose quotient stays away from the integers (where the rounded quotient jumps),
    divisors of both signs away from 0."""

    def draw(rng: np.random.Generator) -> list[np.ndarray]:
        b = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        q = rng.integers(-3, 3, size=shape) + rng.uniform(0.15, 0.85, size=shape)
        return [q * b, b]

    return draw


SPECS = [
    OpSpec("div_trunc", lambda lib, a, b: lib.div(a, b, rounding_mode="trunc"), quotients((2, 3)),
           grad_fn="DivBackward2", op="div", gradgrad=False, why=ZERO),
    OpSpec("div_floor_method_number", lambda lib, a: a.div(0.7, rounding_mode="floor"), away_from(0.0)([(2, 3)]),
           grad_fn="DivBackward2", op="div", gradgrad=False, why=ZERO),
    OpSpec("divide_floor_broadcast", lambda lib, a, b: lib.divide(a, b, rounding_mode="floor"),
           lambda r: [quotients((2, 3))(r)[0], np.array([0.9, -1.1, 1.3])], grad_fn="DivBackward2", op="div", gradgrad=False, why=ZERO),
    OpSpec("divide", lambda lib, a, b: a.divide(b), away_from(0.0, gap=0.3)([(2, 3), (3,)]),
           grad_fn="DivBackward0", op="div"),
    OpSpec("true_divide_method", lambda lib, a, b: a.true_divide(b), away_from(0.0, gap=0.3)([(2, 3), (2, 3)]),
           grad_fn="DivBackward0", op="true_divide"),
    OpSpec("floor_divide", lambda lib, a, b: lib.floor_divide(a.detach(), b.detach()), quotients((2, 3)),
           grad=False, why="no derivative in torch (its NotImplemented node)"),
    OpSpec("floor_divide_integers", lambda lib, a: (a * 10).long() // 3, ((2, 3),), op="floor_divide",
           grad=False, why="an integer result"),
    OpSpec("round_decimals", lambda lib, x: lib.round(x, decimals=2), away_from(*HALF_HUNDREDTHS, gap=0.001)([(2, 3)]),
           grad_fn="RoundBackward1", op="round"),
    OpSpec("round_decimals_negative", lambda lib, x: (x * 100).round(decimals=-1),
           away_from(*(k / 10 + 0.05 for k in range(-20, 20)), gap=0.01)([(2, 3)]), grad_fn="RoundBackward1", op="round"),
    OpSpec("mod_operator", lambda lib, a, b: a % b, quotients((2, 3)), grad_fn="RemainderBackward1", op="remainder"),
    OpSpec("mod_operator_number", lambda lib, a: a % -0.7, ((2, 3),), domain=(0.05, 0.65),
           grad_fn="RemainderBackward0", op="remainder"),
]

globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ against torch
def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    """``fn(lib)`` for aiograd and torch: each result, or the exception it raised."""
    out = []
    default = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, np.dtype(ag.get_default_dtype()).name))  # (the suite's)
    try:
        for lib in (ag, torch):
            try:
                out.append(fn(lib))
            except Exception as e:  # noqa: BLE001 - the exception is what is compared
                out.append(e)
    finally:
        torch.set_default_dtype(default)
    return out[0], out[1]


def assert_same(fn: Callable[[Any], Any]) -> None:
    """aiograd's result of ``fn(lib)`` is torch's: dtype, values, signs of zero and grad_fn's
    name; or the same exception type and message."""
    ours, theirs = _both(fn)
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs) and str(ours) == str(theirs), (ours, theirs)
        return
    assert not isinstance(ours, Exception), (ours, theirs)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)
    expected = theirs.detach().numpy()
    np.testing.assert_array_equal(ours.detach().numpy(), expected)
    numbers = ~np.isnan(expected) if expected.dtype.kind == "f" else np.ones(expected.shape, bool)
    np.testing.assert_array_equal(np.signbit(ours.detach().numpy()[numbers]), np.signbit(expected[numbers]))
    assert ours.requires_grad == theirs.requires_grad
    if theirs.grad_fn is not None:
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__


def T(lib: Any, values: Any, dtype: str, requires_grad: bool = False) -> Any:
    """A tensor of ``lib`` with an explicit dtype (numpy's name, which torch shares)."""
    dt = getattr(torch, dtype) if lib is torch else np.dtype(dtype)
    return lib.tensor(values, dtype=dt, requires_grad=requires_grad)


INTS = [7, -7, 5, -5, 0, 6]
DIVISORS = [2, 2, -3, -3, 4, -6]
FLOATS = [7.5, -7.5, 5.0, -5.0, 0.0, -0.0]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]
FLOAT_DTYPES = ["float16", "float32", "float64"]
OPS = {"%": operator.mod, "//": operator.floordiv}


@requires_torch
@pytest.mark.parametrize("symbol", OPS)
@pytest.mark.parametrize("left", INT_DTYPES + FLOAT_DTYPES + ["bool"])
@pytest.mark.parametrize("right", INT_DTYPES + FLOAT_DTYPES + ["bool"])
def test_operators_promote_as_torch(symbol: str, left: str, right: str) -> None:
    fn = OPS[symbol]
    a = [abs(v) for v in INTS] if "uint" in left else INTS
    b = [abs(v) for v in DIVISORS] if "uint" in right else DIVISORS
    if left == "bool":
        a = [True, False, True, False, True, True]
    if right == "bool":
        b = [True] * 6
    assert_same(lambda lib: fn(T(lib, a, left), T(lib, b, right)))


@requires_torch
@pytest.mark.parametrize("symbol", OPS)
@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
@pytest.mark.parametrize("number", [2, -3, 2.5, -0.75, True])
def test_number_operands_on_either_side_as_torch(symbol: str, dtype: str, number: Any) -> None:
    fn = OPS[symbol]
    values = [1, 3, 5, 7, 200, 9] if dtype == "uint8" else FLOATS if dtype.startswith("float") else INTS
    nonzero = [v if v else 3 for v in values]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (quietly, as torch)
        assert_same(lambda lib: fn(T(lib, values, dtype), number))
        assert_same(lambda lib: fn(number, T(lib, nonzero, dtype)))


@requires_torch
@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide", "div_trunc", "div_floor"])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_by_zero_raises_as_torch(name: str, dtype: str) -> None:
    def fn(lib: Any, a: Any, b: Any) -> Any:
        if name.startswith("div_"):
            return lib.div(a, b, rounding_mode=name[4:])
        return getattr(lib, name)(a, b)

    assert_same(lambda lib: fn(lib, T(lib, [1, 2, 3], dtype), T(lib, [1, 0, 1], dtype)))
    assert_same(lambda lib: fn(lib, T(lib, [1, 2, 3], dtype), 0))
    assert_same(lambda lib: fn(lib, T(lib, [1, 2, 3], dtype), T(lib, 0, dtype)))
    assert_same(lambda lib: fn(lib, T(lib, [], dtype), 0))  # nothing computed: no error


@requires_torch
@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide", "div_trunc", "div_floor"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_division_by_zero_is_quiet_as_torch(name: str, dtype: str) -> None:
    def fn(lib: Any) -> Any:
        a, b = T(lib, [1.5, -2.0, 0.0, np.inf, -0.0], dtype), T(lib, [0.0, -0.0, 0.0, 0.0, 1.0], dtype)
        if name.startswith("div_"):
            return lib.div(a, b, rounding_mode=name[4:])
        return getattr(lib, name)(a, b)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(fn)


@requires_torch
@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64"])
def test_div_rounding_modes_match_torch(mode: str, dtype: str) -> None:
    values = [7, -7, 5, -5, 0, 6, -128] if dtype == "int8" else [7, -7, 5, -5, 0, 6, -(2**40)]
    if dtype.startswith("float"):
        values = [7.5, -7.5, 5.0, -5.0, 0.0, -0.0, 1e30]
    divisors = [2, 2, -3, -3, 4, -6, -1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(lambda lib: lib.div(T(lib, values, dtype), T(lib, divisors, dtype), rounding_mode=mode))
        assert_same(lambda lib: T(lib, values, dtype).div(-3, rounding_mode=mode))
        assert_same(lambda lib: lib.divide(T(lib, values, dtype), 2.5, rounding_mode=mode))


@requires_torch
def test_div_refusals_as_torch() -> None:
    assert_same(lambda lib: lib.div(T(lib, [1.0], "float64"), 2, rounding_mode="round"))
    for mode in ("trunc", "floor"):
        assert_same(lambda lib: lib.div(T(lib, [True], "bool"), T(lib, [True], "bool"), rounding_mode=mode))  # noqa: B023
    assert_same(lambda lib: lib.remainder(T(lib, [True], "bool"), T(lib, [True], "bool")))
    assert_same(lambda lib: lib.fmod(T(lib, [True], "bool"), T(lib, [True], "bool")))
    assert_same(lambda lib: lib.fmod(3, T(lib, [1, 2], "int64")))


@requires_torch
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("decimals", [None, 0, 1, 2, 3, -1, -2, 8, 40, 400, -400])
def test_round_decimals_matches_torch(dtype: str, decimals: int | None) -> None:
    values = [1.25, 2.675, 0.125, -0.5, 1234.5678, 15.0, -25.0, 0.0, -0.0, np.inf, np.nan, 3.14159265, 65000.0]
    kwargs = {} if decimals is None else {"decimals": decimals}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = ag.round(T(ag, values, dtype), **kwargs)
    theirs = torch.round(T(torch, values, dtype), **kwargs)
    assert ours.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@requires_torch
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("decimals", [None, 0, 2])
def test_round_of_integers_and_bools_as_torch(dtype: str, decimals: int | None) -> None:
    values = [True, False] if dtype == "bool" else [1, 2, 250]
    kwargs = {} if decimals is None else {"decimals": decimals}
    assert_same(lambda lib: lib.round(T(lib, values, dtype), **kwargs))


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
async def test_rounding_division_gradients_and_nodes_match_torch(dtype: str) -> None:
    """div with a rounding mode: DivBackward2, zero gradients; floor_divide, ``//`` and ``number
    % tensor``: the NotImplemented node, whose backward raises torch's error."""
    a, b = [5.0, -5.0, 7.5], [2.0, 3.0, -2.0]
    assert_same(lambda lib: lib.div(T(lib, a, dtype, True), T(lib, b, dtype, True), rounding_mode="floor"))
    x, y = T(ag, a, dtype, True), T(ag, b, dtype, True)
    gx, gy = await ag.grad(ag.div(x, y, rounding_mode="trunc").sum(), [x, y])
    assert gx.dtype == np.dtype(dtype) and not gx.numpy().any() and not gy.numpy().any()
    for fn in (lambda lib, t: t // 2, lambda lib, t: 2 // t, lambda lib, t: lib.floor_divide(t, t),
               lambda lib, t: 2.0 % t, lambda lib, t: lib.remainder(3, t)):
        assert_same(lambda lib: fn(lib, T(lib, a, dtype, True)))  # noqa: B023 - called at once
        with pytest.raises(RuntimeError) as theirs:
            fn(torch, T(torch, a, dtype, True)).sum().backward()
        with pytest.raises(RuntimeError) as ours:
            await fn(ag, T(ag, a, dtype, True)).sum().backward()
        assert str(ours.value) == str(theirs.value)  # (the engine's note names the node)
    with ag.no_grad():
        assert not (T(ag, a, dtype, True) // 2).requires_grad


@requires_torch
def test_operators_refuse_what_is_not_an_operand_as_torch() -> None:
    for fn in (lambda t: t % "x", lambda t: t // None, lambda t: [1] // t):
        ours, theirs = _both(lambda lib: fn(T(lib, [1, 2], "int64")))  # noqa: B023 - called at once
        assert type(ours) is type(theirs) is TypeError and str(ours) == str(theirs)


# ------------------------------------------------------------------------------ in place
@requires_torch
@pytest.mark.parametrize("symbol", ["%=", "//="])
@pytest.mark.parametrize("dtype", ["int64", "uint8", "float32", "bool"])
@pytest.mark.parametrize("other", [2, 2.5, "int64", "float64", "bool"])
def test_inplace_operators_write_or_refuse_as_torch(symbol: str, dtype: str, other: Any) -> None:
    def fn(lib: Any) -> Any:
        t = T(lib, [True, False, True] if dtype == "bool" else [5, 7, 9], dtype)
        o = T(lib, [True, True, True] if other == "bool" else [2, 3, 4], other) if isinstance(other, str) else other
        before = t
        scope = {"t": t, "o": o}
        exec(f"t {symbol} o", scope)  # noqa: S102 - the operator under test
        assert scope["t"] is before  # the same tensor, written
        return before

    assert_same(fn)


@requires_torch
@pytest.mark.parametrize("symbol", ["%=", "//="])
async def test_inplace_operators_record_and_guard_as_torch(symbol: str) -> None:
    def fn(lib: Any) -> Any:
        leaf = T(lib, [5.0, -5.0, 7.5], "float64", True)
        t = leaf * 1
        scope = {"t": t}
        exec(f"t {symbol} 2.0", scope)  # noqa: S102
        return scope["t"]

    assert_same(fn)  # RemainderBackward0, or NotImplemented
    leaf = T(ag, [5.0, -5.0, 7.5], "float64", True)
    t = leaf * 1
    t %= 2.0
    (g,) = await ag.grad(t.sum(), [leaf])
    np.testing.assert_array_equal(g.numpy(), np.ones(3))

    def on_leaf(lib: Any) -> Any:
        t = T(lib, [5.0], "float64", True)
        scope = {"t": t}
        exec(f"t {symbol} 2.0", scope)  # noqa: S102
        return scope["t"]

    assert_same(on_leaf)  # a leaf that requires grad: torch's RuntimeError


def test_inplace_operator_bumps_the_version_and_views_see_it() -> None:
    t = ag.tensor([5, 7, 9, 11], dtype=np.int64)
    view = t[1:]
    version = t._version
    t %= 4
    assert t._version == version + 1
    assert view.tolist() == [3, 1, 3]
