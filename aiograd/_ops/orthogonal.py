"""The decompositions with orthogonal factors, as ``torch.linalg``'s: ``qr`` ``(Q, R)``, ``eigh``
``(eigenvalues, eigenvectors)`` and ``svd`` ``(U, S, Vh)``, batched over leading dims, with
PyTorch's nodes, checks and messages and the backward formulas of its FunctionsManual.cpp
(``linalg_qr_backward``, ``linalg_eig_backward`` for Hermitian input, ``svd_backward``),
written with aiograd ops so that they can be differentiated again.

Eigenvectors and singular vectors are defined up to sign (and, for repeated values, up to a
rotation): as in PyTorch, a loss should depend on them only through gauge-invariant quantities.
Repeated eigenvalues or singular values make the formulas divide by zero, and the gradient
becomes inf or NaN as PyTorch's does.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._base._dtypes import scalar_type_name
from ._linalg_util import (
    LinAlgError,
    batch_prefix,
    check_float,
    check_matrix,
    check_square,
    diag_embed,
    eye_like,
    linalg_error_type,
)
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, save
from .joining import cat
from .linalg import matmul
from .rearrange import tril, triu
from .triangular import solve_triangular

__all__ = ["eigh", "qr", "svd"]


def _return_type(name: str, fields: list[str], doc: str) -> Any:
    cls = namedtuple(name, fields)  # type: ignore[misc]
    cls.__module__ = "aiograd.return_types"
    cls.__doc__ = doc
    return cls


QRResult = _return_type("qr", ["Q", "R"], "The ``(Q, R)`` pair returned by ``linalg.qr``.")
EighResult = _return_type("eigh", ["eigenvalues", "eigenvectors"], "The pair returned by ``linalg.eigh``.")
SVDResult = _return_type("svd", ["U", "S", "Vh"], "The ``(U, S, Vh)`` triple returned by ``linalg.svd``.")


def _right_solve_by_transpose(R: Tensor, G: Tensor) -> Tensor:
    """``G R^{-H}``: the ``X`` of ``X R^H = G``, PyTorch's triangular solve (inf and NaN at a
    zero on ``R``'s diagonal, never an error)."""
    return solve_triangular(R.mT, G, upper=False, left=False)


# ------------------------------------------------------------------------------ qr
@backward(saved=("Q", "R"), batched=True)
def LinalgQrBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """linalg_qr_backward. ``m >= n``: ``(gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^{-H}``;
    ``m < n``: the leading square block's formula, padded with zeros, plus ``Q gR``."""
    if self.mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use "
            "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
        )
    Q, R = self.Q.unpack(self), self.R.unpack(self)
    m, n = Q.data.shape[-2], R.data.shape[-1]
    if self.mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    gQ, gR = grads
    if gQ is None and gR is None:
        return (None,)
    if gQ is not None:
        gA = matmul(gR, R.mT) - matmul(Q.mT, gQ) if gR is not None else -matmul(Q.mT, gQ)
    else:
        gA = matmul(gR, R.mT)
    if m >= n:  # (the triangles zero, as PyTorch's, where a mask would give NaN from inf)
        upper = triu(gA)
        gA = matmul(Q, upper + triu(upper, 1).mT)  # syminvadj: X + X^H, its diagonal halved
        if gQ is not None:
            gA = gA + gQ
        return (_right_solve_by_transpose(R, gA),)
    X = -gA
    gA = matmul(Q, tril(X - X.mT))  # trilImInvAdjSkew (real)
    gA = _right_solve_by_transpose(R[..., :m], gA)
    zeros = like(gA._device.xp.zeros(gA.data.shape[:-1] + (n - m,), dtype=gA.data.dtype), gA)
    gA = cat([gA, zeros], -1)
    if gR is not None:
        gA = gA + matmul(Q, gR)
    return (gA,)


