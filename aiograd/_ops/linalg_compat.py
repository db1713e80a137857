"""The linear algebra PyTorch has outside ``torch.linalg`` (``torch.det``, ``logdet``,
``slogdet``, ``inverse``, ``pinverse``, ``cholesky``, ``qr``, ``svd``, ``matrix_exp``,
``matrix_power``, ``cross``) and ``linalg.matrix_exp``, ``linalg.matrix_power``,
``linalg.cross``: thin forms of the ``torch.linalg`` ops of ``decompositions``,
``linear_systems`` and ``orthogonal`` where PyTorch's are (the same nodes: ``torch.det`` records
``LinalgDetBackward0``), with PyTorch's old signatures (``some=``, ``compute_uv=``, ``rcond``),
deprecation warnings and messages; the matrix exponential and the cross product are records of
their own (``LinalgMatrixExpBackward0``, ``LinalgCrossBackward0``).
"""

from __future__ import annotations

import warnings
from collections import namedtuple
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._linalg_util import LinAlgError, check_float, check_square
from ._registry import backward, op, variant
from ._util import Tensor, attach, edge_of, infer_size, like, needs_grad, not_tensor, save
from .batching import batched_sum_to
from .decompositions import LinalgCholeskyExBackward0, LinalgDetBackward0, LinalgSlogdetBackward0
from .decompositions import cholesky as _linalg_cholesky
from .decompositions import det as _linalg_det
from .decompositions import slogdet as _linalg_slogdet
from .elementwise import WhereBackward0, where
from .linalg import MmBackward0, matmul
from .linear_systems import LinalgInvExBackward0, LinalgPinvBackward0
from .linear_systems import inv as _linalg_inv
from .linear_systems import pinv as _linalg_pinv
from .orthogonal import LinalgQrBackward0, LinalgSvdBackward0
from .orthogonal import qr as _linalg_qr
from .orthogonal import svd as _linalg_svd

__all__ = ["cholesky", "cross", "det", "inverse", "linalg_cross", "linalg_matrix_exp", "linalg_matrix_power", "logdet",
           "matrix_exp", "matrix_power", "pinverse", "qr", "slogdet", "svd"]

SVDResult = namedtuple("svd", ["U", "S", "V"])  # type: ignore[name-match]
SVDResult.__module__ = "aiograd.return_types"
SVDResult.__doc__ = "The ``(U, S, V)`` triple returned by ``torch.svd`` (``V``, not ``Vh``)."

CholeskyBackward0 = variant("CholeskyBackward0", LinalgCholeskyExBackward0, module=__name__)


def _tensor(fname: str, A: Any, arg: str = "input") -> None:
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(fname, A, 1, arg)


@op(LinalgDetBackward0)
def det(input: Tensor) -> Tensor:
    """The determinant of a square matrix (of each in a batch), as ``torch.det`` (= ``linalg.det``)."""
    _tensor("det", input)
    return _linalg_det(input)


@op(LinalgSlogdetBackward0)
def slogdet(input: Tensor) -> Any:
    """``(sign, logabsdet)`` of the determinant, as ``torch.slogdet`` (= ``linalg.slogdet``)."""
    _tensor("slogdet", input)
    return _linalg_slogdet(input)


@op(WhereBackward0)
def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: NaN where the determinant is negative, -inf where it is 0, as
    ``torch.logdet`` (``where(sign == -1, nan, logabsdet)``: a ``WhereBackward0`` node)."""
    _tensor("logdet", input)
    check_square(input, "logdet")
    check_float(input, "logdet")
    sign, logabs = _linalg_slogdet(input)
    return where(sign == -1, like(np.array(np.nan, dtype=logabs.data.dtype), logabs), logabs)


@op(LinalgInvExBackward0)
def inverse(input: Tensor) -> Tensor:
    """The inverse of a square matrix (of each in a batch), as ``torch.inverse`` (= ``linalg.inv``)."""
    _tensor("inverse", input)
    return _linalg_inv(input)


@op(LinalgPinvBackward0)
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse, singular values below ``rcond`` times the largest cut, as
    ``torch.pinverse`` (``linalg.pinv(input, rtol=rcond)``)."""
    _tensor("pinverse", input)
    return _linalg_pinv(input, atol=0.0, rtol=rcond)


