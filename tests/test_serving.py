"""``aiograd.serving.batch``: the dispatch policy (full batch, timeout, a lone request on an idle
batcher), each caller's result, isolation (exceptions, wrong lengths, cancellation while queued
or while the batch runs), backpressure (``Overloaded``), per-instance batchers for methods, and
``statistics()``.

No sleep stands in for synchronisation: a batch that must stay running waits on an event, and
a test waits for a state (items queued, a batch started) by polling it once per loop turn,
within a bound. Timeouts are checked by ordering (what ran before what) and by the recorded
queue wait, never by wall-clock limits on the test; ``anyio.fail_after`` only turns a hang into
a failure.
"""

from __future__ import annotations

import asyncio
import dataclasses

import anyio
import pytest

import aiograd as ag
from aiograd.serving import BatchStatistics, Overloaded, batch

pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "anyio"])  # and as anyio's root task: its cancel scopes

HANG = 30  # seconds before a test that should finish at once is failed as hung


class Recorder:
    """A batched function's body: records each batch; an item ``"block"`` holds its batch until
    ``release`` is set (``started`` is set when it starts)."""

    def __init__(self) -> None:
        self.batches: list[list[object]] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.finished: list[list[object]] = []

    async def __call__(self, items: list[object]) -> list[object]:
        self.batches.append(list(items))
        if "block" in items:
            self.started.set()
            await self.release.wait()
        self.finished.append(list(items))
        return [f"r{item}" for item in items]


def recorded_batch(**options: object) -> tuple[Recorder, object]:
    """A Recorder, and the function ``batch(**options)`` makes of it."""
    rec = Recorder()

    @batch(**options)
    async def f(items):
        return await rec(items)

    return rec, f


async def turns_until(condition, turns: int = 200) -> None:
    """Let the loop run, one turn at a time, until ``condition()`` holds (at most ``turns``)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition did not come true")


async def start_blocking_batch(f, rec: Recorder) -> asyncio.Task:
    """A batch ``["block"]`` running (and held) on ``f``'s batcher."""
    blocker = asyncio.ensure_future(f("block"))
    await rec.started.wait()
    return blocker


# ------------------------------------------------------------------------------ results
async def test_concurrent_callers_share_one_batch_and_get_their_own_results():
    rec = Recorder()

    async def body(items):
        return await rec(items)

    f = batch(body)
    with anyio.fail_after(HANG):
        results = await asyncio.gather(*(f(i) for i in range(5)))
    assert results == ["r0", "r1", "r2", "r3", "r4"]
    assert rec.batches == [[0, 1, 2, 3, 4]]


async def test_decorator_forms_and_argument_checks():
    @batch
    async def bare(items):
        return [x + 1 for x in items]

    @batch(max_batch_size=2)
    async def configured(items):
        return [x * 10 for x in items]

    assert bare.__name__ == "bare" and configured.__doc__ is None
    assert await asyncio.gather(bare(1), bare(2)) == [2, 3]
    assert await asyncio.gather(configured(1), configured(2), configured(3)) == [10, 20, 30]
    assert configured.statistics().batches == 2  # max_batch_size=2: [1, 2] then [3]

    def not_async(items):
        return items

    with pytest.raises(TypeError, match="batch needs an async def function"):
        batch(not_async)
    with pytest.raises(ValueError, match=r"max_batch_size must be an integer >= 1, got 0"):
        batch(max_batch_size=0)
    with pytest.raises(ValueError, match=r"batch_wait_timeout_s must be a finite number >= 0, got -1"):
        batch(batch_wait_timeout_s=-1)
    with pytest.raises(ValueError, match=r"max_queue_size must be an integer >= 1, got 0"):
        batch(max_queue_size=0)


# ------------------------------------------------------------------------------- policy
async def test_full_batches_go_at_once_and_the_rest_follow_in_call_order():
    rec, f = recorded_batch(max_batch_size=2)

    with anyio.fail_after(HANG):
        results = await asyncio.gather(*(f(i) for i in range(5)))
    assert results == [f"r{i}" for i in range(5)]
    assert rec.batches == [[0, 1], [2, 3], [4]]


