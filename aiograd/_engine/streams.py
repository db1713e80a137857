"""Streams: where a node's work on a CUDA device is queued, and how the engine orders work
across streams without the host waiting (PyTorch's stream semantics of backward passes).

Only for devices whose type has streams (``cuda``, and ``simcuda``, its CPU double); a GraphTask
touches this module only if such a device existed when it started (``GraphTask.streams``).

- A node's stream (``node_stream``): the one current when the node was recorded inside
  ``use_stream`` (PyTorch runs each backward op on the stream of its forward), else the stream
  current on that device in the caller of ``backward()``/``grad()``, captured when it started.
- A node runs with its stream current (``NodeStreams.apply``), and its work is not waited for.
- A gradient handed from one node to the next (``hand_over``) follows PyTorch's InputBuffer
  rules, the consumer's device being the gradient's: (2) the producer ran on that device: the
  consumer's stream waits for an event recorded on the producer's stream (when they differ),
  and accumulation runs on the consumer's stream; (3) the producer ran elsewhere (a copy between
  devices, whose copy went to the default stream): the consumer's stream waits for the
  device's default stream. PyTorch's cases (4) and (5), a gradient on a device its consumer is
  not on, do not arise: a gradient arrives on its input's device.
- At the end (``settle``): the caller's current streams wait for the leaf streams (the streams
  that AccumulateGrad nodes and ``grad()``'s captures ran on), as PyTorch's
  ``exec_post_processing`` does, and then the GraphTask waits, without blocking the loop, for
  events recorded on those caller streams: the awaited backward returns when the GPU is done.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .._core._node import GraphRoot
from .._devices import _device

if TYPE_CHECKING:
    from .._core._node import Node
    from .._core._tensor import Tensor
    from .._devices._device import device
    from .graph_task import GraphTask

__all__ = [
    "HOST", "NodeStreams", "caller_streams", "hand_over", "node_stream", "ran", "settle",
    "stream_device", "sync_leaf_streams", "wait",
]


def caller_streams() -> dict[device, Any] | None:
    """The current stream of every device with streams made so far, on this thread (the caller
    of a backward); None when there is none."""
    streams = None
    for dev in _device.stream_devices():
        if streams is None:
            streams = {}
        streams[dev] = _device.device_type(dev.type).current_stream(dev.index)
    return streams


def stream_device(buffer: list[Any]) -> device | None:
    """The first device with streams among a buffer's gradients, or None."""
    for grad in buffer:
        if grad is not None:
            dev = grad._device
            if dev.has_streams and dev.index is not None:
                return dev
    return None


def node_stream(graph_task: GraphTask, node: Node, dev: device) -> Any:
    """The stream ``node``'s work on ``dev`` is launched on (see the module docstring)."""
    forward = getattr(node, "_forward_streams", None)
    if forward:
        stream = forward.get(dev)
        if stream is not None:
            return stream
    streams = graph_task.streams
    stream = streams.get(dev) if streams else None
    if stream is None:  # the device was first used after the backward started
        stream = streams[dev] = _device.device_type(dev.type).current_stream(dev.index)  # type: ignore[index]
    return stream


def ran(dev: device, stream: Any, reads: Any, writes: Any) -> None:
    """Tell the device type that work on ``stream`` read and wrote these tensors (a sanitizer's
    hook; nothing on CUDA). A tensor written on another device (a copy there) counts as written
    by that device's current stream, as a copy between devices is ordered on both sides."""
    kind = _device.device_type(dev.type)
    elsewhere = [t for t in writes if t is not None and t._device is not dev]
    kind.ran_on(
        stream,
        [t.data for t in reads if t is not None],
        [t.data for t in writes if t is not None and t._device is dev],
    )
    for t in elsewhere:
        other = t._device
        if other.has_streams:
            other_kind = _device.device_type(other.type)
            other_kind.ran_on(other_kind.current_stream(other.index), (), (t.data,))


#: The stream of ``GraphTask.producer`` for outputs made by host code outside the node's stream
#: (post-hooks, an async backward): their work went to the thread's current stream.
HOST = "host"


def hand_over(graph_task: GraphTask, grad: Tensor, producer: Node | None, consumer: Node) -> Any:
    """Order ``grad``'s work (an output of ``producer``; None: the root gradient) before its
    consumer's, as PyTorch's ``InputBuffer::add`` does; returns the stream the consumer's
    InputBuffer accumulates on (the consumer's)."""
    dev = grad._device
    kind = _device.device_type(dev.type)
    consumer_stream = node_stream(graph_task, consumer, dev)
    ran_node, ran_stream, ran_dev = graph_task.producer
    if ran_node is not producer:  # the producer did not run on a stream
        if type(producer) is GraphRoot:  # its outputs are the caller's root gradients
            producer_stream = graph_task.streams[dev]  # type: ignore[index]
        else:  # a CPU node: its copy to the device went to the thread's current stream
            producer_stream = kind.current_stream(dev.index)
    elif ran_stream is HOST:
        producer_stream = kind.current_stream(dev.index)
    elif ran_dev is dev:  # case (2): the producer ran on this device, on its stream
        producer_stream = ran_stream
    else:  # case (3): the producer ran on another device: sync with this one's default stream
        producer_stream = kind.default_stream(dev.index)
    if producer_stream != consumer_stream:
        wait(graph_task, kind, consumer_stream, producer_stream)
    return consumer_stream


