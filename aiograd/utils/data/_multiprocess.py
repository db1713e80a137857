"""The ``DataLoader``'s multi-process iterator (``num_workers > 0``), as torch's
``_MultiProcessingDataLoaderIter``.

Each worker is a process running ``_worker._worker_loop`` on its own copy of the dataset. The
main process sends each worker its tasks (``(send_idx, index batch)``) over its own pipe,
round-robin, keeping ``prefetch_factor * num_workers`` tasks outstanding; every worker puts its
results (pickled in the worker) on one shared ``multiprocessing.Queue``. Results arriving out of
order wait in ``_task_info`` until their turn (unless ``in_order=False``), so batches come back in
the sampler's order. Every wait is bounded: the main process checks its workers are alive
between polls of the result queue (a dead worker raises torch's RuntimeError), and a worker
checks that the main process lives between polls of its pipe.

Start method: the default is ``forkserver`` where the platform has it (Linux; ``spawn``
elsewhere), not torch's ``fork``: the caller of an aiograd loader usually runs an asyncio loop
and threads (``async for``, ``anyio.to_thread``), and forking a process that holds threads and
a running loop copies locks in whatever state they are in. The fork server is a fresh
interpreter, so its children start clean, and it preloads ``aiograd`` (added to
``multiprocessing``'s forkserver preload list) so that a worker starts in milliseconds rather
than importing aiograd anew as a spawned one must. As with spawn, the dataset, ``collate_fn``
and ``worker_init_fn`` are pickled to the workers: define them at a module's top level.
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
from multiprocessing import context as mp_context
from typing import Any

import anyio

from ..._base._dtypes import get_default_dtype
from . import _worker
from ._worker import ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration, _worker_loop

_END = object()  # "no more batches" across the thread boundary


def _default_context() -> mp_context.BaseContext:
    """forkserver (preloading aiograd) where available, else spawn: see the module's docstring."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        # the running list, kept (the public API only sets it); it takes effect when the server
        # starts, so a server someone else started keeps theirs
        preload = list(
            getattr(getattr(forkserver, "_forkserver", None), "_preload_modules", None)
            or ["__main__"]
        )
        if "aiograd" not in preload:
            forkserver.set_forkserver_preload([*preload, "aiograd"])
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")


def check_context(multiprocessing_context: Any, num_workers: int) -> Any:
    """torch's checks of ``multiprocessing_context``: a start method's name becomes its context."""
    if multiprocessing_context is None:
        return None
    if num_workers <= 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
            f"but got num_workers={num_workers}"
        )
    if isinstance(multiprocessing_context, str):
        valid_start_methods = multiprocessing.get_all_start_methods()
        if multiprocessing_context not in valid_start_methods:
            raise ValueError(
                "multiprocessing_context option "
                f"should specify a valid start method in {valid_start_methods!r}, but got "
                f"multiprocessing_context={multiprocessing_context!r}"
            )
        multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
    if not isinstance(multiprocessing_context, mp_context.BaseContext):
        raise TypeError(
            "multiprocessing_context option should be a valid context "
            "object or a string specifying the start method, but got "
            f"multiprocessing_context={multiprocessing_context}"
        )
    return multiprocessing_context


