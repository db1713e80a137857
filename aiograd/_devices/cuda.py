"""The ``cuda`` device type: ``cupy.ndarray``s in the memory of an NVIDIA GPU.

Implements the device-type interface described in ``aiograd._devices._device``. CuPy is imported here,
at module import, and this module is imported only when the first ``cuda`` device is made
(``aiograd.device("cuda")``, ``device="cuda"``, ``.cuda()``): without CuPy that raises a
RuntimeError saying what to install, and nothing is registered (Python drops a module whose
import failed, so the next attempt raises the same error again).

With CuPy but no usable GPU (no driver, no device), the device objects can still be made, as
``torch.device("cuda")`` can; placing data on one raises a RuntimeError naming CuPy's error.

Work is asynchronous: each op queues kernels on the current CUDA stream and returns at once, so
the engine runs CUDA nodes inline on the device's worker task (``InlineExecutor``) and never
waits for the GPU per node. Streams and events are the thin wrappers of
``aiograd._devices._cuda_runtime`` (``aiograd.cuda.Stream``/``Event``), which compare equal
only for the same CUDA stream on the same device (CuPy's own compare the raw handle alone, and
every device's legacy default stream has handle 0).

Completion (``call_when_done``) is a CUDA host function launched on a private, non-blocking
stream of the event's device that first waits for the event, so it fires after exactly the
work the event marks, never later because of work queued after it on the event's own stream,
and it blocks nothing but that private stream (a host function holds back later work on its
stream until it returns). CuPy releases the GIL in its synchronizing calls, so a host function
waiting for the GIL cannot deadlock them. Polling ``event.done`` from a thread was the
alternative; it costs a thread and latency for nothing the host function cannot do.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._base._dtypes import register_device_array_type
from ._cuda_runtime import Event, Stream, import_cupy, require

# CuPy or the RuntimeError that says what to install (this module is then not registered).
cupy = import_cupy()
register_device_array_type(cupy.ndarray)

__all__ = [
    "array_module", "indexed", "default_executor", "to_device", "to_host", "synchronize",
    "has_streams", "current_stream", "default_stream", "stream_scope", "record_event",
    "wait_event", "call_when_done", "ran_on",
]

#: The array module holding this type's data.
array_module = cupy
#: ``cuda:0``, ``cuda:1``, ...; a bare ``"cuda"`` places tensors on index 0.
indexed = True
#: Kernel launches are asynchronous and cheap: a node runs on its device's worker task, on the
#: event loop, and the GPU works while the loop goes on.
default_executor = "InlineExecutor"
#: Work is queued on CUDA streams.
has_streams = True


# ------------------------------------------------------------------------------ memory
def to_device(host_array: Any, index: int | None) -> Any:
    """A copy of ``host_array`` (a numpy array, or a CuPy array on any device) in the memory of
    CUDA device ``index``."""
    index = 0 if index is None else index
    require(index)
    with cupy.cuda.Device(index):
        return cupy.array(host_array, copy=True)


def to_host(array: Any) -> np.ndarray[Any, Any]:
    """``array`` as a numpy array in host memory: waits for the current stream (CuPy's
    ``asnumpy``); a numpy array is returned as it is."""
    if type(array) is np.ndarray:
        return array
    return cupy.asnumpy(array)  # type: ignore[no-any-return]


def synchronize(index: int | None) -> None:
    """Block until all work queued on CUDA device ``index`` is done."""
    index = 0 if index is None else index
    require(index)
    cupy.cuda.Device(index).synchronize()


# ------------------------------------------------------------------------------ streams
def _default_cupy_stream() -> Any:
    """CuPy's default stream: the per-thread one where CuPy was told to use it, else the legacy
    null stream (as CuPy itself picks, from the same environment variable)."""
    if os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0") not in ("", "0"):
        return cupy.cuda.Stream.ptds
    return cupy.cuda.Stream.null


def current_stream(index: int | None) -> Stream:
    """The stream work on device ``index`` is queued on now, on this thread."""
    index = 0 if index is None else index
    require(index)
    return Stream._wrap(cupy.cuda.get_current_stream(index), index)


def default_stream(index: int | None) -> Stream:
    """Device ``index``'s default stream."""
    index = 0 if index is None else index
    return Stream._wrap(_default_cupy_stream(), index)


@contextlib.contextmanager
def stream_scope(stream: Stream) -> Iterator[Stream]:
    """``stream`` and its device current on this thread for the block (CuPy's thread-local
    current device and stream)."""
    with cupy.cuda.Device(stream.device_index), stream.cupy_stream:
        yield stream


def record_event(stream: Stream) -> Event:
    """A new event (timing disabled) recorded on ``stream``."""
    event = Event()
    event.record(stream)
    return event


def wait_event(stream: Stream, event: Event) -> None:
    """Work queued on ``stream`` from now on waits for ``event``; the host does not wait."""
    stream.wait_event(event)


#: Per device index, the private non-blocking stream that host callbacks are launched on.
_callback_streams: dict[int, Any] = {}
_callback_streams_lock = threading.Lock()


def _callback_stream(index: int) -> Any:
    stream = _callback_streams.get(index)
    if stream is None:
        with _callback_streams_lock:
            stream = _callback_streams.get(index)
            if stream is None:
                with cupy.cuda.Device(index):
                    stream = _callback_streams[index] = cupy.cuda.Stream(non_blocking=True)
    return stream


def _fire(callback: Callable[[], None]) -> None:
    """Run on CUDA's host-callback thread: an exception has no one to go to, so it is
    printed (as an unraisable exception would be), not lost silently."""
    try:
        callback()
    except BaseException:  # noqa: BLE001 - nothing above this frame can handle it
        traceback.print_exc(file=sys.stderr)


def call_when_done(event: Event, callback: Callable[[], None]) -> None:
    """Call ``callback()`` (from CUDA's host-callback thread) once the work ``event`` marks is
    done; at once for an event never recorded (nothing to wait for). See the module docstring
    for why a host function on a private stream."""
    index = event.device_index
    if event.cupy_event is None or index is None:
        callback()
        return
    stream = _callback_stream(index)
    with cupy.cuda.Device(index):
        stream.wait_event(event.cupy_event)
        stream.launch_host_func(_fire, callback)


def ran_on(stream: Any, reads: Any, writes: Any) -> None:
    """Nothing to check on a real GPU (the ``simcuda`` double checks stream use)."""
