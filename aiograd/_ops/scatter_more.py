"""More scatter ops: take, index_fill, index_copy, index_put, masked_scatter (with their in-place
forms, recorded as ``rearrange.in_place`` records PyTorch's in-place ops), slice_scatter,
select_scatter and diagonal_scatter.

The backward formulas are PyTorch's (tools/autograd/derivatives.yaml), written with aiograd ops
so that ``create_graph=True`` differentiates them again:

* ``take`` (``TakeBackward0``): the gradient put (added) at the flat indices of zeros.
* ``index_fill`` (``IndexFillBackward0``; ``IndexFillBackward1`` for a tensor value): the
  gradient with the filled slices zeroed; the value gets the sum of the gradient at the
  (distinct) indices.
* ``index_copy`` (``IndexCopyBackward0``): the gradient with the copied slices zeroed, and
  ``grad.index_select(dim, index)``.
* ``index_put`` (``IndexPutBackward0``): the gradient (with the written entries zeroed unless
  ``accumulate``), and ``grad[indices]`` summed to the values' shape.
* ``masked_scatter`` (``MaskedScatterBackward0``): the gradient zeroed at the mask, and the
  gradient at the mask, in order, padded with zeros to the source's size.
* ``slice_scatter``, ``select_scatter``, ``diagonal_scatter``: the gradient with the region
  zeroed (the same op, writing zeros), and the region of the gradient.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name, type_name
from ._registry import backward, op
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    infer_size,
    like,
    needs_grad,
    not_tensor,
    save,
)
from .indexing import _index_array, getitem, index_select
from .joining import _as_dtype
from .padding import pad
from .pointwise import masked_fill
from .rearrange import _diagonal_of, diagonal, in_place, select
from .scatter import masked_select
from .shape import _dim, reduce_grad, reshape

__all__ = [
    "take", "index_fill", "index_copy", "index_put", "masked_scatter", "slice_scatter", "select_scatter",
    "diagonal_scatter", "index_fill_", "index_copy_", "index_put_", "masked_scatter_",
]


def _wants(node: Any, i: int) -> bool:
    return node.next_edges[i] is not None


# ------------------------------------------------------------------------------ take
@backward(saved=("indices",))
def TakeBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    idx = self.indices.unpack(self)
    zeros = like(grads[0]._device.xp.zeros(int(np.prod(self.shape, dtype=np.int64)), dtype=grads[0].data.dtype), grads[0])
    return (reshape(index_put(zeros, (idx.reshape(-1),), reshape(grads[0], (-1,)), accumulate=True), self.shape),)


@op(TakeBackward0)
def take(input: Tensor, index: Tensor) -> Tensor:
    """The entries of the flattened ``input`` at ``index`` (negative ones count from the end),
    in ``index``'s shape."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("take", input)
    common_device(input, index)
    idx = _index_array(index)
    if idx.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {scalar_type_name(idx.dtype)}")
    n = input.data.size
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(idx[bad].flat[0])} on a tensor of {n} elements.")
    flat = np.where(idx < 0, idx + n, idx)
    out = like(input.data.reshape(-1)[flat], input)
    if needs_grad(input):
        node = attach(TakeBackward0((edge_of(input),)), out)
        node.shape, node.indices = input.data.shape, save(like(flat, input))
    return out


# ------------------------------------------------------------------------------ index_fill
def _along(idx: np.ndarray[Any, Any], d: int, ndim: int) -> tuple[Any, ...]:
    """The index of the slices at ``idx`` along dim ``d``."""
    return (slice(None),) * d + (idx,)


@backward()
def IndexFillBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    grad_self = index_fill(g, self.dim, self.index, 0) if _wants(self, 0) else None
    if len(self.next_edges) == 1:
        return (grad_self,)
    unique = np.unique(self.index.data % max(self.size, 1))
    picked = index_select(g, self.dim, unique) if g.data.ndim else g
    return (grad_self, _as_dtype(picked.sum(), self.value_dtype) if _wants(self, 1) else None)


IndexFillBackward1 = backward(name="IndexFillBackward1")(IndexFillBackward0.apply)


