"""CUDA devices, as ``torch.cuda``: availability, the current device, streams and events.

    if aiograd.cuda.is_available():
        x = aiograd.randn(256, 1024, device="cuda", requires_grad=True)
        side = aiograd.cuda.Stream()
        with aiograd.cuda.stream(side):
            y = (x @ w).relu()          # queued on ``side``; its backward will be too
        await y.sum().backward()

aiograd's ``cuda`` tensors hold ``cupy.ndarray``s: CuPy is an optional extra
(``pip install 'aiograd[cuda]'``). Importing this module does not import CuPy; the first call
that needs it does. ``is_available()`` and ``device_count()`` never raise: without CuPy, a
driver or a GPU they say False and 0. See docs/cuda.md.

As in PyTorch and CuPy, the current device and the current stream are per thread, not per
asyncio task.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator as _Iterator
from typing import Any as _Any

from ._devices import _cuda_runtime as _rt
from ._devices._cuda_runtime import Event, Stream
from ._devices._device import device as _device
from ._devices._device import use_stream as _use_stream

__all__ = [
    "Event", "Stream", "current_device", "current_stream", "default_stream", "device",
    "device_count", "get_device_name", "is_available", "set_device", "stream", "synchronize",
]


def is_available() -> bool:
    """True if CuPy is installed and sees at least one usable CUDA GPU; never raises."""
    return _rt.device_count() > 0


def device_count() -> int:
    """How many CUDA GPUs CuPy sees (0 without CuPy, a driver or a GPU); never raises."""
    return _rt.device_count()


def _index(spec: _Any) -> int:
    return _rt._resolve_index(spec, _device)


def current_device() -> int:
    """The index of this thread's current CUDA device."""
    return _rt.current_index()


def set_device(device: _Any) -> None:
    """Make ``device`` (an index, ``"cuda:1"``, an ``aiograd.device``) this thread's current CUDA
    device. A negative index does nothing, as in torch."""
    index = _index(device)
    if index < 0:
        return
    _rt.require(index)
    _rt.import_cupy().cuda.Device(index).use()


@contextlib.contextmanager
def device(device: _Any) -> _Iterator[None]:
    """``with aiograd.cuda.device(1):`` makes CUDA device 1 current on this thread for the block
    (as ``torch.cuda.device``); None does nothing."""
    if device is None:
        yield
        return
    index = _index(device)
    _rt.require(index)
    with _rt.import_cupy().cuda.Device(index):
        yield


def synchronize(device: _Any = None) -> None:
    """Block until all work queued on ``device`` (the current CUDA device by default) is done."""
    index = _index(device)
    _rt.require(index)
    _rt.import_cupy().cuda.Device(index).synchronize()


def get_device_name(device: _Any = None) -> str:
    """The GPU's name (``"NVIDIA H100 80GB HBM3"``)."""
    index = _index(device)
    _rt.require(index)
    name = _rt.import_cupy().cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def current_stream(device: _Any = None) -> Stream:
    """The stream work on ``device`` (the current CUDA device by default) is queued on now, on
    this thread."""
    index = _index(device)
    _rt.require(index)
    return _rt.Stream._wrap(_rt.import_cupy().cuda.get_current_stream(index), index)


def default_stream(device: _Any = None) -> Stream:
    """``device``'s default stream (the current CUDA device's by default)."""
    from ._devices import cuda as _cuda_type

    return _cuda_type.default_stream(_index(device))


@contextlib.contextmanager
def stream(stream: Stream | None) -> _Iterator[Stream | None]:
    """``with aiograd.cuda.stream(s):`` makes ``s`` (and its device) current on this thread: ops
    queue their kernels on it, and the backward of every node recorded inside is launched on it,
    as PyTorch runs a node's backward on its forward's stream. ``stream(None)`` does nothing, as
    in torch. Do not ``await`` inside the block: the current stream is per thread, so another
    coroutine resumed there would queue its work on ``s`` too."""
    if stream is None:
        yield None
        return
    if not isinstance(stream, _rt.Stream):
        raise TypeError(f"expected an aiograd.cuda.Stream, got {type(stream).__name__}")
    with _use_stream(_device("cuda", stream.device_index), stream):
        yield stream
