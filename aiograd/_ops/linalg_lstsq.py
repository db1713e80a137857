"""Least squares, as ``torch.linalg.lstsq``: ``(solution, residuals, rank, singular_values)`` for
each of PyTorch's CPU drivers, with its checks, messages, empty fields and broadcasting, and the
backward formula of its FunctionsManual.cpp (``linalg_lstsq_backward``: through the solution by
``pinv_backward``, through the residuals by ``2 (A X - B)``), written with aiograd ops so that it
can be differentiated again.

numpy calls none of LAPACK's least-squares drivers on batches, so each is computed here from
the factorization it rests on: ``gels`` from a QR (LQ for a wide matrix) and full rank assumed,
as LAPACK's (an exact zero on R's diagonal is torch's ``LinAlgError``); ``gelsd``, ``gelss``
and ``gelsy`` as the minimum-norm solution of the SVD truncated at ``rcond`` times the largest
singular value. For ``gelsd`` and ``gelss`` that is LAPACK's definition of the rank; ``gelsy``
decides it from a pivoted QR's condition estimate, which agrees but for singular values within
rounding of the threshold. Results agree with torch's to rounding.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._linalg_util import LinAlgError, batch_prefix
from ._registry import backward, op
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    infer_size,
    needs_grad,
    not_tensor,
    on,
    save,
    wrap,
)
from .linalg import matmul
from .linear_systems import pinv
from .quiet import quietly
from .shape import reduce_grad
from .triangular import substitute

__all__ = ["LstsqResult", "lstsq"]

LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])  # type: ignore[name-match]
LstsqResult.__module__ = "aiograd.return_types"
LstsqResult.__doc__ = "The ``(solution, residuals, rank, singular_values)`` returned by ``linalg.lstsq``."

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _h(x: Any) -> Any:
    """The conjugate transpose of a batch of matrices (arrays or tensors)."""
    return x.mT if isinstance(x, Tensor) else x.conj().swapaxes(-1, -2)


def _pinv_backward(g: Tensor, A: Tensor, pinv_a: Tensor) -> Tensor:
    """PyTorch's ``pinv_backward`` (FunctionsManual.cpp), real case: the gradient of ``A`` for the
    gradient ``g`` of ``pinv(A)`` (the formula of ``linear_systems.LinalgPinvBackward0``)."""
    m, n = A.data.shape[-2], A.data.shape[-1]
    pinv_h, grad_h = pinv_a.mT, g.mT
    if m <= n:
        k = matmul(grad_h, pinv_a)
        k_pinv_h = matmul(k, pinv_h)
        return (-matmul(pinv_a, k).mT + k_pinv_h - matmul(matmul(A, pinv_a), k_pinv_h)
                + matmul(matmul(pinv_h, pinv_a), grad_h - matmul(k, A)))
    k = matmul(pinv_a, grad_h)
    pinv_h_k = matmul(pinv_h, k)
    return (-matmul(k, pinv_a).mT + pinv_h_k - matmul(matmul(pinv_h_k, pinv_a), A)
            + matmul(matmul(grad_h - matmul(A, k), pinv_a), pinv_h))


@backward(saved=("A", "B", "solution"), batched=True)
def LinalgLstsqBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """linalg_lstsq_backward: through the solution ``X = pinv(A) B``, ``gA = pinv_backward(gX B^H)``
    and ``gB = pinv(A)^H gX``; through the residuals ``|A X - B|^2`` (X optimal, so its own
    change adds nothing), ``gA += 2 gR (A X - B) X^H`` and ``gB -= 2 gR (A X - B)``. Each is
    summed back to its input's (broadcast) shape."""
    gX, gR = grads[0], (grads[1] if len(grads) > 1 else None)
    if gR is not None and not gR.data.size:
        gR = None
    if gX is None and gR is None:
        return (None, None)
    A, B = self.A.unpack(self), self.B.unpack(self)
    ea, eb = self.next_edges
    vector = self.vector
    B2 = B.unsqueeze(-1) if vector else B
    gA = gB = None
    if gX is not None:
        gX = gX.unsqueeze(-1) if vector else gX
        pinv_a = pinv(A)
        if ea is not None:
            gA = _pinv_backward(matmul(gX, B2.mT), A, pinv_a)
        if eb is not None:
            gB = matmul(pinv_a.mT, gX)
    if gR is not None:
        X = self.solution.unpack(self)
        X = X.unsqueeze(-1) if vector else X
        r = (matmul(A, X) - B2) * gR.unsqueeze(-2)
        if ea is not None:
            term = 2 * matmul(r, X.mT)
            gA = term if gA is None else gA + term
        if eb is not None:
            gB = -2 * r if gB is None else gB - 2 * r
    if gA is not None:
        gA = reduce_grad(gA, self.a_shape, batch)
    if gB is not None:
        gB = reduce_grad(gB.squeeze(-1) if vector else gB, self.b_shape, batch)
    return (gA, gB)


