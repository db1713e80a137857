"""The bitwise and logical ops of ``aiograd/_ops/bitwise.py`` and the operators ``&``, ``|``,
``^``, ``~``, ``<<``, ``>>`` (reflected and in place): factory rows (values and dtypes against
torch; none has a gradient), then dtype promotion, number operands on either side, shifts out of
range, the float operands' errors and the in-place forms, against torch. Dtypes are explicit."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

NO_GRAD = "an integer or bool result: no gradient"


def ints(lib: Any, x: Any) -> Any:
    """A float input as integers in [-20, 20]."""
    return (x * 10).long()


SPECS = [
    OpSpec("bitwise_and", lambda lib, a, b: lib.bitwise_and(ints(lib, a), ints(lib, b)), ((2, 3), (3,)),
           grad=False, why=NO_GRAD),
    OpSpec("bitwise_or", lambda lib, a: ints(lib, a).bitwise_or(5), ((2, 3),), grad=False, why=NO_GRAD),
    OpSpec("bitwise_xor", lambda lib, a, b: ints(lib, a) ^ ints(lib, b), ((2, 3), (2, 3)), grad=False, why=NO_GRAD),
    OpSpec("bitwise_not", lambda lib, a: ~ints(lib, a), ((2, 3),), grad=False, why=NO_GRAD),
    OpSpec("bitwise_not_bool", lambda lib, a: lib.bitwise_not(a > 0), ((2, 3),), op="bitwise_not",
           grad=False, why=NO_GRAD),
    OpSpec("bitwise_left_shift", lambda lib, a: lib.bitwise_left_shift(ints(lib, a), 3), ((2, 3),),
           grad=False, why=NO_GRAD),
    OpSpec("bitwise_right_shift", lambda lib, a, b: ints(lib, a) >> (ints(lib, b).abs() // 4), ((2, 3), (2, 3)),
           grad=False, why=NO_GRAD),
    OpSpec("logical_and", lambda lib, a, b: lib.logical_and(a, b > 0), ((2, 3), (3,)), grad=False, why=NO_GRAD),
    OpSpec("logical_or", lambda lib, a, b: a.logical_or(b > 0.5), ((2, 3), (2, 3)), grad=False, why=NO_GRAD),
    OpSpec("logical_xor", lambda lib, a, b: lib.logical_xor(a > 0, ints(lib, b)), ((2, 3), (2, 3)),
           grad=False, why=NO_GRAD),
    OpSpec("logical_not", lambda lib, a: lib.logical_not(a > 0), ((2, 3),), grad=False, why=NO_GRAD),
]

globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ against torch
def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
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
    """aiograd's ``fn(ag)`` is torch's ``fn(torch)``: dtype and values, or exception type and
    message."""
    ours, theirs = _both(fn)
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs) and str(ours) == str(theirs), (ours, theirs)
        return
    assert not isinstance(ours, Exception), (ours, theirs)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad and ours.grad_fn is None


def T(lib: Any, values: Any, dtype: str, requires_grad: bool = False) -> Any:
    dt = getattr(torch, dtype) if lib is torch else np.dtype(dtype)
    return lib.tensor(values, dtype=dt, requires_grad=requires_grad)


def values_of(dtype: str) -> list[Any]:
    if dtype == "bool":
        return [True, False, True, False]
    if dtype == "uint8":
        return [0, 5, 200, 255]
    if dtype.startswith("float"):
        return [1.0, 2.0, -3.0, 0.0]
    return [0, 5, -7, 100]


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
OPERATORS = {"&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
FUNCTIONS = {"&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor", "<<": "bitwise_left_shift",
             ">>": "bitwise_right_shift"}


@requires_torch
@pytest.mark.parametrize("symbol", OPERATORS)
@pytest.mark.parametrize("left", DTYPES)
@pytest.mark.parametrize("right", DTYPES)
def test_operators_promote_and_refuse_floats_as_torch(symbol: str, left: str, right: str) -> None:
    """The result dtype is torch's; a float one (or a bool shift) is torch's NotImplementedError."""
    fn = OPERATORS[symbol]
    b = values_of(right)
    if symbol in "<<>>" and right != "bool":
        b = [1, 3, 0, 2]
    assert_same(lambda lib: fn(T(lib, values_of(left), left), T(lib, b, right)))
    assert_same(lambda lib: getattr(lib, FUNCTIONS[symbol])(T(lib, values_of(left), left), T(lib, b, right)))


@requires_torch
@pytest.mark.parametrize("symbol", OPERATORS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("number", [True, False, 3, -1, 300, 2.5])
def test_number_operands_on_either_side_as_torch(symbol: str, dtype: str, number: Any) -> None:
    """A number operand does not change an integer tensor's dtype (an int wraps into it);
    ``bool_tensor & 1`` is int64; a float number gives torch's NotImplementedError."""
    fn = OPERATORS[symbol]
    assert_same(lambda lib: fn(T(lib, values_of(dtype), dtype), number))
    assert_same(lambda lib: fn(number, T(lib, values_of(dtype), dtype)))


