"""Executors: heavy nodes leave the loop, independent branches overlap, results stay exact."""

from __future__ import annotations

import asyncio
import contextvars
import random
import threading
import time

import numpy as np
import pytest

import aiograd as ag
from aiograd.executors import Executor, InlineExecutor, ThreadExecutor

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


class Heavy(ag.Node):
    """An identity node that claims to be expensive, and runs ``probe`` in its apply."""

    def __init__(self, edges, probe=None):
        super().__init__(edges)
        self.probe = probe

    def cost(self, grads):
        return 1e12

    def apply(self, grads):
        if self.probe is not None:
            self.probe()
        return [grads[0]] * len(self.next_edges)


def heavy_branches(x: ag.Tensor, n: int, probe=None) -> ag.Tensor:
    """``n`` Heavy nodes side by side between the root and ``x``'s accumulator."""
    acc = ag._core._node.grad_accumulator(x)
    branches = tuple((Heavy(((acc, 0),), probe), 0) for _ in range(n))
    root = ag.Tensor._wrap(np.ones(x.shape))
    root._requires_grad, root.grad_fn = True, Heavy(branches)
    return root


def use(executor: Executor, **engine_options) -> ag.Engine:
    engine = ag.get_engine()
    engine.executors["cpu"] = executor
    for name, value in engine_options.items():
        setattr(engine, name, value)
    return engine


async def test_independent_heavy_branches_run_at_the_same_time():
    # Each branch waits until the other is running too: a serial engine would time out.
    both_running = threading.Barrier(2, timeout=60)  # bounds a hang
    engine = use(ThreadExecutor(2, share_cores=False))  # (the BLAS budget may allow one at a time)
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    await heavy_branches(x, 2, probe=both_running.wait).backward(ag.ones(2))
    assert x.grad.tolist() == [2.0, 2.0]
    stats = engine.statistics()
    assert stats.max_nodes_in_flight >= 2 and stats.nodes_offloaded >= 2
    assert stats.nodes_in_flight == 0 and stats.graph_tasks_in_flight == 0


class CountsInFlight(ThreadExecutor):
    """A ThreadExecutor that counts its calls in flight (on the loop, as the engine does) and
    sets ``full`` once ``capacity`` of them are."""

    def __init__(self, max_workers: int) -> None:
        super().__init__(max_workers, share_cores=False)  # the engine's bound, not the budget's
        self.in_flight = self.peak = 0
        self.full = threading.Event()

    def submit(self, fn):
        future = super().submit(fn)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.capacity:
            self.full.set()
        future.add_done_callback(self._came_back)
        return future

    def _came_back(self, future) -> None:
        self.in_flight -= 1


async def test_capacity_bounds_the_nodes_in_flight():
    # The first two branches (one per thread) meet at a barrier, so two run at once, and stay
    # running until the engine has filled the executor's capacity (the other two queued in the
    # pool behind them, four more waiting in the engine): the bound is reached, whatever the
    # threads' timing, and must hold.
    running, peak, lock = [0], [0], threading.Lock()
    held = [0]
    both_running = threading.Barrier(2, timeout=60)  # bounds a hang
    executor = CountsInFlight(2)
    assert executor.capacity == 4  # two threads, each with one node queued behind it

    def probe():
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            hold = held[0] < 2
            held[0] += hold
        if hold:
            both_running.wait()
            assert executor.full.wait(60), "the engine never filled the executor's capacity"
        with lock:
            running[0] -= 1

    engine = use(executor)
    x = ag.tensor([1.0], requires_grad=True)
    await heavy_branches(x, 8, probe=probe).backward(ag.ones(1))
    assert x.grad.tolist() == [8.0] and held == [2]
    # Two ran at once (the threads, no more); the engine kept capacity in flight, no more.
    assert peak[0] == 2
    assert executor.peak == engine.statistics().max_nodes_in_flight == 4
    assert executor.in_flight == engine.statistics().nodes_in_flight == 0


