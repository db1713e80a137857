"""GraphTask: the state of one ``backward()``/``grad()`` call, and the two graph walks that set
it up (PyTorch's ``compute_dependencies`` and ``init_to_execute``).

Everything here is read and written only by coroutines of the engine's event loop, so nothing
takes a lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._base._cost import NS_PER_ELEMENT
from .._core._anomaly import anomaly_state
from .._devices import _device
from . import settings
from .evaluate import evaluate, evaluate_slow
from .streams import caller_streams

if TYPE_CHECKING:
    from .._core._node import Edge, Node
    from .._core._tensor import Tensor
    from ..executors import Executor
    from .ready_queue import ReadyQueue

__all__ = ["ExecInfo", "GraphTask", "compute_dependencies", "init_to_execute"]


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
    """The state of one backward call; docs/engine.md describes each field's role."""

    __slots__ = (
        # what was asked
        "keep_graph", "create_graph", "reentrant_depth", "exec_info", "checkpoint_valid",
        "staged", "batch_ndim",
        # modes, fixed at the start, all in ``__init__``, with what the per-node path derives
        # from them (``custom_add``, ``evaluate``, ``small_size``) so that it tests no mode twice
        "multi_device", "anomaly", "check_nan", "deterministic", "custom_add", "streams",
        "executor", "small_size",
        # what runs its nodes: ``evaluate``, ``evaluate_slow``, or ``watch.evaluate_watched``
        # around either with a Watch
        "evaluate", "watch",
        # progress
        "dependencies", "not_ready", "outstanding", "captured", "final_callbacks",
        "error", "future", "queue", "contributions",
        # offload
        "in_flight", "deferred",
        # streams (CUDA devices)
        "leaf_streams", "producer",
        # reentrancy and cancellation
        "children", "device_waits",
        "__weakref__",
    )

    def __init__(
        self,
        keep_graph: bool,
        create_graph: bool,
        *,
        parent: GraphTask | None,
        queue: ReadyQueue,
        pruned: bool,
        batch_ndim: int,
        executor: Executor | None,
        offload_threshold: float | None,
    ) -> None:
        """``parent``: the GraphTask whose node makes this call (a reentrant backward), whose
        ``queue`` it runs on; ``pruned``: grad() or backward(inputs=) (only the nodes leading to
        the inputs run); ``executor``: where its CPU nodes may be offloaded, with the engine's
        ``offload_threshold``."""
        self.keep_graph: bool = keep_graph
        self.create_graph: bool = create_graph
        self.reentrant_depth: int = parent.reentrant_depth + 1 if parent is not None else 0
        #: Per node: why it runs, under grad() or backward(inputs=); None runs every node.
        self.exec_info: dict[Node, ExecInfo] | None = None
        #: False under grad() or backward(inputs=), and in any backward nested in one: a
        #: reentrant checkpoint cannot hand its gradients to such a call.
        self.checkpoint_valid: bool = not pruned and (parent is None or parent.checkpoint_valid)
        #: ``backward(atomic=True)``: where each captured gradient goes when the GraphTask
        #: completes (an AccumulateGrad, or a non-leaf input tensor); None otherwise.
        self.staged: list[Any] | None = None
        #: ``grad(is_grads_batched=True)``: leading batch dims on every gradient (0: none).
        self.batch_ndim: int = batch_ndim

        # ---- modes
        #: Whether any non-CPU device existed when it started: only then are NodeTasks routed
        #: by their gradients' device (a scan of the InputBuffer the CPU-only case skips).
        self.multi_device: bool = _device.non_cpu_devices_exist
        # Anomaly mode of the caller: every node then takes the slow path, which checks NaNs and
        # reports the forward history of a failing node.
        anomaly, check_nan = anomaly_state()
        self.anomaly: bool = anomaly
        self.check_nan: bool = anomaly and check_nan
        #: use_deterministic_algorithms: each InputBuffer slot sums its contributions in a fixed
        #: order, kept in ``contributions`` until the node is ready.
        self.deterministic: bool = settings.deterministic
        #: Streams (``streams.py``), on devices that have them: the caller's current stream per
        #: device; None when no such device exists (and nothing stream-related is used). Nodes on
        #: them take the slow path, which launches them on streams; gradients are handed over.
        self.streams: dict[Any, Any] | None = caller_streams() if self.multi_device else None
        #: An InputBuffer slot is filled by ``input_buffer.add_special`` (deterministic mode, or
        #: streams), not inline in ``propagate``: one test there for both.
        self.custom_add: bool = self.deterministic or self.streams is not None
        #: Where its CPU nodes may be offloaded: nowhere with batched gradients (an executor
        #: runs ``node.apply(buffer)``, without the batch; see ``batched.apply_per_sample``).
        self.executor: Executor | None = None if batch_ndim else executor
        #: Gradients smaller than this cannot make an elementwise node reach the offload
        #: threshold: they are never offloaded, without asking the node its cost.
        self.small_size: float = (
            offload_threshold / NS_PER_ELEMENT / 8
            if self.executor is not None and offload_threshold is not None else float("inf")
        )
        #: What ``Engine.handle`` runs each of its nodes with, chosen here (and wrapped by
        #: ``watch.start`` when watched) so that the per-node path never tests a mode:
        #: ``evaluate_slow`` for every node under anomaly mode (the NaN check, the forward
        #: history) or batched gradients (the per-sample fallback), ``evaluate`` otherwise.
        self.evaluate: Callable[..., Any] = evaluate_slow if anomaly or batch_ndim else evaluate
        self.watch: Any = None  # its ``watch.Watch`` when watched

        # ---- progress
        #: Edges into each node not yet received; a node is ready when its count reaches 0.
        self.dependencies: dict[Node, int] = {}
        #: InputBuffers of nodes that received some of their gradients but not all.
        self.not_ready: dict[Node, list[Any]] = {}
        #: NodeTasks queued, running or offloaded; the GraphTask completes when it is 0.
        self.outstanding: int = 0
        self.captured: list[Tensor | None] = []  # grad()'s results, by input
        self.final_callbacks: list[Callable[[], Any]] = []
        self.error: BaseException | None = None
        self.future: asyncio.Future[list[Tensor | None]] = asyncio.get_running_loop().create_future()
        self.queue: ReadyQueue = queue  # where its CPU NodeTasks wait (its own, or a reentrant parent's)
        #: Deterministic mode: (node, input_nr) -> [(producer key, grad)], summed when it is ready.
        self.contributions: dict[tuple[Node, int], list[tuple[tuple[int, int], Any]]] = {}

        self.in_flight: int = 0  # its nodes running in an executor
        self.deferred: list[tuple[Node, list[Any], Executor]] = []  # waiting for capacity

        #: The streams its leaves ran on (stream -> device); the (node, stream, device) of the
        #: last node launched on a stream, whose gradients are being handed on.
        self.leaf_streams: dict[Any, Any] = {}
        self.producer: tuple[Any, Any, Any] = (None, None, None)

        #: Reentrant GraphTasks running inside this one's nodes; they stop if this one fails.
        self.children: list[GraphTask] | None = None
        #: Its nodes being awaited on device workers (asyncio tasks) or in executors (their
        #: futures), cancelled if it fails.
        self.device_waits: set[asyncio.Future[Any]] | None = None


