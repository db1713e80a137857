"""Many graph tasks on one loop and across loops: correctness under concurrency, and the
fairness policy (a drive yields to the loop after ``Engine.nodes_per_turn`` NodeTasks, so
backward calls share the loop round-robin)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import aiograd as ag


def chain(x: ag.Tensor, n: int) -> ag.Tensor:
    """``n`` cheap nodes in a row (each ``* 1.0``), then a sum: n + 2 NodeTasks."""
    for _ in range(n):
        x = x * 1.0
    return x.sum()


# ------------------------------------------------------------------------------------ correctness
async def test_a_thousand_concurrent_grads_on_independent_graphs():
    rng = np.random.default_rng(0)
    weights = rng.standard_normal((4, 3))

    async def one(i: int) -> None:
        x = ag.tensor(rng.standard_normal((2, 4)) + i, requires_grad=True)
        w = ag.tensor(weights)
        y = (x @ w).tanh().sum() * float(i % 7 + 1)
        (g,) = await ag.grad(y, x)
        t = np.tanh(x.detach().numpy() @ weights)
        expected = ((1 - t**2) * (i % 7 + 1)) @ weights.T
        np.testing.assert_allclose(g.numpy(), expected, rtol=1e-12)

    await asyncio.gather(*(one(i) for i in range(1000)))
    stats = ag.get_engine().statistics()
    assert stats.graph_tasks_in_flight == 0 and stats.queue_depths == {"cpu": 0}


async def test_concurrent_backward_through_shared_leaves_sums_exactly():
    """100 backward calls on one loop through one leaf, interleaving (each has 400 nodes, more
    than a turn): .grad is exactly the sum (integer-valued, so any order is exact)."""
    w = ag.tensor([1.0, -2.0, 3.0], requires_grad=True)
    ag.get_engine().nodes_per_turn = 64

    async def one(k: int) -> None:
        await (chain(w, 400) * float(k)).backward()

    await asyncio.gather(*(one(k) for k in range(1, 101)))
    np.testing.assert_array_equal(w.grad.numpy(), [100 * 101 / 2] * 3)


def test_backward_from_several_loops_in_several_threads_sums_exactly():
    """Four threads, each with its own event loop (and engine), 50 backward calls each through
    one shared leaf: AccumulateGrad's per-leaf lock makes the sum exact."""
    w = ag.tensor(np.zeros(1000), requires_grad=True)
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        async def main() -> None:
            barrier.wait()  # start together
            await asyncio.gather(*((w * float(t + 1)).sum().backward() for _ in range(50)))

        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    np.testing.assert_array_equal(w.grad.numpy(), np.full(1000, 50.0 * (1 + 2 + 3 + 4)))


# ------------------------------------------------------------------------------------ fairness
async def nodes_run_by_others_while(probe, engine) -> int:
    """Run ``probe()`` and count the NodeTasks the engine ran for anyone meanwhile."""
    before = engine.nodes_executed
    await probe()
    return engine.nodes_executed - before


@pytest.mark.parametrize("turns", [True, False], ids=["turns", "no-turns"])
async def test_a_short_backward_is_not_stuck_behind_a_long_one(turns):
    """A 20,000-node backward is running; a 10-node one started after it finishes within a few
    turns of the long one, not after all of it. With nodes_per_turn=None the long backward holds
    the loop to its end instead (which shows that the first case can fail)."""
    engine = ag.get_engine()
    budget = engine.nodes_per_turn
    if not turns:
        engine.nodes_per_turn = None
    x = ag.tensor([1.0], requires_grad=True)
    long_loss = chain(x, 20_000)
    order: list[str] = []

    async def long() -> None:
        await long_loss.backward()
        order.append("long")

    async def probe() -> None:
        y = ag.tensor([2.0], requires_grad=True)
        await chain(y, 10).backward()
        order.append("probe")

    long_task = asyncio.get_running_loop().create_task(long())
    await asyncio.sleep(0)  # the long backward starts and runs its first turn
    ran = await nodes_run_by_others_while(probe, engine)
    await long_task
    if turns:
        assert order == ["probe", "long"]
        assert ran <= 2 * budget + 12, ran
    else:  # the long backward ran to its end in its first step, before the probe started
        assert order == ["long", "probe"]
        assert ran == 12


