"""The backward engine: PyTorch's Engine::execute as coroutines on one event loop.

One GraphTask per ``backward()``/``grad()`` call. Its CPU work is driven by the coroutine that
awaits it, from a ready queue ordered like PyTorch's (reentrant depth, then sequence number), and
that coroutine drains every ready NodeTask without awaiting. All GraphTask state is touched only on
the loop, so nothing here takes a lock.

A NodeTask is a plain tuple, ``(kind, -reentrant_depth, -sequence_nr, tie, graph_task, node,
buffer)``: the heap compares the first four fields (``tie`` is unique, so comparison never reaches
the objects behind it) and allocating a tuple is the cheapest way to carry the rest.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
import itertools
import weakref
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _device
from ._anomaly import anomaly_state, current_node, warn_with_history
from ._cost import DEFAULT_OFFLOAD_THRESHOLD_NS, DEFAULT_STALL_THRESHOLD_NS, NS_PER_ELEMENT
from ._device import CPU
from ._grad_mode import _grad_enabled
from ._graph_context import current_graph_task
from ._hooks import (
    run_post_accumulate_hooks,
    run_post_hooks,
    run_pre_hooks,
    run_retains_grad,
    run_tensor_pre_hooks,
)
from ._node import AccumulateGrad, Edge, GraphRoot, Node, owns
from ._reentrant import DEFAULT_MAX_REENTRANT_DEPTH, stack_has_room
from .executors import Executor

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["Engine", "GraphTask", "get_engine", "queue_callback"]

#: NodeTask kinds, in the order the queue serves them. DONE carries an offloaded node's result
#: back to the loop: ``(DONE, 0, 0, tie, graph_task, node, (buffer, future))``. There are no
#: wake-up or shutdown tasks: several coroutines may drain one queue (nested reentrant drives,
#: overflow workers), so a GraphTask's completion wakes them all (``ReadyQueue.wake_all``) and
#: each checks its own GraphTask, and device workers end by themselves when their queue is empty.
DONE, RUN = 0, 1

#: What ``_evaluate`` returns for a node it handed to an executor.
OFFLOADED = object()

_tie = itertools.count()

#: Becomes True (for good) when the first non-CPU tensor is made; until then no routing cost.
DEVICES = False
_device.watch(globals())

#: The queue the current context drains and how many drives are nested on this task's stack
#: (PyTorch's ``local_ready_queue`` and ``current_depth``): a backward called from a node runs
#: its NodeTasks on that queue, nested while the count is below the engine's limit.
current_worker: contextvars.ContextVar[tuple[ReadyQueue, int] | None] = contextvars.ContextVar(
    "aiograd_current_worker", default=None
)


class ExecInfo:
    """Why a node runs under ``grad()``/``backward(inputs=)``: it leads to an input
    (``needed``), or it is one whose gradient is captured (``captures``)."""

    __slots__ = ("needed", "captures")

    def __init__(self) -> None:
        self.needed = False
        self.captures: list[tuple[int, int]] = []  # (input_nr at the node, index in the result)

    def should_execute(self) -> bool:
        return self.needed or bool(self.captures)


class GraphTask:
    """The state of one backward call (see ENGINE.md, "Objects")."""

    __slots__ = (
        "keep_graph",
        "create_graph",
        "reentrant_depth",
        "dependencies",
        "not_ready",
        "exec_info",
        "captured",
        "outstanding",
        "error",
        "future",
        "queue",
        "final_callbacks",
        "anomaly",
        "check_nan",
        "deterministic",
        "contributions",
        "in_flight",
        "deferred",
        "executor",
        "small_size",
        "checkpoint_valid",
        "children",
        "staged",
        "device_waits",
        "__weakref__",
    )

    def __init__(
        self, keep_graph: bool, create_graph: bool, reentrant_depth: int, queue: ReadyQueue
    ) -> None:
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.reentrant_depth = reentrant_depth
        self.dependencies: dict[Node, int] = {}
        self.not_ready: dict[Node, list[Any]] = {}
        self.exec_info: dict[Node, ExecInfo] | None = None
        self.captured: list[Tensor | None] = []
        self.outstanding = 0
        self.error: BaseException | None = None
        self.future: asyncio.Future[list[Tensor | None]] = asyncio.get_running_loop().create_future()
        self.queue = queue
        self.final_callbacks: list[Callable[[], Any]] = []
        # Anomaly mode of the caller: every node then takes the slow path, which checks NaNs and
        # reports the forward history of a failing node.
        self.anomaly, check_nan = anomaly_state()
        self.check_nan = self.anomaly and check_nan
        # Accumulate each InputBuffer slot in a fixed order, whatever order offloaded nodes
        # finish in (use_deterministic_algorithms).
        self.deterministic = _deterministic
        #: (node, input_nr) -> [(producer key, grad)], summed in key order once the node is ready
        self.contributions: dict[tuple[Node, int], list[tuple[tuple[int, int], Any]]] = {}
        self.in_flight = 0  # this task's nodes running in an executor
        self.executor: Executor | None = None  # where its CPU nodes may go (set by the engine)
        self.small_size = float("inf")  # gradients below this size are never offloaded
        self.deferred: list[tuple[Node, list[Any], Executor]] = []  # waiting for capacity
        #: False under grad() or backward(inputs=), and in any backward nested in one: a
        #: reentrant checkpoint cannot hand its gradients to such a call.
        self.checkpoint_valid = True
        #: Reentrant GraphTasks running inside this one's nodes; they stop if this one fails.
        self.children: list[GraphTask] | None = None
        #: ``backward(atomic=True)``: where each captured gradient goes when the GraphTask
        #: completes (an AccumulateGrad, or a non-leaf input tensor); None otherwise.
        self.staged: list[Any] | None = None
        #: Its nodes being awaited on device workers (asyncio tasks), cancelled if it fails.
        self.device_waits: set[asyncio.Task[Any]] | None = None


def _buffer_device(buffer: list[Any]) -> Any:
    """The first non-CPU device among a NodeTask's gradients (where it runs), or None."""
    for grad in buffer:
        if grad is not None and grad._device is not CPU:
            return grad._device
    return None


