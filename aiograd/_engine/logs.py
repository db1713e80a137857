"""aiograd's loggers: ``aiograd`` and its children, silent unless the application configures
logging.

As the standard library advises for libraries, the ``aiograd`` logger gets a ``NullHandler`` and
nothing else: no level, no output of its own. Without it, a record at WARNING or above would
reach ``logging.lastResort`` and print to stderr in a program that never asked for logs.

- ``aiograd.engine``: GraphTasks starting and ending (errors included), device workers starting
  and stopping, reentrant backward calls moving to a fresh worker task, offload decisions;
- ``aiograd.executors``: executors refusing work, results of offloaded nodes dropped because
  their GraphTask had already failed.

Everything is at DEBUG. A GraphTask's error is logged at DEBUG, not ERROR: the exception reaches
the code that awaited the backward, which decides whether it is an error worth reporting;
logging it at ERROR here would report it twice (or report one the caller handles).
"""

from __future__ import annotations

import logging
from logging import DEBUG

__all__ = ["DEBUG", "engine_log", "executor_log"]

logging.getLogger("aiograd").addHandler(logging.NullHandler())

engine_log = logging.getLogger("aiograd.engine")
executor_log = logging.getLogger("aiograd.executors")
