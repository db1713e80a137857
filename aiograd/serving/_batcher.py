"""Dynamic batching of concurrent requests: ``@aiograd.serving.batch``.

Many small requests in flight on one event loop each pay Python's per-call bookkeeping; run as
one batch they pay it once. ``batch`` turns ``async def f(items: list[T]) -> list[R]`` into a
function that callers call with one item and await one result, collecting the items of
concurrent callers into batches (the model is Ray Serve's ``@serve.batch``; Triton's dynamic
batcher and TorchServe's batching work the same way)::

    @aiograd.serving.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def saliency(inputs: list[Tensor]) -> list[Tensor]:
        ...                              # one forward and backward for the whole batch

    grad = await saliency(x)             # in each request handler

The dispatch policy, the isolation of callers, the backpressure and the statistics are stated
in ``batch``'s docstring.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import math
import typing
import weakref
from collections import deque as _deque
from collections.abc import Sequence as _Sequence
from dataclasses import dataclass as _dataclass
from time import perf_counter as _perf_counter

if typing.TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine
    from typing import Any

__all__ = ["BatchStatistics", "BatchedFunction", "Overloaded", "batch"]

_T = typing.TypeVar("_T")
_R = typing.TypeVar("_R")


class Overloaded(RuntimeError):
    """Raised at once to a caller of a batched function whose queue is full (a service maps it
    to HTTP 503): the caller is refused instead of waiting without bound."""


@_dataclass(frozen=True)
class BatchStatistics:
    """A snapshot of a batched function's counters (``f.statistics()``), since its batcher was
    made (one per function, or per instance for a method, and per event loop).

    ``batches``: calls of the decorated function; ``items``: items it was given;
    ``mean_batch_size`` (0.0 before the first batch) and ``max_batch_size``: of those batches;
    ``mean_queue_wait_s`` and ``max_queue_wait_s``: from a call to its item's dispatch, in the
    ``time.perf_counter()`` (uvloop's ``loop.time()`` counts whole milliseconds), over the
    dispatched items; ``rejected``: calls refused with
    ``Overloaded``; ``cancelled``: callers cancelled before their result came (while queued, their
    item then never reaching the function, or while their batch ran); ``queued``: items waiting
    now; ``running``: whether a batch runs now.
    """

    batches: int
    items: int
    mean_batch_size: float
    max_batch_size: int
    mean_queue_wait_s: float
    max_queue_wait_s: float
    rejected: int
    cancelled: int
    queued: int
    running: bool


class _Request:
    """One caller's item, its future and when it was queued."""

    __slots__ = ("item", "future", "queued_at", "called_at", "dispatched")

    def __init__(self, item: Any, future: asyncio.Future[Any], queued_at: float) -> None:
        self.item, self.future, self.queued_at, self.dispatched = item, future, queued_at, False
        self.called_at = _perf_counter()  # for the statistics; queued_at (loop time) for timers


class _Batcher:
    """The queue and the dispatch of one batched function (bound to one instance for a method)
    on one event loop. Nothing runs in the background: dispatches are loop callbacks (a timer or
    ``call_soon``), and each batch runs in a task of its own that ends with the batch."""

    def __init__(self, func: Callable[[list[Any]], Awaitable[_Sequence[Any]]], name: str,
                 config: _Config, loop: asyncio.AbstractEventLoop) -> None:
        self.func, self.name, self.config, self.loop = func, name, config, loop
        self.queue: _deque[_Request] = _deque()
        self.running: asyncio.Task[None] | None = None
        self.running_requests: list[_Request] = []
        self.timer: asyncio.Handle | None = None
        self.timer_at = math.inf
        self.batches = self.items = self.max_size = self.rejected = self.cancelled = 0
        self.wait_total = self.wait_max = 0.0

    # ------------------------------------------------------------------------------ callers
    def enqueue(self, item: Any) -> _Request:
        """Queue a caller's item (or refuse it, ``Overloaded``) and arrange its dispatch."""
        queue = self.queue
        if len(queue) >= self.config.max_queue_size:
            self.rejected += 1
            raise Overloaded(
                f"{self.name}: overloaded, {len(queue)} items are already queued "
                f"(max_queue_size={self.config.max_queue_size}); retry later"
            )
        idle = not queue and self.running is None
        request = _Request(item, self.loop.create_future(), self.loop.time())
        queue.append(request)
        # A request that finds the batcher idle goes on the loop's next turn: the callers that
        # start in this same turn join it, and a lone request is not held for the timeout. With
        # a timer armed and room in the batch, the dispatch is arranged already (the timer is
        # for the oldest item, or for the next turn: never later than this item's deadline).
        if idle or self.timer is None or len(queue) >= self.config.max_batch_size:
            self._schedule(now=idle)
        return request

    def withdraw(self, request: _Request) -> None:
        """Its caller was cancelled: take an undispatched item out of the queue, and stop a batch
        that nobody waits for any more."""
        if not request.future.done() or request.future.cancelled():
            self.cancelled += 1
        elif request.future.exception() is not None:
            pass  # read, so that asyncio does not log it as never retrieved
        if not request.dispatched:
            self.queue.remove(request)
            self._schedule()
        elif (
            self.running is not None
            and request in self.running_requests
            and all(r.future.cancelled() for r in self.running_requests)
        ):
            self.running.cancel()  # nobody is left to take a result: stop computing in vain

    # ----------------------------------------------------------------------------- dispatch
    def _schedule(self, now: bool = False) -> None:
        """Arrange the next dispatch after a change of state (the policy is ``batch``'s)."""
        if self.running is not None or not self.queue:
            self._cancel_timer()
            return
        if len(self.queue) >= self.config.max_batch_size:
            self._cancel_timer()
            self._dispatch()
            return
        at = self.loop.time() if now else self.queue[0].queued_at + self.config.batch_wait_timeout_s
        if self.timer is not None and self.timer_at <= at:
            return
        self._cancel_timer()
        self.timer_at = at
        delay = at - self.loop.time()
        self.timer = self.loop.call_soon(self._fire) if delay <= 0 else self.loop.call_later(delay, self._fire)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer, self.timer_at = None, math.inf

    def _fire(self) -> None:
        self.timer, self.timer_at = None, math.inf
        if self.running is None and self.queue:
            self._dispatch()

    def _dispatch(self) -> None:
        size = min(len(self.queue), self.config.max_batch_size)
        requests = [self.queue.popleft() for _ in range(size)]
        now = _perf_counter()
        for r in requests:
            r.dispatched = True
            wait = now - r.called_at
            self.wait_total += wait
            self.wait_max = max(self.wait_max, wait)
        self.batches += 1
        self.items += size
        self.max_size = max(self.max_size, size)
        # A fresh context: the batch runs with the context variables' defaults (grad mode on),
        # not with whatever the caller that happened to trigger the dispatch had set.
        self.running_requests = requests
        task = self.loop.create_task(self._run(requests), context=contextvars.Context())
        self.running = task
        # However the task ends: a task cancelled before its first step (every caller gone at
        # once) never runs _run's ``finally``, and a batcher left "running" would never
        # dispatch again.
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        for r in self.running_requests if self.running is task else ():
            # ``submit`` cancels a batch only when its callers are all gone; a batch cancelled
            # from outside (the loop shutting down) takes its callers with it.
            if not r.future.done():
                r.future.cancel()
        self._finish(task)

    def _finish(self, task: asyncio.Task[None] | None) -> None:
        """The batch of ``task`` is over: the next one may be dispatched."""
        if task is not None and self.running is task:
            self.running, self.running_requests = None, []
            self._schedule()

    async def _run(self, requests: list[_Request]) -> None:
        try:
            results = await self.func([r.item for r in requests])
            if not isinstance(results, _Sequence) or isinstance(results, (str, bytes)):
                raise TypeError(
                    f"{self.name} must return a list with one result per item, "
                    f"got {type(results).__name__}"
                )
            if len(results) != len(requests):
                raise ValueError(
                    f"{self.name} returned {len(results)} results for a batch of {len(requests)} "
                    f"items: a batched function must return one result per item, in order"
                )
        except asyncio.CancelledError:
            for r in requests:
                r.future.cancel()
            raise
        except BaseException as error:
            for r in requests:
                if not r.future.done():
                    r.future.set_exception(error)
            if not isinstance(error, Exception):
                raise
        else:
            for r, result in zip(requests, results):
                if r.future.done():  # its caller was cancelled while the batch ran
                    continue
                if isinstance(result, BaseException):
                    r.future.set_exception(result)
                else:
                    r.future.set_result(result)
        finally:
            # Here rather than only in _ended (a loop turn later): a caller woken by its
            # result finds the batcher idle, and the next batch goes without a turn's delay.
            self._finish(asyncio.current_task())

    def statistics(self) -> BatchStatistics:
        return BatchStatistics(
            batches=self.batches,
            items=self.items,
            mean_batch_size=self.items / self.batches if self.batches else 0.0,
            max_batch_size=self.max_size,
            mean_queue_wait_s=self.wait_total / self.items if self.items else 0.0,
            max_queue_wait_s=self.wait_max,
            rejected=self.rejected,
            cancelled=self.cancelled,
            queued=len(self.queue),
            running=self.running is not None,
        )


_EMPTY = BatchStatistics(0, 0, 0.0, 0, 0.0, 0.0, 0, 0, 0, False)


@_dataclass(frozen=True)
class _Config:
    max_batch_size: int
    batch_wait_timeout_s: float
    max_queue_size: int


class _Slot:
    """Holds the batcher of one function or one instance, remade when the loop changes."""

    __slots__ = ("batcher",)

    def __init__(self) -> None:
        self.batcher: _Batcher | None = None

    def get(self, func: Callable[..., Any], name: str, config: _Config) -> _Batcher:
        loop = asyncio.get_running_loop()
        if self.batcher is None or self.batcher.loop is not loop:
            self.batcher = _Batcher(func, name, config, loop)
        return self.batcher

    async def submit(self, func: Callable[..., Any], name: str, config: _Config, item: Any) -> Any:
        """A caller's whole wait, in one coroutine: its item queued with this loop's batcher,
        its result awaited (the caller's own coroutine, ``f(item)``, is this one: each request's
        wake-up passes through one frame, not two)."""
        batcher = self.get(func, name, config)
        request = batcher.enqueue(item)
        try:
            return await request.future
        except asyncio.CancelledError:
            batcher.withdraw(request)
            raise

    def statistics(self) -> BatchStatistics:
        return _EMPTY if self.batcher is None else self.batcher.statistics()


class BatchedFunction(typing.Generic[_T, _R]):
    """What ``batch`` returns: ``await f(item)`` gives ``item``'s result; ``f.statistics()``."""

    def __init__(self, func: Callable[..., Awaitable[list[_R]]], config: _Config) -> None:
        functools.update_wrapper(self, func)
        self._func, self._config = func, config
        self._slot = _Slot()
        self._instances: dict[int, tuple[weakref.ref[Any], _Slot]] = {}

    def __call__(self, item: _T) -> Coroutine[Any, Any, _R]:
        return self._slot.submit(self._func, self._func.__qualname__, self._config, item)

    def statistics(self) -> BatchStatistics:
        """The batcher's counters (``BatchStatistics``; all zero before the first call)."""
        return self._slot.statistics()

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return _BoundBatchedMethod(self, instance, self._slot_of(instance))

    def _slot_of(self, instance: Any) -> _Slot:
        key = id(instance)
        entry = self._instances.get(key)
        if entry is not None and entry[0]() is instance:
            return entry[1]
        instances = self._instances

        def forget(_: Any, key: int = key) -> None:
            instances.pop(key, None)

        slot = _Slot()
        self._instances[key] = (weakref.ref(instance, forget), slot)
        return slot


class _BoundBatchedMethod:
    """A batched method bound to its instance: each instance batches its own calls."""

    __slots__ = ("_batched", "_instance", "_slot")

    def __init__(self, batched: BatchedFunction[Any, Any], instance: Any, slot: _Slot) -> None:
        self._batched, self._instance, self._slot = batched, instance, slot

    def __call__(self, item: Any) -> Coroutine[Any, Any, Any]:
        func = functools.partial(self._batched._func, self._instance)
        return self._slot.submit(func, self._batched._func.__qualname__, self._batched._config, item)

    def statistics(self) -> BatchStatistics:
        """This instance's batcher's counters (``BatchStatistics``)."""
        return self._slot.statistics()


@typing.overload
def batch(_func: Callable[..., Awaitable[list[_R]]], /) -> BatchedFunction[Any, _R]: ...
@typing.overload
def batch(
    _func: None = None, /, *, max_batch_size: int = 10, batch_wait_timeout_s: float = 0.0,
    max_queue_size: int = 1000,
) -> Callable[[Callable[..., Awaitable[list[_R]]]], BatchedFunction[Any, _R]]: ...
def batch(
    _func: Callable[..., Awaitable[list[_R]]] | None = None, /, *, max_batch_size: int = 10,
    batch_wait_timeout_s: float = 0.0, max_queue_size: int = 1000,
) -> Any:
    """Batch the concurrent calls of ``async def f(items: list[T]) -> list[R]`` (a function or
    a method): callers ``await f(item)`` with one item and get their own result. Usable bare,
    ``@batch``, or with arguments, ``@batch(max_batch_size=32)``. ``f`` must return one result
    per item, in order (a list or another sequence).

    One batcher per function, or per instance for a method, made on the running loop at the
    first call (a call on another loop makes a new one). Policy:

    - at most one batch runs at a time; items queue in call order, and a batch takes the oldest
      ``max_batch_size`` of them;
    - while no batch runs, a batch is dispatched as soon as ``max_batch_size`` items are queued,
      or once the oldest queued item has waited ``batch_wait_timeout_s`` (counted from its call,
      so time spent behind a running batch counts);
    - except that a call that finds the batcher idle (nothing queued, no batch running) is
      dispatched on the loop's next turn, with the calls made in the same turn, instead of
      waiting for the timeout: a lone request pays one loop turn, not the timeout.

    With the default timeout 0 the batches are what accumulates while the previous one runs.

    Isolation: if ``f`` raises, every caller of that batch gets the exception; to fail one item
    only, ``f`` returns an exception instance in that item's place, and only its caller gets it
    raised. A result list of the wrong length (or not a sequence) fails every caller of the
    batch with a ``ValueError`` (``TypeError``) saying so. A caller cancelled while queued is
    removed from the queue, so its item never reaches ``f``; a caller cancelled while its batch
    runs only loses its result: the batch runs on for the others, unless every caller of the
    batch is gone, and then the batch's task is cancelled (``f`` sees ``CancelledError``). ``f`` runs in a task of its own
    in a fresh context (context variables at their defaults: grad mode on).

    Backpressure: at most ``max_queue_size`` items wait (the running batch's items not
    counted); past that a call raises ``Overloaded`` at once. ``f.statistics()`` (or
    ``obj.method.statistics()``) returns a ``BatchStatistics``.
    """
    if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
        raise ValueError(f"max_batch_size must be an integer >= 1, got {max_batch_size!r}")
    if (
        isinstance(batch_wait_timeout_s, bool)
        or not isinstance(batch_wait_timeout_s, (int, float))
        or not 0 <= batch_wait_timeout_s < math.inf
    ):
        raise ValueError(f"batch_wait_timeout_s must be a finite number >= 0, got {batch_wait_timeout_s!r}")
    if isinstance(max_queue_size, bool) or not isinstance(max_queue_size, int) or max_queue_size < 1:
        raise ValueError(f"max_queue_size must be an integer >= 1, got {max_queue_size!r}")
    config = _Config(max_batch_size, float(batch_wait_timeout_s), max_queue_size)

    def decorate(func: Callable[..., Awaitable[list[_R]]]) -> BatchedFunction[Any, _R]:
        if not inspect.iscoroutinefunction(func):
            raise TypeError(f"batch needs an async def function, got {func!r}")
        return BatchedFunction(func, config)

    return decorate if _func is None else decorate(_func)
