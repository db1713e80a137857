"""Devices: ``device("cpu")``, ``device("sim:0")``, ... and the device-type registry.

A device type names the array module that holds its tensors' data and the executor type that
runs its nodes by default; ``cuda`` (CuPy arrays, a CUDA executor) plugs in later through
:func:`register_device_type`. ``sim`` devices hold numpy arrays, like the CPU, but the engine
schedules them as separate devices (own queue, own worker), so multi-device scheduling is
tested without a GPU.

Device objects are interned: ``device("sim:0") is device("sim", 0)``, so the ops compare
devices by identity. A tensor's device is its ``_device`` attribute, a class-level default
(:data:`CPU`) that only non-CPU tensors override, so CPU tensors pay nothing.

The multi-device switch: until the first non-CPU tensor exists, the ops skip every device check
(``DEVICES`` is False in each module that registered with :func:`watch`); creating a non-CPU
tensor calls :func:`enable_devices`, which sets it True everywhere, for good. A CPU-only program
pays one global load per op.
"""

from __future__ import annotations

import contextvars
import dataclasses
import re
from typing import Any

import numpy as np

from .executors import Executor, InlineExecutor, ThreadExecutor

__all__ = [
    "device", "DeviceType", "register_device_type", "device_type", "device_types",
    "set_default_device", "get_default_device",
]


@dataclasses.dataclass(frozen=True)
class DeviceType:
    """One kind of device: its name, the array module holding its data (``numpy`` for ``cpu``
    and ``sim``; CuPy for ``cuda``), and the executor type the engine uses for its nodes unless
    told otherwise (``set_executor``, ``Engine(executors=...)``)."""

    name: str
    array_module: Any
    default_executor: type[Executor]
    #: Whether tensors of this type carry an index (``sim:0``); the CPU's do not (``cpu``).
    indexed: bool = True


_TYPES: dict[str, DeviceType] = {}


def register_device_type(
    name: str, array_module: Any, default_executor: type[Executor], *, indexed: bool = True
) -> DeviceType:
    """Add a device type (or replace its entry); returns it."""
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise ValueError(f"invalid device type name: {name!r}")
    entry = DeviceType(name, array_module, default_executor, indexed)
    _TYPES[name] = entry
    return entry


def device_type(name: str) -> DeviceType:
    """The registered device type ``name`` (KeyError if there is none)."""
    return _TYPES[name]


def device_types() -> tuple[str, ...]:
    """The names of the registered device types, in registration order."""
    return tuple(_TYPES)


register_device_type("cpu", np, ThreadExecutor, indexed=False)
register_device_type("sim", np, InlineExecutor)

_INDEX = re.compile(r"0|[1-9][0-9]*")
_interned: dict[tuple[str, int | None], device] = {}


class device:
    """A device, as ``torch.device``: ``device("cpu")``, ``device("sim:1")``, ``device("sim", 1)``.

    ``type`` is the device type's name, ``index`` its index or None. Compares equal to its string
    form (``device("sim:0") == "sim:0"``); instances are interned.
    """

    __slots__ = ("type", "index", "xp", "_str", "__weakref__")

    type: str
    index: int | None
    #: The array module holding this device's data (numpy for ``cpu`` and ``sim``): ops compute
    #: with ``x._device.xp``, never with numpy directly, so a CuPy device works unchanged.
    xp: Any

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
        if kind not in _TYPES:
            raise RuntimeError(
                f"Expected one of {', '.join(_TYPES)} device type at start of device string: {spec}"
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
            object.__setattr__(self, "xp", _TYPES[kind].array_module)
            object.__setattr__(self, "_str", kind if index is None else f"{kind}:{index}")
            self = _interned.setdefault(key, self)
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
    index 0 for an indexed type named without one (``"sim"`` is ``sim:0``, as ``"cuda"`` is the
    current CUDA device)."""
    dev = spec if type(spec) is device else device(spec)
    if dev.type == "cpu":
        return CPU
    if dev.index is None and _TYPES[dev.type].indexed:
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
# The multi-device switch (see the module docstring).

DEVICES = False
_watchers: list[tuple[dict[str, Any], str]] = []


def watch(module_globals: dict[str, Any], name: str = "DEVICES") -> None:
    """Keep ``module_globals[name]`` equal to this module's ``DEVICES``."""
    module_globals[name] = DEVICES
    _watchers.append((module_globals, name))


def enable_devices() -> None:
    """Called when a non-CPU tensor is created: from now on the ops check and propagate devices."""
    global DEVICES
    if DEVICES:
        return
    DEVICES = True
    for g, name in _watchers:
        g[name] = True


def non_cpu_devices_exist() -> bool:
    """Whether any device other than the CPU has been named yet (devices are interned): until
    then no tensor can live elsewhere, and the engine skips routing NodeTasks by device."""
    return len(_interned) > 1