@op(LinalgQrBackward0, name="linalg_qr", top_level=False)
def qr(A: Tensor, mode: str = "reduced") -> Any:
    """``A = Q R`` with orthonormal columns in ``Q`` and upper triangular ``R``; ``mode`` is
    ``"reduced"`` (``Q`` m x k), ``"complete"`` (``Q`` m x m) or ``"r"`` (``R`` only, ``Q``
    empty)."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_qr", A, 1, "A")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    check_matrix(A, "linalg.qr")
    check_float(A, "linalg.qr")
    xp = A._device.xp
    if mode == "r":
        r = xp.linalg.qr(A.data, mode="r")
        q = xp.zeros((0,), dtype=A.data.dtype)
    else:
        q, r = xp.linalg.qr(A.data, mode=mode)
    Q, R = like(q, A), like(r, A)
    if needs_grad(A):
        node: Any = attach(LinalgQrBackward0((edge_of(A),)), Q, R)
        node.num_inputs = 2
        node.Q, node.R = save(Q, is_output=True), save(R, is_output=True)
        node.mode = mode
    return QRResult(Q, R)


# ------------------------------------------------------------------------------ eigh
def _gaps(L: Tensor) -> Tensor:
    """``E_ij = L_j - L_i`` off the diagonal, 1 on it (any nonzero: it only divides zeros)."""
    n = L.data.shape[-1]
    return L.unsqueeze(-2) - L.unsqueeze(-1) + eye_like(n, L)


@backward(saved=("L", "V"), batched=True)
def LinalgEighBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """linalg_eig_backward for Hermitian input: ``V (diag(gL) + skew(V^H gV) / E) V^H`` with
    ``E_ij = L_j - L_i``; eigenvalues alone: ``V diag(gL) V^H``."""
    gL, gV = grads
    if gL is None and gV is None:
        return (None,)
    L, V = self.L.unpack(self), self.V.unpack(self)
    if gV is None:
        return (matmul(V * gL.unsqueeze(-2), V.mT),)
    VhgV = matmul(V.mT, gV)
    inner = 0.5 * (VhgV - VhgV.mT) / _gaps(L)
    if gL is not None:
        inner = inner + diag_embed(gL)
    return (matmul(V, matmul(inner, V.mT)),)


@op(LinalgEighBackward0, name="linalg_eigh", top_level=False)
def eigh(A: Tensor, UPLO: str = "L") -> Any:
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric matrix, read
    from its lower (``UPLO="L"``) or upper (``"U"``) triangle."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    check_square(A, "linalg.eigh")
    if A.data.dtype.kind not in "fc":
        raise NotImplementedError(f'"linalg_eigh_cpu" not implemented for \'{scalar_type_name(A.data.dtype)}\'')
    xp = A._device.xp
    try:
        w, v = xp.linalg.eigh(A.data, UPLO=UPLO)
    except linalg_error_type(xp):
        n = A.data.shape[-1]
        bad = ~xp.isfinite(A.data.reshape(-1, n * n)).all(axis=1)
        raise LinAlgError(
            f"linalg.eigh: {batch_prefix(A.data, int(xp.argmax(bad)))}The algorithm failed to converge because the "
            f"input matrix is ill-conditioned or has too many repeated eigenvalues (error code: {n - 1})."
        ) from None
    L, V = like(w, A), like(v, A)
    if needs_grad(A):
        node: Any = attach(LinalgEighBackward0((edge_of(A),)), L, V)
        node.num_inputs = 2
        node.L, node.V = save(L, is_output=True), save(V, is_output=True)
    return EighResult(L, V)


# ------------------------------------------------------------------------------ svd
@backward(saved=("U", "S", "Vh"), batched=True)
def LinalgSvdBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """svd_backward (real case): with ``E_jk = S_k^2 - S_j^2`` (1 on the diagonal),
    ``gA = U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS)] V^H``, plus
    ``(I - U U^H) gU S^{-1} V^H`` when m > n, or ``U S^{-1} gV^H (I - V V^H)`` when m < n. With
    full matrices, only the first k columns of U and rows of Vh enter, as PyTorch's."""
    gU, gS, gVh = grads
    if gU is None and gS is None and gVh is None:
        return (None,)
    U, S, Vh = self.U.unpack(self), self.S.unpack(self), self.Vh.unpack(self)
    k = S.data.shape[-1]
    if self.full_matrices:
        U, Vh = U[..., :k], Vh[..., :k, :]
        gU = gU[..., :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
    m, n = U.data.shape[-2], Vh.data.shape[-1]
    if gU is None and gVh is None:  # singular values only
        return (matmul(U, gS.unsqueeze(-1) * Vh) if m >= n else matmul(U * gS.unsqueeze(-2), Vh),)
    UhgU = VhgV = None
    if gU is not None:
        UhgU = matmul(U.mT, gU)
        UhgU = UhgU - UhgU.mT
    if gVh is not None:
        VhgV = matmul(Vh, gVh.mT)
        VhgV = VhgV - VhgV.mT
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(k, S)
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU / E) * S.unsqueeze(-2)
    else:
        gA = S.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + diag_embed(gS)
    if m > n and gU is not None:
        gA = matmul(U, gA)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - matmul(U, matmul(U.mT, gUSinv))
        return (matmul(gA, Vh),)
    if m < n and gVh is not None:
        gA = matmul(gA, Vh)
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - matmul(matmul(SinvgVh, Vh.mT), Vh)
        return (matmul(U, gA),)
    return (matmul(U, matmul(gA, Vh)) if m >= n else matmul(matmul(U, gA), Vh),)


