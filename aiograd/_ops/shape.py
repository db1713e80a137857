"""Shape ops: reshape, view, flatten, transpose, permute, squeeze, unsqueeze, expand, sum_to_size.

The view ops (all but ``sum_to_size`` and ``repeat``; ``reshape`` when numpy can view) return
``_views.View`` tensors: they share their base's array and version counter (aiograd/_core/_views.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from .._core._node import Node
from .._core._views import make_view
from ._registry import backward, op, variant
from ._shape_errors import NO_VIEW_SIZE, missing, squeeze_types
from ._util import (
    UNSET,
    Tensor,
    attach,
    batched_shape,
    edge_of,
    first_order,
    like,
    needs_grad,
    not_tensor,
)
from .batching import batched_sum_to, sum_to_shape

if TYPE_CHECKING:
    from .._core._types import Dims

__all__ = [
    "reshape",
    "view",
    "flatten",
    "transpose",
    "permute",
    "squeeze",
    "unsqueeze",
    "expand",
    "broadcast_to",
    "sum_to_size",
    "repeat",
]


def _shape_arg(shape: Sequence[Any]) -> tuple[int, ...]:
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _dim(dim: int, ndim: int) -> int:
    """Wrap a negative dim, with PyTorch's message when it is out of range."""
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim % max(ndim, 1)


@backward(batched=True, light=True)
def ViewBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (grads[0].reshape(batched_shape(grads[0], self.shape, batch)),)


#: PyTorch's name for a reshape that had to copy, and for the view ``matmul`` puts on a product
#: of folded batch dims (``_unsafe_view``); the same rule.
UnsafeViewBackward0 = variant("UnsafeViewBackward0", ViewBackward0, doc="Backward of a reshape that copied.")

#: PyTorch's name for a reshape that is a view of a non-contiguous tensor (``_reshape_alias``).
ReshapeAliasBackward0 = variant(
    "ReshapeAliasBackward0", ViewBackward0, doc="Backward of a reshape viewing a non-contiguous tensor."
)


def _view_or_copy(input: Tensor, shape: tuple[Any, ...], must_view: bool) -> Tensor:
    new_shape = _shape_arg(shape)
    if new_shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    data = input.data
    try:
        out_data = data.reshape(new_shape)
    except ValueError:
        raise RuntimeError(
            f"shape '{list(new_shape)}' is invalid for input of size {input.data.size}"
        ) from None
    # numpy collapses ``.base`` to the array owning the memory: a view has data's owner.
    owner = out_data.base
    cls: type[Node] = ViewBackward0
    if owner is not None and (owner is data or owner is data.base):
        out = make_view(input, out_data)
    elif must_view:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    else:
        # a copy: PyTorch's reshape is _unsafe_view of a (contiguous) clone, and records both
        out = like(out_data, input)
        cls = UnsafeViewBackward0
        if needs_grad(input):
            from .unary_math import CloneBackward0  # (unary_math's ops come after the shapes')

            copied = like(out_data.reshape(input.data.shape), input)
            attach(CloneBackward0((edge_of(input),)), copied)
            input = copied
    if needs_grad(input):
        # PyTorch's reshape is ``view`` of a contiguous tensor, else ``_reshape_alias``
        if cls is ViewBackward0 and not must_view and not data.flags.c_contiguous:
            cls = ReshapeAliasBackward0
        node = attach(cls((edge_of(input),)), out)
        node.shape = input.data.shape
    return out


def unsafe_view(input: Tensor, shape: tuple[int, ...], cls: type[Node] | None = None) -> Tensor:
    """``input`` (an op's fresh result) reshaped, recorded as ``UnsafeViewBackward0`` (or
    ``cls``), as PyTorch's ``matmul`` records the product of folded batch dims viewed back (or a
    vector-matrix product squeezed in place, ``SqueezeBackward4``). Not a view for autograd (that
    is the "unsafe"): an in-place op on it is an in-place op on a tensor of its own, since
    nothing else sees ``input``."""
    out = like(input.data.reshape(shape), input)
    if needs_grad(input):
        node = attach((cls or UnsafeViewBackward0)((edge_of(input),)), out)
        node.shape = input.data.shape
    return out


