"""DaskExecutor: heavy nodes' math as tasks on a Dask cluster; the bookkeeping stays on the loop."""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._base import Executor
from ._shipping import Packed, pack, run_shipped, unpack_result
from ._thread import ThreadExecutor

if TYPE_CHECKING:
    from .._core._node import Node
    from .._core._tensor import Tensor

__all__ = ["DEFAULT_NS_PER_BYTE", "DEFAULT_SHIP_THRESHOLD_NS", "DaskExecutor"]

#: A node ships to the cluster from this estimated cost (ns, ``Node.cost``): three times the round
#: trip of an empty task (about 10 ms: Dask's client batches its messages every 10 ms), and where
#: benchmarks/bench_distributed.py finds a square weight gradient's trip (latency and data) no
#: longer costs more than its math (n = 1024, 32 ms estimated). docs/distributed.md has the
#: figures. Cheaper heavy nodes run in ``local``.
DEFAULT_SHIP_THRESHOLD_NS = 30_000_000.0
#: What moving a byte to a worker and back costs, about (ns): the same benchmark's 8 MB gradient
#: in and 8 MB gradient out add about 35 ms to the trip. A node ships only if its estimated cost
#: is at least its bytes' (so an elementwise node, 16 bytes moved per element for 1 ns of math,
#: never does).
DEFAULT_NS_PER_BYTE = 2.0
#: Saved leaf tensors (parameters, inputs) from this size go to the cluster once, as Dask's own
#: data, and are passed to later tasks by reference while their version holds.
DEFAULT_CACHE_BYTES = 1 << 16
#: Other arrays (gradients, saved activations) from this size go straight to a worker as Dask
#: data before the task that reads them, rather than inside the task through the scheduler
#: (which warns about tasks over 10 MB).
DIRECT_BYTES = 1 << 20

_keys = itertools.count()


