"""aiograd.sync: blocking backward()/grad() on a background event loop thread.

Plain ``def`` tests: no event loop runs in the test's thread (the async API they compare against
runs in a thread of its own, see ``run_async``), except where a test checks the error raised from
inside a running loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import Blocks, requires_torch, to_torch, torch

import aiograd as ag
import aiograd.nn.functional as F
from aiograd import sync

ROOT = Path(__file__).resolve().parent.parent

LOOP_ERROR = (
    r"^aiograd\.sync\.{name}\(\) cannot be called from a running event loop \(it would block the "
    r"loop it runs on\); use `await aiograd\.{name}\(\.\.\.\)` instead$"
)
OWN_LOOP_ERROR = r"^aiograd\.sync\.{name}\(\) cannot be called from aiograd\.sync's own event loop thread"


def run_async(make_coroutine):
    """``aiograd.run(make_coroutine())`` in a thread of its own, whatever this thread runs."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: ag.run(make_coroutine())).result()


def portal_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == sync._THREAD_NAME]


def leaf(*values: float) -> ag.Tensor:
    return ag.tensor(list(values), requires_grad=True)


def assert_close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a.detach().data), np.asarray(b), rtol=1e-12, atol=1e-12)


class Started(ag.Function):
    """Doubles; its backward signals ``started`` (a threading.Event on ctx's class) and then
    sleeps ``delay`` seconds on the loop before returning, or, given ``until``, returns once
    ``until()`` is true (polled on the loop; a TimeoutError after ``delay`` seconds)."""

    started: threading.Event
    cancelled: threading.Event
    delay = 30.0
    until: Callable[[], bool] | None = None

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    async def backward(ctx, g):
        Started.started.set()
        try:
            if Started.until is None:
                await asyncio.sleep(Started.delay)
            else:
                # What it waits for happens in another thread: polled, bounded by ``delay``.
                deadline = time.monotonic() + Started.delay
                while not Started.until():
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"Started.until() still false after {Started.delay} s")
                    await asyncio.sleep(0.001)
        except asyncio.CancelledError:
            Started.cancelled.set()
            raise
        return g * 2.0


@pytest.fixture
def slow_function():
    Started.started = threading.Event()
    Started.cancelled = threading.Event()
    Started.delay = 30.0
    Started.until = None
    return Started


# ------------------------------------------------------------------------------ the API


def test_public_surface_and_signatures_are_aiograds():
    assert sync.__all__ == ["backward", "functional", "grad", "shutdown"]
    for name in sync.__all__:
        assert inspect.getdoc(getattr(sync, name))

    def parameters(fn):
        # names, kinds and defaults (the annotations name the same types, imported under private
        # names here)
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert parameters(sync.grad) == parameters(ag.grad)
    assert parameters(sync.backward) == parameters(ag.backward)
    assert [p.name for p in inspect.signature(sync.grad).parameters.values()] == [
        "outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs",
        "allow_unused", "is_grads_batched", "materialize_grads",
    ]
    assert [p.name for p in inspect.signature(sync.backward).parameters.values()] == [
        "tensors", "grad_tensors", "retain_graph", "create_graph", "inputs", "atomic",
    ]
    # the public-API rules: every non-module public name is exported
    public = {
        n for n in dir(sync)
        if not n.startswith("_") and n != "annotations" and not inspect.ismodule(getattr(sync, n))
    }
    assert public == set(sync.__all__)


def _mlp_leaves():
    rng = np.random.default_rng(0)
    x = ag.tensor(rng.standard_normal((4, 3)))
    w1 = ag.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    w2 = ag.tensor(rng.standard_normal((2, 5)), requires_grad=True)
    return x, w1, w2


def _mlp_loss(lib, x, w1, w2):
    if lib is ag:
        return F.linear(F.linear(x, w1).tanh(), w2).sigmoid().sum()
    return torch.nn.functional.linear(torch.nn.functional.linear(x, w1).tanh(), w2).sigmoid().sum()


