"""Graph recording: Nodes, edges, AccumulateGrad and GraphRoot.

A Node is the backward of one forward op. Its ``next_edges`` hold one ``(node, input_nr)`` pair
(or None) per forward input: where the gradient for that input goes. ``apply`` takes the list of
gradients for the node's forward outputs and returns one gradient (or None) per next edge.

A node also carries its hooks (``NodeHooks``, created only for a node that gets one); running them
is ``aiograd._core._hooks``'s job. The few tensor ops this module needs (``sum_to_size``, ``to``,
``clone``, ``+``) it calls as Tensor methods, which ``aiograd._api._tensor_methods`` binds: this layer
imports nothing from the ops.
"""

from __future__ import annotations

import itertools
import keyword
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from .._base._cost import elementwise_cost
from .._base._grad_mode import grad_enabled
from .._devices._device import stream_blocks_open, thread_streams
from ._anomaly import anomaly_state, record_creation
from ._saved import FREED, SavedTensor
from ._tensor import Tensor

Edge = tuple["Node", int]

_wrap = Tensor._wrap


# ---------------------------------------------------------------------------------------------
# Hook storage: what a node carries; the engine runs the hooks (aiograd/_core/_hooks.py).

_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*`` call; ``remove()`` takes effect at once, even while a
    backward is running (as in PyTorch, a hook removed by an earlier hook of the same node
    still runs that once: the node runs a snapshot of its hooks)."""

    __slots__ = ("id", "_store")

    def __init__(self, store: dict[int, Any]) -> None:
        self.id: int = next(_handle_ids)
        self._store = store

    @classmethod
    def add(cls, store: dict[int, Any], hook: Any, prepend: bool = False) -> RemovableHandle:
        """Put ``hook`` in ``store`` (``{handle id: hook}``; an OrderedDict where ``prepend``
        puts it first), last by default; its handle removes it."""
        handle = cls(store)
        store[handle.id] = hook
        if prepend:
            store.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]  (an OrderedDict)
        return handle

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
    """The node's hooks, created on first use (a node without hooks has ``_hooks`` None)."""
    hooks = node._hooks
    if hooks is None:
        hooks = node._hooks = NodeHooks()
    return hooks


def mark_async(node: Node) -> None:
    """Declare that ``node.apply`` returns an awaitable; its (possibly empty) hook table sends
    it down the engine's slow path, which awaits it."""
    node.is_async = True
    hooks_of(node)


def add_hook(store: dict[int, Any], fn: Callable[..., Any]) -> RemovableHandle:
    """Register ``fn`` in one of a NodeHooks' stores; returns its handle."""
    if not callable(fn):
        raise TypeError(f"hook must be callable, but got {type(fn).__name__}")
    return RemovableHandle.add(store, fn)

# Ops created later run first in backward; AccumulateGrad runs as soon as it is ready.
_sequence = itertools.count()
_next_sequence_nr = _sequence.__next__
MAX_SEQUENCE_NR = sys.maxsize


