"""What the matrix decompositions share: PyTorch's argument checks and messages, its
``LinAlgError``, the LU facts its error messages quote, and the small matrix pieces their
backward formulas are written with (identity, diagonal, triangles), as aiograd ops on the
gradient's device, so that every formula can be differentiated again."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._util import Tensor, like

__all__ = [
    "LinAlgError",
    "check_float",
    "check_square",
    "diag_embed",
    "diagonal",
    "eye_like",
    "first_zero_pivot",
    "lu_factor",
    "lu_solve",
    "lu_system",
    "has_subnormal",
    "linalg_error_type",
    "tril",
    "triu",
]


class LinAlgError(RuntimeError):
    """A matrix function failed on its input (singular, not positive-definite), as
    ``torch.linalg.LinAlgError``: a ``RuntimeError`` with PyTorch's message."""

    __module__ = "aiograd.linalg"  # (its public home)


def check_float(A: Tensor, fname: str) -> None:
    """PyTorch's refusal of integer and boolean matrices."""
    if A.data.dtype.kind not in "fc":
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. Got {scalar_type_name(A.data.dtype)}")


def check_matrix(A: Tensor, fname: str) -> None:
    """At least 2-D, PyTorch's message otherwise."""
    if A.data.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor A must have at least 2 dimensions.")


def check_square(A: Tensor, fname: str) -> None:
    """A batch of square matrices, PyTorch's messages otherwise."""
    check_matrix(A, fname)
    m, n = A.data.shape[-2:]
    if m != n:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they are {m} by {n} matrices")


def linalg_error_type(xp: Any) -> type[BaseException]:
    """The exception the array module's ``linalg`` raises for a singular or indefinite matrix."""
    return getattr(xp.linalg, "LinAlgError", np.linalg.LinAlgError)


def batch_prefix(A: Any, index: int) -> str:
    """``"(Batch element i): "`` for a batch of matrices, nothing for one matrix."""
    return f"(Batch element {index}): " if A.ndim > 2 else ""


def lu_factor(xp: Any, a: Any) -> tuple[Any, Any, Any]:
    """LU factorization with partial pivoting of each matrix of the batch ``a`` (flattened to
    ``(batch, n, n)``), in LAPACK getf2's order of operations: the packed factors, each row's
    source row, and LAPACK's ``info`` (the 1-based position of the first zero pivot, 0 if none).
    For the cases PyTorch reports or differentiates through its own LU: a zero pivot is kept,
    as LAPACK keeps it. The column below a pivot is divided by it for 2 x 2 matrices and scaled
    by its reciprocal for larger ones, as PyTorch's LAPACK (MKL) rounds (a subnormal pivot
    gives inf). Run it quietly."""
    n = a.shape[-1]
    work = xp.array(a.reshape(-1, n, n), dtype=a.dtype, copy=True)
    batch = work.shape[0]
    rows = xp.arange(batch)
    perm = xp.broadcast_to(xp.arange(n), (batch, n)).copy()
    info = xp.zeros(batch, dtype=xp.int64)
    for k in range(n):
        p = k + xp.argmax(xp.abs(work[:, k:, k]), axis=1)
        top, best = work[rows, k].copy(), work[rows, p].copy()
        work[rows, k], work[rows, p] = best, top
        ptop, pbest = perm[rows, k].copy(), perm[rows, p].copy()
        perm[rows, k], perm[rows, p] = pbest, ptop
        pivot = work[:, k, k]
        zero = pivot == 0
        info = xp.where((info == 0) & zero, k + 1, info)
        safe = xp.where(zero, 1, pivot)[:, None]
        column = work[:, k + 1 :, k] * (1 / safe) if n > 2 else work[:, k + 1 :, k] / safe
        scale = xp.where(zero[:, None], 0, column)
        work[:, k + 1 :, k] = scale
        work[:, k + 1 :, k + 1 :] -= scale[:, :, None] * work[:, k, None, k + 1 :]
    return work, perm, info


