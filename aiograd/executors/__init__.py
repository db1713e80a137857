"""Executors: where a node's math runs.

The engine keeps all bookkeeping on its event loop and hands the math of heavy nodes (their
estimated cost above the engine's ``offload_threshold``) to the executor of their device type. An
executor says how many nodes it can have in flight (``capacity``); the engine keeps that many
running while it goes on draining ready nodes, so independent branches of one graph run in
parallel and the loop stays responsive.

- :class:`InlineExecutor`: on the loop itself (nothing is offloaded).
- :class:`ThreadExecutor`: a thread pool; numpy releases the GIL in its kernels.
- :class:`DaskExecutor`: tasks on a Dask cluster's worker processes, for nodes heavy enough to
  pay the trip (``pip install aiograd[distributed]``).

Write another by subclassing :class:`Executor` (``submit`` and ``capacity``). Choose them with
``aiograd.set_executor("cpu", ThreadExecutor(4))`` or ``Engine(loop, executors={...})``.
"""

from ._base import Executor
from ._dask import DaskExecutor
from ._inline import InlineExecutor
from ._thread import ThreadExecutor

__all__ = ["DaskExecutor", "Executor", "InlineExecutor", "ThreadExecutor"]
