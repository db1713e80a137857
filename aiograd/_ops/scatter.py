"""Scatter ops and index queries: scatter, scatter_add, index_add (and ``scatter_``,
``scatter_add_``, ``index_add_`` in place, recorded as PyTorch records in-place ops:
``rearrange.in_place``), masked_select, take_along_dim, nonzero.

The backward formulas are PyTorch's (tools/autograd/derivatives.yaml), written with aiograd ops so
that ``create_graph=True`` differentiates them again:

* ``scatter(input, dim, index, src)`` (``ScatterBackward0``): ``input`` gets the gradient with
  the scattered positions zeroed (``grad.scatter(dim, index, 0)``, a ``ScatterBackward1``), and
  ``src`` gets ``grad.gather(dim, index)``: every entry of ``src`` that an index names gets the
  gradient at its position, also those that a duplicate index overwrote, as in PyTorch.
  ``scatter(input, dim, index, value)`` is ``ScatterBackward1``.
* ``scatter_add`` (``ScatterAddBackward0``): ``input`` gets the gradient unchanged, ``src``
  gets ``grad.gather(dim, index)`` (duplicate indices add up in forward, so each gets it all).
* ``index_add(input, dim, index, source, alpha=)`` (``IndexAddBackward0``): the gradient, and
  ``alpha * grad.index_select(dim, index)``.
* ``masked_select`` (``MaskedSelectBackward0``): the gradient scattered back into zeros at the
  mask (recorded, ``MaskedScatterBackward0``, whose backward selects again), summed back to the
  input's shape where the mask broadcast it.
* ``take_along_dim`` is PyTorch's composite: both operands broadcast, then ``gather``.

Where ``src`` is larger than ``index`` (allowed: only the leading corner is read), PyTorch's
backward hands back a gradient of ``index``'s shape and its engine refuses it; aiograd pads it
with zeros to ``src``'s shape (``padding.pad``), the gradient the forward defines.

``reduce=`` of ``scatter`` is left out: PyTorch deprecates it (use ``scatter_reduce``) and has no
gradient for it. Index tensors are read on the host (``indexing._host_index``), as indexing does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ._inplace_util import OVERLAP_ERROR, _overlapping
from ._reduce_util import _dtype_name
from ._registry import backward, op, variant
from ._scalar_cast import scalar_to
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
    wrap,
)
from .indexing import (
    _FULL,
    GatherBackward0,
    _index_array,
    _scatter,
    _ScatterBackward,
    _TakeBackward,
    gather,
    index_select,
)
from .padding import pad
from .rearrange import in_place
from .shape import _dim, expand, reduce_grad, reshape

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from .._core._types import Number

__all__ = [
    "scatter", "scatter_add", "index_add", "masked_select", "take_along_dim", "nonzero", "scatter_",
    "scatter_add_", "index_add_",
]


def _mesh(idx: np.ndarray[Any, Any], d: int) -> tuple[np.ndarray[Any, Any], ...]:
    """The advanced index that puts entry ``i`` of ``idx`` at ``idx[i]`` along dim ``d`` and at
    its own position along every other dim (``scatter``'s and ``gather``'s addressing)."""
    ndim = idx.ndim
    return tuple(
        idx.astype(np.intp, copy=False) if k == d else np.arange(idx.shape[k]).reshape((-1,) + (1,) * (ndim - 1 - k))
        for k in range(ndim)
    )


def _batched_index(idx: np.ndarray[Any, Any], grad: Tensor, batch: int) -> np.ndarray[Any, Any]:
    """``idx`` with the gradient's ``batch`` batch dims in front (the same index for every sample)."""
    return np.broadcast_to(idx, grad.data.shape[:batch] + idx.shape) if batch else idx


def _grad_of_src(grad: Tensor, dim: int, idx: np.ndarray[Any, Any], src_shape: tuple[int, ...], batch: int) -> Tensor:
    """``grad.gather(dim, index)``, padded with zeros to ``src``'s shape where ``src`` is larger."""
    g = gather(grad, dim + batch, _batched_index(idx, grad, batch))
    read = g.data.shape[batch:]  # the shape of the part of src that forward read
    if read == src_shape:
        return g
    if int(np.prod(read)) == int(np.prod(src_shape)):  # a 0-d src read through a 1-element index
        return reshape(g, g.data.shape[:batch] + src_shape)
    widths: list[int] = []
    for n, size in zip(reversed(read), reversed(src_shape)):  # (pad's order: last dim first)
        widths += [0, size - n]
    return pad(g, tuple(widths))


