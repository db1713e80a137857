"""A profile as Chrome Trace Event Format JSON, which Perfetto (ui.perfetto.dev) and
``chrome://tracing`` open.

The layout:

- one "process" per thread that runs an event loop (named ``aiograd loop (thread NAME)``), with
  one track ("thread") per asyncio task that ran nodes there: the caller's task that drives its
  backward, reentrant worker tasks, device workers;
- one "process", ``aiograd executor threads``, with a track per executor thread;
- a node: a complete event (``"ph": "X"``, category ``node``) on the track that ran it, named as
  PyTorch names it (``MulBackward0``), with its GraphTask, sequence number, id and times in
  ``args``. An offloaded node's math is the ``node`` event on its executor thread's track; the
  loop's part is two ``offload`` events, ``submit NAME`` and ``NAME result`` (propagating it);
- a GraphTask: an async span (``"ph": "b"``/``"e"``, category ``graph_task``), ``backward #3``
  or ``grad #4``, with its depth, parent, outcome and error in ``args``;
- arrows (flow events, category ``ready``) from each node to the node it made ready, and from an
  offloaded node's submission to its run and from its run to its result.

Timestamps are microseconds since the profile started.
"""

from __future__ import annotations

import os
from typing import Any

from ._events import GraphTaskEvent, NodeEvent

__all__ = ["chrome_trace"]

EXECUTOR_PID = 1_000_000  # after every loop thread's


class _Tracks:
    """pid/tid numbers for threads and tasks, with their metadata events."""

    def __init__(self) -> None:
        self.loops: dict[int, int] = {}  # loop thread ident -> pid
        self.tasks: dict[tuple[int, int], int] = {}  # (pid, task id) -> tid
        self.threads: dict[int, int] = {}  # executor thread ident -> tid
        self.meta: list[dict[str, Any]] = []

    def loop(self, thread_id: int, thread: str) -> int:
        pid = self.loops.get(thread_id)
        if pid is None:
            pid = self.loops[thread_id] = len(self.loops) + 1
            self.meta.append(_meta("process_name", pid, 0, f"aiograd loop (thread {thread})"))
            self.meta.append(_meta("process_sort_index", pid, 0, pid, key="sort_index"))
        return pid

    def task(self, thread_id: int, thread: str, task_id: int, task: str) -> tuple[int, int]:
        pid = self.loop(thread_id, thread)
        tid = self.tasks.get((pid, task_id))
        if tid is None:
            tid = self.tasks[pid, task_id] = len(self.tasks) + 1
            self.meta.append(_meta("thread_name", pid, tid, task))
        return pid, tid

    def executor_thread(self, thread_id: int, thread: str) -> tuple[int, int]:
        if not self.threads:
            self.meta.append(_meta("process_name", EXECUTOR_PID, 0, "aiograd executor threads"))
        tid = self.threads.get(thread_id)
        if tid is None:
            tid = self.threads[thread_id] = len(self.threads) + 1
            self.meta.append(_meta("thread_name", EXECUTOR_PID, tid, thread))
        return EXECUTOR_PID, tid


def _meta(name: str, pid: int, tid: int, value: Any, key: str = "name") -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {key: value}}


def _slice(name: str, cat: str, track: tuple[int, int], start: float, end: float, args: dict[str, Any]) -> dict[str, Any]:
    pid, tid = track
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": start, "dur": max(end - start, 0.0), "args": args}


def _flow(flow_id: int, source: tuple[tuple[int, int], float, float], target: tuple[tuple[int, int], float]) -> list[dict[str, Any]]:
    """An arrow from the slice ``source`` (track, start, end) to the slice starting at ``target``."""
    (pid, tid), start, end = source
    (to_pid, to_tid), at = target
    return [
        {"ph": "s", "name": "ready", "cat": "ready", "id": flow_id, "pid": pid, "tid": tid, "ts": (start + end) / 2},
        {"ph": "f", "bp": "e", "name": "ready", "cat": "ready", "id": flow_id, "pid": to_pid, "tid": to_tid, "ts": at},
    ]


def chrome_trace(graph_tasks: list[GraphTaskEvent], nodes: list[NodeEvent], end_us: float) -> dict[str, Any]:
    """The trace of these events (``end_us``: where a GraphTask still running is cut)."""
    tracks = _Tracks()
    events: list[dict[str, Any]] = []
    for gt in graph_tasks:
        pid = tracks.loop(gt.thread_id, gt.thread)
        name = f"{gt.kind} #{gt.id}"
        args = {
            "graph_task": gt.id, "kind": gt.kind, "reentrant_depth": gt.depth, "parent": gt.parent,
            "outcome": gt.outcome, "error": gt.error, "nodes_to_run": gt.total, "nodes_run": gt.done,
            "started_by": gt.task,
        }
        common = {"name": name, "cat": "graph_task", "id": gt.id, "pid": pid, "tid": 0}
        events.append({**common, "ph": "b", "ts": gt.start_us, "args": args})
        events.append({**common, "ph": "e", "ts": gt.end_us if gt.end_us is not None else end_us, "args": args})
    # Where each node's gradients were propagated from (its last slice on the loop), for arrows.
    propagated: dict[tuple[int, int], tuple[tuple[int, int], float, float]] = {}
    flows: list[tuple[NodeEvent, tuple[tuple[int, int], float]]] = []
    flow_id = 0
    for node in nodes:
        if not node.executed:
            continue
        loop_track = tracks.task(node.thread_id, node.thread, node.task_id, node.task)
        args = {
            "graph_task": node.graph_task, "sequence_nr": node.sequence_nr, "node_id": node.node_id,
            "queued_us": node.queued_us, "wait_us": node.wait_us, "error": node.error,
        }
        off = node.offload
        if off is None or off.run_start_us is None or off.thread_id is None:
            events.append(_slice(node.name, "node", loop_track, node.start_us, node.end_us, args))
            propagated[node.graph_task, node.sequence_nr] = (loop_track, node.start_us, node.end_us)
        else:
            run_end = off.run_end_us if off.run_end_us is not None else off.run_start_us
            thread_track = tracks.executor_thread(off.thread_id, off.thread or "?")
            back_track = loop_track
            if off.back_task_id is not None:
                back_track = tracks.task(node.thread_id, node.thread, off.back_task_id, off.back_task or "?")
            back = off.back_us if off.back_us is not None else node.end_us
            args.update(executor=off.executor, thread_wait_us=off.wait_us, run_us=off.run_us)
            events.append(_slice(f"submit {node.name}", "offload", loop_track, node.start_us, off.submit_us, args))
            events.append(_slice(node.name, "node", thread_track, off.run_start_us, run_end, args))
            events.append(_slice(f"{node.name} result", "offload", back_track, back, node.end_us, args))
            flow_id += 1
            events += _flow(flow_id, (loop_track, node.start_us, off.submit_us), (thread_track, off.run_start_us))
            flow_id += 1
            events += _flow(flow_id, (thread_track, off.run_start_us, run_end), (back_track, back))
            propagated[node.graph_task, node.sequence_nr] = (back_track, back, node.end_us)
        flows.append((node, (loop_track, node.start_us)))
    for node, target in flows:
        if node.ready_after is not None:
            source = propagated.get((node.graph_task, node.ready_after))
            if source is not None:
                flow_id += 1
                events += _flow(flow_id, source, target)
    return {
        "traceEvents": tracks.meta + events,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "aiograd.profiler", "pid": os.getpid()},
    }
