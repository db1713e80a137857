"""Rounding divisions and rounding to decimals, as PyTorch's: ``floor_divide`` (and ``//``),
``div(..., rounding_mode="trunc" | "floor")``, ``round(input, *, decimals=...)``, and the
operators ``%`` (``remainder``) and ``//`` with their reflected and in-place forms.

PyTorch's numbers: a float floor division is its ``div_floor_floating`` (through ``fmod``, so
``floor_divide(-0.0, 1)`` is ``-0.0`` and the quotient near an integer is the rounded one); an
integer one rounds as Python's ``//`` (``trunc`` toward zero) and wraps where PyTorch's does
(``int8(-128) // -1`` is ``-128``); an integer division by zero raises ``RuntimeError:
ZeroDivisionError``, a float one gives infinities and NaN quietly. Derivatives: ``div`` with a
rounding mode records ``DivBackward2``, whose gradients are zeros; ``floor_divide`` has none in
PyTorch (its node is ``NotImplemented``: the backward that reaches it raises), nor has
``remainder(number, tensor)`` (``number % tensor``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._division_util import (
    record_not_implemented,
    refuse_kinds,
)
from ._operator_util import binary_operator, inplace_operator
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, like, needs_grad
from .quiet import quietly
from .rounded_division import rounding_division

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["floor_divide", "round"]

@op()
def floor_divide(input: TensorLike, other: TensorLike) -> Tensor:
    """``input / other`` rounded down, as Python's ``//`` (and PyTorch's ``floor_divide``): an
    integer result for integers (division by zero raises), floats otherwise. No derivative, as in
    PyTorch: a float result that requires grad has the ``NotImplemented`` node."""
    out, input, other = rounding_division(input, other, "floor", "floor_divide")
    record_not_implemented("floor_divide", out, input, other)
    return out


# ------------------------------------------------------------------------------ round
def _zeros(g: Any) -> Any:
    return g * 0.0


@backward(batched=True)
def RoundBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``round``: a zero gradient."""
    return (_zeros(grads[0]),)


@backward(batched=True)
def RoundBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``round`` to ``decimals``: a zero gradient."""
    return (_zeros(grads[0]),)


def _round_decimals(xp: Any, x: Any, decimals: int) -> Any:
    """PyTorch's ``round_decimals``: ``nearbyint(x * 10**d) / 10**d`` (``d < 0``:
    ``nearbyint(x / 10**-d) * 10**-d``) in the float's op-math type (float32 for float16),
    ``10**d`` a double rounded to it (infinite beyond its range: NaN results, as there)."""
    opmath = np.dtype(np.float32) if x.dtype.itemsize < 4 else x.dtype
    ten = np.power(np.float64(10.0), abs(decimals)).astype(opmath)
    ten = xp.asarray(ten)
    y = x.astype(opmath) if x.dtype != opmath else x
    out = xp.rint(y / ten) * ten if decimals < 0 else xp.rint(y * ten) / ten
    return out.astype(x.dtype) if out.dtype != x.dtype else out


@op(RoundBackward0, RoundBackward1)
def round(input: Tensor, *, decimals: int | None = None) -> Tensor:
    """Round to the nearest integer, halves to even, as PyTorch's (an integer tensor is copied);
    with ``decimals``, to that many decimal places (negative: tens, hundreds...), floats only.
    The gradient is zero (``RoundBackward0``; ``RoundBackward1`` with ``decimals``)."""
    data = input.data
    xp = input._device.xp
    if decimals is None:
        refuse_kinds("round_vml", data.dtype, "b")
        out = like(data.copy() if data.dtype.kind in "iu" else xp.rint(data), input)
        cls: Any = RoundBackward0
    else:
        refuse_kinds("round" if decimals else "round_vml", data.dtype, "biu")
        out = like(xp.rint(data) if decimals == 0 else quietly(_round_decimals, xp, data, int(decimals)), input)
        cls = RoundBackward1
    if needs_grad(input):
        attach(cls((edge_of(input),)), out)
    return out


#: Tensor methods and operators (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {
    "floor_divide": floor_divide, "round": round,
    "__floordiv__": binary_operator(floor_divide), "__rfloordiv__": binary_operator(floor_divide, reflected=True),
    "__ifloordiv__": inplace_operator(floor_divide),
}
