"""The loop matrix (tests/conftest.py): each async test runs on asyncio's default loop, on uvloop
and as anyio's root task, and each variant is what it claims to be."""

from __future__ import annotations

import asyncio
import textwrap
import threading
from pathlib import Path

import anyio
import hypothesis  # noqa: F401  (imported once here: pytester forgets what a scratch run imports,
import numpy as np  # and Hypothesis's plugin would import it again, for seconds, every run)
import pytest

import aiograd as ag
from aiograd import Function

sniffio = pytest.importorskip("sniffio")


def pending_tasks() -> list[asyncio.Task]:
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me and not t.done()]


# ------------------------------------------------------------------------- what each variant is
async def test_the_loop_is_what_the_variant_claims(loop_variant):
    loop = asyncio.get_running_loop()
    module = type(loop).__module__
    if loop_variant == "uvloop":
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
async def test_the_anyio_variant_runs_the_test_as_anyio_run_runs_its_main(loop_variant):
    facts = await root_task_facts(test_the_anyio_variant_runs_the_test_as_anyio_run_runs_its_main)
    if loop_variant == "anyio":
        assert facts == root_task_facts_under_anyio_run()
        assert facts["anyio task state"] == (None, None)  # anyio's root: no parent, no scope
    else:  # a plain task of pytest-asyncio's runner, unknown to anyio until it uses anyio
        assert facts["task named after main"] is False
        assert facts["anyio task state"] is None
        assert facts["async library in sniffio's context variable"] is None


async def test_anyio_task_groups_run_backward_calls_side_by_side(loop_variant):
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
async def test_an_anyio_cancel_scope_deadline_cancels_a_stuck_backward(loop_variant, call):
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
    await asyncio.sleep(0)  # as no_leaked_tasks does: done callbacks get their turn
    assert not pending_tasks()
    assert ag.get_engine().statistics().graph_tasks_in_flight == 0
    # The engine carries on: the next backward on the same loop works.
    await (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    assert not pending_tasks()


async def test_an_anyio_cancel_scope_deadline_cancels_a_backward_stuck_on_a_device(loop_variant):
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    loss = (Stuck.apply(x.to("sim:0")).to("cpu") * 3.0).sum()
    engine = ag.get_engine()
    try:
        with anyio.CancelScope() as scope:
            Stuck.entered = [scope]
            await ag.grad(loss, x)
        assert scope.cancelled_caught
        with anyio.move_on_after(0.25) as hang:
            await (x.to("sim:0") * 3.0).to("cpu").sum().backward()
        assert not hang.cancelled_caught, "the next backward through sim:0 hangs"
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
        await asyncio.sleep(0)
        assert not pending_tasks()
    finally:
        await engine.aclose()


# ---------------------------------------------------------------------- the matrix itself
SCRATCH_TESTS = """
    import asyncio

    import anyio
    import pytest
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st


    def test_sync():
        pass


    async def test_async(loop_variant):
        assert loop_variant in ("asyncio", "uvloop", "anyio")


    @pytest.fixture
    async def async_fixture(loop_variant):
        return loop_variant


    async def test_async_fixture_runs_on_the_tests_variant(async_fixture, loop_variant):
        assert async_fixture == loop_variant


    @pytest.mark.asyncio(loop_factories=["asyncio"])
    async def test_only_asyncio(loop_variant):
        assert loop_variant == "asyncio"


    @given(st.integers(0, 3))
    @settings(
        max_examples=3, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    async def test_hypothesis(loop_variant, n):
        await asyncio.sleep(0)
        is_root = anyio.get_current_task().name == "test_scratch.test_hypothesis"
        assert is_root == (loop_variant == "anyio")


    async def test_leaks():
        asyncio.get_running_loop().create_task(asyncio.sleep(3600), name="leaked")
"""


def test_async_tests_run_once_per_variant_sync_tests_once_and_leaks_fail_everywhere(pytester):
    """Runs tests/conftest.py on a scratch suite, in a subprocess."""
    pytest.importorskip("uvloop")  # without it the [uvloop] variant skips (tested here as passing)
    pytest.importorskip("hypothesis")
    pytester.makeconftest(Path(__file__).with_name("conftest.py").read_text())
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_scratch=textwrap.dedent(SCRATCH_TESTS))
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    variants = ["asyncio", "uvloop", "anyio"]
    result.stdout.fnmatch_lines(["async tests run on these loops: asyncio, uvloop, anyio"])
    result.stdout.fnmatch_lines(["*::test_sync PASSED*"])
    result.stdout.no_fnmatch_line("*::test_sync[[]*")
    for v in variants:
        result.stdout.fnmatch_lines([f"*::test_async[[]{v}[]] PASSED*"])
        result.stdout.fnmatch_lines([f"*::test_async_fixture_runs_on_the_tests_variant[[]{v}[]] PASSED*"])
        result.stdout.fnmatch_lines([f"*::test_hypothesis[[]{v}[]] PASSED*"])
        result.stdout.fnmatch_lines([f"*::test_leaks[[]{v}[]] ERROR*"])
    result.stdout.fnmatch_lines(["*::test_only_asyncio PASSED*"])
    result.stdout.fnmatch_lines(["*test leaked asyncio tasks*name='leaked'*"])
    # test_leaks passes, then its teardown fails, once per variant.
    result.assert_outcomes(passed=1 + 3 + 3 + 1 + 3 + 3, errors=3)
