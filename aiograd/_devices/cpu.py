"""The ``cpu`` device type: numpy arrays in host memory, nodes offloaded to a thread pool.

Implements the device-type interface described in ``aiograd._devices._device``. Work is synchronous, so
the stream and event hooks do nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

#: The array module holding this type's data.
array_module = np
#: ``device("cpu")`` has no index (``device("cpu:0")`` exists, as in PyTorch, but tensors live
#: on the unindexed one).
indexed = False
#: numpy releases the GIL in its kernels: heavy nodes run in parallel in a thread pool.
default_executor = "ThreadExecutor"


def to_device(host_array: np.ndarray[Any, Any], index: int | None) -> np.ndarray[Any, Any]:
    """A copy of ``host_array`` in this device's memory (host memory: a plain copy)."""
    return np.array(host_array, copy=True)


def to_host(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` as a numpy array in host memory (it is one already)."""
    return array


def synchronize(index: int | None) -> None:
    """No queued work to wait for."""


#: Work on the CPU is done when the call that does it returns: no streams, and the stream hooks
#: below are never called (they do nothing).
has_streams = False


def current_stream(index: int | None) -> None:
    """No streams."""
    return None


def default_stream(index: int | None) -> None:
    """No streams."""
    return None


def stream_scope(stream: Any) -> contextlib.nullcontext[None]:
    """No streams to make current."""
    return contextlib.nullcontext()


def record_event(stream: Any) -> None:
    """No streams, so nothing to mark."""
    return None


def wait_event(stream: Any, event: Any) -> None:
    """No streams, so nothing to wait for."""


def call_when_done(event: Any, callback: Callable[[], None]) -> None:
    """Nothing is ever pending: ``callback`` runs at once."""
    callback()


def ran_on(stream: Any, reads: Any, writes: Any) -> None:
    """Nothing to check."""
