"""The BLAS thread budget: how many threads numpy's BLAS may use for one matrix product, and how
many nodes the executor threads may run side by side, so that BLAS threads times running nodes
never exceed the cores aiograd has.

- **The cores given**: the CPUs this process may run on (its affinity).
- **Less those other processes keep busy** (``CpuLoad``, sampled at most every quarter second,
  when a backward starts): the free cores. BLAS threads meet at a barrier after each block of a
  product, so one that waits for a core another process holds makes the whole product wait: on
  a 2-core machine with one core busy, a 2-thread product runs 1.4-20x slower than a 1-thread one.
- **The budget**: the free cores, capped by what the BLAS was configured for at start
  (``OPENBLAS_NUM_THREADS=1`` stays 1), or what ``set_num_threads(n)`` (``AIOGRAD_NUM_THREADS``)
  fixed, whatever the load.
- **The nodes side by side**: ``free // budget`` (at least one). When BLAS already has every free
  core, a second heavy node waits for the first instead of running beside it: a product on two
  BLAS threads beats two products on one each (the branches of ``bench_branches.py``: 20 ms
  serial on 2 BLAS threads, 30 ms as two nodes on 1 thread each), and two products on two threads
  each would put twice as many threads as cores on the machine. With one BLAS thread (the
  budget fixed at 1, or a busy machine's), nodes run side by side on the free cores. An
  executor thread waits for its turn in ``enter``.

numpy's OpenBLAS (a pthreads build) has one thread count for the whole process (its
``openblas_set_num_threads_local`` sets that same global); if more nodes run than the budget
allows (it fell while they ran), the products share it. Setting it costs under a microsecond;
reading the libraries (threadpoolctl) about 10 ms, once, at the first backward or thread query.
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
#: The longest an executor thread waits for its turn (``enter``): node math that waits for other
#: node math in the same executor (which aiograd never does) would stall this long, not forever.
GATE_TIMEOUT_S = 1.0


class BlasBudget:
    """The process's BLAS thread budget (one instance: ``budget``)."""

    def __init__(self, load: CpuLoad | None = None, libraries: list[Any] | None = None) -> None:
        self._cond = threading.Condition()
        self._sampling = threading.Lock()
        self._load = CpuLoad() if load is None else load
        self._cores = len(self._load.cpus)
        self._libraries = libraries  # threadpoolctl's BLAS controllers (or a test's stand-ins)
        self._setters: list[Callable[[int], Any]] = []
        self._ceiling = 1  # the most threads the load may give: min(cores, BLAS's configured)
        self._free = self._cores  # cores not kept busy by other processes
        self._budget = 1  # threads for one product
        self._parallel = 1  # nodes the executor threads may run side by side
        self._applied: int | None = None  # what the BLAS is set to now
        self._running = 0  # executor threads inside node math
        self._waiting = 0  # executor threads waiting for their turn
        self._others: float | None = None  # cores other processes use (smoothed)
        self._due = 0.0
        self.fixed: int | None = None
        self._ready = False

    # ---------------------------------------------------------------------------- set up
    def _ensure(self) -> None:
        if self._ready:
            return
        with self._cond:
            if self._ready:
                return
            if self._libraries is None:
                from threadpoolctl import ThreadpoolController

                self._libraries = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
            self._setters = [_setter(lib) for lib in self._libraries]
            configured = [int(lib.num_threads) for lib in self._libraries if lib.num_threads]
            self._ceiling = max(1, min(self._cores, max(configured) if configured else 1))
            self._applied = max(configured) if configured else None
            self._ready = True
            self._settle()

    def _settle(self) -> None:
        # Under the lock: the budget and the nodes' parallelism for the free cores, and the BLAS
        # set to the budget (to a share of it if more nodes than that run: a budget that fell
        # while they ran, or a node that waited past GATE_TIMEOUT_S).
        self._budget = self.fixed if self.fixed is not None else min(self._ceiling, self._free)
        parallel = max(1, self._free // self._budget)
        if parallel > self._parallel:
            self._cond.notify_all()
        self._parallel = parallel
        share = max(1, self._budget // max(1, self._running))
        if share != self._applied:
            for set_threads in self._setters:
                set_threads(share)
            self._applied = share

    # ---------------------------------------------------------------------------- the budget
    @property
    def threads(self) -> int:
        """Threads one product may use (``get_num_threads``)."""
        self._ensure()
        return self._budget

    @property
    def parallel(self) -> int:
        """How many executor threads may run node math at once."""
        self._ensure()
        return self._parallel

    def fix(self, n: int) -> None:
        """``set_num_threads(n)``: ``n`` threads from now on, whatever the load."""
        self._ensure()
        with self._cond:
            self.fixed = n
            self._applied = None  # threadpoolctl's limit (the caller's) set it behind our back
            self._settle()

    def unfix(self) -> None:
        """Follow the load again (tests restore the default with this)."""
        self._ensure()
        with self._cond:
            self.fixed = None
            self._applied = None
            self._settle()

    def tick(self) -> None:
        """Follow the load: called on the loop when a backward starts; samples it at most every
        ``SAMPLE_EVERY_S`` (a clock read otherwise)."""
        now = time.monotonic()
        if now < self._due:
            return
        self._due = now + SAMPLE_EVERY_S
        self._ensure()
        if self._cores <= 1 or not self._load.readable:
            self._due = math.inf  # one core, or no counters: nothing to follow
            return
        # One sampler at a time: loops in several threads (``aiograd.sync``'s, a server's) tick
        # too, and the load's previous sample is one state.
        if not self._sampling.acquire(blocking=False):
            return
        try:
            others = self._load.others()
            if others is None:
                return
            # Smoothed over two samples, so that one busy quarter second does not halve the threads.
            self._others = others if self._others is None else (self._others + others) / 2
            # Rounded to the nearest core: a process using a whole core (1.0) or most of one takes
            # it; a light one (a shell, a logger) does not cost a thread.
            free = max(1, min(self._cores, math.floor(self._cores - self._others + 0.5)))
            if free != self._free:
                with self._cond:
                    self._free = free
                    self._settle()
        finally:
            self._sampling.release()

    # ---------------------------------------------------------------------------- executor threads
    def enter(self) -> None:
        """An executor thread starts node math: it waits while as many nodes as ``parallel``
        run (BLAS already has the cores they would use), at most ``GATE_TIMEOUT_S``."""
        self._ensure()
        with self._cond:
            if self._running >= self._parallel:
                self._waiting += 1
                try:
                    self._cond.wait_for(lambda: self._running < self._parallel, timeout=GATE_TIMEOUT_S)
                finally:
                    self._waiting -= 1
            self._running += 1
            self._settle()

    def leave(self) -> None:
        """An executor thread finished node math: the next one may start."""
        with self._cond:
            self._running -= 1
            self._settle()
            self._cond.notify()

    def __repr__(self) -> str:
        return (f"BlasBudget(cores={self._cores}, free={self._free}, ceiling={self._ceiling}, "
                f"threads={self._budget}, parallel={self._parallel}, fixed={self.fixed}, "
                f"running={self._running}, waiting={self._waiting}, others={self._others})")

    def after_fork_in_child(self) -> None:
        """A forked child runs none of its parent's nodes and has its own CPU time."""
        self._cond = threading.Condition()
        self._sampling = threading.Lock()
        self._running = self._waiting = 0
        self._others = None
        self._free = self._cores
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