def _index_vector(fn: str, input: Tensor, dim: int, index: Any) -> tuple[int, np.ndarray[Any, Any]]:
    d = _dim(dim, max(input.data.ndim, 1))
    idx = _index_array(index)
    if idx.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if idx.dtype != np.int64:
        raise IndexError(f"{fn}(): Expected dtype int64 for index.")
    size = input.data.shape[d] if input.data.ndim else 1
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexError(f"index {int(idx[bad].flat[0])} is out of bounds for dimension {d} with size {size}")
    return d, np.where(idx < 0, idx + size, idx).reshape(-1)


@op(IndexFillBackward0, IndexFillBackward1)
def index_fill(input: Tensor, dim: int, index: Tensor, value: Tensor | float) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a number
    or a 0-d tensor)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("index_fill", input)
    common_device(input, index)
    if isinstance(value, Tensor) and value.data.ndim:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.data.ndim} dimension(s).")
    d, idx = _index_vector("index_fill_", input, dim, index)
    data = input.data
    out_data = data.reshape(data.shape or (1,)).copy()
    v = value.data if isinstance(value, Tensor) else value
    out_data[_along(idx, d, out_data.ndim)] = np.asarray(v).astype(data.dtype)
    out = like(out_data.reshape(data.shape), input)
    tensor_value = value if isinstance(value, Tensor) else None
    if needs_grad(input, tensor_value):
        if tensor_value is not None:
            node = attach(IndexFillBackward1((edge_of(input), edge_of(tensor_value))), out)
            node.value_dtype = tensor_value.data.dtype
        else:
            node = attach(IndexFillBackward0((edge_of(input),)), out)
        node.dim, node.index, node.size = d, like(idx, input), (data.shape[d] if data.ndim else 1)
    return out


@op(IndexFillBackward0, IndexFillBackward1)
def index_fill_(input: Tensor, dim: int, index: Tensor, value: Tensor | float) -> Tensor:
    """``index_fill`` in place."""
    return in_place(input, lambda x: index_fill(x, dim, index, value), value, overlap_ok=True)  # (as torch's)


# ------------------------------------------------------------------------------ index_copy
@backward()
def IndexCopyBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    grad_self = index_fill(g, self.dim, self.index, 0) if _wants(self, 0) else None
    grad_src = None
    if _wants(self, 1):
        grad_src = reshape(index_select(g, self.dim, self.index) if g.data.ndim else g, self.src_shape)
    return (grad_self, grad_src)


