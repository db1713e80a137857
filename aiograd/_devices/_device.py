"""Devices: ``device("cpu")``, ``device("sim:0")``, ... and the device types behind them.

Device objects are interned: ``device("sim:0") is device("sim", 0)``, so the ops compare
devices by identity. A tensor's device is its ``_device`` attribute, a class-level default
(:data:`CPU`) that only non-CPU tensors override, so CPU tensors pay nothing; code that must
treat other devices differently tests ``x._device is not CPU``.

Device types are modules, loaded by name the first time a device of that type is made (as
anyio loads its backends): ``cpu`` is ``aiograd._devices.cpu``, ``sim`` is
``aiograd._devices.sim`` (numpy arrays, like the CPU, but scheduled by the engine as separate
devices, each with its own queue and worker, so multi-device graphs are tested without a GPU).
``cuda`` is ``aiograd._devices.cuda`` (CuPy arrays, imported only when the first CUDA device is
made) and ``simcuda`` its CPU double with simulated streams. Other types plug in with
:func:`register_device_type`.

The device-type interface: a module (or any object) with these attributes.

``array_module``
    The array module of the type's data (``numpy``; CuPy for ``cuda``). Each device caches it as
    ``device.xp``: ops compute with ``x._device.xp``, never with numpy directly.
``indexed``
    True if devices of the type are numbered (``sim:0``; a bare ``"sim"`` or ``"cuda"`` places
    tensors on index 0, where PyTorch's ``"cuda"`` is the current CUDA device); False for ``cpu``.
``default_executor``
    The executor the engine makes (once) for the type's heavy nodes unless told otherwise
    (``set_executor``, ``Engine(executors=...)``): the name of a class of ``aiograd.executors``
    (``"ThreadExecutor"``; a name, because executors lie in a layer above the devices), or any
    callable that returns an ``Executor``.
``to_device(host_array, index)``
    A copy of a numpy array in the memory of device ``index`` (``index`` is None for an
    unindexed type).
``to_host(array)``
    An array of the type as a numpy array in host memory (itself where it is one already).
``synchronize(index)``
    Block until all work queued on device ``index`` is done (nothing where work is
    synchronous). CUDA: ``cupy.cuda.Device(index).synchronize()``.

Streams. A type whose work is queued on streams and runs later (``cuda``; ``simcuda``, its CPU
double) sets ``has_streams`` and implements the stream hooks below; a type without streams may
leave them all out (the CPU's, which do nothing, stand in). Streams and events are the
type's own objects; a stream is hashable and equal only to itself (the same queue of work).

``has_streams``
    True if work on devices of the type is queued on streams.
``current_stream(index)``
    The stream that work on device ``index`` is queued on now, on this thread (None where work
    is synchronous). CUDA: ``cupy.cuda.get_current_stream()`` on that device.
``default_stream(index)``
    Device ``index``'s default stream (None where work is synchronous).
``stream_scope(stream)``
    A context manager: ``stream`` (and its device) is current on this thread inside it.
``record_event(stream)``
    An event marking the work queued on ``stream`` so far. CUDA: a ``cupy.cuda.Event``
    recorded on it.
``wait_event(stream, event)``
    Make ``stream`` wait for ``event`` before any work queued on it after this call; the host
    does not wait. CUDA: ``stream.wait_event(event)``.
``call_when_done(event, callback)``
    Call ``callback()`` once the work ``event`` marks is done: from any thread (a CUDA host
    callback thread, say), possibly at once. The engine passes a callback that is safe to call
    from any thread.
``ran_on(stream, reads, writes)``
    The engine ran work on ``stream`` that read the arrays ``reads`` and produced ``writes``: a
    hook for a stream sanitizer (the ``simcuda`` double checks that each array read was made on
    ``stream`` or synchronized with it, as PyTorch's CUDA sanitizer does). Nothing on CUDA.

:func:`device_type` returns the loaded type as a :class:`DeviceType` (the attributes above and
its name).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = [
    "device", "DeviceType", "register_device_type", "device_type", "device_types",
    "set_default_device", "get_default_device", "use_stream", "stream_devices",
]


@dataclasses.dataclass(frozen=True)
class DeviceType:
    """One loaded device type: its name and its implementation of the device-type interface
    (see the module docstring)."""

    name: str
    array_module: Any
    indexed: bool
    default_executor: str | Callable[[], Any]
    to_device: Callable[[Any, int | None], Any]
    to_host: Callable[[Any], Any]
    synchronize: Callable[[int | None], None]
    has_streams: bool
    current_stream: Callable[[int | None], Any]
    default_stream: Callable[[int | None], Any]
    stream_scope: Callable[[Any], Any]
    record_event: Callable[[Any], Any]
    wait_event: Callable[[Any, Any], None]
    call_when_done: Callable[[Any, Callable[[], None]], None]
    ran_on: Callable[[Any, Any, Any], None]

    @classmethod
    def from_implementation(cls, name: str, implementation: Any) -> DeviceType:
        """The type ``name`` implemented by ``implementation`` (a module or any object);
        TypeError naming what is missing."""
        fields = [f.name for f in dataclasses.fields(cls) if f.name != "name"]
        streams = bool(getattr(implementation, "has_streams", False))
        missing = [
            f for f in fields
            if not hasattr(implementation, f) and (streams or f not in STREAM_HOOKS)
        ]
        if missing:
            raise TypeError(
                f"device type {name!r}: {implementation!r} lacks {', '.join(missing)} "
                "(see aiograd._devices._device for the device-type interface)"
            )
        # A type without streams may leave the stream hooks out: the CPU's (which do nothing)
        # stand in.
        synchronous = importlib.import_module("aiograd._devices.cpu") if not streams else None
        return cls(name, **{
            f: getattr(implementation, f) if hasattr(implementation, f) else getattr(synchronous, f)
            for f in fields
        })


#: The interface's stream hooks: needed only from a type that sets ``has_streams``.
STREAM_HOOKS = frozenset({
    "has_streams", "current_stream", "default_stream", "stream_scope", "record_event",
    "wait_event", "call_when_done", "ran_on",
})


#: Device type name -> where it is implemented: a module name, imported on first use, or an
#: object implementing the interface. In registration order (the error message lists them so).
_SOURCES: dict[str, Any] = {
    "cpu": "aiograd._devices.cpu",
    "cuda": "aiograd._devices.cuda",
    "sim": "aiograd._devices.sim",
    "simcuda": "aiograd._devices.simcuda",
}
#: The types loaded so far.
_LOADED: dict[str, DeviceType] = {}


def register_device_type(name: str, implementation: Any) -> None:
    """Add device type ``name`` (or replace its entry): ``implementation`` is a module or object
    implementing the device-type interface (see the module docstring), or the name of a module
    that does, imported when the first device of the type is made."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"invalid device type name: {name!r}")
    if not isinstance(implementation, str):
        DeviceType.from_implementation(name, implementation)  # fail here, not at first use
    _SOURCES[name] = implementation
    _LOADED.pop(name, None)