@pytest.mark.parametrize("in_flight", [4, 8])
async def test_latency_stays_bounded_under_a_steady_stream(in_flight):
    """A stream keeps ``in_flight`` backward calls of 2,000 nodes running, starting a new one as
    each ends. A probe of 600 nodes (three turns of 256) started mid-stream completes after at
    most (its turns + 1) rounds of the others' turns: the latency, in nodes run by anyone, is
    bounded by the number of calls in flight, not by the stream's total work."""
    engine = ag.get_engine()
    budget = engine.nodes_per_turn
    stop = False
    started = 0

    async def stream_slot() -> None:
        nonlocal started
        while not stop:
            started += 1
            await chain(ag.tensor([1.0], requires_grad=True), 2_000).backward()

    slots = [asyncio.get_running_loop().create_task(stream_slot()) for _ in range(in_flight)]
    for _ in range(3 * in_flight):  # let the stream get going
        await asyncio.sleep(0)

    async def probe() -> None:
        await chain(ag.tensor([2.0], requires_grad=True), 600).backward()

    ran = await nodes_run_by_others_while(probe, engine)
    stop = True
    await asyncio.gather(*slots)
    probe_turns = -(-602 // budget)
    bound = (probe_turns + 1) * (in_flight + 1) * budget
    assert ran <= bound, (ran, bound)
    assert started > in_flight  # the stream did keep arriving


async def test_a_long_backward_progresses_while_new_ones_keep_arriving():
    """Eight short backward calls are always in flight, a new one arriving as each ends, until
    the long one is done: it gets a turn every round, so it finishes after a bounded number of
    arrivals (about eight per round of turns)."""
    engine = ag.get_engine()
    budget = engine.nodes_per_turn
    x = ag.tensor([1.0], requires_grad=True)
    long_loss = chain(x, 10_000)
    long_done = False
    arrivals = 0

    async def stream_slot() -> None:
        nonlocal arrivals
        while not long_done:
            arrivals += 1
            await chain(ag.tensor([1.0], requires_grad=True), 300).backward()

    async def long() -> None:
        nonlocal long_done
        await long_loss.backward()
        long_done = True

    slots = [asyncio.get_running_loop().create_task(stream_slot()) for _ in range(8)]
    await asyncio.sleep(0)
    await long()
    await asyncio.gather(*slots)
    assert x.grad.item() == 1.0
    rounds = -(-10_002 // budget)
    assert 8 < arrivals <= 8 * (rounds + 2), arrivals


# ------------------------------------------------------------------------------------ statistics
async def test_statistics_report_queue_depths_and_executor_occupancy():
    engine = ag.get_engine()
    engine.offload_threshold = 0
    engine.stall_threshold = 0
    release = threading.Event()
    seen: list = []

    class Blocking(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            release.wait(10)
            return g

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (Blocking.apply(x) + Blocking.apply(x * 2)).sum()
    task = asyncio.get_running_loop().create_task(loss.backward())
    while engine.statistics().nodes_in_flight < 2:
        await asyncio.sleep(0)
    stats = engine.statistics()
    seen.append(stats)
    release.set()
    await task
    assert stats.graph_tasks_in_flight == 1
    assert stats.executor_occupancy["cpu"] == (2, engine.executor("cpu").capacity)
    assert set(stats.queue_depths) == {"cpu"}
    after = engine.statistics()
    assert after.executor_occupancy["cpu"][0] == 0 and after.queue_depths == {"cpu": 0}
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
