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
    linalg_error_type,
    lu_factor,
    lu_solve,
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


# Not batched (runs once per sample under ``is_grads_batched``): the recorded rule splits the batch
# of matrices into singular and invertible ones, which a batch of gradients would mix up.
@backward(saved=("A", "result"))
def LinalgDetBackward0(self: Any, grads: list[Any]) -> Any:
    """``g det(A) A^{-H}`` (linalg_det_backward). First order: a solve, 0 for an exactly singular
    matrix (whose det is 0); recorded (create_graph): the matrices with ``|det| < 100 eps`` take
    the SVD formula, which stays right, and differentiable, at singular matrices."""
    g = grads[0]
    A, d = self.A.unpack(self), self.result.unpack(self)
    if A.data.size == 0:
        return (None,)
    xp = A._device.xp
    if first_order():
        singular = d.data == 0
        if not singular.any():
            return (_det_grad_nonsingular(A, g, d),)
        # PyTorch solves with a pivot nudged to eps there; the right-hand side g * det is 0
        eye = xp.eye(A.data.shape[-1], dtype=A.data.dtype)
        safe = like(xp.where(singular[..., None, None], eye, A.data), A)
        return (_det_grad_nonsingular(safe, g, d) * like((~singular[..., None, None]).astype(A.data.dtype), A),)
    eps = float(np.finfo(A.data.dtype).eps)
    mask = xp.abs(d.data) < 100 * eps
    if mask.all():
        return (_det_grad_singular(A, g),)
    if not mask.any():
        return (_det_grad_nonsingular(A, g, d),)
    # masked_fmap: each formula on its own matrices, then back in the batch's order
    n = A.data.shape[-1]
    batch = A.data.shape[:-2]
    flat_mask = mask.reshape(-1)
    sing, nons = xp.nonzero(flat_mask)[0], xp.nonzero(~flat_mask)[0]
    Af, gf, df = A.reshape(-1, n, n), g.reshape(-1), d.reshape(-1)
    parts = cat([_det_grad_singular(Af[sing], gf[sing]), _det_grad_nonsingular(Af[nons], gf[nons], df[nons])])
    order = xp.argsort(xp.concatenate([sing, nons]))
    return (parts[order].reshape(*batch, n, n),)


@op(LinalgDetBackward0, name="linalg_det", top_level=False)
def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix (of each in a batch)."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_det", A, 1, "A")
    check_square(A, "linalg.det")
    check_float(A, "linalg.det")
    out = like(A._device.xp.asarray(A._device.xp.linalg.det(A.data)), A)
    if needs_grad(A):
        node: Any = attach(LinalgDetBackward0((edge_of(A),)), out)
        node.A, node.result = save(A), save(out, is_output=True)
    return out


# ------------------------------------------------------------------------------ slogdet
@backward(saved=("A",), batched=True)
def LinalgSlogdetBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``g_logabsdet A^{-H}`` (slogdet_backward; the sign's gradient is 0 for real matrices). A
    singular matrix: first order, PyTorch's LU solve divides by the zero pivot (inf and NaN,
    reproduced by ``lu_solve``); recorded, a solve, whose ``LinAlgError`` PyTorch raises too."""
    g = grads[1]
    if g is None:
        return (None,)
    A = self.A.unpack(self)
    n = A.data.shape[-1]
    rhs = diag_embed(g.unsqueeze(-1).expand(*g.data.shape, n))
    if first_order():
        xp = A._device.xp
        try:
            return (like(xp.linalg.solve(xp.swapaxes(A.data, -1, -2), rhs.data), g),)
        except linalg_error_type(xp):
            shape = rhs.data.shape  # (a batch of gradients in front, under is_grads_batched)
            lu, perm, _ = lu_factor(xp, xp.broadcast_to(xp.swapaxes(A.data, -1, -2), shape))
            x = quietly(lu_solve, xp, lu, perm, rhs.data.reshape(-1, n, n))
            return (like(x.reshape(shape), g),)
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
    out = like(xp.ascontiguousarray(xp.swapaxes(lower, -1, -2)) if upper else lower, A)
    if needs_grad(A):
        node: Any = attach(LinalgCholeskyExBackward0((edge_of(A),)), out)
        node.L, node.upper = save(out, is_output=True), upper
    return out
