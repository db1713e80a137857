"""The backends the suite's async tests run on (aiograd's pytest plugin: asyncio's default loop,
uvloop, and anyio.run's root task), each what it claims to be, and backward calls under anyio:
task groups, cancel scopes and deadlines."""

from __future__ import annotations

import asyncio
import threading

import anyio
import hypothesis  # noqa: F401  (imported once here: pytester forgets what a scratch run imports,
import numpy as np  # and Hypothesis's plugin would import it again, for seconds, every run)
import pytest

import aiograd as ag
from aiograd import Function

pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "anyio"])  # and as anyio's root task: its cancel scopes

sniffio = pytest.importorskip("sniffio")


def pending_tasks() -> list[asyncio.Task]:
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me and not t.done()]


# ------------------------------------------------------------------------- what each backend is
async def test_the_loop_is_what_the_backend_claims(aiograd_backend):
    loop = asyncio.get_running_loop()
    module = type(loop).__module__
    if aiograd_backend == "uvloop":
        assert module.startswith("uvloop"), type(loop)
    else:  # asyncio and anyio (anyio.run without backend options): asyncio's default loop
        assert module.startswith("asyncio"), type(loop)
        assert isinstance(loop, asyncio.BaseEventLoop)
    assert sniffio.current_async_library() == "asyncio"
    assert asyncio.get_event_loop() is loop


try:  # where anyio 4 registers its root task (private: the check below needs it)
    from anyio._backends._asyncio import _task_states
except ImportError:  # pragma: no cover - a later anyio
    _task_states = None


async def root_task_facts(main) -> dict[str, object]:
    """What anyio.run(main, backend="asyncio") sets up for ``main``, seen from inside it."""
    me = anyio.get_current_task()
    state = _task_states.get(asyncio.current_task())
    return {
        "task named after main": me.name == f"{main.__module__}.{main.__qualname__}",
        "parent task": me.parent_id,
        "anyio task state": None if state is None else (state.parent_id, state.cancel_scope),
        "async library in sniffio's context variable": sniffio.current_async_library_cvar.get(),
        "loop": type(asyncio.get_running_loop()),
    }


def root_task_facts_under_anyio_run() -> dict[str, object]:
    """root_task_facts of a real anyio.run, in a thread of its own (a fresh context too)."""

    async def main() -> dict[str, object]:
        return await root_task_facts(main)

    facts: list[dict[str, object]] = []
    thread = threading.Thread(target=lambda: facts.append(anyio.run(main, backend="asyncio")))
    thread.start()
    thread.join()
    return facts[0]


@pytest.mark.skipif(_task_states is None, reason="this anyio keeps its task table elsewhere")
async def test_the_anyio_backend_runs_the_test_as_anyio_run_runs_its_main(aiograd_backend):
    facts = await root_task_facts(test_the_anyio_backend_runs_the_test_as_anyio_run_runs_its_main)
    if aiograd_backend == "anyio":
        assert facts == root_task_facts_under_anyio_run()
        assert facts["anyio task state"] == (None, None)  # anyio's root: no parent, no scope
    else:  # a plain task of the plugin's asyncio.Runner, unknown to anyio until it uses anyio
        assert facts["task named after main"] is False
        assert facts["anyio task state"] is None
        assert facts["async library in sniffio's context variable"] is None


async def test_anyio_task_groups_run_backward_calls_side_by_side(aiograd_backend):
    async def one(i: int, results: dict[int, np.ndarray]) -> None:
        x = ag.tensor([0.5 * i, -1.0], requires_grad=True)
        (g,) = await ag.grad((x * x).tanh().sum(), x)
        results[i] = g.numpy()

    results: dict[int, np.ndarray] = {}
    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i, results)
    for i in range(4):
        x = np.array([0.5 * i, -1.0])
        np.testing.assert_allclose(results[i], 2 * x * (1 - np.tanh(x * x) ** 2), rtol=1e-12)
    assert not pending_tasks()


# ------------------------------------------------------------------- cancelling with anyio
class Stuck(Function):
    """Doubles its input; its backward waits for an event that never fires."""

    entered: list[anyio.CancelScope] = []

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    async def backward(ctx, grad):
        # The deadline is set once the backward waits, so the cancellation always lands here,
        # however slowly the graph got this far.
        scope = Stuck.entered.pop()
        scope.deadline = anyio.current_time() + 0.01
        await anyio.Event().wait()
        raise AssertionError("the event never fires")


@pytest.mark.parametrize("call", ["backward", "grad"])
async def test_an_anyio_cancel_scope_deadline_cancels_a_stuck_backward(aiograd_backend, call):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (Stuck.apply(x) * 3.0).sum()
    with anyio.CancelScope() as scope:
        Stuck.entered = [scope]
        if call == "backward":
            await ag.backward(loss)
        else:
            await ag.grad(loss, x)
    assert scope.cancelled_caught
    assert not Stuck.entered  # the backward ran, and took the scope
    assert x.grad is None
    await asyncio.sleep(0)  # done callbacks get their turn
    assert not pending_tasks()
    assert ag.get_engine().statistics().graph_tasks_in_flight == 0
    # The engine carries on: the next backward on the same loop works.
    await (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    assert not pending_tasks()


async def test_an_anyio_cancel_scope_deadline_cancels_a_backward_stuck_on_a_device(aiograd_backend):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (Stuck.apply(x.to("sim:0")).to("cpu") * 3.0).sum()
    engine = ag.get_engine()
    try:
        with anyio.CancelScope() as scope:
            Stuck.entered = [scope]
            await ag.grad(loss, x)
        assert scope.cancelled_caught
        with anyio.move_on_after(60) as hang:  # bounds a hang: not a speed check
            await (x.to("sim:0") * 3.0).to("cpu").sum().backward()
        assert not hang.cancelled_caught, "the next backward through sim:0 hangs"
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
        await asyncio.sleep(0)
        assert not pending_tasks()
    finally:
        await engine.aclose()