class DaskExecutor(Executor):
    """Runs heavy nodes' math on a Dask cluster (``pip install aiograd[distributed]``)::

        client = await distributed.Client(address, asynchronous=True)
        aiograd.set_executor("cpu", DaskExecutor(client))
        await loss.backward()   # nodes estimated above ship_threshold run on the workers

    The engine keeps all bookkeeping on its loop; a node it offloads is packed (its class by
    name, its saved arrays, its incoming gradients, which outputs are needed) and run as a Dask
    task by aiograd on a worker, and its gradients come back as arrays. ``client`` is a
    ``distributed.Client``: one made with ``asynchronous=True`` on the loop that runs the
    backward is awaited there; any other (a synchronous client, which runs its own thread, or
    one of another loop that is running) is used from any loop, as Dask allows, its results
    handed to the backward's loop.

    What does not ship runs here, in ``local`` (a ThreadExecutor of its own by default):

    - nodes estimated below ``ship_threshold`` ns, or below ``ns_per_byte`` times the bytes
      they would move (their gradients in and out, their saved arrays not already on the
      cluster): the trip would cost more than the math;
    - nodes that cannot travel: custom Functions, nodes with hooks, a ``create_graph`` backward
      (its gradients are graphs, recorded here), saved tensors packed by saved-tensor hooks,
      anything not on the CPU.

    Saved leaf tensors of ``cache_bytes`` or more (parameters, inputs) are scattered to the
    cluster once and passed by reference while their version holds; other arrays of a MiB or
    more go straight to a worker, not through the scheduler.

    Errors raised on a worker fail the GraphTask with their own type and message. Cancelling
    the backward (or its failing) cancels the Dask tasks in flight. A worker that dies while
    running a node has the node rescheduled by Dask on another worker, up to the scheduler's
    ``distributed.scheduler.allowed-failures``; past that the GraphTask fails with a
    RuntimeError naming the node (the ``KilledWorker`` is its ``__cause__``).

    ``capacity``: two tasks per thread of the cluster (as Dask's scheduler counts them, read at
    most once a second), so each worker has its next node waiting, plus ``local``'s.
    """

    def __init__(
        self,
        client: Any,
        *,
        ship_threshold: float = DEFAULT_SHIP_THRESHOLD_NS,
        ns_per_byte: float = DEFAULT_NS_PER_BYTE,
        local: Executor | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        if ship_threshold < 0:
            raise ValueError(f"ship_threshold must be >= 0, got {ship_threshold}")
        if ns_per_byte < 0:
            raise ValueError(f"ns_per_byte must be >= 0, got {ns_per_byte}")
        if local is not None and (local.inline or isinstance(local, DaskExecutor)):
            raise ValueError(f"local must run nodes in this process off the loop, got {local!r}")
        self.client = client
        self.ship_threshold = ship_threshold
        self.ns_per_byte = ns_per_byte
        self.cache_bytes = cache_bytes
        self._own_local = local is None
        self.local: Executor = local if local is not None else ThreadExecutor()
        #: Nodes that ran on the cluster, and heavy nodes that ran in ``local`` instead.
        self.nodes_shipped = 0
        self.nodes_kept = 0
        #: Leaf arrays sent to the cluster as Dask data (each once per version).
        self.arrays_scattered = 0
        #: id(leaf) -> (weak reference to it, (version, id of its array), its scattered copy)
        self._leaves: dict[int, tuple[weakref.ref[Tensor], tuple[int, int], asyncio.Future[Any]]] = {}
        self._threads = 0
        self._threads_read = -1.0
        self._cancels: set[Any] = set()  # Dask cancellations under way (held until done)

    # ------------------------------------------------------------------------------ capacity
    @property
    def capacity(self) -> int:
        """Two per thread of the cluster, plus ``local``'s capacity."""
        now = time.monotonic()
        if now - self._threads_read > 1.0:
            self._threads_read = now
            try:
                info = self.client.scheduler_info()
                # The cluster's total, where the scheduler reports it: an asynchronous client's
                # cached view, refreshed every few seconds, carries totals but no workers.
                workers = info.get("workers") or {}
                listed = sum(w.get("nthreads", 1) for w in workers.values())
                self._threads = max(int(info.get("total_threads") or 0), listed)
            except Exception:  # noqa: BLE001 - a closed client: no remote capacity
                self._threads = 0
        return 2 * max(self._threads, 1) + self.local.capacity

    # ------------------------------------------------------------------------------ submitting
    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """A bare call cannot travel: it runs in ``local``."""
        return self.local.submit(fn)

    def submit_node(self, node: Node, buffer: list[Any], call: Callable[[], Any]) -> asyncio.Future[Any]:
        """Ship ``node`` to the cluster when it is worth it and can travel, else run ``call``
        in ``local``."""
        cost = node.cost(buffer)
        packed = pack(node, buffer) if cost >= self.ship_threshold else None
        if packed is not None and self.ns_per_byte and cost < self._bytes_moved(packed) * self.ns_per_byte:
            packed = None
        if packed is None:
            self.nodes_kept += 1
            return self.local.submit(call)
        loop = asyncio.get_running_loop()
        self.nodes_shipped += 1
        return loop.create_task(self._ship(packed), name=f"aiograd-dask:{packed.shipment.name}")

    def _bytes_moved(self, packed: Packed) -> int:
        """What a shipment moves, about: its arrays not kept on the cluster (a large leaf's goes
        once), and as many bytes of gradients out as came in."""
        arrays = packed.arrays
        moved = sum(arrays[i].nbytes for i in packed.shipment.grads if i is not None)
        for array, leaf in zip(arrays, packed.leaves, strict=True):
            if leaf is None or array.nbytes < self.cache_bytes:
                moved += array.nbytes
        return moved

    async def _ship(self, packed: Packed) -> tuple[Tensor | None, ...]:
        client = self.client
        name = packed.shipment.name
        arrays = await self._arrays(packed)
        # (``client.asynchronous`` is True only on the client's own loop: elsewhere the client
        # works synchronously, and its futures are waited for through a callback.)
        future = client.submit(run_shipped, packed.shipment, *arrays, key=f"{name}-{next(_keys)}-{id(self):x}", pure=False)
        try:
            if client.asynchronous:
                outputs = await future
            else:
                outputs = await _threadsafe(asyncio.get_running_loop(), future)
        except asyncio.CancelledError:
            self._cancel(future)
            raise
        except Exception as exc:
            killed = _killed_worker()
            if killed is not None and isinstance(exc, killed):
                raise RuntimeError(
                    f"{name} could not run on the Dask cluster: every worker that ran it died "
                    f"({exc.allowed_failures + 1} tries, the scheduler's "  # type: ignore[attr-defined]
                    "distributed.scheduler.allowed-failures + 1); the last was "
                    f"{exc.last_worker.address}"  # type: ignore[attr-defined]
                ) from exc
            raise
        return unpack_result(outputs)

    async def _arrays(self, packed: Packed) -> list[Any]:
        """The shipment's arrays as they travel: inline; for a large leaf, a reference to its
        copy on the cluster (scattered at its first use, again when its version changed); for
        another large array, a reference to a copy sent straight to a worker for this task."""
        arrays: list[Any] = list(packed.arrays)
        for i, leaf in enumerate(packed.leaves):
            if leaf is None or arrays[i].nbytes < self.cache_bytes:
                if arrays[i].nbytes >= DIRECT_BYTES:
                    arrays[i] = await self._scatter(arrays[i], direct=True)
                continue
            key = id(leaf)
            stamp = (leaf._version, id(leaf.data))
            entry = self._leaves.get(key)
            if entry is None or entry[0]() is not leaf:
                # Kept while the leaf lives (by id: a tensor's ``==`` is elementwise, so it
                # cannot key a WeakKeyDictionary).
                weakref.finalize(leaf, self._leaves.pop, key, None)
                entry = None
            if entry is None or entry[1] != stamp:
                scattered = asyncio.ensure_future(self._scatter(arrays[i]))
                entry = self._leaves[key] = (weakref.ref(leaf), stamp, scattered)
            try:
                arrays[i] = await asyncio.shield(entry[2])
            except Exception:
                if self._leaves.get(key) is entry:
                    del self._leaves[key]  # the next call tries again
                raise
        return arrays

    async def _scatter(self, array: Any, direct: bool = False) -> Any:
        client = self.client
        if not direct:
            self.arrays_scattered += 1
        scatter = functools.partial(client.scatter, array, hash=False, direct=direct or None)
        if client.asynchronous:
            return await scatter()
        return await asyncio.get_running_loop().run_in_executor(None, scatter)

    def _cancel(self, future: Any) -> None:
        """Cancel a Dask task without waiting for the scheduler's answer."""
        try:
            if self.client.asynchronous:
                pending = asyncio.ensure_future(future.cancel())
            else:
                pending = asyncio.get_running_loop().run_in_executor(None, future.cancel)
        except Exception:  # noqa: BLE001 - a closed client: nothing runs any more
            return
        self._cancels.add(pending)
        pending.add_done_callback(self._cancels.discard)
        pending.add_done_callback(_retrieve)

    def close(self) -> None:
        """Forget the leaves kept on the cluster; close ``local`` if it is this executor's own.
        The client stays open: it is the caller's."""
        self._leaves.clear()
        if self._own_local:
            self.local.close()

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, ship_threshold={self.ship_threshold:g}, ns_per_byte={self.ns_per_byte:g})"


def _killed_worker() -> type[BaseException] | None:
    try:
        from distributed import KilledWorker
    except ImportError:  # pragma: no cover - a client implies distributed
        return None
    return KilledWorker


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # a failed cancellation is not worth a log line at exit


def _threadsafe(loop: asyncio.AbstractEventLoop, future: Any) -> asyncio.Future[Any]:
    """A future of ``loop`` for a synchronous client's Dask future (whose callbacks run in a
    thread of Dask's)."""
    result = loop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if result.done():
            return
        if exc is not None:
            result.set_exception(exc)
        else:
            result.set_result(value)

    def on_done(f: Any) -> None:
        try:
            value, exc = f.result(), None
        except BaseException as e:  # noqa: BLE001 - delivered to the loop
            value, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, value, exc)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    future.add_done_callback(on_done)
    return result
