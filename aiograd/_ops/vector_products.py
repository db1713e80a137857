"""Products with vectors, as PyTorch's: ``mv``, ``addmv``, ``vdot`` and ``inner``, with its
checks, messages and nodes.

``mv`` is ``matmul``'s matrix-vector case (``MvBackward0``); ``vdot`` is ``dot`` (no conjugate
to take on real tensors) under PyTorch's ``VdotBackward0``; ``inner`` is PyTorch's composite, a
product with a 0-d operand (``MulBackward0``) or ``tensordot`` over the last dims
(``ViewBackward0``). ``addmv`` records ``AddmvBackward0``: ``beta * input + alpha * (mat @ vec)``,
``input`` ignored where ``beta`` is 0 (its NaN does not spread, as in BLAS).
"""

from __future__ import annotations

from typing import Any

from .._base._dtypes import scalar_type_name
from ._registry import backward, op, variant
from ._util import Tensor, attach, common_device, edge_of, needs_grad, on, save, wrap
from .elementwise import MulBackward0, mul
from .linalg import MvBackward0, matmul
from .products import DotBackward0, dot, tensordot
from .shape import ViewBackward0, reduce_grad

__all__ = ["addbmm", "addmm", "addmv", "baddbmm", "inner", "mv", "vdot"]


# ------------------------------------------------------------------------------ mv, addmv
def _check_addmv(input_shape: tuple[int, ...], mat: Any, vec: Any, input_dtype: Any) -> None:
    """PyTorch's checks of ``addmv`` (and of ``mv``, whose ``input`` is its result)."""
    if mat.ndim != 2 or vec.ndim != 1 or len(input_shape) > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {len(input_shape)}, {mat.ndim}, {vec.ndim}")
    numel = 1
    for s in input_shape:
        numel *= s
    if mat.shape[1] != vec.shape[0] or (mat.shape[0] != numel and numel != 1):
        first = input_shape[0] if input_shape else numel
        raise RuntimeError(
            f"size mismatch, got input ({first}), mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})"
        )
    if not (input_dtype == mat.dtype == vec.dtype):
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {scalar_type_name(input_dtype)}, "
            f"{scalar_type_name(mat.dtype)}, and {scalar_type_name(vec.dtype)}"
        )


@op(MvBackward0)
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector, ``(n, m) @ (m,)``: ``(n,)``."""
    a, b = input.data, vec.data
    if not a.ndim:  # (PyTorch's mv reads input.size(0) first)
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    _check_addmv((a.shape[0],), a, b, b.dtype)  # (its result is addmv's input)
    return matmul(input, vec)


@backward(saved=("mat", "vec"), batched=True)
def AddmvBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any, Any]:
    """PyTorch's: ``beta * grad`` (summed to ``input``'s shape), ``alpha * outer(grad, vec)``
    and ``alpha * mat^T @ grad`` (a factor of 1 is not multiplied)."""
    g = grads[0]
    e_input, e_mat, e_vec = self.next_edges
    beta, alpha = self.beta, self.alpha
    g_input = g_mat = g_vec = None
    if e_input is not None:
        g_input = reduce_grad(g if beta == 1 else g * beta, self.input_shape, batch)
    if e_mat is not None:
        g_mat = g.unsqueeze(-1) * self.vec.unpack(self)
        g_mat = g_mat if alpha == 1 else g_mat * alpha
    if e_vec is not None:
        mat = self.mat.unpack(self)
        # PyTorch's mat^T mv grad; a batch of gradients is a matrix: one product for all of them
        # (a gemm, which rounds the last bit differently from the per-sample gemvs)
        g_vec = matmul(g, mat) if batch else matmul(mat.mT, g)
        g_vec = g_vec if alpha == 1 else g_vec * alpha
    return (g_input, g_mat, g_vec)


@op(AddmvBackward0)
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``: ``input`` a vector of ``mat``'s rows (or one
    element, broadcast); where ``beta`` is 0 ``input`` is ignored, where ``alpha`` is 0 the
    product is (NaN in them does not spread)."""
    m, v, x = mat.data, vec.data, input.data
    _check_addmv(x.shape, m, v, x.dtype)
    xp = mat._device.xp
    if alpha == 0:  # BLAS's rule, as PyTorch's: the product is not computed (NaN in it does not spread)
        prod = xp.zeros(m.shape[:1], dtype=xp.result_type(m, v))
    else:
        prod = m @ v if alpha == 1 else alpha * (m @ v)
    if beta == 0:
        data = xp.broadcast_to(prod, (m.shape[0],)).copy()
    else:
        data = prod + (x if beta == 1 else beta * x)
    out = on(wrap(data), common_device(input, mat, vec))
    if needs_grad(input, mat, vec):
        node: Any = attach(AddmvBackward0((edge_of(input), edge_of(mat), edge_of(vec))), out)
        e_input, e_mat, e_vec = node.next_edges
        node.mat = save(mat) if e_vec is not None else None
        node.vec = save(vec) if e_mat is not None else None
        node.beta, node.alpha, node.input_shape = beta, alpha, x.shape
    return out


