"""Watching GraphTasks: what ``aiograd.profiler`` (traces, progress) and the debug logs see of the
engine.

Off, it costs the per-node path nothing. ``Engine.execute`` asks once per GraphTask whether
anything watches (``watching``, a module global, then ``engine_log.isEnabledFor(DEBUG)``); only
then does the GraphTask get a ``Watch`` and, in its ``evaluate`` slot, ``evaluate_watched``
(profiling, debug logs) or ``evaluate_counted`` (progress alone) instead of the plain
``evaluate``, which ``Engine.handle`` calls for each of its nodes. Every
other GraphTask runs the code it ran before; the offload path and the drive's end test
``graph_task.watch`` once per offloaded node and once per GraphTask.

A Watch records, per GraphTask: its kind (backward or grad), reentrant depth, parent, start,
end and outcome; per node (profiling only): when it became ready (the end of the node whose
gradient made it ready, which is also recorded), started and finished, on which thread and
asyncio task (the caller's drive, a reentrant worker, a device worker), and for an offloaded
node when it was submitted, ran in the executor's thread (which one) and came back. For
progress, it counts the nodes done against the nodes the GraphTask will run.

Everything is recorded on the GraphTask's loop, except an offloaded node's run, which its own
wrapper records in the executor's thread (read on the loop only after its future completes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
import time
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .evaluate import OFFLOADED, evaluate
from .logs import engine_log

if TYPE_CHECKING:
    from .._core._node import Node
    from ..executors import Executor
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = [
    "NodeRecord", "OffloadRecord", "Progress", "Watch", "add_session", "evaluate_counted", "evaluate_watched",
    "progress_callbacks", "progress_scope", "remove_session", "start", "watching",
]

now_ns = time.perf_counter_ns

#: Profiling sessions active now, process-wide: every GraphTask started while one is active, in
#: any thread's loop, is recorded into it. A tuple replaced whole, so any thread may read it.
sessions: tuple[Any, ...] = ()
#: Active sessions plus open progress scopes, in all threads: while 0, no GraphTask is watched
#: (unless the engine's logger is enabled for DEBUG). ``Engine.execute`` reads only this.
watching: int = 0
_lock = threading.Lock()

#: The progress callbacks of ``aiograd.profiler.on_progress`` scopes open in this context.
progress_callbacks: ContextVar[tuple[Callable[[Progress], Any], ...]] = ContextVar(
    "aiograd_progress_callbacks", default=()
)

_graph_task_ids = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class Progress:
    """How far a backward call is: ``done`` of the ``total`` nodes it will run (after pruning
    for ``grad()``/``inputs=``). The last report of a call that succeeded has ``done == total``."""

    done: int
    total: int

    @property
    def fraction(self) -> float:
        """``done / total`` (1.0 for a call with nothing to run)."""
        return self.done / self.total if self.total else 1.0



def add_session(session: Any) -> None:
    """Start recording every GraphTask started from now on into ``session.watches``."""
    global sessions, watching
    with _lock:
        sessions = (*sessions, session)
        watching += 1


def remove_session(session: Any) -> None:
    global sessions, watching
    with _lock:
        sessions = tuple(s for s in sessions if s is not session)
        watching -= 1


def progress_scope(delta: int) -> None:
    """A progress scope opened (+1) or closed (-1), in any thread."""
    global watching
    with _lock:
        watching += delta


class OffloadRecord:
    """An offloaded node: submitted on the loop, run in an executor thread, back on the loop."""

    __slots__ = ("executor", "submit_ns", "run_start_ns", "run_end_ns", "thread", "back_ns", "back_worker")

    def __init__(self, executor: str, submit_ns: int) -> None:
        self.executor = executor
        self.submit_ns = submit_ns
        self.run_start_ns: int | None = None
        self.run_end_ns: int | None = None
        self.thread: tuple[int, str] | None = None  # (ident, name) of the thread it ran in
        self.back_ns: int | None = None  # its result taken back on the loop
        self.back_worker: tuple[int, str, int, str] | None = None


class NodeRecord:
    """One node's run in one GraphTask (times from ``time.perf_counter_ns``)."""

    __slots__ = (
        "name", "node_id", "sequence_nr", "graph_task", "queued_ns", "pusher", "start_ns",
        "end_ns", "worker", "executed", "offload", "error", "cost",
    )

    def __init__(self, node: Node, graph_task: int, queued_ns: int, pusher: NodeRecord | None) -> None:
        self.name: str = node.name()
        self.node_id: int = id(node)
        self.sequence_nr: int = node.sequence_nr
        self.graph_task: int = graph_task
        self.queued_ns: int = queued_ns
        self.pusher: NodeRecord | None = pusher  # the node whose gradient made it ready
        self.start_ns: int = 0
        self.end_ns: int | None = None
        #: (thread ident, thread name, id of the asyncio task, its name) that ran it
        self.worker: tuple[int, str, int, str] = worker_of_task()
        self.executed: bool = True  # False: reached by grad() only to capture its gradient
        self.offload: OffloadRecord | None = None
        self.error: str | None = None
        self.cost: float | None = None  # estimated ns, when debug logs ask for it