class ReadyQueue(asyncio.PriorityQueue):  # type: ignore[type-arg]
    """NodeTasks waiting to run, most urgent first.

    ``push``/``pop`` are the engine's fast path: the heap operations of ``put_nowait``/
    ``get_nowait`` without their bookkeeping for ``join()`` (never used here). A waiting
    ``get()`` is still woken, so awaiting an empty queue works as usual.
    """

    def push(self, task: tuple[Any, ...]) -> None:
        heappush(self._queue, task)  # type: ignore[attr-defined]
        if self._getters:  # type: ignore[attr-defined]
            self._wakeup_next(self._getters)  # type: ignore[attr-defined]

    def pop(self) -> tuple[Any, ...]:
        return heappop(self._queue)  # type: ignore[attr-defined]

    async def wait(self) -> None:
        """Return after the next push (which wakes one waiter) or ``wake_all``; the queue may
        be empty again by then, so callers re-check their condition."""
        waiter = asyncio.get_running_loop().create_future()
        getters = self._getters  # type: ignore[attr-defined]
        getters.append(waiter)
        try:
            await waiter
        except BaseException:
            waiter.cancel()
            try:
                getters.remove(waiter)
            except ValueError:
                pass
            self.hand_on()  # a push may have woken this waiter just before it was cancelled
            raise

    def wake_all(self) -> None:
        """Wake every waiter: a GraphTask drained from this queue finished, and only the
        coroutine driving it knows to stop."""
        getters = self._getters  # type: ignore[attr-defined]
        while getters:
            waiter = getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def hand_on(self) -> None:
        """A drainer leaving work behind wakes another one, if any waits."""
        if self._queue and self._getters:  # type: ignore[attr-defined]
            self._wakeup_next(self._getters)  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class EngineStatistics:
    """A snapshot of ``Engine.statistics()``.

    Counters since the engine was made: ``nodes_executed``, ``nodes_offloaded`` (run in an
    executor), ``max_nodes_in_flight``, ``deepest_reentrant_depth`` (0: no reentrant backward
    yet), ``reentrant_workers_started`` (reentrant GraphTasks past the nesting limit). State now:
    ``graph_tasks_in_flight`` (reentrant ones included), ``nodes_in_flight`` (in executors),
    ``queue_depths`` (NodeTasks waiting: ``"cpu"`` summed over the running calls' own queues,
    then one entry per device queue, e.g. ``"sim:0"``), ``executor_occupancy`` (device type ->
    (nodes in flight, capacity) of each executor that has run a node). Settings:
    ``offload_threshold_ns``, ``nodes_per_turn``, ``executors`` (device type -> repr).
    """

    graph_tasks_in_flight: int
    nodes_executed: int
    nodes_offloaded: int
    nodes_in_flight: int
    max_nodes_in_flight: int
    offload_threshold_ns: float | None
    executors: dict[str, str]
    deepest_reentrant_depth: int
    reentrant_workers_started: int
    nodes_per_turn: int | None
    queue_depths: dict[str, int]
    executor_occupancy: dict[str, tuple[int, int]]


#: NodeTasks a drive runs before it yields to the event loop (Engine.nodes_per_turn): at 2-5 us
#: a small node, a turn lasts about 0.5-1.5 ms, and the yield (a few us) costs about 1% of it.
DEFAULT_NODES_PER_TURN = 256

_deterministic = False
_default_executors: dict[str, Executor] = {}


def use_deterministic_algorithms(mode: bool) -> None:
    """With ``True``, gradients are bitwise identical to a serial run whatever order offloaded
    nodes finish in: each InputBuffer slot adds its contributions in a fixed order (that of the
    producing nodes' sequence numbers) once all have arrived."""
    global _deterministic
    _deterministic = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True)``."""
    return _deterministic


def set_executor(device_type: str, executor: Executor | None) -> None:
    """Use ``executor`` for the heavy nodes of ``device_type`` (e.g. ``"cpu"``) in every engine
    that was not given its own; None restores the default (a ThreadExecutor for the CPU)."""
    if executor is None:
        _default_executors.pop(device_type, None)
    elif not isinstance(executor, Executor):
        raise TypeError(f"expected an aiograd.executors.Executor, got {type(executor).__name__}")
    else:
        _default_executors[device_type] = executor


_registry_executors: dict[str, Executor] = {}


def get_executor(device_type: str) -> Executor:
    """The executor that engines without their own use for ``device_type``: the one given to
    ``set_executor``, else one instance (shared) of the device type's registered default, a
    ThreadExecutor for the CPU and an InlineExecutor for ``sim`` devices."""
    executor = _default_executors.get(device_type)
    if executor is not None:
        return executor
    executor = _registry_executors.get(device_type)
    if executor is None:
        executor = _registry_executors[device_type] = _device.device_type(device_type).default_executor()
    return executor


class _DeviceQueue(ReadyQueue):
    """A device's queue: pushing work starts its worker task if none is running."""

    def __init__(self, engine: Engine, dev: Any) -> None:
        super().__init__()
        self._engine = engine
        self._device = dev
        self._worker: asyncio.Task[None] | None = None

    def push(self, task: tuple[Any, ...]) -> None:
        super().push(task)
        worker = self._worker
        if worker is None or worker.done():
            self._worker = self._engine.loop.create_task(
                self._engine._device_worker(self), name=f"aiograd worker {self._device}"
            )


