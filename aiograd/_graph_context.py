"""What a running backward tells the code it calls: which GraphTask is running.

The engine sets ``current_graph_task`` while it runs a GraphTask's nodes, hooks and callbacks.
It lives below the ops and the engine so that a backward formula can ask
``should_compute(edge)`` without importing the engine (the layers in ``aiograd/__init__.py``
import one way only).
"""

from __future__ import annotations

import contextvars
from typing import Any

__all__ = ["current_graph_task", "should_compute"]

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
