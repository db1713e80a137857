"""Binary elementwise math, as PyTorch's: ``atan2``, ``hypot``, ``logaddexp``, ``fmod``,
``remainder`` and ``xlogy``, broadcasting, with PyTorch's type promotion, nodes and derivatives.

Each derivative is written with differentiable ops, so double backward works. An operand may be
a number where PyTorch allows one (``fmod``, ``remainder``, ``xlogy``), which selects PyTorch's
scalar node (``FmodBackward0`` for a number divisor, ``FmodBackward1`` for a tensor one, and so
on); ``atan2``, ``hypot`` and ``logaddexp`` take tensors only, as PyTorch's do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import is_array, scalar_type_name
from ._division_util import (
    floor_divide_floating,
    not_implemented,
    refuse_kinds,
    wrapped_integers,
)
from ._operator_util import binary_operator, inplace_operator
from ._registry import backward, op, variant
from ._util import (
    Tensor,
    attach,
    broadcast_error,
    data_of,
    edge_of,
    needs_grad,
    not_tensor,
    save,
    saved,
    wrap,
)
from .casting import place2, result_type
from .elementwise import _keep, div, where
from .operands import NEG_BOOL_ERROR, floating, promoted, refuse_bool_sub
from .operands import array_module as _xp
from .operands import operand_shape as _shape
from .quiet import quietly
from .rounded_division import checked_division, shapes_first
from .shape import reduce_grad
from .unary_math import exp, reciprocal, trunc

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["atan2", "fmod", "hypot", "logaddexp", "remainder", "xlogy"]


def _tensor_only(fname: str, other: Any) -> None:
    if not isinstance(other, Tensor):
        raise TypeError(f"{fname}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")


#: The ops whose result is floating for integer operands too (in the default dtype, as torch).
_FLOATING = frozenset({"atan2", "xlogy"})


def _binary(fname: str, input: Any, other: Any, compute: Any, nodes: tuple[type[Any], ...],
            keep_result: bool = False) -> Tensor:
    """``compute(xp, a, b)`` on the promoted operands, recorded as ``nodes[0]`` (two tensors),
    ``nodes[1]`` (a number ``other``) or ``nodes[2]`` (a number ``input``)."""
    input, other = promoted(input, other, fname=fname)
    if fname in _FLOATING:
        input, other = floating(input, other)
    xp = _xp(input, other)
    try:
        out = wrap(quietly(compute, xp, data_of(input), data_of(other)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    input, other = place2(out, input, other)
    which = 0 if isinstance(input, Tensor) and isinstance(other, Tensor) else 1 if isinstance(input, Tensor) else 2
    node = record_operands(nodes[which], out, (input, other))
    if node is not None and keep_result:
        node.result = save(out, is_output=True)  # (after attach: a saved output requires grad)
    return out


def record_operands(cls: type[Any], out: Tensor, operands: tuple[Any, ...]) -> Any:
    """Attach ``cls`` to ``out`` when an operand needs a gradient, each operand saved (as
    ``x0``, ``x1``, ...; numbers kept as they are) with its shape; the node, or None. Shared
    with the three-operand ops of ``pointwise``."""
    if not needs_grad(*operands):
        return None
    node: Any = attach(cls(tuple(edge_of(x) for x in operands)), out)
    for i, x in enumerate(operands):
        setattr(node, f"x{i}", _keep(x))
    node.shapes = tuple(_shape(x) for x in operands)
    return node


def saved_operands(node: Any) -> list[Any]:
    """The operands ``record_operands`` saved, unpacked."""
    return [saved(node, getattr(node, f"x{i}")) for i in range(len(node.shapes))]


def operand_grads(node: Any, batch: int, *makers: Any) -> tuple[Any, ...]:
    """Each operand's gradient (``makers[i]()``, called only where a gradient flows) summed
    back to its shape (behind ``batch`` batch dims); None where none flows."""
    return tuple(
        reduce_grad(make(), shape, batch) if edge is not None else None
        for edge, make, shape in zip(node.next_edges, makers, node.shapes)
    )


# ------------------------------------------------------------------------------ atan2, hypot
def _is_bool(x: Any) -> bool:
    """Whether ``x`` is a bool tensor (PyTorch's derivative formulas refuse ``-`` on one)."""
    return isinstance(x, Tensor) and x.data.dtype.kind == "b"


def _mark_bool(out: Tensor, bool_input: bool) -> None:
    """Tell ``out``'s node that a bool tensor was among the operands (promoted away since):
    its backward raises PyTorch's error for ``-`` on a bool tensor, as PyTorch's formula does."""
    if bool_input and out.grad_fn is not None:
        out.grad_fn.bool_input = True  # type: ignore[attr-defined]



@backward(saved=("x0", "x1"), batched=True)
def Atan2Backward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    a, b = saved_operands(self)
    if self.next_edges[1] is not None and getattr(self, "bool_input", False):
        raise RuntimeError(NEG_BOOL_ERROR)  # PyTorch's ``grad * -self`` on a bool ``input``
    # PyTorch's atan2_backward: 1 / (a^2 + b^2), with 0 where that overflows (at the origin,
    # and where the squares underflow), so the gradient there is 0, not NaN.
    recip = reciprocal(a * a + b * b)
    recip = where(recip.data == float("inf"), 0.0, recip)
    return operand_grads(self, batch, lambda: g * b * recip, lambda: g * -a * recip)


@op(Atan2Backward0, aliases=("arctan2",))
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point ``(other, input)``: ``arctan(input / other)`` in the right
    quadrant, elementwise."""
    _tensor_only("atan2", other)
    out = _binary("atan2", input, other, lambda xp, a, b: xp.arctan2(a, b), (Atan2Backward0,) * 3)
    if out.grad_fn is not None:
        _mark_bool(out, _is_bool(input))
    return out


arctan2 = atan2  # PyTorch's alias


@backward(saved=("x0", "x1", "result"), batched=True)
def HypotBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    g = grads[0]
    a, b = saved_operands(self)
    result = self.result.unpack(self)
    return operand_grads(self, batch, lambda: g * a / result, lambda: g * b / result)  # (PyTorch's order)


@op(HypotBackward0)
def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input ** 2 + other ** 2)``, elementwise, without overflow."""
    _tensor_only("hypot", other)
    try:
        refuse_kinds("hypot", result_type(input, other), "biu")  # PyTorch's hypot is for floats only
    except NotImplementedError as e:
        raise shapes_first(e, input, other) from None
    return _binary("hypot", input, other, lambda xp, a, b: xp.hypot(a, b), (HypotBackward0,) * 3, keep_result=True)


# ------------------------------------------------------------------------------ logaddexp
@backward(saved=("x0", "x1"), batched=True)
def LogaddexpBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """PyTorch's: ``grad / (1 + exp(other - input))`` and ``grad / (1 + exp(input - other))``
    (NaN where both are the same infinity, as there)."""
    g = grads[0]
    a, b = saved_operands(self)
    if getattr(self, "bool_input", False):
        refuse_bool_sub(True, 1)  # PyTorch's ``other - self`` with a bool operand
    return operand_grads(self, batch, lambda: g / (1 + exp(b - a)), lambda: g / (1 + exp(a - b)))


@op(LogaddexpBackward0)
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))``, elementwise, without overflow; floating point only."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("logaddexp", input)
    _tensor_only("logaddexp", other)
    bool_input = input.data.dtype.kind == "b" or other.data.dtype.kind == "b"
    input, other = promoted(input, other, fname="logaddexp")
    if input.data.dtype.kind not in "fc":
        error = NotImplementedError(f'"logaddexp_cpu" not implemented for \'{scalar_type_name(input.data.dtype)}\'')
        raise shapes_first(error, input, other)  # (operands that do not broadcast first)
    out = _binary("logaddexp", input, other, lambda xp, a, b: xp.logaddexp(a, b), (LogaddexpBackward0,) * 3)
    _mark_bool(out, bool_input)
    return out


