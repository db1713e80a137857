"""Batched gradients (``grad(..., is_grads_batched=True)``): how one node runs in a batched
GraphTask.

Every gradient of a batched GraphTask carries ``graph_task.batch_ndim`` leading batch dims. A node
whose backward formula is written for that (``Node.batched``: the elementwise rules, which
broadcast from the right, and the shape-sensitive ones that keep the batch dims in front) runs
once on the whole batch, told their number: ``node.apply(buffer, graph_task.batch_ndim)``. Any
other node, a custom Function's included, runs once per sample on that sample's gradients, with
the results stacked again: PyTorch's vmap fallback for an op without a batching rule, for that
node only. The rest of the graph stays vectorized either way. On a device with streams, a batched
node is launched on its stream like any other (``NodeStreams.apply``); the per-sample loop runs
on the host's stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._base._grad_mode import grad_enabled
from .._core._tensor import Tensor
from .._devices._device import CPU
from .._ops.joining import stack

if TYPE_CHECKING:
    from .._core._node import Node
    from .graph_task import GraphTask

__all__ = ["apply_per_sample"]


def _on_device_of(data: Any, tensor: Tensor) -> Tensor:
    out = Tensor._wrap(data)
    if tensor._device is not CPU:  # (a CPU tensor keeps the class default, as every op's does)
        out._device = tensor._device
    return out


def _sample(grad: Tensor | None, b: int) -> Tensor | None:
    if grad is None:
        return None
    if grad_enabled():  # create_graph: select differentiably
        return grad[b]
    return _on_device_of(grad.data[b], grad)


async def apply_per_sample(graph_task: GraphTask, node: Node, buffer: list[Any]) -> list[Tensor | None]:
    """Run ``node`` once per sample of the batch (one sample's gradients, unbatched: the only
    batch ``grad()`` makes has one dim) and stack its outputs along dim 0."""
    first = next(g for g in buffer if g is not None)
    size = first.data.shape[0]
    per_sample: list[Any] = []
    for b in range(size):
        out = node.apply([_sample(g, b) for g in buffer])
        if node.is_async:
            out = await out  # type: ignore[misc]
        per_sample.append(list(out))
    outputs: list[Tensor | None] = []
    for i in range(len(per_sample[0]) if per_sample else len(node.next_edges)):
        column = [sample[i] for sample in per_sample]
        present = next((g for g in column if g is not None), None)
        if present is None:
            outputs.append(None)
            continue
        zeros = _on_device_of(present._device.xp.zeros_like(present.data), present)
        outputs.append(stack([g if g is not None else zeros for g in column]))
    return outputs
