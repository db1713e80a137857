"""Cancelling a backward (task.cancel(), asyncio.timeout, anyio cancel scopes) cancels its
GraphTask: NodeTasks dropped wherever they wait, executor results discarded, the engine keeps
serving, no task leaked, the GraphTask's memory released; and ``backward(atomic=True)``, whose
leaf accumulation is all-or-nothing."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref

import anyio
import numpy as np
import pytest

import aiograd as ag
from aiograd import Function
from aiograd._engine import GraphTask, current_graph_task

pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "anyio"])  # and as anyio's root task: its cancel scopes


class Gate(Function):
    """Identity whose backward waits for ``Gate.event`` (set per test) and records its
    GraphTask, so a test can cancel while the backward is parked here."""

    event: asyncio.Event
    reached: asyncio.Event
    graph_tasks: list

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    async def backward(ctx, g):
        Gate.graph_tasks.append(weakref.ref(current_graph_task.get()))
        Gate.reached.set()
        await Gate.event.wait()
        return g


@pytest.fixture
def gate():
    # (asyncio.Event binds to a loop when first awaited, not when made: the test's loop)
    Gate.event = asyncio.Event()
    Gate.reached = asyncio.Event()
    Gate.graph_tasks = []
    yield Gate
    Gate.event.set()


def graph_with_a_gate(w: ag.Tensor, v: ag.Tensor) -> ag.Tensor:
    """w's branch (recorded last, so it runs first) reaches its leaf before the gate's branch
    parks; v is reached only after the gate."""
    gated = Gate.apply(v * 3.0).sum()
    return gated + (w * 2.0).sum()


def graph_tasks_alive() -> int:
    gc.collect()
    return sum(type(o) is GraphTask for o in gc.get_objects())


async def settle() -> None:
    """One trip through the loop: done callbacks of finished tasks run."""
    await asyncio.sleep(0)


async def check_released(gate_cls) -> None:
    await settle()
    gc.collect()
    assert all(ref() is None for ref in gate_cls.graph_tasks)
    assert ag.get_engine().statistics().graph_tasks_in_flight == 0


# ------------------------------------------------------------------------------------ the ways
async def test_task_cancel(gate):
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    v = ag.tensor([1.0], requires_grad=True)
    task = asyncio.get_running_loop().create_task(graph_with_a_gate(w, v).backward())
    await gate.reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Documented: w's AccumulateGrad ran before the cancel, v's never did.
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
    assert v.grad is None
    await check_released(gate)


async def test_asyncio_timeout(gate):
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    v = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0):
            await graph_with_a_gate(w, v).backward()
    assert v.grad is None
    await check_released(gate)


async def test_anyio_cancel_scope(gate):
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    v = ag.tensor([1.0], requires_grad=True)
    with anyio.CancelScope() as scope:

        async def cancel_when_parked():
            await gate.reached.wait()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_when_parked)
            await graph_with_a_gate(w, v).backward()
    assert scope.cancelled_caught
    assert v.grad is None
    await check_released(gate)


async def test_anyio_move_on_after_grad(gate):
    v = ag.tensor([1.0], requires_grad=True)
    with anyio.move_on_after(0) as scope:
        await ag.grad(Gate.apply(v * 3.0).sum(), v)
    assert scope.cancelled_caught
    await check_released(gate)


async def test_the_engine_keeps_serving_after_a_cancel(gate):
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    v = ag.tensor([1.0], requires_grad=True)
    task = asyncio.get_running_loop().create_task(graph_with_a_gate(w, v).backward())
    others = [asyncio.get_running_loop().create_task(ag.grad((w * float(k)).sum(), w)) for k in range(5)]
    await gate.reached.wait()
    task.cancel()
    results = await asyncio.gather(*others)
    for k, (g,) in enumerate(results):
        np.testing.assert_array_equal(g.numpy(), [float(k)] * 2)
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.event.set()
    (g,) = await ag.grad(graph_with_a_gate(w, v), v)
    np.testing.assert_array_equal(g.numpy(), [3.0])


# ------------------------------------------------------------------------------------ where it waits
async def test_nodes_waiting_on_a_device_queue_are_dropped(gate):
    """The GraphTask's NodeTasks on sim:0's shared queue are skipped, another GraphTask using
    sim:0 at the same time completes, and the worker ends."""
    v = ag.tensor([1.0, 2.0], requires_grad=True)
    u = ag.tensor([3.0], requires_grad=True)
    on_device = (Gate.apply(v.to("sim:0") * 2.0) * 5.0).to("cpu").sum()
    task = asyncio.get_running_loop().create_task(on_device.backward())
    await gate.reached.wait()  # parked on the sim:0 worker
    other = asyncio.get_running_loop().create_task(ag.grad((u.to("sim:0") * 4.0).to("cpu").sum(), u))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.event.set()
    (g,) = await other
    np.testing.assert_array_equal(g.numpy(), [4.0])
    await settle()
    assert v.grad is None
    queue = ag.get_engine()._device_queues[ag.device("sim:0")]
    assert not queue.has_work() and queue.worker is None
    await check_released(gate)


async def test_results_in_flight_in_an_executor_are_discarded():
    engine = ag.get_engine()
    engine.offload_threshold = 0
    engine.stall_threshold = 0
    started = threading.Event()
    release = threading.Event()

    class Blocking(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            started.set()
            release.wait(10)
            return g

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (Blocking.apply(x * 2.0) * 3.0).sum()
    task = asyncio.get_running_loop().create_task(loss.backward())
    while not started.is_set():
        await asyncio.sleep(0)  # polling a thread's event: the loop must keep turning
    assert engine.statistics().nodes_in_flight == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    while engine.statistics().nodes_in_flight:
        await asyncio.sleep(0)  # the thread finishes; its result comes back and is dropped
    await settle()
    assert x.grad is None
    assert engine.statistics().executor_occupancy["cpu"][0] == 0
    assert graph_tasks_alive() == 0


async def test_cancelling_many_while_others_complete():
    """Half of 200 concurrent backward calls are cancelled at once while parked; the other half
    complete with the right gradients; nothing is left."""
    event = asyncio.Event()
    parked = 0

    class Park(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            nonlocal parked
            parked += 1
            await event.wait()
            return g

    leaves = [ag.tensor([float(i)], requires_grad=True) for i in range(200)]
    tasks = [
        asyncio.get_running_loop().create_task(ag.grad(Park.apply(x * 2.0).sum(), x)) for x in leaves
    ]
    while parked < 200:
        await asyncio.sleep(0)
    for task in tasks[::2]:
        task.cancel()
    event.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for i, result in enumerate(results):
        if i % 2 == 0:
            assert isinstance(result, asyncio.CancelledError)
        else:
            np.testing.assert_array_equal(result[0].numpy(), [2.0])
    del results, result, tasks, task  # the CancelledErrors' tracebacks hold the drives' frames
    await settle()
    assert graph_tasks_alive() == 0
    assert ag.get_engine().statistics().graph_tasks_in_flight == 0


# ------------------------------------------------------------------------------------ atomic
async def test_atomic_backward_changes_no_grad_when_cancelled(gate):
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    v = ag.tensor([1.0], requires_grad=True)
    w.grad = ag.tensor([10.0, 10.0])
    task = asyncio.get_running_loop().create_task(graph_with_a_gate(w, v).backward(atomic=True))
    await gate.reached.wait()
    assert w.grad.tolist() == [10.0, 10.0]  # staged, not added
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert w.grad.tolist() == [10.0, 10.0] and v.grad is None
    await check_released(gate)


async def test_atomic_backward_changes_no_grad_when_it_fails():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    w = ag.tensor([1.0, 2.0], requires_grad=True)
    v = ag.tensor([1.0], requires_grad=True)
    loss = Boom.apply(v * 3.0).sum() + (w * 2.0).sum()
    with pytest.raises(ValueError, match="boom"):
        await loss.backward(atomic=True, retain_graph=True)
    assert w.grad is None and v.grad is None
    with pytest.raises(ValueError, match="boom"):
        await loss.backward()  # not atomic: w, reached first, got its gradient
    assert w.grad.tolist() == [2.0, 2.0] and v.grad is None


async def test_atomic_backward_equals_a_plain_one():
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s) for s in ((3, 4), (4,), (3,)))

    def loss(x, y, z):
        return ((x @ y).tanh() * z).sum() + (x * x).sum()

    plain = [ag.tensor(v, requires_grad=True) for v in (a, b, c)]
    staged = [ag.tensor(v, requires_grad=True) for v in (a, b, c)]
    for t in plain + staged:
        t.grad = ag.ones_like(t)
    await loss(*plain).backward()
    await loss(*staged).backward(atomic=True)
    for p, s in zip(plain, staged):
        np.testing.assert_array_equal(p.grad.numpy(), s.grad.numpy())


async def test_atomic_backward_with_inputs_leaf_and_non_leaf():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    y = ag.tensor([5.0], requires_grad=True)
    loss = (h * h).sum() + (y * x).sum()
    await loss.backward(inputs=[h, y], atomic=True)
    np.testing.assert_array_equal(h.grad.numpy(), [6.0, 12.0])
    np.testing.assert_array_equal(y.grad.numpy(), [3.0])
    assert x.grad is None


async def test_atomic_commit_runs_post_accumulate_hooks_after_every_leaf_is_updated():
    w = ag.tensor([1.0], requires_grad=True)
    v = ag.tensor([2.0], requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(("w", w.grad.item(), v.grad and v.grad.item())))
    v.register_post_accumulate_grad_hook(lambda t: seen.append(("v", w.grad.item(), v.grad.item())))
    await (w * 3.0 + v * 5.0).sum().backward(atomic=True)
    # Whichever hook runs first already sees both leaves' gradients.
    assert sorted(seen) == [("v", 3.0, 5.0), ("w", 3.0, 5.0)]


async def test_atomic_leaf_tensor_hooks_run_as_reached_and_shape_what_is_committed():
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: g * 10)
    await (w * 2.0).sum().backward(atomic=True)
    np.testing.assert_array_equal(w.grad.numpy(), [20.0, 20.0])


async def test_atomic_backward_on_a_leaf_itself():
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    await w.backward(ag.tensor([3.0, 4.0]), atomic=True)
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 4.0])


async def test_a_failure_frees_a_device_worker_stuck_in_the_failed_calls_node():
    """A node on sim:0 awaits something that never happens; another branch of the same call
    fails. The call raises its error, the stuck node is cancelled, and sim:0 keeps serving."""
    never = asyncio.Event()
    parked = asyncio.Event()

    class Stuck(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            parked.set()
            await never.wait()
            return g

    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            await parked.wait()
            raise ValueError("boom")

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    failing = Boom.apply(x * 2.0).sum()  # recorded first: runs after the sim:0 branch started
    loss = failing + Stuck.apply(x.to("sim:0")).to("cpu").sum()
    with pytest.raises(ValueError, match="boom"):
        await loss.backward()
    async with asyncio.timeout(30):  # fails, rather than hangs, if sim:0's worker is stuck
        (g,) = await ag.grad((x.to("sim:0") * 3.0).to("cpu").sum(), x)
    np.testing.assert_array_equal(g.numpy(), [3.0, 3.0])
    await settle()
    assert ag.get_engine()._device_queues[ag.device("sim:0")].worker is None