# ------------------------------------------------------------------------------ vdot, inner
VdotBackward0 = variant("VdotBackward0", DotBackward0, doc="Backward of ``vdot`` (real: ``dot``'s).", module=__name__)


@op(VdotBackward0)
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of the same size and dtype (the first conjugated,
    which changes nothing for real tensors)."""
    out = dot(input.detach(), other.detach())  # (its checks and messages, without its node)
    if needs_grad(input, other):
        node: Any = attach(VdotBackward0((edge_of(input), edge_of(other))), out)
        ea, eb = node.next_edges
        node.a = save(input) if eb is not None else None
        node.b = save(other) if ea is not None else None
    return out


@op(ViewBackward0, MulBackward0)
def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum of products over the last dims of ``input`` and ``other`` (``tensordot`` over
    them); with a 0-d operand, the product ``input * other``."""
    a, b = input.data, other.data
    if a.ndim == 0 or b.ndim == 0:
        return mul(input, other)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    if a.dtype.kind == "b" and b.dtype.kind == "b":  # PyTorch's dot and mm have no bool kernel
        kernel = "dot" if a.ndim == b.ndim == 1 else "addmm_impl_cpu_"
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    return tensordot(input, other, dims=([-1], [-1]))


#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {"mv": mv, "addmv": addmv, "vdot": vdot, "inner": inner}


# ------------------------------------------------------------------------------ addmm, baddbmm, addbmm
def _dim_size(shape: tuple[int, ...], d: int) -> int:
    """``tensor.size(d)``, with PyTorch's IndexError."""
    n = len(shape)
    if not -max(n, 1) <= d < max(n, 1) or not n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], but got {d})")
    return shape[d]


def _expand_check(input: Tensor, shape: tuple[int, ...]) -> None:
    """PyTorch's ``expand`` of ``input`` to the result's shape (its messages)."""
    input.detach().expand(*shape)


def _check_mm(input: Any, m1: Any, m2: Any) -> None:
    """PyTorch's checks of ``addmm`` (also ``addbmm``'s, on the summed product)."""
    for name, m in (("mat1", m1), ("mat2", m2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    if m1.shape[1] != m2.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({m1.shape[0]}x{m1.shape[1]} and {m2.shape[0]}x{m2.shape[1]})"
        )


def _same_dtype(input: Any, m1: Any, m2: Any) -> None:
    """PyTorch's dtype checks of ``addmm`` (and ``addbmm``), in its order: ``input``, then ``mat1``."""
    if input.dtype != m2.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {scalar_type_name(input.dtype)} and "
            f"{scalar_type_name(m2.dtype)}"
        )
    if m1.dtype != m2.dtype:
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {scalar_type_name(m1.dtype)} and {scalar_type_name(m2.dtype)}"
        )


def _scaled(x: Any, factor: float) -> Any:
    return x if factor == 1 else x * factor


def _combine(xp: Any, prod: Any, x: Any, beta: float, alpha: float, shape: tuple[int, ...]) -> Any:
    """``beta * x + alpha * prod``; ``x`` ignored where ``beta`` is 0 (BLAS's rule)."""
    prod = prod if alpha == 1 else alpha * prod
    if beta == 0:
        return xp.broadcast_to(prod, shape).copy()
    return prod + (x if beta == 1 else beta * x)


def _record_addmm(cls: Any, out: Tensor, input: Tensor, a: Tensor, b: Tensor, beta: float, alpha: float) -> Tensor:
    if needs_grad(input, a, b):
        node: Any = attach(cls((edge_of(input), edge_of(a), edge_of(b))), out)
        _, e_a, e_b = node.next_edges
        node.a = save(a) if e_b is not None else None
        node.b = save(b) if e_a is not None else None
        node.beta, node.alpha, node.input_shape = beta, alpha, input.data.shape
    return out


def _addmm_like_grads(self: Any, g: Any, batch: int, expand: bool) -> tuple[Any, Any, Any]:
    """The gradients of ``beta * input + alpha * (a @ b)`` (``expand``: ``addbmm``'s, the
    product summed over the batch of ``a`` and ``b``: the gradient is each matrix's)."""
    e_input, e_a, e_b = self.next_edges
    g_input = g_a = g_b = None
    if e_input is not None:
        g_input = reduce_grad(_scaled(g, self.beta), self.input_shape, batch)
    gm = g.unsqueeze(-3) if expand else g
    if e_a is not None:
        g_a = _scaled(matmul(gm, self.b.unpack(self).mT), self.alpha)
    if e_b is not None:
        g_b = _scaled(matmul(self.a.unpack(self).mT, gm), self.alpha)
    return (g_input, g_a, g_b)