class Engine:
    """Runs GraphTasks on one event loop; ``get_engine()`` returns the running loop's."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        executors: dict[str, Executor] | None = None,
        offload_threshold: float | None = DEFAULT_OFFLOAD_THRESHOLD_NS,
        stall_threshold: float = DEFAULT_STALL_THRESHOLD_NS,
        max_reentrant_depth: int = DEFAULT_MAX_REENTRANT_DEPTH,
        nodes_per_turn: int | None = DEFAULT_NODES_PER_TURN,
    ) -> None:
        """``executors`` maps device types to executors for this engine (others come from
        ``set_executor``/the defaults). A node whose estimated cost (ns, ``Node.cost``) reaches
        ``offload_threshold`` runs in the executor when it can overlap with other work of its
        GraphTask (other ready nodes, or nodes in flight); a node alone leaves the loop only from
        ``stall_threshold``, when running it inline would hold the loop that long. None as
        ``offload_threshold`` keeps every node on the loop.

        A backward awaited inside a node is reentrant: it is driven by the awaiting code, nested
        on its stack, for up to ``max_reentrant_depth`` levels per stack (and while the stack has
        room below the recursion limit); deeper ones move to a fresh worker task.

        Fairness: a drive (or device worker) that has run ``nodes_per_turn`` NodeTasks without
        awaiting yields to the event loop, which then runs every other ready coroutine (other
        backward calls included, round-robin in the loop's FIFO order) before it continues. None
        never yields (a backward of small nodes then holds the loop until it completes)."""
        if max_reentrant_depth < 0:
            raise ValueError(f"max_reentrant_depth must be >= 0, got {max_reentrant_depth}")
        if nodes_per_turn is not None and nodes_per_turn < 1:
            raise ValueError(f"nodes_per_turn must be None or >= 1, got {nodes_per_turn}")
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self.executors = dict(executors or {})
        self.offload_threshold = offload_threshold
        self.stall_threshold = stall_threshold
        self.nodes_executed = 0
        self.nodes_offloaded = 0
        self.nodes_in_flight = 0
        self.max_nodes_in_flight = 0
        self._driven: set[GraphTask] = set()  # GraphTasks being driven (in flight)
        self._occupancy: dict[str, list[Any]] = {}  # device type -> [executor, in flight]
        self.max_reentrant_depth = max_reentrant_depth
        self.nodes_per_turn = nodes_per_turn
        self.deepest_reentrant_depth = 0
        self.reentrant_workers_started = 0
        self._device_queues: dict[Any, ReadyQueue] = {}

    def executor(self, device_type: str = "cpu") -> Executor:
        """The executor this engine uses for ``device_type``."""
        executor = self.executors.get(device_type)
        return executor if executor is not None else get_executor(device_type)

    def offload_executor(self, device_type: str = "cpu") -> Executor | None:
        """The executor nodes of ``device_type`` may be offloaded to; None when none can be (an
        inline executor, or no offload threshold)."""
        if self.offload_threshold is None:
            return None
        executor = self.executor(device_type)
        return None if executor.inline else executor

    async def aclose(self) -> None:
        """Stop this engine's device workers (they also stop by themselves once their queues are
        empty) and forget the engine, so the next backward on this loop makes a fresh one."""
        workers = [q._worker for q in self._device_queues.values() if q._worker is not None]  # type: ignore[attr-defined]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        self._device_queues.clear()
        if _engines.get(self.loop) is self:
            del _engines[self.loop]

    def statistics(self) -> EngineStatistics:
        """Counters since the engine was created, and what is running now."""
        cpu_queues = {id(gt.queue): gt.queue for gt in self._driven}
        for dev_queue in self._device_queues.values():
            cpu_queues.pop(id(dev_queue), None)  # reentrant children on a device's queue
        depths = {"cpu": sum(len(q._queue) for q in cpu_queues.values())}  # type: ignore[attr-defined]
        for dev, dev_queue in self._device_queues.items():
            depths[str(dev)] = len(dev_queue._queue)  # type: ignore[attr-defined]
        return EngineStatistics(
            graph_tasks_in_flight=len(self._driven),
            nodes_executed=self.nodes_executed,
            nodes_offloaded=self.nodes_offloaded,
            nodes_in_flight=self.nodes_in_flight,
            max_nodes_in_flight=self.max_nodes_in_flight,
            offload_threshold_ns=self.offload_threshold,
            executors={"cpu": repr(self.executor("cpu"))},
            deepest_reentrant_depth=self.deepest_reentrant_depth,
            reentrant_workers_started=self.reentrant_workers_started,
            nodes_per_turn=self.nodes_per_turn,
            queue_depths=depths,
            executor_occupancy={
                kind: (in_flight, executor.capacity)
                for kind, (executor, in_flight) in self._occupancy.items()
            },
        )


    # ------------------------------------------------------------------------------- entry
    async def execute(
        self,
        root_edges: list[Edge],
        root_grads: list[Tensor],
        *,
        keep_graph: bool,
        create_graph: bool,
        accumulate_grad: bool,
        output_edges: list[Edge] | None,
        staged_inputs: tuple[Tensor, ...] | None = None,
        atomic: bool = False,
    ) -> list[Tensor | None]:
        """Run one backward and return the captured gradients (``grad()``'s results).

        ``atomic`` (a ``backward()`` only): the gradients for the leaves, or for
        ``staged_inputs``, are captured as ``grad()`` would, and added into their ``.grad`` all
        at once when the GraphTask completes; a failed or cancelled call changes no ``.grad``.

        Called while a node, hook or callback of a running GraphTask executes, the call is
        reentrant: the new GraphTask is one level deeper and runs on the queue being drained."""
        parent = current_graph_task.get()
        worker = current_worker.get() if parent is not None else None
        if worker is not None and not parent.future.done():  # type: ignore[union-attr]
            queue, nesting = worker
            graph_task = GraphTask(keep_graph, create_graph, parent.reentrant_depth + 1, queue)  # type: ignore[union-attr]
            graph_task.checkpoint_valid = parent.checkpoint_valid and output_edges is None  # type: ignore[union-attr]
        else:
            parent = None
            graph_task = GraphTask(keep_graph, create_graph, 0, ReadyQueue())
            graph_task.checkpoint_valid = output_edges is None
        graph_task.executor = self.offload_executor("cpu")
        if graph_task.executor is not None:
            # Gradients smaller than this cannot make an elementwise node reach the threshold.
            graph_task.small_size = self.offload_threshold / NS_PER_ELEMENT / 8  # type: ignore[operator]
        if len(root_edges) == 1:
            root, input_nr = root_edges[0]
            buffer: list[Any] = [None] * root.num_inputs
            buffer[input_nr] = root_grads[0]
        else:
            root = GraphRoot(tuple(root_edges), root_grads)
            buffer = []
        min_topo_nr = min((e[0].topological_nr for e in output_edges), default=0) if output_edges else 0
        graph_task.dependencies = compute_dependencies(root, min_topo_nr)
        if atomic:
            output_edges, graph_task.staged = _staging_targets(root, graph_task.dependencies, output_edges, staged_inputs)
            accumulate_grad = False  # captured, then committed by _complete
        if output_edges is not None:
            graph_task.exec_info = init_to_execute(root, output_edges, accumulate_grad, min_topo_nr)
            graph_task.captured = [None] * len(output_edges)
        self._push(graph_task, root, buffer)
        if parent is None:
            return await self._drive(graph_task, 0)
        return await self._run_reentrant(parent, graph_task, nesting)

    async def _run_reentrant(self, parent: GraphTask, child: GraphTask, nesting: int) -> list[Tensor | None]:
        """Drive ``child`` nested in the current drive, or past the depth limit (or near the
        recursion limit) in a fresh worker task that the parent's node awaits."""
        children = parent.children
        if children is None:
            children = parent.children = []
        children.append(child)
        if child.reentrant_depth > self.deepest_reentrant_depth:
            self.deepest_reentrant_depth = child.reentrant_depth
        try:
            if nesting < self.max_reentrant_depth and stack_has_room():
                return await self._drive(child, nesting + 1)
            self.reentrant_workers_started += 1
            # A task starts on an empty stack; awaiting it means cancelling the parent's node
            # cancels the worker, whose drive then cancels the child.
            worker = self.loop.create_task(
                self._drive(child, 0), name=f"aiograd reentrant worker (depth {child.reentrant_depth})"
            )
            return await worker
        finally:
            children.remove(child)

    # ------------------------------------------------------------------------------- workers
    def _push(self, graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
        graph_task.outstanding += 1
        self._queue_for(graph_task, buffer).push(
            (RUN, -graph_task.reentrant_depth, -node.sequence_nr, next(_tie), graph_task, node, buffer)
        )

    async def _drive(self, graph_task: GraphTask, nesting: int) -> list[Tensor | None]:
        """The owner's loop: run ready NodeTasks until the GraphTask completes.

        The queue may hold other GraphTasks' NodeTasks (a reentrant child's, or its parent's
        when this drive is the nested one); they run too, in their own GraphTask's modes."""
        queue = graph_task.queue
        heap = queue._queue  # type: ignore[attr-defined]
        future = graph_task.future
        handle = self._handle
        budget = self.nodes_per_turn or 0  # 0: turn only goes negative, never reaches 0 again
        turn = budget
        # Nodes run with grad mode = create_graph; set once for the whole drain, not per node.
        mode_token = _grad_enabled.set(graph_task.create_graph)
        task_token = current_graph_task.set(graph_task)
        worker_token = current_worker.set((queue, nesting))
        self._driven.add(graph_task)
        try:
            while not future.done():
                if heap:
                    task = heappop(heap)
                    pending = handle(task) if task[4] is graph_task else self._handle_foreign(task)
                    if pending is not None:
                        await pending
                    turn -= 1
                    if not turn:  # the turn is over: let every other ready coroutine run
                        turn = budget
                        await _yield_to_loop()
                else:
                    await queue.wait()
                    turn = budget
        except BaseException as exc:
            # Cancelled (or interrupted) while driving: the GraphTask dies with its driver.
            if not future.done():
                graph_task.error = exc
                future.cancel()
                self._abandon(graph_task)
            raise
        finally:
            self._driven.discard(graph_task)
            current_worker.reset(worker_token)
            current_graph_task.reset(task_token)
            _grad_enabled.reset(mode_token)
            if heap:  # failed or cancelled with work queued: drop what is dead, hand on the rest
                _drop_finished(heap)
                queue.hand_on()
        return future.result()

    def _handle_foreign(self, task: tuple[Any, ...]) -> Any:
        """``_handle`` for a NodeTask of a GraphTask other than the one this context drives:
        it runs with that GraphTask's grad mode and as the current GraphTask."""
        owner = task[4]
        if owner.future.done():
            _discard(task)  # its GraphTask failed or was cancelled: dropped
            return None
        mode_token = _grad_enabled.set(owner.create_graph)
        task_token = current_graph_task.set(owner)
        try:
            pending = self._handle(task)
        finally:
            current_graph_task.reset(task_token)
            _grad_enabled.reset(mode_token)
        return None if pending is None else self._await_as(owner, pending)

    @staticmethod
    async def _await_as(owner: GraphTask, pending: Any) -> None:
        mode_token = _grad_enabled.set(owner.create_graph)
        task_token = current_graph_task.set(owner)
        try:
            await pending
        finally:
            current_graph_task.reset(task_token)
            _grad_enabled.reset(mode_token)

    def _handle(self, task: tuple[Any, ...]) -> Any:
        """Process one NodeTask; returns a coroutine when there is work to await (a slow node,
        final callbacks), None otherwise. Shared by the owner's loop and the device workers."""
        owner = task[4]
        if task[0] == RUN:
            if owner.error is None:
                try:
                    # A node with hooks, an async apply, or anomaly mode needs awaiting:
                    # _evaluate hands back that work instead of doing it; a heavy node goes to
                    # an executor and comes back as a DONE task.
                    pending = self._evaluate(owner, task[5], task[6])
                except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
                    self._fail(owner, exc, task[5])
                else:
                    if pending is OFFLOADED:
                        return None
                    if pending is not None:
                        return self._finish_slow(owner, task[5], pending)
        else:
            self._finish_offloaded(owner, task[5], *task[6])
        owner.outstanding -= 1
        if owner.outstanding == 0 and not owner.future.done():
            return self._complete(owner)
        return None

    async def _finish_slow(self, owner: GraphTask, node: Node, pending: Any) -> None:
        try:
            await pending
        except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
            self._fail(owner, exc, node)
        owner.outstanding -= 1
        if owner.outstanding == 0 and not owner.future.done():
            await self._complete(owner)

    # ------------------------------------------------------------------------------- devices
    def _queue_for(self, graph_task: GraphTask, buffer: list[Any]) -> ReadyQueue:
        """Where a NodeTask runs: the queue of the first non-CPU device among its gradients
        (started on first use), else the GraphTask's own CPU queue."""
        if DEVICES:
            dev = _buffer_device(buffer)
            if dev is not None:
                return self._device_queue(dev)
        return graph_task.queue

    def _device_queue(self, dev: Any) -> ReadyQueue:
        queue = self._device_queues.get(dev)
        if queue is None:
            queue = self._device_queues[dev] = _DeviceQueue(self, dev)
        return queue

    async def _device_worker(self, queue: ReadyQueue) -> None:
        """Serves one device's queue for every GraphTask, until it is empty (a push restarts it,
        so no task outlives the work: nothing is left running when the loop closes)."""
        current_worker.set((queue, 0))  # this task's own context: a reentrant call runs here
        heap = queue._queue  # type: ignore[attr-defined]
        handle = self._handle_foreign
        budget = self.nodes_per_turn or 0
        turn = budget
        try:
            while heap:
                task = heappop(heap)
                pending = handle(task)
                if pending is not None:
                    await self._await_on_device(task[4], pending)
                turn -= 1
                if not turn:
                    turn = budget
                    await _yield_to_loop()
        finally:
            # A finished task keeps its context, which holds the GraphTask that started it:
            # the queue must not keep the task.
            if queue._worker is asyncio.current_task():  # type: ignore[attr-defined]
                queue._worker = None  # type: ignore[attr-defined]

    async def _await_on_device(self, owner: GraphTask, pending: Any) -> None:
        """A device worker awaits a node (an async hook or Function) as a task of its own, which
        the owner's failure or cancellation cancels: the worker serves every GraphTask, so it
        must not stay blocked in a dead one's node."""
        worker = asyncio.current_task()
        waiter = self.loop.create_task(pending, name=worker.get_name() if worker else None)
        waits = owner.device_waits
        if waits is None:
            waits = owner.device_waits = set()
        waits.add(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if worker is not None and worker.cancelling():
                raise  # the worker itself is cancelled (Engine.aclose)
            # Only the node was cancelled, with its GraphTask: the worker goes on.
        finally:
            waits.discard(waiter)

    # ------------------------------------------------------------------------------- executors
    def _offload(self, graph_task: GraphTask, node: Node, buffer: list[Any], executor: Executor) -> None:
        """Run ``node.apply(buffer)`` in ``executor``; its result comes back as a DONE task."""
        if graph_task.in_flight >= executor.capacity:
            graph_task.deferred.append((node, buffer, executor))
            return
        graph_task.in_flight += 1
        self.nodes_offloaded += 1
        self.nodes_in_flight += 1
        if self.nodes_in_flight > self.max_nodes_in_flight:
            self.max_nodes_in_flight = self.nodes_in_flight
        dev = _buffer_device(buffer) if DEVICES else None
        kind = "cpu" if dev is None else dev.type
        occupancy = self._occupancy.get(kind)
        if occupancy is None or occupancy[0] is not executor:
            occupancy = self._occupancy[kind] = [executor, 0]
        occupancy[1] += 1
        # The math runs in a copy of this context: grad mode = create_graph, the user's variables.
        context = contextvars.copy_context()
        future = executor.submit(functools.partial(context.run, node.apply, buffer))
        queue = graph_task.queue if dev is None else self._device_queue(dev)

        def done(fut: asyncio.Future[Any]) -> None:
            # On the loop. A GraphTask that failed or was cancelled meanwhile is gone: its
            # result is dropped here (and its exception retrieved, so asyncio does not log it).
            self.nodes_in_flight -= 1
            occupancy[1] -= 1
            if graph_task.future.done():
                if not fut.cancelled():
                    fut.exception()
                return
            queue.push((DONE, 0, 0, next(_tie), graph_task, node, (buffer, fut)))

        future.add_done_callback(done)

    def _finish_offloaded(self, graph_task: GraphTask, node: Node, buffer: list[Any], future: asyncio.Future[Any]) -> None:
        """Back on the loop: release, propagate, and start what waited for capacity."""
        graph_task.in_flight -= 1
        if graph_task.error is None:
            try:
                outputs = future.result()
                if not graph_task.keep_graph and node._saved:
                    node.release_variables()
                self._propagate(graph_task, node, outputs)
            except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
                self._fail(graph_task, exc, node)
        elif not future.cancelled():
            future.exception()  # retrieved, so asyncio does not log it: the task already failed
        deferred = graph_task.deferred
        if deferred and graph_task.error is None:
            self._offload(graph_task, *deferred.pop(0))
        elif deferred:
            graph_task.outstanding -= len(deferred)  # dropped with the failed GraphTask
            deferred.clear()

    async def _complete(self, graph_task: GraphTask) -> None:
        """All nodes ran: final callbacks (FIFO; they may queue more), then the result."""
        callbacks = graph_task.final_callbacks
        i = 0
        while i < len(callbacks):
            try:
                result = callbacks[i]()
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
                self._fail(graph_task, exc, None)
                return
            i += 1
        if graph_task.not_ready:
            names = ", ".join(sorted({n.name() for n in graph_task.not_ready}))
            self._fail(
                graph_task, RuntimeError(f"could not compute gradients for some functions ({names})"),
                None,
            )
            return
        if graph_task.staged is not None and graph_task.error is None:
            try:
                # One synchronous step: no await, so nothing (cancellation included) can come
                # between the first leaf's update and the last.
                hooked = _commit_staged(graph_task)
                for node in hooked:
                    variable = node.variable
                    if variable is not None:
                        await run_post_accumulate_hooks(node._hooks, variable)
            except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
                self._fail(graph_task, exc, None)
                return
            graph_task.captured = []
        if not graph_task.future.done():
            graph_task.future.set_result(graph_task.captured)
            self._wake_owner(graph_task)

    def _fail(self, graph_task: GraphTask, exc: BaseException, node: Node | None) -> None:
        """First error wins: the GraphTask's remaining NodeTasks are dropped as they come up,
        and the reentrant GraphTasks running inside its nodes stop too."""
        if graph_task.error is not None:
            return
        if node is not None:
            exc.add_note(f"while running {node.name()}")
            if graph_task.anomaly:
                warn_with_history(node)
        graph_task.error = exc
        if not graph_task.future.done():
            graph_task.future.set_exception(exc)
            self._wake_owner(graph_task)
        self._abandon(graph_task)

    def _abandon(self, graph_task: GraphTask) -> None:
        """``graph_task`` failed or was cancelled: stop what still works for it. Its nodes
        awaited on device workers are cancelled, and every reentrant GraphTask nested in it
        fails (iteratively: they may be thousands deep), so no leaf accumulates any more."""
        stack = [graph_task]
        while stack:
            task = stack.pop()
            if task.error is None:  # a child: its parent ended
                task.error = RuntimeError(
                    f"reentrant backward (depth {task.reentrant_depth}) stopped: the backward "
                    "it was called from failed or was cancelled"
                )
                if not task.future.done():
                    task.future.set_exception(task.error)
                    self._wake_owner(task)
            waits = task.device_waits
            if waits:
                for waiter in list(waits):
                    waiter.cancel()
            if task.children:
                stack.extend(task.children)

    @staticmethod
    def _wake_owner(graph_task: GraphTask) -> None:
        """Whoever drives this GraphTask may be waiting on its empty queue (a device worker or
        another drive finished it): wake the queue's waiters so that it sees the future done."""
        graph_task.queue.wake_all()

    def _evaluate(self, graph_task: GraphTask, node: Node, buffer: list[Any]) -> Any:
        """Run one node and hand its gradients on; returns a coroutine instead when the node
        needs awaiting (hooks, an async apply, anomaly mode), which the caller awaits."""
        if node._hooks is not None or node.is_async or graph_task.anomaly:
            return self._evaluate_slow(graph_task, node, buffer)
        exec_info = graph_task.exec_info
        executor = graph_task.executor
        if DEVICES and executor is not None:
            dev = _buffer_device(buffer)
            executor = self.offload_executor("cpu" if dev is None else dev.type)
        if executor is not None and (exec_info is None or _runs(exec_info, node)):
            # Most nodes are small and estimate their cost from their gradients' size: the first
            # gradient's size rules them out without calling cost().
            if node.cost_scales_with_grads:
                first = buffer[0]
                cost = node.cost(buffer) if first is not None and first.data.size >= graph_task.small_size else 0.0
            else:
                cost = node.cost(buffer)
            # Offloading pays when the node can overlap with other work (ready nodes, or nodes
            # already in flight); a lone node leaves the loop only when it would stall it.
            if cost >= self.offload_threshold and (  # type: ignore[operator]  (set: executor is)
                graph_task.in_flight or graph_task.queue._queue or cost >= self.stall_threshold  # type: ignore[attr-defined]
            ):
                if exec_info is not None:
                    self._capture(graph_task, exec_info[node].captures, buffer)
                self._offload(graph_task, node, buffer, executor)
                return OFFLOADED
        if exec_info is not None:
            info = exec_info.get(node)
            if info is not None and info.captures:
                self._capture(graph_task, info.captures, buffer)
            if info is None or not info.needed:
                return None
        outputs = node.apply(buffer)
        if not graph_task.keep_graph and node._saved:
            node.release_variables()
        self._propagate(graph_task, node, outputs)
        return None

    async def _evaluate_slow(self, graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
        """``_evaluate`` with everything around ``apply`` (pytorch-semantics.md, D and H)."""
        hooks = node._hooks
        exec_info = graph_task.exec_info
        if exec_info is not None:
            info = exec_info.get(node)
            needed = info is not None and info.needed
            captures = info.captures if info is not None else ()
            if needed:
                # Captured before the hooks run, as PyTorch does for a node that also runs.
                self._capture(graph_task, captures, buffer)
            else:
                # Reached but not run: only tensor hooks and retains-grad see the gradient,
                # and the capture takes what they leave.
                if hooks is not None:
                    await run_tensor_pre_hooks(hooks, buffer)
                    run_retains_grad(hooks, buffer)
                self._capture(graph_task, captures, buffer)
                return
        if hooks is not None:
            if hooks.tensor_pre:
                await run_tensor_pre_hooks(hooks, buffer)
            if hooks.retains_grad:
                run_retains_grad(hooks, buffer)
            if hooks.pre:
                buffer = await run_pre_hooks(hooks, buffer)
        anomaly_token = current_node.set(node) if graph_task.anomaly else None
        try:
            outputs = node.apply(buffer)
            if node.is_async:
                outputs = await outputs
        finally:
            if anomaly_token is not None:
                current_node.reset(anomaly_token)
        if not graph_task.keep_graph and node._saved:
            node.release_variables()
        if hooks is not None:
            if hooks.post:
                outputs = await run_post_hooks(hooks, outputs, buffer)
            if hooks.post_accumulate and buffer[0] is not None:
                variable = node.variable  # type: ignore[attr-defined]  (AccumulateGrad)
                if variable is not None:
                    await run_post_accumulate_hooks(hooks, variable)
        if graph_task.check_nan:
            for i, out in enumerate(outputs):
                if out is not None and np.isnan(out.data).any():
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
        self._propagate(graph_task, node, outputs)

    @staticmethod
    def _capture(graph_task: GraphTask, captures: Any, buffer: list[Any]) -> None:
        captured = graph_task.captured
        for input_nr, index in captures:
            captured[index] = buffer[input_nr]

    def _propagate(self, graph_task: GraphTask, node: Node, outputs: Any) -> None:
        """Hand each output gradient to the InputBuffer of the node its edge leads to, and push
        the nodes that became ready."""
        self.nodes_executed += 1
        exec_info = graph_task.exec_info
        dependencies = graph_task.dependencies
        not_ready = graph_task.not_ready
        i = -1
        for edge in node.next_edges:
            i += 1
            if edge is None:
                continue
            next_node, input_nr = edge
            remaining = dependencies[next_node] - 1
            dependencies[next_node] = remaining
            if exec_info is not None:
                info = exec_info.get(next_node)
                if info is None or not (info.needed or info.captures):
                    continue
            grad = outputs[i]
            if graph_task.deterministic and grad is not None:
                # Kept aside and summed in a fixed order when the node is ready (below).
                graph_task.contributions.setdefault((next_node, input_nr), []).append(
                    ((-node.sequence_nr, i), grad)
                )
                grad = None
            if remaining:
                next_buffer = not_ready.get(next_node)
                if next_buffer is None:
                    next_buffer = not_ready[next_node] = [None] * next_node.num_inputs
            else:
                next_buffer = not_ready.pop(next_node, None) if not_ready else None
                if next_buffer is None:
                    next_buffer = [None] * next_node.num_inputs
            if grad is not None:
                if next_buffer[input_nr] is None:
                    next_buffer[input_nr] = grad
                else:
                    accumulate(next_buffer, input_nr, grad, graph_task.create_graph)
            if not remaining:
                if graph_task.deterministic:
                    _sum_in_order(graph_task, next_node, next_buffer)
                # Inlined _push: this is the hottest line of the engine.
                graph_task.outstanding += 1
                (self._queue_for(graph_task, next_buffer) if DEVICES else graph_task.queue).push(
                    (RUN, -graph_task.reentrant_depth, -next_node.sequence_nr, next(_tie),
                     graph_task, next_node, next_buffer)
                )


def _discard(task: tuple[Any, ...]) -> None:
    """Drop a NodeTask of a finished GraphTask; an offloaded node's result (DONE) has its
    exception retrieved, so that asyncio does not log it and its traceback (which holds the
    graph) goes."""
    if task[0] == DONE:
        future = task[6][1]
        if not future.cancelled():
            future.exception()


def _drop_finished(heap: list[tuple[Any, ...]]) -> None:
    """Remove the NodeTasks of finished GraphTasks from a heap, keeping the others in order."""
    live = []
    for task in heap:
        if task[4].future.done():
            _discard(task)
        else:
            live.append(task)
    heap[:] = live
    heapify(heap)


async def _yield_to_loop() -> None:
    """One trip through the event loop (``asyncio.sleep(0)``'s bare yield)."""
    await asyncio.sleep(0)


def _staging_targets(
    root: Node,
    dependencies: dict[Node, int],
    output_edges: list[Edge] | None,
    inputs: tuple[Tensor, ...] | None,
) -> tuple[list[Edge], list[Any]]:
    """``backward(atomic=True)``: the edges to capture and, for each, what receives it. Without
    ``inputs``, every leaf the graph reaches; with them, each input (a leaf's AccumulateGrad,
    or the non-leaf tensor itself)."""
    if output_edges is None:
        # A leaf as the root is its own whole graph: running it is the commit.
        accumulators = [n for n in dependencies if type(n) is AccumulateGrad]
        return [(n, 0) for n in accumulators], accumulators
    assert inputs is not None
    return output_edges, [
        edge[0] if isinstance(edge[0], AccumulateGrad) else tensor
        for edge, tensor in zip(output_edges, inputs)
    ]


def _commit_staged(graph_task: GraphTask) -> list[AccumulateGrad]:
    """Add an atomic backward's captured gradients into their ``.grad``s; returns the
    accumulators whose post-accumulate-grad hooks are to run now."""
    hooked = []
    for target, grad in zip(graph_task.staged, graph_task.captured):  # type: ignore[arg-type]
        if grad is None:
            continue
        if isinstance(target, AccumulateGrad):
            target.apply([grad])
            hooks = target._hooks
            if hooks is not None and hooks.post_accumulate:
                hooked.append(target)
        elif not target._retains_grad:  # a non-leaf input, by retain_grad's rule
            target._grad = grad.clone() if target._grad is None else target._grad + grad
    return hooked


def _sum_in_order(graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
    """Deterministic mode: each slot's contributions, added in the order of their producers'
    sequence numbers (newest first, the order of a serial run), not in arrival order."""
    contributions = graph_task.contributions
    for input_nr in range(node.num_inputs):
        parts = contributions.pop((node, input_nr), None)
        if parts is None:
            continue
        parts.sort(key=lambda part: part[0])
        total = parts[0][1]
        for _, grad in parts[1:]:
            total = total + grad
        buffer[input_nr] = total


def _runs(exec_info: dict[Node, ExecInfo], node: Node) -> bool:
    info = exec_info.get(node)
    return info is not None and info.needed


def accumulate(buffer: list[Any], i: int, grad: Tensor, create_graph: bool) -> None:
    """InputBuffer accumulation: in place only when the buffer's tensor is ours alone."""
    if (
        not create_graph
        and owns(buffer, i)
        and buffer[i].data.shape == grad.data.shape
        and buffer[i].data.dtype == grad.data.dtype
    ):
        buffer[i].data += grad.data
    else:
        buffer[i] = buffer[i] + grad


def compute_dependencies(root: Node, min_topo_nr: int) -> dict[Node, int]:
    """Count the edges into each node reachable from ``root`` (iteratively: no recursion)."""
    dependencies: dict[Node, int] = {}
    get = dependencies.get
    stack = [root]
    pop, append = stack.pop, stack.append
    while stack:
        node = pop()
        if node.topological_nr < min_topo_nr:
            continue
        for edge in node.next_edges:
            if edge is None:
                continue
            child = edge[0]
            count = get(child)
            if count is None:
                # First edge into ``child``: expand it (the root has no entry, and no edge
                # leads back to it in a DAG, so it is never expanded twice).
                dependencies[child] = 1
                append(child)
            else:
                dependencies[child] = count + 1
    return dependencies


def init_to_execute(
    root: Node, output_edges: list[Edge], accumulate_grad: bool, min_topo_nr: int
) -> dict[Node, ExecInfo]:
    """Mark the nodes that lead to the requested inputs (PyTorch's ``init_to_execute``)."""
    exec_info: dict[Node, ExecInfo] = {}
    exec_info[root] = ExecInfo()
    exec_info[root].needed = True
    for index, (node, input_nr) in enumerate(output_edges):
        info = exec_info.get(node)
        if info is None:
            info = exec_info[node] = ExecInfo()
        if accumulate_grad:
            info.needed = True
        else:
            info.captures.append((input_nr, index))

    def should_execute(node: Node) -> bool:
        info = exec_info.get(node)
        return info is not None and (info.needed or bool(info.captures))

    def mark_needed(node: Node) -> None:
        info = exec_info.get(node)
        if info is None:
            info = exec_info[node] = ExecInfo()
        info.needed = True

    # Post-order DFS with explicit frames: a node is needed if any child should execute.
    seen: set[Node] = set()
    stack: list[tuple[Node, Any]] = [(root, iter(root.next_edges))]
    while stack:
        node, children = stack[-1]
        child = None
        for edge in children:
            if edge is None:
                continue
            if edge[0] in seen:
                if should_execute(edge[0]):
                    mark_needed(node)
                continue
            seen.add(edge[0])
            child = edge[0]
            break
        if child is not None:
            if child.topological_nr >= min_topo_nr:
                stack.append((child, iter(child.next_edges)))
            continue
        stack.pop()
        if stack and should_execute(node):
            mark_needed(stack[-1][0])
    return exec_info


def queue_callback(callback: Callable[[], Any]) -> None:
    """Run ``callback()`` (sync or ``async def``) once when the current backward's nodes have all
    run, before it returns; callbacks run in the order queued and may queue more."""
    graph_task = current_graph_task.get()
    if graph_task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    graph_task.final_callbacks.append(callback)


def is_checkpoint_valid() -> bool:
    """False while running inside a ``grad()`` call or a ``backward(inputs=...)`` (or a backward
    nested in one), where a reentrant checkpoint cannot deliver its gradients correctly."""
    graph_task = current_graph_task.get()
    return graph_task is None or graph_task.checkpoint_valid


_engines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Engine] = weakref.WeakKeyDictionary()


def get_engine() -> Engine:
    """The engine of the running event loop, created on first use."""
    loop = asyncio.get_running_loop()
    engine = _engines.get(loop)
    if engine is None:
        engine = _engines[loop] = Engine(loop)
    return engine