async def test_a_lone_request_on_an_idle_batcher_is_not_held_for_the_timeout():
    rec, f = recorded_batch(max_batch_size=8, batch_wait_timeout_s=3600)

    with anyio.fail_after(HANG):  # held for the timeout, it would hang here
        assert await f("x") == "rx"
    assert rec.batches == [["x"]]


async def test_a_full_batch_does_not_wait_for_the_timeout():
    rec, f = recorded_batch(max_batch_size=3, batch_wait_timeout_s=3600)

    with anyio.fail_after(HANG):
        blocker = await start_blocking_batch(f, rec)
        waiting = [asyncio.ensure_future(f(i)) for i in range(3)]
        await turns_until(lambda: f.statistics().queued == 3)
        assert rec.batches == [["block"]]  # queued behind the running batch
        rec.release.set()
        assert await asyncio.gather(*waiting) == ["r0", "r1", "r2"]
        await blocker
    assert rec.batches == [["block"], [0, 1, 2]]


async def test_a_partial_batch_behind_a_running_one_waits_for_the_timeout():
    rec, f = recorded_batch(max_batch_size=3, batch_wait_timeout_s=3600)

    blocker = await start_blocking_batch(f, rec)
    waiting = [asyncio.ensure_future(f(i)) for i in range(2)]
    await turns_until(lambda: f.statistics().queued == 2)
    rec.release.set()
    assert await blocker == "rblock"
    for _ in range(50):  # the slot is free, but 2 < max_batch_size and the timeout is far
        await asyncio.sleep(0)
    assert rec.batches == [["block"]] and f.statistics().queued == 2
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    assert rec.batches == [["block"]]  # cancelled while queued: never reached f
    stats = f.statistics()
    assert (stats.cancelled, stats.queued, stats.running) == (2, 0, False)


async def test_a_partial_batch_goes_once_its_oldest_item_waited_the_timeout():
    timeout = 0.02
    rec, f = recorded_batch(max_batch_size=3, batch_wait_timeout_s=timeout)

    with anyio.fail_after(HANG):
        blocker = await start_blocking_batch(f, rec)
        first = asyncio.ensure_future(f("a"))
        await turns_until(lambda: f.statistics().queued == 1)
        second = asyncio.ensure_future(f("b"))
        await turns_until(lambda: f.statistics().queued == 2)
        rec.release.set()
        assert await asyncio.gather(first, second, blocker) == ["ra", "rb", "rblock"]
    assert rec.batches == [["block"], ["a", "b"]]
    # "a" was dispatched by the timer, not before: its wait is at least the timeout (up to the
    # timer's clock granularity: uvloop's is a millisecond).
    assert f.statistics().max_queue_wait_s >= timeout - 0.002


# ---------------------------------------------------------------------------- isolation
async def test_an_exception_from_f_reaches_every_caller_of_the_batch_only():
    calls = []

    @batch(max_batch_size=2)
    async def f(items):
        calls.append(list(items))
        if "bad" in items:
            raise KeyError("boom")
        return items

    with anyio.fail_after(HANG):
        results = await asyncio.gather(f("bad"), f("ok"), f("later"), return_exceptions=True)
    assert [type(r) for r in results[:2]] == [KeyError, KeyError]
    assert results[0] is results[1] and str(results[0]) == "'boom'"
    assert results[2] == "later"  # the next batch is unaffected
    assert calls == [["bad", "ok"], ["later"]]


async def test_an_exception_returned_for_an_item_fails_only_its_caller():
    @batch
    async def f(items):
        return [ValueError(f"bad item {x}") if x < 0 else x * 2 for x in items]

    async def raised(item):
        try:
            return ("returned", await f(item))
        except ValueError as error:
            return ("raised", str(error))

    results = await asyncio.gather(raised(1), raised(-1), raised(3))
    assert results == [("returned", 2), ("raised", "bad item -1"), ("returned", 6)]
    assert f.statistics().batches == 1


async def test_a_result_of_the_wrong_length_fails_every_caller_clearly():
    @batch
    async def short(items):
        return items[:-1]

    @batch
    async def not_a_list(items):
        return None

    with anyio.fail_after(HANG):
        results = await asyncio.gather(short(1), short(2), return_exceptions=True)
    message = (
        "test_a_result_of_the_wrong_length_fails_every_caller_clearly.<locals>.short returned "
        "1 results for a batch of 2 items: a batched function must return one result per "
        "item, in order"
    )
    assert all(isinstance(r, ValueError) and str(r) == message for r in results)
    with pytest.raises(TypeError, match=r"not_a_list must return a list with one result per item, got NoneType"):
        await not_a_list(1)


