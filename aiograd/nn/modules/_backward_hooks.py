"""``Module``'s backward hooks, as torch's (torch/nn/modules/module.py and torch/utils/hooks.py's
``BackwardHook``): full backward hooks ``hook(module, grad_input, grad_output)``, full backward
pre-hooks ``hook(module, grad_output)``, the deprecated ``register_backward_hook`` and the global
``register_module_*backward*_hook`` functions.

The mechanism is torch's: ``__call__`` passes the tensors among the forward's positional
arguments, then those among its outputs, through the identity custom Function
``BackwardHookFunction``; a post-hook on the node of the outputs' call records ``grad_output``
(and runs the pre-hooks, which may replace it), a post-hook on the node of the inputs' call runs
the hooks with ``grad_input`` (which they may replace). So the hooks run when the engine reaches
those nodes: after the tensor hooks of the module's outputs, before those of its inputs. The
forward thus receives, and the caller gets back, views of the tensors: modifying one in place is
torch's error ("Output 0 of BackwardHookFunction is a view and is being modified inplace...").
Hooks may also be ``async def``: the engine awaits them, as tensor hooks.
"""

from __future__ import annotations

import inspect
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..._base._grad_mode import grad_enabled
from ..._core._node import RemovableHandle
from ..._core._tensor import Tensor
from ...function import Function
from ...function._backward import _zeros

__all__ = [
    "BackwardHookFunction", "BackwardHook", "BackwardHooks", "has_backward_hooks", "backward_hooks_of",
    "finish_backward_hooks", "register_module_backward_hook", "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
]