async def test_inline_executor_and_no_threshold_keep_everything_on_the_loop():
    loop_thread = threading.get_ident()
    threads: list[int] = []
    engine = use(InlineExecutor())
    x = ag.tensor([1.0], requires_grad=True)
    await heavy_branches(x, 3, probe=lambda: threads.append(threading.get_ident())).backward(ag.ones(1))
    engine = use(ThreadExecutor(2), offload_threshold=None)
    await heavy_branches(x, 3, probe=lambda: threads.append(threading.get_ident())).backward(ag.ones(1))
    assert set(threads) == {loop_thread} and engine.statistics().nodes_offloaded == 0


class Costs(Heavy):
    """``Heavy`` with the cost it claims given: between the offload and stall thresholds of
    ``use_thresholds``, it leaves the loop only to overlap other heavy work."""

    def __init__(self, edges, cost, probe=None):
        super().__init__(edges, probe)
        self.claimed = cost

    def cost(self, grads):
        return self.claimed


class PassesOn(Costs):
    """A light node, as a view's backward is: the engine offloads it only past the stall bound,
    and does not count it as work to overlap."""

    light = True


MEDIUM, STALL = 1e4, 1e6  # ns: a node over the offload threshold, and one over the stall bound


def use_thresholds() -> ag.Engine:
    return use(ThreadExecutor(2, share_cores=False), offload_threshold=MEDIUM / 10, stall_threshold=STALL)


def records_thread(threads: list[int], name: str):
    return lambda: threads.append((name, threading.get_ident()))


async def test_a_node_beside_only_light_nodes_of_its_call_stays_on_the_loop():
    # The root makes a medium node and a light one ready together (a view's backward): the light
    # one would be all the overlap, and the loop would then wait for the medium one's round trip.
    engine = use_thresholds()
    threads: list[tuple[str, int]] = []
    x = ag.tensor([1.0], requires_grad=True)
    acc = ag._core._node.grad_accumulator(x)
    light = PassesOn(((acc, 0),), MEDIUM, records_thread(threads, "light"))
    medium = Costs(((acc, 0),), MEDIUM, records_thread(threads, "medium"))  # (runs first)
    root = ag.Tensor._wrap(np.ones(1))
    root._requires_grad, root.grad_fn = True, Costs(((medium, 0), (light, 0)), 0.0)
    await root.backward(ag.ones(1))
    assert x.grad.tolist() == [2.0]
    assert threads == [("medium", threading.get_ident()), ("light", threading.get_ident())]
    assert engine.statistics().nodes_offloaded == 0


async def test_a_light_node_over_the_stall_bound_leaves_the_loop_and_under_it_stays():
    # (a reshape's copy of a huge gradient would hold the loop as long as any other node)
    engine = use_thresholds()
    threads: list[tuple[str, int]] = []
    x = ag.tensor([1.0], requires_grad=True)
    acc = ag._core._node.grad_accumulator(x)
    for name, cost in (("huge", STALL), ("medium", MEDIUM)):
        root = ag.Tensor._wrap(np.ones(1))
        root._requires_grad, root.grad_fn = True, PassesOn(((acc, 0),), cost, records_thread(threads, name))
        await root.backward(ag.ones(1))
    assert x.grad.tolist() == [2.0]
    assert [name for name, _ in threads] == ["huge", "medium"]
    assert threads[0][1] != threading.get_ident() and threads[1][1] == threading.get_ident()
    assert engine.statistics().nodes_offloaded == 1


