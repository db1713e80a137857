"""aiograd.profiler.progress and on_progress: totals are the nodes that really run (checked
against node hooks, and against torch running the same graph), reports are in order and end at
the total, and the async iterator passes on the backward's result, error and cancellation."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest
from helpers import Blocks, Fails, Nested, requires_torch, torch

import aiograd as ag
import aiograd.profiler
from aiograd.profiler import Progress

only_asyncio = pytest.mark.aiograd(backends=["asyncio"])


def graph(lib):
    """A graph with a branch (through ``v``) that grad() with respect to ``w`` prunes."""
    w = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
    v = lib.tensor([0.1, 0.2, 0.3], requires_grad=True)
    x = lib.tensor([3.0, 4.0, 5.0])
    a = w * x
    return w, v, (a.tanh() + a + v.exp()).sum()


def count_runs(root) -> list[int]:
    """A post hook on every node reachable from ``root`` (aiograd's or torch's): the number of
    nodes that ran, in a one-element list."""
    ran = [0]

    def hook(grad_inputs, grad_outputs):
        ran[0] += 1

    seen, stack = {root}, [root]
    while stack:
        node = stack.pop()
        node.register_hook(hook)
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return ran


@requires_torch
@only_asyncio
@pytest.mark.parametrize("call", ["backward", "grad"])
async def test_total_is_the_number_of_nodes_that_run(call):
    w, _, loss = graph(ag)
    ran = count_runs(loss.grad_fn)
    reports: list[Progress] = []
    with aiograd.profiler.on_progress(reports.append):
        if call == "backward":
            await loss.backward()
        else:
            await ag.grad(loss, w)
    tw, _, tloss = graph(torch)
    torch_ran = count_runs(tloss.grad_fn)
    if call == "backward":
        tloss.backward()
    else:
        torch.autograd.grad(tloss, tw)
    assert reports[-1] == Progress(ran[0], ran[0])
    assert ran[0] == torch_ran[0]
    assert ran[0] == (5 if call == "grad" else 8)  # grad(): v's branch pruned, w's leaf captured


@only_asyncio
async def test_reports_are_monotonic_and_end_at_the_total():
    y = x = ag.tensor([0.5], requires_grad=True)
    for _ in range(400):  # 801 nodes: the drive yields every 256, and a report is made then
        y = y.tanh() * 0.9
    reports: list[Progress] = []
    with aiograd.profiler.on_progress(reports.append):
        await y.sum().backward()
    assert len(reports) >= 3
    assert [p.total for p in reports] == [802] * len(reports)
    assert [p.done for p in reports] == sorted({p.done for p in reports})  # increasing
    assert reports[-1].done == 802 and reports[-1].fraction == 1.0
    assert x.grad is not None


@only_asyncio
async def test_only_calls_made_inside_the_scope_report():
    w, _, loss = graph(ag)
    reports: list[Progress] = []
    with aiograd.profiler.on_progress(reports.append):
        pass
    await loss.backward(retain_graph=True)
    with aiograd.profiler.on_progress(reports.append):
        # A task started here copies the context, and reports too.
        await asyncio.create_task(ag.grad(loss, w))
    assert reports == [Progress(5, 5)]


@only_asyncio
async def test_the_iterator_runs_the_call_and_keeps_its_result():
    w, _, loss = graph(ag)
    it = aiograd.profiler.progress(ag.grad(loss, w))
    reports = [p async for p in it]
    assert reports[-1] == Progress(5, 5)
    (g,) = it.result
    tw, _, tloss = graph(torch) if torch is not None else (None, None, None)
    if torch is not None:
        (tg,) = torch.autograd.grad(tloss, tw)
        assert g.tolist() == pytest.approx(tg.tolist())
    with pytest.raises(RuntimeError, match="only once"):
        aiter(it)


@only_asyncio
async def test_the_iterator_consumes_tensor_backward_without_the_never_awaited_warning():
    w, _, loss = graph(ag)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning of a backward() never awaited would raise
        reports = [p async for p in aiograd.profiler.progress(loss.backward())]
        gc.collect()
    assert reports[-1] == Progress(8, 8)
    assert w.grad is not None



@only_asyncio
async def test_the_iterator_raises_the_error_of_the_call_after_its_last_report():
    x = ag.tensor([1.0], requires_grad=True)
    loss = (Fails.apply(x) * 3).sum()
    reports = []
    with pytest.raises(ValueError, match="boom in backward"):
        async for p in aiograd.profiler.progress(loss.backward()):
            reports.append(p)
    assert reports[-1] == Progress(2, 4)  # Sum and Mul ran; FailsBackward failed



@only_asyncio
async def test_cancelling_the_iterating_task_cancels_the_call():
    Blocks.started, Blocks.cancelled = asyncio.Event(), []
    x = ag.tensor([1.0], requires_grad=True)
    loss = Blocks.apply(x).sum()

    async def consume():
        async for _ in aiograd.profiler.progress(loss.backward()):
            pass

    consumer = asyncio.create_task(consume())
    await Blocks.started.wait()
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert Blocks.cancelled == [True]  # the backward stopped before the consumer did
    assert x.grad is None



@only_asyncio
async def test_a_reentrant_call_does_not_report_and_a_failing_callback_goes_to_the_loop():
    caught = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda loop, context: caught.append(context))
    reports: list[Progress] = []

    def callback(p: Progress) -> None:
        reports.append(p)
        raise RuntimeError("callback bug")

    x = ag.tensor([2.0], requires_grad=True)
    try:
        with aiograd.profiler.on_progress(callback):
            await Nested.apply(x).sum().backward()
    finally:
        loop.set_exception_handler(None)
    assert x.grad.tolist() == [4.0]
    assert reports == [Progress(3, 3)]  # Sum, NestedBackward, AccumulateGrad: not the inner grad's
    assert [(c["message"], str(c["exception"])) for c in caught] == [("aiograd progress callback failed", "callback bug")]
