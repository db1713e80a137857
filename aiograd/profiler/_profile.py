"""``aiograd.profiler.profile``: record what the engine does while it is active."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from .._engine import watch
from ._chrome import chrome_trace
from ._events import GraphTaskEvent, NodeEvent, graph_task_event, node_event

__all__ = ["NodeAverage", "profile"]


@dataclasses.dataclass(frozen=True)
class NodeAverage:
    """``profile.key_averages()``'s row: the nodes named ``name`` that ran (``count``), their
    time from start to finish in total, on average and at most (microseconds), and how many of
    them ran in an executor (``offloaded``)."""

    name: str
    count: int
    total_us: float
    mean_us: float
    max_us: float
    offloaded: int


class profile:
    """Record every GraphTask (backward or grad call) started while the block runs, and each node
    it runs: when it became ready, started and finished, on which asyncio task and thread, and,
    for a node offloaded to an executor, in which thread and when::

        with aiograd.profiler.profile() as prof:
            await loss.backward()
        prof.export_chrome_trace("trace.json")  # open it in ui.perfetto.dev

    Process-wide: GraphTasks started in any thread's event loop while the block is active are
    recorded (``aiograd.sync``'s background loop, the one trio calls use, other threads' loops);
    GraphTasks started before it are not, and one still running when it ends is recorded as far
    as it got when the profile is read. Profiles may nest or overlap (in any threads): each
    records the GraphTasks started while it is active. Off, the engine pays nothing per node;
    on, about a few microseconds per node (docs/tracing.md has the measured figures).
    """

    def __init__(self) -> None:
        #: The engine's records of the GraphTasks started while active (appended by the engine).
        self.watches: list[watch.Watch] = []
        self._t0: int = 0
        self._end_ns: int | None = None
        self._active = False

    def __enter__(self) -> profile:
        if self._active:
            raise RuntimeError("this profile is already active")
        self._active = True
        self.watches.clear()
        self._t0 = watch.now_ns()
        self._end_ns = None
        watch.add_session(self)
        return self

    def __exit__(self, *exc: object) -> None:
        watch.remove_session(self)
        self._end_ns = watch.now_ns()
        self._active = False

    def graph_tasks(self) -> list[GraphTaskEvent]:
        """One event per GraphTask recorded, in start order."""
        return [graph_task_event(w, self._t0) for w in list(self.watches)]

    def events(self) -> list[NodeEvent]:
        """One event per node that finished (or failed), in the order they started."""
        found = [node_event(r, self._t0) for w in list(self.watches) for r in list(w.nodes or ())]
        found.sort(key=lambda e: e.start_us)
        return found

    def key_averages(self) -> list[NodeAverage]:
        """The nodes that ran, by name, the most total time first (torch's ``key_averages``)."""
        groups: dict[str, list[NodeEvent]] = {}
        for event in self.events():
            if event.executed:
                groups.setdefault(event.name, []).append(event)
        rows = []
        for name, events in groups.items():
            times = [e.duration_us if e.offload is None or e.offload.run_us is None else e.offload.run_us for e in events]
            rows.append(NodeAverage(
                name, len(events), sum(times), sum(times) / len(times), max(times),
                sum(e.offload is not None for e in events),
            ))
        rows.sort(key=lambda row: -row.total_us)
        return rows

    def table(self, row_limit: int = 20) -> str:
        """``key_averages()`` as a text table (an offloaded node's time is its executor run)."""
        lines = [f"{'node':<32}{'count':>8}{'total us':>12}{'mean us':>10}{'max us':>10}{'offloaded':>11}"]
        for row in self.key_averages()[:row_limit]:
            lines.append(
                f"{row.name:<32}{row.count:>8}{row.total_us:>12.1f}{row.mean_us:>10.1f}{row.max_us:>10.1f}{row.offloaded:>11}"
            )
        return "\n".join(lines)

    def chrome_trace(self) -> dict[str, Any]:
        """The trace as a dict in Chrome Trace Event Format (what ``export_chrome_trace`` writes)."""
        end = self._end_ns if self._end_ns is not None else watch.now_ns()
        return chrome_trace(self.graph_tasks(), self.events(), (end - self._t0) / 1000)

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the trace as Chrome Trace Event Format JSON: open it in ui.perfetto.dev (or
        ``chrome://tracing``). docs/tracing.md describes its tracks."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)
