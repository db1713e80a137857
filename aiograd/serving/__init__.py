"""Serving many gradient requests on one event loop: ``aiograd.serving``.

- ``batch``: dynamic batching of concurrent callers (``@serving.batch``), with ``Overloaded``
  backpressure and ``BatchStatistics``; its docstring states the dispatch policy.
"""

from ._batcher import BatchedFunction, BatchStatistics, Overloaded, batch

__all__ = ["BatchStatistics", "BatchedFunction", "Overloaded", "batch"]

# Public under the package's name (tracebacks and reprs say aiograd.serving.Overloaded).
for _public in (BatchStatistics, BatchedFunction, Overloaded, batch):
    _public.__module__ = __name__
del _public