class _MultiProcessingLoaderIter:
    """Epochs loaded by worker processes; with ``persistent_workers`` the loader keeps one and
    ``_reset``s it for each epoch."""

    _shutdown = True  # until the workers exist (``__del__`` of a half-built iterator)

    def __init__(self, loader: Any, base_seed: int) -> None:
        self._loader = loader
        self._iterable = loader._iterable
        self._num_workers = n = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        self._in_order = loader.in_order
        self._timeout = loader.timeout
        self._base_seed = base_seed
        ctx = loader.multiprocessing_context or _default_context()
        self._done_event = ctx.Event()
        self._data_queue = ctx.Queue()
        self._index_conns: list[Any] = []
        self._workers: list[Any] = []
        self._workers_status = [False] * n
        self._shutdown = False
        try:
            for worker_id in range(n):
                reader, writer = ctx.Pipe(duplex=False)
                args = (
                    self._iterable,
                    loader.dataset,
                    reader,
                    self._data_queue,
                    self._done_event,
                    loader._auto_collation,
                    loader.collate_fn,
                    loader.drop_last,
                    base_seed,
                    loader.worker_init_fn,
                    worker_id,
                    n,
                    get_default_dtype(),
                )
                w = ctx.Process(target=_worker_loop, args=args, daemon=True)  # type: ignore[attr-defined]
                self._index_conns.append(writer)
                try:
                    w.start()
                finally:
                    reader.close()  # the worker holds its own end: the pipe closes when we die
                self._workers.append(w)
                self._workers_status[worker_id] = True
            self._reset(first_iter=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def __iter__(self) -> _MultiProcessingLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        return self._next_data()

    def _reset(self, first_iter: bool = False) -> None:
        n = self._num_workers
        self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = 0  # the next task's index
        self._rcvd_idx = 0  # the next task to hand out
        self._task_info: dict[int, tuple[Any, ...]] = {}  # idx -> (worker_id,) or (worker_id, data)
        self._tasks_outstanding = 0
        self._workers_status = [True] * n
        self._workers_num_tasks = [0] * n
        self._worker_queue_idx_cycle = itertools.cycle(range(n))
        if not first_iter:
            for conn in self._index_conns:
                conn.send(_ResumeIteration())
            remaining = n
            while remaining > 0:  # drop what the previous epoch left in the queue
                return_idx, _ = self._get_data()
                if isinstance(return_idx, _ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * n):
            self._try_put_index()

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        assert self._tasks_outstanding < max_tasks
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_queue_idx] < max_tasks // sum(
                    self._workers_status
                ):
                    break
        else:
            return
        self._index_conns[worker_queue_idx].send((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._workers_num_tasks[worker_queue_idx] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_data(self) -> Any:
        while True:
            # skip the tasks of workers whose iterable dataset ended
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if (
                        len(info) == 2 or self._workers_status[info[0]]
                    ):  # has data or may still send it
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            assert not self._shutdown and self._tasks_outstanding > 0
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._iterable and isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _process_data(self, data: Any, worker_id: int) -> Any:
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _try_get_data(self, timeout: float = _worker._STATUS_CHECK_INTERVAL) -> tuple[bool, Any]:
        try:
            raw = self._data_queue.get(timeout=timeout)
        except Exception as e:
            failed_workers = []
            for worker_id, w in enumerate(self._workers):
                if self._workers_status[worker_id] and not w.is_alive():
                    failed_workers.append(w)
                    self._mark_worker_as_unavailable(worker_id)
            if failed_workers:
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                self._shutdown_workers()  # the others too: the epoch cannot go on
                raise RuntimeError(
                    f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly"
                ) from e
            if isinstance(e, queue.Empty):
                return (False, None)
            raise
        return (True, pickle.loads(raw))

    def _get_data(self) -> Any:
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            if self._shutdown:  # shut down from another thread (a cancelled ``async for``)
                raise RuntimeError("DataLoader iterator was shut down")
            success, data = self._try_get_data()
            if success:
                return data

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        """Tell the worker to exit (it finishes its current task first)."""
        try:
            self._index_conns[worker_id].send(None)
        except (OSError, ValueError):
            pass  # already gone
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop the workers: ask, wait a bounded time, then terminate those still alive."""
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for w in self._workers:
                w.join(timeout=_worker._STATUS_CHECK_INTERVAL)
            for conn in self._index_conns:
                conn.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker._STATUS_CHECK_INTERVAL)
            self._data_queue.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:
            pass


def _next_or_end(it: _MultiProcessingLoaderIter) -> Any:
    try:
        return next(it)
    except StopIteration:
        return _END


class _AsyncMultiProcessingLoaderIter:
    """``async for`` over worker processes: the workers prefetch; the wait for the next batch
    runs in a thread, so the event loop stays free. A cancelled (or failed) loop shuts the
    workers down at once; the thread, abandoned, ends at its next poll."""

    def __init__(self, it: _MultiProcessingLoaderIter) -> None:
        self._it: _MultiProcessingLoaderIter | None = it
        self._loader = it._loader

    def __aiter__(self) -> _AsyncMultiProcessingLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    async def __anext__(self) -> Any:
        it = self._it
        if it is None:
            raise StopAsyncIteration
        try:
            batch = await anyio.to_thread.run_sync(_next_or_end, it, abandon_on_cancel=True)
        except BaseException:
            await self.aclose()
            raise
        if batch is _END:
            self._it = None
            raise StopAsyncIteration
        return batch

    async def aclose(self) -> None:
        """Stop: the workers are shut down (a persistent loader then starts new ones)."""
        it, self._it = self._it, None
        if it is not None:
            it._shutdown_workers()
