"""``Optimizer``'s hooks, as torch.optim.Optimizer's: step pre-/post-hooks (per optimizer and
global), ``state_dict`` and ``load_state_dict`` pre-/post-hooks; each registration returns a
removable handle.

torch wraps each optimizer class's ``step`` (``profile_hook_step``); here ``__init_subclass__``
wraps the ``step`` and ``step_async`` that a class defines, a coroutine function by a coroutine
function. The hooks get ``(optimizer, args, kwargs)`` with ``args`` beginning with the optimizer,
as torch's; the global pre-hooks run before the optimizer's own, its own post-hooks before the
global ones. A step taken inside another hooked step of the same optimizer (``step_async``
calling ``step``) runs no hooks again: one ``step_async`` call runs each hook once. Hooks may be
``async def`` around ``step_async`` (and an async ``step``, LBFGS's).
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from itertools import chain
from typing import Any

from .._core._node import RemovableHandle

__all__ = ["OptimizerHooks", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()

#: The optimizers (by id) whose hooked step is running in this context (task).
_stepping: ContextVar[frozenset[int]] = ContextVar("aiograd_optimizer_stepping", default=frozenset())

_HOOK_DICTS = (
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a pre-hook common to all optimizers: ``hook(optimizer, args, kwargs) -> None or
    (new_args, new_kwargs)``, run before each optimizer's own."""
    return RemovableHandle.add(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a post-hook common to all optimizers: ``hook(optimizer, args, kwargs) -> None``,
    run after each optimizer's own."""
    return RemovableHandle.add(_global_optimizer_post_hooks, hook)


def _pre(func: Callable[..., Any], self: Any, args: Any, kwargs: Any, result: Any) -> tuple[Any, Any]:
    if result is not None:
        if isinstance(result, tuple) and len(result) == 2:
            return result
        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
    return args, kwargs


def _sync_result(result: Any) -> Any:
    """What a hook of a plain ``step`` returned: an awaitable cannot be awaited there."""
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # (never awaited: no "was never awaited" warning)
        raise TypeError("an async step hook needs the step awaited: use `await optimizer.step_async(...)`")
    return result


def _hooked(func: Callable[..., Any]) -> Callable[..., Any]:
    """torch's ``profile_hook_step``: the step pre-hooks, ``func``, the step post-hooks."""
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            self = args[0]
            outer = _stepping.get()
            if id(self) in outer:
                return await func(*args, **kwargs)
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if inspect.isawaitable(result):
                    result = await result
                args, kwargs = _pre(func, self, args, kwargs, result)
            token = _stepping.set(outer | {id(self)})
            try:
                out = await func(*args, **kwargs)
            finally:
                _stepping.reset(token)
            for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
                result = post_hook(self, args, kwargs)
                if inspect.isawaitable(result):
                    await result
            return out

        async_wrapper.hooked = True  # type: ignore[attr-defined]
        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        outer = _stepping.get()
        if id(self) in outer:
            return func(*args, **kwargs)
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            args, kwargs = _pre(func, self, args, kwargs, _sync_result(pre_hook(self, args, kwargs)))
        token = _stepping.set(outer | {id(self)})
        try:
            out = func(*args, **kwargs)
        finally:
            _stepping.reset(token)
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            _sync_result(post_hook(self, args, kwargs))
        return out

    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


class OptimizerHooks:
    """Hook registration, and the wrapping of each subclass's ``step``/``step_async``."""

    _optimizer_step_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _optimizer_step_post_hooks: OrderedDict[int, Callable[..., Any]]
    _optimizer_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _optimizer_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]]
    _optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("step", "step_async"):
            fn = cls.__dict__.get(name)
            if callable(fn) and not getattr(fn, "hooked", False):
                setattr(cls, name, _hooked(fn))

    def _init_hooks(self) -> None:
        """Give the optimizer its (empty) hook dicts, those it lacks (an unpickled one)."""
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` before each step (``args`` begins with the
        optimizer); a returned ``(new_args, new_kwargs)`` replaces the step's arguments."""
        return RemovableHandle.add(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Run ``hook(optimizer, args, kwargs)`` after each step; it returns None."""
        return RemovableHandle.add(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer)`` before ``state_dict()`` builds the dict; ``prepend``: before the
        hooks already registered."""
        return RemovableHandle.add(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict)`` after ``state_dict()`` built the dict; it may modify
        it in place or return a new one."""
        return RemovableHandle.add(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer, state_dict)`` (on a shallow copy of the dict given) before
        ``load_state_dict`` loads it; it may modify it in place or return the dict to load."""
        return RemovableHandle.add(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run ``hook(optimizer)`` after ``load_state_dict`` loaded the state."""
        return RemovableHandle.add(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _state_dict_pre_hooks(self) -> None:
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)

    def _state_dict_post_hooks(self, state_dict: dict[str, Any]) -> dict[str, Any]:
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    def _load_state_dict_pre_hooks(self, state_dict: dict[str, Any]) -> dict[str, Any]:
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    def _load_state_dict_post_hooks(self) -> None:
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)