async def test_a_node_beside_a_ready_node_of_its_call_that_is_not_light_leaves_the_loop():
    # Two branches, each a tiny node (a branch's ``sum``) before a medium one: the first medium
    # node leaves the loop since the other branch's tiny node waits (it leads to more work), the
    # second since the first is in flight. A light node waiting (a view's backward) alone would
    # not count (the test above), nor does it leave the loop itself whatever its estimate.
    engine = use_thresholds()
    threads: list[tuple[str, int]] = []
    x = ag.tensor([[1.0]], requires_grad=True)
    acc = ag._core._node.grad_accumulator(x)
    view = x.reshape(1)  # ViewBackward0: light
    assert view.grad_fn.light and not Costs.light
    branches = []
    for i in range(2):
        medium = Costs(((acc, 0),), MEDIUM, records_thread(threads, f"m{i}"))
        branches.append((Costs(((medium, 0),), 0.0), 0))
    root = ag.Tensor._wrap(np.ones(1))
    root._requires_grad, root.grad_fn = True, Costs((*branches, (view.grad_fn, 0)), 0.0)
    await root.backward(ag.ones(1))
    assert x.grad.tolist() == [[3.0]]
    assert sorted(name for name, _ in threads) == ["m0", "m1"]
    assert threading.get_ident() not in {ident for _, ident in threads}
    assert engine.statistics().nodes_offloaded == 2


async def test_a_node_overlaps_a_node_of_its_call_already_in_flight():
    # The stalling node goes first (created last: the higher sequence number) and is in flight
    # when the medium one is ready: the two run side by side, both off the loop.
    engine = use_thresholds()
    threads: list[tuple[str, int]] = []
    x = ag.tensor([1.0], requires_grad=True)
    acc = ag._core._node.grad_accumulator(x)
    medium = Costs(((acc, 0),), MEDIUM, records_thread(threads, "medium"))
    stalls = Costs(((acc, 0),), STALL, records_thread(threads, "stalls"))
    root = ag.Tensor._wrap(np.ones(1))
    root._requires_grad, root.grad_fn = True, Costs(((medium, 0), (stalls, 0)), 0.0)
    await root.backward(ag.ones(1))
    assert x.grad.tolist() == [2.0]
    assert threading.get_ident() not in {ident for _, ident in threads}
    assert engine.statistics().nodes_offloaded == 2


async def test_a_node_overlaps_another_backward_call_on_the_loop():
    # Call A's stalling node is in flight when call B runs its lone medium node: B's leaves the
    # loop to A; alone, the same medium node stays.
    engine = use_thresholds()
    threads: list[tuple[str, int]] = []

    def lone(cost: float, name: str) -> tuple[ag.Tensor, ag.Tensor]:
        x = ag.tensor([1.0], requires_grad=True)
        root = ag.Tensor._wrap(np.ones(1))
        node = Costs(((ag._core._node.grad_accumulator(x), 0),), cost, records_thread(threads, name))
        root._requires_grad, root.grad_fn = True, node
        return x, root

    (xa, a), (xb, b) = lone(STALL, "a"), lone(MEDIUM, "b")
    await asyncio.gather(a.backward(ag.ones(1)), b.backward(ag.ones(1)))
    assert xa.grad.tolist() == xb.grad.tolist() == [1.0]
    assert threading.get_ident() not in {ident for _, ident in threads}
    xc, c = lone(MEDIUM, "c")
    await c.backward(ag.ones(1))
    assert threads[-1] == ("c", threading.get_ident())
    assert engine.statistics().nodes_offloaded == 2


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
async def test_offloaded_math_sees_the_callers_context_and_grad_mode():
    seen: list[tuple[str, bool, bool]] = []
    loop_thread = threading.get_ident()

    def probe():
        seen.append((request_id.get(), ag.is_grad_enabled(), threading.get_ident() != loop_thread))

    use(ThreadExecutor(2))
    x = ag.tensor([1.0], requires_grad=True)
    request_id.set("req-7")
    await heavy_branches(x, 2, probe=probe).backward(ag.ones(1))
    await heavy_branches(x, 1, probe=probe).backward(ag.ones(1), create_graph=True)
    assert seen[:2] == [("req-7", False, True)] * 2
    assert seen[2][:2] == ("req-7", True)  # a lone node: offloaded only as it is over the stall bound
    x.grad = None


class Refuses(ThreadExecutor):
    """An executor that takes no work (one that was shut down, say)."""

    def submit(self, fn):
        raise RuntimeError("cannot schedule new futures after shutdown")


