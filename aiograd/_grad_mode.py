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
from typing import Any, Self, TypeVar, overload

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled"]

_grad_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_grad_enabled", default=True)
_inference_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("aiograd_inference_mode", default=False)
#: The ``with`` blocks open in this context, innermost last, each with the modes to restore. Kept
#: per context (not on the instance) so that one instance entered by several tasks at once pairs
#: every exit with its own task's entry.
_open_blocks: contextvars.ContextVar[tuple[tuple[object, bool, bool], ...]] = contextvars.ContextVar(
    "aiograd_open_grad_mode_blocks", default=()
)

#: Fast read used by every op on the hot path.
grad_enabled = _grad_enabled.get

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """Return True if ops in the current context record the autograd graph."""
    return _grad_enabled.get()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` (not inside a plain ``no_grad``), as in torch."""
    return _inference_enabled.get()


def _enter_block(owner: object, grad: bool, inference: bool | None = None) -> None:
    """Set the modes for ``owner``'s block, remembering this context's previous ones."""
    _open_blocks.set((*_open_blocks.get(), (owner, _grad_enabled.get(), _inference_enabled.get())))
    _grad_enabled.set(grad)
    if inference is not None:
        _inference_enabled.set(inference)


def _exit_block(owner: object, restore_inference: bool = False) -> None:
    """Restore the modes from before ``owner``'s innermost open block in this context.

    A block entered in another context (a generator resumed by another task) has no entry here:
    then, as in torch, the grad mode goes back to the one ``owner`` saw on entering."""
    blocks = _open_blocks.get()
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index][0] is owner:
            _, grad, inference = blocks[index]
            _open_blocks.set(blocks[:index] + blocks[index + 1 :])
            break
    else:
        grad = getattr(owner, "prev", _grad_enabled.get())
        inference = _inference_enabled.get()
    _grad_enabled.set(grad)
    if restore_inference:
        _inference_enabled.set(inference)


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
            return _decorate(self.clone, lambda *args, **kwargs: cls(*args, **kwargs))  # type: ignore[return-value]
        return _decorate(self.clone, orig_func)

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
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable graph recording: ``with aiograd.no_grad(): ...``, ``@aiograd.no_grad()`` or
    ``@aiograd.no_grad``.

    Results of ops inside do not require grad, even when their inputs do.
    """

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = _grad_enabled.get()
        _enter_block(self, False)

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _exit_block(self)


class enable_grad(_NoParamDecoratorContextManager):
    """Enable graph recording inside a ``no_grad`` block; also a decorator, with or without
    parentheses."""

    def __enter__(self) -> None:
        self.prev = _grad_enabled.get()
        _enter_block(self, True)

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _exit_block(self)


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
        return cls()(mode)  # type: ignore[no-any-return]

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        _enter_block(self, not self.mode, self.mode)

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        _exit_block(self, restore_inference=True)

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
