"""The BLAS thread budget: how many threads numpy's BLAS may use for one matrix product, so that
BLAS threads times the executor threads running node math never exceed the cores aiograd has.

Three things set it:

- **The cores given**: the CPUs this process may run on (its affinity), capped by what the BLAS
  was configured for at start (``OPENBLAS_NUM_THREADS=1`` stays 1), or ``set_num_threads(n)``
  (``AIOGRAD_NUM_THREADS``), which fixes it at ``n``.
- **The load**: unless fixed, the budget leaves the cores that other processes keep busy to them
  (``CpuLoad``, sampled at most every quarter second, when a backward starts). BLAS threads meet
  at a barrier after each block of a product, so one that waits for a core another process holds
  makes the whole product wait: on a 2-core machine with one core busy, a 2-thread product runs
  1.4-20x slower than a 1-thread one (the issue's "busy machine").
- **The nodes running side by side**: while ``k`` executor threads run node math, each product
  gets ``budget // k`` threads (at least one), as torch's inter-op threads share one intra-op pool.

numpy's OpenBLAS (a pthreads build) has one thread count for the whole process (its
``openblas_set_num_threads_local`` sets that same global), so the share is set process-wide when
an executor thread starts or finishes a node; a product already running keeps the threads it
started with. Setting it costs under a microsecond; reading the libraries (threadpoolctl) about
10 ms, once, at the first backward or thread query.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from ._cpu_load import CpuLoad

__all__ = ["BlasBudget", "budget"]

#: How often the load is sampled (seconds): long enough for the kernel's tick counters (100 per
#: second) to say something, short enough to follow a job that starts next to ours.
SAMPLE_EVERY_S = 0.25


class BlasBudget:
    """The process's BLAS thread budget (one instance: ``budget``)."""

    def __init__(self, load: CpuLoad | None = None, libraries: list[Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._load = CpuLoad() if load is None else load
        self._cores = len(self._load.cpus)
        self._libraries = libraries  # threadpoolctl's BLAS controllers (or a test's stand-ins)
        self._setters: list[Callable[[int], Any]] = []
        self._ceiling = 1  # the most threads the load may give: min(cores, BLAS's configured)
        self._budget = 1  # threads for one product when one node runs
        self._applied: int | None = None  # what the BLAS is set to now
        self._running = 0  # executor threads inside node math
        self._others: float | None = None  # cores other processes use (smoothed)
        self._due = 0.0
        self.fixed: int | None = None
        self._ready = False

    # ---------------------------------------------------------------------------- set up
    def _ensure(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if self._libraries is None:
                from threadpoolctl import ThreadpoolController

                self._libraries = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
            self._setters = [_setter(lib) for lib in self._libraries]
            configured = [int(lib.num_threads) for lib in self._libraries if lib.num_threads]
            self._ceiling = max(1, min(self._cores, max(configured) if configured else 1))
            self._budget = self._ceiling if self.fixed is None else self.fixed
            self._applied = max(configured) if configured else None
            self._ready = True
            self._apply()

    def _apply(self) -> None:
        # Under the lock: the share of the running nodes, set when it changes.
        share = max(1, self._budget // max(1, self._running))
        if share != self._applied:
            for set_threads in self._setters:
                set_threads(share)
            self._applied = share

    # ---------------------------------------------------------------------------- the budget
    @property
    def threads(self) -> int:
        """Threads one product may use while one node runs (``get_num_threads``)."""
        self._ensure()
        return self._budget

    def fix(self, n: int) -> None:
        """``set_num_threads(n)``: ``n`` threads from now on, whatever the load."""
        self._ensure()
        with self._lock:
            self.fixed = self._budget = n
            self._applied = None  # threadpoolctl's limit (the caller's) set it behind our back
            self._apply()

    def unfix(self) -> None:
        """Follow the load again (tests restore the default with this)."""
        self._ensure()
        with self._lock:
            self.fixed = None
            self._budget = self._target()
            self._applied = None
            self._apply()

    def _target(self) -> int:
        if self.fixed is not None:
            return self.fixed
        if self._others is None:
            return self._ceiling
        # Round to the nearest core: a process using a whole core (1.0) or most of one takes it;
        # a light one (a shell, a logger) does not cost a thread.
        free = self._cores - self._others
        return max(1, min(self._ceiling, math.floor(free + 0.5)))

    def tick(self) -> None:
        """Follow the load: called on the loop when a backward starts; samples it at most every
        ``SAMPLE_EVERY_S`` (a clock read otherwise)."""
        if self.fixed is not None:
            return
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + SAMPLE_EVERY_S
        self._ensure()
        if self._ceiling <= 1 or not self._load.readable:
            self._due = math.inf  # one thread, or no counters: nothing to follow
            return
        others = self._load.others()
        if others is None:
            return
        # Smoothed over two samples, so that one busy quarter second does not halve the threads.
        self._others = others if self._others is None else (self._others + others) / 2
        with self._lock:
            target = self._target()
            if target != self._budget:
                self._budget = target
                self._apply()

    # ---------------------------------------------------------------------------- executor threads
    def enter(self) -> None:
        """An executor thread starts node math: the products now share the budget."""
        self._ensure()
        with self._lock:
            self._running += 1
            self._apply()

    def leave(self) -> None:
        """An executor thread finished node math."""
        with self._lock:
            self._running -= 1
            self._apply()

    def __repr__(self) -> str:
        return (f"BlasBudget(cores={self._cores}, ceiling={self._ceiling}, threads={self._budget}, "
                f"fixed={self.fixed}, running={self._running}, others={self._others})")

    def after_fork_in_child(self) -> None:
        """A forked child runs none of its parent's nodes and has its own CPU time."""
        self._lock = threading.Lock()
        self._running = 0
        self._others = None
        self._due = 0.0
        self._load.forget()


def _setter(lib: Any) -> Callable[[int], Any]:
    """How to set ``lib``'s thread count from any thread. threadpoolctl lets only the first
    thread that set an OpenBLAS (pthreads) count set it again (others silently do nothing), so
    OpenBLAS's own ``openblas_set_num_threads`` is called, under the names threadpoolctl looks
    for (scipy's wheels prefix and suffix them)."""
    dynlib = getattr(lib, "dynlib", None)
    if getattr(lib, "internal_api", None) == "openblas" and dynlib is not None:
        for prefix in ("", "scipy_"):
            for suffix in ("", "64_", "_64"):
                if hasattr(dynlib, f"{prefix}openblas_get_num_threads{suffix}"):
                    function = getattr(dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
                    if function is not None:
                        function.restype = None
                        function.argtypes = [ctypes.c_int]
                        return cast("Callable[[int], Any]", function)
    return cast("Callable[[int], Any]", lib.set_num_threads)


budget = BlasBudget()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=budget.after_fork_in_child)

