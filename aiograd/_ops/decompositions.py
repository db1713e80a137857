"""Determinants and the Cholesky factor, as ``torch.linalg``'s: batched over leading dims,
PyTorch's nodes (``LinalgDetBackward0``, ...), checks, messages and ``LinAlgError``s, and the
backward formulas of PyTorch's FunctionsManual.cpp (``linalg_det_backward`` with its singular
case, ``slogdet_backward``, ``cholesky_backward``), written with aiograd ops so that they can be
differentiated again. Forwards run on the input's array module (``numpy.linalg`` or
``cupy.linalg``).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from ._linalg_util import (
    LinAlgError,
    batch_prefix,
    check_float,
    check_square,
    diag_embed,
    has_subnormal,
    linalg_error_type,
    lu_factor,
    lu_system,
    tril,
)
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, first_order, like, needs_grad, not_tensor, save
from .joining import cat
from .linalg import matmul
from .linear_systems import solve
from .orthogonal import svd
from .quiet import quietly

__all__ = ["cholesky", "det", "slogdet"]

SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])  # type: ignore[name-match]
SlogdetResult.__module__ = "aiograd.return_types"
SlogdetResult.__doc__ = "The ``(sign, logabsdet)`` pair returned by ``linalg.slogdet``."


# ------------------------------------------------------------------------------ det
def _normal(xp: Any, m: Any, low: float) -> bool:
    """Whether all of ``m`` lie in ``[low, inf)``: no zero, subnormal, inf or NaN."""
    return bool(((m >= low) & (m < xp.inf)).all())


def _lu_det(xp: Any, a: Any) -> tuple[Any, Any, Any]:
    """PyTorch's determinant, from the LU of ``A^T`` (its LAPACK's rounding, where numpy's
    parts from it: singular, subnormal, non-finite): ``(det, sign of the permutation, the
    diagonal of U)``, batch-shaped. Run it quietly."""
    n = a.shape[-1]
    lu, perm, _ = lu_factor(xp, xp.swapaxes(a, -1, -2))
    u = xp.diagonal(lu, axis1=-2, axis2=-1)
    swaps = xp.zeros(perm.shape[0], dtype=a.dtype)
    p = perm.copy()
    rows = xp.arange(p.shape[0])
    for k in range(n):  # the parity of the permutation, by sorting it back
        j = xp.argmax(p == k, axis=1)
        swaps += j != k
        pk = p[:, k].copy()
        p[rows, j] = pk
        p[:, k] = k
    sign = 1 - 2 * (swaps % 2)
    shape = a.shape[:-2]
    return (xp.prod(u, axis=-1) * sign).reshape(shape), sign.reshape(shape), u.reshape(shape + (n,))


def _products_of_the_others(S: Tensor) -> Tensor:
    """``prod_{j != k} S_j`` for each ``k`` along the last dim, without dividing (PyTorch's
    prod_safe_zeros_backward): right for zeros too, and differentiable again."""
    n = S.data.shape[-1]
    cols = [S[..., j] for j in range(n)]
    out = []
    for k in range(n):
        p = None
        for j in range(n):
            if j != k:
                p = cols[j] if p is None else p * cols[j]
        out.append(p if p is not None else cols[k] * 0 + 1)
    return cat([c.unsqueeze(-1) for c in out], -1)


def _det_grad_singular(A: Tensor, g: Tensor) -> Tensor:
    """The gradient of det at a singular matrix through its SVD, ``det A = det U det Vh prod S``,
    whose product rule needs no inverse (the adjugate; linalg_det_backward's singular case)."""
    U, S, Vh = svd(A)
    alpha = det(U) * det(Vh) * g
    D = alpha.unsqueeze(-1) * _products_of_the_others(S)
    return matmul(U * D.unsqueeze(-2), Vh)


def _det_grad_nonsingular(A: Tensor, g: Tensor, d: Tensor) -> Tensor:
    scaled = g * d  # (with a batch of gradients in front, under is_grads_batched)
    return solve(A.mT, diag_embed(scaled.unsqueeze(-1).expand(*scaled.data.shape, A.data.shape[-1])))


def _solve_quietly(xp: Any, a: Any, b: Any) -> Any:
    """``A X = B`` as arrays, never raising: numpy's solve, or PyTorch's LU (inf and NaN at a zero
    pivot, its rounding at subnormal and non-finite entries) where they part."""
    try:
        x = xp.linalg.solve(a, b)
        if xp.isfinite(x).all() and not has_subnormal(xp, a):
            return x
    except linalg_error_type(xp):
        pass
    return quietly(lu_system, xp, a, b)[0]


def _det_grad_first_order(A: Tensor, g: Tensor, d: Tensor) -> Tensor:
    """``g det(A) A^{-H}`` by an array solve that does not raise (PyTorch's lu_solve with the
    forward's LU)."""
    xp = A._device.xp
    scaled = (g.data * d.data)[..., None, None]
    rhs = scaled * xp.eye(A.data.shape[-1], dtype=A.data.dtype)
    return like(_solve_quietly(xp, xp.swapaxes(A.data, -1, -2), rhs), g)


# Not batched (runs once per sample under ``is_grads_batched``): the recorded rule splits the batch
# of matrices into singular and invertible ones, which a batch of gradients would mix up.
@backward(saved=("A", "result"))
def LinalgDetBackward0(self: Any, grads: list[Any]) -> Any:
    """``g det(A) A^{-H}`` (linalg_det_backward): the matrices with ``|det| < 100 eps`` take the
    SVD formula, which stays right, and differentiable, at singular matrices; the others a solve
    (first order, an array solve that does not raise)."""
    g = grads[0]
    A, d = self.A.unpack(self), self.result.unpack(self)
    if A.data.size == 0:
        return (None,)
    xp = A._device.xp
    if first_order():
        if A.data.shape[-1] == 1 and xp.isfinite(A.data).all():  # the cofactor of a 1 x 1 is 1, also at 0
            return (g.unsqueeze(-1).unsqueeze(-1) * like(xp.ones_like(A.data), g),)
        singular = d.data == 0
        if not singular.any():
            return (_det_grad_first_order(A, g, d),)
        # PyTorch solves with a pivot nudged to eps there; the right-hand side g * det is 0
        eye = xp.eye(A.data.shape[-1], dtype=A.data.dtype)
        safe = like(xp.where(singular[..., None, None], eye, A.data), A)
        return (_det_grad_first_order(safe, g, d) * like((~singular[..., None, None]).astype(A.data.dtype), A),)
    nonsingular = _det_grad_nonsingular
    eps = float(np.finfo(A.data.dtype).eps)
    mask = xp.abs(d.data) < 100 * eps
    if mask.all():
        return (_det_grad_singular(A, g),)
    if not mask.any():
        return (nonsingular(A, g, d),)
    # masked_fmap: each formula on its own matrices, then back in the batch's order
    n = A.data.shape[-1]
    batch = A.data.shape[:-2]
    flat_mask = mask.reshape(-1)
    sing, nons = xp.nonzero(flat_mask)[0], xp.nonzero(~flat_mask)[0]
    Af, gf, df = A.reshape(-1, n, n), g.reshape(-1), d.reshape(-1)
    parts = cat([_det_grad_singular(Af[sing], gf[sing]), nonsingular(Af[nons], gf[nons], df[nons])])
    order = xp.argsort(xp.concatenate([sing, nons]))
    return (parts[order].reshape(*batch, n, n),)


@op(LinalgDetBackward0, name="linalg_det", top_level=False)
def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix (of each in a batch)."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_det", A, 1, "A")
    check_square(A, "linalg.det")
    check_float(A, "linalg.det")
    xp = A._device.xp
    d = xp.asarray(xp.linalg.det(A.data))
    if d.size and not _normal(xp, xp.abs(d), float(np.finfo(d.dtype).tiny)):
        d = xp.asarray(quietly(_lu_det, xp, A.data)[0])
    out = like(d, A)
    if needs_grad(A):
        node: Any = attach(LinalgDetBackward0((edge_of(A),)), out)
        node.A, node.result = save(A), save(out, is_output=True)
    return out


