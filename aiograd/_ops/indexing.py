"""Indexing: ``tensor[index]`` (basic and advanced), ``index_select`` and ``gather``.

An index is normalised once, in forward, to ``(basic, adv, accumulate)``: ``basic`` is a tuple of
ints, slices and None applied first (a numpy view), ``adv`` the advanced part (integer arrays and
boolean masks) applied to that view. Splitting it this way gives PyTorch's semantics where they
differ from numpy's: an int next to an index array selects first, so ``x[:, 0, :, [1, 2]]`` keeps
the array's dimension in place, as in PyTorch.

The backward scatters the gradient into zeros of the input's shape with the same index: plain
assignment when no position can repeat, ``np.add.at`` when integer arrays may repeat (duplicate
indices accumulate, as in PyTorch). The scatter is itself a recorded op whose backward indexes its
gradient again, so ``create_graph=True`` gives higher-order gradients.
"""

from __future__ import annotations

import operator
import re
import sys
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import is_device_array
from .._core._views import make_view
from ._registry import backward, op, variant
from ._util import Tensor, attach, common_device, edge_of, like, needs_grad, not_tensor, save, wrap
from .shape import _dim

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from .._core._types import Index

__all__ = ["getitem", "index_select", "gather"]

#: An index normalized as (basic, adv, accumulate): see the module docstring.
NormalIndex = tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, bool]

_FULL = slice(None)


# ------------------------------------------------------------------------------ backward nodes
def _batched(index: NormalIndex, nb: int) -> NormalIndex | None:
    """``index`` for gradients with ``nb`` leading batch dims (``is_grads_batched``): full slices
    in front. None where numpy would move the batch dim (index arrays that are not adjacent put
    their dims first): such a node runs once per sample."""
    basic, adv, accumulate = index
    pre = (_FULL,) * nb
    if adv is not None:
        at = [i for i, it in enumerate(adv) if isinstance(it, np.ndarray)]
        if at and at[-1] - at[0] + 1 != len(at):
            return None
        adv = pre + adv
    return (None if basic is None else pre + basic, adv, accumulate)


#: ``Node.batched`` of the indexing nodes, decided per node: whether its index keeps a batch dim
#: in front (else that node runs once per sample).
_KEEPS_BATCH = property(lambda self: _batched(self.index, 1) is not None)


