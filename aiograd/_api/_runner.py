"""``aiograd.run``: asyncio.run on uvloop when it is installed."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """Run ``main`` to completion on a new event loop (uvloop if installed) and return its result."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main, debug=debug)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop, debug=debug) as runner:
        return runner.run(main)
