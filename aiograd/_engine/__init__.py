"""The backward engine: PyTorch's engine (``torch/csrc/autograd/engine.cpp``) as coroutines.

One gradient's way through this package, in reading order (docs/engine.md tours it):

- ``engine.Engine.execute``: a ``backward()``/``grad()`` call becomes a ``GraphTask``
  (``graph_task``: dependency counts, and for ``grad()``/``inputs=`` which nodes run) and its
  root is pushed as a ``NodeTask`` (``node_task``) to a ``ReadyQueue`` (``ready_queue``);
- ``Engine.drive``: the awaiting coroutine drains that queue, most urgent NodeTask first;
- ``evaluate``: a node runs, hooks around it on the slow path, or goes to an executor
  (``offload``) and comes back as a DONE NodeTask;
- ``Engine.propagate``: each output gradient is summed into the next node's InputBuffer
  (``input_buffer``); a node whose last gradient arrived is pushed, to a device's queue when its
  gradients live on one (``devices``: one worker task per device); on a device with streams
  (CUDA) nodes are launched on streams and gradients handed between them with events
  (``streams``);
- ``completion``: final callbacks, the GPU's work awaited (``streams.settle``), the atomic
  commit, the result; or the first error.

A backward called from inside a node nests (``reentrant``). ``batched`` runs, one sample at a
time, the few nodes without a batch-aware rule in a ``grad(..., is_grads_batched=True)`` call. ``context`` holds the context
variables a drive sets, ``settings`` the process-wide modes, ``statistics`` the snapshot type.
Every GraphTask field is touched only by coroutines of the engine's loop: no locks.

Layer 6: the engine may import the base, the devices, the graph core, the ops (their registry
of batching rules, ``stack`` for the per-sample fallback) and the executors, never the API
above it.
"""

from .context import current_graph_task, current_worker, is_checkpoint_valid, queue_callback
from .engine import DEFAULT_NODES_PER_TURN, Engine, get_engine
from .graph_task import GraphTask
from .offload import get_executor, set_executor
from .settings import (
    are_deterministic_algorithms_enabled,
    get_shuffle_seed,
    set_shuffle_seed,
    use_deterministic_algorithms,
)
from .statistics import EngineStatistics

__all__ = [
    "DEFAULT_NODES_PER_TURN",
    "Engine",
    "EngineStatistics",
    "GraphTask",
    "are_deterministic_algorithms_enabled",
    "current_graph_task",
    "current_worker",
    "get_engine",
    "get_executor",
    "get_shuffle_seed",
    "is_checkpoint_valid",
    "queue_callback",
    "set_executor",
    "set_shuffle_seed",
    "use_deterministic_algorithms",
]