@requires_torch
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_shifts_by_negative_and_too_large_counts_as_torch(dtype: str) -> None:
    bits = np.dtype(dtype).itemsize * 8
    counts = [0, 1, bits - 1, bits, bits + 5, int(np.iinfo(dtype).max)] + ([] if dtype == "uint8" else [-1, -bits])
    base = [1, 3, 100, 255] if dtype == "uint8" else [1, -1, 100, -100]
    for count in counts:
        for v in base:
            assert_same(lambda lib: T(lib, [v], dtype) << T(lib, [count], dtype))  # noqa: B023
            assert_same(lambda lib: T(lib, [v], dtype) >> T(lib, [count], dtype))  # noqa: B023
        assert_same(lambda lib: T(lib, base, dtype) << count)  # noqa: B023
        assert_same(lambda lib: T(lib, base, dtype) >> count)  # noqa: B023


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_invert_and_bitwise_not_as_torch(dtype: str) -> None:
    """``~`` on bool is the logical not; on floats it is torch's TypeError, ``bitwise_not`` its
    NotImplementedError."""
    assert_same(lambda lib: ~T(lib, values_of(dtype), dtype))
    assert_same(lambda lib: lib.bitwise_not(T(lib, values_of(dtype), dtype)))
    assert_same(lambda lib: T(lib, values_of(dtype), dtype).bitwise_not())


@requires_torch
@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("left", DTYPES)
@pytest.mark.parametrize("right", ["bool", "int64", "float32"])
def test_logical_ops_take_any_dtypes_and_give_bool_as_torch(name: str, left: str, right: str) -> None:
    assert_same(lambda lib: getattr(lib, name)(T(lib, values_of(left), left), T(lib, values_of(right), right)))
    assert_same(lambda lib: getattr(T(lib, values_of(left), left), name)(T(lib, values_of(right), right)))
    assert_same(lambda lib: lib.logical_not(T(lib, values_of(left), left)))


@requires_torch
@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_refuse_numbers_as_torch(name: str) -> None:
    assert_same(lambda lib: getattr(lib, name)(T(lib, [1, 0], "int64"), 1))
    assert_same(lambda lib: getattr(lib, name)(0.5, T(lib, [1, 0], "int64")))
    assert_same(lambda lib: lib.logical_not(3))


@requires_torch
def test_bitwise_ops_give_no_gradient_and_refuse_what_is_not_an_operand() -> None:
    assert_same(lambda lib: lib.logical_not(T(lib, [1.0, 0.0], "float64", True)))
    assert_same(lambda lib: lib.logical_and(T(lib, [1.0, 0.0], "float64", True), T(lib, [1, 1], "int64")))
    assert_same(lambda lib: T(lib, [1.0, 0.0], "float64", True) & 1)
    for fn in (lambda t: t & "x", lambda t: t | None, lambda t: t << "1", lambda t: {1} ^ t):
        ours, theirs = _both(lambda lib: fn(T(lib, [1, 2], "int64")))  # noqa: B023 - called at once
        assert type(ours) is type(theirs) is TypeError and str(ours) == str(theirs)


# ------------------------------------------------------------------------------ in place
@requires_torch
@pytest.mark.parametrize("symbol", ["&=", "|=", "^=", "<<=", ">>="])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float32"])
@pytest.mark.parametrize("other", [True, 3, 2.5, "int64", "bool", "uint8"])
def test_inplace_operators_write_or_refuse_as_torch(symbol: str, dtype: str, other: Any) -> None:
    """The tensor itself is written (a narrower dtype wraps); a result it cannot hold (a float
    into an integer, an integer into a bool) is torch's RuntimeError."""

    def fn(lib: Any) -> Any:
        t = T(lib, values_of(dtype), dtype)
        o = T(lib, [1, 0, 1, 2] if other != "bool" else values_of("bool"), other) if isinstance(other, str) else other
        scope = {"t": t, "o": o}
        exec(f"t {symbol} o", scope)  # noqa: S102 - the operator under test
        assert scope["t"] is t
        return t

    assert_same(fn)


def test_inplace_operator_bumps_the_version_and_views_see_it() -> None:
    t = ag.tensor([1, 2, 3, 4], dtype=np.int64)
    view = t[2:]
    version = t._version
    t <<= 2
    t &= ag.tensor([15, 15, 15, 7], dtype=np.int64)
    assert t._version == version + 2
    assert view.tolist() == [12, 0]