# ------------------------------------------------------------------------------ scatter
def _wants(node: Any, i: int) -> bool:
    return node.next_edges[i] is not None


def _save_index(node: Any, idx: np.ndarray[Any, Any]) -> None:
    """Keep the index as PyTorch's node does, as a saved tensor: a second backward through the
    node (without retain_graph) raises PyTorch's error, as it does there."""
    node.index, node.indices = idx, save(wrap(idx))


def _unpack_index(node: Any) -> None:
    node.indices.unpack(node)  # (raises once the graph was freed)


@backward(saved=("indices",), batched=True)
def ScatterBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    _unpack_index(self)
    g = grads[0]
    grad_self = scatter(g, self.dim + batch, _batched_index(self.index, g, batch), 0.0) if _wants(self, 0) else None
    if len(self.next_edges) == 1:  # ScatterBackward1: a value, not a tensor, was scattered
        return (grad_self,)
    return (grad_self, _grad_of_src(g, self.dim, self.index, self.src_shape, batch) if _wants(self, 1) else None)


ScatterBackward1 = variant("ScatterBackward1", ScatterBackward0, doc="``scatter`` of a value: only ``input``.")


def _checked_index(
    fn: str, input: Tensor, dim: int, index: Any, src: Tensor | None, bounds: bool = True
) -> tuple[int, np.ndarray[Any, Any]]:
    """``dim`` wrapped and ``index`` as a host array, with PyTorch's checks and messages
    (``scatter_gather_dtype_check``, ``scatter_shape_check``, the kernels' bounds check)."""
    data = input.data
    d = _dim(dim, data.ndim)
    idx = _index_array(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"{fn}(): Expected dtype int32/int64 for index")
    if src is not None and src.data.dtype != data.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype")
    if idx.ndim != data.ndim and not (idx.ndim <= 1 and data.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and src.data.ndim != idx.ndim and not (idx.ndim <= 1 and src.data.ndim <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    shape, idx_shape = data.shape or (1,), idx.shape or (1,)
    too_big = any(k != d and n > s for k, (n, s) in enumerate(zip(idx_shape, shape)))
    if src is not None and (too_big or any(n > s for n, s in zip(idx_shape, src.data.shape or (1,)))):
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self {list(data.shape)} apart from "
            f"dimension {d} and to be no larger size than src {list(src.data.shape)}"
        )
    if too_big:
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self {list(data.shape)} apart from dimension {d}"
        )
    if bounds:
        _check_bounds(idx, d, shape[d])
    return d, idx


def _refuse_overlap(input: Tensor) -> None:
    """The in-place ops' internal-overlap error (an expanded ``self``): PyTorch's, after the
    argument checks, before the index bounds (and ``alpha``)."""
    if _overlapping(input.data):
        raise RuntimeError(OVERLAP_ERROR)


def _check_bounds(idx: np.ndarray[Any, Any], d: int, size: int) -> None:
    if idx.size:
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise RuntimeError(f"index {int(idx[bad].flat[0])} is out of bounds for dimension {d} with size {size}")


def _index_add_bounds(idx: np.ndarray[Any, Any], d: int, data: Any, alpha: Any) -> None:
    """``index_add``'s bounds check as torch's CPU kernel makes it: a 0-d or 1-D ``self`` is
    checked always (``IndexError``); a larger one (only when it and ``index`` have entries) with
    ``scatter_add``'s message where torch routes through it (an int64 index along the first or
    last dim, ``alpha`` 1), else ``IndexError``."""
    if not idx.size:
        return
    size = data.shape[d] if data.ndim else 1
    if data.ndim > 1 and idx.dtype == np.int64 and d in (0, data.ndim - 1) and alpha == 1 and alpha is not True:
        _check_bounds(idx, d, size)
    elif ((idx < 0) | (idx >= size)).any():
        raise IndexError("index out of range in self")


def _add_at(xp: Any, out: Any, where: tuple[Any, ...], values: Any, positions: np.ndarray[Any, Any]) -> None:
    """``out[where] += values``, each repeated position adding every one of its values: numpy's
    buffered ``+=`` where ``positions`` (where each value lands) has no repeats, else its
    unbuffered ``add.at`` (many times slower)."""
    if np.unique(positions).size == positions.size:
        out[where] += values
    else:
        xp.add.at(out, where, values)


