"""InputBuffer: the gradients a node receives, one slot per input, summed as they arrive.

An InputBuffer is a plain list (the node's ``apply`` takes it as it is, without a copy): slot
``i`` holds the sum of the gradients sent to the node's input ``i`` so far, or None. The first
gradient is moved in; later ones are added, in place only when the slot's tensor is the buffer's
alone and no graph is being recorded (PyTorch's ``InputBuffer::add``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from .._core._node import owns
from .._devices._device import CPU, device_type
from .streams import hand_over, node_stream, ran, stream_device

if TYPE_CHECKING:
    from .._core._node import Node
    from .._core._tensor import Tensor
    from .._devices._device import device
    from .graph_task import GraphTask

__all__ = [
    "InputBuffer", "accumulate", "add_special", "buffer_device", "defer_contribution", "sum_in_order",
]

#: One slot per node input: the sum of the gradients received so far, or None.
InputBuffer: TypeAlias = "list[Tensor | None]"


def accumulate(buffer: list[Any], i: int, grad: Tensor, create_graph: bool) -> None:
    """Add ``grad`` into the occupied slot ``i``: in place only when the slot's tensor is ours
    alone (nothing else refers to it or its array) and no graph is recorded."""
    if (
        not create_graph
        and owns(buffer, i)
        and buffer[i].data.shape == grad.data.shape
        and buffer[i].data.dtype == grad.data.dtype
    ):
        try:
            buffer[i].data += grad.data
        except RuntimeWarning:
            # inf + -inf where -W error made numpy's warning an exception (torch is silent):
            # numpy raises it after writing the whole result, so the sum is done.
            pass
    else:
        buffer[i] = buffer[i] + grad


def buffer_device(buffer: list[Any]) -> device | None:
    """The first non-CPU device among a buffer's gradients (where its node runs), or None."""
    for grad in buffer:
        if grad is not None and grad._device is not CPU:
            return grad._device
    return None


def add_special(graph_task: GraphTask, producer: Node, output_nr: int, target: Node, input_nr: int,
                grad: Tensor, buffer: list[Any]) -> None:
    """Fill slot ``input_nr`` of ``target``'s buffer with ``grad`` when ``propagate`` cannot do
    it inline: on a device with streams (ordered after the producer's work, summed on the
    consumer's stream), or in deterministic mode (kept aside for ``sum_in_order``)."""
    stream = None
    if graph_task.streams is not None and grad._device.has_streams:
        stream = hand_over(graph_task, grad, producer, target)
    if graph_task.deterministic:
        defer_contribution(graph_task, producer, output_nr, target, input_nr, grad)
    elif buffer[input_nr] is None:
        buffer[input_nr] = grad
    elif stream is None:
        accumulate(buffer, input_nr, grad, graph_task.create_graph)
    else:
        dev = grad._device
        before = buffer[input_nr]
        with device_type(dev.type).stream_scope(stream):
            accumulate(buffer, input_nr, grad, graph_task.create_graph)
        ran(dev, stream, (before, grad), (buffer[input_nr],))


def defer_contribution(graph_task: GraphTask, producer: Node, output_nr: int, target: Node,
                       input_nr: int, grad: Tensor) -> None:
    """Deterministic mode: keep a contribution aside, to be summed by ``sum_in_order`` when the
    target is ready, whatever order offloaded producers finish in."""
    graph_task.contributions.setdefault((target, input_nr), []).append(
        ((-producer.sequence_nr, output_nr), grad)
    )


def sum_in_order(graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
    """Deterministic mode: each slot's contributions, added in the order of their producers'
    sequence numbers (newest first, the order of a serial run), not in arrival order."""
    dev = stream_device(buffer_of_parts(graph_task, node)) if graph_task.streams is not None else None
    if dev is not None:  # summed on the consumer's stream, where hand_over ordered the parts
        stream = node_stream(graph_task, node, dev)
        with device_type(dev.type).stream_scope(stream):
            _sum_parts(graph_task, node, buffer)
        ran(dev, stream, (), buffer)
    else:
        _sum_parts(graph_task, node, buffer)


def buffer_of_parts(graph_task: GraphTask, node: Node) -> list[Any]:
    """The first contribution to each of ``node``'s slots (for their device)."""
    contributions = graph_task.contributions
    return [parts[0][1] for i in range(node.num_inputs) if (parts := contributions.get((node, i)))]


def _sum_parts(graph_task: GraphTask, node: Node, buffer: list[Any]) -> None:
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