async def test_a_caller_cancelled_while_queued_is_left_out_of_the_batch():
    rec, f = recorded_batch(max_batch_size=4)

    with anyio.fail_after(HANG):
        blocker = await start_blocking_batch(f, rec)
        tasks = {x: asyncio.ensure_future(f(x)) for x in "abc"}
        await turns_until(lambda: f.statistics().queued == 3)
        tasks["b"].cancel()
        with pytest.raises(asyncio.CancelledError):
            await tasks["b"]
        assert f.statistics().queued == 2
        rec.release.set()
        assert await asyncio.gather(blocker, tasks["a"], tasks["c"]) == ["rblock", "ra", "rc"]
    assert rec.batches == [["block"], ["a", "c"]]
    assert f.statistics().cancelled == 1


async def test_a_caller_cancelled_while_its_batch_runs_does_not_cancel_the_batch():
    rec, f = recorded_batch(max_batch_size=4)

    with anyio.fail_after(HANG):
        leaving = asyncio.ensure_future(f("block"))
        staying = asyncio.ensure_future(f("other"))
        await rec.started.wait()
        assert rec.batches == [["block", "other"]]
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
        rec.release.set()
        assert await staying == "rother"
    assert rec.finished == [["block", "other"]]  # the batch ran to its end
    stats = f.statistics()
    assert (stats.batches, stats.items, stats.cancelled) == (1, 2, 1)


async def test_a_batch_whose_callers_are_all_cancelled_is_cancelled_too():
    rec, f = recorded_batch(max_batch_size=4)

    with anyio.fail_after(HANG):
        callers = [asyncio.ensure_future(f("block")), asyncio.ensure_future(f("x"))]
        await rec.started.wait()
        callers[0].cancel()
        await asyncio.gather(callers[0], return_exceptions=True)
        assert f.statistics().running  # one caller is still waiting: the batch runs on
        callers[1].cancel()
        await asyncio.gather(callers[1], return_exceptions=True)
        await turns_until(lambda: not f.statistics().running)
        assert rec.finished == []  # cancelled, not finished in vain
        assert await f("next") == "rnext"  # and the batcher still serves
    assert rec.batches == [["block", "x"], ["next"]]
    assert f.statistics().cancelled == 2


async def test_an_anyio_cancel_scope_around_a_queued_caller_removes_its_item():
    rec, f = recorded_batch(max_batch_size=4)

    with anyio.fail_after(HANG):
        blocker = await start_blocking_batch(f, rec)
        async with anyio.create_task_group() as tg:
            tg.start_soon(f, "gone")
            await turns_until(lambda: f.statistics().queued == 1)
            tg.cancel_scope.cancel()
        assert f.statistics().queued == 0
        rec.release.set()
        assert await blocker == "rblock"
    assert rec.batches == [["block"]]


# ------------------------------------------------------------------------- backpressure
async def test_past_max_queue_size_callers_are_refused_at_once():
    rec = Recorder()

    @batch(max_batch_size=1, max_queue_size=2)  # here, not recorded_batch: its name is in the message
    async def f(items):
        return await rec(items)

    with anyio.fail_after(HANG):
        blocker = await start_blocking_batch(f, rec)
        queued = [asyncio.ensure_future(f(i)) for i in range(2)]
        await turns_until(lambda: f.statistics().queued == 2)
        with pytest.raises(Overloaded) as refused:
            await f("one too many")
        assert isinstance(refused.value, RuntimeError)
        assert str(refused.value) == (
            "test_past_max_queue_size_callers_are_refused_at_once.<locals>.f: overloaded, 2 items "
            "are already queued (max_queue_size=2); retry later"
        )
        rec.release.set()
        assert await asyncio.gather(blocker, *queued) == ["rblock", "r0", "r1"]
    assert rec.batches == [["block"], [0], [1]]
    stats = f.statistics()
    assert (stats.rejected, stats.items) == (1, 3)


