"""The context variables a drive sets for the code it runs, and the turn's yield.

A node runs with grad mode equal to its GraphTask's ``create_graph`` and with that GraphTask as
``current_graph_task`` (which a reentrant ``backward()`` called from the node reads), whatever
the mode of the coroutine that drives it. ``current_worker`` is the queue being drained and how
many drives are nested on this task's stack (PyTorch's ``local_ready_queue`` and
``current_depth``): a backward called from a node runs its NodeTasks on that queue.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._base._grad_mode import _grad_enabled
from .._base._graph_context import current_graph_task

if TYPE_CHECKING:
    from .graph_task import GraphTask
    from .ready_queue import ReadyQueue

__all__ = [
    "await_as", "current_graph_task", "current_worker", "is_checkpoint_valid", "queue_callback",
    "running", "yield_to_loop",
]

current_worker: contextvars.ContextVar[tuple[ReadyQueue, int] | None] = contextvars.ContextVar(
    "aiograd_current_worker", default=None
)


class running:
    """``with running(graph_task):`` runs code as ``graph_task``'s: its grad mode, and it as the
    current GraphTask. A class, not a ``@contextmanager`` generator: it is entered for every
    NodeTask a device worker runs, and a generator costs about a microsecond more."""

    __slots__ = ("graph_task", "tokens")

    def __init__(self, graph_task: GraphTask) -> None:
        self.graph_task = graph_task

    def __enter__(self) -> None:
        self.tokens = (
            _grad_enabled.set(self.graph_task.create_graph),
            current_graph_task.set(self.graph_task),
        )

    def __exit__(self, *exc: object) -> None:
        mode_token, task_token = self.tokens
        current_graph_task.reset(task_token)
        _grad_enabled.reset(mode_token)


async def await_as(graph_task: GraphTask, pending: Any) -> None:
    """Await a node's coroutine as ``graph_task``'s (see ``running``)."""
    with running(graph_task):
        await pending


async def yield_to_loop() -> None:
    """One trip through the event loop (``asyncio.sleep(0)``'s bare yield): the end of a turn."""
    await asyncio.sleep(0)


def queue_callback(callback: Callable[[], Any]) -> None:
    """Run ``callback()`` (sync or ``async def``) once when the current backward's nodes have all
    run, before it returns; callbacks run in the order queued and may queue more."""
    graph_task = current_graph_task.get()
    if graph_task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    graph_task.final_callbacks.append(callback)


def is_checkpoint_valid() -> bool:
    """False while running inside a ``grad()`` call or a ``backward(inputs=...)`` (or a backward
    nested in one), where a reentrant checkpoint cannot deliver its gradients correctly."""
    graph_task = current_graph_task.get()
    return graph_task is None or graph_task.checkpoint_valid
