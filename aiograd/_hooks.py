"""Per-node hook storage. Nodes without hooks pay one ``is None`` check in the engine."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._node import Node


class NodeHooks:
    """What runs around a node's ``apply``; for now the retains-grad updates."""

    __slots__ = ("retains_grad",)

    def __init__(self) -> None:
        #: output_nr -> weak reference to the non-leaf tensor that retains its grad.
        self.retains_grad: dict[int, weakref.ref[Any]] = {}


def hooks_of(node: Node) -> NodeHooks:
    hooks = node._hooks
    if hooks is None:
        hooks = node._hooks = NodeHooks()
    return hooks


def run_retains_grad(hooks: NodeHooks, grads: list[Any]) -> None:
    """Set ``.grad`` of retained non-leaves: a copy first, then out-of-place sums."""
    for output_nr, ref in hooks.retains_grad.items():
        tensor = ref()
        grad = grads[output_nr]
        if tensor is None or grad is None:
            continue
        if tensor._grad is None:
            tensor._grad = grad.clone()
        else:
            tensor._grad = tensor._grad + grad