@op(IndexCopyBackward0)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` along ``dim`` written at ``index``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("index_copy", input)
    common_device(input, index, source)
    idx = _index_array(index)
    if idx.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {idx.ndim})")
    d = _dim(dim, max(input.data.ndim, 1))
    data, src = input.data, source.data
    n_src = src.shape[d] if src.ndim else 1
    if idx.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) ({n_src})")
    if idx.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {scalar_type_name(idx.dtype)}")
    if src.dtype != data.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{scalar_type_name(data.dtype)} and (source) {scalar_type_name(src.dtype)}")
    size = data.shape[d] if data.ndim else 1
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise IndexError(f"index_copy_(): index {int(idx[bad].flat[0])} is out of bounds for dimension {d} with size {size}")
    idx = idx.reshape(-1)
    out_data = data.reshape(data.shape or (1,)).copy()
    out_data[_along(idx, d, out_data.ndim)] = src.reshape(src.shape or (1,))
    out = like(out_data.reshape(data.shape), input)
    if needs_grad(input, source):
        node = attach(IndexCopyBackward0((edge_of(input), edge_of(source))), out)
        node.dim, node.index, node.src_shape = d, like(idx, input), src.shape
    return out


@op(IndexCopyBackward0)
def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``index_copy`` in place."""
    return in_place(input, lambda x: index_copy(x, dim, index, source), source)


# ------------------------------------------------------------------------------ index_put
@backward()
def IndexPutBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    grad_self = grad_values = None
    if _wants(self, 0):
        if self.accumulate:
            grad_self = g
        else:
            zeros = like(g._device.xp.zeros(self.values_shape, dtype=g.data.dtype), g)
            grad_self = index_put(g, self.indices, zeros)
    if _wants(self, 1):
        grad_values = reduce_grad(getitem(g, self.indices), self.values_shape, 0)
    return (grad_self, grad_values)


_NUMPY_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")


def _put_index(input: Tensor, indices: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``indices`` as a numpy index (bool masks as their coordinates, None as a full slice) and
    as tensors (for the backward's ``getitem``)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' (position 2) must be tuple of Tensors, not {type_name(indices)}")
    arrays: list[Any] = []
    for i in indices:
        if i is None:
            arrays.append(slice(None))
            continue
        a = _index_array(i)
        if a.dtype.kind == "b":
            arrays.extend(np.nonzero(a))
        elif a.dtype.kind in "iu":
            arrays.append(a.astype(np.int64))
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if len(arrays) > input.data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.data.ndim} (got {len(arrays)})")
    index = tuple(arrays)
    return index, tuple(like(a, input) if isinstance(a, np.ndarray) else None for a in arrays)


@op(IndexPutBackward0)
def index_put(input: Tensor, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``values`` (broadcast) written at ``input[indices]``, or added
    there (every repeat of an index adding) with ``accumulate=True``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("index_put", input)
    index, tensors = _put_index(input, indices)
    common_device(input, values, *[t for t in tensors if t is not None])
    data, v = input.data, values.data
    if v.dtype != data.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{scalar_type_name(data.dtype)} for the destination and {scalar_type_name(v.dtype)} for the source."
        )
    try:
        target = data[index].shape
    except IndexError as error:
        m = _NUMPY_BOUNDS.search(str(error))
        if m is None:
            raise
        raise IndexError(f"index {m[1]} is out of bounds for dimension {m[2]} with size {m[3]}") from None
    try:
        np.broadcast_shapes(v.shape, target)
        if np.broadcast_shapes(v.shape, target) != target:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(target)}") from None
    out_data = data.copy()
    if accumulate:
        input._device.xp.add.at(out_data, index, np.broadcast_to(v, target))
    else:
        out_data[index] = v
    out = like(out_data, input)
    if needs_grad(input, values):
        node = attach(IndexPutBackward0((edge_of(input), edge_of(values))), out)
        node.indices = tuple(t if t is not None else slice(None) for t in tensors)
        node.values_shape, node.accumulate = v.shape, bool(accumulate)
    return out


@op(IndexPutBackward0)
def index_put_(input: Tensor, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
    """``index_put`` in place."""
    return in_place(input, lambda x: index_put(x, indices, values, accumulate), values, overlap_ok=True)


# ------------------------------------------------------------------------------ masked_scatter
@backward()
def MaskedScatterBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    mask = like(self.mask, g)
    grad_self = reduce_grad(masked_fill(g, mask, 0.0), self.input_shape, 0) if _wants(self, 0) else None
    grad_src = None
    if _wants(self, 1):
        picked = masked_select(g, mask)
        n = int(np.prod(self.src_shape, dtype=np.int64))
        grad_src = reshape(pad(picked, (0, n - picked.data.shape[0])), self.src_shape)
    return (grad_self, grad_src)


@op(MaskedScatterBackward0)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` (broadcast with ``mask``) with the entries where ``mask`` is true
    taken from ``source``, in order."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("masked_scatter", input)
    common_device(input, mask, source)
    m = _index_array(mask)
    if m.dtype.kind != "b":
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {scalar_type_name(m.dtype)}")
    data, src = input.data, source.data
    if src.dtype != data.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{scalar_type_name(data.dtype)} and {scalar_type_name(src.dtype)}")
    shape = infer_size(data.shape, m.shape)
    m = np.broadcast_to(m, shape)
    count = int(m.sum())
    if count > src.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out_data = np.broadcast_to(data, shape).copy()
    out_data[m] = src.reshape(-1)[:count]
    out = like(out_data, input)
    if needs_grad(input, source):
        node = attach(MaskedScatterBackward0((edge_of(input), edge_of(source))), out)
        node.mask, node.input_shape, node.src_shape = m, data.shape, src.shape
    return out


