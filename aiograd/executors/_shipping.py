"""Shipping a node's math to another process: what travels, and what runs there.

A node cannot travel as itself: its ``next_edges`` lead to the rest of the graph, its saved
tensors to their version counters and grad_fns, its hooks to the user's closures. What travels
is a ``Shipment``: the node's class by name (the other process imports aiograd and looks it up),
its own attributes with every saved tensor replaced by its array, the incoming gradients'
arrays, and which of its outputs the running backward needs (``should_compute``, which reads the
GraphTask's ``exec_info``, answers on this side). There the node is rebuilt with stand-in edges
(None for an output nobody needs), run under no-grad, and its gradients come back as arrays.

``pack`` returns None for a node that cannot travel, which then runs here (see ``DaskExecutor``):
a class that is not one of aiograd's op nodes (custom Functions, checkpoints, CopySlices), a
backward that records a graph (``create_graph``), a saved tensor packed by saved-tensor hooks (its
unpack hook must run here, when the node unpacks it), or one that raises when unpacked (freed,
modified in place: running it here raises PyTorch's error, as it would have without shipping).

The arrays (incoming gradients, the node's tensors, saved or not) travel beside the shipment,
which refers to them by index, so that an executor can send each one as it likes (inline, or as
a reference to data already on the other side) before ``run_shipped`` gets them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .._base._grad_mode import grad_enabled, no_grad
from .._base._graph_context import current_graph_task, should_compute
from .._core._node import AccumulateGrad, GraphRoot, Node
from .._core._saved import SavedTensor
from .._core._tensor import Tensor
from .._devices._device import CPU

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ArrayRef", "ClassRef", "Packed", "Shipment", "node_class", "pack", "run_shipped", "shippable"]

_wrap = Tensor._wrap

#: The modules whose nodes may travel: aiograd's own ops (whose classes every process with
#: aiograd defines, under the same names).
_OP_MODULES = ("aiograd._ops.", "aiograd.nn.", "aiograd._core._views")


@dataclasses.dataclass(frozen=True)
class ArrayRef:
    """Where a saved tensor (or a tensor attribute) was: the index of its array in the
    shipment's arrays; ``saved`` says whether it is rebuilt as a SavedTensor or a Tensor."""

    index: int
    saved: bool


@dataclasses.dataclass(frozen=True)
class ClassRef:
    """A node class among a node's attributes (a partner node a formula records), by name."""

    module: str
    name: str


class Shipment(NamedTuple):
    """Everything a node's ``apply`` needs, without the graph around it."""

    #: The node's class: (module, name), looked up by ``node_class``.
    node: tuple[str, str]
    #: Its name (``MmBackward0``), for messages and Dask's task keys.
    name: str
    #: Its attributes, tensors replaced by ``ArrayRef``.
    state: dict[str, Any]
    #: One per output of its forward op: the index of the incoming gradient's array among the
    #: arrays (as ``ArrayRef``'s), or None for an undefined gradient.
    grads: tuple[int | None, ...]
    #: One per next edge: whether the backward needs that gradient.
    needed: tuple[bool, ...]


class Packed(NamedTuple):
    """``pack``'s result: the shipment, the arrays it refers to by index (the incoming
    gradients first, then the node's tensors; sent beside it, so that an executor may send each
    inline or as data already on the other side), and for each array the leaf tensor it belongs
    to (a parameter or an input, which other backward calls will save again: worth keeping on
    the other side), or None."""

    shipment: Shipment
    arrays: list[np.ndarray]
    leaves: list[Tensor | None]


# ------------------------------------------------------------------------------ the classes
_by_name: dict[tuple[str, str], type[Node]] = {}
_names: dict[type[Node], tuple[str, str] | None] = {}
_EXCLUDED: frozenset[str] = frozenset({"CopySlices"})  # holds another node (``fn``)


