"""aiograd under trio: ``await t.backward()`` and ``await aiograd.grad(...)`` from trio tasks
(``trio.run``, ``anyio.run(..., backend="trio")``), with asyncio's results, errors and
cancellation.

Under trio the engine runs on aiograd's background asyncio loop (the one ``aiograd.sync`` uses)
and the trio task waits for it on trio's terms; see docs/engine.md. The checks here: the same
numbers as on asyncio, hooks and async Functions (run on that loop), errors of every kind raised
to the trio task as they are on asyncio, many backward calls in one nursery, and a trio cancel
scope cancelling a backward: it stops before the cancellation reaches the caller, ``.grad`` is
untouched (``atomic=True``), and the engine serves the next call.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from helpers import Fails

import aiograd as ag
from aiograd import sync

trio = pytest.importorskip("trio")
anyio = pytest.importorskip("anyio")
HANG = 60  # seconds before a test that should finish at once is failed as hung


def leaf(*values: float) -> ag.Tensor:
    return ag.tensor(list(values), requires_grad=True)


def run(main, *args):
    """``trio.run(main, *args)``, failed as hung after ``HANG`` seconds."""
    async def bounded():
        with trio.fail_after(HANG):
            return await main(*args)

    return trio.run(bounded)


@pytest.fixture(autouse=True)
def engine_left_idle():
    """After each test, aiograd's background engine (where trio's backward calls ran) has no
    GraphTask and no worker left running."""
    yield
    if sync._current is None:
        return
    stats = sync._current.portal.call(lambda: ag.get_engine().statistics())
    assert stats.graph_tasks_in_flight == 0, stats


async def _backward_and_grad():
    w = leaf(1.0, 2.0, 3.0)
    h = []
    w.register_hook(lambda g: h.append(g.tolist()))
    await ((w * w).sum() * 2.0).backward()
    (g,) = await ag.grad((w ** 3).sum(), w)
    (gg,) = await ag.grad((w.tanh() * w).sum(), w, create_graph=True)
    (second,) = await ag.grad(gg.sum(), w)
    return w.grad.tolist(), g.tolist(), second.tolist(), h


def test_backward_and_grad_under_trio_equal_asyncio():
    want = asyncio.run(_backward_and_grad())
    assert run(_backward_and_grad) == want
    assert anyio.run(_backward_and_grad, backend="trio") == want
    grads, g, _, hooked = want
    assert grads == [4.0, 8.0, 12.0] and g == [3.0, 12.0, 27.0]
    assert len(hooked) == 4 and hooked[:2] == [[4.0, 8.0, 12.0], [3.0, 12.0, 27.0]]  # every call


def test_an_async_function_and_async_hook_run_on_the_engines_loop():
    seen = []

    class Double(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        async def backward(ctx, g):
            await anyio.sleep(0)  # anyio: works on whichever loop runs it
            seen.append(("function", threading.current_thread().name))
            return g * 2.0

    async def hook(g):
        await asyncio.sleep(0)
        seen.append(("hook", threading.current_thread().name))

    async def main():
        x = leaf(1.0, 2.0)
        y = Double.apply(x)
        y.register_hook(hook)
        await y.sum().backward()
        return x.grad.tolist()

    assert run(main) == [2.0, 2.0]
    assert seen == [("hook", "aiograd-sync-portal"), ("function", "aiograd-sync-portal")]


def test_many_backward_calls_in_one_nursery_each_get_their_own_gradients():
    async def one(i, out):
        x = leaf(float(i), 1.0)
        (g,) = await ag.grad((x * x * x).sum(), x)
        out[i] = g.tolist()

    async def main():
        out = {}
        async with trio.open_nursery() as nursery:
            for i in range(32):
                nursery.start_soon(one, i, out)
        return out

    out = run(main)
    assert out == {i: [3.0 * i * i, 3.0] for i in range(32)}


@pytest.mark.parametrize(
    "make",
    [
        lambda: ag.backward(ag.tensor(1.0)),  # raised before the engine: on trio's thread
        lambda: ag.backward(leaf(1.0, 2.0) * 2.0),
        lambda: ag.grad((leaf(1.0) * 2).sum(), leaf(2.0)),  # unused input: in the engine
        lambda: ag.backward(Fails.apply(leaf(1.0)).sum()),  # a Function's backward raises
    ],
    ids=["no grad_fn", "not scalar", "unused input", "function raises"],
)
def test_errors_are_asyncios(make):
    def outcome(runner):
        async def main():
            with pytest.raises(Exception) as info:
                await make()
            return type(info.value), str(info.value), getattr(info.value, "__notes__", None)
        return runner(main)

    on_asyncio = outcome(lambda main: asyncio.run(main()))
    assert outcome(run) == on_asyncio


class Forever(ag.Function):
    """Doubles; its backward signals ``started`` and then waits an hour on the engine's loop,
    signalling ``cancelled`` if cancelled (threading events: set on the engine's thread)."""

    started = threading.Event()
    cancelled = threading.Event()

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    async def backward(ctx, g):
        Forever.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            Forever.cancelled.set()
            raise
        return g * 2.0


@pytest.fixture
def forever():
    Forever.started, Forever.cancelled = threading.Event(), threading.Event()
    return Forever


def test_a_cancel_scope_cancels_the_backward_and_grad_is_untouched(forever):
    async def main():
        x, w = leaf(1.0, 2.0), leaf(3.0)
        loss = (forever.apply(x) * w).sum()
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: loss.backward(atomic=True))
                await trio.to_thread.run_sync(forever.started.wait)
                scope.cancel()
        # The backward stopped before the cancellation reached us; nothing was accumulated.
        assert scope.cancelled_caught and forever.cancelled.is_set()
        assert x.grad is None and w.grad is None
        # The engine serves the next call.
        await (x * w).sum().backward()
        return x.grad.tolist(), w.grad.tolist()

    assert run(main) == ([3.0, 3.0], [3.0])


def test_a_deadline_cancels_a_grad_call(forever):
    async def main():
        x = leaf(1.0)
        y = forever.apply(x).sum()
        with trio.move_on_after(0.05) as scope:  # a deadline: no wall-clock assertion
            await ag.grad(y, x)
        # Whether the backward had started by the deadline depends on the machine; if it had,
        # it was cancelled before the deadline's cancellation reached this task.
        return scope.cancelled_caught, forever.started.is_set() == forever.cancelled.is_set()

    assert run(main) == (True, True)


def test_without_any_event_loop_the_error_says_what_to_use():
    coro = ag.grad((leaf(1.0) * 2).sum(), leaf(1.0))
    with pytest.raises(RuntimeError) as info:
        coro.send(None)  # driven by hand: no asyncio loop, no trio
    assert str(info.value) == (
        "no running event loop: aiograd's backward and grad run under asyncio (or uvloop), or "
        "under trio; outside any event loop use aiograd.sync.backward/grad"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_anyios_pytest_plugin_on_trio(anyio_backend):
    x = leaf(1.0, 2.0)
    (g,) = await ag.grad((x * x).sum(), x)
    assert g.tolist() == [2.0, 4.0]
    assert np.asarray(g.data).dtype == np.float64