@op(MaskedScatterBackward0)
def masked_scatter_(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``masked_scatter`` in place (``mask`` broadcast to ``input``'s shape)."""
    shape = infer_size(input.data.shape, _index_array(mask).shape)
    if shape != input.data.shape:
        raise RuntimeError(f"masked_scatter_: expected mask to be broadcastable to self of shape "
                           f"{list(input.data.shape)}")
    return in_place(input, lambda x: masked_scatter(x, mask, source), source)


# ------------------------------------------------------------------------------ region scatters
def _region_scatter(input: Tensor, src: Tensor, cls: Any, view: Callable[[Any], Any],
                    read: Callable[[Tensor], Tensor], again: Callable[[Tensor, Tensor], Tensor]) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``view(copy)``; recorded as ``cls``, whose
    backward zeroes the region (``again``) and reads it back (``read``)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"argument 'src' (position 2) must be Tensor, not {type_name(src)}")
    common_device(input, src)
    out_data = input.data.copy()
    region = view(out_data)
    if tuple(region.shape) != src.data.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.data.shape)}, "
                           f"slice size = {list(region.shape)}")
    region[...] = src.data
    out = like(out_data, input)
    if needs_grad(input, src):
        node = attach(cls((edge_of(input), edge_of(src))), out)
        node.read, node.again, node.src_dtype = read, again, src.data.dtype
        node.src_shape = src.data.shape
    return out


def _region_backward(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    grad_self = grad_src = None
    if _wants(self, 0):
        grad_self = self.again(g, like(g._device.xp.zeros(self.src_shape, dtype=g.data.dtype), g))
    if _wants(self, 1):
        grad_src = _as_dtype(self.read(g), self.src_dtype)
    return (grad_self, grad_src)


# What the backward reads and writes again, per op: module-level functions bound by partial (not
# closures), so that a node shipped to another process (a Dask worker) pickles.
def _read_slice(where: Any, g: Tensor) -> Tensor:
    return getitem(g, where)


def _again_slice(d: int, start: Any, end: Any, step: int, g: Tensor, z: Tensor) -> Tensor:
    return slice_scatter(g, z, d, start, end, step)


def _read_select(d: int, i: int, g: Tensor) -> Tensor:
    return select(g, d, i)


def _again_select(d: int, i: int, g: Tensor, z: Tensor) -> Tensor:
    return select_scatter(g, z, d, i)


def _read_diagonal(k: int, d1: int, d2: int, g: Tensor) -> Tensor:
    return diagonal(g, k, d1, d2)


def _again_diagonal(k: int, d1: int, d2: int, g: Tensor, z: Tensor) -> Tensor:
    return diagonal_scatter(g, z, k, d1, d2)


SliceScatterBackward0 = backward(name="SliceScatterBackward0")(_region_backward)
SelectScatterBackward0 = backward(name="SelectScatterBackward0")(_region_backward)
DiagonalScatterBackward0 = backward(name="DiagonalScatterBackward0")(_region_backward)


@op(SliceScatterBackward0)
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` along ``dim``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("slice_scatter", input)
    if operator.index(step) <= 0:
        raise RuntimeError("slice step must be positive")
    d = _dim(dim, max(input.data.ndim, 1))
    where = (slice(None),) * d + (slice(start, end, step),)
    return _region_scatter(
        input, src, SliceScatterBackward0, lambda a: a[where], functools.partial(_read_slice, where),
        functools.partial(_again_slice, d, start, end, step),
    )


@op(SelectScatterBackward0)
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("select_scatter", input)
    data = input.data
    d = _dim(dim, max(data.ndim, 1))
    size = data.shape[d] if data.ndim else 1
    i = operator.index(index)
    if not -size <= i < size:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(data.shape)} at dimension {d}")
    i = i + size if i < 0 else i
    where = (slice(None),) * d + (i, Ellipsis)
    return _region_scatter(
        input, src, SelectScatterBackward0, lambda a: a[where], functools.partial(_read_select, d, i),
        functools.partial(_again_select, d, i),
    )


@op(DiagonalScatterBackward0)
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written on the diagonal ``offset`` over ``dim1``, ``dim2``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("diagonal_scatter", input)
    nd = input.data.ndim
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = operator.index(offset)
    xp = input._device.xp
    return _region_scatter(
        input, src, DiagonalScatterBackward0, lambda a: _diagonal_of(xp, a, k, d1, d2),
        functools.partial(_read_diagonal, k, d1, d2), functools.partial(_again_diagonal, k, d1, d2),
    )


TENSOR_METHODS = {
    "take": take, "index_fill": index_fill, "index_fill_": index_fill_, "index_copy": index_copy,
    "index_copy_": index_copy_, "index_put": index_put, "index_put_": index_put_,
    "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_, "slice_scatter": slice_scatter,
    "select_scatter": select_scatter, "diagonal_scatter": diagonal_scatter,
}
