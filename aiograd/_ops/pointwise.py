"""Pointwise ops of three operands, as PyTorch's: ``lerp``, ``addcmul``, ``addcdiv`` and
``masked_fill``, broadcasting, with PyTorch's checks, nodes and derivatives (written with
differentiable ops, so double backward works)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._device import device_type
from ._registry import backward, op, variant
from ._util import Tensor, attach, data_of, edge_of, needs_grad, saved, wrap
from .casting import place
from .elementwise import _keep, _shape, _xp, where
from .operands import promoted
from .quiet import quietly
from .shape import reduce_grad

__all__ = ["addcdiv", "addcmul", "lerp", "masked_fill"]


def _record(cls: type[Any], out: Tensor, operands: tuple[Any, ...], **fields: Any) -> None:
    """Attach ``cls`` for ``operands`` (each saved, and its shape kept) when one needs a grad."""
    if needs_grad(*operands):
        node: Any = attach(cls(tuple(edge_of(x) for x in operands)), out)
        node.x0, node.x1, node.x2 = (_keep(x) for x in operands)
        node.shapes = tuple(_shape(x) for x in operands)
        for name, value in fields.items():
            setattr(node, name, value)


def _unpacked(node: Any) -> list[Any]:
    return [saved(node, node.x0), saved(node, node.x1), saved(node, node.x2)]


def _grads(node: Any, *makers: Any) -> tuple[Any, ...]:
    """Each operand's gradient (``makers[i]()``) summed back to its shape; None where no
    gradient flows."""
    return tuple(
        reduce_grad(make(), shape) if edge is not None else None
        for edge, make, shape in zip(node.next_edges, makers, node.shapes)
    )


# ------------------------------------------------------------------------------ lerp
@backward(saved=("x0", "x1", "x2"))
def LerpBackward1(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    """``input + weight * (end - input)``: ``1 - weight``, ``weight``, ``end - input``."""
    g = grads[0]
    start, end, weight = _unpacked(self)
    return _grads(self, lambda: g * (1.0 - weight), lambda: g * weight, lambda: g * (end - start))


LerpBackward0 = variant("LerpBackward0", LerpBackward1, doc="``lerp`` with a number weight.")


@op(LerpBackward0, LerpBackward1)
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``, elementwise; ``weight`` a number or a tensor."""
    if isinstance(end, Tensor) and end.data.dtype != input.data.dtype:
        raise RuntimeError(f"expected dtype {_torch_name(input)} for `end` but got dtype {_torch_name(end)}")
    input, end, weight = promoted(input, end, weight, fname="lerp")
    xp = _xp(input, end, weight)
    a, b, w = data_of(input), data_of(end), data_of(weight)
    # PyTorch's formula (lerp_kernel): from the nearer end, so lerp(a, b, 1) is exactly b.
    out = wrap(quietly(lambda: xp.asarray(xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w)))))
    input, end, weight = place(out, input, end, weight)
    _record(LerpBackward1 if isinstance(weight, Tensor) else LerpBackward0, out, (input, end, weight))
    return out


def _torch_name(t: Tensor) -> str:
    """A dtype as PyTorch's messages name it (``double``, ``float``, ``long int``...)."""
    return {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "bool": "bool"}.get(str(t.data.dtype), str(t.data.dtype))


# ------------------------------------------------------------------------------ addcmul, addcdiv
@backward(saved=("x0", "x1", "x2"))
def AddcmulBackward0(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = _unpacked(self)
    v = self.value
    return _grads(self, lambda: g, lambda: g * t2 * v, lambda: g * t1 * v)


@op(AddcmulBackward0)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``, elementwise."""
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcmul")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    # (value * tensor1) * tensor2, PyTorch's order: it decides which of 0 * inf and inf comes out
    out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + (value * b) * c)))
    operands = place(out, input, tensor1, tensor2)
    _record(AddcmulBackward0, out, tuple(operands), value=value)
    return out


@backward(saved=("x0", "x1", "x2"))
def AddcdivBackward0(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    g = grads[0]
    _, t1, t2 = _unpacked(self)
    v = self.value
    return _grads(self, lambda: g, lambda: g * v / t2, lambda: -g * v * t1 / (t2 * t2))


@op(AddcdivBackward0)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, elementwise."""
    input, tensor1, tensor2 = promoted(input, tensor1, tensor2, fname="addcdiv")
    a, b, c = data_of(input), data_of(tensor1), data_of(tensor2)
    out = wrap(quietly(lambda: _xp(input, tensor1, tensor2).asarray(a + value * (b / c))))
    operands = place(out, input, tensor1, tensor2)
    _record(AddcdivBackward0, out, tuple(operands), value=value)
    return out


# ------------------------------------------------------------------------------ masked_fill
@backward()
def MaskedFillBackward0(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    """The input's gradient where the mask is False; a tensor value's, summed where it is True."""
    g = grads[0]
    edge_input, edge_value = self.next_edges
    grad_input = where(self.mask, 0.0, g) if edge_input is not None else None
    if grad_input is not None and grad_input.data.shape != self.input_shape:
        grad_input = reduce_grad(grad_input, self.input_shape)
    grad_value = where(self.mask, g, 0.0).sum() if edge_value is not None else None
    return (grad_input, grad_value)


MaskedFillBackward1 = variant("MaskedFillBackward1", MaskedFillBackward0, doc="``masked_fill`` with a tensor value.")


@op(MaskedFillBackward0, MaskedFillBackward1)
def masked_fill(input: Tensor, mask: Any, value: Any) -> Tensor:
    """``value`` where ``mask`` (a boolean tensor, broadcast to ``input``) holds, ``input``
    elsewhere; ``value`` a number or a 0-dim tensor (then differentiable)."""
    mask_data = data_of(mask)
    if mask_data.dtype.kind != "b":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {_torch_name(mask)}")
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


#: Tensor methods (bound by ``aiograd._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {"lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "masked_fill": masked_fill}
