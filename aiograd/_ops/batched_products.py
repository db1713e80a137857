"""``bmm`` and the batched paths of PyTorch's ``matmul`` (``at::native::_matmul_impl``).

A product with an operand of 3 or more dims is, as in PyTorch, a composite, so that it records
PyTorch's nodes: either the batch dims of the larger operand fold into rows of one 2-D product
(``should_fold``; that product is in ``linalg``, whose ``matmul`` it calls), or both operands are
broadcast to one batch (``ExpandBackward0``), flattened to 3-D (``ViewBackward0``, or a copy's
``UnsafeViewBackward0`` over ``CloneBackward0``), multiplied by ``bmm`` (``BmmBackward0``) and
viewed back (``UnsafeViewBackward0``), as ``broadcast_bmm`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._registry import backward, op
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    first_order,
    infer_size,
    like,
    needs_grad,
    not_tensor,
    on,
    save,
    wrap,
)
from .shape import expand, reshape, squeeze, unsafe_view, unsqueeze

__all__ = ["BmmBackward0", "bmm", "broadcast_bmm", "should_fold", "stacked_matmul"]


@backward(saved=("a", "b"), batched=True, mixed=None)
def BmmBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``g @ b^T`` and ``a^T @ g`` (batch by batch; a leading batch of gradients broadcasts)."""
    g = grads[0]
    ea, eb = self.next_edges
    if self.mixed is not None:
        # operands of two dtypes (only multiplied when a dim is 0): every gradient is zeros
        # (a sum over nothing), in its input's dtype
        xp, lead = g._device.xp, g.data.shape[:batch]
        return tuple(
            None if e is None else like(xp.zeros(lead + shape, dtype=dtype), g)
            for e, (shape, dtype) in zip(self.next_edges, self.mixed)
        )
    a = self.a.unpack(self) if eb is not None else None
    b = self.b.unpack(self) if ea is not None else None
    if first_order() and (a is None or a.data.dtype == g.data.dtype) and (b is None or b.data.dtype == g.data.dtype):
        xp, gd = g._device.xp, g.data
        return (
            None if b is None else like(stacked_matmul(xp, gd, b.data.swapaxes(-1, -2)), g),
            None if a is None else like(stacked_matmul(xp, a.data.swapaxes(-1, -2), gd), g),
        )
    # (``@`` is linalg's matmul, bound on Tensor: linalg imports this module, not the reverse)
    ga = g @ b.mT if b is not None else None
    gb = a.mT @ g if a is not None else None
    return (ga, gb)


def stacked_matmul(xp: Any, a: Any, b: Any) -> Any:
    """``a @ b`` for arrays; a stack of transposed matrices on the right (each column-major)
    copied first: numpy's stacked matmul does not hand it to BLAS, and runs about 3x slower than
    on a contiguous copy (a 2-D one BLAS takes transposed)."""
    if b.ndim >= 3 and not b.flags.c_contiguous and b.strides[-2] == b.itemsize and b.shape[-1] > 1:
        b = xp.ascontiguousarray(b)
    return a @ b


@op(BmmBackward0, family="products")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors ``(b, n, m) @ (b, m, p)``, no broadcasting."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("bmm", input)
    a, b = input.data, mat2.data
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, {a.shape[2]}] "
            f"but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    xp = input._device.xp
    if a.dtype != b.dtype or a.dtype.kind == "b":
        # PyTorch's kernel returns early (zeros of mat2's dtype) when the result is empty or the
        # inner dim is 0, before it checks the dtypes (and has no bool kernel)
        shape = (a.shape[0], a.shape[1], b.shape[2])
        if a.shape[2] and 0 not in shape:
            if a.dtype != b.dtype:
                raise RuntimeError(
                    f"expected scalar type {scalar_type_name(a.dtype)} but found {scalar_type_name(b.dtype)}"
                )
            raise NotImplementedError('"bmm" not implemented for \'Bool\'')
        data = xp.zeros(shape, dtype=b.dtype)
    else:
        data = stacked_matmul(xp, a, b)
    out = on(wrap(data), common_device(input, mat2))
    if needs_grad(input, mat2):
        if data.dtype.kind not in "fc":
            raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(data.dtype)}")
        node: Any = attach(BmmBackward0((edge_of(input), edge_of(mat2))), out)
        if a.dtype != b.dtype:
            node.mixed = ((a.shape, a.dtype), (b.shape, b.dtype))
        ea, eb = node.next_edges
        node.a = save(input) if eb is not None else None
        node.b = save(mat2) if ea is not None else None
    return out


def should_fold(input: Tensor, other: Tensor) -> bool:
    """PyTorch's ``should_fold``: whether a product of a tensor of 3 or more dims (``t1``, made
    the left operand: the right one transposed) and one of 1 or 2 folds ``t1``'s batch dims into
    the rows of one ``mm``/``mv``: when the smaller one requires grad (its gradient is then one
    product, not one per batch element and a sum), else (not for a 2-D left operand, which would
    need a transposed copy of the result) when ``t1`` folds without a copy."""
    na, nb = input.data.ndim, other.data.ndim
    larger = na >= nb
    if not ((na >= 3 and nb <= 2) if larger else (nb >= 3 and na <= 2)):
        return False
    if (other if larger else input)._requires_grad:
        return True
    if na == 2:
        return False
    t1 = input.data if larger else other.data.swapaxes(-1, -2)
    if t1.size == 0:
        return True
    shape, strides = t1.shape, t1.strides
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


def broadcast_bmm(input: Tensor, other: Tensor, matmul: Any) -> Tensor:
    """PyTorch's batched ``matmul`` path: both operands broadcast to the batch dims, flattened to
    one batch, ``bmm``, viewed back (a vector on the right a column, squeezed off after). A
    3-D operand with a batch of 1 that requires grad against another batch is squeezed to a
    matrix first (a folded product then: ``matmul``, linalg's, is called again)."""
    a, b = input.data, other.data
    na, nb = a.ndim, b.ndim
    n = a.shape[-2] if na > 1 else 1
    m1 = a.shape[-1]
    m2 = b.shape[-2] if nb > 1 else b.shape[0]
    p = b.shape[-1] if nb > 1 else 1
    batch1, batch2 = a.shape[: max(na - 2, 0)], b.shape[: max(nb - 2, 0)]
    if na == 3 and nb == 3 and batch1[0] != batch2[0]:
        if batch1[0] == 1 and input._requires_grad:
            return matmul(squeeze(input, 0), other)  # type: ignore[no-any-return]
        if batch2[0] == 1 and other._requires_grad:
            return matmul(input, squeeze(other, 0))  # type: ignore[no-any-return]
    out_shape = infer_size(batch1, batch2)
    size = int(np.prod(out_shape, dtype=np.int64))
    left = reshape(expand(input, *out_shape, n, m1), size, n, m1)
    if nb == 1:
        right = unsqueeze(reshape(expand(other, *out_shape, m2), size, m2), 2)
    else:
        right = reshape(expand(other, *out_shape, m2, p), size, m2, p)
    out = bmm(left, right)
    if nb == 1:
        out = squeeze(out, -1)
    return unsafe_view(out, out_shape + ((n,) if na > 1 else ()) + ((p,) if nb > 1 else ()))
