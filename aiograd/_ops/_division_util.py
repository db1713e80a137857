"""What the dividing ops share (``fmod``, ``remainder``, ``floor_divide``, ``div`` with a rounding
mode): PyTorch's refusals (an integer division by zero, a bool operand) and its ``NotImplemented``
node, which PyTorch records for an op that has no derivative formula but takes float inputs
(``floor_divide``, ``remainder(number, tensor)``): the result requires grad, and the backward that
reaches it raises ``derivative for aten::<op> is not implemented``. (Its ``name()`` is
``"NotImplemented"``, as the repr shows it; PyTorch's ``name()`` says
``"torch::autograd::NotImplemented"``, as for ``CopySlices``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._base._dtypes import is_array, scalar_type_name
from ._registry import backward
from ._util import Node, Tensor, attach, data_of, edge_of, needs_grad
from .casting import result_type

__all__ = ["check_division", "not_implemented", "record_not_implemented", "refuse_kinds", "wrapped_integers"]


@backward(name="NotImplemented", batched=True)
def NotImplementedNode(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, ...]:
    """PyTorch's node for an op without a derivative: running it is an error."""
    raise RuntimeError(f"derivative for aten::{self.op_name} is not implemented")


def not_implemented(op: str) -> Callable[[tuple[Any, ...]], Node]:
    """The maker of the op ``op``'s ``NotImplemented`` node, from its edges. One class serves
    every op (so a node is found again by its class's name, when shipped): the node carries the
    op's name, which its backward's error names."""

    def make(edges: tuple[Any, ...]) -> Node:
        node: Any = NotImplementedNode(edges)
        node.op_name = op
        return node

    return make


def record_not_implemented(op: str, out: Tensor, *operands: Any) -> None:
    """Attach ``op``'s ``NotImplemented`` node to a float ``out`` when an operand needs a grad."""
    if out.data.dtype.kind in "fc" and needs_grad(*operands):
        attach(not_implemented(op)(tuple(edge_of(x) for x in operands)), out)


def refuse_kinds(kernel: str, dtype: Any, kinds: str) -> None:
    """PyTorch's NotImplementedError for a ``dtype`` its CPU kernel ``kernel`` lacks (one of
    ``kinds``, numpy's dtype kinds: ``"b"`` bool, ``"f"`` floating...)."""
    if np.dtype(dtype).kind in kinds:
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{scalar_type_name(dtype)}\'')


def check_division(kernel: str, input: Any, other: Any) -> Any:
    """The dtype of ``input`` divided by ``other`` (promoted operands: tensors, arrays or
    numbers), after PyTorch's checks: a bool division is not implemented (``kernel``'s words),
    an integer one by zero raises ``RuntimeError: ZeroDivisionError`` (unless nothing is
    computed: an empty result)."""
    dtype = result_type(input, other)
    refuse_kinds(kernel, dtype, "b")
    if dtype.kind in "iu":
        a, b = data_of(input), data_of(other)
        if is_array(b):
            size = int(np.prod(np.broadcast_shapes(np.shape(a), b.shape)))
            if size and bool((b == 0).any()):
                raise RuntimeError("ZeroDivisionError")
        elif b == 0 and (not is_array(a) or a.size):
            raise RuntimeError("ZeroDivisionError")
    return dtype


def wrapped_integers(dtype: Any, *operands: Any) -> tuple[Any, ...]:
    """``operands`` with each Python integer made a 0-d array of the integer ``dtype``, wrapped
    into it as PyTorch's scalars are (``uint8_tensor % -3`` divides by 253; numpy would refuse
    the out-of-range number)."""
    if np.dtype(dtype).kind not in "iu":
        return operands
    return tuple(np.asarray(x).astype(dtype) if isinstance(x, (int, np.integer)) else x for x in operands)


def floor_divide_floating(xp: Any, a: Any, b: Any) -> Any:
    """PyTorch's floating floor division (``div_floor_floating``)."""
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    div = xp.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    floored = xp.floor(div)
    floored = xp.where(div - floored > 0.5, floored + 1.0, floored)
    out = xp.where(div != 0, floored, xp.copysign(xp.zeros_like(div), a / b))
    return xp.where(b == 0, a / b, out)