def worker_here() -> tuple[int, str, int, str]:
    task = asyncio.current_task()
    thread = threading.current_thread()
    return (thread.ident or 0, thread.name, id(task), task.get_name() if task is not None else "event loop")


#: (a weak reference to the task that asked last, its ``worker_here()``): most nodes run where
#: the previous one did. Weak, so that no task outlives its work because it was profiled.
_last_worker: list[Any] = [None, None]


def worker_of_task() -> tuple[int, str, int, str]:
    """``worker_here()``, cached for the task that asked last (a task runs in one thread)."""
    task = asyncio.current_task()
    last, cached = _last_worker
    worker: tuple[int, str, int, str] = cached
    if task is None or last is None or last() is not task:
        worker = worker_here()
        _last_worker[:] = [weakref.ref(task) if task is not None else None, worker]
    return worker


class Watch:
    """What is recorded of one watched GraphTask."""

    __slots__ = (
        "id", "kind", "depth", "parent", "worker", "start_ns", "end_ns", "outcome", "error",
        "total", "done", "nodes", "running", "ready", "callbacks", "loop", "notify_pending",
        "log", "threshold", "finished", "reported", "evaluate",
    )

    def __init__(self, kind: str, depth: int, parent: Watch | None, total: int) -> None:
        self.id: int = next(_graph_task_ids)
        self.kind = kind
        self.depth = depth
        self.parent: int | None = parent.id if parent is not None else None
        self.worker = worker_here()
        self.start_ns: int = now_ns()
        self.end_ns: int | None = None
        self.outcome: str = "running"  # then "ok", "error" or "cancelled"
        self.error: str | None = None
        self.total = total  # nodes it will run
        self.done = 0
        self.nodes: list[NodeRecord] | None = None  # kept only for profiling sessions
        self.running: dict[Node, NodeRecord] = {}  # started and not finished (offloaded ones)
        self.ready: dict[Node, tuple[int, NodeRecord | None]] = {}  # ready, not started yet
        self.callbacks: tuple[Callable[[Progress], Any], ...] = ()
        self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        self.notify_pending = False
        self.log = False
        self.threshold: float | None = None
        self.finished = False
        self.reported = False  # the last progress report was made
        #: The GraphTask's own ``evaluate`` (chosen when the GraphTask was made), which the watched
        #: one wraps.
        self.evaluate: Callable[..., Any] = evaluate

    # ------------------------------------------------------------------------------- nodes
    def begin(self, node: Node) -> NodeRecord:
        queued = self.ready.pop(node, None)
        if queued is None:
            queued = (self.start_ns, None)
        record = NodeRecord(node, self.id, *queued)
        self.running[node] = record
        record.start_ns = now_ns()
        return record

    def count(self, graph_task: GraphTask, node: Node) -> None:
        """``node`` ran (or was passed over: grad() pruning): progress only, nothing recorded."""
        exec_info = graph_task.exec_info
        if exec_info is not None:
            info = exec_info.get(node)
            if info is None or not info.needed:
                return
        if graph_task.error is None:
            self.done += 1
            if not self.notify_pending:
                self.notify_pending = True
                self.loop.call_soon(self.notify)  # type: ignore[union-attr]  # running: a loop

    def finish(self, graph_task: GraphTask, node: Node) -> None:
        """``node`` ran (or was passed over: grad() pruning) and propagated its gradients."""
        if self.nodes is None and not self.log:  # progress only
            self.count(graph_task, node)
            return
        end = now_ns()
        record = self.running.pop(node)
        record.end_ns = end
        exec_info = graph_task.exec_info
        if exec_info is not None:
            info = exec_info.get(node)
            record.executed = info is not None and info.needed
        if self.nodes is not None:
            self.nodes.append(record)
        # The nodes it made ready: those whose last edge it just fed.
        dependencies = graph_task.dependencies
        ready = self.ready
        for edge in node.next_edges:
            if edge is not None and dependencies.get(edge[0]) == 0 and edge[0] not in ready:
                ready[edge[0]] = (end, record)
        if record.executed and graph_task.error is None:
            self.done += 1
            if self.callbacks and not self.notify_pending:
                self.notify_pending = True
                self.loop.call_soon(self.notify)  # type: ignore[union-attr]  # running: a loop

    def failed(self, node: Node, exc: BaseException) -> None:
        if self.nodes is None and not self.log:  # progress only: nothing to record
            return
        record = self.running.pop(node, None)
        if record is None:
            return
        record.end_ns = now_ns()
        record.error = describe(exc)
        if self.nodes is not None:
            self.nodes.append(record)

    def wrap_offloaded(self, node: Node, call: Callable[[], Any], executor: Executor) -> Callable[[], Any]:
        """``call`` (the node's apply), recording where and when it runs in ``executor``."""
        record = self.running.get(node)
        if record is None:  # progress only
            return call
        offload = record.offload = OffloadRecord(repr(executor), now_ns())
        if self.log:
            engine_log.debug(
                "GraphTask #%d: %s offloaded to %s (estimated %.0f ns, threshold %.0f ns)",
                self.id, record.name, offload.executor, record.cost or 0.0, self.threshold or 0.0,
            )

        def run() -> Any:
            thread = threading.current_thread()
            offload.thread = (thread.ident or 0, thread.name)
            offload.run_start_ns = now_ns()
            try:
                return call()
            finally:
                offload.run_end_ns = now_ns()

        return run

    def came_back(self, node: Node) -> None:
        """An offloaded node's result is being taken back on the loop."""
        record = self.running.get(node)
        if record is not None and record.offload is not None:
            record.offload.back_ns = now_ns()
            record.offload.back_worker = worker_here()

    # ------------------------------------------------------------------------------- the end
    def ended(self, graph_task: GraphTask) -> None:
        """Its drive ended: the future is done (or the drive was interrupted)."""
        if self.finished:
            return
        self.finished = True
        self.end_ns = now_ns()
        future = graph_task.future
        if future.cancelled() or isinstance(graph_task.error, asyncio.CancelledError):
            self.outcome = "cancelled"
        elif graph_task.error is not None:
            self.outcome, self.error = "error", describe(graph_task.error)
        else:
            self.outcome = "ok"
        for node in list(self.running):  # in flight when it ended (failed or cancelled)
            self.failed(node, asyncio.CancelledError())
        self.ready.clear()
        if self.log:
            engine_log.debug(
                "GraphTask #%d (%s, depth %d) ended: %s after %.3f ms, %d of %d nodes run%s",
                self.id, self.kind, self.depth, self.outcome, (self.end_ns - self.start_ns) / 1e6,
                self.done, self.total, f" ({self.error})" if self.error else "",
            )
        if self.callbacks:
            self.notify()  # the last report, made now: before the caller's await returns
            self.reported = True
        self.loop = None  # a profile kept after its loop closed must not keep the loop alive

    def notify(self) -> None:
        """Report progress to the callbacks (at most one report is pending at a time)."""
        self.notify_pending = False
        if self.reported:  # scheduled before the end, which reported already
            return
        progress = Progress(self.done, self.total)
        for callback in self.callbacks:
            try:
                callback(progress)
            except Exception as exc:  # noqa: BLE001 - a callback's bug must not stop the engine
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "aiograd progress callback failed", "exception": exc}
                )