def test_backward_accumulates_like_the_async_api():
    x, w1, w2 = _mlp_leaves()
    sync.backward(_mlp_loss(ag, x, w1, w2))
    sync.backward(_mlp_loss(ag, x, w1, w2))  # accumulates

    x2, v1, v2 = _mlp_leaves()

    async def twice():
        await _mlp_loss(ag, x2, v1, v2).backward()
        await ag.backward(_mlp_loss(ag, x2, v1, v2))

    run_async(twice)
    assert_close(w1.grad, v1.grad.data)
    assert_close(w2.grad, v2.grad.data)
    assert w1.grad.grad_fn is None and not w1.grad.requires_grad


@requires_torch
def test_backward_and_grad_match_torch():
    x, w1, w2 = _mlp_leaves()
    sync.backward(_mlp_loss(ag, x, w1, w2))
    tx, t1, t2 = to_torch(x, requires_grad=False), to_torch(w1), to_torch(w2)
    _mlp_loss(torch, tx, t1, t2).backward()
    assert_close(w1.grad, t1.grad.numpy())
    assert_close(w2.grad, t2.grad.numpy())

    g1, g2 = sync.grad(_mlp_loss(ag, x, w1, w2), [w1, w2], create_graph=True)
    (h1,) = sync.grad((g1 * g1).sum() + g2.sum(), w1)
    u1, u2 = torch.autograd.grad(_mlp_loss(torch, tx, t1, t2), [t1, t2], create_graph=True)
    (k1,) = torch.autograd.grad((u1 * u1).sum() + u2.sum(), t1)
    assert_close(g1, u1.detach().numpy())
    assert_close(g2, u2.detach().numpy())
    assert_close(h1, k1.numpy())


