"""The implementation of ``aiograd.graph`` (see there): saved-tensor hook contexts, gradient
edges, multi-grad hooks, version bumps."""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple

from .._base._graph_context import current_graph_task, will_engine_execute_node
from .._devices._device import CPU
from . import _saved
from ._node import Node, RemovableHandle, grad_accumulator
from ._saved import saved_tensors_hooks
from ._tensor import Tensor

__all__ = [
    "GradientEdge",
    "Node",
    "disable_saved_tensors_hooks",
    "get_gradient_edge",
    "increment_version",
    "register_multi_grad_hook",
    "save_on_cpu",
    "saved_tensors_hooks",
]


# ------------------------------------------------------------------------------ saved tensors
class save_on_cpu(saved_tensors_hooks):
    """Context manager under which saved tensors are kept on the CPU and moved back to their
    device when backward needs them (``torch.autograd.graph.save_on_cpu``).

    A tensor already on the CPU is kept as it is (detached, no copy). One on another device
    (``cuda``, ``sim`` or ``simcuda``) is copied to the host when saved and copied
    back to its device on every unpack. ``pin_memory`` and ``device_type`` are accepted for
    PyTorch compatibility; aiograd has no pinned memory, so the copy is an ordinary one.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Tensor) -> tuple[Any, Tensor]:
            if tensor._device is CPU:
                return (CPU, tensor.detach())  # no move, and no reference to the tensor itself
            return (tensor._device, tensor.detach().cpu())

        def unpack_from_cpu(packed: tuple[Any, Tensor]) -> Tensor:
            device, tensor = packed
            return tensor if device is CPU else tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)
        self.pin_memory = pin_memory
        self.device_type = device_type


@contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Context manager under which saved-tensor hooks cannot be set: entering
    :class:`saved_tensors_hooks` (or anything built on it, such as ``save_on_cpu`` or the
    non-reentrant checkpoint) raises ``RuntimeError(error_message)``. As PyTorch, entering it
    while hooks are in effect raises that error at once; nested, the inner message applies."""
    previous = _saved.disable_hooks(error_message)
    try:
        yield
    finally:
        _saved.restore_hooks_enabled(previous)


# ------------------------------------------------------------------------------ multi-grad hook
class _MultiHandle(RemovableHandle):
    """The handle of a multi-grad hook: removes the hook of every tensor."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple[RemovableHandle, ...]) -> None:  # noqa: D107
        self.handles = handles

    def remove(self) -> None:
        """Unregister the hook from every tensor; removing twice is fine."""
        for handle in self.handles:
            handle.remove()


def _grad_fn_or_accumulator(tensor: Tensor) -> Node:
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    if tensor.requires_grad:
        return grad_accumulator(tensor)
    raise AssertionError("Expected gradient function to be set")


async def _discard_result(awaitable: Any) -> None:
    await awaitable


def _call_ignoring_result(fn: Callable[..., Any], arg: Any) -> Any:
    """Call a hook whose result means nothing; an ``async def`` hook's coroutine is handed to
    the engine to await (its result dropped too)."""
    result = fn(arg)
    return _discard_result(result) if inspect.isawaitable(result) else None


class _AllGrads:
    """A mode "all" hook's progress in one backward call."""

    __slots__ = ("grads", "expected", "arrived")

    def __init__(self, count: int, expected: set[int]) -> None:
        self.grads: list[Tensor | None] = [None] * count
        self.expected = expected
        self.arrived: set[int] = set()


