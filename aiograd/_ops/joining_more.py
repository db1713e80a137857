"""More joining and shape ops, as PyTorch composes them (so its node names come out):
hstack, vstack, dstack, column_stack (``cat``), atleast_1d/2d/3d (``reshape``/``unsqueeze``),
broadcast_tensors (``expand``), broadcast_shapes, tensor_split (``narrow``: one
``SliceBackward0`` per piece), fliplr, flipud (``flip``), kron (``mul`` then
``UnsafeViewBackward0``), diff (``narrow`` and ``sub``), unravel_index (no gradient); and the
records rot90 (``Rot90Backward0``), diag_embed (``DiagEmbedBackward0``) and block_diag
(``BlockDiagBackward0``), whose backward formulas are PyTorch's (derivatives.yaml): rot90 back by
``-k``, the diagonal again, the blocks sliced out of the gradient.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._dtypes import type_name
from .._base._size import Size
from ._registry import backward, op
from ._util import Tensor, attach, common_device, edge_of, like, needs_grad, not_tensor, on, wrap
from .casting import result_type
from .elementwise import MulBackward0, SubBackward0, mul, sub
from .indexing import SliceBackward0, UnsqueezeBackward0, getitem
from .joining import CatBackward0, _as_dtype, _tensor_list, cat
from .rearrange import FlipBackward0, diagonal, flip, narrow
from .shape import (
    ExpandBackward0,
    UnsafeViewBackward0,
    ViewBackward0,
    _dim,
    expand,
    reshape,
    unsafe_view,
    unsqueeze,
)

__all__ = [
    "hstack", "vstack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d",
    "broadcast_tensors", "broadcast_shapes", "tensor_split", "fliplr", "flipud", "rot90",
    "diag_embed", "block_diag", "kron", "diff", "unravel_index",
]


# ------------------------------------------------------------------------------ atleast_Nd
def _atleast(tensors: tuple[Any, ...], fn: str, make: Any) -> Any:
    items = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else None
    for t in items if items is not None else tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}() received an invalid combination of arguments - got ({type_name(t)}), but expected one of:"
                            "\n * (Tensor input)\n * (tuple of Tensors tensors)\n")
    if items is not None:
        return tuple(make(t) for t in items)
    if len(tensors) == 1:
        return make(tensors[0])
    return tuple(make(t) for t in tensors)


def _at1(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if t.data.ndim == 0 else t


def _at2(t: Tensor) -> Tensor:
    nd = t.data.ndim
    return reshape(t, (1, 1)) if nd == 0 else unsqueeze(t, 0) if nd == 1 else t


def _at3(t: Tensor) -> Tensor:
    nd = t.data.ndim
    if nd == 0:
        return reshape(t, (1, 1, 1))
    if nd == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if nd == 2 else t


@op(ViewBackward0)
def atleast_1d(*tensors: Tensor | Sequence[Tensor]) -> Any:
    """Each tensor with at least one dim (a 0-d one as shape ``(1,)``); one tensor in, one out."""
    return _atleast(tensors, "atleast_1d", _at1)


@op(ViewBackward0, UnsqueezeBackward0)
def atleast_2d(*tensors: Tensor | Sequence[Tensor]) -> Any:
    """Each tensor with at least two dims (new ones in front); one tensor in, one out."""
    return _atleast(tensors, "atleast_2d", _at2)


@op(ViewBackward0, UnsqueezeBackward0)
def atleast_3d(*tensors: Tensor | Sequence[Tensor]) -> Any:
    """Each tensor with at least three dims (numpy's rule: a vector is ``(1, n, 1)``, a matrix
    ``(m, n, 1)``); one tensor in, one out."""
    return _atleast(tensors, "atleast_3d", _at3)


# ------------------------------------------------------------------------------ stacks
def _stack_list(tensors: Any, fn: str) -> list[Tensor]:
    items = _tensor_list(tensors, fn)
    if not items:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return items


@op(CatBackward0)
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along the columns: ``cat`` along dim 1, or dim 0 for vectors."""
    items = [_at1(t) for t in _stack_list(tensors, "hstack")]
    return cat(items, 0 if items[0].data.ndim == 1 else 1)


@op(CatBackward0)
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along the rows: ``cat`` of the tensors made at least 2-D along dim 0."""
    return cat([_at2(t) for t in _stack_list(tensors, "vstack")], 0)


@op(CatBackward0)
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along the depth: ``cat`` of the tensors made at least 3-D along dim 2."""
    return cat([_at3(t) for t in _stack_list(tensors, "dstack")], 2)


