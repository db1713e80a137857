"""Progress of long backward calls: a callback (``on_progress``) or an async iterator
(``progress``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .._engine import watch
from .._engine.watch import Progress

__all__ = ["on_progress", "progress"]


class on_progress:
    """``with aiograd.profiler.on_progress(callback):`` reports the progress of every backward
    call (``backward``, ``grad``, ``Tensor.backward``, and ``aiograd.sync``'s) made in this
    context, as ``callback(Progress(done, total))``.

    Scoped by context variable: only calls made inside the block, in this task (or a task or
    thread that copies its context, as ``aiograd.sync`` and trio calls do), report. A reentrant
    backward (inside a node, such as a checkpoint's) does not report: it is part of its parent's
    node. The callback runs on the event loop that runs the backward, between nodes: at most one
    report is pending at a time (the engine yields to the loop every ``Engine.nodes_per_turn``
    nodes, 256 by default, and a report is made then), and the last one is made when the call
    ends, before its ``await`` returns, with ``done == total`` when it succeeded. An exception
    in the callback goes to the loop's exception handler."""

    def __init__(self, callback: Callable[[Progress], Any]) -> None:
        self.callback = callback
        self._tokens: list[Any] = []

    def __enter__(self) -> on_progress:
        callbacks = watch.progress_callbacks.get()
        self._tokens.append(watch.progress_callbacks.set((*callbacks, self.callback)))
        watch.progress_scope(+1)
        return self

    def __exit__(self, *exc: object) -> None:
        watch.progress_scope(-1)
        watch.progress_callbacks.reset(self._tokens.pop())


class progress:
    """Run a backward call and report its progress as an async iterator::

        it = aiograd.profiler.progress(aiograd.grad(loss, w))
        async for p in it:
            print(f"{p.done}/{p.total}")
        (g,) = it.result

    ``aw`` is what ``loss.backward(...)``, ``aiograd.backward(...)`` or ``aiograd.grad(...)``
    returns, not yet awaited; the iterator runs it as a task of its own. Reports are coalesced:
    an iteration gets the latest, never a backlog, and the last one has ``done == total`` when
    the call succeeded. When the call fails, the iteration raises its exception after the last
    report; ``result`` holds what the call returned (``grad()``'s gradients). Cancelling the
    iterating task cancels the backward and waits for it to stop; so does closing the iterator
    early (``break`` inside ``contextlib.aclosing(...)``, or when it is garbage collected).
    asyncio (and uvloop) only: under trio, use ``on_progress``."""

    def __init__(self, aw: Awaitable[Any]) -> None:
        self._aw: Awaitable[Any] | None = aw
        #: What the backward call returned, once the iteration has ended.
        self.result: Any = None

    def __aiter__(self) -> AsyncIterator[Progress]:
        if self._aw is None:
            raise RuntimeError("a progress() iterator can be iterated only once")
        aw, self._aw = self._aw, None
        return self._iterate(aw)

    async def _iterate(self, aw: Awaitable[Any]) -> AsyncIterator[Progress]:
        latest: list[Progress] = []  # at most one: the newest report not yet handed out
        changed = asyncio.Event()

        def report(p: Progress) -> None:
            latest[:] = [p]
            changed.set()

        async def run() -> Any:
            with on_progress(report):
                return await aw

        task = asyncio.get_running_loop().create_task(run(), name="aiograd.profiler.progress")
        task.add_done_callback(lambda _: changed.set())
        try:
            while True:
                await changed.wait()
                changed.clear()
                if latest:
                    yield latest.pop()
                elif task.done():
                    break
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait([task])
        self.result = task.result()  # the backward's exception, if it failed