_global_backward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_is_full_backward_hook: bool | None = None


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a backward hook common to all the modules (deprecated, as torch's: use
    :func:`register_module_full_backward_hook`). Returns a handle with ``remove()``."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a "
            "global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook = False
    return RemovableHandle.add(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a backward pre-hook common to all the modules: ``hook(module, grad_output)``, run
    before the modules' own (see ``Module.register_full_backward_pre_hook``)."""
    return RemovableHandle.add(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Register a full backward hook common to all the modules: ``hook(module, grad_input,
    grad_output)``, run before the modules' own (see ``Module.register_full_backward_hook``)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a "
            "global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook = True
    return RemovableHandle.add(_global_backward_hooks, hook)


class BackwardHookFunction(Function):
    """The identity on tensors (torch.nn.modules._functions's): its node is where the module's
    backward hooks see the gradients."""

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        ctx.mark_non_differentiable(*[arg for arg in args if not arg.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *args: Any) -> Any:
        return args


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


class BackwardHook:
    """torch.utils.hooks.BackwardHook: ties the gradients of one call's outputs to those of its
    inputs and calls the user's hooks with both."""

    def __init__(self, module: Any, user_hooks: list[Callable[..., Any]], user_pre_hooks: list[Callable[..., Any]]) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs: tuple[Any, ...] | None = None
        self.n_outputs = -1
        self.output_tensors_index: list[int] | None = None
        self.n_inputs = -1
        self.input_tensors_index: list[int] | None = None
        #: (shape, dtype, device) of each tensor input: torch shows zeros as the gradient of one
        #: that requires none (its custom Function keeps the materialized zeros; aiograd's drops them).
        self._input_meta: list[tuple[Any, ...]] = []

    @staticmethod
    def _pack_with_none(indices: list[int], values: Any, size: int) -> tuple[Any, ...]:
        res: list[Any] = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices: list[int], values: Any) -> tuple[Any, ...]:
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn: Any) -> None:
        async def hook(grad_input: tuple[Any, ...], _: Any) -> Any:
            if self.grad_outputs is None:
                # The gradient reached the inputs without passing through the outputs
                # (double backward, say): torch skips the hooks too.
                return None
            assert self.input_tensors_index is not None
            shown = tuple(
                _zeros(meta) if g is None and edge is None else g
                for g, edge, meta in zip(grad_input, grad_fn.next_edges, self._input_meta)
            )
            res = self._pack_with_none(self.input_tensors_index, shown, self.n_inputs)
            for user_hook in self.user_hooks:
                out = await _call(user_hook, self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(
                        "Backward hook returned an invalid number of grad_input, "
                        f"got {len(out)}, but expected {len(res)}"
                    )
                res = out
            self.grad_outputs = None
            new = self._unpack_none(self.input_tensors_index, res)
            # (a gradient for an input that requires none goes nowhere: torch drops it)
            return tuple(None if g is None else n for g, n in zip(grad_input, new))

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn: Callable[[Any], None], args: Any) -> tuple[Any, list[int] | None]:
        tensors_idx: list[int] = []
        tensors: list[Tensor] = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad
        if not (requires_grad and grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        if len(new_tensors) == 0:
            raise RuntimeError("Cannot set Module backward hook for a Module with no input Tensors.")
        grad_fns = [
            t.grad_fn for t in new_tensors
            if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"
        ]
        if len(grad_fns) == 0:
            raise RuntimeError(
                "Error while setting up backward hooks. Please open "
                "an issue with a code sample to reproduce this."
            )
        fn(grad_fns[0])
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        out = tuple(arg_list) if type(args) is tuple else type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args: Any) -> Any:
        """The forward's positional arguments, their tensors passed through the hook Function."""
        self._input_meta = [(a.data.shape, a.data.dtype, a._device) for a in args if isinstance(a, Tensor)]
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args: Any) -> Any:
        """The forward's result, its tensors (it or those of a tuple) passed through the hook
        Function, whose node records ``grad_output`` and runs the pre-hooks."""

        def fn(grad_fn: Any) -> None:
            async def hook(grad_input: tuple[Any, ...], grad_output: tuple[Any, ...]) -> Any:
                assert self.output_tensors_index is not None
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
                if self.user_pre_hooks:
                    expected_len = len(self.grad_outputs)
                    for user_pre_hook in self.user_pre_hooks:
                        hook_grad_outputs = await _call(user_pre_hook, self.module, self.grad_outputs)
                        if hook_grad_outputs is None:
                            continue
                        actual_len = len(hook_grad_outputs)
                        if actual_len != expected_len:
                            raise RuntimeError(
                                "Backward pre hook returned an invalid number of grad_output, "
                                f"got {actual_len}, but expected {expected_len}"
                            )
                        self.grad_outputs = hook_grad_outputs
                local_grad_outputs = self.grad_outputs
                # No input requires a gradient: the hooks run here, with Nones as grad_input.
                if self.input_tensors_index is None:
                    warnings.warn(
                        "Full backward hook is firing when gradients are computed "
                        "with respect to module outputs since no inputs require gradients. See "
                        "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook "
                        "for more details.",
                        stacklevel=2,
                    )
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = await _call(user_hook, self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                            raise RuntimeError(
                                "Backward hook for Modules where no input requires "
                                "gradient should always return None or None for all gradients."
                            )
                    self.grad_outputs = None
                if local_grad_outputs is None:
                    return None
                new = tuple(local_grad_outputs[i] for i in self.output_tensors_index)
                return tuple(None if g is None else n for g, n in zip(grad_input, new))

            grad_fn.register_hook(hook)

        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


class _WrappedHook:
    """A deprecated (non-full) backward hook as a post-hook of the output's node:
    ``hook(module, grad_input, grad_output)`` with that node's gradients."""

    def __init__(self, hook: Callable[..., Any], module: Any) -> None:
        self.hook = hook
        self.module = module
        self.__name__ = getattr(hook, "__name__", "hook")

    def __call__(self, *args: Any) -> Any:
        return self.hook(self.module, *args)


class BackwardHooks:
    """Backward (pre-)hook registration on a module."""

    _backward_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _backward_hooks: OrderedDict[int, Callable[..., Any]]
    _is_full_backward_hook: bool | None

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_output)`` each time the gradients w.r.t. the module's outputs
        are computed; a result other than None replaces ``grad_output`` (a tuple, None for
        non-tensor outputs). ``prepend``: before the hooks already registered (the global ones of
        ``register_module_full_backward_pre_hook`` still run first). The forward receives, and
        the caller gets, views of the tensors: modifying them in place is an error."""
        return RemovableHandle.add(self._backward_pre_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated in favor of :meth:`register_full_backward_hook`, as in torch: ``hook(module,
        grad_input, grad_output)`` runs as a post-hook of the node of the module's (first) output,
        with that node's gradients, which need not be the module's (FutureWarnings say when)."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a "
                "single Module. Please use only one of them."
            )
        self._is_full_backward_hook = False
        return RemovableHandle.add(self._backward_hooks, hook)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` each time the gradients w.r.t. the
        module's positional inputs are computed (w.r.t. its outputs when no input requires grad,
        with Nones as ``grad_input``); a returned tuple replaces ``grad_input``. Entries are None
        for non-tensor arguments. ``prepend``: before the hooks already registered (the global
        ones of ``register_module_full_backward_hook`` still run first)."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a "
                "single Module. Please use only one of them."
            )
        self._is_full_backward_hook = True
        return RemovableHandle.add(self._backward_hooks, hook, prepend)


def has_backward_hooks(module: Any) -> bool:
    """True if a call of ``module`` has backward (pre-)hooks to set up (its own or global)."""
    d = module.__dict__
    return bool(d.get("_backward_hooks") or d.get("_backward_pre_hooks") or _global_backward_hooks
                or _global_backward_pre_hooks)


def backward_hooks_of(module: Any) -> tuple[list[Callable[..., Any]], BackwardHook | None]:
    """torch's ``_get_backward_hooks``/``_get_backward_pre_hooks`` (global hooks first): the
    non-full hooks, and the BackwardHook of this call if there are full hooks or pre-hooks."""
    d = module.__dict__
    own = d.get("_backward_hooks") or {}
    own_pre = d.get("_backward_pre_hooks") or {}
    full: list[Callable[..., Any]] = []
    non_full: list[Callable[..., Any]] = []
    if _global_is_full_backward_hook is True:
        full += _global_backward_hooks.values()
    elif _global_is_full_backward_hook is False:
        non_full += _global_backward_hooks.values()
    if d.get("_is_full_backward_hook") is True:
        full += own.values()
    elif d.get("_is_full_backward_hook") is False:
        non_full += own.values()
    pre = [*_global_backward_pre_hooks.values(), *own_pre.values()]
    return non_full, (BackwardHook(module, full, pre) if full or pre else None)


def finish_backward_hooks(module: Any, bw_hook: BackwardHook | None, non_full: list[Callable[..., Any]],
                          args: Any, result: Any) -> Any:
    """After the forward hooks: the result's tensors through the hook Function, and the non-full
    hooks registered on the node of its first tensor (torch's ``_call_impl``)."""
    if bw_hook is not None:
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple of "
                f"Tensors but received {type(result)}",
                stacklevel=3,
            )
        result = bw_hook.setup_output_hook(result)
    if non_full:
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is not None:
            for hook in non_full:
                grad_fn.register_hook(_WrappedHook(hook, module))
            _maybe_warn_non_full_backward_hook(args, result, grad_fn)
    return result


