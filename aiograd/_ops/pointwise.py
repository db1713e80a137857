"""Pointwise ops, as PyTorch's: ``clamp`` (``clip``), ``maximum`` and ``minimum``; and of three
operands ``lerp``, ``addcmul``, ``addcdiv`` and ``masked_fill``; broadcasting, with PyTorch's
checks, nodes and derivatives (written with differentiable ops, so double backward works)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import cpp_type_name, get_default_dtype, scalar_type_name
from .._core._saved import SavedTensor
from .._devices._device import device_type
from ._registry import backward, op, variant
from ._scalar_cast import scalar_to
from ._util import (
    Tensor,
    attach,
    broadcast_error,
    data_of,
    edge_of,
    grad_enabled,
    like,
    needs_grad,
    not_tensor,
    save,
    saved,
    wrap,
)
from .binary_math import operand_grads, record_operands, saved_operands
from .casting import place, place2, result_type
from .elementwise import _binary_edges, _keep, div, where
from .operands import array_module as _xp
from .operands import operand_shape as _shape
from .operands import promoted, refuse_bool_sub
from .quiet import quietly
from .rounded_division import shapes_first
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
    fname = "maximum" if larger else "minimum"
    if not isinstance(input, Tensor):  # PyTorch's maximum takes tensors only (clamp takes numbers)
        raise not_tensor(fname, input)
    if not isinstance(other, Tensor):
        raise not_tensor(fname, other, 2, "other")
    input, other = promoted(input, other, fname=fname)
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
def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, True)


@op(MinimumBackward0)
def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum; at ties the gradient is split evenly, as in PyTorch."""
    return _extremum(input, other, False)


# ------------------------------------------------------------------------------ lerp
@backward(saved=("x0", "x1", "x2"), batched=True)
def LerpBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    """``input + weight * (end - input)``: ``1 - weight``, ``weight``, ``end - input``."""
    g = grads[0]
    start, end, weight = saved_operands(self)
    if self.next_edges[0] is not None and getattr(self, "bool_weight", False):
        refuse_bool_sub(True, True)  # PyTorch's ``1 - weight`` ("two bool tensors")
    if self.next_edges[2] is not None and getattr(self, "bool_ends", False):
        refuse_bool_sub(True, True)  # PyTorch's ``end - self`` of two bool tensors
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
        # (a 0-d float weight promotes integer ends to its dtype, as PyTorch's TensorIterator)
        dtype = result_type(input, end, weight) if isinstance(weight, Tensor) else input.data.dtype
        if dtype.kind in "biu":
            kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
            error = NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dtype)}\'')
            raise shapes_first(error, input, end, weight)  # (operands that do not broadcast first)
    given, bool_ends = weight, input.data.dtype.kind == "b" and isinstance(end, Tensor) and end.data.dtype.kind == "b"
    input, end, weight = promoted(input, end, weight, fname="lerp")
    xp = _xp(input, end, weight)
    a, b, w = data_of(input), data_of(end), data_of(weight)
    # PyTorch's formula (lerp_kernel): from the nearer end, so lerp(a, b, 1) is exactly b.
    try:
        out = wrap(quietly(lambda: xp.asarray(xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w)))))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, end, weight) from None
    input, end, weight = place(out, input, end, weight)
    node = record_operands(LerpBackward1 if isinstance(weight, Tensor) else LerpBackward0, out, (input, end, weight))
    if node is not None and isinstance(given, Tensor) and given.data.dtype.kind == "b":
        node.bool_weight = True  # (a 0-d bool weight, promoted away: PyTorch's backward refuses it)
    if node is not None and bool_ends:
        node.bool_ends = True  # (bool ends, promoted away: PyTorch's backward subtracts them)
    return out


# ------------------------------------------------------------------------------ addcmul, addcdiv
@backward(saved=("x0", "x1", "x2"), batched=True)
def AddcmulBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = saved_operands(self)
    v = self.value
    # PyTorch's ``grad * (tensor2 * value)``, each product in its operand's own dtype
    t1, t2 = _as_given(self, 0, t1), _as_given(self, 1, t2)
    return operand_grads(self, batch, lambda: g, lambda: g * (t2 * v), lambda: g * (t1 * v))


