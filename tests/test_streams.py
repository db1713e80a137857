"""Streams (issue 12), on ``simcuda``, the CPU double of a CUDA device: nodes launched on the
stream of their forward (or the caller's), gradients handed between streams with events
(PyTorch's InputBuffer rules), the caller's streams synchronized with the leaf streams at the
end, and the awaited backward completing only when the simulated GPU is done, without
blocking the loop.

The double computes numbers at launch but counts work as done only when a stream's thread
reaches it, and raises StreamRaceError for a read that CUDA would race on, so a missing wait
fails these tests deterministically (``test_the_checker_catches_a_missing_hand_over`` shows it
does, by taking the engine's waits away).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from helpers import rng

import aiograd as ag
from aiograd._devices import _device, simcuda
from aiograd._devices._simstreams import check_and_stamp
from aiograd._engine import streams as engine_streams

DEV = ag.device("simcuda:0")
DEV1 = ag.device("simcuda:1")


def on(dev: ag.device, stream: simcuda.Stream) -> object:
    return _device.use_stream(dev, stream)


async def settle_loop(turns: int = 50) -> None:
    """Let every ready coroutine run ``turns`` times (bounded yields, not a timed sleep)."""
    for _ in range(turns):
        await asyncio.sleep(0)


def branches(x: ag.Tensor, w: ag.Tensor) -> ag.Tensor:
    """Two uses of ``x`` (accumulation), a reduction, elementwise and matmul nodes."""
    h = (x @ w).tanh()
    return (h * x.sum(1, keepdim=True) + x.exp() @ w).pow(2).sum()


async def cpu_grads(xs: np.ndarray, ws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, w = ag.tensor(xs, requires_grad=True), ag.tensor(ws, requires_grad=True)
    await branches(x, w).backward()
    return x.grad.numpy(), w.grad.numpy()  # type: ignore[union-attr]


def data() -> tuple[np.ndarray, np.ndarray]:
    r = rng(12)
    return r.standard_normal((4, 3)), r.standard_normal((3, 3)) * 0.5


def host(t: ag.Tensor | None) -> np.ndarray:
    assert t is not None
    return t.cpu().numpy()


@pytest.fixture
def paused() -> Iterator[list[simcuda.Pause]]:
    """Pauses a test takes; released at the end whatever happens, so no stream thread is left
    blocked."""
    pauses: list[simcuda.Pause] = []
    yield pauses
    for pause in pauses:
        pause.release()


# ------------------------------------------------------------------------------ the double itself
def test_a_stream_runs_its_work_in_order_on_a_thread_and_events_complete_later(paused: list[simcuda.Pause]) -> None:
    s = simcuda.Stream(0)
    pause = s.pause()
    paused.append(pause)
    first = s.launch()
    event = s.record()
    ran_on: list[str] = []
    done = threading.Event()
    event.call_when_done(lambda: (ran_on.append(threading.current_thread().name), done.set()))
    assert not event.done and not s.completed(first)  # queued behind the pause
    pause.release()
    event.synchronize()
    done.wait()
    assert event.done and s.completed(first)
    assert ran_on == [f"simcuda {s.name}"]  # the callback ran on the stream's thread
    called: list[int] = []
    event.call_when_done(lambda: called.append(1))  # already done: at once
    assert called == [1]


def test_the_checker_flags_a_read_of_another_streams_write_until_it_is_waited_for() -> None:
    a, b = simcuda.Stream(0), simcuda.Stream(0)
    x = np.zeros(3)
    check_and_stamp(a, [], [x])
    with pytest.raises(simcuda.StreamRaceError, match="unsynchronized read on simcuda: .* reads an array written on .*work item 1"):
        check_and_stamp(b, [x], [])
    check_and_stamp(a, [x], [])  # the writer's own stream may read it
    early = a.record()
    check_and_stamp(a, [], [x])  # written again, after the event
    b.wait(early)
    with pytest.raises(simcuda.StreamRaceError):
        check_and_stamp(b, [x], [])  # the event is older than the last write
    b.wait(a.record())
    check_and_stamp(b, [x], [])
    # Transitively: c waits for b, which had waited for a.
    c = simcuda.Stream(0)
    c.wait(b.record())
    check_and_stamp(c, [x], [])


def test_a_host_read_waits_for_the_write(paused: list[simcuda.Pause]) -> None:
    s = simcuda.Stream(0)
    pause = s.pause()
    paused.append(pause)
    x = np.ones(2)
    position = check_and_stamp(s, [], [x])
    seen: list[bool] = []
    reader = threading.Thread(target=lambda: (simcuda.to_host(x), seen.append(s.completed(position))))
    reader.start()
    assert not s.completed(position)
    pause.release()
    reader.join()
    assert seen == [True]


# ------------------------------------------------------------------------------ the engine
async def test_backward_on_simcuda_matches_the_cpu() -> None:
    xs, ws = data()
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    await branches(x, w).backward()
    gx, gw = await cpu_grads(xs, ws)
    np.testing.assert_allclose(host(x.grad), gx, rtol=1e-12)
    np.testing.assert_allclose(host(w.grad), gw, rtol=1e-12)
    assert x.grad is not None and x.grad.device is DEV


async def test_backward_completes_only_when_the_gpu_is_done_and_the_loop_keeps_serving(paused: list[simcuda.Pause]) -> None:
    xs, ws = data()
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    loss = branches(x, w)
    pause = simcuda.default_stream(0).pause()  # the caller's stream: the GPU is "busy"
    paused.append(pause)
    backward = asyncio.ensure_future(loss.backward())
    served = 0

    async def other_work() -> None:
        nonlocal served
        while not backward.done():
            served += 1
            await asyncio.sleep(0)

    other = asyncio.ensure_future(other_work())
    await settle_loop()
    assert not backward.done()  # every node ran; the GPU work is pending
    assert served >= 40  # and the loop went on serving the other coroutine
    pause.release()
    await backward
    await other
    gx, _ = await cpu_grads(xs, ws)
    np.testing.assert_allclose(host(x.grad), gx, rtol=1e-12)


async def test_forward_streams_are_backward_streams_and_the_hand_overs_are_waited_for() -> None:
    xs, ws = data()
    s1, s2 = simcuda.Stream(0), simcuda.Stream(0)
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    with on(DEV, s1):
        a = (x @ w).tanh()  # recorded on s1
    with on(DEV, s2):
        b = x.exp() @ w  # recorded on s2
    loss = (a * b).sum()  # on the default stream
    launched = (s1.launched, s2.launched)
    await loss.backward()
    assert s1.launched > launched[0] and s2.launched > launched[1]  # the branches ran there
    x2, w2 = ag.tensor(xs, requires_grad=True), ag.tensor(ws, requires_grad=True)
    await ((x2 @ w2).tanh() * (x2.exp() @ w2)).sum().backward()
    np.testing.assert_allclose(host(x.grad), host(x2.grad), rtol=1e-12)
    np.testing.assert_allclose(host(w.grad), host(w2.grad), rtol=1e-12)
    # The leaves ran on s1 and s2; the caller's (default) stream waited for both at the end.
    default = simcuda.default_stream(0)
    assert default.has_seen(s1, s1.launched) and default.has_seen(s2, s2.launched)


async def test_the_checker_catches_a_missing_hand_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the engine's waits, the same graph is a race: the test above can fail."""
    monkeypatch.setattr(engine_streams, "wait", lambda *args: None)
    xs, ws = data()
    s1, s2 = simcuda.Stream(0), simcuda.Stream(0)
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    with on(DEV, s1):
        a = (x @ w).tanh()
    with on(DEV, s2):
        b = x.exp() @ w
    with pytest.raises(simcuda.StreamRaceError, match="unsynchronized read"):
        await (a * b).sum().backward()
    monkeypatch.undo()
    await (x * 2).sum().backward()  # the engine is still usable


