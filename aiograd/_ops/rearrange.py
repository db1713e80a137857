"""Rearranging ops: flip, roll, narrow, select, movedim, unflatten, tril, triu, diagonal, diag, tile;
``tril_`` and ``triu_`` in place (``in_place``, shared with the scatter ops).

As in PyTorch, ``narrow``, ``select``, ``movedim``, ``unflatten`` and ``diagonal`` return views
(``_views.View``: they share their base's array and version counter, and an in-place op on them
rebases the base); ``flip``, ``roll``, ``tril``, ``triu``, ``diag`` and ``tile`` return copies.
The view ops that PyTorch builds on others record those others' nodes, as torch does: ``narrow``
is a slice (``SliceBackward0``), ``movedim`` a permute, ``unflatten`` a view, ``tile`` a repeat.

Every backward is written with these same ops, so ``create_graph=True`` differentiates it again;
``diagonal``'s backward writes the gradient into zeros along the diagonal, a recorded op
(PyTorch's ``diagonal_backward``, node ``DiagonalBackwardBackward0``) whose backward is
``diagonal`` again. Under ``is_grads_batched`` the gradients carry leading batch dims (the rules'
``batch`` argument): every rule shifts the dims it saved past them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core._views import make_view
from ._inplace_util import _alias, _commit, _recording
from ._registry import backward, op, variant
from ._shape_errors import missing
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from .indexing import AliasBackward0, SelectBackward0, SliceBackward0, _take
from .shape import (
    PermuteBackward0,
    RepeatBackward0,
    ViewBackward0,
    _dim,
    _shape_arg,
    permute,
    repeat,
    view,
)

if TYPE_CHECKING:
    from typing import SupportsIndex

    from .._core._types import Dims

__all__ = [
    "flip", "roll", "narrow", "select", "movedim", "moveaxis", "unflatten", "tril", "triu",
    "diagonal", "diag", "tile", "tril_", "triu_", "in_place",
]

_FULL = slice(None)


def _int_tuple(value: int | Sequence[int]) -> tuple[int, ...]:
    """An int or a sequence of ints (torch's ``IntArrayRef`` that also takes one int) as a tuple."""
    if isinstance(value, (int, np.integer)) or (isinstance(value, Tensor) and value.data.ndim == 0):
        return (operator.index(value),)
    return tuple(operator.index(v) for v in value)


def _unique_dims(dims: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Dims wrapped, with PyTorch's message for one given twice (``dim_list_to_bitset``)."""
    wrapped = tuple(_dim(d, ndim) for d in dims)
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return wrapped


def _shifted(dims: Sequence[int], batch: int) -> tuple[int, ...]:
    """Saved dims of an input, as dims of its gradient with ``batch`` batch dims in front."""
    return tuple(d + batch for d in dims)


# ------------------------------------------------------------------------------ flip
@backward(batched=True)
def FlipBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (flip(grads[0], _shifted(self.dims, batch)),)


@op(FlipBackward0)
def flip(input: Tensor, *dims: Dims) -> Tensor:
    """A copy with the order of the entries along ``dims`` reversed (``torch.flip(input, dims)``;
    ``t.flip(0, 1)`` or ``t.flip((0, 1))``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("flip", input)
    if not dims:
        raise missing("flip", "dims")
    axes = _unique_dims(_shape_arg(dims), input.data.ndim)
    xp = input._device.xp
    data = input.data
    # (a 0-d tensor has nothing to flip: its one dim is the implicit one of torch's wrapping)
    # (``copy()`` is C-ordered; ``ascontiguousarray`` would make a 0-d array 1-d)
    out = like((xp.flip(data, axes) if axes and data.ndim else data).copy(), input)
    if needs_grad(input):
        attach(FlipBackward0((edge_of(input),)), out).dims = axes if data.ndim else ()
    return out


# ------------------------------------------------------------------------------ roll
@backward(batched=True)
def RollBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g, back = grads[0], tuple(-s for s in self.shifts)
    if self.dims:
        return (roll(g, back, _shifted(self.dims, batch)),)
    if not batch:
        return (roll(g, back),)
    shape = g.data.shape  # rolled as one flat vector: per sample when batched
    return (roll(g.reshape(shape[:batch] + (-1,)), back, batch).reshape(shape),)


@op(RollBackward0)
def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """A copy with the entries shifted by ``shifts`` along ``dims`` (cyclically: what falls off
    one end comes back at the other); without ``dims``, along the flattened tensor."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("roll", input)
    shift = _int_tuple(shifts)
    axes = () if dims is None else _int_tuple(dims)
    if not shift:
        raise RuntimeError("`shifts` required")
    if len(shift) != len(axes) and not (not axes and len(shift) == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shift)}, dims:{len(axes)}")
    data = input.data
    axes = tuple(_dim(d, data.ndim) for d in axes)
    xp = input._device.xp
    if axes:
        out_data = xp.roll(data, shift, axes)
    else:
        out_data = xp.roll(data.reshape(-1), shift[0]).reshape(data.shape)
    out = like(out_data, input)  # (a new array: numpy's roll never views its input)
    if needs_grad(input):
        node = attach(RollBackward0((edge_of(input),)), out)
        node.shifts, node.dims = shift, axes
    return out


# ------------------------------------------------------------------------------ narrow / select
@op(SliceBackward0)
def narrow(input: Tensor, dim: int, start: int | Tensor, length: int) -> Tensor:
    """A view of ``length`` entries along ``dim`` from ``start`` (negative counts from the end)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("narrow", input)
    data = input.data
    if data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    start, length = operator.index(start), operator.index(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _dim(dim, data.ndim)
    size = data.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _take(input, ((_FULL,) * d + (slice(start, start + length),), None, False), SliceBackward0)


@op(SelectBackward0)
def select(input: Tensor, dim: int, index: SupportsIndex) -> Tensor:
    """The view ``input[..., index, ...]`` with ``index`` at dimension ``dim`` (that dim removed)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("select", input)
    data = input.data
    if data.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d, i = _dim(dim, data.ndim), operator.index(index)
    size = data.shape[d]
    if not -size <= i < size:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {list(data.shape)} at dimension {d}"
        )
    return _take(input, ((_FULL,) * d + (i % size,), None, False), SelectBackward0)