# ------------------------------------------------------------------------------ fmod, remainder
@backward(saved=("x0", "x1"), batched=True)
def FmodBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """``d/da = 1``, ``d/db = -trunc(a / b)`` (PyTorch's)."""
    g = grads[0]
    a, b = saved_operands(self)
    return operand_grads(self, batch, lambda: g, lambda: g * -trunc(div(a, b)))


FmodBackward0 = variant("FmodBackward0", FmodBackward1, doc="``fmod`` by a number.")


@op(FmodBackward0, FmodBackward1)
def fmod(input: TensorLike, other: TensorLike) -> Tensor:
    """The C remainder of ``input / other``: the sign of ``input``, as PyTorch's (and C's)."""
    if not isinstance(input, Tensor):  # PyTorch has no fmod(number, tensor)
        raise TypeError(_FMOD_SIGNATURES.format(type(input).__name__, type(other).__name__))
    input, other = promoted(input, other, fname="fmod")
    input, other = wrapped_integers(checked_division("fmod", input, other), input, other)
    return _binary("fmod", input, other, lambda xp, a, b: xp.fmod(a, b), (FmodBackward1, FmodBackward0, FmodBackward1))


_FMOD_SIGNATURES = (
    "fmod() received an invalid combination of arguments - got ({}, {}), but expected one of:\n"
    " * (Tensor input, Tensor other, *, Tensor out = None)\n"
    " * (Tensor input, Number other, *, Tensor out = None)\n"
)


