"""Linear systems, as ``torch.linalg``'s: ``inv``, ``pinv`` and ``solve`` (batched over leading dims, the
right-hand side a vector or a matrix, batch dims broadcast), with PyTorch's nodes, checks,
messages and ``LinAlgError`` for singular matrices, and the backward formulas of PyTorch
(derivatives.yaml's ``linalg_inv_ex``, FunctionsManual.cpp's ``linalg_solve_backward``), written
with aiograd ops so that they can be differentiated again."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._linalg_util import (
    LinAlgError,
    batch_prefix,
    check_float,
    check_matrix,
    check_square,
    has_subnormal,
    linalg_error_type,
    lu_system,
)
from ._registry import backward, op
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    like,
    needs_grad,
    not_tensor,
    on,
    save,
    wrap,
)
from .linalg import matmul
from .quiet import quietly
from .shape import reduce_grad

__all__ = ["inv", "pinv", "solve"]


# ------------------------------------------------------------------------------ inv
def _ill_conditioned(xp: Any, a: Any, inverse: Any) -> bool:
    """Whether the inverse is round-off (``|A| |A^-1|`` near ``1 / eps``) or not finite: where
    the LU's rounding decides values, signs and singularity, as PyTorch's LAPACK rounds them."""
    if not a.size:
        return False
    bound = float(xp.abs(inverse).max()) * float(xp.abs(a).max())
    return not bound < 1 / (256 * float(np.finfo(a.dtype).eps))


@backward(saved=("result",), batched=True)
def LinalgInvExBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``-A^{-H} g A^{-H}`` (derivatives.yaml's linalg_inv_ex)."""
    inv_h = self.result.unpack(self).mT
    return (-matmul(inv_h, matmul(grads[0], inv_h)),)


@op(LinalgInvExBackward0, name="linalg_inv", top_level=False)
def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (of each in a batch); ``LinAlgError`` if one is singular."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_inv", A, 1, "A")
    check_square(A, "linalg.inv")
    check_float(A, "linalg.inv")
    xp = A._device.xp
    a = A.data
    try:
        data = xp.linalg.inv(a)
    except linalg_error_type(xp):
        data = None
    if data is None or _ill_conditioned(xp, a, data):
        # where numpy's LAPACK and PyTorch's round apart: PyTorch's LU, which raises at a zero pivot
        data, info = quietly(lu_system, xp, a, xp.eye(a.shape[-1], dtype=a.dtype))
        if info.any():
            batch = int(xp.argmax(info.reshape(-1) != 0))
            raise LinAlgError(
                f"linalg.inv: {batch_prefix(a, batch)}The diagonal element {int(info.reshape(-1)[batch])} is zero, "
                "the inversion could not be completed because the input matrix is singular."
            )
    out = like(data, A)
    if needs_grad(A):
        node: Any = attach(LinalgInvExBackward0((edge_of(A),)), out)
        node.result = save(out, is_output=True)
    return out


# ------------------------------------------------------------------------------ solve
def _is_vector_rhs(A: Any, B: Any) -> bool:
    """PyTorch's linalg_solve_is_vector_rhs: ``B`` is a vector, or a batch of vectors with
    ``A``'s batch shape."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


@backward(saved=("A", "result"), batched=True)
def LinalgSolveExBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``gB = A^{-H} gX`` and ``gA = -gB X^H`` (``left=False``: ``gB = gX A^{-H}`` and
    ``gA = -X^H gB``; linalg_solve_backward), each summed back to its input's broadcast shape."""
    gX = grads[0]
    A, X = self.A.unpack(self), self.result.unpack(self)
    if self.vector:
        gX, X = gX.unsqueeze(-1), X.unsqueeze(-1)
    gB = solve(A.mT, gX, left=self.left)
    ea, eb = self.next_edges
    if ea is not None:
        gA = reduce_grad(-(matmul(gB, X.mT) if self.left else matmul(X.mT, gB)), self.a_shape, batch)
    else:
        gA = None
    if eb is None:
        return (gA, None)
    gB = gB.squeeze(-1) if self.vector else gB
    return (gA, reduce_grad(gB, self.b_shape, batch))


def _solve_arrays(xp: Any, a: Any, b: Any) -> Any:
    """numpy's ``A X = B`` (``b`` a batch of matrices); PyTorch's LU where they part (a singular,
    subnormal or non-finite ``A``), with its ``LinAlgError`` for an exactly zero pivot."""
    try:
        data = xp.linalg.solve(a, b)
        if xp.isfinite(data).all() and not has_subnormal(xp, a):
            return data
    except linalg_error_type(xp):
        pass
    data, info = quietly(lu_system, xp, a, b)
    if info.any():
        batch = int(xp.argmax(info.reshape(-1) != 0))
        prefix = batch_prefix(a if a.ndim >= b.ndim else b, batch)
        raise LinAlgError(f"torch.linalg.solve: {prefix}The solver failed because the input matrix is singular.")
    return data