@backward(saved=("a", "b"), batched=True)
def AddmmBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any, Any]:
    """PyTorch's: ``beta * grad`` (summed to ``input``'s shape), ``alpha * grad @ mat2^T`` and
    ``alpha * mat1^T @ grad``."""
    return _addmm_like_grads(self, grads[0], batch, False)


@op(AddmmBackward0)
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``: ``input`` broadcast to the product's shape; where
    ``beta`` is 0 ``input`` is ignored, where ``alpha`` is 0 the product is (BLAS's rule)."""
    a, b, x = mat1.data, mat2.data, input.data
    _check_mm(x, a, b)
    shape = (a.shape[0], b.shape[1])
    _expand_check(input, shape)
    _same_dtype(x, a, b)
    if a.dtype.kind == "b":
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    xp = mat1._device.xp
    prod = xp.zeros(shape, dtype=a.dtype) if alpha == 0 else a @ b
    out = on(wrap(_combine(xp, prod, x, beta, 1 if alpha == 0 else alpha, shape)), common_device(input, mat1, mat2))
    return _record_addmm(AddmmBackward0, out, input, mat1, mat2, beta, alpha)


def _check_batches(b1: Any, b2: Any, fname: str) -> None:
    for name, m in (("batch1", b1), ("batch2", b2)):
        if m.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if fname == "baddbmm" and (b2.shape[0] != b1.shape[0] or b2.shape[1] != b1.shape[2]):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b1.shape[0]}, {b1.shape[2]}] "
            f"but got: [{b2.shape[0]}, {b2.shape[1]}]."
        )
    if fname == "addbmm" and b1.shape[0] != b2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b1.shape[0]} and {b2.shape[0]}")
    if fname == "addbmm" and b1.shape[2] != b2.shape[1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and {b2.shape[1]}x{b2.shape[2]})"
        )


@backward(saved=("a", "b"), batched=True)
def BaddbmmBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any, Any]:
    """PyTorch's: ``beta * grad`` (summed to ``input``'s shape), ``alpha * grad.bmm(batch2^T)``
    and ``alpha * batch1^T.bmm(grad)``."""
    return _addmm_like_grads(self, grads[0], batch, False)


@op(BaddbmmBackward0)
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``: ``input`` broadcast to ``(b, n, p)``;
    where ``beta`` is 0 ``input`` is ignored."""
    a, b, x = batch1.data, batch2.data, input.data
    shape = (_dim_size(a.shape, 0), _dim_size(a.shape, 1), _dim_size(b.shape, 2))
    _expand_check(input, shape)
    if x.dtype != a.dtype:
        names = [scalar_type_name(t.dtype).lower() for t in (x, a, b)]
        raise RuntimeError(f"Input dtypes must be the same, got: input {names[0]}, batch1: {names[1]}, batch2: {names[2]}")
    _check_batches(a, b, "baddbmm")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(a.dtype)} but found {scalar_type_name(b.dtype)}")
    if a.dtype.kind == "b":
        raise NotImplementedError("\"baddbmm\" not implemented for 'Bool'")
    xp = batch1._device.xp
    out = on(wrap(_combine(xp, a @ b, x, beta, alpha, shape)), common_device(input, batch1, batch2))
    return _record_addmm(BaddbmmBackward0, out, input, batch1, batch2, beta, alpha)


@backward(saved=("a", "b"), batched=True)
def AddbmmBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any, Any, Any]:
    """PyTorch's: ``beta * grad`` (summed to ``input``'s shape), ``alpha * grad.bmm(batch2^T)``
    and ``alpha * batch1^T.bmm(grad)``, ``grad`` expanded over the batch."""
    return _addmm_like_grads(self, grads[0], batch, True)


@op(AddbmmBackward0)
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * sum_i(batch1[i] @ batch2[i])``: ``input`` broadcast to ``(n, p)``;
    where ``beta`` is 0 ``input`` is ignored, where ``alpha`` is 0 the product is."""
    a, b, x = batch1.data, batch2.data, input.data
    shape = (_dim_size(a.shape, 1), _dim_size(b.shape, 2))
    _expand_check(input, shape)
    _same_dtype(x, a, b)
    _check_batches(a, b, "addbmm")
    if a.dtype.kind == "b":
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    xp = batch1._device.xp
    prod = xp.zeros(shape, dtype=a.dtype) if alpha == 0 else (a @ b).sum(axis=0)
    out = on(wrap(_combine(xp, prod, x, beta, 1 if alpha == 0 else alpha, shape)), common_device(input, batch1, batch2))
    return _record_addmm(AddbmmBackward0, out, input, batch1, batch2, beta, alpha)


TENSOR_METHODS.update({"addmm": addmm, "baddbmm": baddbmm, "addbmm": addbmm})