def _check(A: Tensor, B: Tensor, driver: str | None) -> tuple[bool, Any, str]:
    """PyTorch's checks, in its order: ``(vector case, B as a batch of matrices, driver)``."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_lstsq", A)
    if not isinstance(B, Tensor):
        raise not_tensor("linalg_lstsq", B, 2, "b")
    a, b = A.data, B.data
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if a.dtype != b.dtype:
        raise RuntimeError(
            "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype "
            f"{scalar_type_name(a.dtype)} and other's dtype {scalar_type_name(b.dtype)}"
        )
    if not 0 <= a.ndim - b.ndim <= 1:
        raise RuntimeError(
            "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1"
        )
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    b2 = b[..., None] if vector else b
    if a.shape[-2] != b2.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size({-1 if vector else -2})")
    name = "gelsy" if driver is None else driver
    if name not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of ({', '.join(_DRIVERS)})")
    if a.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")
    return vector, b2, name


def _broadcast(xp: Any, a: Any, b2: Any) -> tuple[Any, Any]:
    """``A`` and ``B`` (as matrices) broadcast to one batch shape, as PyTorch's: the batch is
    that of ``A`` and of ``B``'s leading dims, and ``B`` is expanded to it."""
    m, n = a.shape[-2:]
    batch = infer_size(a.shape[:-2], b2.shape[: a.ndim - 2])
    full = infer_size(batch + b2.shape[-2:], b2.shape)
    return xp.broadcast_to(a, batch + (m, n)), xp.broadcast_to(b2, full)


def _gels(xp: Any, a: Any, b: Any) -> Any:
    """LAPACK's gels: QR (``m >= n``) or LQ (``m < n``), full rank assumed; torch's
    ``LinAlgError`` at an exact zero on the triangle's diagonal."""
    m, n = a.shape[-2:]
    if not a.size:
        return xp.zeros(a.shape[:-2] + (n, b.shape[-1]), dtype=a.dtype)
    # an all-zero matrix: LAPACK returns a zero solution (its scaling step), no error
    zero = ~(a != 0).any(axis=(-2, -1))
    a = xp.where(zero[..., None, None], xp.eye(m, n, dtype=a.dtype), a)
    q, r = xp.linalg.qr(a if m >= n else _h(a))
    # LAPACK's test is an exact zero on the diagonal, where a rank-deficient matrix has one in
    # exact arithmetic: builds round it to zero or to round-off (numpy's, 1e-16), so round-off
    # relative to the largest counts as zero here
    diag = xp.abs(xp.diagonal(r, axis1=-2, axis2=-1))
    d = diag <= diag.max(axis=-1, keepdims=True) * (float(np.finfo(a.dtype).eps) * max(m, n))
    bad = d.any(axis=-1) & ~zero
    if bad.any():
        index = int(xp.argmax(bad.reshape(-1)))
        info = int(xp.argmax(d.reshape(-1, d.shape[-1])[index])) + 1
        raise LinAlgError(
            f"torch.linalg.lstsq: {batch_prefix(a, index)}The least squares solution could not be computed because the "
            f"input matrix does not have full rank (error code: {info})."
        )
    if m >= n:
        x = substitute(xp, r, _h(q) @ b, upper=True)
    else:
        x = q @ substitute(xp, _h(r), b, upper=False)
    return xp.where(zero[..., None, None], 0, x)


