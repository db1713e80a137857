"""Running one node: PyTorch's ``evaluate_function`` and ``call_function``.

``evaluate`` is the fast path, for a node without hooks: it runs the node (or hands it to an
executor) and propagates its gradients, synchronously. Everything else goes through
``evaluate_slow``, a coroutine that runs the hooks in PyTorch's order around ``apply`` and awaits
an async ``apply`` (a Function with ``async def backward``): a node with hooks, and every node of
a GraphTask in anomaly mode or with batched gradients, whose ``evaluate`` slot is
``evaluate_slow`` itself (the GraphTask chooses once, when it is made).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from .._core._anomaly import current_node
from .._core._hooks import (
    run_post_accumulate_hooks,
    run_post_hooks,
    run_pre_hooks,
    run_retains_grad,
    run_tensor_pre_hooks,
)
from .._core._node import undefined_only
from .batched import apply_per_sample
from .input_buffer import buffer_device
from .node_task import RUN
from .offload import offload
from .streams import HOST, NodeStreams, stream_device

if TYPE_CHECKING:
    from .._core._node import Node
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = ["OFFLOADED", "capture", "evaluate", "evaluate_on_stream", "evaluate_slow"]

#: What ``evaluate`` returns for a node it handed to an executor (its result comes back later,
#: as a DONE NodeTask).
OFFLOADED = object()


def evaluate(engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any]) -> Any:
    """Run one node and propagate its gradients. Returns None when that is done, OFFLOADED when
    the node went to an executor, or a coroutine (``evaluate_slow``) for the caller to await."""
    # (a node with an async apply, a Function's ``async def backward``, has a hook table too)
    if node._hooks is not None:
        return evaluate_slow(engine, graph_task, node, buffer)
    executor = graph_task.executor
    if graph_task.multi_device:
        dev = buffer_device(buffer)
        if dev is not None:
            if graph_task.streams is not None and dev.has_streams:
                return evaluate_on_stream(engine, graph_task, node, buffer, dev)
            if executor is not None:
                executor = engine.offload_executor(dev.type)
    exec_info = graph_task.exec_info
    if exec_info is not None:
        info = exec_info.get(node)
        if info is None:
            return None
        if not info.needed:  # reached only to capture its gradient (grad()'s inputs)
            capture(graph_task, info.captures, buffer)
            return None
    if executor is not None:
        # Most nodes are small and estimate their cost from their gradients' size: the first
        # gradient's size rules them out without calling cost().
        if node.cost_scales_with_grads:
            first = buffer[0]
            cost = node.cost(buffer) if first is not None and first.data.size >= graph_task.small_size else 0.0
        else:
            cost = node.cost(buffer)
        # Offloading pays when the node overlaps other work: nodes of its call in an executor
        # or ready to run, or other backward calls on the loop. Light nodes (a view's backward)
        # neither leave the loop for that nor count as that work: the loop drains them in
        # microseconds, and the thread round trip costs more than the overlap gains
        # (docs/executors.md, "When a node leaves the loop"). Any node, a light one too (a huge
        # copy), leaves the loop when running it there would stall it.
        if cost >= engine.offload_threshold and (  # type: ignore[operator]  (an executor: a threshold)
            cost >= engine.stall_threshold
            or not node.light and (graph_task.in_flight or len(engine.driven) > 1 or work_waits(graph_task))
        ):
            if exec_info is not None:
                capture(graph_task, exec_info[node].captures, buffer)
            offload(engine, graph_task, node, buffer, executor)
            return OFFLOADED
    if exec_info is not None:
        capture(graph_task, exec_info[node].captures, buffer)
    if buffer[0] is None and undefined_only(node, buffer):  # (GraphRoot's buffer is [None])
        outputs = (None,) * len(node.next_edges)
    else:
        outputs = node.apply(buffer)
    if not graph_task.keep_graph and node._saved:
        node.release_variables()
    engine.propagate(graph_task, node, outputs)
    return None


def work_waits(graph_task: GraphTask) -> bool:
    """Whether a node of ``graph_task`` that is not light waits in its queue: work the loop can
    do while an offloaded node runs (a light one, a view's backward, is done in microseconds;
    a small one may lead to a heavy branch, as each branch's ``sum`` or ``add`` does)."""
    for task in graph_task.queue.waiting_tasks():
        if task[0] == RUN and task[4] is graph_task and not task[5].light:
            return True
    return False


def evaluate_on_stream(engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any], dev: Any) -> None:
    """``evaluate`` for a node without hooks on a device with streams: launched on its stream
    (``streams.NodeStreams``), synchronously (the host does not wait for the work)."""
    on = NodeStreams(graph_task, node, dev)
    exec_info = graph_task.exec_info
    if exec_info is not None:
        info = exec_info.get(node)
        if info is None:
            return None
        if info.captures:
            on.leaf()  # a captured gradient is a result: the caller's streams wait for it
            capture(graph_task, info.captures, buffer)
        if not info.needed:
            return None
    if buffer[0] is None and undefined_only(node, buffer):
        outputs: Any = (None,) * len(node.next_edges)
    else:
        outputs = on.apply(node, buffer)
    if not graph_task.keep_graph and node._saved:
        node.release_variables()
    engine.propagate(graph_task, node, outputs)
    return None