def lu_solve(xp: Any, lu: Any, perm: Any, b: Any) -> Any:
    """``A X = B`` from ``lu_factor``'s factors of ``A`` (``b``: ``(batch, n, k)``), by row
    permutation and the two triangular substitutions in BLAS trsm's order, each pivot's
    reciprocal scaling its row as PyTorch's LAPACK does: a zero or subnormal pivot gives inf
    and NaN, as PyTorch's ``lu_solve`` does. Run it quietly."""
    n = lu.shape[-1]
    x = b[xp.arange(b.shape[0])[:, None], perm].copy()
    for j in range(n):
        x[:, j + 1 :] -= lu[:, j + 1 :, j, None] * x[:, j, None]
    for j in range(n - 1, -1, -1):
        x[:, j] *= 1 / lu[:, j, j, None]
        x[:, :j] -= lu[:, :j, j, None] * x[:, j, None]
    return x


def lu_system(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """``A X = B`` by ``lu_factor`` and ``lu_solve`` (``a`` ``(..., n, n)`` and ``b``
    ``(..., n, k)``, batch dims broadcast), PyTorch's LU solve where numpy's LAPACK rounds
    otherwise (singular, subnormal or non-finite matrices): ``X`` and each matrix's ``info``,
    both in the broadcast batch shape. Run it quietly."""
    batch = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k = a.shape[-1], b.shape[-1]
    lu, perm, info = lu_factor(xp, xp.broadcast_to(a, batch + (n, n)))
    x = lu_solve(xp, lu, perm, xp.broadcast_to(b, batch + (n, k)).reshape(-1, n, k))
    return x.reshape(batch + (n, k)), info.reshape(batch)


def has_subnormal(xp: Any, a: Any) -> bool:
    """Whether ``a`` holds a subnormal number (where numpy's and PyTorch's LAPACKs part)."""
    m = xp.abs(a)
    return bool(((m < np.finfo(a.dtype).tiny) & (m != 0)).any())


def first_zero_pivot(xp: Any, a: Any) -> tuple[int, int]:
    """The first matrix of the batch ``a`` whose LU factorization (LAPACK's getrf) meets an
    exactly zero pivot, and that pivot's 1-based position (LAPACK's ``info``, which PyTorch's
    messages quote); ``(-1, 0)`` if there is none."""
    _, _, info = lu_factor(xp, a)
    bad = xp.nonzero(info)[0]
    if bad.size == 0:
        return -1, 0
    first = int(bad[0])
    return first, int(info[first])


# ------------------------------------------------------------------------------ matrix pieces
def eye_like(n: int, g: Tensor, m: int | None = None) -> Tensor:
    """The identity (``n`` x ``m``) as a constant on ``g``'s device, in its dtype."""
    return like(g._device.xp.eye(n, m, dtype=g.data.dtype), g)


def diag_embed(v: Tensor) -> Tensor:
    """The batch of diagonal matrices whose diagonals are the last dim of ``v``."""
    return v.unsqueeze(-1) * eye_like(v.data.shape[-1], v)


def diagonal(X: Tensor) -> Tensor:
    """The main diagonal of a batch of square matrices."""
    return (X * eye_like(X.data.shape[-1], X)).sum(-1)


def tril(X: Tensor, k: int = 0) -> Tensor:
    """The lower triangle (on and below the ``k``-th diagonal) of a batch of matrices."""
    m, n = X.data.shape[-2:]
    return X * like(X._device.xp.tri(m, n, k, dtype=X.data.dtype), X)


def triu(X: Tensor, k: int = 0) -> Tensor:
    """The upper triangle (on and above the ``k``-th diagonal) of a batch of matrices."""
    m, n = X.data.shape[-2:]
    return X * like(1 - X._device.xp.tri(m, n, k - 1, dtype=X.data.dtype), X)
