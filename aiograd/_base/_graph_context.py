"""What a running backward tells the code it calls: which GraphTask is running.

The engine sets ``current_graph_task`` while it runs a GraphTask's nodes, hooks and callbacks.
It lives below the ops and the engine so that a backward formula can ask
``should_compute(edge)`` without importing the engine (the layers in ``aiograd/__init__.py``
import one way only).
"""

from __future__ import annotations

import contextvars
from typing import Any

__all__ = ["current_graph_task", "should_compute", "will_engine_execute_node"]

#: The GraphTask whose nodes the current context is running (None outside backward). Typed
#: ``Any`` here because GraphTask belongs to the engine, a layer above.
current_graph_task: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "aiograd_current_graph_task", default=None
)


def should_compute(edge: Any) -> bool:
    """Whether the running backward needs the gradient a node sends along ``edge`` (PyTorch's
    ``task_should_compute_output``): always under a plain ``backward()``, and under ``grad()``
    or ``inputs=`` only when the edge leads to an input. Costly nodes (matrix products) skip
    the products nobody asked for: ``grad(out, x)`` computes no weight gradients."""
    if edge is None:
        return False
    graph_task = current_graph_task.get()
    if graph_task is None or graph_task.exec_info is None:
        return True
    info = graph_task.exec_info.get(edge[0])
    return info is not None and info.should_execute()


def will_engine_execute_node(node: Any) -> bool:
    """Whether the running backward will reach ``node`` and run it (or capture its gradient,
    under ``grad()``): PyTorch's ``torch._C._will_engine_execute_node``. A node the backward
    does not reach, or one that ``grad()``/``inputs=`` prunes, gives False. The first node of a
    backward with one root is not counted (it is in no node's edges), as in PyTorch."""
    graph_task = current_graph_task.get()
    if graph_task is None:
        raise RuntimeError("_get_should_execute_nodes should only be called during the backward pass")
    if node not in graph_task.dependencies:
        return False
    exec_info = graph_task.exec_info
    if exec_info is None:
        return True
    info = exec_info.get(node)
    return info is not None and info.should_execute()
