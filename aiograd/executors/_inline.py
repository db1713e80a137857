"""InlineExecutor: node math on the event loop itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ._base import Executor


class InlineExecutor(Executor):
    """Runs every node on the loop, in the engine's own drain: nothing is offloaded.

    The right choice for graphs of small nodes (each offload costs a thread round trip) and for
    code that must run single-threaded.
    """

    inline = True

    @property
    def capacity(self) -> int:
        """One: the loop runs one node at a time."""
        return 1

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Run ``fn()`` now and return a completed future (the engine does not call this)."""
        future = asyncio.get_running_loop().create_future()
        try:
            future.set_result(fn())
        except Exception as exc:  # noqa: BLE001 - delivered through the future
            future.set_exception(exc)
        return future

    def __repr__(self) -> str:
        return "InlineExecutor()"
