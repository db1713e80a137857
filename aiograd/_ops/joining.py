"""Joining and splitting: cat (concat), stack, split, chunk, unbind.

cat and stack accept tensors that need no gradient next to ones that do; their backward hands
each input that needs one its part of the gradient. split, chunk and unbind record ONE node with
several outputs (``output_nr`` 0..k-1); its backward joins the outputs' gradients again, with
zeros for outputs that received none.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name, type_name
from .._core._views import MULTI_OUTPUT_NODE, make_view
from ._registry import backward, op, variant
from ._util import (
    UNSET,
    Node,
    Tensor,
    attach,
    common_device,
    edge_of,
    like,
    needs_grad,
    not_tensor,
    on,
    wrap,
)
from .casting import result_type
from .indexing import IndexSelectBackward0, getitem, index_select
from .shape import ExpandBackward0, ViewBackward0, _dim, expand, flatten, reshape, unsqueeze
from .unary_math import clone

__all__ = ["cat", "concat", "concatenate", "stack", "split", "split_with_sizes", "chunk", "unbind",
           "meshgrid", "cartesian_prod", "repeat_interleave"]

_FULL = slice(None)


def _tensor_list(tensors: Any, fn: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type_name(tensors)}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type_name(t)}")
    return tensors


def _promoted_arrays(tensors: list[Tensor]) -> list[Any]:
    """The tensors' arrays in their common dtype by PyTorch's rule (``casting.result_type``:
    int64 with float32 is float32, where numpy would say float64). The arrays are cast, not the
    tensors, so that the node's edges lead to the inputs themselves, as in PyTorch; the backward
    casts each input's gradient back to its own dtype (``_as_dtype``)."""
    arrays = [t.data for t in tensors]
    first = arrays[0].dtype
    if all(a.dtype == first for a in arrays):
        return arrays
    dtype = result_type(*tensors)
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


def _as_dtype(grad: Tensor, dtype: np.dtype[Any]) -> Tensor:
    """A gradient cast back to its input's dtype (after type promotion in forward)."""
    return grad if grad.data.dtype == dtype else grad.to(dtype)


# ------------------------------------------------------------------------------ cat
@backward(batched=True)
def CatBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    lead = (_FULL,) * (self.dim + batch)
    out: list[Tensor | None] = []
    offset = 0
    for edge, size, dtype in zip(self.next_edges, self.sizes, self.dtypes):
        if size is None:  # a legacy empty 1-D input, skipped in forward
            out.append(like(g._device.xp.zeros((0,), dtype=dtype), g) if edge is not None else None)
            continue
        if edge is not None:
            out.append(_as_dtype(getitem(g, lead + (slice(offset, offset + size),)), dtype))
        else:
            out.append(None)
        offset += size
    return tuple(out)