def _scattered(input: Tensor, d: int, idx: np.ndarray[Any, Any], src: Any, add: bool) -> Any:
    """A copy of ``input``'s array with ``src`` (a tensor, read in ``idx``'s shape, or a number)
    written (or, with ``add``, added) at ``idx`` along ``d``."""
    data = input.data
    out = data.reshape(data.shape or (1,)).copy()
    flat_idx = idx.reshape(idx.shape or (1,))
    where = _mesh(flat_idx, d)
    if isinstance(src, Tensor):
        values = src.data.reshape(src.data.shape or (1,))[tuple(slice(0, n) for n in flat_idx.shape)]
    else:
        values = src
    if add:
        _add_at(input._device.xp, out, where, values, np.ravel_multi_index(np.broadcast_arrays(*where), out.shape))
    else:
        out[where] = values
    return out.reshape(data.shape)


@op(ScatterBackward0, ScatterBackward1)
def scatter(
    input: Tensor, dim: int, index: Tensor | NDArray[Any], src: Tensor | Number | None = None, *,
    value: Tensor | Number | None = None,
) -> Tensor:
    """A copy of ``input`` with ``src[i][j][k]`` written at ``[index[i][j][k]][j][k]`` for
    ``dim=0`` (and so on for other dims); ``src`` is a tensor or a number (also as ``value=``).
    Where ``index`` repeats a position, which write wins is unspecified, as in PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("scatter", input)
    if src is None:
        if value is None:
            raise TypeError("scatter() missing 1 required argument: 'src' (or 'value')")
        # ``value=`` is a number (torch's Scalar overload): a 0-d tensor there gives its number
        src = value.item() if isinstance(value, Tensor) else value
    common_device(input, index, src)
    tensor_src = src if isinstance(src, Tensor) else None
    d, idx = _checked_index("scatter", input, dim, index, tensor_src)
    if tensor_src is None:  # a number (or a 0-d array): cast to input's dtype, as torch does
        dtype = input.data.dtype
        # (PyTorch converts the value, with its overflow check, only when it writes it)
        src = input._device.xp.asarray(scalar_to(src, dtype) if idx.size else 0, dtype=dtype)
    out = like(_scattered(input, d, idx, src, False), input)
    if needs_grad(input, tensor_src):
        if tensor_src is not None:
            node = attach(ScatterBackward0((edge_of(input), edge_of(tensor_src))), out)
            node.src_shape = tensor_src.data.shape
        else:
            node = attach(ScatterBackward1((edge_of(input),)), out)
        node.dim = d
        _save_index(node, idx)
    return out


# ------------------------------------------------------------------------------ scatter_add
@backward(saved=("indices",), batched=True)
def ScatterAddBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    _unpack_index(self)
    g = grads[0]
    grad_src = _grad_of_src(g, self.dim, self.index, self.src_shape, batch) if _wants(self, 1) else None
    return (g if _wants(self, 0) else None, grad_src)


@op(ScatterAddBackward0)
def scatter_add(input: Tensor, dim: int, index: Tensor | NDArray[Any], src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src[i][j][k]`` added at ``[index[i][j][k]][j][k]`` for
    ``dim=0`` (and so on); entries that ``index`` sends to one position all add up."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("scatter_add", input)
    common_device(input, index, src)
    d, idx = _checked_index("scatter", input, dim, index, src)
    out = like(_scattered(input, d, idx, src, True), input)
    if needs_grad(input, src):
        node = attach(ScatterAddBackward0((edge_of(input), edge_of(src))), out)
        node.dim, node.src_shape = d, src.data.shape
        _save_index(node, idx)
    return out


# ------------------------------------------------------------------------------ index_add
@backward(saved=("indices",), batched=True)
def IndexAddBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    _unpack_index(self)
    g = grads[0]
    grad_source = None
    if _wants(self, 1):
        picked = index_select(g, self.dim + batch if self.ndim else batch, self.index) if self.ndim else g
        picked = reshape(picked, picked.data.shape[:batch] + self.source_shape)
        grad_source = picked * self.alpha if self.alpha != 1 else picked
    return (g if _wants(self, 0) else None, grad_source)


def _index_add_args(input: Tensor, dim: int, index: Any, source: Tensor) -> tuple[int, np.ndarray[Any, Any]]:
    """``dim`` wrapped and ``index`` as a host array, after PyTorch's argument checks."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("index_add", input)
    common_device(input, index, source)
    data, src = input.data, source.data
    d = _dim(dim, data.ndim)
    idx = _index_array(index)
    if idx.ndim > 1:
        raise IndexError(
            f"index_add_(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
            f"{_dtype_name(idx.dtype)} and size: {list(idx.shape)}"
        )
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {_dtype_name(idx.dtype)}")
    if src.dtype != data.dtype:
        raise RuntimeError(
            f"index_add_(): self ({_dtype_name(data.dtype)}) and source ({_dtype_name(src.dtype)}) "
            "must have the same scalar type"
        )
    count = src.shape[d] if src.ndim else 1
    if idx.size != count:
        raise RuntimeError(
            f"index_add_(): Number of indices ({idx.size}) should be equal to source.size(dim): ({count}), for dim: {d}"
        )
    if (src.ndim or data.ndim) and src.shape[:d] + src.shape[d + 1 :] != data.shape[:d] + data.shape[d + 1 :]:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got "
            f"self.shape = {list(data.shape)} source.shape = {list(src.shape)}"
        )
    return d, idx


