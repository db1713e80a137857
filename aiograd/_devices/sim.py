"""The ``sim`` device type: a simulated accelerator, for testing multi-device scheduling without
a GPU.

``sim:0``, ``sim:1``, ... hold numpy arrays in host memory, like the CPU, but the engine treats
each as a separate device (its own queue and worker), as it does a CUDA device. Implements the
device-type interface described in ``aiograd._devices._device``; work is synchronous, so the stream and
event hooks do nothing.
"""

from __future__ import annotations

import numpy as np

# Host memory and no streams, as on the CPU.
from .cpu import (
    call_when_done,
    current_stream,
    default_stream,
    has_streams,
    ran_on,
    record_event,
    stream_scope,
    synchronize,
    to_device,
    to_host,
    wait_event,
)

__all__ = [
    "array_module", "indexed", "default_executor", "to_device", "to_host", "synchronize",
    "has_streams", "current_stream", "default_stream", "stream_scope", "record_event",
    "wait_event", "call_when_done", "ran_on",
]

#: The array module holding this type's data.
array_module = np
#: Devices of this type are numbered: ``sim`` alone means ``sim:0``, as ``cuda`` means the
#: current CUDA device.
indexed = True
#: A sim device's nodes run on its worker task, on the event loop (nothing to offload to).
default_executor = "InlineExecutor"
