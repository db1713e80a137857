"""The ``cpu`` device type: numpy arrays in host memory, nodes offloaded to a thread pool.

Implements the device-type interface described in ``aiograd._device``. Work is synchronous, so
the stream and event hooks do nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..executors import ThreadExecutor

#: The array module holding this type's data.
array_module = np
#: ``device("cpu")`` has no index (``device("cpu:0")`` exists, as in PyTorch, but tensors live
#: on the unindexed one).
indexed = False
#: numpy releases the GIL in its kernels: heavy nodes run in parallel in a thread pool.
default_executor = ThreadExecutor


def to_device(host_array: np.ndarray[Any, Any], index: int | None) -> np.ndarray[Any, Any]:
    """A copy of ``host_array`` in this device's memory (host memory: a plain copy)."""
    return np.array(host_array, copy=True)


def to_host(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` as a numpy array in host memory (it is one already)."""
    return array


def current_stream(index: int | None) -> None:
    """No streams: work on the CPU is done when the call that does it returns."""
    return None


def record_event(index: int | None) -> None:
    """No streams, so nothing to mark."""
    return None


def wait_event(event: Any, index: int | None) -> None:
    """No streams, so nothing to wait for."""


def synchronize(index: int | None) -> None:
    """No queued work to wait for."""
