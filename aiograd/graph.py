"""Hooks into the autograd graph, as ``torch.autograd.graph``.

- :class:`saved_tensors_hooks` (``pack_hook``/``unpack_hook`` for every tensor saved for
  backward), :class:`save_on_cpu` and :func:`disable_saved_tensors_hooks`;
- :func:`register_multi_grad_hook`: one hook on the gradients of several tensors, once per
  backward call;
- :class:`GradientEdge` / :func:`get_gradient_edge`: where a tensor's gradient is computed;
- :func:`increment_version`: tell autograd that a tensor was modified in place behind its back;
- :class:`Node`: the class of every ``grad_fn`` (and of AccumulateGrad).

Names, arguments, semantics and error messages are PyTorch 2.13's. Everything here keeps its
state in context variables or per backward call, so concurrent backward calls on one event loop
(and hooks set in one asyncio task) do not see each other's.
"""

from ._core._graph import (
    GradientEdge,
    disable_saved_tensors_hooks,
    get_gradient_edge,
    increment_version,
    register_multi_grad_hook,
    save_on_cpu,
)
from ._core._node import Node
from ._core._saved import saved_tensors_hooks

__all__ = [
    "GradientEdge",
    "Node",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]
