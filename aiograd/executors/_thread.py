"""ThreadExecutor: node math in a thread pool (numpy releases the GIL in its kernels)."""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._base import Executor
from ._blas import budget


class ThreadExecutor(Executor):
    """A pool of ``max_workers`` threads (default: the number of CPUs, at most 8).

    Threads are started on first use and shared by every engine (event loop) that uses this
    executor. ``close()`` stops them; a closed executor refuses new work.

    With ``share_cores`` (the default) the threads run at most ``free cores // BLAS threads``
    nodes at once, the BLAS thread budget's share (``aiograd.executors._blas``, docs/executors.md):
    when numpy's BLAS already has every free core, a second heavy node waits for the first
    instead of running beside it on the same cores. ``share_cores=False`` runs up to
    ``max_workers`` at once whatever BLAS uses (nodes whose math waits on something other than
    the CPU).
    """

    def __init__(self, max_workers: int | None = None, *, share_cores: bool = True) -> None:
        if max_workers is None:
            max_workers = min(8, os.cpu_count() or 1)
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self._max_workers = max_workers
        self.share_cores: bool = share_cores
        self._pool: ThreadPoolExecutor | None = None
        _instances.add(self)

    @property
    def max_workers(self) -> int:
        """The number of threads (``aiograd.get_num_interop_threads()`` for the default one)."""
        return self._max_workers

    @property
    def started(self) -> bool:
        """Whether the threads have been started (by the first node run here)."""
        return self._pool is not None

    @property
    def capacity(self) -> int:
        """Two calls per thread: each worker has the next node queued when it finishes one, so
        it does not sleep between nodes (and get woken onto a busy CPU)."""
        return 2 * self._max_workers

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Run ``fn()`` on a pool thread; the returned future belongs to the running loop."""
        pool = self._pool
        if pool is None:
            pool = self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="aiograd")
        # The pool's work item keeps what it was given until the thread moves on, which may be
        # after the loop has the result; ``fn`` (a node, its gradients, the GraphTask's context)
        # must not outlive the call, so the thread drops it before the result is published.
        box = [fn]
        if self.share_cores:

            def call() -> Any:
                budget.enter()  # waits while the nodes running have the free cores (``_blas``)
                try:
                    return box.pop()()
                finally:
                    budget.leave()

        else:

            def call() -> Any:
                return box.pop()()

        return asyncio.wrap_future(pool.submit(call), loop=asyncio.get_running_loop())

    def close(self) -> None:
        """Stop the threads once the running calls finish; queued calls are cancelled."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        shared = "" if self.share_cores else ", share_cores=False"
        return f"ThreadExecutor(max_workers={self._max_workers}{shared})"


#: Every ThreadExecutor, so that a forked child can forget its parent's threads.
_instances: weakref.WeakSet[ThreadExecutor] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A forked child (a gunicorn worker of a preloaded service, a multiprocessing "fork" worker)
    # has none of its parent's threads: a pool that had started them would take work that no
    # thread ever runs. The child starts its own pool on first use.
    for executor in list(_instances):
        executor._pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