@op(CholeskyBackward0)
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor (lower, or upper with ``upper=True``), as the deprecated
    ``torch.cholesky`` (its ``CholeskyBackward0`` node and its message)."""
    _tensor("cholesky", input)
    warnings.warn(
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future PyTorch "
        "release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\nand\nU = "
        "torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform "
        "will produce equivalent results for all valid (symmetric positive definite) inputs.",
        UserWarning, stacklevel=2)
    try:
        out = _linalg_cholesky(input, upper=upper)
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.cholesky: ", "cholesky: ", 1)) from None
    except RuntimeError as e:
        if "Expected a floating point" in str(e):  # (the old op's kernel: its dispatch's error)
            name = scalar_type_name(input.data.dtype)
            raise NotImplementedError(f"\"cholesky_cpu\" not implemented for '{name}'") from None
        raise RuntimeError(str(e).replace("linalg.cholesky: ", "cholesky: ", 1)) from None
    if out.grad_fn is not None:
        out.grad_fn.__class__ = CholeskyBackward0
    return out


@op(LinalgQrBackward0)
def qr(input: Tensor, some: bool = True) -> Any:
    """``(Q, R)``, as the deprecated ``torch.qr``: ``linalg.qr(input, 'reduced' if some else
    'complete')``."""
    _tensor("qr", input)
    warnings.warn(
        "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch release.\n"
        "The boolean parameter 'some' has been replaced with a string parameter 'mode'.\nQ, R = torch.qr(A, some)\n"
        "should be replaced with\nQ, R = torch.linalg.qr(A, 'reduced' if some else 'complete')",
        UserWarning, stacklevel=2)
    return _linalg_qr(input, "reduced" if some else "complete")


@op(LinalgSvdBackward0)
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """``(U, S, V)`` with ``input = U diag(S) V^H``, as ``torch.svd``: ``V``, not ``linalg.svd``'s
    ``Vh`` (its transpose); ``some=False`` gives the full square factors; ``compute_uv=False``
    gives zero ``U`` and ``V`` (their full shapes) and ``S`` alone differentiable."""
    _tensor("svd", input)
    if not compute_uv:
        S = _linalg_svd(input, full_matrices=False).S
        m, n = input.data.shape[-2:]
        xp, batch = input._device.xp, input.data.shape[:-2]
        zeros = (like(xp.zeros((*batch, k, k), dtype=S.data.dtype), input) for k in (m, n))
        return SVDResult(next(zeros), S, next(zeros))
    U, S, Vh = _linalg_svd(input, full_matrices=not some)
    return SVDResult(U, S, Vh.mT)


# ------------------------------------------------------------------------------ matrix_exp
# Higham's scaling and squaring with the [13/13] Padé approximant (Higham 2005, "The Scaling and
# Squaring Method for the Matrix Exponential Revisited"); PyTorch uses a Taylor polynomial of its
# own choice of degree: the two agree to rounding, not bit for bit.
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(xp: Any, a: Any) -> Any:
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    norm = xp.abs(a).sum(axis=-2).max(axis=-1)  # the 1-norm of each matrix
    s = xp.maximum(0, xp.ceil(xp.log2(xp.maximum(norm, 1e-300) / _THETA13))).astype(np.int64)
    s = xp.where(xp.isfinite(norm), s, 0)
    a = a / (2.0 ** s)[..., None, None].astype(a.dtype)
    b = _PADE13
    ident = xp.broadcast_to(xp.eye(n, dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident
    r = xp.linalg.solve(v - u, v + u)
    for k in range(int(s.max()) if s.size else 0):
        r = xp.where((s > k)[..., None, None], r @ r, r)
    return r


@backward(saved=("A",))
def LinalgMatrixExpBackward0(self: Any, grads: list[Any]) -> Any:
    """PyTorch's ``linalg_matrix_exp_differential``: the top right block of
    ``exp([[A^H, g], [0, A^H]])``, an exponential again (so differentiable again)."""
    from .joining import cat

    g = grads[0]
    A = self.A.unpack(self)
    n = A.data.shape[-1]
    At = A.mT
    top = cat([At, g], -1)
    bottom = cat([g * 0, At], -1)
    big = linalg_matrix_exp(cat([top, bottom], -2))
    return (big[..., :n, n:],)


@op(LinalgMatrixExpBackward0, name="linalg_matrix_exp", top_level=False)
def linalg_matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (of each in a batch), as
    ``torch.linalg.matrix_exp``."""
    _tensor("linalg_matrix_exp", A)
    check_square(A, "linalg.matrix_exp")
    check_float(A, "linalg.matrix_exp")
    from .quiet import quietly

    out = like(quietly(_expm, A._device.xp, A.data), A)
    if needs_grad(A):
        node: Any = attach(LinalgMatrixExpBackward0((edge_of(A),)), out)
        node.A = save(A)
    return out


@op(LinalgMatrixExpBackward0)
def matrix_exp(input: Tensor) -> Tensor:
    """The matrix exponential, as ``torch.matrix_exp`` (= ``linalg.matrix_exp``)."""
    _tensor("matrix_exp", input)
    return linalg_matrix_exp(input)