def register_multi_grad_hook(
    tensors: Sequence[Tensor],
    fn: Callable[[Sequence[Tensor | None]], Any] | Callable[[Tensor], Any],
    *,
    mode: Literal["all", "any"] = "all",
) -> RemovableHandle:
    """Register a hook on the gradients of several tensors
    (``torch.autograd.graph.register_multi_grad_hook``).

    ``mode="all"``: in each backward call, ``fn(grads)`` is called once, after the gradient of
    every tensor that this call computes has been computed; ``grads`` holds one entry per tensor,
    None for those whose gradient the call does not compute (not in its graph, or pruned by
    ``grad()``/``inputs=``). ``mode="any"``: ``fn(grad)`` is called with the first gradient
    computed among the tensors, once per backward call. ``fn`` may be ``async def``; it should
    not modify its arguments, and what it returns is ignored.

    The state is kept per backward call (per GraphTask, held weakly), so backward calls in flight
    at once on one event loop each get their own call of ``fn``. Returns a handle whose
    ``remove()`` removes the hook from every tensor.

    Unlike PyTorch, "all" works under ``grad()`` with leaves among ``tensors`` (PyTorch refuses:
    "A leaf node was passed to _will_engine_execute_node but we are currently running
    autograd.grad()"), and a tensor whose node is the backward's first node counts as computed.
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    handles: tuple[RemovableHandle, ...]

    if mode == "all":
        all_fn: Callable[[Sequence[Tensor | None]], Any] = fn  # type: ignore[assignment]
        nodes = [_grad_fn_or_accumulator(t) for t in tensors]
        progress: weakref.WeakKeyDictionary[Any, _AllGrads] = weakref.WeakKeyDictionary()

        def hook_for(index: int) -> Callable[[Tensor], Any]:
            def hook(grad: Tensor) -> Any:
                graph_task = current_graph_task.get()
                if graph_task is None:
                    raise AssertionError("expected this hook to be called inside a backward call")
                with lock:
                    state = progress.get(graph_task)
                    if state is None:
                        # First gradient of this backward: which tensors will get one.
                        expected = {i for i, node in enumerate(nodes) if will_engine_execute_node(node)}
                        state = progress[graph_task] = _AllGrads(len(nodes), expected)
                    state.grads[index] = grad
                    state.arrived.add(index)
                    state.expected.add(index)  # the first node of a backward is in no edge
                    done = state.arrived >= state.expected
                    if done:
                        del progress[graph_task]
                if done:
                    return _call_ignoring_result(all_fn, state.grads)
                return None

            return hook

        handles = tuple(t.register_hook(hook_for(i)) for i, t in enumerate(tensors))
    else:
        any_fn: Callable[[Tensor], Any] = fn  # type: ignore[assignment]
        ran: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

        def first_only(grad: Tensor) -> Any:
            graph_task = current_graph_task.get()
            if graph_task is None:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                if graph_task in ran:
                    return None
                ran[graph_task] = True
            return _call_ignoring_result(any_fn, grad)

        handles = tuple(t.register_hook(first_only) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


# ------------------------------------------------------------------------------ edges, versions
class GradientEdge(NamedTuple):
    """Where a gradient is computed in the graph: ``node`` and which of its inputs
    (``output_nr``) (``torch.autograd.graph.GradientEdge``). ``ownership_token`` exists for
    PyTorch compatibility; aiograd's nodes keep their graph alive themselves, so it is None."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The gradient edge of ``tensor``: its ``grad_fn`` and output number, or for a leaf its
    AccumulateGrad node (created if needed) and 0 (``torch.autograd.graph.get_gradient_edge``)."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        )
    node = tensor.grad_fn if tensor.grad_fn is not None else grad_accumulator(tensor)
    # What PyTorch reads from node._input_metadata when the edge is differentiated as an output
    # (grad(edge, ...), backward(edge)): aiograd's nodes keep no such record, so it is kept here.
    _edge_metadata.setdefault(node, {})[tensor.output_nr] = (
        tensor.data.shape, tensor.data.dtype, tensor._device
    )
    return GradientEdge(node, tensor.output_nr)


#: Shape, dtype and device of the gradient each edge made by ``get_gradient_edge`` receives.
_edge_metadata: weakref.WeakKeyDictionary[Node, dict[int, tuple[Any, ...]]] = weakref.WeakKeyDictionary()


def edge_metadata(edge: GradientEdge) -> tuple[Any, ...]:
    """(shape, dtype, device) of the gradient that flows into ``edge``: recorded by
    ``get_gradient_edge``, or a custom Function's own record of its outputs."""
    meta = _edge_metadata.get(edge.node, {}).get(edge.output_nr)
    if meta is None:
        metas = getattr(edge.node, "_output_meta", None)
        if metas is not None and edge.output_nr < len(metas):
            meta = metas[edge.output_nr]
    if meta is None:
        raise RuntimeError(
            "aiograd cannot differentiate this GradientEdge as an output: make it with "
            "aiograd.graph.get_gradient_edge(tensor), which records the gradient's shape and dtype"
        )
    return meta


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Record that ``tensor`` (or each tensor of an iterable) was modified in place in a way
    autograd did not see (``torch.autograd.graph.increment_version``): a node that saved it then
    refuses to use it ("... has been modified by an inplace operation ..."). The counter is
    shared with the tensor's views. Bumping it more than once per change is harmless."""
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in tensors:
        if t._vc is None:
            t._vc = [1]
        else:
            t._vc[0] += 1
