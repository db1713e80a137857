"""The ready queue: NodeTasks waiting to run, most urgent first.

An ``asyncio.PriorityQueue`` used through its public API (but for ``waiting_tasks``, which reads its
heap), with two things beside it:

- a **front slot**: a NodeTask pushed while the queue is empty is held there instead of going
  through the heap, and popped from there. It is the most urgent NodeTask by definition (there
  is no other), and any later push moves it into the heap first, so the order is the heap's
  order. In a chain (most of a backward pass) every node makes exactly one node ready, so the
  drive runs node after node without a heap operation;
- a **broadcast wake-up** (an ``asyncio.Event`` replaced at each broadcast): several coroutines
  may drain one queue (a reentrant backward drives its parent's queue, nested), and a GraphTask
  finished by a device worker must wake the coroutine that drives it, which waits on an empty
  queue. Every waiter wakes on a push or a ``wake_all`` and re-checks its own condition.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .node_task import NodeTask

__all__ = ["ReadyQueue"]


class ReadyQueue(asyncio.PriorityQueue[NodeTask]):
    """A GraphTask's CPU queue, or a device's queue shared by every GraphTask."""

    # Slots, not class-level defaults: push and pop read them for every node, and a slot is the
    # fastest attribute there is (a class-level default is a miss in the instance dict first).
    __slots__ = ("front", "queued", "waiting", "_changed")

    def __init__(self) -> None:
        super().__init__()
        #: The NodeTask held in front of the heap (see the module docstring), or None.
        self.front: NodeTask | None = None
        #: NodeTasks in the heap, counted here: ``empty()`` would be a call on every push.
        self.queued: int = 0
        self.waiting: int = 0  # coroutines in wait()
        self._changed: asyncio.Event | None = None

    def push(self, task: NodeTask) -> None:
        """Queue ``task``, and wake whoever waits on this queue."""
        if self.front is None and not self.queued:
            self.front = task
        else:
            self._push_behind(task)
        if self.waiting:
            self.wake_all()

    def _push_behind(self, task: NodeTask) -> None:
        """Into the heap, with the front slot's NodeTask if there is one (order is the heap's)."""
        front = self.front
        if front is not None:
            self.front = None
            self.put_nowait(front)
        self.put_nowait(task)
        self.queued = self.qsize()

    def pop(self) -> NodeTask | None:
        """The most urgent NodeTask, or None if there is none."""
        task = self.front
        if task is not None:
            self.front = None
            return task
        if not self.queued:
            return None
        task = self.get_nowait()
        self.queued -= 1
        return task

    def depth(self) -> int:
        """NodeTasks waiting (for statistics)."""
        return self.queued + (self.front is not None)

    def waiting_tasks(self) -> list[NodeTask]:
        """The NodeTasks waiting, in no particular order (read, not removed). The heap is
        ``asyncio.PriorityQueue``'s list, ``_queue``: the one read of its internals, made only
        for a heavy node deciding whether to leave the loop (``evaluate.work_waits``)."""
        front = self.front
        heap: list[NodeTask] = self._queue  # type: ignore[attr-defined]
        return heap if front is None else [front, *heap]

    def has_work(self) -> bool:
        """Whether a NodeTask is waiting."""
        return self.front is not None or self.queued > 0

    async def wait(self) -> None:
        """Return after the next push or ``wake_all``; the queue may be empty again by then (or
        never was, for a wake-up), so callers re-check their condition."""
        changed = self._changed
        if changed is None:
            changed = self._changed = asyncio.Event()
        self.waiting += 1
        try:
            await changed.wait()
        finally:
            self.waiting -= 1

    def wake_all(self) -> None:
        changed = self._changed
        if changed is not None:
            self._changed = None
            changed.set()

    def drain(self) -> list[NodeTask]:
        """Remove and return every NodeTask, most urgent first."""
        tasks = []
        while (task := self.pop()) is not None:
            tasks.append(task)
        return tasks

    def keep(self, predicate: Any) -> list[NodeTask]:
        """Keep only the NodeTasks for which ``predicate`` holds; returns the others."""
        dropped = []
        for task in self.drain():
            if predicate(task):
                self.push(task)
            else:
                dropped.append(task)
        return dropped