async def evaluate_slow(engine: Engine, graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
    """``evaluate`` with everything around ``apply``, in PyTorch's order: tensor pre-hooks,
    retains_grad, node pre-hooks, apply (for a leaf: accumulation, then post-accumulate-grad
    hooks), node post-hooks; with the anomaly-mode NaN check and the current node recorded for
    anomaly reports. On a device with streams, ``apply`` is launched on the node's stream and
    the hooks see its work (``streams.NodeStreams``)."""
    hooks = node._hooks
    exec_info = graph_task.exec_info
    on = None
    if graph_task.streams is not None:
        dev = stream_device(buffer)
        if dev is not None:
            on = NodeStreams(graph_task, node, dev)
    if exec_info is not None:
        info = exec_info.get(node)
        needed = info is not None and info.needed
        captures = info.captures if info is not None else ()
        if captures and on is not None:
            on.leaf()  # a captured gradient is a result: the caller's streams wait for it
        if needed:
            # Captured before the hooks run, as PyTorch does for a node that also runs.
            capture(graph_task, captures, buffer)
        else:
            # Reached but not run: only tensor hooks and retains-grad see the gradient,
            # and the capture takes what they leave.
            if hooks is not None:
                if on is not None:
                    on.host_sees_node()
                await run_tensor_pre_hooks(hooks, buffer)
                run_retains_grad(hooks, buffer)
            capture(graph_task, captures, buffer)
            return
    if hooks is not None and (hooks.tensor_pre or hooks.retains_grad or hooks.pre):
        if on is not None:
            on.host_sees_node()
        if hooks.tensor_pre:
            await run_tensor_pre_hooks(hooks, buffer)
        if hooks.retains_grad:
            run_retains_grad(hooks, buffer)
        if hooks.pre:
            buffer = await run_pre_hooks(hooks, buffer)
        if on is not None:
            on.node_sees_host()  # hooks may have replaced gradients, on the host's stream
    anomaly_token = current_node.set(node) if graph_task.anomaly else None
    try:
        if buffer[0] is None and undefined_only(node, buffer):
            outputs = (None,) * len(node.next_edges)
        elif graph_task.batch_ndim and not node.batched:
            outputs = await apply_per_sample(graph_task, node, buffer)
        elif on is not None:
            outputs = on.apply(node, buffer, graph_task.batch_ndim)
            if node.is_async:
                outputs = await outputs
        elif graph_task.batch_ndim:
            outputs = node.apply(buffer, graph_task.batch_ndim)
        else:
            outputs = node.apply(buffer)
            if node.is_async:
                outputs = await outputs
    finally:
        if anomaly_token is not None:
            current_node.reset(anomaly_token)
    if not graph_task.keep_graph and node._saved:
        node.release_variables()
    # Read again: apply (an unpack hook, a custom backward) may have registered the node's first
    # hooks, and PyTorch runs post-hooks registered while the node ran.
    hooks = node._hooks
    if hooks is not None and ((hooks.post_accumulate and buffer[0] is not None) or hooks.post):
        if on is not None:
            on.host_sees_node()
            graph_task.producer = (node, HOST, None)  # post-hooks may replace outputs, there
        # A leaf's post-accumulate-grad hooks are part of its AccumulateGrad's apply in
        # PyTorch (accumulate_grad.h), so they run before the node's post-hooks.
        if hooks.post_accumulate and buffer[0] is not None:
            variable = node.variable  # type: ignore[attr-defined]  (AccumulateGrad)
            if variable is not None:
                await run_post_accumulate_hooks(hooks, variable)
        if hooks.post:
            outputs = await run_post_hooks(hooks, outputs, buffer)
    if graph_task.check_nan:
        with on.producer_scope() if on is not None else nullcontext():
            for i, out in enumerate(outputs):
                if out is not None and out._device.xp.isnan(out.data).any():
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
    engine.propagate(graph_task, node, outputs)


def capture(graph_task: GraphTask, captures: Any, buffer: list[Any]) -> None:
    """Keep the gradients ``grad()`` returns: ``captures`` lists (input_nr, result index)."""
    captured = graph_task.captured
    for input_nr, index in captures:
        captured[index] = buffer[input_nr]
