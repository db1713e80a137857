"""Reentrant backward: a backward awaited inside a node, hook or callback of a running backward
(docs/engine.md, "Reentrant backward"; PyTorch's "reentrant backward" in its autograd notes). Several tests are PyTorch's
own (test_autograd.py) rewritten for aiograd; their names say which."""

from __future__ import annotations

import asyncio
import gc
import sys
import weakref

import numpy as np
import pytest

import aiograd as ag
from aiograd import Function
from aiograd._engine import current_graph_task
from aiograd._engine.reentrant import DEFAULT_MAX_REENTRANT_DEPTH, FRAMES_PER_LEVEL


@pytest.fixture(params=["nested", "overflow"])
def nesting(request):
    """How the test's engine runs reentrant calls: nested as usual, or each on a fresh worker
    ("overflow"); the test gets the engine from ``loop_engine`` (the loop exists only then)."""
    return request.param


def loop_engine(nesting: str) -> ag.Engine:
    """The running loop's engine, set up for ``nesting``."""
    engine = ag.get_engine()
    if nesting == "overflow":
        engine.max_reentrant_depth = 0
    return engine


class Reentrant(Function):
    """PyTorch's DeepReentrant: forward computes x - 1 (recorded under enable_grad and kept);
    backward runs a nested backward through another Reentrant until the value drops below 0."""

    log: list[str] | None = None

    @staticmethod
    def forward(ctx, x):
        with ag.enable_grad():
            ctx.x = x.detach().requires_grad_() - 1
        return ctx.x.detach()

    @staticmethod
    async def backward(ctx, g):
        if Reentrant.log is not None:
            Reentrant.log.append("Reentrant")
        if ctx.x.item() < 0:
            return g
        with ag.enable_grad():
            await Reentrant.apply(ctx.x).sum().backward()
        return g


# ------------------------------------------------------------------------------------ basics
async def test_simple_reentrant(nesting):
    """test_simple_reentrant: the child's backward fills ctx.x.grad, used by the parent."""
    engine = loop_engine(nesting)
    y_data = ag.randn(2, 2, dtype=ag.float64)

    class Reenter(Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.y = y_data.detach().requires_grad_()
                ctx.output_var = ctx.x * ctx.y
            return ctx.output_var.detach()

        @staticmethod
        async def backward(ctx, grad_output):
            with ag.enable_grad():
                await ctx.output_var.sum().backward()
            return ctx.x.grad * grad_output

    x = ag.randn(2, 2, dtype=ag.float64, requires_grad=True)
    await Reenter.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y_data.detach().numpy())
    stats = engine.statistics()
    assert stats.deepest_reentrant_depth == 1
    assert stats.reentrant_workers_started == (1 if engine.max_reentrant_depth == 0 else 0)
    assert stats.graph_tasks_in_flight == 0


async def test_child_graph_task_is_one_level_deeper_and_shares_the_queue():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            parent = current_graph_task.get()
            leaf = ag.tensor([1.0, 2.0], requires_grad=True)

            def in_child(grad):
                seen["child"] = current_graph_task.get()

            leaf.register_hook(in_child)
            with ag.enable_grad():
                await (leaf * 2).sum().backward()
            seen["parent"] = parent
            seen["after"] = current_graph_task.get()
            return g

    x = ag.tensor([1.0], requires_grad=True)
    await Probe.apply(x).sum().backward()
    parent, child = seen["parent"], seen["child"]
    assert parent.reentrant_depth == 0 and child.reentrant_depth == 1
    assert child.queue is parent.queue
    assert seen["after"] is parent


async def test_backward_outside_a_running_backward_is_not_reentrant():
    """A task spawned inside a hook inherits its context; once that backward is over, a
    backward in the task is a fresh top-level one."""
    spawned = []

    def hook(grad):
        async def later():
            await done.wait()
            z = ag.tensor([3.0], requires_grad=True)
            with ag.enable_grad():  # the hook's mode (the backward's create_graph) carried over
                await (z * z).sum().backward()
            return z.grad, ag.get_engine().statistics().deepest_reentrant_depth

        spawned.append(asyncio.get_running_loop().create_task(later()))

    done = asyncio.Event()
    x = ag.tensor([1.0], requires_grad=True)
    x.register_hook(hook)
    await (x * 2).sum().backward()
    done.set()
    z_grad, depth = await spawned[0]
    np.testing.assert_array_equal(z_grad.numpy(), [6.0])
    assert depth == 0