# ------------------------------------------------------------------------------ methods
async def test_a_method_batches_per_instance():
    class Model:
        def __init__(self, scale):
            self.scale, self.batches = scale, []

        @batch(max_batch_size=8)
        async def predict(self, items):
            self.batches.append(list(items))
            return [self.scale * x for x in items]

    one, two = Model(1), Model(100)
    results = await asyncio.gather(one.predict(1), two.predict(2), one.predict(3), two.predict(4))
    assert results == [1, 200, 3, 400]
    assert one.batches == [[1, 3]] and two.batches == [[2, 4]]
    assert one.predict.statistics().items == 2 and two.predict.statistics().batches == 1
    assert Model.predict.statistics().batches == 0  # the class attribute has no batcher of its own


# --------------------------------------------------------------------------- statistics
async def test_statistics_count_batches_items_waits_and_sizes():
    @batch(max_batch_size=3)
    async def f(items):
        return items

    assert f.statistics() == BatchStatistics(0, 0, 0.0, 0, 0.0, 0.0, 0, 0, 0, False)
    await asyncio.gather(*(f(i) for i in range(4)))  # [0, 1, 2], then [3]
    stats = f.statistics()
    assert (stats.batches, stats.items, stats.max_batch_size) == (2, 4, 3)
    assert stats.mean_batch_size == 2.0
    assert 0.0 <= stats.mean_queue_wait_s <= stats.max_queue_wait_s
    assert (stats.rejected, stats.cancelled, stats.queued, stats.running) == (0, 0, 0, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.batches = 0


async def test_the_batch_runs_with_grad_mode_at_its_default_not_the_callers():
    @batch
    async def f(items):
        return [ag.is_grad_enabled() for _ in items]

    with ag.no_grad():
        assert await f(None) is True


@pytest.mark.parametrize("max_batch_size", [1, 10])
@pytest.mark.parametrize("turns", [0, 1, 2])
async def test_callers_all_cancelled_around_the_batchs_start_never_wedge_the_batcher(turns, max_batch_size):
    """A caller cancelled 0, 1 or 2 loop turns after its call (a client that disconnects at
    once): whether its item was still queued, its batch just dispatched (the batch's task then
    cancelled before its first step: the batcher stayed "running" for good) or running, the
    batcher serves the next caller and counts the cancellation. Hundreds of times, since the
    window is one loop turn wide, and where it falls depends on the loop."""
    rec, f = recorded_batch(max_batch_size=max_batch_size)
    entered: list[int] = []

    async def call(i: int) -> object:
        entered.append(i)
        return await f(i)

    rounds = 200
    with anyio.fail_after(HANG):
        for i in range(rounds):
            caller = asyncio.ensure_future(call(i))
            for _ in range(turns):
                await asyncio.sleep(0)
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
            assert await f(f"next{i}") == f"rnext{i}"  # it never returned: the wedge
    stats = f.statistics()
    # A caller cancelled before its first step never calls f (at 0 turns, none does); one
    # whose result came first is not counted as cancelled (its result is lost, not its item).
    assert len(entered) == (0 if turns == 0 else rounds) and stats.cancelled <= len(entered)
    assert stats.queued == 0 and not stats.running
    computed = [item for batch in rec.batches for item in batch]
    assert [x for x in computed if isinstance(x, str)] == [f"next{i}" for i in range(rounds)]


async def test_a_batch_task_cancelled_before_its_first_step_leaves_the_batcher_idle():
    """The wedge itself, step by step: a just-dispatched batch's task is cancelled before it has
    run (as ``submit`` does when its callers all leave in that window), so the task's own code
    never runs; the batcher is idle again, the caller gets the cancellation, and f never saw
    the item."""
    rec, f = recorded_batch()
    with anyio.fail_after(HANG):
        caller = asyncio.ensure_future(f("gone"))
        await turns_until(lambda: f.statistics().running)  # dispatched: its task is made
        task = f._slot.batcher.running  # (white-box: the window is narrower than a loop turn)
        if rec.batches:  # pragma: no cover - a loop that runs a task in the turn that makes it
            pytest.skip("this loop ran the batch's task in the turn that made it")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert task.cancelled() and rec.batches == []
        assert not f.statistics().running
        assert await f("next") == "rnext"
    assert rec.batches == [["next"]]