@op(CatBackward0)
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Join as columns: vectors (and 0-d tensors) become columns, then ``cat`` along dim 1."""
    items = _stack_list(tensors, "column_stack")
    return cat([reshape(t, (t.data.size, 1)) if t.data.ndim <= 1 else t for t in items], 1)


# ------------------------------------------------------------------------------ broadcasting
@op()
def broadcast_shapes(*shapes: int | Sequence[int]) -> Size:
    """The shape that tensors of ``shapes`` broadcast to (a number is a 1-D shape)."""
    dims: list[tuple[int, ...]] = []
    for s in shapes:
        shape = (operator.index(s),) if isinstance(s, (int, np.integer)) else tuple(operator.index(n) for n in s)
        if any(n < 0 for n in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        dims.append(shape)
    result: list[int] = [1] * max((len(s) for s in dims), default=0)
    for k, shape in enumerate(dims):
        for i in range(1, len(shape) + 1):
            n = shape[-i]
            if n == 1:
                continue
            if result[-i] == 1:
                result[-i] = n
            elif result[-i] != n:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {n} at {-i}! Mismatching argument at index "
                    f"{k} had {tuple(shape)}; but expected shape should be broadcastable to {result}"
                )
    return Size(result)


@op(ExpandBackward0)
def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common shape (one already of that shape is returned as is)."""
    items = _tensor_list(list(tensors), "broadcast_tensors")
    shape: tuple[int, ...] = ()
    for t in items:
        from ._util import infer_size

        shape = infer_size(shape, t.data.shape)
    common_device(*items)
    return tuple(t if t.data.shape == shape else expand(t, shape) for t in items)


# ------------------------------------------------------------------------------ tensor_split
@op(SliceBackward0)
def tensor_split(input: Tensor, indices_or_sections: Tensor | int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of ``input`` split along ``dim`` into ``sections`` nearly equal pieces (the first
    ``size % sections`` one longer), or at the ``indices`` (a list, or a 1-D int64 tensor; a 0-d
    one is a number of sections)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("tensor_split", input)
    if input.data.ndim == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    spec: Any = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.data.dtype != np.int64:
            from .._base._dtypes import scalar_type_name

            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{scalar_type_name(spec.data.dtype)}")
        if spec.data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {spec.data.ndim} dims")
        spec = int(spec.data) if spec.data.ndim == 0 else [int(i) for i in spec.data.tolist()]
    d = _dim(dim, input.data.ndim)
    n = input.data.shape[d]
    if isinstance(spec, (int, np.integer)):
        sections = int(spec)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(n, sections)
        bounds, start = [], 0
        for i in range(sections):
            end = start + small + (1 if i < extra else 0)
            bounds.append((start, end))
            start = end
    else:
        cuts = [0, *(operator.index(i) for i in spec), n]
        bounds = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]
    out = []
    for a, b in bounds:
        a = min(max(a + n if a < 0 else a, 0), n)
        b = min(max(b + n if b < 0 else b, 0), n)
        out.append(narrow(input, d, a, max(b - a, 0)))
    return tuple(out)


# ------------------------------------------------------------------------------ flips, rot90
@op(FlipBackward0)
def fliplr(input: Tensor) -> Tensor:
    """A copy with the columns (dim 1) in reverse order; at least 2-D."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("fliplr", input)
    if input.data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


@op(FlipBackward0)
def flipud(input: Tensor) -> Tensor:
    """A copy with the rows (dim 0) in reverse order; at least 1-D."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("flipud", input)
    if input.data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


@backward(batched=True)
def Rot90Backward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (rot90(grads[0], -self.k, [d + batch for d in self.dims]),)


@op(Rot90Backward0)
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """A copy rotated by ``k`` quarter turns in the plane of ``dims``, from the first towards
    the second."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("rot90", input)
    dims = list(dims)
    nd = input.data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    d0, d1 = _dim(dims[0], nd), _dim(dims[1], nd)
    k = operator.index(k)
    out = like(input._device.xp.rot90(input.data, k, (d0, d1)).copy(), input)
    if needs_grad(input):
        node = attach(Rot90Backward0((edge_of(input),)), out)
        node.k, node.dims = k, (d0, d1)
    return out


# ------------------------------------------------------------------------------ diag_embed
@backward(batched=True)
def DiagEmbedBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's: the diagonal of the gradient, read back."""
    return (diagonal(grads[0], self.offset, self.dim1 + batch, self.dim2 + batch),)


@op(DiagEmbedBackward0)
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Zeros with the last dim of ``input`` on diagonal ``offset`` of the 2-D slices over the
    new dims ``dim1`` and ``dim2``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("diag_embed", input)
    data = input.data
    nd = data.ndim + 1
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = operator.index(offset)
    n = (data.shape[-1] if data.ndim else 1) + abs(k)
    lead = list(data.shape[:-1])
    shape = [0] * nd
    rest = iter(lead)
    for i in range(nd):
        shape[i] = n if i in (d1, d2) else next(rest)
    xp = input._device.xp
    z = xp.zeros(shape, dtype=data.dtype)
    from .rearrange import _diagonal_of

    _diagonal_of(xp, z, k, d1, d2)[...] = data
    out = like(z, input)
    if needs_grad(input):
        node = attach(DiagEmbedBackward0((edge_of(input),)), out)
        node.offset, node.dim1, node.dim2 = k, d1, d2
    return out