@op(IndexAddBackward0)
def index_add(
    input: Tensor, dim: int, index: Tensor | Sequence[int] | NDArray[Any], source: Tensor, *, alpha: Number = 1
) -> Tensor:
    """A copy of ``input`` with ``alpha * source[..., i, ...]`` added at ``index[i]`` along
    ``dim`` (repeated indices add up)."""
    d, idx = _index_add_args(input, dim, index, source)
    data, src = input.data, source.data
    out = data.reshape(data.shape or (1,)).copy()
    if data.ndim <= 1 or (idx.size and data.size):  # (else torch's kernel returns before its checks)
        value = alpha
        if alpha != 1 or alpha is True:
            # PyTorch's kernel converts alpha (its overflow error: NaN for an integer type...)
            # first, but for 2+ dims only once the first index is found in range
            if data.ndim > 1:
                _index_add_bounds(idx[:1], d, data, alpha)
            value = scalar_to(alpha, data.dtype)
        _index_add_bounds(idx, d, data, alpha)
        if out.size:
            scaled = src if alpha == 1 else src * input._device.xp.asarray(value, dtype=src.dtype)
            where = (_FULL,) * d + (idx.reshape(-1).astype(np.intp),)
            _add_at(input._device.xp, out, where, scaled.reshape(src.shape or (1,)), idx)
    result = like(out.reshape(data.shape), input)
    if needs_grad(input, source):
        node = attach(IndexAddBackward0((edge_of(input), edge_of(source))), result)
        node.dim, node.ndim, node.alpha, node.source_shape = d, data.ndim, alpha, src.shape
        _save_index(node, idx.reshape(-1))
    return result


# ------------------------------------------------------------------------------ in place
@op(ScatterBackward0, ScatterBackward1)
def scatter_(
    input: Tensor, dim: int, index: Tensor | NDArray[Any], src: Tensor | Number | None = None, *,
    value: Tensor | Number | None = None,
) -> Tensor:
    """``scatter`` in place."""
    if src is not None or value is not None:  # (PyTorch's checks, then its overlap error)
        common_device(input, index, src)
        _checked_index("scatter", input, dim, index, src if isinstance(src, Tensor) else None, False)
        _refuse_overlap(input)
    return in_place(input, lambda x: scatter(x, dim, index, src, value=value), src)


@op(ScatterAddBackward0)
def scatter_add_(input: Tensor, dim: int, index: Tensor | NDArray[Any], src: Tensor) -> Tensor:
    """``scatter_add`` in place."""
    common_device(input, index, src)
    _checked_index("scatter", input, dim, index, src, False)
    _refuse_overlap(input)
    return in_place(input, lambda x: scatter_add(x, dim, index, src), src)


@op(IndexAddBackward0)
def index_add_(
    input: Tensor, dim: int, index: Tensor | Sequence[int] | NDArray[Any], source: Tensor, *, alpha: Number = 1
) -> Tensor:
    """``index_add`` in place."""
    _index_add_args(input, dim, index, source)
    _refuse_overlap(input)
    return in_place(input, lambda x: index_add(x, dim, index, source, alpha=alpha), source)


# ------------------------------------------------------------------------------ masked_select
#: The backward of masked_select's backward (recorded under create_graph): select again.
MaskedScatterBackward0 = variant("MaskedScatterBackward0", _ScatterBackward)


