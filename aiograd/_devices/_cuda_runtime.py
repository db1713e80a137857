"""What the ``cuda`` device type and ``aiograd.cuda`` share, importable without CuPy: loading
CuPy (or the error saying what to install), which devices are usable, and the stream and event
types (``aiograd.cuda.Stream``, ``aiograd.cuda.Event``, as ``torch.cuda``'s).

CuPy is imported inside the functions, on first use, never at module import: ``aiograd.cuda``
imports this module, and importing ``aiograd`` must not import CuPy. (In the devices layer, beside
``_device``, not in ``_devices``: importing aiograd loads no device type module but the CPU's.)

The wrappers exist because CuPy's streams compare by raw handle alone, and every device's
legacy default stream has handle 0: the engine keys streams by identity of the CUDA stream, so
aiograd's compare (and hash) the handle *and* the device, as ``torch.cuda.Stream`` does.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["INSTALL_MESSAGE", "Event", "Stream", "device_count", "import_cupy", "require"]

INSTALL_MESSAGE = (
    "aiograd's cuda devices need CuPy, which is not installed: pip install 'aiograd[cuda]' "
    "(or the CuPy wheel that matches your CUDA, e.g. cupy-cuda12x)"
)


def import_cupy() -> Any:
    """The ``cupy`` module; a RuntimeError saying what to install where it is missing."""
    try:
        return importlib.import_module("cupy")  # (by name: CuPy ships no type stubs)
    except ImportError as error:
        raise RuntimeError(INSTALL_MESSAGE) from error


def device_count() -> int:
    """How many CUDA devices CuPy sees: 0 without CuPy, a driver or a device (never raises)."""
    try:
        cupy = import_cupy()
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no CuPy; CUDARuntimeError: no driver, an insufficient one, no device
        return 0


#: Device indices already found usable (checked once each, then a set lookup).
_usable: set[int] = set()


def require(index: int) -> None:
    """Raise a RuntimeError unless CUDA device ``index`` exists and can hold data."""
    if index in _usable:
        return
    cupy = import_cupy()
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as error:
        raise RuntimeError(
            "aiograd found no usable CUDA GPU through CuPy (is there an NVIDIA GPU, and a driver "
            f"recent enough for this CuPy build?): {type(error).__name__}: {error}"
        ) from error
    if index >= count:
        raise RuntimeError(
            f"CUDA error: invalid device ordinal: cuda:{index} requested, but CuPy sees {count} "
            "CUDA device(s)"
        )
    _usable.add(index)


def current_index() -> int:
    """The index of this thread's current CUDA device (CuPy's)."""
    cupy = import_cupy()
    require(0)
    return int(cupy.cuda.runtime.getDevice())


class Stream:
    """A CUDA stream of one device, as ``torch.cuda.Stream``: ``Stream(device=None,
    priority=0)`` creates one (on the current CUDA device by default; a lower priority number is
    a higher priority). Make it current with ``aiograd.cuda.stream(s)``.

    Equal (and of equal hash) only to a Stream of the same CUDA stream on the same device.
    ``cupy_stream`` is the CuPy stream behind it (for CuPy code); ``__cuda_stream__`` is the CUDA
    stream protocol, for other libraries.
    """

    __slots__ = ("cupy_stream", "device_index", "__weakref__")

    #: The ``cupy.cuda.Stream`` (or ``ExternalStream``) behind this one.
    cupy_stream: Any
    #: The index of the CUDA device the stream belongs to.
    device_index: int

    def __init__(self, device: Any = None, priority: int = 0) -> None:
        from ._device import device as _device_object

        index = _resolve_index(device, _device_object)
        require(index)
        cupy = import_cupy()
        with cupy.cuda.Device(index):
            self.cupy_stream = cupy.cuda.Stream(priority=int(priority))
        self.device_index = index

    @classmethod
    def _wrap(cls, cupy_stream: Any, index: int) -> Stream:
        """A Stream for CuPy's ``cupy_stream`` of device ``index`` (nothing created)."""
        self = object.__new__(cls)
        self.cupy_stream = cupy_stream
        self.device_index = index
        return self

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` handle, as an int."""
        return int(self.cupy_stream.ptr)

    @property
    def device(self) -> Any:
        """The stream's device, ``aiograd.device("cuda", i)``."""
        from ._device import device as _device_object

        return _device_object("cuda", self.device_index)

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream from now on waits for ``event`` (the host does not)."""
        if event.cupy_event is not None:
            self.cupy_stream.wait_event(event.cupy_event)

    def wait_stream(self, stream: Stream) -> None:
        """Work queued on this stream from now on waits for all work queued on ``stream`` so
        far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one by default) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        """True if all work queued on this stream is done."""
        return bool(self.cupy_stream.done)

    def synchronize(self) -> None:
        """Block until all work queued on this stream is done."""
        self.cupy_stream.synchronize()

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.cuda_stream)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Stream):
            return self.cupy_stream.ptr == other.cupy_stream.ptr and self.device_index == other.device_index
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.cupy_stream.ptr, self.device_index))

    def __repr__(self) -> str:
        return f"<aiograd.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event, as ``torch.cuda.Event``: a mark in a stream's queue of work that other
    streams can wait for and the host can query. Created on the device of the stream it is first
    recorded on (as PyTorch creates its events lazily); ``enable_timing`` enables
    ``elapsed_time``, ``blocking`` makes ``synchronize`` block the thread rather than spin."""

    __slots__ = ("cupy_event", "device_index", "enable_timing", "blocking", "__weakref__")

    #: The ``cupy.cuda.Event`` behind this one, None until first recorded.
    cupy_event: Any
    #: The device of the stream the event was recorded on (None until then).
    device_index: int | None

    def __init__(self, enable_timing: bool = False, blocking: bool = False) -> None:
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.cupy_event = None
        self.device_index = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the work queued so far on ``stream`` (the current stream of the current device by
        default)."""
        cupy = import_cupy()
        if stream is None:
            index = current_index()
            stream = Stream._wrap(cupy.cuda.get_current_stream(index), index)
        if self.cupy_event is None:
            with cupy.cuda.Device(stream.device_index):
                self.cupy_event = cupy.cuda.Event(block=self.blocking, disable_timing=not self.enable_timing)
            self.device_index = stream.device_index
        elif self.device_index != stream.device_index:
            raise RuntimeError(
                f"Event device cuda:{self.device_index} does not match recording stream's device "
                f"cuda:{stream.device_index}."
            )
        with cupy.cuda.Device(stream.device_index):
            self.cupy_event.record(stream.cupy_stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` (the current one by default) wait for this event."""
        if stream is None:
            cupy = import_cupy()
            index = current_index() if self.device_index is None else self.device_index
            stream = Stream._wrap(cupy.cuda.get_current_stream(index), index)
        stream.wait_event(self)

    def query(self) -> bool:
        """True if the work the event marks is done (an event never recorded is done)."""
        return True if self.cupy_event is None else bool(self.cupy_event.done)

    def synchronize(self) -> None:
        """Block until the work the event marks is done."""
        if self.cupy_event is not None:
            self.cupy_event.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, with timing)."""
        cupy = import_cupy()
        if self.cupy_event is None or end_event.cupy_event is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(cupy.cuda.get_elapsed_time(self.cupy_event, end_event.cupy_event))

    def __repr__(self) -> str:
        state = "uninitialized" if self.cupy_event is None else f"cuda:{self.device_index}"
        return f"<aiograd.cuda.Event {state}>"


def _resolve_index(spec: Any, device_type: Any) -> int:
    """A CUDA device index from ``None`` (the current device), an int, ``"cuda:1"`` or an
    ``aiograd.device``; torch's ValueError for a device of another type."""
    if spec is None:
        return current_index()
    if isinstance(spec, int) and not isinstance(spec, bool):
        return spec
    dev = device_type(spec)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return current_index() if dev.index is None else dev.index