def describe(exc: BaseException) -> str:
    """``TypeName: message``, with the notes the engine added (``while running MulBackward0``)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    notes = getattr(exc, "__notes__", None)
    return text + "".join(f" ({note})" for note in notes) if notes else text


def start(engine: Engine, graph_task: GraphTask, parent: GraphTask | None, kind: str, root: Node) -> None:
    """Called by ``Engine.execute`` when something may watch this GraphTask (after its
    dependencies and pruning are known, before its root is queued)."""
    callbacks = progress_callbacks.get() if parent is None else ()  # a reentrant call is part of a node
    active = sessions
    log = engine_log.isEnabledFor(10)  # DEBUG
    if not (active or callbacks or log):
        return
    exec_info = graph_task.exec_info
    if exec_info is None:
        total = len(graph_task.dependencies) + 1  # every node reached runs, the root too
    else:
        total = sum(1 for info in exec_info.values() if info.needed)
    watch = Watch(kind, graph_task.reentrant_depth, parent.watch if parent is not None else None, total)
    watch.callbacks = callbacks
    watch.log = log
    watch.threshold = engine.offload_threshold
    if active:
        watch.nodes = []
        for session in active:
            session.watches.append(watch)
    graph_task.watch = watch
    watch.evaluate = graph_task.evaluate  # the one the GraphTask chose, run inside
    # Progress alone needs only a count: a lighter evaluate than recording every node.
    graph_task.evaluate = evaluate_watched if active or log else evaluate_counted
    if log:
        engine_log.debug(
            "GraphTask #%d (%s, depth %d) started from %s: %d nodes to run, root %s",
            watch.id, kind, watch.depth, watch.worker[3], total, root.name(),
        )


def evaluate_watched(engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any]) -> Any:
    """``evaluate``, recorded: what ``Engine.handle`` calls for a watched GraphTask's nodes."""
    watch: Watch = graph_task.watch
    record = watch.begin(node)
    cost = None
    if watch.log and graph_task.executor is not None and node._hooks is None:
        record.cost = cost = node.cost(buffer)
    try:
        pending = watch.evaluate(engine, graph_task, node, buffer)
    except BaseException as exc:
        watch.failed(node, exc)
        raise
    if pending is None:
        watch.finish(graph_task, node)
        if cost is not None and cost >= watch.threshold:  # type: ignore[operator]
            engine_log.debug(
                "GraphTask #%d: %s ran on the loop (estimated %.0f ns >= threshold %.0f ns, but "
                "nothing to overlap with and below the stall threshold %.0f ns)",
                watch.id, record.name, cost, watch.threshold, engine.stall_threshold,
            )
        return None
    if pending is OFFLOADED:
        return pending
    return _finish_slow(watch, graph_task, node, pending)


def evaluate_counted(engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any]) -> Any:
    """``evaluate``, counting the nodes done: for a GraphTask watched only for its progress."""
    pending = graph_task.watch.evaluate(engine, graph_task, node, buffer)
    if pending is None:
        graph_task.watch.count(graph_task, node)
        return None
    if pending is OFFLOADED:
        return pending  # counted when its result is propagated (``finish``)
    return _finish_slow(graph_task.watch, graph_task, node, pending)


async def _finish_slow(watch: Watch, graph_task: GraphTask, node: Node, pending: Any) -> None:
    try:
        await pending
    except BaseException as exc:
        watch.failed(node, exc)
        raise
    watch.finish(graph_task, node)

