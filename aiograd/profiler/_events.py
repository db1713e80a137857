"""What a profile holds, as frozen records: one ``GraphTaskEvent`` per backward call, one
``NodeEvent`` per node run. Times are microseconds since the profile started."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._engine.watch import NodeRecord, OffloadRecord, Watch

__all__ = ["GraphTaskEvent", "NodeEvent", "OffloadEvent", "graph_task_event", "node_event"]


@dataclasses.dataclass(frozen=True)
class OffloadEvent:
    """Where and when an offloaded node's math ran: submitted to ``executor`` on the loop, run
    in the thread ``thread`` (its name; ``thread_id`` its ident), its result taken back on the
    loop at ``back_us`` by the asyncio task ``back_task``. ``wait_us`` is the time it waited for a thread, ``run_us`` the run."""

    executor: str
    submit_us: float
    run_start_us: float | None
    run_end_us: float | None
    back_us: float | None
    thread: str | None
    thread_id: int | None
    back_task: str | None
    back_task_id: int | None

    @property
    def wait_us(self) -> float | None:
        """From submission to the start of the run in the executor's thread."""
        return None if self.run_start_us is None else self.run_start_us - self.submit_us

    @property
    def run_us(self) -> float | None:
        """The run in the executor's thread."""
        if self.run_start_us is None or self.run_end_us is None:
            return None
        return self.run_end_us - self.run_start_us


@dataclasses.dataclass(frozen=True)
class NodeEvent:
    """One node run by one GraphTask: ``name`` (e.g. ``"MulBackward0"``), ``node_id`` (the same
    for the same node object in every GraphTask), ``sequence_nr``, ``graph_task`` (the id of
    its ``GraphTaskEvent``); when it became ready (``queued_us``: when the node that fed its
    last gradient, ``ready_after``, finished, or when the GraphTask started for its root), started
    and finished on the loop; which thread and asyncio task ran it (the caller's task, a
    reentrant or device worker); ``offload`` when its math ran in an executor; ``error`` (type,
    message and the engine's note) when it raised. ``executed`` is False for a node ``grad()``
    only reached to capture its gradient."""

    name: str
    node_id: int
    sequence_nr: int
    graph_task: int
    queued_us: float
    start_us: float
    end_us: float
    thread: str
    thread_id: int
    task: str
    task_id: int
    executed: bool
    ready_after: int | None  # sequence_nr of the node whose gradient made it ready
    offload: OffloadEvent | None
    error: str | None

    @property
    def wait_us(self) -> float:
        """From ready to started."""
        return self.start_us - self.queued_us

    @property
    def duration_us(self) -> float:
        """From started to finished (for an offloaded node, its result propagated)."""
        return self.end_us - self.start_us


@dataclasses.dataclass(frozen=True)
class GraphTaskEvent:
    """One backward call: ``id`` (in start order, process-wide), ``kind`` (``"backward"`` or
    ``"grad"``), ``depth`` (0, or its reentrant depth), ``parent`` (the id of the GraphTask whose
    node started it, for a reentrant one), start and end (None: still running when read),
    ``outcome`` (``"ok"``, ``"error"``, ``"cancelled"`` or ``"running"``), ``error``, the nodes it
    was to run (``total``) and ran (``done``), and the thread (``thread_id`` its ident) and task that started it."""

    id: int
    kind: str
    depth: int
    parent: int | None
    start_us: float
    end_us: float | None
    outcome: str
    error: str | None
    total: int
    done: int
    thread: str
    thread_id: int
    task: str


def _us(ns: int | None, t0: int) -> float | None:
    return None if ns is None else (ns - t0) / 1000


def graph_task_event(watch: Watch, t0: int) -> GraphTaskEvent:
    return GraphTaskEvent(
        id=watch.id, kind=watch.kind, depth=watch.depth, parent=watch.parent,
        start_us=(watch.start_ns - t0) / 1000, end_us=_us(watch.end_ns, t0), outcome=watch.outcome,
        error=watch.error, total=watch.total, done=watch.done, thread=watch.worker[1],
        thread_id=watch.worker[0], task=watch.worker[3],
    )


def _offload_event(offload: OffloadRecord, t0: int) -> OffloadEvent:
    thread, back = offload.thread, offload.back_worker
    return OffloadEvent(
        executor=offload.executor, submit_us=(offload.submit_ns - t0) / 1000,
        run_start_us=_us(offload.run_start_ns, t0), run_end_us=_us(offload.run_end_ns, t0),
        back_us=_us(offload.back_ns, t0), thread=thread[1] if thread else None,
        thread_id=thread[0] if thread else None, back_task=back[3] if back else None,
        back_task_id=back[2] if back else None,
    )


def node_event(record: NodeRecord, t0: int) -> NodeEvent:
    thread_id, thread, task_id, task = record.worker
    return NodeEvent(
        name=record.name, node_id=record.node_id, sequence_nr=record.sequence_nr,
        graph_task=record.graph_task, queued_us=(record.queued_ns - t0) / 1000,
        start_us=(record.start_ns - t0) / 1000, end_us=(record.end_ns - t0) / 1000,  # type: ignore[operator]
        thread=thread, thread_id=thread_id, task=task, task_id=task_id, executed=record.executed,
        ready_after=record.pusher.sequence_nr if record.pusher is not None else None,
        offload=_offload_event(record.offload, t0) if record.offload is not None else None,
        error=record.error,
    )
