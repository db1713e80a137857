"""The BLAS thread budget (aiograd.executors._blas): the load read from the kernel's counters, the
threads it leaves to other processes, the share of nodes running side by side, and the real
library's thread count behind it. Scripted counters and clocks: no timing in these tests."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable

import pytest
import threadpoolctl

import aiograd as ag
from aiograd import executors
from aiograd.executors import _blas
from aiograd.executors._cpu_load import CpuLoad


def _stat(*cpus: tuple[int, int]) -> str:
    """/proc/stat text with per-CPU (busy, idle) ticks split over its fields."""
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for i, (busy, idle) in enumerate(cpus):
        user, system, steal = busy - busy // 2 - busy // 4, busy // 2, busy // 4
        lines.append(f"cpu{i} {user} 0 {system} {idle} 0 0 0 {steal} 0 0")
    return "\n".join([*lines, "intr 1 2 3", "ctxt 4"]) + "\n"


class Script:
    """Counters that advance as a test says: ticks per CPU, this process's CPU seconds, a clock."""

    def __init__(self, n: int) -> None:
        self.busy = [0] * n
        self.idle = [0] * n
        self.own = 0.0
        self.now = 0.0

    def advance(self, seconds: float, busy_cores: list[float], own_cores: float) -> None:
        ticks = round(seconds * 100)
        for i, b in enumerate(busy_cores):
            self.busy[i] += round(ticks * b)
            self.idle[i] += ticks - round(ticks * b)
        self.own += seconds * own_cores
        self.now += seconds

    def load(self, cpus: frozenset[int] | None = None) -> CpuLoad:
        return CpuLoad(
            cpus=frozenset(range(len(self.busy))) if cpus is None else cpus,
            read_stat=lambda: _stat(*zip(self.busy, self.idle)),
            own_cpu_seconds=lambda: self.own,
            clock=lambda: self.now,
            ticks_per_second=100,
        )


class FakeBlas:
    user_api = "blas"

    def __init__(self, num_threads: int) -> None:
        self.num_threads = num_threads
        self.calls: list[int] = []

    def set_num_threads(self, n: int) -> None:
        self.calls.append(n)
        self.num_threads = n


def test_others_is_the_busy_time_less_this_processs_own() -> None:
    s = Script(2)
    load = s.load()
    assert load.others() is None  # the first sample has nothing to compare with
    s.advance(1.0, [1.0, 0.5], own_cores=0.5)  # 1.5 cores busy, half of one is ours
    assert load.others() == pytest.approx(1.0)
    s.advance(0.5, [0.2, 0.0], own_cores=0.2)
    assert load.others() == pytest.approx(0.0)
    s.advance(1.0, [1.0, 1.0], own_cores=0.0)
    assert load.others() == pytest.approx(2.0)


def test_others_counts_only_the_cpus_given_to_the_process() -> None:
    s = Script(4)
    load = s.load(cpus=frozenset({2, 3}))
    load.others()
    s.advance(1.0, [1.0, 1.0, 0.0, 1.0], own_cores=0.0)  # cpu0 and cpu1 are someone else's
    assert load.others() == pytest.approx(1.0)


def test_unreadable_counters_mean_no_load_figure() -> None:
    def missing() -> str:
        raise FileNotFoundError("/proc/stat")

    load = CpuLoad(cpus=frozenset({0}), read_stat=missing)
    assert load.others() is None and not load.readable


def _budget(s: Script, blas: FakeBlas) -> _blas.BlasBudget:
    return _blas.BlasBudget(load=s.load(), libraries=[blas])


def _tick(b: _blas.BlasBudget, monkeypatch: pytest.MonkeyPatch, at: float) -> None:
    monkeypatch.setattr(_blas.time, "monotonic", lambda: at)
    b.tick()


def test_the_budget_leaves_a_busy_core_to_its_process_and_takes_it_back(monkeypatch) -> None:
    s, blas = Script(2), FakeBlas(2)
    b = _budget(s, blas)
    assert b.threads == 2
    _tick(b, monkeypatch, 0.0)  # the first sample
    # A second process spins on one core while ours runs 2-thread products on what is left.
    s.advance(0.25, [1.0, 1.0], own_cores=1.3)
    _tick(b, monkeypatch, 0.25)
    assert (b.threads, blas.num_threads) == (1, 1)
    s.advance(0.25, [1.0, 1.0], own_cores=1.0)  # still there: still one
    _tick(b, monkeypatch, 0.5)
    assert b.threads == 1
    # It stops; smoothed over two samples, the core comes back after the second idle one.
    s.advance(0.25, [0.5, 0.0], own_cores=0.5)
    _tick(b, monkeypatch, 0.75)
    s.advance(0.25, [0.5, 0.0], own_cores=0.5)
    _tick(b, monkeypatch, 1.0)
    assert (b.threads, blas.num_threads) == (2, 2)
    assert blas.calls == [1, 2]


def test_the_load_is_sampled_at_most_every_quarter_second(monkeypatch) -> None:
    s, blas = Script(2), FakeBlas(2)
    b = _budget(s, blas)
    _tick(b, monkeypatch, 0.0)
    s.advance(0.1, [1.0, 1.0], own_cores=0.0)
    _tick(b, monkeypatch, 0.1)  # too soon: not sampled
    assert b.threads == 2 and blas.calls == []


