"""Grad mode: whether ops record the graph, and inference mode.

Both flags are ContextVars, so every asyncio task (and every thread) has its own mode: a
``no_grad`` in one request handler never leaks into another coroutine running on the same loop.

The context managers follow ``torch/autograd/grad_mode.py`` and ``torch/utils/_contextlib.py``:
``no_grad`` and ``enable_grad`` decorate with or without parentheses, ``inference_mode`` takes a
function in place of its ``mode``, ``set_grad_enabled(mode)`` takes effect when called, every
decorated call enters a fresh ``clone()``, and a decorated generator gets the mode entered around
each of its steps (``send``, ``throw`` and ``close`` alike) and the caller's mode between them.
aiograd adds ``async def`` functions and async generators: each call runs in its own copy of the
caller's context with the mode set, so the mode, and every change the body makes to it, holds
across its ``await``s and never reaches other tasks or the caller.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import warnings
from collections.abc import Callable, Generator
from typing import Any, Self, TypeVar, cast, overload

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled"]

_grad_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_grad_enabled", default=True)
_inference_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_inference_mode", default=False)
#: Fast read used by every op on the hot path.
grad_enabled = _grad_enabled.get

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """Return True if ops in the current context record the autograd graph."""
    return _grad_enabled.get()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (not inside a plain ``no_grad``), as in torch."""
    return _inference_enabled.get()


def _reset_grad_mode(tokens: list[contextvars.Token[bool]], prev: bool) -> None:
    """Undo the latest entry of a context manager whose entries left ``tokens``.

    One instance may be entered by several tasks at once (each has its own context): an exit
    resets the latest token made in its own context, the only ones it can reset. With none (a
    generator resumed by another task), grad mode goes back to ``prev`` as in torch.
    """
    for index in range(len(tokens) - 1, -1, -1):
        try:
            _grad_enabled.reset(tokens[index])
        except ValueError:  # made in another context
            continue
        del tokens[index]
        return
    _grad_enabled.set(prev)


class _DecoratorContextManager:
    """A context manager that is also a decorator (torch's ``_DecoratorContextManager``).

    Decorating a function makes every call enter a fresh ``self.clone()``; see the module
    docstring for generators, coroutines and async generators.
    """

    def __call__(self, orig_func: F) -> F:
        if inspect.isclass(orig_func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You should "
                "only decorate functions or methods. To preserve the current behavior of class "
                "decoration, you can directly decorate the `__init__` method and nothing else.",
                FutureWarning,
                stacklevel=2,
            )
            cls = orig_func
            return cast(F, _decorate(self.clone, lambda *args, **kwargs: cls(*args, **kwargs)))
        return cast(F, _decorate(self.clone, orig_func))

    def __enter__(self) -> None:
        raise NotImplementedError

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        raise NotImplementedError

    def clone(self) -> Self:
        """A fresh context manager of the same kind and mode (what each decorated call enters)."""
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """A decorator that also works without parentheses: ``@no_grad`` as well as ``@no_grad()``."""

    @overload
    def __new__(cls, orig_func: F) -> F: ...  # type: ignore[misc]

    @overload
    def __new__(cls, orig_func: None = None) -> Self: ...

    def __new__(cls, orig_func: F | None = None) -> Self | F:  # type: ignore[misc]
        if orig_func is None:
            instance = object.__new__(cls)
            instance._tokens = []
            return instance
        return cls()(orig_func)

    _tokens: list[contextvars.Token[bool]]
    prev: bool

    def _exit(self) -> None:
        tokens = self._tokens
        if tokens:
            try:  # the usual case: the latest entry, made in this context
                _grad_enabled.reset(tokens[-1])
                del tokens[-1]
                return
            except ValueError:
                pass
        _reset_grad_mode(tokens, self.prev)


class no_grad(_NoParamDecoratorContextManager):
    """Disable graph recording: ``with aiograd.no_grad(): ...``, ``@aiograd.no_grad()`` or
    ``@aiograd.no_grad``.

    Results of ops inside do not require grad, even when their inputs do.
    """

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _grad_enabled.get()
        self._tokens.append(_grad_enabled.set(False))

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self._exit()


class enable_grad(_NoParamDecoratorContextManager):
    """Enable graph recording inside a ``no_grad`` block; also a decorator, with or without
    parentheses."""

    prev = True

    def __enter__(self) -> None:
        self.prev = _grad_enabled.get()
        self._tokens.append(_grad_enabled.set(True))

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self._exit()


