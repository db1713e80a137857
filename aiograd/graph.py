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

# The names, and the one list of them, are _core/_graph.py's.
from ._core._graph import *  # noqa: F403
from ._core._graph import __all__ as __all__
