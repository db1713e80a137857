"""Hooks: tensor hooks, retains-grad, node pre- and post-hooks, post-accumulate-grad hooks.

They live on the node they run at (a leaf's on its AccumulateGrad), in a NodeHooks that nodes
without hooks never allocate: the engine checks ``node._hooks is None`` and takes its fast path.
The storage (``NodeHooks``, ``RemovableHandle``, ``hooks_of``, ``add_hook``) is defined with the
node in ``aiograd._core._node`` and re-exported here; this module runs the hooks for the engine and
registers the tensor hooks. Hooks may be plain functions or ``async def``; the engine awaits what
they return when it is awaitable. Order at a node is PyTorch's (torch/csrc/autograd/engine.cpp,
``call_function``): tensor hooks, retains-grad, node pre-hooks, apply (for a leaf: accumulation,
then post-accumulate-grad hooks), node post-hooks. What a hook returns is checked as PyTorch
checks it (type, device, size, count), so a wrong gradient is an error, never silently summed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._format import legacy_type_name
from ._node import NodeHooks, RemovableHandle, add_hook, grad_accumulator, hooks_of
from ._tensor import Tensor

if TYPE_CHECKING:
    from ._types import GradHook, PostAccumulateGradHook

__all__ = ["RemovableHandle", "NodeHooks", "hooks_of", "add_hook"]


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _each(store: dict[int, Any]) -> Any:
    """The hooks in registration order, as they were when the node started running them: one
    removed by an earlier hook still runs this time, as PyTorch iterates a snapshot of its hook
    dict (``_call_hooks``, torch/csrc/autograd/python_hook.cpp; test_grad_fn_prehooks_remove_hooks)."""
    return list(store.values())


async def run_tensor_pre_hooks(hooks: NodeHooks, buffer: list[Any]) -> None:
    """Tensor hooks of each output slot, in order; a returned tensor replaces the grad. As in
    PyTorch, a hook also sees an undefined gradient (None), and may not replace it."""
    for output_nr, store in hooks.tensor_pre.items():
        for fn in _each(store):
            grad = buffer[output_nr]
            result = await _call(fn, grad)
            if result is not None:
                if grad is None:
                    raise RuntimeError("can't replace a None gradient with a non-None value")
                if not isinstance(result, Tensor):
                    raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
                _check_value(grad, result, fn)
                buffer[output_nr] = result


def _hook_name(fn: Any) -> str:
    return getattr(fn, "__name__", "<unknown>")


def _check_value(original: Tensor, result: Tensor, fn: Any) -> None:
    """A hook may replace a gradient only by one of the same type, device and size (PyTorch's
    ``check_variable_result``, torch/csrc/autograd/python_hook.cpp): anything else would be
    broadcast or cast into ``.grad`` silently."""
    if result.data.dtype != original.data.dtype or result._device is not original._device:
        raise RuntimeError(
            f"hook '{_hook_name(fn)}' has changed the type of value (was {legacy_type_name(original)} "
            f"got {legacy_type_name(result)})"
        )
    if result.data.shape != original.data.shape:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value")


def _checked_values(result: Any, originals: Any, fn: Any) -> list[Any]:
    """The gradients a node hook returned, checked against the ones it was given as PyTorch
    checks them (``_call_hooks``/``check_result``, torch/csrc/autograd/python_hook.cpp)."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(originals):
        raise RuntimeError(
            f"hook '{_hook_name(fn)}' has returned an incorrect number of values (got {len(result)}, "
            f"but expected {len(originals)})"
        )
    for original, value in zip(originals, result):
        if value is None:
            continue
        if original is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if not isinstance(value, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(value).__name__}'")
        _check_value(original, value, fn)
    return list(result)


def run_retains_grad(hooks: NodeHooks, grads: list[Any]) -> None:
    """Set ``.grad`` of retained non-leaves: a copy first, then out-of-place sums."""
    for output_nr, ref in hooks.retains_grad.items():
        tensor = ref()
        grad = grads[output_nr]
        if tensor is None or grad is None:
            continue
        if tensor._grad is None:
            tensor._grad = grad.clone()
        else:
            tensor._grad = tensor._grad + grad


async def run_pre_hooks(hooks: NodeHooks, buffer: list[Any]) -> list[Any]:
    """Node pre-hooks ``fn(grad_outputs)``, in order; a returned tuple replaces the gradients."""
    for fn in _each(hooks.pre):
        result = await _call(fn, tuple(buffer))
        if result is not None:
            buffer = _checked_values(result, buffer, fn)
    return buffer


async def run_post_hooks(hooks: NodeHooks, outputs: Any, inputs: list[Any]) -> Any:
    """Node post-hooks ``fn(grad_inputs, grad_outputs)``, in order; a returned tuple replaces
    ``grad_inputs``."""
    for fn in _each(hooks.post):
        result = await _call(fn, tuple(outputs), tuple(inputs))
        if result is not None:
            outputs = tuple(_checked_values(result, outputs, fn))
    return outputs


async def run_post_accumulate_hooks(hooks: NodeHooks, tensor: Tensor) -> None:
    for fn in _each(hooks.post_accumulate):
        if await _call(fn, tensor) is not None:
            raise RuntimeError("hooks should return None.")


# ------------------------------------------------------------------------------ Tensor methods
def register_hook(self: Tensor, hook: GradHook) -> RemovableHandle:
    """Call ``hook(grad)`` (sync or ``async def``) each time the gradient of this tensor is
    computed; a returned tensor replaces the gradient. Returns a handle with ``remove()``."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = self.grad_fn
    node, output_nr = (fn, self.output_nr) if fn is not None else (grad_accumulator(self), 0)
    return add_hook(hooks_of(node).tensor_pre.setdefault(output_nr, {}), hook)


def register_post_accumulate_grad_hook(self: Tensor, hook: PostAccumulateGradHook) -> RemovableHandle:
    """Call ``hook(tensor)`` (sync or ``async def``) after this leaf's ``.grad`` was updated.

    The hook must return None. Only leaves can have one.
    """
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return add_hook(hooks_of(grad_accumulator(self)).post_accumulate, hook)


TENSOR_METHODS = {
    "register_hook": register_hook,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
}