def argument_type_name(value: object) -> str:
    """The type name as CPython's ``tp_name`` shows it in torch's argument errors."""
    kind = type(value)
    return kind.__name__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__name__}"


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode to ``mode`` (a bool).

    As in torch it takes effect at once, when constructed: ``set_grad_enabled(False)`` called as a
    plain function switches recording off until switched back. Used as a context manager it
    restores, on exit, the mode from before it was constructed; used as a decorator it undoes its
    immediate effect and sets ``mode`` around each call of the function.
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not {argument_type_name(mode)}")
        self.prev = _grad_enabled.get()
        self.mode = mode
        _grad_enabled.set(mode)

    def __call__(self, orig_func: F) -> F:
        _grad_enabled.set(self.prev)
        return super().__call__(orig_func)

    def __enter__(self) -> None:
        _grad_enabled.set(self.mode)

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _grad_enabled.set(self.prev)

    def __repr__(self) -> str:
        return f"aiograd.set_grad_enabled(mode={self.mode})"

    def clone(self) -> Self:
        """A copy with the same mode; like torch's, constructing it sets the mode at once."""
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Inference mode: ``inference_mode()`` (or ``mode=True``) records no graph and makes
    ``is_inference_mode_enabled()`` true; ``inference_mode(False)`` enables grad and leaves
    inference mode, even inside ``no_grad``, as torch's does.

    ``@inference_mode``, ``@inference_mode()`` and ``inference_mode(fn)`` all decorate. numpy
    tensors have no view/version bookkeeping to skip, so apart from the flag it is ``no_grad``
    (aiograd has no inference tensors).
    """

    def __new__(cls, mode: bool = True) -> Self:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self._prev = True
        self._tokens: list[contextvars.Token[bool]] = []
        self._inference_tokens: list[contextvars.Token[bool]] = []

    def __enter__(self) -> None:
        self._prev = _grad_enabled.get()
        self._inference_tokens.append(_inference_enabled.set(self.mode))
        self._tokens.append(_grad_enabled.set(not self.mode))

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        grad_tokens, inference_tokens = self._tokens, self._inference_tokens
        entries = len(grad_tokens)
        _reset_grad_mode(grad_tokens, self._prev)
        if len(grad_tokens) < entries:  # an entry of this context: its inference token too
            for index in range(len(inference_tokens) - 1, -1, -1):
                try:
                    _inference_enabled.reset(inference_tokens[index])
                except ValueError:
                    continue
                del inference_tokens[index]
                break

    def clone(self) -> Self:
        """A copy with the same mode."""
        return self.__class__(self.mode)


# ----------------------------------------------------------------------------------- decorating
def _decorate(factory: Callable[[], Any], func: Any) -> Any:
    """Wrap ``func`` so that each call runs inside a fresh context manager from ``factory``."""
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(factory, func)
    if inspect.isasyncgenfunction(func):
        return _wrap_async_generator(factory, func)
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def run_coroutine(*args: Any, **kwargs: Any) -> Any:
            return await _InContext(func(*args, **kwargs), _context_entered(factory))

        return run_coroutine

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        with factory():
            return func(*args, **kwargs)

    return run


def _wrap_generator(factory: Callable[[], Any], func: Any) -> Any:
    """torch's ``_wrap_generator``: the mode is entered around every step of the generator,
    its ``close()`` included, and the caller's mode is back at each ``yield``."""

    @functools.wraps(func)
    def generator_context(*args: Any, **kwargs: Any) -> Any:
        gen = func(*args, **kwargs)
        try:
            with factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with factory():
                        gen.close()
                    raise
                except BaseException as exc:  # noqa: BLE001 - forwarded into the generator
                    with factory():
                        response = gen.throw(exc)
                else:
                    with factory():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


def _wrap_async_generator(factory: Callable[[], Any], func: Any) -> Any:
    """An async generator run in its own context with the mode set, one step at a time."""

    @functools.wraps(func)
    async def async_generator_context(*args: Any, **kwargs: Any) -> Any:
        context = _context_entered(factory)
        agen = func(*args, **kwargs)
        request: Any = None
        thrown: BaseException | None = None
        while True:
            step = agen.asend(request) if thrown is None else agen.athrow(thrown)
            try:
                response = await _InContext(step, context)
            except StopAsyncIteration:
                return
            try:
                request = yield response
                thrown = None
            except GeneratorExit:
                await _InContext(agen.aclose(), context)
                raise
            except BaseException as exc:  # noqa: BLE001 - forwarded into the generator
                thrown = exc

    return async_generator_context


def _context_entered(factory: Callable[[], Any]) -> contextvars.Context:
    """A copy of the current context with a fresh context manager from ``factory`` entered in it
    (constructed there too: ``set_grad_enabled`` acts on construction)."""
    context = contextvars.copy_context()
    context.run(lambda: factory().__enter__())
    return context


class _InContext:
    """Awaitable that runs another awaitable's steps inside ``context``, so its context variables
    (the grad mode among them) hold across its suspensions and stay out of the awaiting task."""

    __slots__ = ("_awaitable", "_context")

    def __init__(self, awaitable: Any, context: contextvars.Context) -> None:
        self._awaitable = awaitable
        self._context = context

    def __await__(self) -> Generator[Any, Any, Any]:
        return _step_in_context(self._awaitable.__await__(), self._context)


def _step_in_context(steps: Any, context: contextvars.Context) -> Generator[Any, Any, Any]:
    run = context.run
    request: Any = None
    thrown: BaseException | None = None
    while True:
        try:
            response = run(steps.send, request) if thrown is None else run(steps.throw, thrown)
        except StopIteration as stop:
            return stop.value
        try:
            request = yield response
            thrown = None
        except GeneratorExit:
            run(steps.close)
            raise
        except BaseException as exc:  # noqa: BLE001 - forwarded into the awaitable
            thrown = exc
