"""Device queues and their workers.

Every device other than the CPU (``sim:N``, later ``cuda:N``) has one ReadyQueue per engine,
shared by every GraphTask, and one worker task that drains it. The worker starts when work is
pushed to an idle queue and ends when the queue is empty, so no task outlives the work and
nothing is left running when the loop closes. A node that needs awaiting (an async hook or
Function) runs as a task of its own that the worker awaits, and that its GraphTask's failure or
cancellation cancels: the worker serves every GraphTask, so it must not stay blocked in a dead
one's node.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .context import current_worker, yield_to_loop
from .logs import engine_log
from .node_task import GRAPH_TASK, NodeTask
from .ready_queue import ReadyQueue

if TYPE_CHECKING:
    from .._devices._device import device
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = ["DeviceQueue"]


class DeviceQueue(ReadyQueue):
    """A device's queue: pushing work starts its worker task if none is running."""

    def __init__(self, engine: Engine, dev: device) -> None:
        super().__init__()
        self.engine = engine
        self.device = dev
        self.worker: asyncio.Task[None] | None = None

    def push(self, task: NodeTask) -> None:
        """Queue ``task``; start the worker if it is not running."""
        super().push(task)
        worker = self.worker
        if worker is None or worker.done():
            self.worker = self.engine.loop.create_task(
                self._serve(), name=f"aiograd worker {self.device}"
            )
            engine_log.debug("device worker for %s started", self.device)

    async def _serve(self) -> None:
        """Drain the queue for every GraphTask, in turns, until it is empty."""
        current_worker.set((self, 0))  # this task's own context: a reentrant call runs here
        engine = self.engine
        budget = engine.nodes_per_turn or 0
        turn = budget
        try:
            while (task := self.pop()) is not None:
                pending = engine.handle(task, None)
                if pending is not None:
                    await self._await_node(task[GRAPH_TASK], pending)
                turn -= 1
                if not turn:
                    turn = budget
                    await yield_to_loop()
        finally:
            # A finished task keeps its context, which holds the GraphTask that started it:
            # the queue must not keep the task.
            if self.worker is asyncio.current_task():
                self.worker = None
            engine_log.debug("device worker for %s stopped (its queue is empty)", self.device)

    async def _await_node(self, owner: GraphTask, pending: Any) -> None:
        worker = asyncio.current_task()
        waiter = self.engine.loop.create_task(pending, name=worker.get_name() if worker else None)
        waits = owner.device_waits
        if waits is None:
            waits = owner.device_waits = set()
        waits.add(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if worker is not None and worker.cancelling():
                raise  # the worker itself is cancelled (Engine.aclose)
            # Only the node was cancelled, with its GraphTask: the worker goes on.
        finally:
            waits.discard(waiter)