async def test_a_backward_called_on_a_side_stream_runs_there() -> None:
    s = simcuda.Stream(0)
    x = ag.tensor(data()[0], device=DEV, requires_grad=True)
    loss = (x * x).sum()
    before = s.launched
    with on(DEV, s):  # (held across the await: nothing else runs on this loop meanwhile)
        await loss.backward()
    assert s.launched > before
    np.testing.assert_allclose(host(x.grad), 2 * data()[0])


async def test_statistics_count_the_waits() -> None:
    engine = ag.get_engine()
    s1 = simcuda.Stream(0)
    x = ag.tensor(data()[0], device=DEV, requires_grad=True)
    with on(DEV, s1):
        y = x.exp()
    await (y * 3).sum().backward()
    assert engine.statistics().graph_tasks_in_flight == 0
    np.testing.assert_allclose(host(x.grad), 3 * np.exp(data()[0]))


async def test_between_devices_the_consumer_waits_for_its_default_stream() -> None:
    xs, _ = data()
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    y = x.to(DEV1).sin().to(DEV).cos().sum()
    await y.backward()
    expected = -np.sin(np.sin(xs)) * np.cos(xs)
    np.testing.assert_allclose(host(x.grad), expected, rtol=1e-12)
    assert x.grad is not None and x.grad.device is DEV


