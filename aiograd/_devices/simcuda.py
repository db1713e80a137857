"""The ``simcuda`` device type: a CPU double of ``cuda``, with simulated streams and events, so
the engine's stream logic runs in CI, which has no GPU.

``simcuda:0``, ``simcuda:1``, ... hold numpy arrays in host memory, as ``sim`` devices do, and
each is a device of its own (its own queue and worker). Unlike ``sim``, work is queued on
streams (``aiograd._devices._simstreams``): each stream serves its work in launch order on a
background thread, events complete later, when that thread reaches them, and a read of another
stream's write without a wait in between raises ``StreamRaceError``. Implements the
device-type interface described in ``aiograd._devices._device``, as the ``cuda`` type does, with a
simulated stream where CUDA has a ``cupy.cuda.Stream``.

Tests make streams with ``Stream(index)`` and hold one's work pending with ``stream.pause()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from ._simstreams import (
    Event,
    Pause,
    Stream,
    StreamRaceError,
    check_and_stamp,
    current_stream,
    default_stream,
    scope,
    stamp_of,
    wait_until_written,
)
from ._simstreams import synchronize as _synchronize

__all__ = [
    "array_module", "indexed", "default_executor", "to_device", "to_host", "synchronize",
    "has_streams", "current_stream", "default_stream", "stream_scope", "record_event",
    "wait_event", "call_when_done", "ran_on", "Event", "Pause", "Stream", "StreamRaceError",
    "stamp_of",
]

#: The array module holding this type's data.
array_module = np
#: Numbered, as CUDA devices are: ``simcuda`` alone means ``simcuda:0``.
indexed = True
#: As on CUDA, a node's work is launched from its device's worker task, on the loop (a kernel
#: launch returns at once); nothing is offloaded.
default_executor = "InlineExecutor"
#: Work is queued on streams.
has_streams = True


def to_device(host_array: np.ndarray[Any, Any], index: int | None) -> np.ndarray[Any, Any]:
    """A copy of ``host_array`` in the device's memory (host memory here)."""
    return np.array(host_array, copy=True)


def to_host(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array`` in host memory, once the work that wrote it is done (``cupy.asnumpy``
    synchronizes likewise)."""
    wait_until_written(array)
    return array


def synchronize(index: int | None) -> None:
    """Block until the device's queued work is done."""
    _synchronize(index or 0)


def stream_scope(stream: Stream) -> AbstractContextManager[Stream]:
    """``stream`` is current on this thread for its device inside the block."""
    return scope(stream)


def record_event(stream: Stream) -> Event:
    """An event after the work queued on ``stream`` so far."""
    return stream.record()


def wait_event(stream: Stream, event: Event) -> None:
    """Work queued on ``stream`` from now on runs after ``event``."""
    stream.wait(event)


def call_when_done(event: Event, callback: Callable[[], None]) -> None:
    """``callback()`` once ``event`` is done: at once, or from the stream's thread."""
    event.call_when_done(callback)


def ran_on(stream: Stream, reads: Iterator[Any], writes: Iterator[Any]) -> None:
    """Check the reads against the stream's waits (StreamRaceError), then stamp the writes."""
    check_and_stamp(stream, reads, writes)
