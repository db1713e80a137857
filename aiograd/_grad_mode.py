"""Grad mode: whether ops record the graph.

Held in a ContextVar, so every asyncio task (and every thread) has its own mode: a ``no_grad`` in
one request handler never leaks into another coroutine running on the same loop.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled"]

_grad_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_grad_enabled", default=True)

#: Fast read used by every op on the hot path.
grad_enabled = _grad_enabled.get

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """Return True if ops in the current context record the autograd graph."""
    return _grad_enabled.get()


class _GradModeBase:
    """Context manager and decorator that sets grad mode for its block.

    As a decorator it works on plain functions, ``async def`` coroutine functions and generator
    functions; coroutines and generators keep their own mode across ``await``/``yield`` and give
    the caller's mode back every time they suspend.
    """

    _mode: bool

    def __init__(self) -> None:
        self._tokens: list[contextvars.Token[bool]] = []

    def __enter__(self) -> None:
        self._tokens.append(_grad_enabled.set(self._mode))

    def __exit__(self, *exc: object) -> None:
        _grad_enabled.reset(self._tokens.pop())

    def _fresh(self) -> _GradModeBase:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone._tokens = []
        return clone

    def __call__(self, fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_coroutine(*args: Any, **kwargs: Any) -> Any:
                return await _Stepped(fn(*args, **kwargs), self)

            return run_coroutine  # type: ignore[return-value]
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def run_generator(*args: Any, **kwargs: Any) -> Any:
                return (yield from _step_with_mode(fn(*args, **kwargs), self))

            return run_generator  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]


class _Stepped:
    """Awaitable that runs a coroutine with the decorator's mode set only while it runs."""

    def __init__(self, coro: Any, mode: _GradModeBase) -> None:
        self._coro = coro
        self._mode = mode

    def __await__(self) -> Any:
        return _step_with_mode(self._coro, self._mode)


def _step_with_mode(gen: Any, mode: _GradModeBase) -> Any:
    """Step a generator or coroutine by hand, setting ``mode`` around each step, so that the
    caller's mode is back whenever it is suspended (other code of the task runs meanwhile)."""
    send_value: Any = None
    throw: BaseException | None = None
    while True:
        with mode._fresh():
            try:
                item = gen.send(send_value) if throw is None else gen.throw(throw)
            except StopIteration as stop:
                return stop.value
        try:
            send_value = yield item
            throw = None
        except GeneratorExit:
            gen.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - forwarded into the generator
            throw = exc


class no_grad(_GradModeBase):
    """Disable graph recording: ``with aiograd.no_grad(): ...`` or ``@aiograd.no_grad()``."""

    _mode = False


class enable_grad(_GradModeBase):
    """Enable graph recording inside a ``no_grad`` block; also a decorator."""

    _mode = True


class set_grad_enabled(_GradModeBase):
    """Set grad mode to ``mode``.

    Like torch, it takes effect at once when called as a function (``set_grad_enabled(False)``),
    and restores the previous mode when used as a context manager.
    """

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._mode = bool(mode)
        self._prev = _grad_enabled.get()
        _grad_enabled.set(self._mode)

    def __enter__(self) -> None:
        # The constructor already applied the mode; remember what to restore.
        self._tokens.append(_grad_enabled.set(self._mode))

    def __exit__(self, *exc: object) -> None:
        _grad_enabled.reset(self._tokens.pop())
        _grad_enabled.set(self._prev)

    def __call__(self, fn: F) -> F:
        # Used as a decorator, the constructor's immediate effect must not outlive the decoration.
        _grad_enabled.set(self._prev)
        return super().__call__(fn)

    def _fresh(self) -> _GradModeBase:
        clone = object.__new__(no_grad if not self._mode else enable_grad)
        clone._tokens = []
        return clone


class inference_mode(_GradModeBase):
    """``no_grad`` under PyTorch's other name (``inference_mode(False)`` enables grad).

    numpy tensors have no view/version bookkeeping to skip, so this is exactly ``no_grad``.
    """

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self._mode = not mode


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (and ``no_grad``): no graph is recorded."""
    return not _grad_enabled.get()