def test_grad_with_create_graph_gives_higher_order_gradients():
    x = leaf(1.0, -2.0, 0.5)
    (g,) = sync.grad((x * x * x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert_close(g, 3 * x.data**2)
    (h,) = sync.grad(g.sum(), x, create_graph=True)
    assert_close(h, 6 * x.data)
    (k,) = sync.grad(h.sum(), x)
    assert_close(k, np.full(3, 6.0))
    assert x.grad is None  # grad() touches no .grad


def test_results_are_usable_by_the_caller_and_by_the_async_api():
    x = leaf(1.0, 2.0)
    (g,) = sync.grad((x * x * x).sum(), x, create_graph=True)
    (h_async,) = run_async(lambda: ag.grad(g.sum(), x, retain_graph=True))
    (h_sync,) = sync.grad(g.sum(), x)
    assert_close(h_async, 6 * x.data)
    assert_close(h_sync, 6 * x.data)
    assert g.tolist() == [3.0, 12.0] and (g * 2).detach().tolist() == [6.0, 24.0]


def test_backward_create_graph_makes_a_differentiable_grad():
    x = leaf(1.0, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference-cycle warning of backward(create_graph)
        sync.backward((x * x * x).sum(), create_graph=True)
    assert x.grad.requires_grad
    (h,) = sync.grad(x.grad.sum(), x)
    assert_close(h, 6 * x.data)


def test_backward_inputs_and_grad_tensors():
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    y = a * b
    sync.backward(y, grad_tensors=ag.tensor([1.0, 10.0]), inputs=[a], retain_graph=True)
    assert a.grad.tolist() == [3.0, 40.0] and b.grad is None
    sync.backward([y.sum(), (a * a).sum()], inputs=b)
    assert b.grad.tolist() == [1.0, 2.0] and a.grad.tolist() == [3.0, 40.0]


def test_grad_inputs_allow_unused_and_materialize_grads():
    a, b, unused = leaf(1.0, 2.0), leaf(3.0, 4.0), leaf(5.0)
    y = (a * b).sum()
    ga, gb = sync.grad(y, (a, b), retain_graph=True)
    assert ga.tolist() == [3.0, 4.0] and gb.tolist() == [1.0, 2.0]
    assert sync.grad(y, [a, unused], allow_unused=True, retain_graph=True)[1] is None
    ga, gu = sync.grad(y, [a, unused], materialize_grads=True, retain_graph=True)
    assert ga.tolist() == [3.0, 4.0] and gu.tolist() == [0.0]
    (gb,) = sync.grad([y, b.sum()], b, grad_outputs=[ag.tensor(2.0), ag.tensor(1.0)])
    assert gb.tolist() == [3.0, 5.0]
    assert a.grad is None and b.grad is None


def test_caller_grad_mode_does_not_change_create_graph():
    x = leaf(1.0, 2.0)
    y = (x * x * x).sum()
    with ag.no_grad():
        (g,) = sync.grad(y, x, create_graph=True)
    (h,) = sync.grad(g.sum(), x)
    assert g.requires_grad and g.grad_fn is not None
    assert_close(h, 6 * x.data)
    with ag.enable_grad():
        (g2,) = sync.grad((x * x).sum(), x)
    assert not g2.requires_grad


def test_the_backward_runs_in_the_callers_context():
    request = contextvars.ContextVar("request", default=None)
    seen, loops = [], []

    async def hook(grad):
        seen.append((request.get(), threading.current_thread().name))
        loops.append(type(asyncio.get_running_loop()).__module__)

    x = leaf(1.0)
    y = x * 2.0
    y.register_hook(hook)
    token = request.set("r-1")
    try:
        sync.backward(y.sum())
    finally:
        request.reset(token)
    assert seen == [("r-1", sync._THREAD_NAME)]
    assert request.get() is None
    try:
        import uvloop  # noqa: F401
    except ImportError:
        assert loops[0].startswith("asyncio")
    else:
        assert loops[0].startswith("uvloop")


def test_anomaly_mode_of_the_caller_applies():
    class Nan(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    def check(call):
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with pytest.raises(RuntimeError) as info:
                call()
        return info.value

    async def async_call():
        x = leaf(1.0)
        with ag.detect_anomaly():
            y = Nan.apply(x).sum()
            await ag.backward(y)

    def sync_call():
        x = leaf(1.0)
        with ag.detect_anomaly():
            y = Nan.apply(x).sum()
            sync.backward(y)

    expected = check(lambda: run_async(async_call))
    got = check(sync_call)
    assert str(got) == str(expected) == "Function 'NanBackward' returned nan values in its 0th output."
    # outside anomaly mode the NaN goes through
    x = leaf(1.0)
    sync.backward(Nan.apply(x).sum())
    assert np.isnan(x.grad.data).all()


# ------------------------------------------------------------------------------ errors


class Failing(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


def _case_no_grad_fn():
    return "backward", (ag.tensor(1.0),), {}


def _case_not_scalar():
    return "backward", (leaf(1.0, 2.0) * 2.0,), {}


def _case_second_backward():
    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    sync.backward(y)
    return "backward", (y,), {}


def _case_function_backward_raises():
    return "backward", (Failing.apply(leaf(1.0)).sum(),), {}


def _case_unused():
    a, b = leaf(1.0), leaf(2.0)
    return "grad", ((a * 2.0).sum(), [a, b]), {}


def _case_materialize_and_not_allow_unused():
    a = leaf(1.0)
    return "grad", ((a * 2.0).sum(), a), {"materialize_grads": True, "allow_unused": False}


def _case_grads_batched():
    a = leaf(1.0)
    return "grad", ((a * 2.0).sum(), a), {"is_grads_batched": True}


def _case_input_without_grad():
    a = leaf(1.0)
    return "grad", ((a * 2.0).sum(), ag.tensor(1.0)), {}


def _case_empty_inputs():
    a = leaf(1.0)
    return "backward", ((a * 2.0).sum(),), {"inputs": []}


ERROR_CASES = {
    "no_grad_fn": (_case_no_grad_fn, RuntimeError, "element 0 of tensors does not require grad"),
    "not_scalar": (_case_not_scalar, RuntimeError, "grad can be implicitly created only for scalar"),
    "second_backward": (_case_second_backward, RuntimeError, "Trying to backward through the graph"),
    "function_raises": (_case_function_backward_raises, ValueError, "boom in backward"),
    "unused": (_case_unused, RuntimeError, "appears to not have been used in the graph"),
    "materialize": (_case_materialize_and_not_allow_unused, ValueError, "allow_unused to be True"),
    "grads_batched": (_case_grads_batched, ValueError, "vmap"),
    "input_without_grad": (_case_input_without_grad, RuntimeError, "does not require grad"),
    "empty_inputs": (_case_empty_inputs, RuntimeError, "cannot be empty"),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_are_the_async_apis(case):
    make, kind, fragment = ERROR_CASES[case]

    name, args, kwargs = make()
    with pytest.raises(kind) as expected:
        run_async(lambda: getattr(ag, name)(*args, **kwargs))

    name, args, kwargs = make()
    with pytest.raises(kind) as got:
        getattr(sync, name)(*args, **kwargs)

    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)
    assert fragment in str(got.value)
    assert getattr(got.value, "__notes__", None) == getattr(expected.value, "__notes__", None)


def test_error_from_a_function_backward_keeps_its_note_and_traceback():
    x = leaf(1.0)
    with pytest.raises(ValueError, match="^boom in backward") as info:
        sync.backward(Failing.apply(x).sum())
    assert info.value.__notes__ == ["while running FailingBackward"]
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    # from this test, through aiograd.sync, into the engine and the Function's backward
    assert frames[0] == "test_error_from_a_function_backward_keeps_its_note_and_traceback"
    assert "backward" in frames[1:] and frames[-1] == "backward"
    assert traceback.extract_tb(info.value.__traceback__)[-1].line == 'raise ValueError("boom in backward")'
    assert x.grad is None


# ------------------------------------------------------------------------------ running loops


async def test_calling_from_a_running_loop_raises_and_submits_nothing():
    sync.shutdown()  # no background loop: the calls below must not start one
    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match=LOOP_ERROR.format(name="backward")):
        sync.backward(y)
    with pytest.raises(RuntimeError, match=LOOP_ERROR.format(name="grad")):
        sync.grad(y, x)
    assert x.grad is None and not portal_threads()
    await ag.backward(y)  # the graph is intact: the refused calls did nothing
    assert x.grad.tolist() == [2.0, 4.0]


def test_calling_from_a_thread_running_another_loop_raises():
    async def main():
        x = leaf(1.0)
        sync.grad((x * 2.0).sum(), x)

    with pytest.raises(RuntimeError, match=LOOP_ERROR.format(name="grad")):
        run_async(main)


def test_calling_from_a_hook_on_the_background_loop_raises_instead_of_deadlocking():
    x, other = leaf(1.0), leaf(2.0)
    y = x * 3.0
    y.register_hook(lambda grad: sync.backward((other * 2.0).sum()))
    with pytest.raises(RuntimeError, match=OWN_LOOP_ERROR.format(name="backward")) as info:
        sync.backward(y.sum())
    assert "use `await aiograd.backward(...)` instead" in str(info.value)
    assert x.grad is None and other.grad is None


def test_calling_from_a_function_backward_on_the_background_loop_raises():
    other = leaf(2.0)

    class Inner(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            (h,) = sync.grad((other * other).sum(), other)
            return g * h

    with pytest.raises(RuntimeError, match=OWN_LOOP_ERROR.format(name="grad")) as info:
        sync.backward(Inner.apply(leaf(1.0)).sum())
    assert info.value.__notes__ == ["while running InnerBackward"]


def test_shutdown_from_the_background_loop_raises():
    x = leaf(1.0)
    y = x * 3.0
    y.register_hook(lambda grad: sync.shutdown())
    with pytest.raises(RuntimeError, match=r"^aiograd\.sync\.shutdown\(\) cannot be called from"):
        sync.backward(y.sum())


def test_a_hook_may_await_the_async_api_or_call_sync_from_a_worker_thread():
    other = leaf(2.0)
    results = []

    async def hook(grad):
        with ag.enable_grad():  # hooks run with grad mode = create_graph
            # Reentrant, on the background loop:
            results.append((await ag.grad((other * other).sum(), other))[0].tolist())
            # A worker thread (its context copied from this backward's) makes a call of its own:
            (g,) = await asyncio.to_thread(sync.grad, (other * other * other).sum(), other)
        results.append(g.tolist())

    x = leaf(1.0)
    y = x * 3.0
    y.register_hook(hook)
    sync.backward(y.sum())
    assert results == [[4.0], [12.0]]
    assert x.grad.tolist() == [3.0]


# ------------------------------------------------------------------------------ threads


def test_threads_share_one_loop_and_accumulate_exactly():
    sync.shutdown()
    threads_before = set(threading.enumerate())
    w = ag.zeros(3, requires_grad=True)
    n_threads, n_calls = 8, 50
    barrier = threading.Barrier(n_threads)
    errors = []

    def work(k: float) -> None:
        try:
            barrier.wait()
            for _ in range(n_calls):
                sync.backward((w * k).sum())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(float(i + 1),)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert w.grad.tolist() == [n_calls * sum(range(1, n_threads + 1))] * 3  # 1800.0, exactly
    new = set(threading.enumerate()) - threads_before
    assert [t.name for t in new] == [sync._THREAD_NAME]  # started once, under the lock


def test_concurrent_grad_calls_from_threads_get_their_own_results():
    w = leaf(1.0, 2.0, 3.0)

    def work(k: float) -> list[list[float]]:
        out = []
        for _ in range(20):
            (g,) = sync.grad((w * w * k).sum(), w)
            out.append(g.tolist())
        return out

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, [float(k) for k in range(1, 9)]))
    for k, out in enumerate(results, start=1):
        assert out == [[2.0 * k, 4.0 * k, 6.0 * k]] * 20
    assert w.grad is None


def test_an_interrupted_wait_cancels_the_backward():
    # A KeyboardInterrupt (SIGINT) reaches the main thread while it waits: the GraphTask is
    # cancelled and has stopped when the exception propagates. The signal is sent once the main
    # thread is seen blocked in that wait (its stack, polled): the backward having started says
    # only that the call was handed over, and an interrupt during the hand-over is the next
    # test's case.
    script = textwrap.dedent(
        """
        import asyncio, os, signal, sys, threading, time
        import aiograd, aiograd.sync

        started, cancelled = threading.Event(), threading.Event()

        class Slow(aiograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2.0

            @staticmethod
            async def backward(ctx, g):
                started.set()
                try:
                    await asyncio.sleep(3600)  # only the interrupt ends it
                except asyncio.CancelledError:
                    cancelled.set()
                    raise
                return g * 2.0

        w = aiograd.ones(2, requires_grad=True)
        y = Slow.apply(w).sum() + (w * 3.0).sum()
        main = threading.main_thread()
        WAITING = [
            ("wait", "threading"), ("result", "concurrent.futures._base"), ("_call", "aiograd.sync"),
        ]

        def waiting_for_the_result():
            # The main thread's innermost frames: aiograd.sync's _call blocked in the call's
            # Future.result, on its condition's lock.
            frame, frames = sys._current_frames().get(main.ident), []
            while frame is not None and len(frames) < len(WAITING):
                frames.append((frame.f_code.co_name, frame.f_globals.get("__name__")))
                frame = frame.f_back
            return frames == WAITING

        sent = []

        def interrupt():
            started.wait()
            deadline = time.monotonic() + 120  # bounds a hang, not a speed check
            while not waiting_for_the_result():
                if time.monotonic() > deadline:
                    print("the main thread never waited for the result", file=sys.stderr, flush=True)
                    os._exit(3)
                time.sleep(0.001)
            sent.append(time.monotonic())
            signal.pthread_kill(main.ident, signal.SIGINT)  # to the waiting thread itself

        threading.Thread(target=interrupt).start()
        try:
            aiograd.sync.backward(y)
        except KeyboardInterrupt:
            # prompt: well within the backward's hour of sleep
            print("interrupted", cancelled.is_set(), w.grad, time.monotonic() - sent[0] < 60)
        (g,) = aiograd.sync.grad((w * w).sum(), w)  # the loop still serves calls
        print(g.tolist())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["interrupted True None True", "[2.0, 2.0]"]


def test_an_interrupt_while_the_call_is_handed_over_cancels_it(monkeypatch):
    """A KeyboardInterrupt that lands inside ``_submit``, after the backward has started on the
    background loop but before the caller holds its future: the backward is cancelled, and has
    stopped when the exception propagates (the race the subprocess test above can hit)."""
    started, cancelled = threading.Event(), []  # (a thread waits for the start: threading's Event)
    monkeypatch.setattr(Blocks, "started", started, raising=False)
    monkeypatch.setattr(Blocks, "cancelled", cancelled)
    submit = sync._submit

    def interrupted_submit(name, fn):
        submit(name, fn)
        started.wait()
        raise KeyboardInterrupt

    w = ag.ones(2, requires_grad=True)
    monkeypatch.setattr(sync, "_submit", interrupted_submit)
    with pytest.raises(KeyboardInterrupt):
        sync.backward(Blocks.apply(w).sum())
    monkeypatch.undo()
    assert cancelled == [True] and w.grad is None
    (g,) = sync.grad((w * w).sum(), w)  # the loop still serves calls
    assert g.tolist() == [2.0, 2.0]


def test_a_call_abandoned_before_it_started_never_starts():
    finished, handover = threading.Event(), sync._Handover()
    handover.abandoned = True
    ran = []

    async def call():
        ran.append(True)

    async def main():
        return sync._spawn(contextvars.copy_context(), call, (), finished, handover)

    assert asyncio.run(main()) is None
    assert finished.is_set() and ran == [] and handover.task is None


# ------------------------------------------------------------------------------ shutdown


def test_shutdown_joins_the_thread_and_the_next_call_starts_a_fresh_loop():
    sync.grad((leaf(1.0) * 2.0).sum(), leaf(1.0), allow_unused=True)
    (first,) = portal_threads()
    threads_before = set(threading.enumerate()) - {first}
    sync.shutdown()
    assert not first.is_alive()
    assert set(threading.enumerate()) <= threads_before  # no thread left behind
    sync.shutdown()  # nothing running: a no-op

    x = leaf(1.0, 2.0)
    (g,) = sync.grad((x * x).sum(), x)
    assert g.tolist() == [2.0, 4.0]
    (second,) = portal_threads()
    assert second is not first and second.daemon
    sync.shutdown()
    assert not second.is_alive() and not portal_threads()


def test_shutdown_waits_for_calls_in_flight(slow_function):
    # The backward returns only once shutdown() has begun (it takes the loop out of
    # ``sync._current`` first), so the call is in flight, whatever the threads' timing, when
    # shutdown() starts waiting for it.
    slow_function.until = lambda: sync._current is None
    slow_function.delay = 120.0  # bounds a hang
    x = leaf(1.0)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = pool.submit(sync.backward, slow_function.apply(x).sum())
        assert slow_function.started.wait(60)  # bounds a hang
        sync.shutdown()
        # the backward completed before shutdown returned (its caller may still be waking up)
        assert x.grad.tolist() == [2.0] and not slow_function.cancelled.is_set()
        assert call.result(60) is None
    assert not portal_threads()


def test_shutdown_cancel_stops_calls_in_flight(slow_function):
    x = leaf(1.0)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = pool.submit(sync.backward, slow_function.apply(x).sum())
        assert slow_function.started.wait(60)  # bounds a hang
        t0 = time.monotonic()
        sync.shutdown(cancel=True)
        assert time.monotonic() - t0 < 10
        with pytest.raises(RuntimeError, match=r"^aiograd\.sync\.backward\(\) was cancelled"):
            call.result(60)
    assert slow_function.cancelled.is_set() and x.grad is None
    assert not portal_threads()
    assert sync.grad((x * 2.0).sum(), x)[0].tolist() == [2.0]  # and a fresh loop serves again


def test_a_notebook_like_script_exits_promptly():
    script = textwrap.dedent(
        """
        import aiograd, aiograd.sync
        x = aiograd.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (g,) = aiograd.sync.grad((x * x).sum(), x)
        print(g.tolist())
        """
    )
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 4.0, 6.0]"
    assert time.monotonic() - t0 < 30


def test_exit_with_a_call_in_flight_on_a_daemon_thread_does_not_hang():
    # At interpreter exit the background loop is stopped, cancelling what still runs there.
    script = textwrap.dedent(
        """
        import asyncio, threading
        import aiograd, aiograd.sync

        started = threading.Event()

        class Forever(aiograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2.0

            @staticmethod
            async def backward(ctx, g):
                started.set()
                await asyncio.sleep(3600)
                return g

        x = aiograd.tensor([1.0], requires_grad=True)
        y = Forever.apply(x).sum()
        threading.Thread(target=aiograd.sync.backward, args=(y,), daemon=True).start()
        assert started.wait(30)
        print("exiting")
        """
    )
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "exiting"
    assert time.monotonic() - t0 < 30


def test_a_worker_thread_of_an_async_backward_may_call_sync():
    # The worker's context is a copy of a backward running on another loop: the call must be a
    # backward of its own on the background loop, not a reentrant one nested in that backward.
    sync.shutdown()  # a fresh background engine, whose statistics are this test's
    other = leaf(2.0)
    results, depths = [], []

    def inner_hook(grad):
        depths.append(ag.get_engine().statistics().deepest_reentrant_depth)

    async def hook(grad):
        with ag.enable_grad():
            z = other * other * other
            z.register_hook(inner_hook)
            (g,) = await asyncio.to_thread(sync.grad, z.sum(), other)
        results.append(g.tolist())

    async def main():
        x = leaf(1.0)
        y = x * 3.0
        y.register_hook(hook)
        await asyncio.wait_for(ag.backward(y.sum()), 20)
        return x.grad.tolist()

    assert run_async(main) == [3.0]
    assert results == [[12.0]] and depths == [0]


async def test_worker_threads_of_a_running_loop_may_call_sync():
    # Their context is copied from the loop's task (sniffio's "current library" included), but no
    # loop runs in them: blocking them is fine.
    import anyio.to_thread

    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    (g,) = await asyncio.to_thread(sync.grad, y, x, None, True)
    assert g.tolist() == [2.0, 4.0]
    (g,) = await anyio.to_thread.run_sync(sync.grad, y, x)
    assert g.tolist() == [2.0, 4.0]


def test_a_loop_that_stopped_behind_our_back_is_replaced():
    x = leaf(1.0)
    sync.grad((x * 2.0).sum(), x)
    current = sync._current
    current.portal.call(current.portal.stop)  # not through shutdown()
    current.thread.join(10)
    assert not current.thread.is_alive()
    assert sync.grad((x * 3.0).sum(), x)[0].tolist() == [3.0]
    assert sync._current is not current and sync._current.thread.is_alive()
    sync.shutdown()
    assert not portal_threads()


def test_atomic_backward_passes_through():
    class Boom(ag.Function):
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
        sync.backward(loss, atomic=True, retain_graph=True)
    assert w.grad is None
    with pytest.raises(ValueError, match="boom"):
        sync.backward(loss)
    assert w.grad.tolist() == [2.0, 2.0]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_neither_hangs_nor_reuses_the_parents_loop() -> None:
    # In a fresh interpreter (no other test's threads): use aiograd.sync, then fork (as torch's
    # DataLoader workers and multiprocessing's "fork" do). The child once hung in the fork:
    # forgetting the parent's portal collected its context manager, whose cleanup waits for
    # the parent's loop thread, which the child does not have.
    script = textwrap.dedent(
        """
        import multiprocessing, aiograd as ag
        from aiograd import sync

        def child(q):
            x = ag.tensor([2.0], requires_grad=True)
            sync.backward((x * x).sum())  # a fresh loop of the child's own
            q.put(float(x.grad.item()))

        x = ag.tensor([3.0], requires_grad=True)
        sync.backward((x * x).sum())
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        print(q.get(timeout=30), float(x.grad.item()))
        p.join(30)
        print(p.exitcode)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["4.0", "6.0", "0"]