# ------------------------------------------------------------------------------ slogdet
@backward(saved=("A",), batched=True)
def LinalgSlogdetBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``g_logabsdet A^{-H}`` (slogdet_backward; the sign's gradient is 0 for real matrices). A
    singular matrix: first order, PyTorch's LU solve divides by the zero pivot (inf and NaN,
    reproduced by ``lu_system``); recorded, a solve, whose ``LinAlgError`` PyTorch raises too."""
    g = grads[1]
    if g is None:
        return (None,)
    A = self.A.unpack(self)
    n = A.data.shape[-1]
    rhs = diag_embed(g.unsqueeze(-1).expand(*g.data.shape, n))
    if first_order():
        xp = A._device.xp
        return (like(_solve_quietly(xp, xp.swapaxes(A.data, -1, -2), rhs.data), g),)
    return (solve(A.mT, rhs),)


@op(LinalgSlogdetBackward0, name="linalg_slogdet", top_level=False)
def slogdet(A: Tensor) -> Any:
    """``(sign, logabsdet)`` of the determinant: ``det = sign * exp(logabsdet)``, without
    overflow; sign 0 and logabsdet -inf for a singular matrix."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_slogdet", A, 1, "A")
    check_square(A, "linalg.slogdet")
    check_float(A, "linalg.slogdet")
    xp = A._device.xp
    sign, logabs = quietly(xp.linalg.slogdet, A.data)
    logabs = xp.asarray(logabs)
    if logabs.size and not _normal(xp, logabs, float(np.log(np.finfo(logabs.dtype).tiny))):
        _, psign, u = quietly(_lu_det, xp, A.data)
        sign = psign * xp.prod((u > 0).astype(u.dtype) - (u < 0), axis=-1)  # (0 for NaN, as PyTorch)
        logabs = quietly(xp.log, xp.abs(u)).sum(-1)
    s, la = like(xp.asarray(sign), A), like(xp.asarray(logabs), A)
    if needs_grad(A):
        node: Any = attach(LinalgSlogdetBackward0((edge_of(A),)), s, la)
        node.num_inputs = 2
        node.A = save(A)
    return SlogdetResult(s, la)


