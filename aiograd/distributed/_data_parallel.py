"""``DataParallel``: one batch's gradients, computed in shards on a Dask cluster's workers."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core._tensor import Tensor
from ..serving import batch_coupled_modules
from ._worker import add_gradients, shard_gradients

if TYPE_CHECKING:
    from ..nn import Module

__all__ = ["DataParallel", "ScatteredBatch"]

_instances = itertools.count(1)


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        if x.device.type != "cpu":
            raise ValueError(f"DataParallel: the batch must be on the CPU, got a tensor on {x.device}")
        return np.asarray(x.detach().numpy())
    return np.asarray(x)


class ScatteredBatch:
    """A batch cut into shards that live on the cluster's workers (``DataParallel.scatter``):
    ``inputs`` and ``targets`` are Dask futures, one per shard (``targets`` None without a
    target), ``sizes`` the shards' rows, ``rows`` their sum and ``homes`` the workers holding
    them. The shards stay on the workers while this object lives."""

    __slots__ = ("inputs", "targets", "sizes", "rows", "homes")

    def __init__(
        self, inputs: list[Any], targets: list[Any], sizes: list[int], rows: int, homes: list[str]
    ) -> None:
        self.inputs = inputs
        self.targets = targets
        self.sizes = sizes
        self.rows = rows
        self.homes = homes


class DataParallel:
    """Data-parallel gradients of ``model`` on a Dask cluster, like one process's::

        client = await distributed.Client(address, asynchronous=True)
        dp = aiograd.distributed.DataParallel(client, model, F.cross_entropy)
        loss = await dp.backward(x, y)   # as loss_fn(model(x), y).backward() would, into .grad
        optimizer.step()

    The batch (``inputs``, a tensor or array or a sequence of them, split along their first
    dimension, and ``target``) is cut into one shard per worker (``shards`` to choose), scattered
    to the cluster as Dask's own data, and each shard's loss and gradients are computed there by
    aiograd, on the worker's copy of the model. The shards' results are summed on the cluster by
    a tree reduction; only the sum comes back. With ``reduction="mean"`` (``loss_fn`` averages
    over the batch, as the losses of ``aiograd.nn.functional`` do by default) each shard's loss is
    weighted by its share of the batch; with ``"sum"`` it is not. Either way the result equals
    the single-process gradient of the whole batch up to float rounding (the sum's order).

    The model is shipped to the workers once (``client.scatter``, to every worker), and its
    parameters again only when they changed: an in-place update (an optimizer's step,
    ``copy_``, ``load_state_dict``) bumps a parameter's version, which is what is compared.
    Writing into a parameter's numpy array directly bypasses the version: call ``refresh()``.

    Rows must be independent for shards to be exact: a BatchNorm computing batch statistics
    (training mode) is refused, as in ``aiograd.serving.per_request_grad``. Errors raised on a
    worker (in ``loss_fn`` or the model) are raised here with their type and message.
    """

    def __init__(
        self,
        client: Any,
        model: Module,
        loss_fn: Callable[..., Any],
        *,
        reduction: str = "mean",
        shards: int | None = None,
    ) -> None:
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        if shards is not None and shards < 1:
            raise ValueError(f"shards must be at least 1, got {shards}")
        coupled = batch_coupled_modules(model)
        if coupled:
            raise ValueError(
                f"DataParallel: {coupled[0]} normalises each shard with that shard's own statistics, "
                "not the batch's: put it in eval mode (model.eval()) or train in one process"
            )
        self.client = client
        self.model = model
        self.loss_fn = loss_fn
        self.reduction = reduction
        self.shards = shards
        #: How many times the model, and its parameters, went to the workers (shipping counts).
        self.model_shipments = 0
        self.parameter_shipments = 0
        self._id = next(_instances)
        self._model_future: Any = None
        self._params_future: Any = None
        self._versions: Any = None
        self._token: tuple[int, int] | None = None

    def refresh(self) -> None:
        """Ship the parameters again at the next call, whatever their versions say."""
        self._versions = None

    async def _ship(self) -> None:
        parameters = list(self.model.parameters())
        if self._model_future is None:
            # In a list: scatter() would split a container, and it ships one object per element.
            [self._model_future] = await self.client.scatter([self.model], broadcast=True, hash=False)
            self.model_shipments += 1
        versions = [(id(p), p._version) for p in parameters]
        if versions != self._versions:
            arrays = [np.array(p.detach().numpy()) for p in parameters]
            [self._params_future] = await self.client.scatter([arrays], broadcast=True, hash=False)
            self.parameter_shipments += 1
            self._versions = versions
            self._token = (self._id, self.parameter_shipments)

    def _split(
        self, inputs: Any, target: Any, count: int
    ) -> tuple[list[list[np.ndarray]], list[np.ndarray | None], int]:
        xs = [_as_array(x) for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        if not xs:
            raise ValueError("DataParallel: no inputs")
        n = len(xs[0])
        for x in xs[1:]:
            if len(x) != n:
                raise ValueError(f"DataParallel: inputs of different batch sizes ({n} and {len(x)})")
        y = None if target is None else _as_array(target)
        if y is not None and len(y) != n:
            raise ValueError(f"DataParallel: {n} inputs but {len(y)} targets")
        if n == 0:
            raise ValueError("DataParallel: an empty batch")
        bounds = np.linspace(0, n, min(count, n) + 1).astype(int)
        pieces = list(itertools.pairwise(bounds))
        shard_inputs = [[x[a:b] for x in xs] for a, b in pieces]
        shard_targets = [None if y is None else y[a:b] for a, b in pieces]
        return shard_inputs, shard_targets, n

    async def scatter(self, inputs: Any, target: Any = None) -> ScatteredBatch:
        """Cut a batch into shards and place them on the workers once, for several calls:
        ``grad(batch)`` and ``backward(batch)`` then send nothing but the parameters (when they
        changed), where a batch of tensors or arrays travels again on every call."""
        # One shard per worker, as the scheduler counts them now (the client's cached view of the
        # cluster can lag behind its workers joining).
        addresses = sorted(await self.client.nthreads())
        if not addresses:
            raise RuntimeError("DataParallel: the cluster has no workers")
        shard_inputs, shard_targets, n = self._split(inputs, target, self.shards or len(addresses))
        # Each shard travels as the cluster's own data to a worker of its own, round-robin:
        # left to the scheduler, two shards can land on one worker and run one after the other.
        homes = [addresses[i % len(addresses)] for i in range(len(shard_inputs))]
        client = self.client
        xs = [(await client.scatter([x], workers=[home], hash=False))[0] for x, home in zip(shard_inputs, homes)]
        if target is None:
            ys: list[Any] = shard_targets
        else:
            ys = [(await client.scatter([y], workers=[home], hash=False))[0] for y, home in zip(shard_targets, homes)]
        return ScatteredBatch(xs, ys, [len(x[0]) for x in shard_inputs], n, homes)

    async def grad(self, inputs: Any, target: Any = None) -> tuple[float, list[Tensor | None]]:
        """The whole batch's loss and its gradients with respect to ``model.parameters()`` (in
        that order; None for a parameter the loss does not reach), as ``aiograd.grad`` would
        give them in one process. ``.grad`` is not touched. ``inputs`` may be a batch already
        on the cluster (``scatter``'s), with no ``target`` then."""
        if isinstance(inputs, ScatteredBatch):
            if target is not None:
                raise TypeError("DataParallel: a scattered batch holds its targets; pass no target")
            batch = inputs
        else:
            batch = await self.scatter(inputs, target)
        await self._ship()
        client = self.client
        n = batch.rows
        results = [
            client.submit(
                shard_gradients, self._model_future, self._token, self._params_future, self.loss_fn,
                xs, ys, (size / n) if self.reduction == "mean" else 1.0, pure=False,
                workers=[home], allow_other_workers=True,  # where its shard is; elsewhere if it died
            )
            for xs, ys, size, home in zip(batch.inputs, batch.targets, batch.sizes, batch.homes, strict=True)
        ]
        while len(results) > 1:  # a tree: log2(shards) rounds, each pair summed where it lies
            paired = [client.submit(add_gradients, a, b, pure=False) for a, b in zip(results[::2], results[1::2])]
            results = paired + ([results[-1]] if len(results) % 2 else [])
        loss, grads = await results[0]
        parameters = list(self.model.parameters())
        return loss, [
            None if g is None else Tensor._wrap(np.asarray(g, dtype=p.dtype)) for g, p in zip(grads, parameters)
        ]

    async def backward(self, inputs: Any, target: Any = None) -> float:
        """``loss_fn(model(inputs), target).backward()`` for the whole batch, in shards: the
        gradients are added into each parameter's ``.grad``. Returns the batch's loss.
        ``inputs`` may be a batch already on the cluster (``scatter``'s)."""
        loss, grads = await self.grad(inputs, target)
        for p, g in zip(self.model.parameters(), grads, strict=True):
            if g is None:
                continue
            p.grad = g if p.grad is None else p.grad + g
        return loss