#: Beyond this magnitude a matrix is scaled before its SVD: LAPACK's gesdd as numpy ships it
#: (OpenBLAS) never returns for some matrices with entries near the top of float64's range
#: (1e308), which PyTorch decomposes.
_SVD_SCALE_ABOVE = 2.0**500


def _svd_arrays(xp: Any, a: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
    """numpy's SVD of ``a`` (a matrix or a batch), with PyTorch's error for NaN entries, NaN
    factors for a matrix with an infinite entry (PyTorch's are NaN but for a few entries), and
    huge matrices scaled first (the SVD of ``c A`` is ``U``, ``c S``, ``Vh``)."""
    if not a.size:
        return xp.linalg.svd(a, full_matrices=full_matrices)
    peak = xp.abs(a).max(axis=(-2, -1), keepdims=True)
    nan = xp.isnan(peak)
    if nan.any():
        index = int(xp.argmax(nan.reshape(-1)))
        raise LinAlgError(
            f"linalg.svd: {batch_prefix(a, index)}The algorithm failed to converge because the input matrix "
            "contained non-finite values."
        )
    infinite = xp.isinf(peak)
    if infinite.any():  # LAPACK may never return on these either: their factors are all NaN
        u, s, vh = _svd_arrays(xp, xp.where(infinite, 0.0, a), full_matrices)
        return (xp.where(infinite, xp.nan, u), xp.where(infinite[..., 0], xp.nan, s),
                xp.where(infinite, xp.nan, vh))
    if peak.dtype.itemsize < 8:  # float32's largest value is far below 2**500: nothing to scale
        return xp.linalg.svd(a, full_matrices=full_matrices)
    huge = peak > _SVD_SCALE_ABOVE
    if not huge.any():
        return xp.linalg.svd(a, full_matrices=full_matrices)
    # a power of two (exact) that brings the peak down to about 2**500: the small entries stay
    # far from the subnormals, as they would not if the peak were scaled to 1
    scale = xp.where(huge, xp.exp2(xp.ceil(xp.log2(xp.where(huge, peak, 1.0))) - 500), 1.0)
    u, s, vh = xp.linalg.svd(a / scale, full_matrices=full_matrices)
    return u, s * scale[..., 0], vh


@op(LinalgSvdBackward0, name="linalg_svd", top_level=False)
def svd(A: Tensor, full_matrices: bool = True) -> Any:
    """``A = U diag(S) Vh``, singular values descending; ``full_matrices=False`` gives the reduced
    factors (``U`` m x k, ``Vh`` k x n, k = min(m, n))."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_svd", A, 1, "A")
    check_matrix(A, "linalg.svd")
    check_float(A, "linalg.svd")
    xp = A._device.xp
    u, s, vh = _svd_arrays(xp, A.data, full_matrices)
    U, S, Vh = like(u, A), like(s, A), like(vh, A)
    if needs_grad(A):
        node: Any = attach(LinalgSvdBackward0((edge_of(A),)), U, S, Vh)
        node.num_inputs = 3
        node.U, node.S, node.Vh = (save(t, is_output=True) for t in (U, S, Vh))
        node.full_matrices = full_matrices
    return SVDResult(U, S, Vh)