def compute_dependencies(root: Node, min_topo_nr: int) -> dict[Node, int]:
    """Count the edges into each node reachable from ``root`` (iteratively: no recursion, so a
    100,000-node chain works). Nodes below ``min_topo_nr`` cannot lead to a requested input and
    are not expanded."""
    dependencies: dict[Node, int] = {}
    stack: list[Node] = []
    pop, append = stack.pop, stack.append
    prune = min_topo_nr > 0  # (every node has a topological_nr >= 0)
    node = root
    while True:
        # Expand ``node``. The first child seen for the first time is expanded next, without
        # going through the stack (in a chain, every node); the others wait there.
        after = None
        if not prune or node.topological_nr >= min_topo_nr:
            for edge in node.next_edges:
                if edge is None:
                    continue
                child = edge[0]
                if child in dependencies:
                    dependencies[child] += 1
                else:
                    # First edge into ``child``: expand it (the root has no entry, and no edge
                    # leads back to it in a DAG, so it is never expanded twice).
                    dependencies[child] = 1
                    if after is None:
                        after = child
                    else:
                        append(child)
        if after is None:
            if not stack:
                return dependencies
            after = pop()
        node = after


def init_to_execute(
    root: Node, output_edges: list[Edge], accumulate_grad: bool, min_topo_nr: int
) -> dict[Node, ExecInfo]:
    """Mark the nodes that lead to the requested inputs (PyTorch's ``init_to_execute``): an
    input's node is captured (``grad()``) or run (``backward(inputs=)``), and every node with a
    path to one is needed."""
    exec_info: dict[Node, ExecInfo] = {}
    # The root is needed only if it leads to an input, like every other node: PyTorch does not
    # run a root that cannot reach one (its tensor hooks still see the gradient).
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
        return info is not None and info.should_execute()

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
