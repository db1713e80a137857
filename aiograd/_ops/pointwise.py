"""Pointwise ops, as PyTorch's: ``clamp`` (``clip``), ``maximum`` and ``minimum``; and of three
operands ``lerp``, ``addcmul``, ``addcdiv`` and ``masked_fill``; broadcasting, with PyTorch's
checks, nodes and derivatives (written with differentiable ops, so double backward works)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import cpp_type_name, get_default_dtype, scalar_type_name
from .._devices._device import device_type
from ._registry import backward, op, variant
from ._util import (
    Tensor,
    attach,
    broadcast_error,
    data_of,
    edge_of,
    like,
    needs_grad,
    not_tensor,
    save,
    saved,
    wrap,
)
from .binary_math import operand_grads, record_operands, saved_operands
from .casting import place, place2
from .elementwise import _binary_edges, _keep, where
from .operands import array_module as _xp
from .operands import operand_shape as _shape
from .operands import promoted
from .quiet import quietly
from .shape import reduce_grad

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["addcdiv", "addcmul", "clamp", "clip", "lerp", "masked_fill", "maximum", "minimum"]


# ------------------------------------------------------------------------------ clamp, maximum, minimum
@backward(saved=("x",), batched=True)
def ClampBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    g = grads[0]
    x = self.x.unpack(self).data
    inside = g._device.xp.ones(x.shape, dtype=bool)
    if self.min is not None:
        inside &= x >= self.min
    if self.max is not None:
        inside &= x <= self.max
    return (g * inside,)


@backward(saved=("x", "lo", "hi"), batched=True)
def ClampBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``clamp`` with tensor bounds: the gradient goes to whichever of input, min and max the
    output took its value from (PyTorch's ``clamp_backward_min_max``; none of them at a NaN)."""
    g = grads[0]
    x, lo, hi = (None if v is None else data_of(saved(self, v)) for v in (self.x, self.lo, self.hi))
    if lo is not None and hi is not None:
        masks = ((x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo))
    elif lo is not None:
        masks = (x >= lo, x < lo, None)
    else:
        masks = (x <= hi, None, x > hi)
    zero = g._device.xp.zeros((), dtype=g.data.dtype)  # a constant in the device's memory
    return tuple(
        None if e is None else reduce_grad(where(m, g, zero), shape, batch)
        for e, m, shape in zip(self.next_edges, masks, self.shapes)
    )


def _clamp_tensors(input: Tensor, min: Any, max: Any) -> Tensor:
    """``clamp`` with a tensor bound: max with ``min`` first, then min with ``max`` (so ``max``
    wins where ``min > max``), in the operands' promoted dtype."""
    operands = promoted(*(v for v in (input, min, max) if v is not None), fname="clamp")
    it = iter(operands)
    input, min, max = next(it), None if min is None else next(it), None if max is None else next(it)
    xp, data = input._device.xp, input.data
    try:
        if min is not None:  # (a +-0 tie returns the bound, as PyTorch's vectorized loop)
            data = xp.maximum(data, data_of(min))
        if max is not None:
            data = xp.minimum(data, data_of(max))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, min, max) from None
    out = wrap(data)
    input, min, max = place(out, input, min, max)
    if needs_grad(input, min, max):
        node: Any = attach(ClampBackward0((edge_of(input), edge_of(min), edge_of(max))), out)
        node.x, node.lo, node.hi = save(input), _keep(min), _keep(max)
        node.shapes = (_shape(input), _shape(min), _shape(max))
    return out