# ------------------------------------------------------------------------------ movedim
@op(PermuteBackward0, AliasBackward0)
def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """The view with dims ``source`` moved to positions ``destination`` (the others keep their
    order): a permute."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("movedim", input)
    src, dst = _int_tuple(source), _int_tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
            f"the same number of dims as destination ({list(dst)} dims)"
        )
    ndim = input.data.ndim
    wsrc, wdst = [_dim(d, ndim) for d in src], [_dim(d, ndim) for d in dst]
    for name, given, wrapped in (("source", src, wsrc), ("destination", dst, wdst)):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    order = [d for d in range(ndim) if d not in wsrc]
    for to, frm in sorted(zip(wdst, wsrc)):
        order.insert(to, frm)
    # (PyTorch's movedim of a 0-D tensor is ``alias``)
    return permute(input, order) if ndim else _take(input, ((Ellipsis,), None, False), AliasBackward0)


@op(PermuteBackward0, AliasBackward0)
def moveaxis(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Alias of ``movedim`` (numpy's name)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("moveaxis", input)
    return movedim(input, source, destination)


# ------------------------------------------------------------------------------ unflatten
@op(ViewBackward0)
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """The view with dim ``dim`` split into ``sizes`` (one of them may be -1)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("unflatten", input)
    shape = input.data.shape
    d = _dim(dim, len(shape))
    sizes = tuple(operator.index(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = int(np.prod([s for s in sizes if s != -1]))
    size = shape[d] if shape else 1
    if (-1 not in sizes and known != size) or (-1 in sizes and (known == 0 or size % known)):
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
            f"({size}) in the input tensor"
        )
    if -1 in sizes:  # inferred from dim ``d`` alone (the view's -1 could take any value when
        # another dim is empty)
        sizes = tuple(size // known if s == -1 else s for s in sizes)
    return view(input, shape[:d] + sizes + shape[d + 1 :])


# ------------------------------------------------------------------------------ tril / triu
@backward(batched=True)
def TrilBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (tril(grads[0], self.diagonal),)


@backward(batched=True)
def TriuBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (triu(grads[0], self.diagonal),)


def _triangle(input: Tensor, diagonal: int, lower: bool) -> Tensor:
    name = "tril" if lower else "triu"
    if input.data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    k = operator.index(diagonal)
    xp = input._device.xp
    out = like((xp.tril if lower else xp.triu)(input.data, k), input)
    if needs_grad(input):
        attach((TrilBackward0 if lower else TriuBackward0)((edge_of(input),)), out).diagonal = k
    return out


@op(TrilBackward0)
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """A copy with the entries above diagonal ``diagonal`` of the last two dims zeroed."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("tril", input)
    return _triangle(input, diagonal, True)


@op(TriuBackward0)
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """A copy with the entries below diagonal ``diagonal`` of the last two dims zeroed."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("triu", input)
    return _triangle(input, diagonal, False)


def in_place(
    self: Tensor, out_of_place: Callable[[Tensor], Tensor], *operands: Any, overlap_ok: bool = False
) -> Tensor:
    """``self`` overwritten by ``out_of_place(self)``, recorded as PyTorch records an in-place op:
    the out-of-place op's node applied to the old version becomes ``self``'s history (for a view,
    its base's, through ``CopySlices``); PyTorch's leaf and view checks first (see
    aiograd/_ops/inplace.py). ``overlap_ok``: PyTorch writes an expanded ``self`` (``tril_``,
    ``triu_``; the scatter ops raise its internal-overlap error)."""
    _commit(self, out_of_place(_alias(self, False) if _recording(self, *operands) else self), overlap_ok)
    return self


@op(TrilBackward0)
def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """``tril`` in place."""
    return in_place(input, lambda x: tril(x, diagonal), overlap_ok=True)


@op(TriuBackward0)
def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """``triu`` in place."""
    return in_place(input, lambda x: triu(x, diagonal), overlap_ok=True)


# ------------------------------------------------------------------------------ diagonal / diag
def _diagonal_of(xp: Any, data: Any, offset: int, dim1: int, dim2: int) -> Any:
    """The diagonal as a writeable view of ``data`` (numpy makes diagonals read-only; PyTorch's
    ``diagonal`` is a view that in-place ops write through)."""
    out = xp.diagonal(data, offset, dim1, dim2)
    flags = getattr(out, "flags", None)
    if flags is not None and not getattr(flags, "writeable", True) and data.flags.writeable:
        out.setflags(write=True)
    return out


@backward(batched=True)
def DiagonalBackwardBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The backward of ``diagonal``'s backward: read the diagonal back."""
    dim1, dim2 = _shifted((self.dim1, self.dim2), batch)
    return (diagonal(grads[0], self.offset, dim1, dim2),)


def _diagonal_scatter(grad: Tensor, shape: tuple[int, ...], offset: int, dim1: int, dim2: int) -> Tensor:
    """Zeros of ``shape`` with ``grad`` along their diagonal (PyTorch's ``diagonal_backward``),
    recorded so that it can be differentiated again."""
    z = grad._device.xp.zeros(shape, dtype=grad.data.dtype)
    _diagonal_of(grad._device.xp, z, offset, dim1, dim2)[...] = grad.data
    out = like(z, grad)
    if needs_grad(grad):
        node = attach(DiagonalBackwardBackward0((edge_of(grad),)), out)
        node.offset, node.dim1, node.dim2 = offset, dim1, dim2
    return out


@backward(batched=True)
def DiagonalBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    shape = g.data.shape[:batch] + self.shape
    return (_diagonal_scatter(g, shape, self.offset, self.dim1 + batch, self.dim2 + batch),)


#: ``torch.diag`` of a matrix: a copy of its diagonal, recorded under this name by PyTorch.
DiagonalBackward0_copy = variant("DiagonalBackward0_copy", DiagonalBackward0)


@op(DiagonalBackward0)
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The view of the diagonal ``offset`` (above the main one if positive) of the 2-D slices
    over ``dim1`` and ``dim2``; those dims are removed and the diagonal is the last dim."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("diagonal", input)
    data = input.data
    d1, d2 = _dim(dim1, data.ndim), _dim(dim2, data.ndim)
    if data.ndim == 0:  # torch wraps dim1 = 0 for a 0-d tensor, then fails on dim2 = 1
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = operator.index(offset)
    out = make_view(input, _diagonal_of(input._device.xp, data, k, d1, d2))
    if needs_grad(input):
        node = attach(DiagonalBackward0((edge_of(input),)), out)
        node.shape, node.offset, node.dim1, node.dim2 = data.shape, k, d1, d2
    return out


@backward(batched=True)
def DiagEmbedBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (diagonal(grads[0], self.offset, batch, batch + 1),)


@op(DiagEmbedBackward0, DiagonalBackward0_copy)
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A vector's square matrix with the vector on diagonal ``diagonal``, or a copy of a
    matrix's diagonal ``diagonal`` as a vector."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("diag", input)
    data = input.data
    if data.ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {data.ndim}D")
    k = operator.index(diagonal)
    xp = input._device.xp
    if data.ndim == 1:
        out = like(xp.diag(data, k), input)
        if needs_grad(input):
            attach(DiagEmbedBackward0((edge_of(input),)), out).offset = k
        return out
    out = like(xp.diagonal(data, k).copy(), input)
    if needs_grad(input):
        node = attach(DiagonalBackward0_copy((edge_of(input),)), out)
        node.shape, node.offset, node.dim1, node.dim2 = data.shape, k, 0, 1
    return out


# ------------------------------------------------------------------------------ tile
@op(RepeatBackward0)
def tile(input: Tensor, *dims: Dims) -> Tensor:
    """``input`` repeated ``dims[i]`` times along dim ``i``; fewer ``dims`` than dims are padded
    with 1s in front (``torch.tile(input, dims)``; ``t.tile(2, 1)`` or ``t.tile((2, 1))``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("tile", input)
    if not dims:
        raise missing("tile", "dims")
    reps = _shape_arg(dims)
    ndim = input.data.ndim
    reps = (1,) * (ndim - len(reps)) + reps
    return repeat(input, reps)


TENSOR_METHODS = {
    "flip": flip,
    "roll": roll,
    "narrow": narrow,
    "select": select,
    "movedim": movedim,
    "moveaxis": moveaxis,
    "unflatten": unflatten,
    "tril": tril,
    "triu": triu,
    "tril_": tril_,
    "triu_": triu_,
    "diagonal": diagonal,
    "diag": diag,
    "tile": tile,
}
