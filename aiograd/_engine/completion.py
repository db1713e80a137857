"""How a GraphTask ends: completion (final callbacks, the atomic commit, the result) or
failure (first error wins; what still works for it stops).

Completion runs when the last outstanding NodeTask is done: final callbacks (FIFO, each once,
they may queue more), a check that no node was left half-fed, then, for ``backward(atomic=True)``,
every captured gradient is added into its ``.grad`` in one synchronous step, and the future gets
the captured gradients. Failure sets the future's exception (the same object the caller's
``await`` raises, with a note naming the node) and stops the reentrant GraphTasks nested in it
and its nodes awaited on device workers; its remaining NodeTasks are dropped as they come up.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from .._core._anomaly import warn_with_history
from .._core._hooks import run_post_accumulate_hooks
from .._core._node import AccumulateGrad
from .streams import settle, sync_leaf_streams

if TYPE_CHECKING:
    from types import TracebackType

    from .._core._node import Edge, Node
    from .._core._tensor import Tensor
    from .graph_task import GraphTask

__all__ = ["abandon", "complete", "fail", "finish_slow", "release_frames", "staging_targets"]


async def complete(graph_task: GraphTask) -> None:
    """All nodes ran: final callbacks, the GPU's work awaited (devices with streams), the atomic
    commit, then the result."""
    if graph_task.streams is not None and graph_task.error is None:
        sync_leaf_streams(graph_task)  # so final callbacks may use the gradients
    callbacks = graph_task.final_callbacks
    i = 0
    while i < len(callbacks):
        try:
            result = callbacks[i]()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
            fail(graph_task, exc, None)
            return
        i += 1
    if graph_task.not_ready:
        names = ", ".join(sorted({n.name() for n in graph_task.not_ready}))
        fail(graph_task, RuntimeError(f"could not compute gradients for some functions ({names})"), None)
        return
    if graph_task.streams is not None and graph_task.error is None:
        # On devices with streams the nodes' work was only queued: order it before the
        # caller's streams and wait, without blocking the loop, until the GPU has done it
        # (before the atomic commit, whose sums read the captured gradients on the host's stream).
        await settle(graph_task)
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
            fail(graph_task, exc, None)
            return
        graph_task.captured = []
    if not graph_task.future.done():
        graph_task.future.set_result(graph_task.captured)
        graph_task.queue.wake_all()  # its driver may wait on an empty queue


async def finish_slow(graph_task: GraphTask, node: Node, pending: Any) -> None:
    """Await a node's slow path (``evaluate_slow``, a hook, an async ``apply``), then count
    the node done; the GraphTask fails with what it raised, naming the node."""
    try:
        await pending
    except Exception as exc:  # noqa: BLE001 - the GraphTask reports it
        fail(graph_task, exc, node)
    graph_task.outstanding -= 1
    if graph_task.outstanding == 0 and not graph_task.future.done():
        await complete(graph_task)


def fail(graph_task: GraphTask, exc: BaseException, node: Node | None) -> None:
    """First error wins: the note names the node, the future raises ``exc``, and everything
    still working for the GraphTask stops (``abandon``)."""
    if graph_task.error is not None:
        return
    if node is not None:
        exc.add_note(f"while running {node.name()}")
        if graph_task.anomaly:
            warn_with_history(node)
    graph_task.error = exc
    if not graph_task.future.done():
        graph_task.future.set_exception(exc)
        graph_task.queue.wake_all()
    abandon(graph_task)


def release_frames(tb: TracebackType | None, modules: tuple[str, ...] = ("aiograd._engine.",)) -> None:
    """Clear the locals of the finished frames of ``modules`` in a traceback (its lines stay),
    so an error that reaches the caller does not keep its GraphTask and graph alive through
    them: those frames hold the GraphTask (or a future), which holds the error, which holds the
    frames, a reference cycle only the garbage collector would break (PyTorch's frames are C++
    and hold nothing). The user's own frames (hooks, Function backwards) keep their locals."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_globals.get("__name__", "").startswith(modules):
            try:
                frame.clear()
            except RuntimeError:  # still running (the frame re-raising it)
                pass
        tb = tb.tb_next


def abandon(graph_task: GraphTask) -> None:
    """``graph_task`` failed or was cancelled: its nodes awaited on device workers are
    cancelled, and every reentrant GraphTask nested in it fails (iteratively: they may be
    thousands deep), so no leaf accumulates any more."""
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
                task.queue.wake_all()
        waits = task.device_waits
        if waits:
            for waiter in list(waits):
                waiter.cancel()
        if task.children:
            stack.extend(task.children)


def staging_targets(
    root: Node,
    dependencies: dict[Node, int],
    output_edges: list[Edge] | None,
    inputs: tuple[Tensor, ...] | None,
) -> tuple[list[Edge], list[Any]]:
    """``backward(atomic=True)``: the edges to capture and, for each, what receives it. Without
    ``inputs``, every leaf the graph reaches (the root too: ``leaf.backward(g)``); with them,
    each input (a leaf's AccumulateGrad, or the non-leaf tensor itself)."""
    if output_edges is None:
        accumulators = [n for n in (root, *dependencies) if type(n) is AccumulateGrad]
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