@pytest.mark.aiograd(backends=["asyncio"])  # the engine's bookkeeping, not the loop's
async def test_an_executor_that_refuses_a_node_fails_the_backward_and_counts_nothing_in_flight():
    engine = use(Refuses(2))
    x = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot schedule new futures after shutdown") as info:
        await heavy_branches(x, 2).backward(ag.ones(1))
    assert "while running Heavy" in info.value.__notes__
    stats = engine.statistics()
    assert (stats.nodes_in_flight, stats.graph_tasks_in_flight, stats.executor_occupancy["cpu"][0]) == (0, 0, 0)
    use(ThreadExecutor(2))  # the engine is usable: the next backward runs
    await heavy_branches(x, 2).backward(ag.ones(1))
    assert x.grad.tolist() == [2.0]


async def test_an_error_in_the_executor_fails_the_backward_and_names_the_node():
    def probe():
        raise ArithmeticError("bad math in a thread")

    engine = use(ThreadExecutor(2))
    x = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(ArithmeticError, match="bad math in a thread") as info:
        await heavy_branches(x, 2, probe=probe).backward(ag.ones(1))
    assert "while running Heavy" in info.value.__notes__
    assert x.grad is None
    # The other branch may still be running in its thread; its result is dropped on arrival.
    deadline = time.monotonic() + 60  # a bounded poll: bounds a hang, not a speed check
    while engine.statistics().nodes_in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    assert engine.statistics().nodes_in_flight == 0
    await heavy_branches(x, 2).backward(ag.ones(1))  # the engine keeps serving
    assert x.grad.tolist() == [2.0] and engine.statistics().nodes_in_flight == 0


class ShufflingExecutor(Executor):
    """Runs each call at once on the loop but completes the futures in a seeded random order,
    so that offloaded nodes finish in an order unrelated to the one they started in."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    @property
    def capacity(self) -> int:
        return 8

    def submit(self, fn):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        result = fn()

        def finish(delay: int) -> None:
            if delay:
                loop.call_soon(finish, delay - 1)
            elif not future.done():
                future.set_result(result)

        finish(self._rng.randrange(6))
        return future


def fan_in_graph(seed: int) -> tuple[list[ag.Tensor], ag.Tensor]:
    """Many branches whose float64 gradients meet in one leaf: the sum's order shows in the bits."""
    rng = np.random.default_rng(seed)
    x = ag.tensor(rng.standard_normal(64), requires_grad=True)
    w = [ag.tensor(rng.standard_normal(64) * 10.0 ** rng.integers(-8, 8)) for _ in range(12)]
    parts = [(x * wi).sin() * wi for wi in w]
    return [x], sum(p.sum() for p in parts[1:]) + parts[0].sum()


async def test_deterministic_mode_is_bitwise_stable_under_shuffled_completion():
    ag.use_deterministic_algorithms(True)
    try:
        results = []
        for seed in range(6):
            executor = ShufflingExecutor(seed) if seed else InlineExecutor()
            use(executor, offload_threshold=0.0, stall_threshold=0.0)
            (x,), loss = fan_in_graph(0)
            await loss.backward()
            results.append(x.grad.numpy().tobytes())
        assert all(r == results[0] for r in results)
        assert ag.are_deterministic_algorithms_enabled()
    finally:
        ag.use_deterministic_algorithms(False)


async def test_deterministic_mode_matches_the_plain_serial_values():
    use(InlineExecutor())
    (x,), loss = fan_in_graph(1)
    await loss.backward()
    plain = x.grad.numpy().copy()
    ag.use_deterministic_algorithms(True)
    try:
        use(ShufflingExecutor(3), offload_threshold=0.0, stall_threshold=0.0)
        (y,), loss = fan_in_graph(1)
        await loss.backward()
    finally:
        ag.use_deterministic_algorithms(False)
    np.testing.assert_allclose(y.grad.numpy(), plain, rtol=1e-12)