@op(ClampBackward1, ClampBackward0)
def clamp(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("clamp", input)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensors(input, min, max)
    xp, data = input._device.xp, input.data
    if data.dtype.kind in "biu" and (isinstance(min, float) or isinstance(max, float)):
        data = data.astype(get_default_dtype())  # as torch's result type (numpy's: float64)
    # As PyTorch: max with min, then min with max (max wins if min > max); the bound first, so
    # that a tie returns x (clamp(-0.0, min=0.0) is -0.0); a NaN bound gives NaN.
    if min is not None:
        data = xp.maximum(min, data)
    if max is not None:
        data = xp.minimum(max, data)
    out = like(data, input)
    if needs_grad(input):
        node: Any = attach(ClampBackward1((edge_of(input),)), out)
        node.x, node.min, node.max = save(input), min, max
    return out


@op(ClampBackward1)
def clip(input: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """Limit values to ``[min, max]``; the same as :func:`clamp`."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("clip", input)
    return clamp(input, min, max)


@backward(saved=("a", "b"), batched=True)
def MaximumBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any]:
    """Shared by maximum and minimum: ``self.pick_a_larger`` says where the gradient goes to ``a``."""
    g = grads[0]
    a, b = data_of(saved(self, self.a)), data_of(saved(self, self.b))
    xp, tie = g._device.xp, a == b
    # PyTorch's rule: halved at a tie, zero where the other operand wins, and so whole to both
    # where either is NaN.
    a_loses, b_loses = (a < b, a > b) if self.pick_a_larger else (a > b, a < b)
    ea, eb = self.next_edges
    ga = gb = None
    if ea is not None:
        ga = reduce_grad(g * xp.where(tie, 0.5, ~a_loses).astype(g.data.dtype), self.a_shape, batch)
    if eb is not None:
        gb = reduce_grad(g * xp.where(tie, 0.5, ~b_loses).astype(g.data.dtype), self.b_shape, batch)
    return (ga, gb)


MinimumBackward0 = variant("MinimumBackward0", MaximumBackward0)


def _extremum(input: Any, other: Any, larger: bool) -> Tensor:
    # Numbers stay numbers, as in mul: a 0-d float64 array would make a float32 result float64.
    input, other = promoted(input, other, fname="maximum" if larger else "minimum")
    xp = _xp(input, other)
    # (At a tie of +0 and -0 numpy returns ``other``, as PyTorch's vectorized loop does; its
    # scalar loop, for the last few elements, returns ``input``.)
    try:
        out = wrap((xp.maximum if larger else xp.minimum)(data_of(input), data_of(other)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, other) from None
    input, other = place2(out, input, other)
    if needs_grad(input, other):
        cls = MaximumBackward0 if larger else MinimumBackward0
        node: Any = attach(cls(_binary_edges(input, other)), out)
        node.a, node.b, node.pick_a_larger = _keep(input), _keep(other), larger
        node.a_shape, node.b_shape = _shape(input), _shape(other)
    return out


@op(MaximumBackward0)
def maximum(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise maximum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, True)


@op(MinimumBackward0)
def minimum(input: TensorLike, other: TensorLike) -> Tensor:
    """Elementwise minimum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, False)


# ------------------------------------------------------------------------------ lerp
@backward(saved=("x0", "x1", "x2"), batched=True)
def LerpBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    """``input + weight * (end - input)``: ``1 - weight``, ``weight``, ``end - input``."""
    g = grads[0]
    start, end, weight = saved_operands(self)
    return operand_grads(self, batch, lambda: g * (1.0 - weight), lambda: g * weight, lambda: g * (end - start))


LerpBackward0 = variant("LerpBackward0", LerpBackward1, doc="``lerp`` with a number weight.")


@op(LerpBackward0, LerpBackward1)
def lerp(input: Tensor, end: Tensor, weight: TensorLike) -> Tensor:
    """``input + weight * (end - input)``, elementwise; ``weight`` a number or a tensor."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("lerp", input)
    if isinstance(end, Tensor) and end.data.dtype != input.data.dtype:
        raise RuntimeError(f"expected dtype {cpp_type_name(input.data.dtype)} for `end` but got dtype {cpp_type_name(end.data.dtype)}")
    if isinstance(weight, Tensor) and weight.data.ndim and weight.data.dtype != input.data.dtype:  # (a 0-d one is a number)
        raise RuntimeError(f"expected dtype {cpp_type_name(input.data.dtype)} for `weight` but got dtype {cpp_type_name(weight.data.dtype)}")
    if input.data.dtype.kind in "biu":  # PyTorch's lerp kernels are for floats only
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(input.data.dtype)}\'')
    input, end, weight = promoted(input, end, weight, fname="lerp")
    xp = _xp(input, end, weight)
    a, b, w = data_of(input), data_of(end), data_of(weight)
    # PyTorch's formula (lerp_kernel): from the nearer end, so lerp(a, b, 1) is exactly b.
    try:
        out = wrap(quietly(lambda: xp.asarray(xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w)))))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, end, weight) from None
    input, end, weight = place(out, input, end, weight)
    record_operands(LerpBackward1 if isinstance(weight, Tensor) else LerpBackward0, out, (input, end, weight))
    return out


# ------------------------------------------------------------------------------ addcmul, addcdiv
@backward(saved=("x0", "x1", "x2"), batched=True)
def AddcmulBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = saved_operands(self)
    v = self.value
    return operand_grads(self, batch, lambda: g, lambda: g * t2 * v, lambda: g * t1 * v)


@op(AddcmulBackward0)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``, elementwise."""
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcmul")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    # (value * tensor1) * tensor2, PyTorch's order: it decides which of 0 * inf and inf comes out
    try:
        out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + (value * b) * c)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, tensor1, tensor2) from None
    operands = place(out, input, tensor1, tensor2)
    node = record_operands(AddcmulBackward0, out, tuple(operands))
    if node is not None:
        node.value = value
    return out