def _maybe_warn_non_full_backward_hook(inputs: Any, result: Any, grad_fn: Any) -> None:
    """torch's FutureWarnings for the cases a non-full hook misses gradients in."""

    def warn(message: str) -> None:
        warnings.warn(message, FutureWarning, stacklevel=4)

    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            warn(
                "Using non-full backward hooks on a Module that does not return a "
                "single Tensor or a tuple of Tensors is deprecated and will be removed "
                "in future versions. This hook will be missing some of the grad_output. "
                "Please use register_full_backward_hook to get the documented behavior."
            )
            return
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            warn(
                "Using non-full backward hooks on a Module that does not take as input a "
                "single Tensor or a tuple of Tensors is deprecated and will be removed "
                "in future versions. This hook will be missing some of the grad_input. "
                "Please use register_full_backward_hook to get the documented behavior."
            )
            return
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warn(
            "Using a non-full backward hook when outputs are nested in python data structure "
            "is deprecated and will be removed in future versions. This hook will be missing "
            "some grad_output."
        )
    elif len(out_grad_fn) > 1:
        warn(
            "Using a non-full backward hook when outputs are generated by different autograd Nodes "
            "is deprecated and will be removed in future versions. This hook will be missing "
            "some grad_output. Please use register_full_backward_hook to get the documented behavior."
        )
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            warn(
                "Using a non-full backward hook when the forward contains multiple autograd Nodes "
                "is deprecated and will be removed in future versions. This hook will be missing "
                "some grad_input. Please use register_full_backward_hook to get the documented "
                "behavior."
            )
