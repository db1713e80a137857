"""Pointwise ops of three operands, as PyTorch's: ``lerp``, ``addcmul``, ``addcdiv`` and
``masked_fill``, broadcasting, with PyTorch's checks, nodes and derivatives (written with
differentiable ops, so double backward works)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import cpp_type_name
from .._devices._device import device_type
from ._registry import backward, op, variant
from ._util import Tensor, attach, data_of, edge_of, needs_grad, wrap
from .binary_math import operand_grads, record_operands, saved_operands
from .casting import place
from .elementwise import _xp, where
from .operands import promoted
from .quiet import quietly
from .shape import reduce_grad

__all__ = ["addcdiv", "addcmul", "lerp", "masked_fill"]


# ------------------------------------------------------------------------------ lerp
@backward(saved=("x0", "x1", "x2"), batched=True)
def LerpBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    """``input + weight * (end - input)``: ``1 - weight``, ``weight``, ``end - input``."""
    g = grads[0]
    start, end, weight = saved_operands(self)
    return operand_grads(self, batch, lambda: g * (1.0 - weight), lambda: g * weight, lambda: g * (end - start))


LerpBackward0 = variant("LerpBackward0", LerpBackward1, doc="``lerp`` with a number weight.")


@op(LerpBackward0, LerpBackward1)
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``, elementwise; ``weight`` a number or a tensor."""
    if isinstance(end, Tensor) and end.data.dtype != input.data.dtype:
        raise RuntimeError(f"expected dtype {cpp_type_name(input.data.dtype)} for `end` but got dtype {cpp_type_name(end.data.dtype)}")
    input, end, weight = promoted(input, end, weight, fname="lerp")
    xp = _xp(input, end, weight)
    a, b, w = data_of(input), data_of(end), data_of(weight)
    # PyTorch's formula (lerp_kernel): from the nearer end, so lerp(a, b, 1) is exactly b.
    out = wrap(quietly(lambda: xp.asarray(xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w)))))
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
    out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + (value * b) * c)))
    operands = place(out, input, tensor1, tensor2)
    node = record_operands(AddcmulBackward0, out, tuple(operands))
    if node is not None:
        node.value = value
    return out


@backward(saved=("x0", "x1", "x2"), batched=True)
def AddcdivBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = saved_operands(self)
    v = self.value
    return operand_grads(self, batch, lambda: g, lambda: g * v / t2, lambda: -g * v * t1 / (t2 * t2))


@op(AddcdivBackward0)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, elementwise."""
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcdiv")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + value * (b / c))))
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
def masked_fill(input: Tensor, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask`` (a boolean tensor, broadcast to ``input``) holds, ``input``
    elsewhere; ``value`` a number or a 0-dim tensor (then differentiable)."""
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
    out = wrap(xp.where(mask_data, xp.asarray(data_of(fill), dtype=input.data.dtype), input.data))
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
TENSOR_METHODS = {"lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "masked_fill": masked_fill}
