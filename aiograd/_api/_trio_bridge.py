"""The trio bridge: ``await loss.backward()`` and ``await aiograd.grad(...)`` in a trio task.

The engine is asyncio's (its queues, futures and workers), so under trio the GraphTask runs on
``aiograd.sync``'s background asyncio loop, and the trio task waits for it on trio's terms
(docs/engine.md, "Under trio"). ``aiograd/__init__`` imports this module, which installs
``run_on_trio`` with ``_autograd.set_run_without_asyncio``: what a backward call runs when no
asyncio loop is running.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ..sync import _forget_backward, _in_trio, _running_portal
from . import _autograd

__all__ = ["run_on_trio"]

T = TypeVar("T")


async def run_on_trio(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``await make()`` for a trio task: the backward runs on the background asyncio loop (the
    engine is asyncio's: its queues, futures and workers), and the trio task waits for it on
    trio's terms. Cancelling the waiting task (a cancel scope, a deadline, KeyboardInterrupt)
    cancels the backward and waits, shielded, until it has stopped, so no ``.grad`` changes
    after the cancellation reaches the caller. Installed with ``_autograd.set_run_without_asyncio``.

    The task is made with ``loop.call_soon_threadsafe``, not through anyio's portal: a round
    trip measured 100 us that way against 250 us through ``start_task_soon``."""
    trio = _in_trio()
    if trio is None:
        raise RuntimeError(
            "no running event loop: aiograd's backward and grad run under asyncio (or uvloop), "
            "or under trio; outside any event loop use aiograd.sync.backward/grad"
        )
    context = contextvars.copy_context()
    context.run(_forget_backward)
    sniffio = sys.modules.get("sniffio")
    if sniffio is not None:
        # The copy says "trio" (trio sets sniffio's variable), but the backward's hooks and
        # Functions run on asyncio: anyio code in them must see asyncio.
        context.run(sniffio.current_async_library_cvar.set, None)
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def notify(_: object) -> None:  # on the background loop's thread
        try:
            token.run_sync_soon(done.set)
        except trio.RunFinishedError:
            pass  # the trio run ended meanwhile: nobody waits

    holder: list[asyncio.Task[T]] = []

    def start() -> None:  # on the background loop
        task = portal.loop.create_task(make(), context=context)
        task.add_done_callback(notify)
        holder.append(task)

    def cancel() -> None:  # on the background loop, after start (callbacks run in order)
        holder[0].cancel()

    portal = _running_portal("backward")
    portal.loop.call_soon_threadsafe(start)
    try:
        await done.wait()
    except BaseException:
        try:
            portal.loop.call_soon_threadsafe(cancel)
        except RuntimeError:
            pass  # the loop is closed: the task is gone with it
        with trio.CancelScope(shield=True):
            while not done.is_set() and portal.thread.is_alive():
                with trio.move_on_after(0.1):
                    await done.wait()
        raise
    task = holder[0]
    if task.cancelled():
        raise RuntimeError(
            "the backward was cancelled on aiograd's background event loop (by "
            "aiograd.sync.shutdown(cancel=True), interpreter exit, or a CancelledError raised "
            "inside the backward)"
        )
    error = task.exception()
    if error is not None:
        raise error
    return task.result()


_autograd.set_run_without_asyncio(run_on_trio)
