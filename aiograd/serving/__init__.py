"""Serving many gradient requests on one event loop: ``aiograd.serving``.

- ``batch``: dynamic batching of concurrent callers (``@serving.batch``), with ``Overloaded``
  backpressure and ``BatchStatistics``; its docstring states the dispatch policy.
- ``concat_requests``/``stack_requests`` join requests' inputs along the batch dimension into a
  ``RequestBatch``, whose ``split`` cuts results back per request.
- ``per_request_grad``: each request's output and input gradient from one batched forward and
  backward, exact when the rows are independent (``batch_coupled_modules`` and
  ``check_rows_independent`` check that).
- ``attribute``: gradient attributions as Captum defines them (saliency, input x gradient,
  integrated gradients, SmoothGrad) for many ``AttributionRequest``s from one forward and one
  backward, as an ``Attribution`` each.
- ``aiograd.serving.http`` (``pip install 'aiograd[serve]'``): the HTTP service that batches
  them, and ``python -m aiograd.serving --model package.module:factory``, which runs it.
"""

from ._attributions import Attribution, AttributionRequest, attribute
from ._batcher import BatchedFunction, BatchStatistics, Overloaded, batch
from ._requests import (
    RequestBatch,
    RequestGrad,
    batch_coupled_modules,
    check_rows_independent,
    concat_requests,
    per_request_grad,
    stack_requests,
)

__all__ = [
    "Attribution",
    "AttributionRequest",
    "BatchStatistics",
    "BatchedFunction",
    "Overloaded",
    "RequestBatch",
    "RequestGrad",
    "attribute",
    "batch",
    "batch_coupled_modules",
    "check_rows_independent",
    "concat_requests",
    "per_request_grad",
    "stack_requests",
]

# Public under the package's name (tracebacks and reprs say aiograd.serving.Overloaded).
for _public in (
    Attribution, AttributionRequest, attribute, BatchStatistics, BatchedFunction, Overloaded, RequestBatch, RequestGrad, batch,
    batch_coupled_modules, check_rows_independent, concat_requests, per_request_grad,
    stack_requests,
):
    _public.__module__ = __name__
del _public
