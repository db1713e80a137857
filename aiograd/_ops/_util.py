"""What every op module uses to record itself: unwrapping, the grad check, attaching a node.

Op pattern (forward and backward side by side, one family per module)::

    class ExpBackward0(Node):
        _saved = ("result",)
        def apply(self, grads):
            return (grads[0] * self.result.unpack(self),)

    def exp(input):
        out = wrap(np.exp(input.data))
        if needs_grad(input):
            node = attach(ExpBackward0((edge_of(input),)), out)
            node.result = save(out, is_output=True)
        return out

Backward formulas use aiograd's own ops, so under ``create_graph=True`` they are recorded too and
higher-order gradients come for free.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._grad_mode import grad_enabled
from .._node import Node, edge_of, save
from .._saved import SavedTensor
from .._tensor import Tensor

__all__ = [
    "Node",
    "Tensor",
    "attach",
    "data_of",
    "edge_of",
    "grad_enabled",
    "needs_grad",
    "save",
    "saved",
    "to_tensor",
    "wrap",
]

wrap = Tensor._wrap


def data_of(x: Any) -> Any:
    """The array behind a tensor; numbers and arrays pass through (numbers stay weakly typed)."""
    return x.data if isinstance(x, Tensor) else x


def to_tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._wrap(np.asarray(x))


def needs_grad(*inputs: Any) -> bool:
    """True if grad mode is on and any input is a tensor that requires grad."""
    if not grad_enabled():
        return False
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            return True
    return False


def attach(node: Node, *outputs: Tensor) -> Node:
    """Make ``node`` the grad_fn of the (floating point) outputs, numbered in order."""
    for nr, out in enumerate(outputs):
        if out.data.dtype.kind == "f":
            out._requires_grad = True
            out.grad_fn = node
            if nr:
                out.output_nr = nr
    return node


def saved(node: Node, value: Any) -> Any:
    """Unpack a saved field that may hold a SavedTensor or a plain number."""
    return value.unpack(node) if isinstance(value, SavedTensor) else value
