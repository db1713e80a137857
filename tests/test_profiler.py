"""aiograd.profiler.profile: what it records of GraphTasks and nodes, and the Chrome trace it
writes (loaded back as JSON and checked against the graph that ran)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter

import numpy as np
import pytest
from helpers import Blocks, Fails, Heavy, requires_torch, torch

import aiograd as ag
import aiograd.profiler
import aiograd.sync
from aiograd._engine import current_graph_task
from aiograd._engine.evaluate import evaluate
from aiograd.executors import ThreadExecutor
from aiograd.function import Function

only_asyncio = pytest.mark.aiograd(backends=["asyncio"])


def graph(lib):
    """The same small graph in aiograd or torch: a branch that meets again (Add), a leaf."""
    w = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
    x = lib.tensor([3.0, 4.0, 5.0])
    h = w * x
    return w, (h.tanh() + h).sum()


def nodes_and_parents(root):
    """Every node reachable from ``root`` (aiograd's), and for each node id the ids of the nodes
    with an edge into it."""
    seen, stack, parents = {id(root): root}, [root], {}
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            child = edge[0]
            parents.setdefault(id(child), set()).add(id(node))
            if id(child) not in seen:
                seen[id(child)] = child
                stack.append(child)
    return list(seen.values()), parents


def torch_node_names(root):
    seen, stack = {root}, [root]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return Counter(type(n).__name__ for n in seen)


@requires_torch
@only_asyncio
async def test_trace_has_one_node_event_per_node_named_as_torch_in_dependency_order(tmp_path):
    w, loss = graph(ag)
    nodes, parents = nodes_and_parents(loss.grad_fn)
    with aiograd.profiler.profile() as prof:
        await loss.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())["traceEvents"]

    node_events = [e for e in trace if e["ph"] == "X" and e["cat"] == "node"]
    assert Counter(e["name"] for e in node_events) == torch_node_names(graph(torch)[1].grad_fn)
    assert {e["args"]["node_id"] for e in node_events} == {id(n) for n in nodes}
    spans = {e["args"]["node_id"]: (e["ts"], e["ts"] + e["dur"]) for e in node_events}
    for child, feeding in parents.items():
        assert spans[child][0] >= max(spans[p][1] for p in feeding)
    # Each node but the root was made ready by one node: one arrow each.
    assert sum(e["ph"] == "s" for e in trace) == len(nodes) - 1
    # The tracks are named: the loop's thread as a process, the caller's task as a thread.
    names = {(e["name"], e["pid"], e["tid"]): e["args"].get("name") for e in trace if e["ph"] == "M"}
    (track,) = {(e["pid"], e["tid"]) for e in node_events}
    assert names["process_name", track[0], 0] == f"aiograd loop (thread {threading.current_thread().name})"
    assert names["thread_name", *track] == asyncio.current_task().get_name()
    (gt,) = prof.graph_tasks()
    assert (gt.kind, gt.depth, gt.outcome, gt.total, gt.done) == ("backward", 0, "ok", len(nodes), len(nodes))
    assert [e["ph"] for e in trace if e.get("cat") == "graph_task"] == ["b", "e"]
    tw, tloss = graph(torch)
    tloss.backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())  # recording changes no result



@only_asyncio
async def test_offloaded_nodes_carry_the_executor_thread():
    executor = ThreadExecutor(2)
    engine = ag.get_engine()
    engine.executors["cpu"] = executor
    try:
        x = ag.tensor([1.0, 2.0], requires_grad=True)
        acc = ag._core._node.grad_accumulator(x)
        root = ag.Tensor._wrap(np.ones(2))
        root._requires_grad, root.grad_fn = True, Heavy(((Heavy(((acc, 0),)), 0), (Heavy(((acc, 0),)), 0)))
        with aiograd.profiler.profile() as prof:
            await root.backward(ag.ones(2))
    finally:
        executor.close()
    assert x.grad.tolist() == [2.0, 2.0]
    heavy = [e for e in prof.events() if e.name == "Heavy"]
    assert len(heavy) == 3
    for event in heavy:
        off = event.offload
        assert off is not None and off.executor == repr(executor)
        assert off.thread.startswith("aiograd") and off.thread_id != threading.get_ident()
        assert event.start_us <= off.submit_us <= off.run_start_us <= off.run_end_us <= off.back_us <= event.end_us
    trace = prof.chrome_trace()["traceEvents"]
    thread_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace if e["name"] == "thread_name"}
    runs = [e for e in trace if e["ph"] == "X" and e["name"] == "Heavy"]
    assert len(runs) == 3
    assert all(thread_names[e["pid"], e["tid"]].startswith("aiograd") for e in runs)
    assert {e["name"] for e in trace if e.get("cat") == "offload"} == {"submit Heavy", "Heavy result"}


@only_asyncio
async def test_concurrent_graph_tasks_are_told_apart():
    (_, first), (_, second) = graph(ag), graph(ag)
    first_nodes = {id(n) for n in nodes_and_parents(first.grad_fn)[0]}
    second_nodes = {id(n) for n in nodes_and_parents(second.grad_fn)[0]}
    with aiograd.profiler.profile() as prof:
        await asyncio.gather(first.backward(), second.backward())
    a, b = prof.graph_tasks()
    assert a.id != b.id and a.task != b.task
    by_task = {gt.id: {e.node_id for e in prof.events() if e.graph_task == gt.id} for gt in (a, b)}
    assert sorted(by_task.values(), key=lambda s: first_nodes == s) == [second_nodes, first_nodes]
    trace = prof.chrome_trace()["traceEvents"]
    tracks = {e["args"]["graph_task"]: (e["pid"], e["tid"]) for e in trace if e.get("cat") == "node"}
    assert tracks[a.id] != tracks[b.id]  # one track per task
    assert sorted(e["id"] for e in trace if e["ph"] == "b") == sorted([a.id, b.id])



@only_asyncio
async def test_graph_task_events_carry_the_error_and_the_node():
    x = ag.tensor([1.0], requires_grad=True)
    loss = Fails.apply(x).sum()
    with aiograd.profiler.profile() as prof:
        with pytest.raises(ValueError, match="boom in backward"):
            await loss.backward()
    (gt,) = prof.graph_tasks()
    assert gt.outcome == "error"
    assert gt.error == "ValueError: boom in backward (while running FailsBackward)"
    failed = [e for e in prof.events() if e.error is not None]
    assert [e.name for e in failed] == ["FailsBackward"]
    (end,) = [e for e in prof.chrome_trace()["traceEvents"] if e["ph"] == "e"]
    assert end["args"]["outcome"] == "error" and "boom in backward" in end["args"]["error"]


class SeesItsGraphTask(Function):
    seen: list = []

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        graph_task = current_graph_task.get()
        SeesItsGraphTask.seen.append((graph_task.watch, graph_task.evaluate))
        return grad


@only_asyncio
async def test_nothing_is_watched_or_recorded_when_no_profile_is_active():
    x = ag.tensor([1.0], requires_grad=True)
    SeesItsGraphTask.seen.clear()
    await SeesItsGraphTask.apply(x).sum().backward()
    with aiograd.profiler.profile() as prof:
        await SeesItsGraphTask.apply(x).sum().backward()
    await SeesItsGraphTask.apply(x).sum().backward()
    (off, on, after) = SeesItsGraphTask.seen
    assert off == (None, evaluate) and after == (None, evaluate)  # the plain per-node path
    assert on[0] is not None and on[1] is not evaluate
    assert len(prof.graph_tasks()) == 1


@only_asyncio
async def test_nested_profiles_each_record_what_started_while_they_were_active():
    w, _ = graph(ag)
    with aiograd.profiler.profile() as outer:
        with aiograd.profiler.profile() as inner:
            await (w * 2).sum().backward()
            with pytest.raises(RuntimeError, match="already active"):
                inner.__enter__()
        (g,) = await ag.grad((w * 3).sum(), w)
    assert [gt.kind for gt in inner.graph_tasks()] == ["backward"]
    assert [gt.kind for gt in outer.graph_tasks()] == ["backward", "grad"]
    # grad() reaches the leaf only to capture its gradient: recorded, not executed.
    grad_nodes = [e for e in outer.events() if e.graph_task == outer.graph_tasks()[1].id]
    assert [(e.name, e.executed) for e in grad_nodes][-1] == ("AccumulateGrad", False)


def test_a_profile_records_aiograd_sync_calls_on_its_background_loop():
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    with aiograd.profiler.profile() as prof:
        aiograd.sync.backward((w * w).sum())
    (gt,) = prof.graph_tasks()
    assert gt.outcome == "ok" and gt.thread != threading.current_thread().name
    assert {e.thread for e in prof.events()} == {gt.thread}
    assert w.grad.tolist() == [2.0, 4.0]


def test_a_profile_records_calls_made_under_trio():
    trio = pytest.importorskip("trio")
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    reports = []

    async def main():
        with aiograd.profiler.on_progress(reports.append):
            return await ag.grad((w * w).sum(), w)

    with aiograd.profiler.profile() as prof:
        (g,) = trio.run(main)
    assert g.tolist() == [2.0, 4.0]
    (gt,) = prof.graph_tasks()  # run on aiograd's background asyncio loop, in its thread
    assert (gt.kind, gt.outcome) == ("grad", "ok") and gt.thread != threading.current_thread().name
    assert reports[-1] == aiograd.profiler.Progress(2, 2)



@only_asyncio
async def test_cancelled_graph_tasks_and_device_workers_are_recorded():
    Blocks.started = asyncio.Event()
    x = ag.tensor([1.0], requires_grad=True)
    s = ag.tensor([1.0, 2.0], device="sim:0", requires_grad=True)
    with aiograd.profiler.profile() as prof:
        call = asyncio.create_task(Blocks.apply(x).sum().backward())
        await Blocks.started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await (s * s).sum().backward()
    cancelled, on_device = prof.graph_tasks()
    assert (cancelled.outcome, on_device.outcome) == ("cancelled", "ok")
    assert [(e.name, e.error) for e in prof.events() if e.graph_task == cancelled.id][-1] == ("BlocksBackward", "CancelledError")
    # Nodes whose gradients are on the device ran on its worker task, a track of its own.
    assert "aiograd worker sim:0" in {e.task for e in prof.events() if e.graph_task == on_device.id}