def test_a_fixed_budget_ignores_the_load(monkeypatch) -> None:
    s, blas = Script(2), FakeBlas(2)
    b = _budget(s, blas)
    b.fix(2)
    _tick(b, monkeypatch, 0.0)
    s.advance(1.0, [1.0, 1.0], own_cores=0.0)
    _tick(b, monkeypatch, 1.0)
    assert b.threads == 2 and blas.num_threads == 2


def test_a_blas_configured_for_one_thread_stays_at_one(monkeypatch) -> None:
    s, blas = Script(4), FakeBlas(1)  # OPENBLAS_NUM_THREADS=1 at start
    b = _budget(s, blas)
    _tick(b, monkeypatch, 0.0)
    s.advance(1.0, [0.0] * 4, own_cores=0.0)
    _tick(b, monkeypatch, 1.0)
    assert b.threads == 1 and blas.calls == []


def _wait_until(condition: Callable[[], bool]) -> None:
    """Until ``condition()`` (another thread's progress), at most 30 s."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_with_one_blas_thread_nodes_run_side_by_side() -> None:
    blas = FakeBlas(1)  # OPENBLAS_NUM_THREADS=1 on 4 cores: 4 nodes at once, 1 thread each
    b = _blas.BlasBudget(load=Script(4).load(), libraries=[blas])
    assert (b.threads, b.parallel) == (1, 4)
    for _ in range(4):
        b.enter()  # none waits
    assert b._running == 4 and blas.calls == []
    for _ in range(4):
        b.leave()


def test_when_blas_has_every_core_the_next_node_waits_for_the_running_one() -> None:
    blas = FakeBlas(2)
    b = _blas.BlasBudget(load=Script(2).load(), libraries=[blas])
    assert (b.threads, b.parallel) == (2, 1)
    b.enter()
    second = threading.Thread(target=b.enter)
    second.start()
    _wait_until(lambda: b._waiting == 1)
    assert b._running == 1  # the second is not in
    b.leave()
    second.join(30)
    assert (b._running, b._waiting) == (1, 0) and blas.calls == []  # it ran on both threads
    b.leave()


def test_a_budget_that_falls_while_nodes_run_is_shared_between_them() -> None:
    blas = FakeBlas(4)
    b = _blas.BlasBudget(load=Script(4).load(), libraries=[blas])
    b.fix(1)
    b.enter()
    b.enter()
    b.fix(4)  # now one node at a time would get all 4: the two running share them
    assert blas.num_threads == 2
    b.leave()
    assert blas.num_threads == 4
    b.leave()
    assert blas.calls == [1, 2, 4]


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"}


#: The tests on numpy's real BLAS need one threadpoolctl can set (OpenBLAS, MKL, BLIS: not
#: Apple's Accelerate).
real_blas = pytest.mark.skipif(not _blas_threads(), reason="numpy's BLAS has no thread control")


@pytest.fixture
def restore_budget(monkeypatch):
    """The process's budget with every core free, whatever else runs on the machine (the other
    test workers): the load is not sampled during the test; followed again after it."""
    b = _blas.budget
    monkeypatch.setattr(b, "_due", math.inf)
    with b._cond:
        b._free = b._cores
    yield
    with b._cond:
        b._due = 0.0
    b.unfix()


@real_blas
async def test_one_blas_thread_each_lets_the_thread_executor_run_nodes_side_by_side(restore_budget) -> None:
    ag.set_num_threads(1)
    pool = executors.ThreadExecutor(2)
    both_in, both_read = threading.Barrier(2, timeout=30), threading.Barrier(2, timeout=30)
    seen: dict[str, set[int]] = {}

    def side_by_side(name: str) -> None:
        both_in.wait()  # both inside at once
        seen[name] = _blas_threads()
        both_read.wait()

    try:
        a, b = pool.submit(lambda: side_by_side("first")), pool.submit(lambda: side_by_side("second"))
        await a
        await b
    finally:
        pool.close()
    assert seen == {"first": {1}, "second": {1}}


@real_blas
async def test_with_blas_on_every_core_the_thread_executor_runs_one_node_at_a_time(restore_budget) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    ag.set_num_threads(cores)
    pool = executors.ThreadExecutor(2)
    release = threading.Event()
    order: list[str] = []

    def first() -> None:
        order.append("first in")
        assert release.wait(30)
        order.append("first out")

    def second() -> None:
        order.append("second in")

    try:
        a = pool.submit(first)
        _wait_until(lambda: order == ["first in"])
        b = pool.submit(second)
        _wait_until(lambda: _blas.budget._waiting == 1)  # the second waits for its turn
        release.set()
        await a
        await b
    finally:
        release.set()
        pool.close()
    assert order == ["first in", "first out", "second in"]
    assert _blas_threads() == {cores} and ag.get_num_threads() == cores


async def test_an_executor_that_does_not_share_the_cores_runs_its_nodes_side_by_side(restore_budget) -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    ag.set_num_threads(cores)  # one node at a time for a sharing executor
    pool = executors.ThreadExecutor(2, share_cores=False)
    both_in = threading.Barrier(2, timeout=30)
    try:
        a, b = pool.submit(both_in.wait), pool.submit(both_in.wait)
        await a
        await b
    finally:
        pool.close()
    assert repr(pool) == "ThreadExecutor(max_workers=2, share_cores=False)"
    assert _blas.budget._running == 0  # the budget never saw them