@backward(saved=("x0", "x1"), batched=True)
def RemainderBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """``d/da = 1``, ``d/db = -floor(a / b)`` (PyTorch's)."""
    g = grads[0]
    a, b = saved_operands(self)
    # floor(a / b) as PyTorch's floor division computes it (through fmod: NaN for an infinite
    # a), a constant: its own derivative is zero.
    quotient = quietly(floor_divide_floating, g._device.xp, data_of(a), data_of(b))
    return operand_grads(self, batch, lambda: g, lambda: g * -quotient)


RemainderBackward0 = variant("RemainderBackward0", RemainderBackward1, doc="``remainder`` by a number.")


def _remainder(xp: Any, a: Any, b: Any) -> Any:
    """PyTorch's remainder: ``fmod``, moved by ``b`` where its sign differs from ``b``'s; a zero
    keeps ``fmod``'s sign (numpy's ``remainder`` gives -0.0 for ``0 % -1``, PyTorch 0.0)."""
    mod = xp.fmod(a, b)
    return xp.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


@op(RemainderBackward0, RemainderBackward1)
def remainder(input: TensorLike, other: TensorLike) -> Tensor:
    """Python's modulus of ``input / other``: the sign of ``other``, as PyTorch's (a number
    ``input`` has no derivative there: its node is ``NotImplemented``)."""
    input, other = promoted(input, other, fname="remainder")
    input, other = wrapped_integers(checked_division("remainder", input, other), input, other)
    return _binary("remainder", input, other, _remainder,
                   (RemainderBackward1, RemainderBackward0, not_implemented("remainder")))


# ------------------------------------------------------------------------------ xlogy
def _xlogy(xp: Any, a: Any, b: Any) -> Any:
    # 0 where input is 0, unless other is NaN (then NaN), as PyTorch's.
    # A number ``other`` stays a Python float (a weak scalar: float32 input, float32 result).
    log_b = float(np.log(b)) if isinstance(b, (int, float)) else xp.log(b)
    return xp.where((a == 0) & ~xp.isnan(b), xp.zeros((), dtype=xp.result_type(a, b)), a * log_b)


@backward(saved=("x0", "x1"), batched=True)
def XlogyBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """``d/da = log(b)`` (0 where ``a == 0`` and ``b <= 0``), ``d/db = a / b`` (PyTorch's)."""
    g = grads[0]
    a, b = saved_operands(self)

    def grad_a() -> Any:
        xp = g._device.xp
        if isinstance(b, Tensor) or is_array(b):
            zero = xp.logical_and(xp.asarray(data_of(a)) == 0, xp.asarray(data_of(b)) <= 0)
        else:  # PyTorch's ``xlogy.Scalar_Other``: masked where input is 0 unless other > 0 (NaN too)
            zero = xp.asarray(data_of(a)) == 0 if not b > 0 else xp.zeros((), dtype=bool)
        # PyTorch's ``xlogy(grad, other)``: a zero gradient gives 0 even where log(other) is NaN
        return where(zero, g * 0.0, xlogy(g, b if isinstance(b, Tensor) else _like(b, g)))

    return operand_grads(self, batch, grad_a, lambda: g * a / b)


def _like(value: Any, like: Tensor) -> Tensor:
    """A number as a 0-d tensor on ``like``'s device, in its dtype (``log`` takes tensors)."""
    out = wrap(like._device.xp.asarray(value, dtype=like.data.dtype))
    out._device = like._device
    return out


XlogyBackward1 = variant("XlogyBackward1", XlogyBackward0, doc="``xlogy`` of a number ``input``.")
XlogyBackward2 = variant("XlogyBackward2", XlogyBackward0, doc="``xlogy`` with a number ``other``.")


@op(XlogyBackward0, XlogyBackward1, XlogyBackward2)
def xlogy(input: TensorLike, other: TensorLike) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN), as PyTorch's."""
    return _binary("xlogy", input, other, _xlogy, (XlogyBackward0, XlogyBackward2, XlogyBackward1))


#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {
    "atan2": atan2, "hypot": hypot, "fmod": fmod, "remainder": remainder, "xlogy": xlogy,
    "arctan2": atan2, "logaddexp": logaddexp,
    "__mod__": binary_operator(remainder), "__rmod__": binary_operator(remainder, reflected=True),
    "__imod__": inplace_operator(remainder),
}
