"""aiograd.profiler: see what the engine does.

- ``profile``: record each backward call (GraphTask) and each node it runs, where and when, and
  export the result as Chrome trace JSON for Perfetto (``export_chrome_trace``), or read it as
  events (``events()``, ``graph_tasks()``, ``key_averages()``);
- ``progress`` and ``on_progress``: how far a long backward call is, as an async iterator or a
  callback of ``Progress(done, total)``.

Off by default, and free when off: the engine decides once per GraphTask whether anything
watches it. Logs are the standard library's: the ``aiograd`` logger (``aiograd.engine``,
``aiograd.executors``) logs engine events at DEBUG, and is silent unless configured. The guide
is docs/tracing.md.
"""

from .._engine.watch import Progress
from ._events import GraphTaskEvent, NodeEvent, OffloadEvent
from ._profile import NodeAverage, profile
from ._progress import on_progress, progress

__all__ = [
    "GraphTaskEvent", "NodeAverage", "NodeEvent", "OffloadEvent", "Progress", "on_progress",
    "profile", "progress",
]
