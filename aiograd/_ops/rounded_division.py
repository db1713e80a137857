"""``div(input, other, rounding_mode="trunc" | "floor")``, as PyTorch's: the rounded quotient
(``div`` calls ``rounded_div`` for a rounding mode) and its node ``DivBackward2``, whose gradients
are zeros. ``rounding.floor_divide`` (``//``) shares the division.

PyTorch's numbers: a float floor division is its ``div_floor_floating`` (through ``fmod``, so
``floor_divide(-0.0, 1)`` is ``-0.0``); an integer one rounds as Python's ``//`` and wraps where
PyTorch's does (``int8(-128) // -1`` is ``-128``); an integer division by zero raises
``RuntimeError: ZeroDivisionError``, a float one gives infinities and NaN quietly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import is_array
from ._division_util import check_division, floor_divide_floating
from ._registry import backward
from ._util import (
    Tensor,
    attach,
    batched_shape,
    broadcast_error,
    data_of,
    edge_of,
    infer_size,
    like,
    needs_grad,
    wrap,
)
from .casting import place2
from .operands import array_module as _xp
from .operands import operand_shape as _shape
from .operands import promoted
from .quiet import quietly

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["DivBackward2", "checked_division", "operand_as", "rounded_div", "rounding_division", "shapes_first"]

_MODES = (None, "trunc", "floor")


# ------------------------------------------------------------------------------ rounding divisions
def _int_floor(xp: Any, a: Any, b: Any) -> Any:
    return xp.floor_divide(a, b)  # numpy's integer // is Python's (and wraps at MIN // -1)


def _int_trunc(xp: Any, a: Any, b: Any) -> Any:
    q = xp.floor_divide(a, b)
    # Python's floor, moved toward zero where the division was inexact and the signs differ
    return q + (((a - q * b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


def _float_trunc(xp: Any, a: Any, b: Any) -> Any:
    return xp.trunc(a / b)


def operand_as(xp: Any, x: Any, dtype: Any) -> Any:
    """An operand's array in ``dtype``; a number stays a number (numpy's weak scalar) unless it
    is an integer next to an integer dtype, which wraps into it as PyTorch's scalars do."""
    if is_array(x):
        return x if x.dtype == dtype else x.astype(dtype)
    if dtype.kind in "iu":
        return np.asarray(x).astype(dtype)
    return x


def shapes_first(error: Exception, *operands: Any) -> Exception:
    """PyTorch's order of checks, for an op to raise from its ``except``: operands that do not
    broadcast are ``infer_size``'s RuntimeError before any dtype refusal (``error``), as
    PyTorch's TensorIterator sizes its operands before it picks a kernel."""
    shape: tuple[int, ...] = ()
    try:
        for x in operands:
            shape = infer_size(shape, _shape(x))
    except RuntimeError as e:
        return e
    return error


def checked_division(kernel: str, input: Any, other: Any) -> Any:
    """``check_division``, after PyTorch's broadcast check (its error first)."""
    try:
        return check_division(kernel, input, other)
    except (NotImplementedError, RuntimeError, ValueError) as e:
        raise shapes_first(e, input, other) from None


def rounding_division(input: Any, other: Any, mode: str, fname: str) -> tuple[Tensor, Any, Any]:
    """``input / other`` rounded by ``mode`` ("trunc" or "floor"), as PyTorch's ``div``; the
    result and the promoted operands."""
    input, other = promoted(input, other, fname=fname)
    dtype = checked_division(f"div_{mode}", input, other)
    xp = _xp(input, other)
    a, b = operand_as(xp, data_of(input), dtype), operand_as(xp, data_of(other), dtype)
    if dtype.kind in "iu":
        compute = _int_floor if mode == "floor" else _int_trunc
    else:
        compute = floor_divide_floating if mode == "floor" else _float_trunc
    try:
        data = quietly(compute, xp, a, b)
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    out = wrap(xp.asarray(data, dtype=dtype) if data.dtype != dtype else data)
    input, other = place2(out, input, other)
    return out, input, other


@backward(batched=True)
def DivBackward2(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """``div`` with a rounding mode: zero gradients (PyTorch's ``new_zeros``), each of its
    operand's shape."""
    g = grads[0]
    xp = g._device.xp
    return tuple(  # type: ignore[return-value]
        like(xp.zeros(batched_shape(g, shape, batch), dtype=g.data.dtype), g) if edge is not None else None
        for edge, shape in zip(self.next_edges, self.shapes)
    )


def rounded_div(input: TensorLike, other: TensorLike, rounding_mode: str | None) -> Tensor:
    """``div(input, other, rounding_mode=...)`` for a rounding mode: ``"trunc"`` rounds toward
    zero, ``"floor"`` down; ``DivBackward2``, zero gradients. (``div`` calls it.)"""
    if rounding_mode not in _MODES:
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
        )
    out, input, other = rounding_division(input, other, rounding_mode, "div")
    if out.data.dtype.kind in "fc" and needs_grad(input, other):
        node: Any = attach(DivBackward2((edge_of(input), edge_of(other))), out)
        node.shapes = (_shape(input), _shape(other))
    return out