def _solve(xp: Any, a: Any, b: Any, rcond: float) -> tuple[Any, Any, Any]:
    """``(solution, rank, singular values)`` of the rank-revealing drivers: the minimum-norm
    solution with singular values at or below ``rcond`` times the largest dropped (LAPACK's
    rank); the SVD of ``a`` in its own batch, the solution in the broadcast one (``b``'s)."""
    m, n = a.shape[-2:]
    k = b.shape[-1]
    if not a.size:
        s = xp.zeros(a.shape[:-2] + (min(m, n),), dtype=xp.zeros(0, dtype=a.dtype).real.dtype)
        return xp.zeros(b.shape[:-2] + (n, k), dtype=a.dtype), xp.zeros(a.shape[:-2], dtype=xp.int64), s
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    keep = s > rcond * s[..., :1]
    rank = keep.sum(axis=-1).astype(xp.int64)
    s_inv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(a.dtype)
    return _h(vh) @ (s_inv[..., None] * (_h(u) @ b)), rank, s


@op(LinalgLstsqBackward0, name="linalg_lstsq", top_level=False)
def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> Any:
    """The least-squares solution of ``A X = B`` (of each system in a batch; ``B`` a vector, a
    matrix or a batch of either), with ``driver`` one of LAPACK's ``gels``, ``gelsy`` (the
    default), ``gelsd``, ``gelss``, as ``torch.linalg.lstsq``. ``residuals``: the squared
    residual norm of each column when ``m > n`` and, for ``gelsd``/``gelss``, every matrix has full
    rank (empty otherwise, and always for ``gelsy``); ``rank`` (not for ``gels``) and
    ``singular_values`` (``gelsd``/``gelss`` only) are of ``A``'s own batch. Singular values at
    or below ``rcond`` times the largest count as zero (default: machine epsilon times
    ``max(m, n)``). Differentiable in the solution and the residuals."""
    vector, b2, name = _check(A, B, driver)
    dev = common_device(A, B)
    xp = dev.xp
    a = A.data
    m, n = a.shape[-2:]
    real = xp.zeros(0, dtype=a.dtype).real.dtype
    eps = float(np.finfo(a.dtype).eps)
    if rcond is None:
        rcond = eps * max(m, n)
    elif rcond < 0:  # LAPACK's machine precision; gelsy's condition test then keeps every column
        rcond = 0.0 if name == "gelsy" else eps
    ab, bb = _broadcast(xp, a, b2)
    finite = xp.isfinite(a).all(axis=(-2, -1))
    if not finite.all():  # (LAPACK may not return on those: NaN solutions, as torch's for an inf)
        a = xp.where(finite[..., None, None], a, 0)
        ab = xp.broadcast_to(a, ab.shape)
    empty_int = xp.zeros(0, dtype=xp.int64)
    if name == "gels":
        x = _gels(xp, ab, bb)
        rank, sv = empty_int, xp.zeros(0, dtype=real)
    else:
        x, rank, sv = quietly(_solve, xp, a, bb, rcond)
        if name == "gelsy":
            sv = xp.zeros(0, dtype=real)
    if not finite.all():
        x = xp.where(xp.broadcast_to(finite[..., None, None], x.shape[:-2] + (1, 1)), x, xp.nan)
    residuals = xp.zeros(0, dtype=real)
    if m > n and name != "gelsy" and (name == "gels" or bool((rank == n).all())):
        if n == 0:
            residuals = (xp.abs(bb) ** 2).sum(axis=-2) * (0 if name == "gels" else 1)
        else:
            q = xp.linalg.qr(ab, mode="complete")[0]
            residuals = (xp.abs((_h(q) @ bb)[..., n:, :]) ** 2).sum(axis=-2)
            if name == "gels":  # (LAPACK zeroes B for an all-zero matrix)
                residuals = xp.where((ab != 0).any(axis=(-2, -1))[..., None], residuals, 0)
        residuals = residuals.astype(real, copy=False)
    X = on(wrap(xp.ascontiguousarray(x[..., 0] if vector else x).astype(a.dtype, copy=False)), dev)
    R = on(wrap(xp.asarray(residuals)), dev)
    out = LstsqResult(X, R, on(wrap(xp.asarray(rank)), dev), on(wrap(xp.asarray(sv).astype(real, copy=False)), dev))
    if needs_grad(A, B):
        node: Any = attach(LinalgLstsqBackward0((edge_of(A), edge_of(B))), X, R)
        node.num_inputs = 2
        node.A, node.B, node.solution = save(A), save(B), save(X, is_output=True)
        node.vector, node.a_shape, node.b_shape = vector, A.data.shape, B.data.shape
    return out