# ------------------------------------------------------------------------------ block_diag
@backward(batched=True)
def BlockDiagBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    lead = (slice(None),) * batch
    out: list[Tensor | None] = []
    r = c = 0
    for edge, shape, (h, w), dtype in zip(self.next_edges, self.shapes, self.blocks, self.dtypes):
        if edge is not None:
            piece = getitem(g, lead + (slice(r, r + h), slice(c, c + w)))
            out.append(_as_dtype(reshape(piece, g.data.shape[:batch] + shape), dtype))
        else:
            out.append(None)
        r, c = r + h, c + w
    return tuple(out)


@op(BlockDiagBackward0)
def block_diag(*tensors: Tensor) -> Tensor:
    """The block diagonal matrix of the tensors (0-d: a 1x1 block, 1-D: one row)."""
    items = list(tensors)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise not_tensor("block_diag", t, i + 1, "tensors")
        if t.data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.data.ndim} dimensions")
    blocks = [(1, 1) if t.data.ndim == 0 else (1, t.data.shape[0]) if t.data.ndim == 1 else t.data.shape for t in items]
    dev = common_device(*items) if items else None
    dtype = result_type(*items) if items else np.dtype(np.float32)
    xp = dev.xp if dev is not None else np
    rows = sum(b[0] for b in blocks) if items else 1  # (torch's empty block_diag is (1, 0))
    z = xp.zeros((rows, sum(b[1] for b in blocks)), dtype=dtype)
    r = c = 0
    for t, (h, w) in zip(items, blocks):
        z[r : r + h, c : c + w] = t.data.reshape(h, w)
        r, c = r + h, c + w
    out = on(wrap(z), dev) if dev is not None else wrap(z)
    if needs_grad(*items):
        node = attach(BlockDiagBackward0(tuple(edge_of(t) for t in items)), out)
        node.shapes = [t.data.shape for t in items]
        node.blocks, node.dtypes = blocks, [t.data.dtype for t in items]
    return out


# ------------------------------------------------------------------------------ kron
@op(UnsafeViewBackward0, MulBackward0)
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: every entry of ``input`` times the whole of ``other``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("kron", input)
    if not isinstance(other, Tensor):
        raise not_tensor("kron", other, 2, "other")
    nd = max(input.data.ndim, other.data.ndim)
    a_shape = (1,) * (nd - input.data.ndim) + input.data.shape
    b_shape = (1,) * (nd - other.data.ndim) + other.data.shape
    a_view = [n for s in a_shape for n in (s, 1)]
    b_view = [n for s in b_shape for n in (1, s)]
    prod = mul(reshape(input, a_view), reshape(other, b_view))
    return unsafe_view(prod, tuple(a * b for a, b in zip(a_shape, b_shape)))


# ------------------------------------------------------------------------------ diff
def _diff_operand(t: Any, input: Tensor, arg: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"diff(): argument '{arg}' must be Tensor, not {type_name(t)}")
    if t.data.ndim != input.data.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    return t


@op(SubBackward0, CatBackward0, SliceBackward0)
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first);
    ``!=`` (xor) of neighbours for bool tensors."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("diff", input)
    if input.data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if prepend is not None:
        _diff_operand(prepend, input, "prepend")
    if append is not None:
        _diff_operand(append, input, "append")
    d = _dim(dim, input.data.ndim)
    if n == 0:
        return input
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, input, append) if p is not None]
        input = cat(parts, d)
    for _ in range(n):
        size = input.data.shape[d]
        if size == 0:
            break
        hi, lo = narrow(input, d, 1, size - 1), narrow(input, d, 0, size - 1)
        if input.data.dtype == np.bool_:
            input = like(hi.data != lo.data, hi)
        else:
            input = sub(hi, lo)
    return input


# ------------------------------------------------------------------------------ unravel_index
@op()
def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (negative ones count
    from the end), one int64 tensor per dim."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type_name(indices)}")
    if indices.data.dtype.kind not in "iu" or indices.data.dtype == np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {_torch_dtype(indices.data.dtype)}")
    dims = (operator.index(shape),) if isinstance(shape, (int, np.integer)) else tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    total = int(np.prod(dims, dtype=np.int64))
    idx = np.asarray(indices.data).astype(np.int64)
    if total:
        idx = idx % total  # (torch wraps every index into range)
    coords = np.unravel_index(idx, dims) if dims else ()
    return tuple(like(np.asarray(c, dtype=np.int64), indices) for c in coords)


def _torch_dtype(dtype: np.dtype[Any]) -> str:
    return "torch." + str(np.dtype(dtype))


TENSOR_METHODS = {
    "tensor_split": tensor_split,
    "fliplr": fliplr,
    "flipud": flipud,
    "rot90": rot90,
    "diag_embed": diag_embed,
    "kron": kron,
    "diff": diff,
}