@op(AddcmulBackward0)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``, elementwise."""
    given = (tensor1, tensor2)
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcmul")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    if getattr(a, "dtype", None) is not None and a.dtype.kind in "biu":  # (promoted: the result's)
        value = _integral_value("addcmul_cpu_out", a.dtype, value)
    # (value * tensor1) * tensor2, PyTorch's order: it decides which of 0 * inf and inf comes out
    try:
        out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + (value * b) * c)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, tensor1, tensor2) from None
    operands = place(out, input, tensor1, tensor2)
    node = record_operands(AddcmulBackward0, out, tuple(operands))
    if node is not None:
        node.value = value
        _keep_given(node, given, (tensor1, tensor2))
    return out


_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a "
    "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
    "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
    "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
    "implementation: (input + value * tensor1 / tensor2), for all dtypes."
)


def _integral_value(kernel: str, dtype: Any, value: Any) -> Any:
    """``value`` for an integral result, as PyTorch casts it to the result's dtype (truncated:
    ``value=0.5`` is 0); a bool result is PyTorch's NotImplementedError."""
    if dtype.kind == "b":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    info = np.iinfo(dtype)
    low = -info.max if dtype.kind == "u" else info.min  # (an unsigned type wraps small negatives)
    if not low <= value <= info.max:  # (NaN and infinities too)
        name = "int" if dtype.name == "int32" else f"{dtype.name}_t"  # (C++'s type names)
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return int(value) % (info.max + 1) if dtype.kind == "u" else int(value)


def _integral(x: Any) -> bool:
    """Whether ``x`` is a tensor of an integral dtype, bool included (PyTorch's
    ``isIntegralType(t, /*includeBool=*/true)``)."""
    return isinstance(x, Tensor) and x.data.dtype.kind in "biu"


@backward(saved=("x0", "x1", "x2"), batched=True)
def AddcdivBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = saved_operands(self)
    v = self.value

    # PyTorch's formulas, on the operands in their own dtypes (``value / tensor2`` in tensor2's:
    # 1 / 1e-40 overflows in float32 before it meets a float64 gradient)
    divisor = self.given[1]
    t1, t2 = _as_given(self, 0, t1), _as_given(self, 1, t2)

    def grad_tensor1() -> Any:
        if isinstance(divisor, np.dtype):  # (``value / tensor2`` written into tensor2's dtype)
            raise RuntimeError(
                f"result type {scalar_type_name(get_default_dtype())} can't be cast to the desired output "
                f"type {scalar_type_name(divisor)}"
            )
        return g * div(v, t2)

    return operand_grads(self, batch, lambda: g, grad_tensor1, lambda: -g * (v * t1 / (t2 * t2)))


def _keep_given(node: Any, given: tuple[Any, ...], operands: tuple[Any, ...]) -> None:
    """Keep on ``node`` the tensors the promotion replaced (PyTorch's formulas use them in
    their own dtypes): a floating one saved, an integral one's dtype; None for the others."""
    node.given = tuple(
        None if x is p or not isinstance(x, Tensor) else save(x) if x.data.dtype.kind in "fc" else x.data.dtype
        for x, p in zip(given, operands)
    )


def _as_given(node: Any, i: int, x: Any) -> Any:
    """The ``i``-th kept operand as it was given (``_keep_given``), else ``x``, promoted."""
    kept = node.given[i]
    return kept.unpack(node) if isinstance(kept, SavedTensor) else x


@op(AddcdivBackward0)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, elementwise."""
    if _integral(tensor2) and _integral(tensor1):
        raise RuntimeError(_ADDCDIV_INTEGER)
    given = (tensor1, tensor2)
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcdiv")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    try:
        out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + value * b / c)))
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise broadcast_error(e, input, tensor1, tensor2) from None
    operands = place(out, input, tensor1, tensor2)
    node = record_operands(AddcdivBackward0, out, tuple(operands))
    if node is not None:
        node.value = value
        _keep_given(node, given, (tensor1, tensor2))
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
    if isinstance(value, Tensor):
        if value._requires_grad and input.data.dtype.kind not in "fc" and grad_enabled():
            # (PyTorch's autograd: its result, of input's dtype, cannot require grad)
            raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(input.data.dtype)}")
        fill = value.to(input.data.dtype)
    else:
        fill = scalar_to(value, input.data.dtype)  # PyTorch's overflow check
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
