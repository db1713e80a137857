"""Offload: a heavy node's math runs in an executor while the engine keeps its bookkeeping on
the loop.

``offload`` submits ``node.apply(buffer)`` (in a copy of the GraphTask's context, so grad mode
and the user's context variables hold there) and returns at once; the executor's future comes
back to the loop as a DONE NodeTask in the node's queue, and ``finish_offloaded`` propagates it
there. A GraphTask keeps at most its executor's ``capacity`` nodes in flight; the rest wait in
``deferred``. Which executor a device type uses: the engine's own, else ``set_executor``'s, else
the device type's default (one shared instance).
"""

from __future__ import annotations

import contextvars
import functools
from typing import TYPE_CHECKING, Any

from .. import executors
from .._devices import _device
from ..executors import Executor
from .completion import fail
from .input_buffer import buffer_device
from .logs import DEBUG, executor_log
from .node_task import DONE, RESULT, NodeTask

if TYPE_CHECKING:
    import asyncio

    from .._core._node import Node
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = ["ExecutorLoad", "discard", "finish_offloaded", "get_executor", "offload", "set_executor"]

_chosen: dict[str, Executor] = {}  # set_executor's
_defaults: dict[str, Executor] = {}  # one instance of each device type's default executor


def set_executor(device_type: str, executor: Executor | None) -> None:
    """Use ``executor`` for the heavy nodes of ``device_type`` (e.g. ``"cpu"``) in every engine
    that was not given its own; None restores the default (a ThreadExecutor for the CPU)."""
    if executor is None:
        _chosen.pop(device_type, None)
    elif not isinstance(executor, Executor):
        raise TypeError(f"expected an aiograd.executors.Executor, got {type(executor).__name__}")
    else:
        _chosen[device_type] = executor


def get_executor(device_type: str) -> Executor:
    """The executor that engines without their own use for ``device_type``: the one given to
    ``set_executor``, else one instance (shared) of the device type's registered default, a
    ThreadExecutor for the CPU and an InlineExecutor for ``sim`` devices."""
    executor = _chosen.get(device_type)
    if executor is not None:
        return executor
    executor = _defaults.get(device_type)
    if executor is None:
        make = _device.device_type(device_type).default_executor
        if isinstance(make, str):  # a class of aiograd.executors, by name
            make = getattr(executors, make)
        executor = _defaults[device_type] = make()
    return executor


class ExecutorLoad:
    """What an engine has sent to executors: counters for ``statistics()``, and the nodes in
    flight per device type's executor."""

    def __init__(self) -> None:
        self.nodes_offloaded: int = 0
        self.nodes_in_flight: int = 0
        self.max_nodes_in_flight: int = 0
        self.occupancy: dict[str, list[Any]] = {}  # device type -> [executor, in flight]

    def occupy(self, executor: Executor, device_type: str) -> list[Any]:
        """Count a node submitted to ``executor``; returns the entry ``release`` takes."""
        self.nodes_offloaded += 1
        self.nodes_in_flight += 1
        if self.nodes_in_flight > self.max_nodes_in_flight:
            self.max_nodes_in_flight = self.nodes_in_flight
        entry = self.occupancy.get(device_type)
        if entry is None or entry[0] is not executor:
            entry = self.occupancy[device_type] = [executor, 0]
        entry[1] += 1
        return entry

    def release(self, entry: list[Any]) -> None:
        """A node ``occupy`` counted came back."""
        self.nodes_in_flight -= 1
        entry[1] -= 1


def offload(engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any], executor: Executor) -> None:
    """Run ``node.apply(buffer)`` in ``executor``; its result comes back as a DONE NodeTask."""
    if graph_task.in_flight >= executor.capacity:
        graph_task.deferred.append((node, buffer, executor))
        return
    graph_task.in_flight += 1
    dev = buffer_device(buffer) if graph_task.multi_device else None
    occupancy = engine.load.occupy(executor, "cpu" if dev is None else dev.type)
    # The math runs in a copy of this context: grad mode = create_graph, the user's variables.
    context = contextvars.copy_context()
    call = functools.partial(context.run, node.apply, buffer)
    if graph_task.watch is not None:  # profiling or debug logs: where and when it runs
        call = graph_task.watch.wrap_offloaded(node, call, executor)
    try:
        future = executor.submit_node(node, buffer, call)
    except Exception as exc:
        # Nothing went out: uncount it, or statistics() and the GraphTask's own count would
        # show a node in flight for good. The node fails its GraphTask with this error (the
        # caller sees it); logged for the executor's sake, at DEBUG for the reason in ``logs``.
        engine.load.release(occupancy)
        graph_task.in_flight -= 1
        executor_log.debug("%r refused %s: %s: %s", executor, node.name(), type(exc).__name__, exc)
        raise
    queue = graph_task.queue if dev is None else engine.device_queue(dev)
    # Cancelled if the GraphTask fails or is cancelled (``completion.abandon``): a thread pool
    # drops the call if it has not started, a cluster stops the task.
    waits = graph_task.device_waits
    if waits is None:
        waits = graph_task.device_waits = set()
    waits.add(future)

    def done(fut: asyncio.Future[Any]) -> None:
        # On the loop. A GraphTask that failed or was cancelled meanwhile is gone: its
        # result is dropped here (and its exception retrieved, so asyncio does not log it).
        engine.load.release(occupancy)
        waits.discard(fut)
        if graph_task.future.done():
            if not fut.cancelled() and fut.exception() is not None and executor_log.isEnabledFor(DEBUG):
                executor_log.debug(
                    "dropped the error of %s, whose GraphTask had already ended: %r", node.name(), fut.exception()
                )
            return
        queue.push((DONE, 0, 0, engine.tie(), graph_task, node, buffer, fut))

    future.add_done_callback(done)


def finish_offloaded(
    engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any], future: asyncio.Future[Any]
) -> None:
    """Back on the loop: release the node's saved tensors, propagate its gradients, and start
    what waited for capacity."""
    graph_task.in_flight -= 1
    watch = graph_task.watch
    if watch is not None:
        watch.came_back(node)
    if graph_task.error is None:
        try:
            outputs = future.result()
            if not graph_task.keep_graph and node._saved:
                node.release_variables()
            engine.propagate(graph_task, node, outputs)
        except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
            if watch is not None:
                watch.failed(node, exc)
            fail(graph_task, exc, node)
        else:
            if watch is not None:
                watch.finish(graph_task, node)
    elif not future.cancelled():
        future.exception()  # retrieved, so asyncio does not log it: the task already failed
    deferred = graph_task.deferred
    if deferred and graph_task.error is None:
        offload(engine, graph_task, *deferred.pop(0))
    elif deferred:
        graph_task.outstanding -= len(deferred)  # dropped with the failed GraphTask
        deferred.clear()


def discard(task: NodeTask) -> None:
    """Drop a NodeTask of a finished GraphTask; an offloaded node's result has its exception
    retrieved, so that asyncio does not log it and its traceback (which holds the graph) goes."""
    if task[0] == DONE:
        future = task[RESULT]
        if not future.cancelled():
            future.exception()