# ------------------------------------------------------------------------------ matrix_power
def _matrix_power(A: Tensor, n: int, fname: str) -> Tensor:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{fname}(): argument 'n' must be int, not {type(n).__name__}")
    check_square(A, "linalg.matrix_power")
    n = int(n)
    if n == 0:
        xp = A._device.xp
        return A.clone().copy_(like(xp.broadcast_to(xp.eye(A.data.shape[-1], dtype=A.data.dtype), A.data.shape), A))
    a = A
    if n < 0:
        a, n = _linalg_inv(A), -n
        if n == 1:  # (PyTorch returns the inverse itself)
            return a
    if n == 1:
        return a.clone()
    if n == 2:
        return matmul(a, a)
    if n == 3:
        return matmul(matmul(a, a), a)
    z: Tensor | None = None
    result: Tensor | None = None
    while n > 0:  # PyTorch's binary decomposition of n, in its order of products
        bit, n = n % 2, n // 2
        z = a if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    assert result is not None
    return result


@op(MmBackward0, LinalgInvExBackward0, name="linalg_matrix_power", top_level=False)
def linalg_matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` to the integer power ``n`` (the inverse's power for ``n < 0``, the identity for 0),
    by repeated products as ``torch.linalg.matrix_power`` (its ``MmBackward0`` nodes)."""
    _tensor("linalg_matrix_power", A)
    return _matrix_power(A, n, "linalg_matrix_power")


@op(MmBackward0, LinalgInvExBackward0)
def matrix_power(input: Tensor, n: int) -> Tensor:
    """``input`` to the integer power ``n``, as ``torch.matrix_power`` (= ``linalg.matrix_power``)."""
    _tensor("matrix_power", input)
    return _matrix_power(input, n, "matrix_power")


# ------------------------------------------------------------------------------ cross
def _cross_arrays(xp: Any, a: Any, b: Any, dim: int) -> Any:
    a, b = xp.moveaxis(a, dim, -1), xp.moveaxis(b, dim, -1)
    out = xp.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                    a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], -1)
    return xp.moveaxis(out, -1, dim)


@backward(saved=("a", "b"), batched=True)
def LinalgCrossBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``other x grad`` and ``grad x input`` (derivatives.yaml's linalg_cross), each summed back to
    its operand's shape where it was broadcast."""
    g = grads[0]
    a, b = self.a.unpack(self), self.b.unpack(self)
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    if batch:  # (linalg.cross wants operands of one rank: the batch dims as size-1 dims)
        a, b = a.reshape((1,) * batch + tuple(a.shape)), b.reshape((1,) * batch + tuple(b.shape))
    dim = self.dim - len(self.shape)  # from the end: the batch dims come first
    ga = gb = None
    if self.next_edges[0] is not None:
        ga = batched_sum_to(linalg_cross(b, g, dim=dim), a_shape, batch)
    if self.next_edges[1] is not None:
        gb = batched_sum_to(linalg_cross(g, a, dim=dim), b_shape, batch)
    return ga, gb


@op(LinalgCrossBackward0, name="linalg_cross", top_level=False)
def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (operands broadcast), as ``torch.linalg.cross``."""
    _tensor("linalg_cross", input)
    _tensor("linalg_cross", other, "other")
    if input.ndim != other.ndim:  # (PyTorch's order of checks: its meta function's, then the kernel's)
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    nd = input.ndim
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    sa, sb = input.shape[d], other.shape[d]
    if sa != 3 or sb != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {sa} and {sb}")
    shape = infer_size(tuple(input.shape), tuple(other.shape))
    if input.data.dtype == np.bool_:  # (the kernel dispatches on input's dtype, then checks other's)
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if input.data.dtype != other.data.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(input.data.dtype)} but found "
                           f"{scalar_type_name(other.data.dtype)}")
    xp = input._device.xp
    a, b = xp.broadcast_to(input.data, shape), xp.broadcast_to(other.data, shape)
    out = like(_cross_arrays(xp, a, b, d), input)
    if needs_grad(input, other):
        node: Any = attach(LinalgCrossBackward0((edge_of(input), edge_of(other))), out)
        node.a, node.b, node.dim, node.shape = save(input), save(other), d, shape
    return out


@op(LinalgCrossBackward0)
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product along ``dim``, as ``torch.cross``: without ``dim``, PyTorch's deprecated
    default, the first dim of size 3 (with its warning)."""
    _tensor("cross", input)
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly "
            "or simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of "
            "linalg.cross in a future release.", UserWarning, stacklevel=2)
        found = [i for i, s in enumerate(input.shape) if s == 3]  # (``_default_cross_dim``: input's sizes)
        if not found:
            raise RuntimeError("no dimension of size 3 in input")
        dim = found[0]
    return linalg_cross(input, other, dim=dim)


TENSOR_METHODS = {
    "det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse,
    "cholesky": cholesky, "qr": qr, "svd": svd, "matrix_exp": matrix_exp, "matrix_power": matrix_power,
    "cross": cross,
}
