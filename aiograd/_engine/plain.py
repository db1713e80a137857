"""The engine's hot loop for a plain GraphTask: ``Engine.run_turn`` with ``handle``, ``evaluate``,
``propagate`` and the ready queue's ``push``/``pop`` written out in one frame.

A backward without ``inputs=``, anomaly mode, watch, batched gradients, devices or deterministic
sums (``is_plain``) tests nothing per node but hooks and the offload estimate, so its nodes can
run without the general path's calls and field reads. What it does for a node is what
``Engine.handle`` does (the same steps in the same order; a change to one is a change to both:
tests/test_engine*.py run both paths); every other NodeTask goes through ``handle``.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

from .._core._node import undefined_only
from .completion import complete, fail
from .evaluate import evaluate
from .input_buffer import accumulate
from .node_task import RUN

if TYPE_CHECKING:
    from .._core._node import Node
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = ["is_plain", "run_plain_turn"]


def is_plain(engine: Engine, graph_task: GraphTask) -> bool:
    """Whether ``graph_task``'s nodes may run in ``Engine.run_plain_turn``: nothing to test per
    node but hooks and the offload estimate (no pruning, watch, anomaly mode, batched
    gradients, devices, deterministic sums), and a node too small to offload is never
    offloaded (a threshold above 0)."""
    return (
        graph_task.evaluate is evaluate
        and graph_task.exec_info is None
        and not graph_task.multi_device
        and not graph_task.custom_add
        and (graph_task.executor is None or engine.offload_threshold > 0)  # type: ignore[operator]
    )


def run_plain_turn(engine: Engine, graph_task: GraphTask, turn: int) -> tuple[Any, int]:
    """``run_turn`` for a plain GraphTask (``is_plain``: a ``backward()`` without
    ``inputs=``, anomaly mode, watch, devices or deterministic sums), with ``handle``,
    ``evaluate``, ``propagate`` and the queue's ``push``/``pop`` inlined for its nodes that
    take the fast path (no hooks, too small to offload): the same steps, in one frame, with
    the GraphTask's fields read once per turn instead of once per node. Any other NodeTask
    (another GraphTask's, an offloaded result, a node with hooks or one that may be
    offloaded) goes through ``handle``.

    A chain makes one node ready at a time: a node that becomes ready while the queue is
    empty (and nobody else waits on it) would be pushed into the front slot and popped next
    (see ``ReadyQueue``), so it is held here instead (``held``), and run next without
    building its NodeTask. It is pushed as it would have been as soon as anything else is:
    another node made ready (the heap orders them), the end of the turn. It counts as
    outstanding in the place of the node that made it ready."""
    queue = graph_task.queue
    future = graph_task.future
    handle = engine.handle
    tie = engine.tie
    keep_graph = graph_task.keep_graph
    create_graph = graph_task.create_graph
    dependencies = graph_task.dependencies
    not_ready = graph_task.not_ready
    depth = -graph_task.reentrant_depth
    # A node whose first gradient has fewer elements than this never reaches the offload
    # threshold (``evaluate``); as an int (``size < ceil(x)`` is ``size < x``), which
    # compares faster. Without an executor it is never tested.
    offloads = graph_task.executor is not None
    small_size = math.ceil(min(graph_task.small_size, sys.maxsize)) if offloads else 0
    held: Node | None = None
    held_buffer: Any = None
    while True:
        if held is None:
            task = queue.front  # ``queue.pop()``, inlined for the front slot
            if task is not None:
                queue.front = None
            else:
                task = queue.pop()
                if task is None:
                    return None, turn
            kind, _, _, _, owner, node, buffer, _ = task
            if (
                owner is not graph_task
                or kind != RUN
                or node._hooks is not None
                or (offloads and not (
                    node.cost_scales_with_grads and (buffer[0] is None or buffer[0].data.size < small_size)
                ))
            ):
                pending = handle(task, graph_task)
                if pending is not None:
                    return pending, turn
                turn -= 1
                if not turn or future.done():
                    return None, turn
                continue
            task = None  # (its buffer's gradients: see ``outputs`` below)
        else:
            node, buffer, held = held, held_buffer, None
        try:
            # ``evaluate``'s last steps
            if buffer[0] is None and undefined_only(node, buffer):
                outputs: Any = (None,) * len(node.next_edges)
            else:
                outputs = node.apply(buffer)
            if not keep_graph and node._saved:
                node.release_variables()
            # ``propagate``
            engine.nodes_executed += 1
            i = -1
            for edge in node.next_edges:
                i += 1
                if edge is None:
                    continue
                next_node, input_nr = edge
                remaining = dependencies[next_node] - 1
                dependencies[next_node] = remaining
                grad = outputs[i]
                if remaining == 0:
                    next_buffer = not_ready.pop(next_node, None) if not_ready else None
                    if next_buffer is None:
                        next_buffer = [None] * next_node.num_inputs
                else:
                    next_buffer = not_ready.get(next_node)
                    if next_buffer is None:
                        next_buffer = not_ready[next_node] = [None] * next_node.num_inputs
                if grad is not None:
                    if next_buffer[input_nr] is None:
                        next_buffer[input_nr] = grad
                    else:
                        accumulate(next_buffer, input_nr, grad, create_graph)
                if remaining != 0:
                    continue
                if (
                    held is None
                    and queue.front is None
                    and queue.queued == 0
                    and queue.waiting == 0
                    and next_node._hooks is None
                    and (not offloads or (
                        next_node.cost_scales_with_grads
                        and (next_buffer[0] is None or next_buffer[0].data.size < small_size)
                    ))
                ):
                    held, held_buffer = next_node, next_buffer
                    continue
                if held is not None:  # pushed after all, before this one
                    graph_task.outstanding += 1
                    queue.push((RUN, depth, -held.sequence_nr, tie(), graph_task, held, held_buffer, None))
                    held = None
                graph_task.outstanding += 1
                queue.push((RUN, depth, -next_node.sequence_nr, tie(), graph_task, next_node, next_buffer, None))
        except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
            fail(graph_task, exc, node)  # (its future is done: the drive stops; a held
            graph_task.outstanding -= 1  # node is dropped with the rest of its work)
            return None, turn - 1
        # Nothing of this node may stay referenced while the next one runs: ``owns`` (an
        # InputBuffer slot or a leaf's gradient taken over, not copied) counts references.
        outputs = grad = None
        if held is None:
            graph_task.outstanding -= 1
            if graph_task.outstanding == 0 and not future.done():
                return complete(graph_task), turn
        turn -= 1
        if turn == 0:
            if held is not None:
                queue.push((RUN, depth, -held.sequence_nr, tie(), graph_task, held, held_buffer, None))
            return None, 0