_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
    "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
    "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
    "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
    "implementation: (input + value * tensor1 / tensor2), for all dtypes."
)


def _integral(x: Any) -> bool:
    """Whether ``x`` is a tensor of an integral dtype, bool included (PyTorch's
    ``isIntegralType(t, /*includeBool=*/true)``)."""
    return isinstance(x, Tensor) and x.data.dtype.kind in "biu"


@backward(saved=("x0", "x1", "x2"), batched=True)
def AddcdivBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = saved_operands(self)
    v = self.value
    return operand_grads(self, batch, lambda: g, lambda: g * v / t2, lambda: -g * v * t1 / (t2 * t2))


@op(AddcdivBackward0)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, elementwise."""
    if _integral(tensor1) and _integral(tensor2):
        raise RuntimeError(_ADDCDIV_INTEGER)
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcdiv")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    try:
        out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + value * (b / c))))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, tensor1, tensor2) from None
    operands = place(out, input, tensor1, tensor2)
    node = record_operands(AddcdivBackward0, out, tuple(operands))
    if node is not None:
        node.value = value
    return out


# ------------------------------------------------------------------------------ masked_fill
@backward(batched=True)
def MaskedFillBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    """The input's gradient where the mask is False; a tensor value's, summed where it is True."""
    g = grads[0]
    edge_input, edge_value = self.next_edges
    grad_input = reduce_grad(where(self.mask, 0.0, g), self.input_shape, batch) if edge_input is not None else None
    grad_value = where(self.mask, g, 0.0).sum() if edge_value is not None else None
    return (grad_input, grad_value)


#: Runs per sample under a batched backward (``batched=False``): its value's gradient is a sum over
#: the whole sample, which the rule would take over the batch dims too.
MaskedFillBackward1 = variant(
    "MaskedFillBackward1", MaskedFillBackward0, doc="``masked_fill`` with a tensor value.", batched=False
)


@op(MaskedFillBackward0, MaskedFillBackward1)
def masked_fill(input: Tensor, mask: Tensor, value: TensorLike) -> Tensor:
    """``value`` where ``mask`` (a boolean tensor, broadcast to ``input``) holds, ``input``
    elsewhere; ``value`` a number or a 0-dim tensor (then differentiable)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("masked_fill", input)
    mask_data = data_of(mask)
    if mask_data.dtype.kind != "b":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {cpp_type_name(mask_data.dtype)}")
    if isinstance(value, Tensor) and value.data.ndim:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.data.ndim} dimension(s)."
        )
    xp = input._device.xp
    if xp is not np and type(mask_data) is np.ndarray:  # a host mask next to a CUDA tensor
        mask_data = device_type(input._device.type).to_device(mask_data, input._device.index)
    fill = value.to(input.data.dtype) if isinstance(value, Tensor) else value
    try:
        out = wrap(xp.where(mask_data, xp.asarray(data_of(fill), dtype=input.data.dtype), input.data))
    except ValueError as e:  # numpy's broadcast error: PyTorch's (the mask first, as there)
        raise broadcast_error(e, mask_data, input) from None
    place(out, input, mask)
    if isinstance(value, Tensor):
        edges: tuple[Any, ...] = (edge_of(input), edge_of(fill))
        cls: type[Any] = MaskedFillBackward1
    else:
        edges, cls = (edge_of(input), None), MaskedFillBackward0
    if needs_grad(input, fill if isinstance(value, Tensor) else input):
        node: Any = attach(cls(edges), out)
        node.mask, node.input_shape = mask_data, input.data.shape
    return out


#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {
    "clamp": clamp, "clip": clip, "maximum": maximum, "minimum": minimum,
    "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "masked_fill": masked_fill,
}
