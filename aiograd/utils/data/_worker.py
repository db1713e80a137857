"""A ``DataLoader`` worker process, as ``torch.utils.data._utils.worker``: what runs in each
worker (:func:`_worker_loop`), what it tells the main process (batches, errors, the end of an
iterable dataset), and :func:`get_worker_info`, which a dataset calls to learn which worker it
runs in (to shard an :class:`~aiograd.utils.data.IterableDataset`, for instance).

Tensors cross processes as numpy arrays: multiprocessing's pickler (``ForkingPickler``, that of
its queues and of the arguments of a spawned process) is taught here to send an aiograd tensor
as its array (and whether it requires grad), rebuilt as an aiograd tensor on the other side.
A non-leaf tensor that requires grad is refused, as in torch: autograd does not cross processes.
"""

from __future__ import annotations

import os
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from ..._base import _random
from ..._base._dtypes import set_default_dtype
from ..._core._tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

#: How long (seconds) a worker waits for its next task before checking that the main process
#: lives, and the main process for a batch before checking that its workers live.
_STATUS_CHECK_INTERVAL = 0.5


@dataclass(frozen=True)
class WorkerInfo:
    """The current worker: its ``id`` (0 to ``num_workers - 1``), ``num_workers``, the ``seed``
    it was given (``base_seed + id``), and its own copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a ``DataLoader`` worker process, its :class:`WorkerInfo` (``id``, ``num_workers``,
    ``seed``, ``dataset``: this process's copy); None in the main process. As torch's: an
    ``IterableDataset`` calls it in ``__iter__`` to yield only its share, a ``worker_init_fn``
    to configure each worker's copy of the dataset."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """A persistent worker is to start a new epoch."""


class _KeyErrorMessage(str):
    """A message that is its own repr (KeyError would quote it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception and its traceback as text, to re-raise in another process (torch's)."""

    def __init__(self, exc_info: Any = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        """Raise ``Caught <type> <where>.\\nOriginal Traceback ...`` as the original type where it
        can be built from one message, else as a RuntimeError."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


# ------------------------------------------------------------------------------ tensors
def _rebuild_tensor(array: np.ndarray, requires_grad: bool) -> Tensor:
    from ..._api._factories import as_tensor

    out = as_tensor(array)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _reduce_tensor(t: Tensor) -> Any:
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it into a Queue)."
        )
    return (_rebuild_tensor, (np.asarray(t.data), bool(t.requires_grad)))


ForkingPickler.register(Tensor, _reduce_tensor)


# ------------------------------------------------------------------------------ seeding
def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """torch's numpy seed for a worker: numpy's SeedSequence mixing of (worker_id, base_seed),
    so that workers' numpy streams differ (torch's own copy of the algorithm)."""
    init_a, mult_a, init_b, mult_b = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    mix_mult_l, mix_mult_r, xshift, mask32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_a = init_a

    def hash_(value: int) -> int:
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * mult_a) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> xshift)) & mask32

    def mix(x: int, y: int) -> int:
        result = (((mix_mult_l * x) & mask32) - ((mix_mult_r * y) & mask32)) & mask32
        return (result ^ (result >> xshift)) & mask32

    for i in range(len(pool)):
        pool[i] = hash_(entropy[i])
    for i_src in range(len(pool)):
        for i_dst in range(len(pool)):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = init_b
    state = []
    for i_dst in range(4):
        data_val = (pool[i_dst] ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * mult_b) & mask32
        data_val = (data_val * hash_const_b) & mask32
        state.append((data_val ^ (data_val >> xshift)) & mask32)
    return state


# ------------------------------------------------------------------------------ fetching
class _Fetcher:
    """One epoch's fetching of batches (or single samples) from a worker's dataset."""

    def __init__(
        self, iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool
    ) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.dataset_iter = iter(dataset) if iterable else None
        self.ended = False

    def fetch(self, index: Any) -> Any:
        """The collated batch for ``index``; StopIteration when an iterable dataset is done."""
        dataset = self.dataset
        if self.dataset_iter is None:
            if not self.auto_collation:
                return self.collate_fn(dataset[index])
            getitems = getattr(dataset, "__getitems__", None)
            return self.collate_fn(getitems(index) if getitems else [dataset[idx] for idx in index])
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if len(data) == 0 or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def _worker_loop(
    iterable: bool,
    dataset: Any,
    index_conn: Any,
    data_queue: Any,
    done_event: Any,
    auto_collation: bool,
    collate_fn: Any,
    drop_last: bool,
    base_seed: int,
    init_fn: Any,
    worker_id: int,
    num_workers: int,
    default_dtype: Any,
) -> None:
    """A worker's life, as torch's: take the main process's default dtype, seed (``random``, aiograd and numpy's legacy global state),
    run ``init_fn(worker_id)``, then fetch what the main process asks for until it sends None,
    the main process dies (its end of ``index_conn`` closes, or this process's parent changes),
    or ``done_event`` is set. An error is sent back wrapped, to be re-raised there."""
    global _worker_info
    parent = os.getppid()
    try:
        set_default_dtype(default_dtype)  # a forked torch worker inherits it
        seed = base_seed + worker_id
        random.seed(seed)
        _random.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception: ExceptionWrapper | None = None
        fetcher: _Fetcher | None = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _Fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while os.getppid() == parent:
            try:
                if not index_conn.poll(_STATUS_CHECK_INTERVAL):
                    continue
                r = index_conn.recv()
            except (EOFError, OSError):
                break  # the main process is gone
            if isinstance(r, _ResumeIteration):
                data_queue.put(_dumps(r, None, worker_id))
                iteration_end = False
                try:
                    fetcher = _Fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    init_exception = ExceptionWrapper(
                        where=f"in DataLoader worker process {worker_id}"
                    )
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            data: Any
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    assert fetcher is not None
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put(_dumps(idx, data, worker_id))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()


def _dumps(idx: Any, data: Any, worker_id: int) -> bytes:
    """``(idx, data)`` pickled now, in the worker (a queue would pickle it later, in its feeder
    thread, where an unpicklable batch would be lost): an unpicklable batch becomes its error."""
    try:
        return bytes(ForkingPickler.dumps((idx, data)))
    except Exception:
        return bytes(
            ForkingPickler.dumps(
                (idx, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}"))
            )
        )
