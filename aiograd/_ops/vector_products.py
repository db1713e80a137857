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

__all__ = ["addmv", "inner", "mv", "vdot"]


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
