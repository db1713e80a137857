"""The current accelerator, as ``torch.accelerator``: aiograd's only accelerator is CUDA through
CuPy (see :mod:`aiograd.cuda`).

    if (dev := aiograd.accelerator.current_accelerator(check_available=True)) is not None:
        model.to(dev)

torch's "accelerator available at compilation time" is, for aiograd, CuPy being installed: with
CuPy, ``current_accelerator()`` is ``aiograd.device("cuda")`` (index None, as torch's) even where
CuPy sees no GPU, and ``current_accelerator(check_available=True)`` asks ``is_available()`` too.
Without CuPy (a CPU-only install) ``is_available()`` is False, ``device_count()`` 0 and
``current_accelerator()`` None, as in torch's CPU build; the calls that need a device then raise
torch's RuntimeError. Nothing here imports CuPy until a call needs it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from . import cuda as _cuda
from ._devices._device import device as _device

__all__ = [
    "current_accelerator", "current_device_index", "device_count", "is_available",
    "set_device_index", "synchronize",
]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def _built() -> bool:
    """Whether CuPy is installed (aiograd's counterpart of a CUDA build of torch)."""
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


def current_accelerator(check_available: bool = False) -> _device | None:
    """The accelerator's device, ``aiograd.device("cuda")``, where CuPy is installed, else None.

    With ``check_available=True``, None as well unless :func:`is_available` says True. The
    device's index is None, as torch's: :func:`current_device_index` tells the current one."""
    if not _built():
        return None
    if check_available and not is_available():
        return None
    try:
        return _device("cuda")
    except Exception:  # CuPy installed but unusable: no accelerator to name
        return None


def is_available() -> bool:
    """True if there is an accelerator (CuPy) and it sees at least one GPU; never raises."""
    return _built() and _cuda.is_available()


def device_count() -> int:
    """How many accelerator devices there are (0 without one); never raises."""
    return _cuda.device_count() if _built() else 0


def _require() -> None:
    if not is_available():
        raise RuntimeError(_NONE_AVAILABLE)


def current_device_index() -> int:
    """The index of this thread's current accelerator device; a RuntimeError without one."""
    _require()
    return _cuda.current_device()


def set_device_index(device: Any, /) -> None:
    """Make ``device`` (an index, ``"cuda:1"``, an ``aiograd.device``) this thread's current
    accelerator device; a negative index does nothing. A RuntimeError without an accelerator."""
    _require()
    _cuda.set_device(device)


def synchronize(device: Any = None, /) -> None:
    """Block until all work queued on ``device`` (the current one by default) is done; a
    RuntimeError without an accelerator."""
    _require()
    _cuda.synchronize(device)