@op(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0)
def reshape(input: Tensor, *shape: Dims) -> Tensor:
    """The same data with a new shape (one dim may be -1): a view when numpy can make one,
    else a copy."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("reshape", input)
    if not shape:
        raise missing("reshape", "shape")
    return _view_or_copy(input, shape, False)


@op(ViewBackward0, top_level=False)
def view(input: Tensor, *shape: Dims) -> Tensor:
    """A view with a new shape (one dim may be -1); RuntimeError if the strides do not allow one."""
    if not shape:
        raise TypeError(NO_VIEW_SIZE)
    return _view_or_copy(input, shape, True)


@op(ViewBackward0, ReshapeAliasBackward0, UnsafeViewBackward0)
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim`` to ``end_dim`` into one."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("flatten", input)
    shape = input.data.shape
    start, end = _dim(start_dim, len(shape)), _dim(end_dim, len(shape))
    if not shape:  # (its dims are checked as a 1-D tensor's: [-1, 0])
        return reshape(input, (1,))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:  # nothing to merge: torch returns the tensor itself
        return input
    merged = int(np.prod(shape[start : end + 1]))
    return reshape(input, shape[:start] + (merged,) + shape[end + 1 :])


@backward(batched=True, light=True)
def PermuteBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (grads[0].permute((*range(batch), *(batch + d for d in np.argsort(self.dims).tolist()))),)


@op(PermuteBackward0)
def permute(input: Tensor, *dims: Dims) -> Tensor:
    """Reorder the dimensions."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("permute", input)
    if not dims:
        raise missing("permute", "dims")
    order = _shape_arg(dims)
    ndim = input.data.ndim
    if len(order) != ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to len(dims) = {len(order)}")
    order = tuple(_dim(d, ndim) for d in order)
    if len(set(order)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    out = make_view(input, input.data.transpose(order))
    if needs_grad(input):
        node = attach(PermuteBackward0((edge_of(input),)), out)
        node.dims = order
    return out


@backward(batched=True, light=True)
def TransposeBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    if first_order() and g.data.ndim:
        # a plain tensor over the transposed array, not a view of ``g``: nothing but it then
        # holds the array's memory, so AccumulateGrad can take it as ``.grad`` without a copy
        # (``linear``'s weight gradient comes through here, made transposed to come out
        # contiguous, as PyTorch makes it)
        return (like(g.data.swapaxes(self.dim0 + batch, self.dim1 + batch), g),)
    return (g.transpose(self.dim0 + batch, self.dim1 + batch),)


#: ``t()``'s node: PyTorch names it apart from ``transpose``'s (same rule).
TBackward0 = variant("TBackward0", TransposeBackward0, doc="Backward of ``t()``: the transpose back.")


@op(TransposeBackward0, aliases=("swapdims",))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("transpose", input)
    return swapped(input, dim0, dim1, TransposeBackward0)


def swapped(input: Tensor, dim0: int, dim1: int, cls: type[Node]) -> Tensor:
    """``transpose``, recorded as ``cls`` (``TransposeBackward0``, or ``t()``'s ``TBackward0``)."""
    ndim = input.data.ndim
    d0, d1 = _dim(dim0, ndim), _dim(dim1, ndim)
    out = make_view(input, input.data.swapaxes(d0, d1) if ndim else input.data.view())
    if needs_grad(input):
        node = attach(cls((edge_of(input),)), out)
        node.dim0, node.dim1 = d0, d1
    return out


#: PyTorch 2.13's deprecation warnings for ``Tensor.T`` on other than 2 dimensions.
T_OF_0D = "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases."
MT_OF_0D = "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases."
T_OF_ND = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
    "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
    "matrices or `x.permute(*aiograd.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
    "tensor."
)


@op(PermuteBackward0, name="T", top_level=False)
def t_property(input: Tensor) -> Tensor:
    """``Tensor.T``: all dimensions reversed (the transpose, for a matrix); a view recorded as
    ``PermuteBackward0``. On other than 2 dimensions it warns, as PyTorch does (deprecated)."""
    ndim = input.data.ndim
    if ndim != 2:
        warnings.warn(T_OF_0D if ndim == 0 else T_OF_ND, UserWarning, stacklevel=2)
    return permute(input, tuple(range(ndim - 1, -1, -1)))