class Node:
    """The backward function of one recorded op."""

    __slots__ = (
        "next_edges", "sequence_nr", "topological_nr", "_metadata", "_hooks", "_forward_streams",
        "__weakref__",
    )

    #: Number of gradients the node receives (its forward op's outputs).
    num_inputs = 1
    #: True for nodes whose ``cost`` is the default (proportional to their gradients' size); set
    #: for every subclass, so the engine can rule small ones out without calling ``cost``.
    cost_scales_with_grads: bool = True
    #: True for nodes whose backward passes the gradient on, at most copying it (a view's
    #: reshape or transpose, a clone's): not worth a thread round trip to overlap other work,
    #: so the engine offloads one only past the stall bound (a huge copy) and does not count it
    #: as work another node could overlap.
    light: ClassVar[bool] = False
    #: True when ``apply`` returns an awaitable (a custom Function with ``async def backward``):
    #: the engine awaits it. Set it with ``mark_async``, which also gives the node a hook table:
    #: the engine's fast path tests only ``_hooks`` to send a node to the slow path.
    is_async = False
    #: True for nodes whose ``apply`` runs even when every gradient it receives is undefined
    #: (None): a custom Function's backward does (PyTorch materializes zeros for it); every other
    #: node is skipped by the engine and passes undefined gradients on.
    runs_on_undefined = False
    #: True if ``apply(grads, batch)`` takes ``batch`` leading batch dims; else it runs per sample.
    batched: ClassVar[bool] = False
    #: Names of SavedTensor attributes that ``release_variables`` frees.
    _saved: tuple[str, ...] = ()

    def __init__(self, next_edges: tuple[Edge | None, ...]) -> None:
        self.next_edges: tuple[Edge | None, ...] = next_edges
        self.sequence_nr: int = _next_sequence_nr()
        topo = 0
        for edge in next_edges:
            if edge is not None:
                nr = edge[0].topological_nr
                if nr >= topo:
                    topo = nr + 1
        self.topological_nr: int = topo
        self._metadata: dict[str, Any] | None = None
        self._hooks: Any = None
        if stream_blocks_open[0]:
            # Made inside ``use_stream``: its backward is launched on that stream (read by the
            # engine with getattr, so nodes made outside any block store nothing).
            self._forward_streams: dict[Any, Any] | None = thread_streams.current
        if anomaly_state()[0]:
            record_creation(self)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.cost_scales_with_grads = cls.cost is Node.cost
        names = cls.__dict__.get("_saved")
        inherited = cls.release_variables
        if names and (inherited is Node.release_variables or getattr(inherited, "unrolled", False)):
            # (not where the class or a base defines its own: that one stays)
            release = _unrolled_release(names)
            if release is not None:
                cls.release_variables = release  # type: ignore[method-assign]

    def name(self) -> str:
        """The node's name as PyTorch spells it, e.g. ``"MulBackward0"``."""
        return type(self).__name__

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """One ``(node, input_nr)`` per forward input, ``(None, 0)`` where no gradient flows."""
        return tuple((None, 0) if e is None else e for e in self.next_edges)

    @property
    def metadata(self) -> dict[str, Any]:
        """A dict for the user's own annotations, created on first use."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def apply(self, grads: list[Tensor | None]) -> Sequence[Tensor | None]:
        """Map the gradients of the op's outputs to gradients of its inputs."""
        raise NotImplementedError

    def cost(self, grads: list[Tensor | None]) -> float:
        """Estimated nanoseconds of numpy work in ``apply(grads)``; the engine offloads a node
        to its executor when this reaches the offload threshold (see ``aiograd._base._cost``)."""
        return elementwise_cost(grads)

    def register_prehook(self, fn: Any) -> Any:
        """Call ``fn(grad_outputs)`` before the node runs (only if it runs); a returned tuple
        replaces the gradients. ``fn`` may be ``async def``. Returns a removable handle."""
        return add_hook(hooks_of(self).pre, fn)

    def register_hook(self, fn: Any) -> Any:
        """Call ``fn(grad_inputs, grad_outputs)`` after the node ran; a returned tuple replaces
        ``grad_inputs``. ``fn`` may be ``async def``. Returns a removable handle."""
        return add_hook(hooks_of(self).post, fn)

    def _hook_table(self) -> NodeHooks:
        """This node's hooks, created on first use (for ``Tensor.retain_grad``, which cannot
        import this module: ``_tensor`` lies below it)."""
        return hooks_of(self)

    def release_variables(self) -> None:
        """Free the saved tensors; unpacking them afterwards raises the backward-twice error."""
        for name in self._saved:
            if isinstance(getattr(self, name), SavedTensor):
                setattr(self, name, FREED)

    def __call__(self, *grads: Tensor | None) -> Any:
        """Run the node's formula on ``grads`` (one per output of its op, None for undefined),
        as PyTorch's ``Node.__call__``: the input gradients, a tensor when there is one."""
        if len(grads) != self.num_inputs:
            raise TypeError(f"expected {self.num_inputs} arguments, got {len(grads)} instead")
        buffer = list(grads)
        # all undefined: nothing to compute, as in the engine
        out = (None,) * len(self.next_edges) if undefined_only(self, buffer) else self.apply(buffer)
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