# ------------------------------------------------------------------------------ cholesky
@backward(saved=("L",), batched=True)
def LinalgCholeskyExBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Iain Murray's formula (cholesky_backward): ``Phi = tril(L^H gL)`` made Hermitian
    (``0.5 (Phi + tril(Phi, -1)^H)``), then ``L^{-H} Phi L^{-1}``."""
    L, gL = self.L.unpack(self), grads[0]
    if self.upper:
        L, gL = L.mT, gL.mT
    phi = tril(matmul(L.mT, gL))
    phi = 0.5 * (phi + tril(phi, -1).mT)
    left = solve(L.mT, phi)  # L^{-H} Phi
    return (solve(L.mT, left.mT).mT,)  # (L^{-H} Phi) L^{-1}: X L = left is L^H X^H = left^H


def _not_positive_definite(xp: Any, a: Any) -> LinAlgError:
    """PyTorch's message: the first matrix of the batch that fails, and the order of its first
    leading minor that is not positive-definite."""
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)
    error = linalg_error_type(xp)
    for b in range(flat.shape[0]):
        for k in range(1, n + 1):
            try:
                xp.linalg.cholesky(flat[b, :k, :k])
            except error:
                return LinAlgError(
                    f"linalg.cholesky: {batch_prefix(a, b)}The factorization could not be completed because the input "
                    f"is not positive-definite (the leading minor of order {k} is not positive-definite)."
                )
    return LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not positive-definite.")


@op(LinalgCholeskyExBackward0, name="linalg_cholesky", top_level=False)
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of a symmetric positive-definite matrix: lower ``L`` with
    ``A = L L^H`` (read from ``A``'s lower triangle), or upper ``U = L^H`` with ``upper=True``
    (read from the upper one). ``LinAlgError`` if ``A`` is not positive-definite."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_cholesky", A)
    check_square(A, "linalg.cholesky")
    check_float(A, "linalg.cholesky")
    xp = A._device.xp
    a = xp.swapaxes(A.data, -1, -2) if upper else A.data
    try:
        lower = xp.linalg.cholesky(a)
    except linalg_error_type(xp):
        raise _not_positive_definite(xp, a) from None
    nan = xp.isnan(xp.diagonal(lower, axis1=-2, axis2=-1))
    if nan.any():  # LAPACK's potrf stops at a NaN pivot, PyTorch raises
        n = a.shape[-1]
        flat = nan.reshape(-1, n)
        b = int(xp.argmax(flat.any(axis=1)))
        raise LinAlgError(
            f"linalg.cholesky: {batch_prefix(a, b)}The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {int(xp.argmax(flat[b])) + 1} is not positive-definite)."
        )
    out = like(xp.ascontiguousarray(xp.swapaxes(lower, -1, -2)) if upper else lower, A)
    if needs_grad(A):
        node: Any = attach(LinalgCholeskyExBackward0((edge_of(A),)), out)
        node.L, node.upper = save(out, is_output=True), upper
    return out
