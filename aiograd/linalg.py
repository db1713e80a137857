"""``aiograd.linalg``: linear algebra as ``torch.linalg``.

Decompositions and solvers (``inv``, ``pinv``, ``solve``, ``solve_triangular``, ``lstsq``, ``det``,
``slogdet``, ``cholesky``, ``qr``, ``eigh``, ``eig``, ``eigvals``, ``svd``, ``svdvals``) are ops of
``aiograd._ops.decompositions``, ``aiograd._ops.orthogonal``, ``aiograd._ops.linear_systems``,
``aiograd._ops.linalg_lstsq``, ``aiograd._ops.eig`` and ``aiograd._ops.triangular``, re-exported here; the norms (``norm``, ``vector_norm``,
``matrix_norm``) are composed from them as in PyTorch. Every function works on batches of
matrices (the last two dims), and failures on the input's values raise ``LinAlgError`` (a
``RuntimeError``) with PyTorch's message.
"""

from __future__ import annotations

import math
import typing

from ._ops._linalg_util import LinAlgError
from ._ops._linalg_util import check_matrix as _check_matrix
from ._ops.convenience import norm as _p_norm
from ._ops.decompositions import cholesky, det, slogdet
from ._ops.eig import eig, eigvals
from ._ops.linalg_lstsq import lstsq
from ._ops.linear_systems import inv, pinv, solve
from ._ops.orthogonal import eigh, qr, svd
from ._ops.triangular import solve_triangular

if typing.TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ._core._tensor import Tensor

__all__ = [
    "LinAlgError",
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "inv",
    "lstsq",
    "pinv",
    "matrix_norm",
    "norm",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vector_norm",
]


def svdvals(A: Tensor) -> Tensor:
    """The singular values of ``A`` (descending), as ``torch.linalg.svdvals``."""
    return svd(A, full_matrices=False).S


def _dims(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(d % max(ndim, 1) for d in dims)


def _reduce_extreme(x: Tensor, dims: tuple[int, ...], keepdim: bool, largest: bool) -> Tensor:
    """The max (or min) over ``dims``, one dim at a time from the last."""
    for d in sorted(dims, reverse=True):
        x = (x.max(d, keepdim=True) if largest else x.min(d, keepdim=True)).values
    return x if keepdim else x.squeeze(dims) if dims else x


def vector_norm(
    x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default): ``ord`` any real
    number, ``inf`` (largest magnitude), ``-inf`` (smallest) or 0 (number of nonzeros)."""
    if dtype is not None:
        x = x.to(dtype)
    if ord > 0:  # (inf included) one LinalgVectorNormBackward0 node, PyTorch's
        return _p_norm(x, ord, dim, keepdim)
    dims = _dims(dim, x.ndim)
    every = tuple(range(x.ndim)) if dims is None else dims
    if ord == 0:
        return (x != 0).to(x.dtype).sum(every, keepdim=keepdim)
    if ord == -math.inf:
        return _reduce_extreme(x.abs(), every, keepdim, largest=False)
    return (x.abs() ** ord).sum(every, keepdim=keepdim) ** (1.0 / ord)


def matrix_norm(
    A: Tensor, ord: str | float = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The matrix norm of ``A`` over the two dims ``dim``: ``"fro"``, ``"nuc"`` (sum of singular
    values), 2 / -2 (largest / smallest singular value), 1 / -1 (max / min column sum of
    magnitudes), ``inf`` / ``-inf`` (max / min row sum)."""
    _check_matrix(A, "linalg.matrix_norm")
    if isinstance(dim, int) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim if isinstance(dim, int) else ' '.join(map(str, dim))}")
    if dtype is not None:
        A = A.to(dtype)
    r, c = (d % A.ndim for d in dim)
    if ord == "fro":
        return _p_norm(A, 2, (r, c), keepdim)
    if ord == "nuc" or ord in (2, -2):
        last = A.permute(*[d for d in range(A.ndim) if d not in (r, c)], r, c)
        s = svdvals(last)
        out = s.sum(-1) if ord == "nuc" else _reduce_extreme(s, (s.ndim - 1,), False, largest=ord == 2)
        return out.unsqueeze(min(r, c)).unsqueeze(max(r, c)) if keepdim else out
    if ord in (1, -1, math.inf, -math.inf):
        summed, across = (r, c) if ord in (1, -1) else (c, r)
        sums = A.abs().sum(summed, keepdim=True)
        out = _reduce_extreme(sums, (across,), True, largest=ord > 0)
        return out if keepdim else out.squeeze((r, c))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(
    A: Tensor,
    ord: str | float | None = None,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """``torch.linalg.norm``: a vector norm over one dim (or a 1-D input), a matrix norm over two
    dims (or a 2-D input); with neither ``ord`` nor ``dim``, the 2-norm of all elements."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1 and not isinstance(ord, str):
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        # a string order names a matrix norm (which wants two dims, PyTorch's message otherwise)
        return matrix_norm(A, "fro" if ord is None else ord, dim if len(dims) == 2 else dims[0] if len(dims) == 1 else dims, keepdim, dtype=dtype)  # type: ignore[arg-type]
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)  # type: ignore[arg-type]
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


# torch.linalg.cross, matrix_exp and matrix_power (aiograd/_ops/linalg_compat.py)
from ._ops.linalg_compat import linalg_cross as cross  # noqa: E402
from ._ops.linalg_compat import linalg_matrix_exp as matrix_exp  # noqa: E402
from ._ops.linalg_compat import linalg_matrix_power as matrix_power  # noqa: E402

__all__ += ["cross", "matrix_exp", "matrix_power"]