def device_type(name: str) -> DeviceType:
    """The device type ``name``, loaded on first use (KeyError if there is none)."""
    loaded = _LOADED.get(name)
    if loaded is None:
        source = _SOURCES[name]
        implementation = importlib.import_module(source) if isinstance(source, str) else source
        loaded = _LOADED[name] = DeviceType.from_implementation(name, implementation)
    return loaded


def device_types() -> tuple[str, ...]:
    """The names of the known device types (loaded or not), in registration order."""
    return tuple(_SOURCES)


_INDEX = re.compile(r"0|[1-9][0-9]*")
_interned: dict[tuple[str, int | None], device] = {}


class device:
    """A device, as ``torch.device``: ``device("cpu")``, ``device("sim:1")``, ``device("sim", 1)``.

    ``type`` is the device type's name, ``index`` its index or None. Compares equal to its string
    form (``device("sim:0") == "sim:0"``); instances are interned.
    """

    __slots__ = ("type", "index", "xp", "has_streams", "_str", "__weakref__")

    type: str
    index: int | None
    #: The array module holding this device's data (numpy for ``cpu`` and ``sim``): ops compute
    #: with ``x._device.xp``, never with numpy directly, so a CuPy device works unchanged.
    xp: Any
    #: Whether the device's type queues work on streams (``cuda``, ``simcuda``).
    has_streams: bool

    def __new__(cls, spec: str | device, index: int | None = None) -> device:
        if type(spec) is device:
            if index is None:
                return spec
            spec = spec.type if spec.index is None else str(spec)
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(spec, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({type(spec).__name__})")
        kind, colon, idx = spec.partition(":")
        if not spec:
            raise RuntimeError("Device string must not be empty")
        if kind not in _SOURCES:
            raise RuntimeError(
                f"Expected one of {', '.join(_SOURCES)} device type at start of device string: {spec}"
            )
        if colon:
            if not _INDEX.fullmatch(idx):
                raise RuntimeError(f"Invalid device string: '{spec}'")
            if index is not None:
                raise RuntimeError(
                    "type (string) must not include an index because index was passed "
                    f"explicitly: {spec}"
                )
            index = int(idx)
        elif index is not None:
            index = int(index)
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        key = (kind, index)
        self = _interned.get(key)
        if self is None:
            self = object.__new__(cls)
            object.__setattr__(self, "type", kind)
            object.__setattr__(self, "index", index)
            object.__setattr__(self, "xp", device_type(kind).array_module)
            object.__setattr__(self, "has_streams", bool(device_type(kind).has_streams))
            object.__setattr__(self, "_str", kind if index is None else f"{kind}:{index}")
            self = _interned.setdefault(key, self)
            if kind != "cpu":
                global non_cpu_devices_exist
                non_cpu_devices_exist = True
                if index is not None and device_type(kind).has_streams:
                    _stream_devices.add(self)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute '{name}' of 'aiograd.device' objects is not writable")

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self._str == other
        return self is other

    def __hash__(self) -> int:
        return hash(self._str)

    def __reduce__(self) -> tuple[Any, ...]:
        return (device, (self._str,))

    def __enter__(self) -> device:
        """``with aiograd.device("sim:0"):`` makes it the factories' default device (as
        ``torch.device``); per asyncio task, since it is a context variable."""
        _default_stack.set((*_default_stack.get(), _default_device.get()))
        _default_device.set(placement(self))
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _default_stack.get()
        _default_device.set(stack[-1])
        _default_stack.set(stack[:-1])


CPU = device("cpu")


def placement(spec: Any) -> device:
    """The device a tensor asked to live on ``spec`` lives on: ``cpu`` for any CPU device,
    index 0 for an indexed type named without one (``"sim"`` is ``sim:0`` and ``"cuda"`` is
    ``cuda:0``, where PyTorch's ``"cuda"`` is the current CUDA device)."""
    dev = spec if type(spec) is device else device(spec)
    if dev.type == "cpu":
        return CPU
    if dev.index is None and device_type(dev.type).indexed:
        return device(dev.type, 0)
    return dev


#: The device the factories use when given none (None: the CPU); see ``set_default_device``.
_default_device: contextvars.ContextVar[device | None] = contextvars.ContextVar(
    "aiograd_default_device", default=None
)
_default_stack: contextvars.ContextVar[tuple[device | None, ...]] = contextvars.ContextVar(
    "aiograd_default_device_stack", default=()
)


def set_default_device(spec: Any) -> None:
    """Make ``spec`` the device that factories (``zeros``, ``tensor``, ...) use when they are not
    given one; None restores the CPU. As ``torch.set_default_device``; it is a context variable,
    so it holds for the current asyncio task (and the tasks it starts from then on)."""
    _default_device.set(None if spec is None else placement(spec))


def get_default_device() -> device:
    """The factories' default device (``set_default_device``; the CPU unless changed)."""
    dev = _default_device.get()
    return CPU if dev is None else dev


def mixed_devices_error(devices: Any) -> RuntimeError:
    """PyTorch's error for an op whose tensors live on several devices. ``devices`` in argument
    order; named as TensorIterator names them: the first non-CPU device, then the first device
    that differs from it."""
    devices = list(devices)
    common = next((d for d in devices if d is not CPU), devices[0])
    other = next(d for d in devices if d is not common)
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{common} and {other}!"
    )


