"""How the worker processes of ``aiograd.serving.http.run_workers`` are supervised (here, apart
from the gunicorn code that applies it, so that it imports anywhere)."""

from __future__ import annotations

import dataclasses

__all__ = ["WorkerPolicy"]


@dataclasses.dataclass(frozen=True)
class WorkerPolicy:
    """How worker processes are supervised. ``workers``: how many; a worker that dies is
    restarted at once the first time, then after 1, 2, 4, ... s (at most ``max_backoff_s``) while
    workers keep dying; more than ``max_restarts`` deaths within ``restart_window_s`` stop the
    service (exit status 1). ``worker_timeout_s``: a worker whose event loop does not check in
    for that long is killed and restarted. ``loop``: "uvloop" or "asyncio"."""

    workers: int = 2
    max_restarts: int = 5
    restart_window_s: float = 60.0
    max_backoff_s: float = 16.0
    worker_timeout_s: float = 60.0
    loop: str = "uvloop"