# ------------------------------------------------------------------------------------ depth
def frames_of_one_level() -> int:
    """Python frames between two nested levels of Reentrant's backward, measured."""
    depths: list[int] = []

    class Measure(Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        async def backward(ctx, g):
            frame, n = sys._getframe(), 0
            while frame is not None:
                n, frame = n + 1, frame.f_back
            depths.append(n)
            if ctx.x.item() >= 0:
                with ag.enable_grad():
                    await Measure.apply(ctx.x).sum().backward()
            return g

    async def main():
        v = ag.tensor(3.0, requires_grad=True)
        await Measure.apply(v).sum().backward()

    asyncio.run(main())
    steps = {b - a for a, b in zip(depths, depths[1:])}
    assert len(steps) == 1, depths
    return steps.pop()


def test_frames_per_level_match_the_default_limit():
    """The default depth limit is derived from this count: nesting to the limit must stay
    within half the default recursion limit (the rest is for callers and user code)."""
    measured = frames_of_one_level()
    assert measured <= FRAMES_PER_LEVEL, f"one level now costs {measured} frames"
    assert DEFAULT_MAX_REENTRANT_DEPTH * FRAMES_PER_LEVEL <= 1000 // 2
    assert DEFAULT_MAX_REENTRANT_DEPTH >= 40


# Not under the anyio variant: asyncio's own loop again, at seconds a run.
@pytest.mark.aiograd(backends=["asyncio", "uvloop"])
@pytest.mark.slow
async def test_deep_reentrant_twice():
    """test_deep_reentrant, 10,000 levels instead of 2,000: past the limit each level moves to a
    fresh worker task, so no depth overflows the stack; a second run works the same."""
    engine = ag.get_engine()
    for depth in (10_000, 10_000):
        v = ag.tensor(float(depth), requires_grad=True)
        await Reentrant.apply(v).sum().backward()
        assert v.grad.item() == 1.0
    stats = engine.statistics()
    assert stats.deepest_reentrant_depth == 10_000
    # Each worker nests DEFAULT_MAX_REENTRANT_DEPTH levels, then starts the next one.
    per_run = 10_000 // (DEFAULT_MAX_REENTRANT_DEPTH + 1)
    assert stats.reentrant_workers_started == 2 * per_run
    assert stats.graph_tasks_in_flight == 0


async def test_deep_reentrant_with_a_low_recursion_limit():
    """The stack check moves work to a fresh task near whatever the recursion limit is."""
    old = sys.getrecursionlimit()
    engine = ag.get_engine()
    engine.max_reentrant_depth = 10_000  # only the stack check stops the nesting
    sys.setrecursionlimit(400)
    try:
        v = ag.tensor(300.0, requires_grad=True)
        await Reentrant.apply(v).sum().backward()
    finally:
        sys.setrecursionlimit(old)
    assert v.grad.item() == 1.0
    assert engine.statistics().reentrant_workers_started > 0


def test_max_reentrant_depth_must_not_be_negative():
    with pytest.raises(ValueError, match="max_reentrant_depth must be >= 0, got -1"):
        ag.Engine(asyncio.new_event_loop(), max_reentrant_depth=-1)


# ------------------------------------------------------------------------------------ priority
async def test_reentrant_priority(nesting):
    """test_reentrant_priority: the reentrant children's NodeTasks all run before the parent's
    remaining node, whatever the sequence numbers."""
    loop_engine(nesting)  # the loop's engine, set up for the nesting
    order: list[str] = []

    class MyFunction(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            order.append("MyFunction")
            return x

    Reentrant.log = order
    try:
        a = MyFunction.apply(ag.tensor(6.0, requires_grad=True))
        b = Reentrant.apply(ag.tensor(9.0, requires_grad=True))
        await (a * b).backward()
    finally:
        Reentrant.log = None
    assert order == ["Reentrant"] * 10 + ["MyFunction"]


async def test_reentrant_priority_beats_sequence_numbers(nesting):
    """The child's nodes were recorded before the ordinary node (smaller sequence numbers), yet
    they run first: reentrant depth outranks sequence number."""
    loop_engine(nesting)  # the loop's engine, set up for the nesting
    order: list[str] = []
    leaf = ag.tensor([1.0, 2.0], requires_grad=True)
    doubled = leaf * 2  # recorded first: the smallest sequence numbers
    doubled.register_hook(lambda g: order.append("child MulBackward0"))
    leaf.register_hook(lambda g: order.append("child leaf"))
    child_root = doubled.sum()

    class Ordinary(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            order.append("Ordinary")
            return g

    class Nested(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            await child_root.backward()
            order.append("Nested done")
            return g

    w = ag.tensor(1.0, requires_grad=True)
    o = Ordinary.apply(w)
    r = Nested.apply(w)  # recorded after Ordinary, so it runs first
    await (o + r).backward()
    assert order == ["child MulBackward0", "child leaf", "Nested done", "Ordinary"]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
async def test_nested_drive_runs_the_parents_nodes_in_the_parents_mode():
    """Graph tasks do not form a stack: while the child waits for its device worker, the nested
    drive runs the parent's ready node, with the parent's grad mode (create_graph=True)."""
    log: list[tuple[str, bool]] = []

    class Other(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            log.append(("parent node", ag.is_grad_enabled()))
            return g

    class Nest(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            leaf = ag.tensor([2.0], requires_grad=True)
            on_device = (leaf.to("sim:0") * 3.0).to("cpu")
            on_device.register_hook(lambda grad: log.append(("child on sim:0", ag.is_grad_enabled())))
            with ag.no_grad():
                log.append(("child starts", ag.is_grad_enabled()))
            await on_device.sum().backward()
            log.append(("child done", ag.is_grad_enabled()))
            np.testing.assert_array_equal(leaf.grad.numpy(), [3.0])
            return g

    x = ag.tensor([1.0], requires_grad=True)
    # Nest was recorded last, so it runs first; Other waits in the queue at depth 0.
    out = Other.apply(x) + Nest.apply(x)
    await out.sum().backward(create_graph=True)
    assert [name for name, _ in log] == ["child starts", "child on sim:0", "parent node", "child done"]
    assert dict(log)["parent node"] is True  # the parent's create_graph
    assert dict(log)["child on sim:0"] is False  # the child's
    assert dict(log)["child done"] is True  # back in the parent's node
    np.testing.assert_array_equal(x.grad.numpy(), [2.0])
    x.grad = None  # backward(create_graph=True) made x.grad part of a graph


# ------------------------------------------------------------------------------------ grad mode
async def test_grad_mode_restored_reentrant():
    """test_grad_mode_restored_reentrant: inside a backward, grad mode is the outer call's
    create_graph; enable_grad() plus a nested grad() leaves it as it was."""
    seen: list[tuple[bool, bool, bool, bool]] = []

    class MyFunction(Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        async def backward(ctx, go):
            original = ag.is_grad_enabled()
            with ag.enable_grad():
                before = ag.is_grad_enabled()
                foo = ag.rand(*go.shape, dtype=ag.float64, requires_grad=True)
                (grad,) = await ag.grad(foo**3, foo, grad_outputs=go)
                after = ag.is_grad_enabled()
            seen.append((original, before, after, ag.is_grad_enabled()))
            return grad

    inp = ag.rand(3, dtype=ag.float64, requires_grad=True)
    await MyFunction.apply(inp).sum().backward()
    await MyFunction.apply(inp).sum().backward(create_graph=True)
    assert seen == [(False, True, True, False), (True, True, True, True)]
    inp.grad = None


# ------------------------------------------------------------------------------------ callbacks
def reentrant_with_callbacks(depths: set[int], log: list[str]):
    class MyFunc(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            if 1 in depths:
                ag.queue_callback(lambda: log.append("inner callback"))
            return g

    class MyReentrantFunc(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        async def backward(ctx, g):
            if 0 in depths:
                ag.queue_callback(lambda: log.append("outer callback"))
            tmp = g.detach().requires_grad_()
            with ag.enable_grad():
                tmp_out = MyFunc.apply(tmp).sum()
            await tmp_out.backward()
            log.append("nested backward returned")
            return g

    return MyReentrantFunc


@pytest.mark.parametrize(
    "depths, expected",
    [
        ({0}, ["nested backward returned", "outer callback"]),
        ({1}, ["inner callback", "nested backward returned"]),
        ({0, 1}, ["inner callback", "nested backward returned", "outer callback"]),
    ],
)
async def test_reentrant_with_callbacks(nesting, depths, expected):
    """test_reentrant_with_callbacks_depth_*: a callback queued in the child runs when the
    child completes, one queued in the parent when the parent does; each exactly once."""
    loop_engine(nesting)  # the loop's engine, set up for the nesting
    log: list[str] = []
    t1 = ag.rand(3, 3, requires_grad=True)
    await ag.backward([reentrant_with_callbacks(depths, log).apply(t1).sum()])
    assert log == expected


async def test_reentrant_backward_from_a_hook_and_from_a_callback():
    depths: list[int] = []

    async def nested():
        z = ag.tensor([1.0, 2.0], requires_grad=True)
        z.register_hook(lambda g: depths.append(current_graph_task.get().reentrant_depth))
        with ag.enable_grad():
            await (z * z).sum().backward()
        return z.grad

    grads = []

    async def hook(grad):
        grads.append(await nested())

    async def callback():
        grads.append(await nested())

    x = ag.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    y.register_hook(lambda g: ag.queue_callback(callback))
    await y.sum().backward()
    assert depths == [1, 1]
    for g in grads:
        np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])


# ------------------------------------------------------------------------------------ errors
class SimulateBackwardError(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise Exception("Simulate error on backward pass")


def backward_inside(root, caught: list) -> type[Function]:
    """ReentrantFunc of PyTorch's tests: an identity whose backward runs ``root.backward()``;
    what that raises is recorded in ``caught`` and re-raised."""

    class ReentrantFunc(Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        async def backward(ctx, grad):
            try:
                await root.backward()
            except Exception as exc:
                caught.append(exc)
                raise
            return grad

    return ReentrantFunc


async def test_reentrant_child_error(nesting):
    """test_reentrant_child_error: the child's error raises inside the parent's node, which
    then fails the parent; both nodes are named in the error's notes."""
    engine = loop_engine(nesting)
    a = ag.rand(3, 3, requires_grad=True)
    c = a * a
    b = ag.rand(3, 3, requires_grad=True)
    reentrant_root = SimulateBackwardError.apply(b * b).sum()
    caught = []
    ReentrantFunc = backward_inside(reentrant_root, caught)

    with pytest.raises(Exception, match="Simulate error") as info:
        await ReentrantFunc.apply(c).sum().backward()
    assert caught == [info.value]
    assert info.value.__notes__ == [
        "while running SimulateBackwardErrorBackward",
        "while running ReentrantFuncBackward",
    ]
    assert a.grad is None and b.grad is None
    assert engine.statistics().graph_tasks_in_flight == 0
    # The engine keeps serving.
    await (a * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy())


async def test_reentrant_parent_error_while_the_child_runs(nesting):
    """test_reentrant_parent_error_on_cpu: the parent fails (on its sim:0 branch) while a child
    is suspended mid-way; the child stops, nothing is accumulated anywhere, the parent's error is
    raised, and no task, GraphTask or graph memory is left."""
    engine = loop_engine(nesting)
    gate = asyncio.Event()
    child_started = asyncio.Event()
    child_tasks = []

    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            await child_started.wait()
            gate.set()
            raise Exception("Simulate error on backward pass")

    class Wait(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            child_tasks.append(weakref.ref(current_graph_task.get()))
            child_started.set()
            await gate.wait()  # the parent fails meanwhile, on the sim:0 worker
            return g

    t1 = ag.rand(3, 3, requires_grad=True)
    t2 = ag.rand(3, 3, requires_grad=True)
    t3 = ag.rand(3, 3, requires_grad=True)
    t5 = Boom.apply((t1 * t1).to("sim:0"))  # parent branch on sim:0: fails
    prev = t2 * t2  # child graph: longer than the parent's
    for _ in range(10):
        prev = prev * t2
    reentrant_root = Wait.apply(prev).sum()
    caught = []
    t7 = backward_inside(reentrant_root, caught).apply(t3) * 2
    with pytest.raises(Exception, match="Simulate error") as info:
        await ag.backward([t5.sum(), t7.sum()])
    assert info.value.__notes__ == ["while running BoomBackward"]
    assert [str(exc) for exc in caught] == [
        "reentrant backward (depth 1) stopped: the backward it was called from failed or was cancelled"
    ]
    caught.clear()
    assert t1.grad is None and t2.grad is None and t3.grad is None
    del info, prev, t7, t5
    await asyncio.sleep(0)  # a finished worker task's wake-up callback is still on the loop
    gc.collect()
    assert child_tasks[0]() is None
    assert engine.statistics().graph_tasks_in_flight == 0


def chain_waiting_at_the_bottom(at_the_bottom) -> type[Function]:
    """Reentrant's recursion, whose deepest backward awaits ``at_the_bottom()`` first."""

    class Chain(Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        async def backward(ctx, g):
            if ctx.x.item() < 0:
                await at_the_bottom()
                return g
            with ag.enable_grad():
                await Chain.apply(ctx.x).sum().backward()
            return g

    return Chain


async def test_parent_failing_stops_every_level_below_it():
    """Failure reaches all levels of a deep chain of children (iteratively)."""
    gate = asyncio.Event()
    bottom = asyncio.Event()
    depth_reached = []

    async def at_the_bottom():
        depth_reached.append(current_graph_task.get().reentrant_depth)
        bottom.set()
        await gate.wait()

    Chain = chain_waiting_at_the_bottom(at_the_bottom)

    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        async def backward(ctx, g):
            await bottom.wait()
            gate.set()
            raise ValueError("boom")

    engine = ag.get_engine()
    engine.max_reentrant_depth = 7  # a mix of nested levels and overflow workers
    v = ag.tensor(100.0, requires_grad=True)
    w = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="boom"):
        await ag.backward([Chain.apply(v).sum(), Boom.apply(w.to("sim:0")).sum()])
    assert depth_reached == [100]
    assert v.grad is None and w.grad is None
    assert engine.statistics().graph_tasks_in_flight == 0


# ------------------------------------------------------------------------------------ cancellation
async def test_cancelling_the_caller_cancels_every_level(nesting):
    engine = loop_engine(nesting)
    gate = asyncio.Event()
    reached = asyncio.Event()

    async def at_the_bottom():
        reached.set()
        await gate.wait()

    Chain = chain_waiting_at_the_bottom(at_the_bottom)

    v = ag.tensor(5.0, requires_grad=True)
    task = asyncio.get_running_loop().create_task(Chain.apply(v).sum().backward())
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert v.grad is None
    assert engine.statistics().graph_tasks_in_flight == 0
    gate.set()
    # The engine keeps serving, also reentrant work.
    await Chain.apply(v).sum().backward()
    assert v.grad.item() == 1.0


# ------------------------------------------------------------------------------------ concurrency
async def test_concurrent_reentrant_graph_tasks(nesting):
    """Many backward calls with reentrant nodes interleave on one loop (each child yields to the
    loop) and each gets its own gradient."""
    engine = loop_engine(nesting)

    class Yielding(Function):
        @staticmethod
        def forward(ctx, x, k):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.y = (ctx.x * k).sin()
            return ctx.y.detach()

        @staticmethod
        async def backward(ctx, g):
            await asyncio.sleep(0)
            with ag.enable_grad():
                (inner,) = await ag.grad(ctx.y, ctx.x, grad_outputs=g)
            await asyncio.sleep(0)
            return inner, None

    async def one(i: int) -> None:
        x = ag.tensor([0.1 * i, 0.2], dtype=ag.float64, requires_grad=True)
        y = Yielding.apply(Yielding.apply(x, 2.0), 3.0)
        await y.sum().backward()
        inner = np.sin(2.0 * x.detach().numpy())
        expected = np.cos(3.0 * inner) * 3.0 * np.cos(2.0 * x.detach().numpy()) * 2.0
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)

    await asyncio.gather(*(one(i) for i in range(40)))
    assert engine.statistics().graph_tasks_in_flight == 0


async def test_reentrant_on_a_device_worker():
    """A reentrant node running on sim:0's worker: the child's NodeTasks go to that device's
    queue (the one being drained) and the gradient is right."""
    where = []

    class OnDevice(Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.y = ctx.x.exp()
            return ctx.y.detach()

        @staticmethod
        async def backward(ctx, g):
            where.append(asyncio.current_task().get_name())
            ctx.x.register_hook(lambda grad: where.append(asyncio.current_task().get_name()))
            (inner,) = await ag.grad(ctx.y, ctx.x, grad_outputs=g)
            return inner

    x = ag.tensor([0.5, -1.0], dtype=ag.float64, requires_grad=True)
    y = OnDevice.apply(x.to("sim:0") * 2.0)
    await y.to("cpu").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.exp(2.0 * x.detach().numpy()), rtol=1e-12)
    assert where == ["aiograd worker sim:0", "aiograd worker sim:0"]


class ExpViaNestedGrad(Function):
    """exp(x), whose backward gets the derivative from a nested grad() through a recorded exp."""

    @staticmethod
    def forward(ctx, x):
        with ag.enable_grad():
            ctx.x = x.detach().requires_grad_()
            ctx.y = ctx.x.exp()
        return ctx.y.detach()

    @staticmethod
    async def backward(ctx, g):
        (inner,) = await ag.grad(ctx.y, ctx.x, grad_outputs=g)
        return inner


async def test_reentrant_nodes_on_several_devices(nesting):
    """Reentrant nodes on the CPU, sim:0 and sim:1 in one graph (a diamond across devices) give
    the gradient of the same graph built from plain ops."""
    engine = loop_engine(nesting)

    def build(x, exp):
        a = exp(x.to("sim:0") * 0.5)
        left = exp(a.to("sim:1")).to("cpu")
        right = exp(x * 0.25)
        return (left * right + exp(a).to("cpu")).sum()

    values = np.array([0.3, -0.4, 0.1])
    x = ag.tensor(values, requires_grad=True)
    ref = ag.tensor(values, requires_grad=True)
    await build(x, ExpViaNestedGrad.apply).backward()
    await build(ref, ag.exp).backward()
    np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=1e-12)
    stats = engine.statistics()
    assert stats.deepest_reentrant_depth == 1
    assert stats.graph_tasks_in_flight == 0


async def test_reentrant_with_leaf_variable_hook():
    """test_reentrant_with_leaf_variable_hook: a leaf's hook removes itself, runs a nested
    backward (a gradient penalty) and returns a new gradient."""
    handle = None
    param = ag.rand(10, dtype=ag.float64, requires_grad=True)

    async def add_gradient_penalty_to_grad(grad):
        handle.remove()
        old_param_grad = grad
        param.grad = None
        with ag.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            out = ((g * 2) + new_param).sum()
            await out.backward()
        res = g.grad + grad
        param.grad = old_param_grad
        return res

    handle = param.register_hook(add_gradient_penalty_to_grad)
    await (param * param).sum().backward()
    # The hook put 2p back into .grad, then AccumulateGrad adds its result 2p + 2 (torch: same).
    np.testing.assert_allclose(param.grad.numpy(), 4 * param.detach().numpy() + 2, rtol=1e-12)


async def test_reentrant_with_non_leaf_variable_hook():
    """test_reentrant_with_non_leaf_variable_hook: the same on an intermediate tensor."""
    handle = None
    param = ag.rand(10, dtype=ag.float64, requires_grad=True)

    async def manual_increase_gradient(grad):
        handle.remove()
        with ag.enable_grad():
            g = grad.detach().requires_grad_()
            out = ((g * 2) + 5).sum()
            await out.backward()
        return g.grad + grad

    tmp = param * param
    handle = tmp.register_hook(manual_increase_gradient)
    await tmp.sum().backward()
    np.testing.assert_allclose(param.grad.numpy(), 2 * param.detach().numpy() * 3, rtol=1e-12)


async def test_a_reentrant_worker_cancelled_before_its_first_step_ends_its_graph_task():
    """The parent is cancelled in the loop turn that makes the child's fresh worker task, so the
    worker is cancelled before it runs a line of its drive: the child GraphTask still ends (as
    stopped with its parent), never left running, and the engine serves on."""
    engine = ag.get_engine()
    engine.max_reentrant_depth = 0  # every reentrant call on a fresh worker task
    outer: list[asyncio.Task] = []

    class CancelsItsCaller(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        async def backward(ctx, grad):
            # Runs before the worker's first step: the caller's task, awaiting the worker by
            # then, cancels it.
            asyncio.get_running_loop().call_soon(outer[0].cancel)
            y = ag.tensor([1.0], requires_grad=True)
            with ag.enable_grad():
                loss = (y * 2.0).sum()
            await ag.grad(loss, y)
            raise AssertionError("the caller was cancelled")

    x = ag.tensor([1.0], requires_grad=True)
    with ag.profiler.profile() as prof:
        outer.append(asyncio.ensure_future(CancelsItsCaller.apply(x).sum().backward()))
        with pytest.raises(asyncio.CancelledError):
            await outer[0]
    calls = prof.graph_tasks()
    assert [(c.depth, c.outcome) for c in calls] == [(0, "cancelled"), (1, "error")]
    assert calls[1].error is not None and "stopped" in calls[1].error
    assert engine.statistics().graph_tasks_in_flight == 0 and x.grad is None
    await (x * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0]