async def test_the_loop_stays_responsive_during_a_heavy_backward():
    """A ticker keeps running while a quarter second of matmuls runs in the executor."""
    rng = np.random.default_rng(0)
    n = 512  # (each node's two products estimated at 8 ms: over the 5 ms stall bound)
    a = ag.tensor(rng.standard_normal((n, n)), requires_grad=True)
    y = a
    for _ in range(12):
        y = (y @ a) * (1.0 / n)
    use(ThreadExecutor(2))
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = time.perf_counter()
    await y.sum().backward()
    elapsed = time.perf_counter() - start
    stop.set()
    await tick
    assert ag.get_engine().statistics().nodes_offloaded >= 12
    # Generous bound: each matmul node runs in a thread, the loop only does bookkeeping.
    assert max(gaps) < max(0.25, elapsed / 4), (max(gaps), elapsed)


def test_set_executor_checks_its_argument_and_restores_the_default():
    with pytest.raises(TypeError, match="expected an aiograd.executors.Executor"):
        ag.set_executor("cpu", object())  # type: ignore[arg-type]
    custom = ThreadExecutor(1)
    ag.set_executor("cpu", custom)
    try:
        assert ag.get_executor("cpu") is custom
    finally:
        ag.set_executor("cpu", None)
    assert isinstance(ag.get_executor("cpu"), ThreadExecutor) and ag.get_executor("cpu") is not custom
    custom.close()
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        ThreadExecutor(0)


async def test_a_cancelled_backward_cancels_the_calls_still_queued_in_its_executor():
    """One thread: the first branch blocks it, the second waits in the pool's queue. Cancelling
    the backward cancels that queued call (it never runs); the running one finishes, ignored."""
    started, release = threading.Event(), threading.Event()
    ran = []

    def probe():
        ran.append(threading.current_thread().name)
        if len(ran) == 1:
            started.set()
            release.wait(timeout=30)  # bounded: released below

    executor = ThreadExecutor(1)
    engine = use(executor)
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    backward = asyncio.ensure_future(heavy_branches(x, 2, probe=probe).backward(ag.ones(2)))
    await asyncio.to_thread(started.wait, 30)
    assert engine.statistics().nodes_in_flight == 2  # one running, one queued in the pool
    backward.cancel()
    with pytest.raises(asyncio.CancelledError):
        await backward
    release.set()
    await asyncio.to_thread(executor._pool.shutdown, wait=True)  # the running call ends
    for _ in range(10):  # loop turns (not time) for its result to reach the loop and be dropped
        if not engine.statistics().nodes_in_flight:
            break
        await asyncio.sleep(0)
    assert len(ran) == 1 and x.grad is None
    assert engine.statistics().nodes_in_flight == 0


@pytest.mark.parametrize("dtype, scale", [(np.float64, 1.0), (np.float32, 0.5)])
def test_product_nodes_estimate_their_flops_and_single_precision_halves_them(dtype, scale):
    from aiograd._base._cost import NS_PER_FLOP

    a = ag.tensor(np.ones((64, 128), dtype), requires_grad=True)
    b = ag.tensor(np.ones((128, 32), dtype), requires_grad=True)
    y = a @ b
    assert y.grad_fn.cost([ag.ones_like(y)]) == pytest.approx(2 * (2 * 64 * 128 * 32) * NS_PER_FLOP * scale)
    # a convolution: each output gradient element times a filter's 16 * 3 * 3 taps, once per
    # gradient wanted (the input's here; a weight without grad adds no product)
    x = ag.tensor(np.ones((2, 16, 8, 8), dtype), requires_grad=True)
    w = ag.tensor(np.ones((4, 16, 3, 3), dtype))
    out = ag.nn.functional.conv2d(x, w, padding=1)
    one = 2 * out.numel() * 144 * NS_PER_FLOP * scale
    assert out.grad_fn.cost([ag.ones_like(out)]) == pytest.approx(one)
    w.requires_grad_()
    out = ag.nn.functional.conv2d(x, w, padding=1)
    assert out.grad_fn.cost([ag.ones_like(out)]) == pytest.approx(2 * one)