def _unrolled_release(names: tuple[str, ...]) -> Callable[[Node], None] | None:
    """``Node.release_variables`` for a class whose ``_saved`` is ``names``, with the loop
    unrolled (one attribute read and test per name, no getattr/setattr calls): the engine calls
    it for most nodes of a backward. A node that set its own ``_saved`` gets the generic loop.
    None when a name is not an identifier."""
    if not all(isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return None
    lines = ["def release_variables(self):", "    if self._saved is not NAMES:", "        return generic(self)"]
    for name in names:
        lines.append(f"    if isinstance(self.{name}, SavedTensor):")
        lines.append(f"        self.{name} = FREED")
    namespace: dict[str, Any] = {
        "NAMES": names, "generic": Node.release_variables, "SavedTensor": SavedTensor, "FREED": FREED,
    }
    code = compile("\n".join(lines), f"<release_variables of {', '.join(names)}>", "exec")
    exec(code, namespace)  # noqa: S102 - built from identifiers only
    release = namespace["release_variables"]
    release.unrolled = True
    release.__doc__ = Node.release_variables.__doc__
    return release  # type: ignore[no-any-return]


def undefined_only(node: Node, grads: list[Tensor | None]) -> bool:
    """True if every gradient ``node`` received is undefined (None) and it is a node that then
    has nothing to compute: its inputs' gradients are all undefined too, without calling it (a
    formula need not handle None). PyTorch's generated nodes behave so; a custom Function's
    backward still runs, on materialized zeros or on the Nones (``runs_on_undefined``)."""
    if node.runs_on_undefined:
        return False
    for grad in grads:
        if grad is not None:
            return False
    return True


class GraphRoot(Node):
    """Starts a backward with several roots: hands each root its gradient."""

    __slots__ = ("grads",)
    num_inputs = 0
    # Its InputBuffer is ``[None]`` (it receives nothing; one slot spares the engine a length
    # test on every node's buffer), so it says it runs on undefined gradients.
    runs_on_undefined = True
    batched = True  # (the root gradients are the batch)

    def __init__(self, edges: tuple[Edge, ...], grads: list[Tensor]) -> None:
        super().__init__(edges)
        self.grads = grads

    def apply(self, grads: list[Tensor | None], batch: int = 0) -> Sequence[Tensor | None]:
        return self.grads

    def cost(self, grads: list[Tensor | None]) -> float:
        return 0.0  # it only hands out the root gradients


class AccumulateGrad(Node):
    """Sink of a leaf: adds the gradient it receives into ``leaf.grad``.

    One per leaf for the leaf's whole life, shared by every graph that reaches it. The leaf holds
    it strongly and it holds the leaf weakly (PyTorch has it the other way round): in C++ making
    a new accumulator for every graph is free, in Python it would cost each parameter a few
    microseconds per training step. No cycle either way; a graph whose leaf is gone accumulates
    nothing, since nothing could read that ``.grad``. The lock makes concurrent backward calls
    from several threads add up exactly.
    """

    __slots__ = ("_variable", "_lock")

    def __init__(self, variable: Tensor) -> None:
        super().__init__(())
        self.sequence_nr = MAX_SEQUENCE_NR
        self._variable = weakref.ref(variable)
        self._lock = threading.Lock()

    def cost(self, grads: list[Tensor | None]) -> float:
        # One memory-bound add (or none): never worth a thread round trip, and .grad updates
        # stay on the loop.
        return 0.0

    @property
    def variable(self) -> Tensor | None:
        """The leaf this node accumulates into (None once the leaf is gone)."""
        return self._variable()

    def apply(self, grads: list[Tensor | None]) -> Sequence[Tensor | None]:
        if grads[0] is None:
            return ()
        variable = self._variable()
        if variable is None:
            return ()
        if variable.grad_fn is not None:
            raise RuntimeError("leaf variable has been moved into the graph interior")
        if not variable._requires_grad:
            return ()
        with self._lock:
            _accumulate_into_grad(variable, grads)
        return ()


def _slot_refs(slots: list[Any], i: int) -> int:
    return sys.getrefcount(slots[i])


def _data_refs(tensor: Tensor) -> int:
    return sys.getrefcount(tensor.data)


def _base_refs(data: Any) -> int:
    return sys.getrefcount(data.base)


def _calibrate() -> tuple[int, int, int]:
    # The refcounts a sole owner sees depend on the interpreter; measure them through the very
    # functions that test them, instead of hard-coding numbers.
    probe = [_wrap(np.zeros(1))]
    view = np.zeros((1, 2)).T  # a view whose base only the view refers to
    return _slot_refs(probe, 0), _data_refs(probe[0]), _base_refs(view)


_SOLE_SLOT = -1
_SOLE_DATA = -1
_SOLE_BASE = -1


def owns(slots: list[Any], i: int) -> bool:
    """True if ``slots[i]`` is a tensor that nothing but this list refers to, and whose array
    nothing else refers to either, so it may be modified in place (PyTorch's use_count == 1).

    The array may be a view that spans the whole of a base nothing else refers to (a gradient
    computed transposed and transposed back, as ``linear``'s weight gradient is): that is the
    same memory with one owner, as PyTorch steals a tensor whatever its storage's history."""
    global _SOLE_SLOT, _SOLE_DATA, _SOLE_BASE
    if _SOLE_SLOT < 0:
        _SOLE_SLOT, _SOLE_DATA, _SOLE_BASE = _calibrate()
    # Count references before binding any local to the tensor or its array.
    if _slot_refs(slots, i) != _SOLE_SLOT or _data_refs(slots[i]) != _SOLE_DATA:
        return False
    data = slots[i].data
    if not (data.flags.writeable and data.flags.c_contiguous):
        return False
    base = data.base
    if base is None:
        return True
    del base  # (a local reference would count)
    return (
        type(data.base) is np.ndarray
        and _base_refs(data) == _SOLE_BASE
        and data.base.nbytes == data.nbytes
    )


def _accumulate_into_grad(variable: Tensor, grads: list[Tensor | None]) -> None:
    """PyTorch's AccumulateGrad rules (torch/csrc/autograd/functions/accumulate_grad.h): the
    first gradient is stolen when nothing else holds it (copied otherwise, cloned under grad
    mode), later ones are added in place unless grad mode is on."""
    first = grads[0]
    assert first is not None
    if (
        first.data.dtype != variable.data.dtype
        or first.data.shape != variable.data.shape
        or first._device is not variable._device
    ):
        grads[0] = _conform(first, variable)
    del first  # a local reference would make the buffer look shared to ``owns``
    old = variable._grad
    if old is None:
        if grad_enabled():
            variable._grad = grads[0].clone()  # type: ignore[union-attr]
        elif owns(grads, 0):
            variable._grad = _wrap(grads[0].data)  # type: ignore[union-attr]  (stolen)
        else:
            variable._grad = _wrap(grads[0].data.copy())  # type: ignore[union-attr]
        grad = variable._grad
        if grad._device is not variable._device:  # a non-CPU leaf (the wrap made a CPU tensor)
            grad._device = variable._device
    elif not grad_enabled() and old.data.flags.writeable and old.data.shape == variable.data.shape:
        # In place keeps the .grad object (and its array) that the user may hold.
        old.data += grads[0].data  # type: ignore[union-attr]
        if old._vc is not None:
            old._vc[0] += 1
    else:
        variable._grad = old + grads[0]


def _conform(grad: Tensor, like: Tensor) -> Tensor:
    """Cast a gradient to its input's dtype, sum away broadcast dimensions, and bring it to its
    input's device: as PyTorch's validate_outputs, a 0-dim gradient is moved there, any other
    on the wrong device is an error."""
    if grad.data.shape != like.data.shape:
        grad = grad.sum_to_size(like.data.shape)  # type: ignore[attr-defined]
    if grad.data.dtype != like.data.dtype:
        grad = grad.to(like.data.dtype)
    if grad._device is not like._device:
        if grad.data.ndim:
            raise RuntimeError(
                f"invalid gradient at index 0 - expected device {like._device} but got {grad._device}"
            )
        grad = grad.to(like._device)  # type: ignore[attr-defined]
    return grad


# ---------------------------------------------------------------------------------------------
# Recording helpers used by the ops.


_accumulator_creation = threading.Lock()


def grad_accumulator(tensor: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, created on first use and kept for the leaf's life."""
    acc = tensor._accumulator
    if acc is None:
        # Graphs built in several threads at once must still share one accumulator (and its
        # lock) per leaf; the lock is taken only to create one.
        with _accumulator_creation:
            acc = tensor._accumulator
            if acc is None:
                acc = tensor._accumulator = AccumulateGrad(tensor)
    return acc


def edge_of(tensor: Any) -> Edge | None:
    """Where the gradient for ``tensor`` goes, or None if it needs none."""
    fn = getattr(tensor, "grad_fn", None)
    if fn is not None:
        return (fn, tensor.output_nr)
    if getattr(tensor, "_requires_grad", False):
        if tensor._edgeless:
            return None
        return (grad_accumulator(tensor), 0)
    return None


def save(tensor: Tensor, is_output: bool = False) -> SavedTensor:
    """Save ``tensor`` for backward (see SavedTensor)."""
    return SavedTensor(tensor, is_output)