@backward(batched=_KEEPS_BATCH)
def _ScatterBackward(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Backward of a scatter (the backward of an indexing op): index the gradient again."""
    return (_take(grads[0], _batched(self.index, batch) if batch else self.index, self.take_cls),)  # type: ignore[arg-type]


IndexPutBackward0 = variant("IndexPutBackward0", _ScatterBackward)


SliceBackwardBackward0 = variant("SliceBackwardBackward0", _ScatterBackward)


SelectBackwardBackward0 = variant("SelectBackwardBackward0", _ScatterBackward)


SqueezeBackward1 = variant("SqueezeBackward1", _ScatterBackward)


IndexAddBackward0 = variant("IndexAddBackward0", _ScatterBackward)


ScatterAddBackward0 = variant("ScatterAddBackward0", _ScatterBackward)


@backward(scatter_cls=IndexPutBackward0, batched=_KEEPS_BATCH, saved=("indices",), indices=None)
def _TakeBackward(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Backward of an indexing op: scatter (add) the gradient into zeros of the input's shape."""
    if self.indices is not None:  # freed after a backward: PyTorch's backward-twice error
        self.indices.unpack(self)
    if batch:
        g = grads[0]
        return (_scatter(g, g.data.shape[:batch] + self.shape, _batched(self.index, batch), type(self)),)  # type: ignore[arg-type]
    return (_scatter(grads[0], self.shape, self.index, type(self)),)


IndexBackward0 = variant("IndexBackward0", _TakeBackward, scatter_cls=IndexPutBackward0)


SliceBackward0 = variant("SliceBackward0", _TakeBackward, scatter_cls=SliceBackwardBackward0)


SelectBackward0 = variant("SelectBackward0", _TakeBackward, scatter_cls=SelectBackwardBackward0)


UnsqueezeBackward0 = variant("UnsqueezeBackward0", _TakeBackward, scatter_cls=SqueezeBackward1)


@backward(base=_TakeBackward)
def AliasBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (grads[0],)


IndexSelectBackward0 = variant("IndexSelectBackward0", _TakeBackward, scatter_cls=IndexAddBackward0)


GatherBackward0 = variant("GatherBackward0", _TakeBackward, scatter_cls=ScatterAddBackward0)


# ------------------------------------------------------------------------------ the two kernels
def _take(input: Tensor, index: NormalIndex, cls: type[_TakeBackward]) -> Tensor:
    """``input`` indexed by a normalised index, recorded as ``cls``."""
    basic, adv, _ = index
    data = input.data
    if adv is None:
        # A basic index is a view. numpy gives a scalar (a copy) for an int per dimension: the
        # Ellipsis makes it a 0-d view instead, as in PyTorch.
        data = data[basic]
        if isinstance(data, np.generic):  # (CuPy gives a 0-d view already)
            data = input.data[basic + (Ellipsis,)]
        out = make_view(input, data)
    else:
        if basic is not None:
            data = data[basic]
        out = like(data[adv], input)
    if needs_grad(input):
        node = attach(cls((edge_of(input),)), out)
        node.shape, node.index = input.data.shape, index
        arrays = [a for a in adv if isinstance(a, np.ndarray)] if adv is not None else ()
        if arrays:
            # PyTorch's IndexBackward0, IndexSelectBackward0 and GatherBackward0 save their index
            # tensors; one saved tensor of the index stands for them here.
            node.indices = save(wrap(arrays[0]))
    return out


def _scatter(grad: Tensor, shape: tuple[int, ...], index: NormalIndex, take_cls: type[_TakeBackward]) -> Tensor:
    """Zeros of ``shape`` with ``grad`` added at ``index`` (the adjoint of ``_take``)."""
    basic, adv, accumulate = index
    g = grad.data
    z = grad._device.xp.zeros(shape, dtype=g.dtype)
    if adv is None:
        z[basic if basic is not None else ()] = g
    else:
        view = z if basic is None else z[basic]  # ``basic`` ends in Ellipsis: always a view
        if accumulate:
            grad._device.xp.add.at(view, adv, g)
        else:
            view[adv] = g
    out = like(z, grad)
    if needs_grad(grad):
        node = attach(take_cls.scatter_cls((edge_of(grad),)), out)
        node.index, node.take_cls = index, take_cls
    return out


# ------------------------------------------------------------------------------ __getitem__
_INDEX_DTYPE_ERROR = "tensors used as indices must be long, int, byte or bool tensors"


def _host_index(arr: Any) -> np.ndarray[Any, Any]:
    """An index array on the host: the index machinery (masks, bounds, ``add.at``'s integer
    arrays, PyTorch's error messages) works on numpy arrays; a device (CuPy) index array is
    copied to the host here, and CuPy copies the normalized index back when it is applied."""
    return arr if isinstance(arr, np.ndarray) else arr.get()


def _item(item: Any) -> Any:
    """One index entry as an int, slice, None, Ellipsis or ndarray (bool or intp)."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, (bool, np.bool_)):
        return np.asarray(item, dtype=bool)
    if isinstance(item, (int, np.integer)):
        return int(item)
    if isinstance(item, Tensor):
        arr = _host_index(item.data)
    elif isinstance(item, np.ndarray) or is_device_array(item):
        arr = _host_index(item)
    elif isinstance(item, (list, tuple)):
        arr = np.asarray([x.data if isinstance(x, Tensor) else x for x in item])
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.intp)
    else:
        try:
            return operator.index(item)
        except TypeError:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                f"are valid tensor indices (got {type(item).__name__})"
            ) from None
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind in "iu":
        return int(arr) if arr.ndim == 0 else arr.astype(np.intp, copy=False)
    raise IndexError(_INDEX_DTYPE_ERROR)


def _basic_name(items: tuple[Any, ...], is_tuple: bool, shape: tuple[int, ...]) -> type[_TakeBackward]:
    """PyTorch's node for a basic index: the last view op its slicing applies."""
    if not is_tuple:
        item = items[0]
        if isinstance(item, slice):
            return SliceBackward0
        return AliasBackward0 if item is Ellipsis else SelectBackward0 if item is not None else UnsqueezeBackward0
    cls: type[_TakeBackward] = AliasBackward0
    n_consuming = sum(1 for it in items if it is not None and it is not Ellipsis)
    d = 0
    for it in items:
        if it is Ellipsis:
            d += len(shape) - n_consuming
        elif it is None:
            cls = UnsqueezeBackward0
        elif isinstance(it, slice):
            # PyTorch skips a slice whose start is 0 and step 1 as written, and whose stop is at
            # least the size (``-n:`` or ``:n`` of a dim of size n is still a slice)
            start, stop, step = it.start, it.stop, it.step
            if d < len(shape) and not (
                (start is None or start == 0) and (step is None or step == 1) and (stop is None or stop >= shape[d])
            ):
                cls = SliceBackward0
            d += 1
        else:
            cls = SelectBackward0
            d += 1
    return cls


def _check_masks(adv: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    """PyTorch's message for a boolean mask whose shape does not match the indexed dims."""
    consumed = sum(
        (it.ndim if it.dtype.kind == "b" else 1) if isinstance(it, np.ndarray) else 1
        for it in adv if it is not Ellipsis
    )
    d = 0
    for it in adv:
        if it is Ellipsis:
            d += max(len(shape) - consumed, 0)
            continue
        if isinstance(it, np.ndarray) and it.dtype.kind == "b":
            for j, size in enumerate(it.shape):
                if d + j < len(shape) and shape[d + j] != size:
                    raise IndexError(
                        f"The shape of the mask {list(it.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(shape)} at index {d + j}"
                    )
            d += it.ndim
        else:
            d += 1


_SEQUENCE_AS_TUPLE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or "
    "a different result"
)


def _warn_at_caller(message: str) -> None:
    """Warn at the first frame outside aiograd (getitem and setitem reach here by different
    depths)."""
    level = 2
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("aiograd"):
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _sequence_as_tuple(index: list[Any]) -> bool:
    """PyTorch's ``treatSequenceAsTuple`` (python_variable_indexing.cpp, numpy's old heuristic):
    a short list holding a tensor, a sequence, a slice, Ellipsis or None indexes several
    dimensions, as the tuple of its items would (``x[[[0, 4], [2, 2]]]`` is ``x[[0, 4], [2, 2]]``),
    with PyTorch 2.13's deprecation warning."""
    if len(index) >= 32:
        return False
    for obj in index:
        if obj is None or obj is Ellipsis or isinstance(obj, (Tensor, list, tuple, slice, np.ndarray)):
            _warn_at_caller(_SEQUENCE_AS_TUPLE_WARNING)
            return True
    return False


def _normalize(data: np.ndarray[Any, Any], index: Any) -> tuple[NormalIndex, type[_TakeBackward]]:
    kind = type(index)
    if kind is int:  # fast paths for the commonest indices
        return ((index,), None, False), SelectBackward0
    if kind is slice:
        return ((index,), None, False), SliceBackward0
    if kind is list and _sequence_as_tuple(index):
        index = tuple(index)
    is_tuple = isinstance(index, tuple)
    items = tuple(_item(it) for it in (index if is_tuple else (index,)))
    if not any(isinstance(it, np.ndarray) for it in items):
        return (items, None, False), _basic_name(items, is_tuple, data.shape)
    # Advanced: ints, slices and None go first (a view); arrays then index that view.
    basic: list[Any] = []
    adv: list[Any] = []
    for it in items:
        if isinstance(it, np.ndarray):
            basic.extend([_FULL] * (it.ndim if it.dtype.kind == "b" else 1))
            adv.append(it)
        elif isinstance(it, int):
            basic.append(it)
        else:
            basic.append(it)
            adv.append(it if it is Ellipsis else _FULL)
    trivial = all(it is Ellipsis or (isinstance(it, slice) and it == _FULL) for it in basic)
    basic_t = None
    view_shape = data.shape
    if not trivial:
        if not any(it is Ellipsis for it in basic):
            basic.append(Ellipsis)
        basic_t = tuple(basic)
        view_shape = data[basic_t].shape
    _check_masks(tuple(adv), view_shape)
    accumulate = any(isinstance(it, np.ndarray) and it.dtype.kind != "b" for it in adv)
    if accumulate:
        # np.add.at wants integer arrays: a mask is the same as its nonzero() arrays.
        expanded: list[Any] = []
        for it in adv:
            if isinstance(it, np.ndarray) and it.dtype.kind == "b" and it.ndim:
                expanded.extend(np.nonzero(it))
            else:
                expanded.append(it)
        adv = expanded
    return (basic_t, tuple(adv), accumulate), IndexBackward0


_TOO_MANY = re.compile(r"too many indices for array: array is \d+-dimensional, but \d+ were indexed")
_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")
_SHAPES = re.compile(r"\(([\d, ]*)\)")


def _torch_message(msg: str, ndim: int, index: Any) -> str:
    """numpy's IndexError messages in PyTorch's words."""
    if _TOO_MANY.search(msg):
        if ndim == 0:
            first = next(
                (it for it in (index if isinstance(index, tuple) else (index,))
                 if it is not None and it is not Ellipsis),
                None,
            )
            if isinstance(first, slice):
                return "slice() cannot be applied to a 0-dim tensor."
            return (
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        return f"too many indices for tensor of dimension {ndim}"
    m = _BOUNDS.search(msg)
    if m:
        return f"index {m[1]} is out of bounds for dimension {m[2]} with size {m[3]}"
    if msg.startswith("shape mismatch: indexing arrays could not be broadcast"):
        shapes = ", ".join(
            "[" + ", ".join(s for s in g.replace(" ", "").split(",") if s) + "]"
            for g in _SHAPES.findall(msg)
        )
        return f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
    return msg


def check_index_devices(input: Tensor, index: Any) -> None:
    """PyTorch's rule for index tensors: on the CPU or on the indexed tensor's device."""
    for item in index if isinstance(index, tuple) else (index,):
        if isinstance(item, Tensor) and item._device is not input._device and not item.is_cpu:
            raise RuntimeError(
                "indices should be either on cpu or on the same device as the indexed tensor "
                f"({input._device})"
            )


@op(IndexBackward0, SliceBackward0, SelectBackward0, UnsqueezeBackward0, AliasBackward0, top_level=False)
def getitem(input: Tensor, index: Index | tuple[Index, ...]) -> Tensor:
    """``input[index]``: ints, slices (any step), None, Ellipsis, boolean masks, integer arrays,
    lists or tensors, and tuples of them, with PyTorch's (= numpy's) semantics."""
    data = input.data
    if not isinstance(index, (int, slice)):  # only tensors in an index can be on a device
        check_index_devices(input, index)
    try:
        norm, cls = _normalize(data, index)
        return _take(input, norm, cls)
    except IndexError as e:
        msg = _torch_message(str(e), data.ndim, index)
        if msg == str(e):
            raise
        raise IndexError(msg) from None


# ------------------------------------------------------------------------------ index_select
def _index_array(index: Any) -> np.ndarray[Any, Any]:
    if isinstance(index, Tensor):
        arr = _host_index(index.data)
    else:
        arr = _host_index(index) if is_device_array(index) else np.asarray(index)
    if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(index, Tensor):
        arr = arr.astype(np.int64)
    return arr


def _out_of_range(data: Any, d: int, size: int, idx: np.ndarray[Any, Any]) -> None:
    """PyTorch's (CPU) error for an index out of range, which depends on the kernel: its check
    for an empty input and its kernel for dim 1 (of 2 or more dims) raise RuntimeErrors."""
    if data.ndim > 1 and (data.size == 0 or d == 1):
        if size == 0:
            raise RuntimeError("index_select(): self indexing axis dim should be positive")
        bad = int(idx[(idx < 0) | (idx >= size)][0])
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size}")
    raise IndexError("index out of range in self")


@op(IndexSelectBackward0)
def index_select(input: Tensor, dim: int, index: Tensor | Sequence[int] | NDArray[Any]) -> Tensor:
    """The entries of ``input`` at positions ``index`` (a vector of ints) along ``dim``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("index_select", input)
    common_device(input, index)
    idx = _index_array(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    data = input.data
    d = _dim(dim, data.ndim)
    size = data.shape[d] if data.ndim else 1
    idx = idx.reshape(-1).astype(np.intp, copy=False)
    if data.ndim == 0 and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)")
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        _out_of_range(data, d, size, idx)
    if data.ndim == 0:
        return _take(input, (None, (), False), IndexSelectBackward0)
    adv = (_FULL,) * d + (idx,)
    return _take(input, (None, adv, True), IndexSelectBackward0)


# ------------------------------------------------------------------------------ gather
@op(GatherBackward0)
def gather(input: Tensor, dim: int, index: Tensor | NDArray[Any], *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` for ``dim=0`` (and so on for other dims)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("gather", input)
    common_device(input, index)
    idx = _index_array(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    data = input.data
    ndim = data.ndim
    d = _dim(dim, ndim)
    if idx.ndim != ndim and not (idx.ndim <= 1 and ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if ndim == 0:
        return gather(input.reshape(1), 0, idx.reshape(-1)).reshape(idx.shape)
    for k in range(ndim):
        if k != d and idx.shape[k] > data.shape[k]:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(idx.shape)} to be no "
                f"larger than self {list(data.shape)} apart from dimension {d}"
            )
    size = data.shape[d]
    if idx.size:
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise RuntimeError(
                f"index {int(idx[bad].flat[0])} is out of bounds for dimension {d} with size {size}"
            )
    adv = tuple(
        idx.astype(np.intp, copy=False) if k == d
        else np.arange(idx.shape[k]).reshape((-1,) + (1,) * (ndim - 1 - k))
        for k in range(ndim)
    )
    return _take(input, (None, adv, True), GatherBackward0)


TENSOR_METHODS = {
    "__getitem__": getitem,
    "index_select": index_select,
    "gather": gather,
}