def wait(graph_task: GraphTask, kind: Any, waiter: Any, producer: Any) -> None:
    """Work queued on ``waiter`` from now on runs after the work queued on ``producer`` so
    far: an event recorded on one, waited for by the other; the host does not wait."""
    kind.wait_event(waiter, kind.record_event(producer))


class NodeStreams:
    """The streams of one node's evaluation on a device with streams: the node's own, where
    ``apply`` is launched, and the host's (the thread's current stream), where hooks and an
    async backward queue their work. Each hand-off between the two is an event."""

    __slots__ = ("graph_task", "dev", "kind", "stream", "host")

    def __init__(self, graph_task: GraphTask, node: Node, dev: device) -> None:
        self.graph_task = graph_task
        self.dev = dev
        self.kind = _device.device_type(dev.type)
        self.stream = node_stream(graph_task, node, dev)
        self.host = self.kind.current_stream(dev.index)

    def host_sees_node(self) -> None:
        """Host code about to read the node's gradients waits for its stream."""
        if self.host != self.stream:
            wait(self.graph_task, self.kind, self.host, self.stream)

    def node_sees_host(self) -> None:
        """The node's stream waits for what host code (hooks) queued."""
        if self.host != self.stream:
            wait(self.graph_task, self.kind, self.stream, self.host)

    def leaf(self) -> None:
        """The node's stream holds a result (an accumulated ``.grad``, a captured gradient):
        the caller's streams wait for it at the end."""
        self.graph_task.leaf_streams[self.stream] = self.dev

    def apply(self, node: Node, buffer: list[Any], batch: int = 0) -> Any:
        """Launch ``node.apply(buffer)`` on the node's stream (the host does not wait); for an
        async backward, whose code runs later on the host's stream, the awaitable. ``batch``:
        the leading batch dims of a batched GraphTask's gradients, told to a batched rule."""
        graph_task, dev, stream = self.graph_task, self.dev, self.stream
        if node.is_async:
            self.host_sees_node()
            graph_task.producer = (node, HOST, None)
            return node.apply(buffer)
        graph_task.producer = (node, stream, dev)
        leaf = not node.next_edges
        variable = getattr(node, "variable", None) if leaf else None
        before = variable.grad if variable is not None else None
        with self.kind.stream_scope(stream):
            outputs = node.apply(buffer, batch) if batch else node.apply(buffer)
        after = variable.grad if variable is not None else None
        ran(dev, stream, (*buffer, before), (*outputs, after))
        if leaf:
            self.leaf()
        return outputs

    def producer_scope(self) -> Any:
        """The stream the node's outputs were made on, current (the NaN check reads them)."""
        _, stream, dev = self.graph_task.producer
        return self.kind.stream_scope(stream if dev is self.dev else self.host)


def sync_leaf_streams(graph_task: GraphTask) -> None:
    """The caller's current streams wait for the leaf streams on their devices, as PyTorch's
    ``exec_post_processing`` does before the final callbacks (which may then use any gradient
    on its device's current stream)."""
    callers = graph_task.streams
    assert callers is not None
    for leaf_stream, dev in graph_task.leaf_streams.items():
        caller = callers.get(dev)
        if caller is None:
            caller = callers[dev] = _device.device_type(dev.type).current_stream(dev.index)
        if caller != leaf_stream:
            wait(graph_task, _device.device_type(dev.type), caller, leaf_stream)


async def settle(graph_task: GraphTask) -> None:
    """Wait, without blocking the loop, until the GPU has done the work queued on the caller's
    streams of the devices that hold results (after ``sync_leaf_streams``, all of it)."""
    callers = graph_task.streams
    assert callers is not None
    loop = asyncio.get_running_loop()
    for dev in {dev for dev in graph_task.leaf_streams.values()}:
        kind = _device.device_type(dev.type)
        event = kind.record_event(callers[dev])
        done: asyncio.Future[None] = loop.create_future()
        kind.call_when_done(event, _completer(loop, done))
        await done


def _completer(loop: asyncio.AbstractEventLoop, done: asyncio.Future[None]) -> Any:
    """A callback, safe to call from any thread, that completes ``done`` on its loop."""

    def set_done() -> None:
        if not done.done():
            done.set_result(None)

    def callback() -> None:
        try:
            loop.call_soon_threadsafe(set_done)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
            pass

    return callback