async def test_grad_captures_are_leaf_streams() -> None:
    s = simcuda.Stream(0)
    xs, ws = data()
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    with on(DEV, s):
        loss = branches(x, w)
    gx, gw = await ag.grad(loss, (x, w))
    assert simcuda.default_stream(0).has_seen(s, s.launched)
    ex, ew = await cpu_grads(xs, ws)
    np.testing.assert_allclose(host(gx), ex, rtol=1e-12)
    np.testing.assert_allclose(host(gw), ew, rtol=1e-12)


async def test_hooks_see_the_nodes_work_and_their_changes_reach_it() -> None:
    s = simcuda.Stream(0)
    x = ag.tensor(data()[0], device=DEV, requires_grad=True)
    seen: list[np.ndarray] = []
    with on(DEV, s):
        y = x.sin()
        z = y * 2

    async def async_hook(g: ag.Tensor) -> ag.Tensor:
        await asyncio.sleep(0)
        return g * 10

    y.register_hook(lambda g: seen.append(host(g)) or g + 1)  # type: ignore[func-returns-value]
    x.register_hook(async_hook)
    await z.sum().backward()
    np.testing.assert_allclose(seen[0], np.full((4, 3), 2.0))
    np.testing.assert_allclose(host(x.grad), 10 * 3 * np.cos(data()[0]), rtol=1e-12)


async def test_anomaly_mode_checks_nans_on_the_nodes_stream() -> None:
    s = simcuda.Stream(0)
    x = ag.tensor([-1.0, 4.0], device=DEV, requires_grad=True)
    with on(DEV, s):
        y = x.sqrt().sum()  # SqrtBackward0 makes a NaN gradient at -1
    with pytest.warns(UserWarning, match="Anomaly Detection"), ag.detect_anomaly(), \
            pytest.warns(UserWarning, match="Error detected in SqrtBackward0"), pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output."):
        await y.backward()


async def test_deterministic_mode_sums_on_the_consumers_stream() -> None:
    xs, ws = data()
    s1, s2 = simcuda.Stream(0), simcuda.Stream(0)
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    with on(DEV, s1):
        a = x @ w
    with on(DEV, s2):
        b = (x * 3) @ w
    ag.use_deterministic_algorithms(True)
    try:
        await (a + b).sum().backward()
    finally:
        ag.use_deterministic_algorithms(False)
    np.testing.assert_allclose(host(x.grad), 4 * np.ones((4, 3)) @ ws.T, rtol=1e-12)


async def test_checkpoint_recomputes_on_simcuda() -> None:
    xs, ws = data()
    x = ag.tensor(xs, device=DEV, requires_grad=True)
    w = ag.tensor(ws, device=DEV, requires_grad=True)
    for use_reentrant in (True, False):
        x.grad = w.grad = None
        out = ag.checkpoint(branches, x, w, use_reentrant=use_reentrant)
        await out.backward()
        gx, gw = await cpu_grads(xs, ws)
        np.testing.assert_allclose(host(x.grad), gx, rtol=1e-12)
        np.testing.assert_allclose(host(w.grad), gw, rtol=1e-12)


async def test_cancelling_while_the_gpu_works_leaves_the_engine_usable(paused: list[simcuda.Pause]) -> None:
    x = ag.tensor(data()[0], device=DEV, requires_grad=True)
    loss = (x * x).sum()
    pause = simcuda.default_stream(0).pause()
    paused.append(pause)
    backward = asyncio.ensure_future(loss.backward())
    await settle_loop()
    assert not backward.done()
    backward.cancel()
    with pytest.raises(asyncio.CancelledError):
        await backward
    pause.release()  # the event completes later; its callback finds nobody waiting
    simcuda.default_stream(0).synchronize()
    x.grad = None
    await (x * 3).sum().backward()
    np.testing.assert_allclose(host(x.grad), np.full((4, 3), 3.0))


async def test_every_op_family_on_simcuda_matches_the_cpu() -> None:
    """The op specs of tests/test_devices.py (values, gradients, second-order gradients, every
    result on the device), on a device with streams: alternately on its default stream and in
    a side stream, so each node's work goes through the stream hand-overs and the checker."""
    import test_devices

    side = simcuda.Stream(0)
    specs = [p.values[0] for p in test_devices.SPECS]
    for i, spec in enumerate(specs):
        fn, args = functools.partial(spec.fn, ag), spec.arrays()
        if i % 2:
            with on(DEV, side):  # (held across awaits: nothing else runs on this loop)
                await test_devices.assert_parity(fn, args, second=spec.gradgrad, dev=DEV)
        else:
            await test_devices.assert_parity(fn, args, second=spec.gradgrad, dev=DEV)
    for case in test_devices.R_CASES:
        data = test_devices.test_ops_reduction.make_input(case)
        await test_devices.assert_parity(case.fn, [data], second=case.gradgrad, dev=DEV)