def _walk_classes() -> None:
    """Index every op node class by (module, name); a name two classes share is shipped by
    neither (the other side could not tell them apart)."""
    import aiograd.nn  # noqa: F401 - its nodes are defined on import

    seen: dict[tuple[str, str], list[type[Node]]] = {}
    stack = list(Node.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        key = (cls.__module__, cls.__qualname__)
        if cls.__module__.startswith(_OP_MODULES) and cls.__name__ not in _EXCLUDED:
            seen.setdefault(key, []).append(cls)
    for key, classes in seen.items():
        if len(set(classes)) == 1:
            _by_name[key] = classes[0]


def node_class(key: tuple[str, str]) -> type[Node]:
    """The op node class named ``key`` in this process."""
    if not _by_name:
        _walk_classes()
    try:
        return _by_name[key]
    except KeyError:
        raise LookupError(f"no aiograd op node {key[0]}.{key[1]} in this process") from None


def shippable(cls: type[Node]) -> tuple[str, str] | None:
    """``cls``'s name if its nodes may travel, else None."""
    try:
        return _names[cls]
    except KeyError:
        pass
    if not _by_name:
        _walk_classes()
    key = (cls.__module__, cls.__qualname__)
    name = _names[cls] = key if _by_name.get(key) is cls else None
    return name


# ------------------------------------------------------------------------------ this side
class _Unshippable(Exception):
    """Raised while packing a node that must run here."""


def _pack_value(value: Any, arrays: list[np.ndarray], leaves: list[Tensor | None]) -> Any:
    if isinstance(value, SavedTensor):
        if type(value) is not SavedTensor:  # hooked, freed, an in-place view's output
            raise _Unshippable
        tensor = value.tensor
        if tensor is not None and tensor._detached_inplace and tensor.grad_fn is None:
            raise _Unshippable  # its unpack raises: let it, here
        if value.version_counter[0] != value.version:
            raise _Unshippable
        data = value.data if tensor is None else tensor.data
        if type(data) is not np.ndarray:
            raise _Unshippable  # on a device: its math stays there
        arrays.append(data)
        leaves.append(tensor if tensor is not None and tensor.grad_fn is None else None)
        return ArrayRef(len(arrays) - 1, True)
    if isinstance(value, Tensor):
        if type(value.data) is not np.ndarray:
            raise _Unshippable
        arrays.append(value.data)
        leaves.append(value if value.grad_fn is None else None)
        return ArrayRef(len(arrays) - 1, False)
    if isinstance(value, Node):
        raise _Unshippable  # another node: the graph would travel with it
    if isinstance(value, type) and issubclass(value, Node):
        key = shippable(value)
        if key is None:
            raise _Unshippable
        return ClassRef(*key)
    if type(value) is tuple:
        return tuple(_pack_value(v, arrays, leaves) for v in value)
    if type(value) is list:
        return [_pack_value(v, arrays, leaves) for v in value]
    if type(value) is dict:
        return {k: _pack_value(v, arrays, leaves) for k, v in value.items()}
    return value


def pack(node: Node, buffer: list[Any]) -> Packed | None:
    """The shipment that runs ``node.apply(buffer)`` elsewhere, or None if it must run here.
    Called on the engine's loop, in the GraphTask's context (for ``should_compute``)."""
    cls = type(node)
    if cls is AccumulateGrad or cls is GraphRoot or node._hooks is not None or grad_enabled():
        return None  # .grad lives here; hooks run here; create_graph records a graph here
    key = shippable(cls)
    if key is None:
        return None
    arrays: list[np.ndarray] = []
    leaves: list[Tensor | None] = []
    grads: list[int | None] = []
    for g in buffer:
        if g is None:
            grads.append(None)
        elif type(g.data) is np.ndarray and g._device is CPU:
            grads.append(len(arrays))
            arrays.append(g.data)
            leaves.append(None)
        else:
            return None
    try:
        state = {k: _pack_value(v, arrays, leaves) for k, v in vars(node).items()}
    except _Unshippable:
        return None
    needed = tuple(should_compute(edge) for edge in node.next_edges)
    return Packed(Shipment(key, node.name(), state, tuple(grads), needed), arrays, leaves)


def unpack_result(outputs: Sequence[np.ndarray | None]) -> tuple[Tensor | None, ...]:
    """The gradients a shipped node sent back, as tensors on this side."""
    return tuple(None if a is None else _wrap(a) for a in outputs)


# ------------------------------------------------------------------------------ the other side
#: Stands in, on the other side, for every node a needed gradient goes to (a formula only tests
#: its edges against None); made on first use.
_ELSEWHERE: Node | None = None


def _restore_value(value: Any, arrays: Sequence[np.ndarray]) -> Any:
    if type(value) is ArrayRef:
        tensor = _wrap(arrays[value.index])
        if not value.saved:
            return tensor
        saved = object.__new__(SavedTensor)
        saved.tensor = tensor
        saved.version_counter = [0]
        saved.version = 0
        return saved
    if type(value) is ClassRef:
        return node_class((value.module, value.name))
    if type(value) is tuple:
        return tuple(_restore_value(v, arrays) for v in value)
    if type(value) is list:
        return [_restore_value(v, arrays) for v in value]
    if type(value) is dict:
        return {k: _restore_value(v, arrays) for k, v in value.items()}
    return value


def rebuild(shipment: Shipment, arrays: Sequence[np.ndarray]) -> Node:
    """The node of ``shipment``, on this side: its attributes, and stand-in edges."""
    global _ELSEWHERE
    if _ELSEWHERE is None:
        _ELSEWHERE = Node(())
    cls = node_class(shipment.node)
    node = object.__new__(cls)
    node.next_edges = tuple((_ELSEWHERE, 0) if want else None for want in shipment.needed)
    node.sequence_nr = 0
    node.topological_nr = 0
    node._metadata = None
    node._hooks = None
    for name, value in shipment.state.items():
        setattr(node, name, _restore_value(value, arrays))
    return node


def run_shipped(shipment: Shipment, *arrays: np.ndarray) -> tuple[np.ndarray | None, ...]:
    """Run a shipped node (in the other process): its input gradients, as arrays. ``arrays``
    are the shipment's arrays as they arrived (each either inline or fetched by the executor)."""
    node = rebuild(shipment, arrays)
    grads = [None if i is None else _wrap(arrays[i]) for i in shipment.grads]
    # No GraphTask here, even in a worker that shares this process (Dask's threads, a test's
    # loopback): the stand-in edges already say what is needed.
    token = current_graph_task.set(None)
    try:
        with no_grad():
            outputs = node.apply(grads)
    finally:
        current_graph_task.reset(token)
    return tuple(None if out is None else np.asarray(out.data) for out in outputs)
