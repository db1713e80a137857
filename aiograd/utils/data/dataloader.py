"""The data loader, as ``torch.utils.data.DataLoader``: a dataset, a sampler and a collate
function, iterated batch by batch.

``for batch in loader`` is torch's single-process loading. Beyond torch, ``async for batch in
loader`` prepares the next batch in a background thread (indexing the dataset and collating)
while the caller awaits its forward and backward, so that loading overlaps training::

    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    for epoch in range(10):
        async for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            optimizer.zero_grad()
            await loss.backward()
            optimizer.step()

Both yield the same batches in the same order. The sampler's iterator (and its random order) is
made on the caller's thread when iteration starts; the background thread then only runs the
dataset's ``__getitem__``/``__getitems__`` (or its iterator) and the collate function, which must
therefore not draw from aiograd's default generator if the run is to be reproducible.

``num_workers > 0`` loads in worker processes, as torch's (``_multiprocess``, ``_worker``):
batches in the sampler's order, ``prefetch_factor`` batches per worker in flight,
``persistent_workers``, ``timeout``, ``worker_init_fn``, ``in_order`` and
:func:`~aiograd.utils.data.get_worker_info` for sharding an ``IterableDataset``. Worker ``i`` seeds
``random`` and aiograd with ``base_seed + i`` (numpy as torch does), ``base_seed`` being drawn
from ``generator`` by every iterator. A worker's error is re-raised with torch's text ("Caught
ValueError in DataLoader worker process 0. Original Traceback ..."); a dead worker raises
RuntimeError. Workers start by ``forkserver`` (``spawn`` where there is none) rather than torch's
``fork``, so the dataset, ``collate_fn`` and ``worker_init_fn`` must be picklable; ``async for``
waits for the workers' batches in a thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

import anyio
import numpy as np

from ..._base import _random, _sampling
from ._collate import default_collate, default_convert
from ._multiprocess import (
    _AsyncMultiProcessingLoaderIter,
    _MultiProcessingLoaderIter,
    check_context,
)
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_T_co = TypeVar("_T_co", covariant=True)

_GUARDED = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _InfiniteConstantSampler(Sampler[None]):
    """An iterable-style dataset's sampler: ``None`` forever (the dataset decides the order)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader(Generic[_T_co]):
    """Batches of ``dataset``: torch's signature and checks; see the module's docstring.

    ``shuffle`` draws a new order each epoch from ``generator`` (an ``aiograd.Generator`` or a
    ``numpy.random.Generator``; None: aiograd's default generator, so ``aiograd.manual_seed``
    fixes the orders). They are torch's orders for the same seed: the same draws in the same order.
    ``pin_memory`` and ``pin_memory_device`` are accepted for torch's scripts and do nothing;
    ``num_workers``, ``worker_init_fn``, ``multiprocessing_context`` (a context or a start
    method's name), ``prefetch_factor`` (2 by default with workers), ``persistent_workers``,
    ``timeout`` and ``in_order`` are torch's worker-process options (see the module's docstring).
    """

    dataset: Dataset[_T_co]
    batch_size: int | None
    num_workers: int
    drop_last: bool
    sampler: Sampler[Any] | Iterable[Any]
    batch_sampler: Sampler[Sequence[Any]] | Iterable[Sequence[Any]] | None
    generator: Any
    __initialized = False

    def __init__(
        self,
        dataset: Dataset[_T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler[Any] | Iterable[Any] | None = None,
        batch_sampler: Sampler[Sequence[Any]] | Iterable[Sequence[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        # torch's checks, in torch's order
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        multiprocessing_context = check_context(multiprocessing_context, num_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            # the dataset orders itself: no sampler, no shuffle
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator: _MultiProcessingLoaderIter | None = None  # persistent workers'
        self.__initialized = True

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in _GUARDED:
            raise ValueError(
                f"{attr} attribute should not be set after {self.__class__.__name__} is initialized"
            )
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        # what an epoch iterates: lists of keys when batching, single keys otherwise
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _LoaderIter(self)
        return self._workers_iter()

    def __aiter__(self) -> Any:
        if self.num_workers == 0:
            return _AsyncLoaderIter(self)
        return _AsyncMultiProcessingLoaderIter(self._workers_iter())

    def _workers_iter(self) -> _MultiProcessingLoaderIter:
        """A new iterator and its workers; with ``persistent_workers``, the loader's, reset for a
        new epoch (a new one if it was shut down)."""
        if not self.persistent_workers:
            return _MultiProcessingLoaderIter(self, _base_seed(self.generator))
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = _MultiProcessingLoaderIter(self, _base_seed(self.generator))
        else:
            self._iterator._reset()
        return self._iterator

    def __len__(self) -> int:
        if self._iterable:
            length: int = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = (
                    length // self.batch_size
                    if self.drop_last
                    else math.ceil(length / self.batch_size)
                )
            return length
        return len(self._index_sampler)


def _base_seed(generator: Any) -> int:
    """torch's per-iterator draw (workers are seeded ``base_seed + worker_id``); drawn by every
    iterator, as torch's, so that workers or not, a seed gives the same shuffled orders."""
    return int(_sampling.random_bits(_random.resolve(generator), (), np.int64))


class _LoaderIter:
    """One epoch, loaded on the caller's thread (torch's single-process iterator)."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._loader = loader
        self._base_seed = _base_seed(loader.generator)
        self._auto_collation = loader._auto_collation
        self._sampler_iter = iter(loader._index_sampler)
        self._dataset_iter = iter(loader.dataset) if loader._iterable else None  # type: ignore[call-overload]
        self._ended = False

    def __iter__(self) -> _LoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        index = next(self._sampler_iter)
        loader = self._loader
        if self._dataset_iter is not None:
            return loader.collate_fn(self._next_from_stream(index))
        dataset: Any = loader.dataset
        if not self._auto_collation:
            return loader.collate_fn(dataset[index])
        getitems = getattr(dataset, "__getitems__", None)
        data = getitems(index) if getitems else [dataset[idx] for idx in index]
        return loader.collate_fn(data)

    def _next_from_stream(self, index: Any) -> Any:
        """The next sample (or batch of samples) of an iterable-style dataset."""
        assert self._dataset_iter is not None
        if self._ended:
            raise StopIteration
        if not self._auto_collation:
            return next(self._dataset_iter)
        data = []
        for _ in index:
            try:
                data.append(next(self._dataset_iter))
            except StopIteration:
                self._ended = True
                break
        if len(data) == 0 or (self._loader.drop_last and len(data) < len(index)):
            raise StopIteration
        return data


_END = object()  # the background thread's "no more batches" (StopIteration does not cross a Future)


def _next_or_end(it: _LoaderIter) -> Any:
    try:
        return next(it)
    except StopIteration:
        return _END


class _AsyncLoaderIter:
    """One epoch for ``async for``: each batch is loaded in a background thread, the next one
    starting as soon as the current one is handed out."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._it = _LoaderIter(loader)  # samplers are read here, on the caller's thread
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(
            1, thread_name_prefix="aiograd-dataloader"
        )
        self._pending: Future[Any] | None = None

    def __aiter__(self) -> _AsyncLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._it)

    async def __anext__(self) -> Any:
        if self._pool is None:
            raise StopAsyncIteration
        future = (
            self._pending
            if self._pending is not None
            else self._pool.submit(_next_or_end, self._it)
        )
        self._pending = None
        try:
            # waiting for the thread in another thread keeps the loop free and works on any
            # backend anyio knows (asyncio, uvloop, trio)
            batch = (
                future.result() if future.done() else await anyio.to_thread.run_sync(future.result)
            )
        except BaseException:
            await self.aclose()
            raise
        if batch is _END:
            await self.aclose()
            raise StopAsyncIteration
        self._pending = self._pool.submit(
            _next_or_end, self._it
        )  # the next batch, while the caller trains
        return batch

    async def aclose(self) -> None:
        """Stop: the batch being prepared, if any, is dropped (its thread finishes it and exits)."""
        pool, self._pool, self._pending = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
