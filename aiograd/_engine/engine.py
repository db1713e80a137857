"""The Engine: PyTorch's ``Engine::execute`` as coroutines on one event loop.

Read top to bottom, it is the algorithm: ``execute`` makes the GraphTask (dependencies, and for
``grad()``/``inputs=`` which nodes run) and pushes the root; ``drive`` is the caller's worker
loop, popping ready NodeTasks and handling each; ``handle`` evaluates a node (``evaluate``) or
takes back an offloaded one's result; ``propagate`` hands each output gradient to the next
node's InputBuffer and pushes the nodes that became ready; when nothing is outstanding the
GraphTask completes (``completion``), or it fails on the first error.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from .._base._cost import DEFAULT_OFFLOAD_THRESHOLD_NS, DEFAULT_STALL_THRESHOLD_NS
from .._base._grad_mode import _grad_enabled
from .._core._node import GraphRoot
from ..executors import Executor
from . import settings, watch
from .completion import abandon, complete, fail, finish_slow, release_frames, staging_targets
from .context import await_as, current_graph_task, current_worker, running, yield_to_loop
from .devices import DeviceQueue
from .evaluate import OFFLOADED
from .graph_task import GraphTask, compute_dependencies, init_to_execute
from .input_buffer import accumulate, add_special, buffer_device, sum_in_order
from .logs import DEBUG, engine_log
from .node_task import GRAPH_TASK, RUN, NodeTask, make_tie_source
from .offload import ExecutorLoad, discard, finish_offloaded, get_executor
from .plain import is_plain, run_plain_turn
from .ready_queue import ReadyQueue
from .reentrant import DEFAULT_MAX_REENTRANT_DEPTH, run_reentrant
from .statistics import EngineStatistics, snapshot
from .streams import hand_over

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._core._node import Edge, Node
    from .._core._tensor import Tensor

__all__ = ["Engine", "get_engine"]

#: NodeTasks a drive runs before it yields to the event loop (Engine.nodes_per_turn): at 2-5 us
#: a small node, a turn lasts about 0.5-1.5 ms, and the yield (a few us) costs about 1% of it.
DEFAULT_NODES_PER_TURN = 256

_UNSET: Any = object()


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
        shuffle_seed: int | None = _UNSET,
    ) -> None:
        """``executors`` maps device types to executors for this engine (others come from
        ``set_executor``/the defaults). A node whose estimated cost (ns, ``Node.cost``) reaches
        ``offload_threshold`` runs in the executor when it overlaps other work (nodes of its
        GraphTask in flight or waiting, light ones aside, or other GraphTasks being driven); any
        node leaves the loop from ``stall_threshold``, when running it inline would hold the loop
        that long. None as ``offload_threshold`` keeps every node on the loop.

        A backward awaited inside a node is reentrant: it is driven by the awaiting code, nested
        on its stack, for up to ``max_reentrant_depth`` levels per stack (and while the stack has
        room below the recursion limit); deeper ones move to a fresh worker task.

        Fairness: a drive (or device worker) that has run ``nodes_per_turn`` NodeTasks without
        awaiting yields to the event loop, which then runs every other ready coroutine (other
        backward calls included, round-robin in the loop's FIFO order) before it continues. None
        never yields (a backward of small nodes then holds the loop until it completes).

        ``shuffle_seed``: the shuffle debug mode (see ``aiograd.set_shuffle_seed``, whose
        setting is the default); None turns it off."""
        if max_reentrant_depth < 0:
            raise ValueError(f"max_reentrant_depth must be >= 0, got {max_reentrant_depth}")
        if nodes_per_turn is not None and nodes_per_turn < 1:
            raise ValueError(f"nodes_per_turn must be None or >= 1, got {nodes_per_turn}")
        # Held weakly: the engine lives in a registry keyed weakly by its loop, and a strong
        # reference back would keep every loop that ever ran a backward alive for good.
        self._loop = weakref.ref(loop if loop is not None else asyncio.get_running_loop())
        self.executors: dict[str, Executor] = dict(executors or {})
        self.offload_threshold: float | None = offload_threshold
        self.stall_threshold: float = stall_threshold
        self.max_reentrant_depth: int = max_reentrant_depth
        self.nodes_per_turn: int | None = nodes_per_turn
        self.shuffle_seed: int | None = settings.get_shuffle_seed() if shuffle_seed is _UNSET else shuffle_seed
        self.tie: Callable[[], float] = make_tie_source(self.shuffle_seed)
        # Counters (statistics()).
        self.nodes_executed: int = 0
        self.load: ExecutorLoad = ExecutorLoad()  # nodes offloaded, in flight, per executor
        self.deepest_reentrant_depth: int = 0
        self.reentrant_workers_started: int = 0
        # GraphTasks being driven (in flight); more than one: a node may overlap another call.
        self.driven: set[GraphTask] = set()
        self._device_queues: dict[Any, DeviceQueue] = {}

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
        batch_ndim: int = 0,
    ) -> list[Tensor | None]:
        """Run one backward and return the captured gradients (``grad()``'s results).

        ``atomic`` (a ``backward()`` only): the gradients for the leaves, or for
        ``staged_inputs``, are captured as ``grad()`` would, and added into their ``.grad`` all
        at once when the GraphTask completes; a failed or cancelled call changes no ``.grad``.

        Called while a node, hook or callback of a running GraphTask executes, the call is
        reentrant: the new GraphTask is one level deeper and runs on the queue being drained."""
        parent = current_graph_task.get()
        worker = current_worker.get() if parent is not None else None
        if worker is not None and not parent.future.done():
            queue, nesting = worker  # the queue its node is drained from; nested drives so far
        else:
            parent, queue, nesting = None, ReadyQueue(), 0
        graph_task = GraphTask(
            keep_graph, create_graph, parent=parent, queue=queue, pruned=output_edges is not None,
            batch_ndim=batch_ndim, executor=self.offload_executor("cpu"),
            offload_threshold=self.offload_threshold,
        )
        if len(root_edges) == 1:  # (inline, not a helper: a call costs a small backward ~2%)
            root, input_nr = root_edges[0]
            buffer: list[Any] = [None] * root.num_inputs
            buffer[input_nr] = root_grads[0]
            if graph_task.streams is not None and root_grads[0]._device.has_streams:
                hand_over_root(graph_task, root, root_grads[0])
        else:
            root = GraphRoot(tuple(root_edges), root_grads)
            buffer = [None]  # (see GraphRoot.runs_on_undefined)
        min_topo_nr = min((e[0].topological_nr for e in output_edges), default=0) if output_edges else 0
        graph_task.dependencies = compute_dependencies(root, min_topo_nr)
        kind = "backward" if accumulate_grad or atomic else "grad"
        if atomic or output_edges is not None:
            prune(graph_task, root, output_edges, staged_inputs, accumulate_grad, atomic, min_topo_nr)
        if watch.watching or engine_log.isEnabledFor(DEBUG):  # a profiler, progress, debug logs
            watch.start(self, graph_task, parent, kind, root)
        self.push(graph_task, root, buffer)
        if parent is not None:
            return await run_reentrant(self, parent, graph_task, nesting)
        try:
            return await self.drive(graph_task, 0)
        except BaseException as exc:
            # The error's traceback holds the engine's frames, whose locals hold the GraphTask,
            # which holds the error: a reference cycle that would keep the whole graph (and
            # anything in its nodes' metadata) alive until the garbage collector runs.
            release_frames(exc.__traceback__)
            del graph_task
            raise

    # ------------------------------------------------------------------------------- the loop
    async def drive(self, graph_task: GraphTask, nesting: int) -> list[Tensor | None]:
        """The caller's worker loop: run ready NodeTasks until the GraphTask completes.

        The queue may hold other GraphTasks' NodeTasks (a reentrant child's, or its parent's
        when this drive is the nested one); they run too, as their own GraphTask's. The nodes
        run in ``run_turn`` (or its specialisation ``run_plain_turn``), synchronously; the drive
        awaits what they hand back, the queue when it is empty, and the loop at each turn's end."""
        queue = graph_task.queue
        future = graph_task.future
        run = self.run_plain_turn if is_plain(self, graph_task) else self.run_turn
        budget = self.nodes_per_turn or -1  # -1: turn only goes further below 0, never reaches 0
        turn = budget
        # Nodes run as this GraphTask's (``running(graph_task)``, set here once for the whole
        # drain, inline: a with-block would cost every backward call a few hundred ns).
        mode_token = _grad_enabled.set(graph_task.create_graph)
        task_token = current_graph_task.set(graph_task)
        worker_token = current_worker.set((queue, nesting))
        self.driven.add(graph_task)
        try:
            while not future.done():
                pending, turn = run(graph_task, turn)
                if pending is not None:  # a slow node, final callbacks: counted once awaited
                    await pending
                    turn -= 1
                elif turn and not future.done():  # the queue is empty
                    await queue.wait()
                    turn = budget
                    continue
                if not turn:  # the turn is over: let every other ready coroutine run
                    turn = budget
                    await yield_to_loop()
        except BaseException as exc:
            # Cancelled (or interrupted) while driving: the GraphTask dies with its driver.
            if not future.done():
                graph_task.error = exc
                future.cancel()
                abandon(graph_task)
            raise
        finally:
            self.driven.discard(graph_task)
            if graph_task.watch is not None:
                graph_task.watch.ended(graph_task)
            current_worker.reset(worker_token)
            current_graph_task.reset(task_token)
            _grad_enabled.reset(mode_token)
            if queue.has_work():  # failed or cancelled with work queued: drop what is dead
                for dead in queue.keep(lambda task: not task[GRAPH_TASK].future.done()):
                    discard(dead)
                queue.wake_all()  # and hand the rest to whoever else drains this queue
        return future.result()

    def run_turn(self, graph_task: GraphTask, turn: int) -> tuple[Any, int]:
        """The synchronous part of a turn of ``drive``: pop and handle NodeTasks until one hands
        back something to await (returned, with the turn not yet counting it), the queue is
        empty, the turn is over (``turn`` 0) or the GraphTask is done. Returns (what to await or
        None, the turn left)."""
        pop, handle, future = graph_task.queue.pop, self.handle, graph_task.future
        while True:
            task = pop()
            if task is None:
                return None, turn
            pending = handle(task, graph_task)
            if pending is not None:
                return pending, turn
            turn -= 1
            if not turn or future.done():
                return None, turn

    def run_plain_turn(self, graph_task: GraphTask, turn: int) -> tuple[Any, int]:
        """``run_turn`` for a plain GraphTask (``plain.is_plain``): ``plain.run_plain_turn``."""
        return run_plain_turn(self, graph_task, turn)

    def handle(self, task: NodeTask, driving: GraphTask | None) -> Any:
        """Process one NodeTask for the drive of ``driving`` (None: a device worker); returns a
        coroutine when there is work to await (a slow node, final callbacks), None otherwise."""
        kind, _, _, _, graph_task, node, buffer, result = task
        if graph_task is not driving:
            return handle_foreign(self, task, graph_task)
        if kind == RUN:
            if graph_task.error is None:
                try:
                    # ``evaluate``, or the watched one (see GraphTask.evaluate); read into a
                    # local first: calling it as ``graph_task.evaluate(...)`` would cost a method
                    # lookup (about 10 ns more a node, measured).
                    run = graph_task.evaluate
                    pending = run(self, graph_task, node, buffer)
                except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
                    fail(graph_task, exc, node)
                else:
                    if pending is OFFLOADED:
                        return None
                    if pending is not None:
                        return finish_slow(graph_task, node, pending)
        else:
            finish_offloaded(self, graph_task, node, buffer, result)
        graph_task.outstanding -= 1
        if graph_task.outstanding == 0 and not graph_task.future.done():
            return complete(graph_task)
        return None

    def propagate(self, graph_task: GraphTask, node: Node, outputs: Any) -> None:
        """Hand each output gradient to the InputBuffer of the node its edge leads to, and push
        the nodes that became ready. The engine's hottest function."""
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
                if info is None or not info.should_execute():
                    continue
            grad = outputs[i]
            if remaining:
                next_buffer = not_ready.get(next_node)
                if next_buffer is None:
                    next_buffer = not_ready[next_node] = [None] * next_node.num_inputs
            else:
                next_buffer = not_ready.pop(next_node, None) if not_ready else None
                if next_buffer is None:
                    next_buffer = [None] * next_node.num_inputs
            if grad is not None:
                if graph_task.custom_add:  # deterministic mode, or streams
                    add_special(graph_task, node, i, next_node, input_nr, grad, next_buffer)
                elif next_buffer[input_nr] is None:
                    next_buffer[input_nr] = grad
                else:
                    accumulate(next_buffer, input_nr, grad, graph_task.create_graph)
            if not remaining:
                if graph_task.deterministic:
                    sum_in_order(graph_task, next_node, next_buffer)
                # ``self.push(graph_task, next_node, next_buffer)``, inlined: one call less per
                # node (``run_plain_turn`` inlines this whole function for plain GraphTasks).
                graph_task.outstanding += 1
                (self.queue_for(graph_task, next_buffer) if graph_task.multi_device else graph_task.queue).push(
                    (RUN, -graph_task.reentrant_depth, -next_node.sequence_nr, self.tie(), graph_task,
                     next_node, next_buffer, None)
                )

    def push(self, graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
        """Queue a ready node: on its gradients' device's queue, else its GraphTask's."""
        graph_task.outstanding += 1
        queue = self.queue_for(graph_task, buffer) if graph_task.multi_device else graph_task.queue
        queue.push((RUN, -graph_task.reentrant_depth, -node.sequence_nr, self.tie(), graph_task, node, buffer, None))

    def queue_for(self, graph_task: GraphTask, buffer: list[Any]) -> ReadyQueue:
        """Where a ready node waits: the queue of the first non-CPU device among its gradients,
        else its GraphTask's own queue."""
        dev = buffer_device(buffer)
        return graph_task.queue if dev is None else self.device_queue(dev)

    # ------------------------------------------------------------------------------- devices, executors
    def device_queue(self, dev: Any) -> DeviceQueue:
        """The queue of ``dev`` (made on first use; its worker starts with the first push)."""
        queue = self._device_queues.get(dev)
        if queue is None:
            queue = self._device_queues[dev] = DeviceQueue(self, dev)
        return queue

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

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop this engine serves."""
        loop = self._loop()
        if loop is None:
            raise RuntimeError("the event loop of this aiograd Engine is gone")
        return loop

    # ------------------------------------------------------------------------------- lifetime
    async def aclose(self) -> None:
        """Stop this engine's device workers (they also stop by themselves once their queues are
        empty) and forget the engine, so the next backward on this loop makes a fresh one."""
        workers = [q.worker for q in self._device_queues.values() if q.worker is not None]
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        self._device_queues.clear()
        if _engines.get(self.loop) is self:
            del _engines[self.loop]

    def statistics(self) -> EngineStatistics:
        """Counters since the engine was created, and what is running now."""
        return snapshot(self, self.driven, self._device_queues)



def handle_foreign(engine: Engine, task: NodeTask, owner: GraphTask) -> Any:
    """``Engine.handle`` for a NodeTask of a GraphTask other than the one being driven (a
    reentrant child's or parent's, or any on a device worker): it runs as that GraphTask's."""
    if owner.future.done():
        discard(task)  # its GraphTask failed or was cancelled: dropped
        return None
    with running(owner):
        pending = engine.handle(task, owner)
    return None if pending is None else await_as(owner, pending)

def hand_over_root(graph_task: GraphTask, root: Node, grad: Tensor) -> None:
    """The root gradient was made on the caller's stream: PyTorch adds it to the root's
    InputBuffer with that stream as its producer's."""
    dev = grad._device
    graph_task.producer = (None, graph_task.streams[dev], dev)  # type: ignore[index]
    hand_over(graph_task, grad, None, root)


def prune(
    graph_task: GraphTask,
    root: Node,
    output_edges: list[Edge] | None,
    staged_inputs: tuple[Tensor, ...] | None,
    accumulate_grad: bool,
    atomic: bool,
    min_topo_nr: int,
) -> None:
    """For ``grad()``, ``inputs=`` and ``atomic``: which nodes run and which gradients are
    captured (``init_to_execute``), an atomic backward's captures staged for its commit."""
    if atomic:
        output_edges, graph_task.staged = staging_targets(root, graph_task.dependencies, output_edges, staged_inputs)
        accumulate_grad = False  # captured, then committed on completion
    if output_edges is not None:
        graph_task.exec_info = init_to_execute(root, output_edges, accumulate_grad, min_topo_nr)
        graph_task.captured = [None] * len(output_edges)


_engines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Engine] = weakref.WeakKeyDictionary()


def get_engine() -> Engine:
    """The engine of the running event loop, created on first use."""
    loop = asyncio.get_running_loop()
    engine = _engines.get(loop)
    if engine is None:
        engine = _engines[loop] = Engine(loop)
    return engine