@op(TransposeBackward0, name="mT", top_level=False)
def mT_property(input: Tensor) -> Tensor:
    """``Tensor.mT``: the last two dimensions swapped (on a 0-D tensor: the tensor itself,
    with PyTorch's deprecation warning)."""
    if input.data.ndim == 0:
        warnings.warn(MT_OF_0D, UserWarning, stacklevel=2)
        return input
    if input.data.ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got "
            f"{input.data.ndim}-D tensor."
        )
    return transpose(input, -2, -1)


@backward(batched=True, light=True)
def SqueezeBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``squeeze()``; its subclasses name ``squeeze(dim)`` and ``squeeze(dims)`` as PyTorch does."""
    return (grads[0].reshape(batched_shape(grads[0], self.shape, batch)),)


SqueezeBackward1 = variant("SqueezeBackward1", SqueezeBackward0)


SqueezeBackward2 = variant("SqueezeBackward2", SqueezeBackward0)

#: The in-place ``squeeze_(dim)`` of a fresh result, as ``matmul`` of a vector and a matrix ends.
SqueezeBackward4 = variant("SqueezeBackward4", SqueezeBackward0)


# The forms of ``squeeze``, for type checkers: no ``dim`` (squeeze all), or a dim or dims (the
# default ``UNSET`` stands for no ``dim``, so that an explicit None is refused, as in PyTorch).
@overload
def squeeze(input: Tensor) -> Tensor: ...
@overload
def squeeze(input: Tensor, dim: int | Sequence[int]) -> Tensor: ...


@op(SqueezeBackward0, SqueezeBackward1, SqueezeBackward2)
def squeeze(input: Tensor, dim: int | Sequence[int] = UNSET) -> Tensor:
    """Remove dimensions of size 1 (all, or those in ``dim`` that have size 1)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("squeeze", input)
    shape = input.data.shape
    if dim is UNSET:
        cls: type[SqueezeBackward0] = SqueezeBackward0
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        if dim is None or isinstance(dim, (bool, str)):
            raise TypeError(squeeze_types(dim))
        single = isinstance(dim, (int, np.integer))
        cls = SqueezeBackward1 if single else SqueezeBackward2
        wrapped = [_dim(int(d), len(shape)) for d in ((dim,) if single else dim)]
        for i, d in enumerate(wrapped):
            if d in wrapped[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        axes = tuple(sorted(d for d in wrapped if shape and shape[d] == 1))
    out = make_view(input, input.data.squeeze(axis=axes) if axes else input.data.view())
    if needs_grad(input):
        node = attach(cls((edge_of(input),)), out)
        node.shape = shape
    return out


@backward(batched=True, light=True)
def UnsqueezeBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (grads[0].squeeze(self.dim + batch),)


@op(UnsqueezeBackward0)
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dimension of size 1 at ``dim``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("unsqueeze", input)
    ndim = input.data.ndim + 1
    d = _dim(dim, ndim)
    out = make_view(input, input._device.xp.expand_dims(input.data, d))
    if needs_grad(input):
        node = attach(UnsqueezeBackward0((edge_of(input),)), out)
        node.dim = d
    return out


@backward(batched=True)
def ExpandBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (reduce_grad(grads[0], self.shape, batch),)


@op(ExpandBackward0)
def expand(input: Tensor, *sizes: Dims) -> Tensor:
    """Broadcast to ``sizes`` without copying; -1 keeps a dimension's size."""
    if not sizes:
        raise missing("expand", "size")
    target = _shape_arg(sizes)
    shape = input.data.shape
    if len(target) < len(shape):
        raise RuntimeError(
            f"expand(aiograd.Tensor{{{list(shape)}}}, size={list(target)}): the number of sizes "
            f"provided ({len(target)}) must be greater or equal to the number of dimensions in "
            f"the tensor ({len(shape)})"
        )
    lead = len(target) - len(shape)
    for i, s in enumerate(target):
        if i < lead and s < 0:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing "
                f"dimension {i}"
            )
        if i >= lead and s != -1 and shape[i - lead] not in (1, s):
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size "
                f"({shape[i - lead]}) at non-singleton dimension {i}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(shape)}"
            )
    resolved = tuple(
        (shape[i - lead] if s == -1 and i >= lead else s) for i, s in enumerate(target)
    )
    data = input._device.xp.broadcast_to(input.data, resolved)
    if type(data) is np.ndarray and (not data.size or not any(s == 0 and n > 1 for n, s in zip(resolved, data.strides))):
        # No two elements share memory (PyTorch's ``has_internal_overlap`` says no): a writeable
        # view, as its input. A broadcast that does share memory stays read-only, as numpy makes
        # it: an in-place op on it raises PyTorch's internal-overlap error (``_inplace_util``).
        data = np.lib.stride_tricks.as_strided(input.data, resolved, data.strides)
    out = make_view(input, data)
    if needs_grad(input):
        node = attach(ExpandBackward0((edge_of(input),)), out)
        node.shape = shape
    return out