@backward(base=_TakeBackward, saved=("indices", "x"), scatter_cls=MaskedScatterBackward0, x=None)
def MaskedSelectBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The gradient put back at the mask into zeros of the broadcast shape, summed back to the
    input's shape (a node recorded by the double backward has no broadcast: ``input_shape`` is
    its ``shape``). The input is saved, as PyTorch's node saves it (so an in-place change of it
    before the backward raises PyTorch's error), though only its shape is needed."""
    for field in (self.indices, self.x):
        if field is not None:
            field.unpack(self)
    g = grads[0]
    index = (None, ((_FULL,) * batch) + self.index[1], False) if batch else self.index  # type: ignore[index]
    full = _scatter(g, g.data.shape[:batch] + self.shape, index, type(self))
    return (reduce_grad(full, getattr(self, "input_shape", self.shape), batch),)


@op(MaskedSelectBackward0)
def masked_select(input: Tensor, mask: Tensor | NDArray[Any]) -> Tensor:
    """The entries of ``input`` where the boolean ``mask`` (broadcast with it) is true, as a
    1-D tensor (a copy)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("masked_select", input)
    common_device(input, mask)
    m = _index_array(mask)
    if m.dtype.kind != "b":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = infer_size(m.shape, input.data.shape)  # (in this order in torch's message)
    xp = input._device.xp
    data = input.data if input.data.shape == shape else xp.broadcast_to(input.data, shape)
    m = np.broadcast_to(m, shape)
    out = like(data[m] if shape else data.reshape(1)[m.reshape(1)], input)
    if needs_grad(input):
        node = attach(MaskedSelectBackward0((edge_of(input),)), out)
        node.shape, node.input_shape = shape, input.data.shape
        node.index = (None, (m,) if shape else (Ellipsis, m), False)
        node.indices, node.x = save(wrap(m)), save(input)
    return out


# ------------------------------------------------------------------------------ take_along_dim
@op(GatherBackward0)
def take_along_dim(input: Tensor, indices: Tensor | NDArray[Any], dim: int | None = None) -> Tensor:
    """The entries of ``input`` at ``indices`` along ``dim``, the two broadcast against each other
    except along ``dim``; without ``dim``, of the flattened input. As numpy's ``take_along_axis``.
    With ``dim``, indices wrap modulo the size of ``dim`` (torch's ``indices % size``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("take_along_dim", input)
    common_device(input, indices)
    idx = _index_array(indices)
    if idx.dtype != np.int64:
        if dim is None:
            if idx.dtype.kind not in "iu":
                raise RuntimeError("gather(): Expected dtype int32/int64 for index")
        else:
            raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {_dtype_name(idx.dtype)}")
    if dim is None:
        return gather(reshape(input, -1), 0, idx.reshape(-1))
    ndim = input.data.ndim
    if idx.ndim != ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{ndim} dimensions for input, and {idx.ndim} dimensions for indices"
        )
    d = _dim(dim, ndim)
    sizes = list(input.data.shape)
    sizes[d] = idx.shape[d]
    idx = np.broadcast_to(idx, infer_size(tuple(sizes), idx.shape))
    sizes = list(idx.shape)
    size = sizes[d] = input.data.shape[d]
    target = infer_size(tuple(sizes), input.data.shape)
    if idx.size:  # torch wraps every index into range: ``indices % size`` (floor mod, as numpy's)
        if not size:
            raise RuntimeError("ZeroDivisionError")
        if (idx < 0).any() or (idx >= size).any():
            idx = idx % size
    return gather(input if input.data.shape == target else expand(input, target), d, idx)


# ------------------------------------------------------------------------------ nonzero
@op()
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices of the nonzero entries: an int64 tensor of shape ``(count, ndim)``, or with
    ``as_tuple=True`` one int64 vector per dim (a 0-d input counts as 1-D there, as in torch)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("nonzero", input)
    xp, data = input._device.xp, input.data
    if as_tuple:
        return tuple(like(i.astype(np.int64), input) for i in xp.nonzero(data.reshape(data.shape or (1,))))
    return like(xp.argwhere(data).astype(np.int64, copy=False), input)


TENSOR_METHODS = {
    "scatter": scatter,
    "scatter_add": scatter_add,
    "index_add": index_add,
    "masked_select": masked_select,
    "take_along_dim": take_along_dim,
    "nonzero": nonzero,
    "scatter_": scatter_,
    "scatter_add_": scatter_add_,
    "index_add_": index_add_,
}
