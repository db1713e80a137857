"""Hooks: tensor hooks, retains-grad, node pre- and post-hooks, post-accumulate-grad hooks.

They live on the node they run at (a leaf's on its AccumulateGrad), in a NodeHooks that nodes
without hooks never allocate: the engine checks ``node._hooks is None`` and takes its fast path.
Hooks may be plain functions or ``async def``; the engine awaits what they return when it is
awaitable. Order at a node is PyTorch's: tensor hooks, retains-grad, node pre-hooks, apply, node
post-hooks (pytorch-semantics.md, section H).
"""

from __future__ import annotations

import inspect
import itertools
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._node import Node
    from ._tensor import Tensor

__all__ = ["RemovableHandle"]

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*`` call; ``remove()`` takes effect at once, even while a
    backward is running (a hook removed by an earlier hook of the same node does not run)."""

    __slots__ = ("id", "_store")

    def __init__(self, store: dict[int, Any]) -> None:
        self.id = next(_handle_ids)
        self._store = store

    def remove(self) -> None:
        """Unregister the hook; removing twice is fine."""
        self._store.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class NodeHooks:
    """Everything that runs around one node's ``apply``."""

    __slots__ = ("tensor_pre", "retains_grad", "pre", "post", "post_accumulate")

    def __init__(self) -> None:
        #: output_nr -> {handle id: fn(grad) -> Tensor | None}
        self.tensor_pre: dict[int, dict[int, Callable[..., Any]]] = {}
        #: output_nr -> weak reference to the non-leaf tensor that retains its grad.
        self.retains_grad: dict[int, weakref.ref[Any]] = {}
        #: {handle id: fn(grad_outputs) -> tuple | None}
        self.pre: dict[int, Callable[..., Any]] = {}
        #: {handle id: fn(grad_inputs, grad_outputs) -> tuple | None}
        self.post: dict[int, Callable[..., Any]] = {}
        #: {handle id: fn(tensor) -> None}, AccumulateGrad only
        self.post_accumulate: dict[int, Callable[..., Any]] = {}


def hooks_of(node: Node) -> NodeHooks:
    hooks = node._hooks
    if hooks is None:
        hooks = node._hooks = NodeHooks()
    return hooks


def add_hook(store: dict[int, Any], fn: Callable[..., Any]) -> RemovableHandle:
    if not callable(fn):
        raise TypeError(f"hook must be callable, but got {type(fn).__name__}")
    handle = RemovableHandle(store)
    store[handle.id] = fn
    return handle


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _each(store: dict[int, Any]) -> Any:
    """The hooks in registration order, skipping any removed while earlier ones ran."""
    for hook_id, fn in list(store.items()):
        if hook_id in store:
            yield fn


async def run_tensor_pre_hooks(hooks: NodeHooks, buffer: list[Any]) -> None:
    """Tensor hooks of each output slot, in order; a returned tensor replaces the grad."""
    for output_nr, store in hooks.tensor_pre.items():
        for fn in _each(store):
            grad = buffer[output_nr]
            if grad is None:
                break
            result = await _call(fn, grad)
            if result is not None:
                buffer[output_nr] = _checked_hook_result(result, grad)


def _checked_hook_result(result: Any, grad: Tensor) -> Tensor:
    from ._tensor import Tensor

    if not isinstance(result, Tensor):
        raise TypeError(f"hook returned {type(result).__name__}, expected a Tensor or None")
    if result.data.shape != grad.data.shape:
        raise RuntimeError(
            f"hook 'hook' has changed the size of value: expected {list(grad.data.shape)} but got "
            f"{list(result.data.shape)}"
        )
    if result.data.dtype != grad.data.dtype:
        raise RuntimeError(
            f"hook 'hook' has changed the type of value (was {grad.data.dtype} got {result.data.dtype})"
        )
    return result


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
    for fn in _each(hooks.pre):
        result = await _call(fn, tuple(buffer))
        if result is not None:
            buffer = list(result)
    return buffer


async def run_post_hooks(hooks: NodeHooks, outputs: Any, inputs: list[Any]) -> Any:
    for fn in _each(hooks.post):
        result = await _call(fn, tuple(outputs), tuple(inputs))
        if result is not None:
            outputs = tuple(result)
    return outputs


async def run_post_accumulate_hooks(hooks: NodeHooks, tensor: Tensor) -> None:
    for fn in _each(hooks.post_accumulate):
        if await _call(fn, tensor) is not None:
            raise RuntimeError("hooks should return None.")


# ------------------------------------------------------------------------------ Tensor methods
def register_hook(self: Tensor, hook: Callable[[Tensor], Any]) -> RemovableHandle:
    """Call ``hook(grad)`` (sync or ``async def``) each time the gradient of this tensor is
    computed; a returned tensor replaces the gradient. Returns a handle with ``remove()``."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    from ._node import grad_accumulator

    fn = self.grad_fn
    node, output_nr = (fn, self.output_nr) if fn is not None else (grad_accumulator(self), 0)
    return add_hook(hooks_of(node).tensor_pre.setdefault(output_nr, {}), hook)


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable[[Tensor], Any]) -> RemovableHandle:
    """Call ``hook(tensor)`` (sync or ``async def``) after this leaf's ``.grad`` was updated.

    The hook must return None. Only leaves can have one.
    """
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    from ._node import grad_accumulator

    return add_hook(hooks_of(grad_accumulator(self)).post_accumulate, hook)


TENSOR_METHODS = {
    "register_hook": register_hook,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
}