# ---------------------------------------------------------------------------------------------


#: Whether a device other than the CPU has been made (devices are interned): until then no
#: tensor can live elsewhere, and the engine skips routing NodeTasks by device. This module's
#: own flag, set above; the engine reads it once per backward call.
non_cpu_devices_exist = False
#: The devices made so far whose type queues work on streams (``stream_devices``).
_stream_devices: set[device] = set()


def stream_devices() -> set[device]:
    """The (indexed) devices made so far whose type queues work on streams: the engine keeps
    stream order only where one exists."""
    return _stream_devices


# ---------------------------------------------------------------------------------------------
# Streams in forward: which stream each node's backward is launched on.


class _ThreadStreams(threading.local):
    #: device -> the stream ``use_stream`` made current on this thread, or None outside any.
    current: dict[device, Any] | None = None


#: Per thread, the streams ``use_stream`` made current: a node records them when it is made
#: (``Node._forward_streams``), and its backward is launched on its device's one, as PyTorch
#: runs a node's backward on the stream of its forward.
thread_streams = _ThreadStreams()
#: [how many ``use_stream`` blocks are open, on any thread]: until one is, a node records
#: nothing and need not read the thread-local (a list, so the count is mutated, not rebound).
stream_blocks_open = [0]


@contextlib.contextmanager
def use_stream(dev: device, stream: Any) -> Iterator[Any]:
    """Make ``stream`` (of device ``dev``) current on this thread for the block: ops queue their
    work on it, and nodes recorded inside launch their backward on it. As with PyTorch's and
    CuPy's, the current stream is per thread, not per asyncio task: a block should not span an
    ``await`` that lets other coroutines of the loop run on it."""
    dev = placement(dev)
    with device_type(dev.type).stream_scope(stream):
        before = thread_streams.current
        thread_streams.current = {**before, dev: stream} if before else {dev: stream}
        stream_blocks_open[0] += 1
        try:
            yield stream
        finally:
            stream_blocks_open[0] -= 1
            thread_streams.current = before
