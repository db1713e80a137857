"""``Module``'s forward hooks and ``__call__`` (torch/nn/modules/module.py's ``_call_impl``):
pre-hooks may replace the arguments, hooks the output, ``with_kwargs`` hooks see the keyword
arguments, ``always_call`` hooks run even when ``forward`` raises; removable handles. The
backward hooks' set-up around ``forward`` is ``_backward_hooks``'s."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..._core._node import RemovableHandle
from ._backward_hooks import backward_hooks_of, finish_backward_hooks, has_backward_hooks

__all__ = ["ForwardHooks"]


class ForwardHooks:
    """Forward (pre-)hook registration and the call that runs them around ``forward``."""

    _forward_pre_hooks: OrderedDict[int, Any]
    _forward_pre_hooks_with_kwargs: dict[int, bool]
    _forward_hooks: OrderedDict[int, Any]
    _forward_hooks_with_kwargs: dict[int, bool]
    _forward_hooks_always_called: dict[int, bool]
    forward: Callable[..., Any]

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Run ``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``) before
        ``forward``; a result other than None replaces the arguments."""
        handle = RemovableHandle.add(self._forward_pre_hooks, hook, prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return _Handle(handle, self._forward_pre_hooks_with_kwargs)

    def register_forward_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Run ``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) after ``forward``; a result other than None replaces the output.
        ``always_call``: run it even if ``forward`` raised."""
        handle = RemovableHandle.add(self._forward_hooks, hook, prepend)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return _Handle(handle, self._forward_hooks_with_kwargs, self._forward_hooks_always_called)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_hooks or self._forward_pre_hooks or has_backward_hooks(self)):
            return self.forward(*args, **kwargs)
        # (the backward hooks to use are those registered before the forward pre-hooks run)
        non_full_backward_hooks, bw_hook = backward_hooks_of(self)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                args_kwargs_result = hook(self, args, kwargs)
                if args_kwargs_result is not None:
                    if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                        args, kwargs = args_kwargs_result
                    else:
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple "
                            f"of (new_args, new_kwargs), but got {args_kwargs_result}."
                        )
            else:
                args_result = hook(self, args)
                if args_result is not None:
                    if not isinstance(args_result, tuple):
                        args_result = (args_result,)
                    args = args_result
        called: set[int] = set()
        try:
            if bw_hook is not None:
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    hook_result = hook(self, args, kwargs, result)
                else:
                    hook_result = hook(self, args, result)
                if hook_result is not None:
                    result = hook_result
            result = finish_backward_hooks(self, bw_hook, non_full_backward_hooks, args, result)
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:  # torch warns and re-raises the forward's error
                        pass
            raise
        return result


class _Handle(RemovableHandle):
    """A hook handle that also forgets the hook's flags (with_kwargs, always_call)."""

    __slots__ = ("_extra",)

    def __init__(self, handle: RemovableHandle, *extra: dict[int, Any]) -> None:
        self.id = handle.id
        self._store = handle._store
        self._extra = extra

    def remove(self) -> None:
        """Unregister the hook; removing twice is fine."""
        super().remove()
        for store in self._extra:
            store.pop(self.id, None)