@op(CatBackward0, aliases=("concat", "concatenate"))
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenate tensors along an existing dimension ``dim``."""
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    # PyTorch skips 1-D empty tensors (legacy behaviour), whatever the other tensors' shapes.
    skip = [t.data.shape == (0,) for t in tensors]
    arrays = _promoted_arrays(tensors)  # (the skipped tensors count too, as in PyTorch)
    used = [(i, arrays[i]) for i in range(len(tensors)) if not skip[i]]
    if not used:  # all legacy empty: an empty result, whatever ``dim`` (PyTorch checks none)
        used, dim = [(0, arrays[0])], 0
    ref = used[0][1]
    d = _dim(dim, ref.ndim)
    for i, a in used[1:]:
        if a.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {a.ndim}")
        for k in range(ref.ndim):
            if k != d and a.shape[k] != ref.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref.shape[k]} but got size {a.shape[k]} for tensor number {i} in the list."
                )
    dev = common_device(*tensors)
    out = on(wrap(dev.xp.concatenate([a for _, a in used], axis=d)), dev)
    if needs_grad(*tensors):
        node = attach(CatBackward0(tuple(edge_of(t) for t in tensors)), out)
        node.dim = d
        node.sizes = [None if s else t.data.shape[d] for t, s in zip(tensors, skip)]
        node.dtypes = [t.data.dtype for t in tensors]
    return out


concat = cat
concatenate = cat


# ------------------------------------------------------------------------------ stack
@backward(batched=True)
def StackBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    pieces = unbind(grads[0], self.dim + batch)
    return tuple(
        _as_dtype(p, dtype) if edge is not None else None
        for p, edge, dtype in zip(pieces, self.next_edges, self.dtypes)
    )


@op(StackBackward0)
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join equally shaped tensors along a new dimension ``dim``."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].data.shape
    for i, t in enumerate(tensors):
        if t.data.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.data.shape)} at entry {i}"
            )
    d = _dim(dim, len(shape) + 1)
    dev = common_device(*tensors)
    out = on(wrap(dev.xp.stack(_promoted_arrays(tensors), axis=d)), dev)
    if needs_grad(*tensors):
        node = attach(StackBackward0(tuple(edge_of(t) for t in tensors)), out)
        node.dim = d
        node.dtypes = [t.data.dtype for t in tensors]
    return out


# ------------------------------------------------------------------------------ split, chunk
def _filled(node: Any, grads: list[Tensor | None], batch: int) -> list[Tensor] | None:
    """A multi-output node's gradients, zeros (behind ``batch`` batch dims) for the outputs that
    got none (None if none did)."""
    first = next((g for g in grads if g is not None), None)
    if first is None:
        return None
    dtype, dev = first.data.dtype, first._device
    return [
        g if g is not None else on(wrap(dev.xp.zeros(first.data.shape[:batch] + shape, dtype=dtype)), dev)
        for g, shape in zip(grads, node.shapes)
    ]


@backward(batched=True)
def SplitBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    filled = _filled(self, grads, batch)
    return (None if filled is None else cat(filled, self.dim + batch),)


SplitWithSizesBackward0 = variant("SplitWithSizesBackward0", SplitBackward0)


@backward(batched=True)
def UnbindBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    filled = _filled(self, grads, batch)
    return (None if filled is None else stack(filled, self.dim + batch),)


def _record(input: Tensor, pieces: list[Any], cls: type[Node], d: int) -> tuple[Tensor, ...]:
    """The pieces are views of ``input`` (they share its version counter); with a graph they are
    outputs of one node, and PyTorch refuses in-place ops on such views (MULTI_OUTPUT_NODE)."""
    outs = tuple(make_view(input, p, MULTI_OUTPUT_NODE) for p in pieces)
    if needs_grad(input):
        node = cls((edge_of(input),))
        node.num_inputs = len(outs)  # type: ignore[misc]
        node.dim = d
        node.shapes = [o.data.shape for o in outs]
        attach(node, *outs)
    return outs


def _split_sizes(input: Tensor, sizes: list[int], d: int, cls: type[Node]) -> tuple[Tensor, ...]:
    data = input.data
    lead = (_FULL,) * d
    outs = []
    start = 0
    for s in sizes:
        outs.append(data[lead + (slice(start, start + s),)])
        start += s
    return _record(input, outs, cls, d)


def _check_1d(input: Tensor, fn: str) -> None:
    if input.data.ndim == 0:
        raise RuntimeError(f"{fn} expects at least a 1-dimensional tensor")


@op(SplitWithSizesBackward0)
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split into pieces of the given sizes along ``dim`` (they must add up to its size)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("split_with_sizes", input)
    _check_1d(input, "split")
    sizes = [int(s) for s in split_sizes]
    d = _dim(dim, input.data.ndim)
    n = input.data.shape[d]
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes}"
        )
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {d}), but got split_sizes={sizes}"
        )
    return _split_sizes(input, sizes, d, SplitWithSizesBackward0)


@op(SplitBackward0, SplitWithSizesBackward0)
def split(input: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split into chunks of ``split_size`` along ``dim`` (the last may be smaller), or into
    pieces of the sizes in a list."""
    if not isinstance(split_size_or_sections, (int, np.integer)):
        return split_with_sizes(input, split_size_or_sections, dim)
    _check_1d(input, "split")
    size = int(split_size_or_sections)
    d = _dim(dim, input.data.ndim)
    n = input.data.shape[d]
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        )
    num = max(-(-n // size), 1) if size else 1
    sizes = [size] * (num - 1) + [n - size * (num - 1)]
    return _split_sizes(input, sizes, d, SplitBackward0)


@op(SplitBackward0, SplitWithSizesBackward0)
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into at most ``chunks`` equal pieces along ``dim`` (the last may be smaller, and
    there may be fewer pieces, as in PyTorch)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("chunk", input)
    _check_1d(input, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim(dim, input.data.ndim)
    n = input.data.shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        return _split_sizes(input, [0] * chunks, d, SplitWithSizesBackward0)
    return split(input, size, d)


@op(UnbindBackward0)
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, that dimension removed."""
    data = input.data
    if data.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _dim(dim, data.ndim)
    lead = (_FULL,) * d
    pieces = [data[lead + (i, Ellipsis)] for i in range(data.shape[d])]
    return _record(input, pieces, UnbindBackward0, d)


TENSOR_METHODS = {
    "split": split,
    "split_with_sizes": split_with_sizes,
    "chunk": chunk,
    "unbind": unbind,
}


# ------------------------------------------------------------------------------ meshgrid, cartesian_prod
_MESHGRID_WARNING = "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument."


@op(ExpandBackward0)
def meshgrid(*tensors: Tensor | Sequence[Tensor], indexing: str | None = None) -> tuple[Tensor, ...]:
    """The grids of the 0-D or 1-D ``tensors``: the i-th output holds ``tensors[i]`` along dim i
    (``indexing="ij"``, the default, with PyTorch's warning when it is not given) or with the
    first two dims swapped (``"xy"``, Cartesian); each is an expanded view of its input."""
    items = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if not items:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise not_tensor("meshgrid", t, i + 1, "tensors")
        if t.data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    if any(t.data.dtype != items[0].data.dtype for t in items):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    common_device(*items)
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    order = list(range(len(items)))
    if indexing == "xy" and len(items) >= 2:
        order[0], order[1] = 1, 0
    shape = [int(items[i].data.size) for i in order]
    grids = []
    for t in items:
        view_shape = [1] * len(items)
        view_shape[order.index(len(grids))] = -1
        grids.append(expand(reshape(t, view_shape), shape))
    return tuple(grids)


@op(StackBackward0)
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The Cartesian product of the 1-D ``tensors``: one row per combination (itertools.product's
    order); a single tensor is returned as it is."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise not_tensor("cartesian_prod", t, 1, "tensors")
        if t.data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.data.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([flatten(g) for g in grids], 1)


# ------------------------------------------------------------------------------ repeat_interleave
def _repeat_counts(repeats: Tensor, output_size: int | None) -> Tensor:
    """``repeat_interleave(repeats)``: each index ``i`` repeated ``repeats[i]`` times."""
    r = repeats.data
    if r.dtype.kind not in "iu":
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{scalar_type_name(r.dtype)}'")
    if r.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if r.size and int(r.min()) < 0:
        raise RuntimeError("repeats can not be negative")
    xp = repeats._device.xp
    data = xp.repeat(xp.arange(r.shape[0], dtype=r.dtype), r)
    if output_size is not None and output_size != data.shape[0]:
        raise RuntimeError("allocated size does not match required size")
    return like(data, repeats)


_FUNCTION_FORMS = (
    "\n * (Tensor input, Tensor repeats, int dim = None, *, int output_size = None)"
    "\n * (Tensor repeats, *, int output_size = None)"
    "\n * (Tensor input, int repeats, int dim = None, *, int output_size = None)\n"
)
_METHOD_FORMS = (
    "\n * (Tensor repeats, int dim = None, *, int output_size = None)"
    "\n * (int repeats, int dim = None, *, int output_size = None)\n"
)


def _invalid_repeats(got: str, forms: str = _FUNCTION_FORMS) -> TypeError:
    return TypeError(f"repeat_interleave() received an invalid combination of arguments - got ({got}), but expected one of:{forms}")


def _is_repeats(repeats: Any) -> bool:
    return isinstance(repeats, Tensor) or (isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool))


@op(ViewBackward0, IndexSelectBackward0)
def repeat_interleave(
    input: Tensor, repeats: Tensor | int | None = None, dim: int | None = UNSET, *, output_size: int | None = None
) -> Tensor:
    """Each element of ``input`` (along ``dim``; of the flattened tensor without one) repeated
    ``repeats`` times (a number, or a tensor of one count per element); with only a tensor of
    counts, ``repeat_interleave(repeats)``: each index repeated that many times."""
    if repeats is None and dim is UNSET:
        return _repeat_counts(input, output_size)
    if not _is_repeats(repeats):
        got = "Tensor, " + (type_name(repeats) if repeats is not None else f"dim={type_name(dim)}")
        raise _invalid_repeats(got)
    dim = None if dim is UNSET else dim
    x = flatten(input) if dim is None else input
    d = 0 if dim is None else _dim(dim, input.data.ndim)
    if not isinstance(repeats, Tensor):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        shape = list(x.data.shape)
        wide = expand(unsqueeze(x, d + 1), [*shape[: d + 1], int(repeats), *shape[d + 1 :]])
        return flatten(clone(wide), d, d + 1)
    if repeats.data.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    size = x.data.shape[d] if x.data.ndim else 1
    if repeats.data.size == 1:
        repeats = like(repeats._device.xp.broadcast_to(repeats.data.reshape(1), (size,)), repeats)
    elif repeats.data.shape[0] != size:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got repeats.size(0) = {repeats.data.shape[0]} "
            f"and input.size({d}) = {size}"
        )
    return index_select(x, d, _repeat_counts(repeats, output_size))


def _repeat_interleave_method(
    input: Tensor, repeats: Tensor | int | None = None, dim: int | None = None, *, output_size: int | None = None
) -> Tensor:
    """``repeat_interleave(self, repeats, dim)``: each element (along ``dim``; of the flattened
    tensor without one) repeated ``repeats`` times (a number, or a tensor of one count per element)."""
    if not _is_repeats(repeats):
        raise _invalid_repeats(type_name(repeats) if repeats is not None else "", _METHOD_FORMS)
    return repeat_interleave(input, repeats, dim, output_size=output_size)


TENSOR_METHODS["repeat_interleave"] = _repeat_interleave_method