@op(LinalgSolveExBackward0, name="linalg_solve", top_level=False)
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``), batch dims
    broadcast; ``B`` a vector or a matrix. ``LinAlgError`` if ``A`` is singular."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_solve", A, 1, "A")
    check_square(A, "linalg.solve")
    a, b = A.data, B.data
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type {scalar_type_name(a.dtype)} "
            f"and B of type {scalar_type_name(b.dtype)} instead"
        )
    vector = _is_vector_rhs(a, b)
    n = a.shape[-1]
    if not left:  # X A = B is A^T X^T = B^T
        bm = b[..., None] if vector else b
        if bm.shape[-1] != n:
            raise RuntimeError(
                f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and {bm.shape[-2]}x{bm.shape[-1]})"
            )
        if vector:
            raise RuntimeError(
                "linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. In this case "
                "linalg.solve is equivalent to B / A.squeeze(-1)"
            )
        a_sys, bm = a.swapaxes(-1, -2), b.swapaxes(-1, -2)
    else:
        a_sys, bm = a, (b[..., None] if vector else b)
        if bm.shape[-2] != n:
            raise RuntimeError(
                f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {bm.shape[-2]}x{bm.shape[-1]})"
            )
    dev = common_device(A, B)
    xp = dev.xp
    data = _solve_arrays(xp, a_sys, bm)
    out = on(wrap(data[..., 0] if vector else data if left else xp.ascontiguousarray(data.swapaxes(-1, -2))), dev)
    if needs_grad(A, B):
        node: Any = attach(LinalgSolveExBackward0((edge_of(A), edge_of(B))), out)
        node.A, node.result = save(A), save(out, is_output=True)
        node.vector, node.left, node.a_shape, node.b_shape = vector and left, left, a.shape, b.shape
    return out


# ------------------------------------------------------------------------------ pinv
@backward(saved=("A", "result"), batched=True)
def LinalgPinvBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's ``pinv_backward`` (FunctionsManual.cpp), in the smaller of the two shapes:
    the pseudo-inverse's derivative on its row and column spaces and their complements."""
    g, A, pinv_a = grads[0], self.A.unpack(self), self.result.unpack(self)
    m, n = A.shape[-2], A.shape[-1]
    pinv_h, grad_h = pinv_a.mT, g.mT
    if m <= n:
        k = matmul(grad_h, pinv_a)
        k_pinv_h = matmul(k, pinv_h)
        out = (-matmul(pinv_a, k).mT + k_pinv_h - matmul(matmul(A, pinv_a), k_pinv_h)
               + matmul(matmul(pinv_h, pinv_a), grad_h - matmul(k, A)))
    else:
        k = matmul(pinv_a, grad_h)
        pinv_h_k = matmul(pinv_h, k)
        out = (-matmul(k, pinv_a).mT + pinv_h_k - matmul(matmul(pinv_h_k, pinv_a), A)
               + matmul(matmul(grad_h - matmul(A, k), pinv_a), pinv_h))
    return (out,)


@op(LinalgPinvBackward0, name="linalg_pinv", top_level=False)
def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse (of each matrix in a batch), from the SVD (the
    eigendecomposition with ``hermitian=True``): singular values at or below
    ``max(atol, rtol * largest)`` count as zero; by default ``rtol = eps * max(m, n)``, and 0
    when only a positive ``atol`` is given, as torch's."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_pinv", A, 1, "A")
    check_matrix(A, "linalg.pinv")
    check_float(A, "linalg.pinv")
    xp, a = A._device.xp, A.data
    m, n = a.shape[-2:]
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else float(np.finfo(a.dtype).eps) * max(m, n)
    atol = 0.0 if atol is None else atol
    # LAPACK may not return on non-finite input: torch's SVD refuses NaN and gives NaN for an
    # infinity; those matrices are factored as zeros here, their results set to NaN after
    seen = xp.tril(a) if hermitian else a
    bad = ~xp.isfinite(seen).all(axis=(-2, -1))
    if bad.any():
        if not hermitian and bool(xp.isnan(a).any()):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix contained "
                              "non-finite values.")
        a = xp.where(bad[..., None, None], 0.0, a).astype(A.data.dtype)
    if hermitian:
        s, v = xp.linalg.eigh(a)
        u, vh = v * xp.sign(s)[..., None, :], xp.swapaxes(v, -1, -2)
        s = xp.abs(s)
    else:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
    largest = s.max(axis=-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), dtype=s.dtype)
    keep = s > xp.maximum(atol, rtol * largest)
    s_inv = xp.where(keep, 1.0 / xp.where(keep, s, 1.0), 0.0).astype(a.dtype)
    data = xp.matmul(xp.swapaxes(vh, -1, -2) * s_inv[..., None, :], xp.swapaxes(u, -1, -2))
    if bad.any():
        data = xp.where(bad[..., None, None], xp.nan, data)
    out = like(data.astype(a.dtype, copy=False), A)
    if needs_grad(A):
        node: Any = attach(LinalgPinvBackward0((edge_of(A),)), out)
        node.A = save(A)
        node.result = save(out, is_output=True)
    return out