@op(ExpandBackward0)
def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    """Broadcast to ``shape`` (numpy's rules), as ``expand``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("broadcast_to", input)
    return expand(input, tuple(shape))


@op(ViewBackward0)  # (and the sum's nodes: it is a sum, then a view without the leading dims)
def sum_to_size(input: Tensor, *size: Dims) -> Tensor:
    """Sum broadcast dimensions away so that the result has shape ``size`` (broadcast's adjoint).
    As PyTorch's ``sum_to``: a ``sum(dims, keepdim=True)`` over the dims to reduce (none: the
    input itself), then a ``view`` without the leading ones (if any)."""
    if not size:
        raise missing("sum_to_size", "size")
    shape = _shape_arg(size)
    if not shape:  # PyTorch's sum_to: an empty size is a full ``sum()`` (int64 for a bool input)
        return input.sum()
    if input.data.shape == shape:
        return input
    # ``shape`` must broadcast to the input's shape, not merely with it: (1, 4) vs (3, 1) fails.
    try:
        if np.broadcast_shapes(shape, input.data.shape) != input.data.shape:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(input.data.shape)}}}.") from None
    if not needs_grad(input) and input.data.dtype.kind not in "bu":  # (no nodes: the array at once)
        return like(sum_to_shape(input.data, shape), input)
    full = input.data.shape
    lead = len(full) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and full[i + lead] != 1)
    out = input.sum(axes, keepdim=True) if axes else input
    return view(out, shape) if lead else out


@backward(batched=True)
def RepeatBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    # Each input element appears once per tile: split every dim into (tiles, size), sum tiles.
    shape, reps = self.padded_shape, self.repeats
    split = tuple(x for pair in zip(reps, shape) for x in pair)
    g = grads[0]
    summed = g.reshape(batched_shape(g, split, batch)).sum(tuple(range(batch, batch + 2 * len(shape), 2)))
    return (summed.reshape(batched_shape(g, self.shape, batch)),)


@op(RepeatBackward0, top_level=False)
def repeat(input: Tensor, *sizes: Dims) -> Tensor:
    """Tile the tensor ``sizes[i]`` times along dim ``i`` (torch's ``Tensor.repeat``)."""
    if not sizes:
        raise missing("repeat", "repeats")
    reps = _shape_arg(sizes)
    shape = input.data.shape
    if len(reps) < len(shape):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    padded = (1,) * (len(reps) - len(shape)) + shape
    if any(r < 0 for r in reps):  # (numpy's tile would say "negative dimensions are not allowed")
        out_sizes = [s * r for s, r in zip(padded, reps)]
        negative = next(n for n in out_sizes if n < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {negative}: {out_sizes}")
    out = like(input._device.xp.tile(input.data.reshape(padded), reps), input)
    if needs_grad(input):
        node = attach(RepeatBackward0((edge_of(input),)), out)
        node.shape, node.padded_shape, node.repeats = shape, padded, reps
    return out


def reduce_grad(grad: Tensor, shape: tuple[int, ...], batch: int) -> Tensor:
    """A broadcast op's gradient summed back to one input's shape (no-op when equal); a batched
    gradient keeps its ``batch`` leading dims in front."""
    if grad.data.shape == shape:
        return grad
    return batched_sum_to(grad, shape, batch) if batch else sum_to_size(grad, shape)


swapdims = transpose  # PyTorch's alias

TENSOR_METHODS = {
    "swapdims": transpose,
    "reshape": reshape,
    "view": view,
    "flatten": flatten,
    "transpose": transpose,
    "permute": permute,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "expand": expand,
    "broadcast_to": broadcast_to,
    "sum_to_size": sum_to_size,
    "repeat": repeat,
}
TENSOR_PROPERTIES = {"T": t_property, "mT": mT_property}
