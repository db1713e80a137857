"""The eigendecomposition of a general square matrix, as ``torch.linalg.eig`` and ``eigvals``:
complex eigenvalues and eigenvectors (complex64 for float32 input, complex128 for float64), from
LAPACK's geev as numpy calls it, as torch does: the same order, eigenvectors of unit norm with
the largest component real (geev's normalisation), batched over leading dims; PyTorch's checks
and messages.

Not differentiable here: the outputs are complex, and aiograd carries no complex gradients (no
complex dtypes, no ``real``/``imag`` to make a real loss of them, and its backward rules do not
conjugate). A tensor that requires grad gives outputs recorded by ``LinalgEigBackward0``, as
torch's, whose backward raises a ``RuntimeError`` that says so.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .._base._dtypes import scalar_type_name
from ._linalg_util import check_square
from ._registry import backward, op
from ._util import Tensor, edge_of, like, needs_grad, not_tensor

__all__ = ["EigResult", "eig", "eigvals"]

EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])  # type: ignore[name-match]
EigResult.__module__ = "aiograd.return_types"
EigResult.__doc__ = "The ``(eigenvalues, eigenvectors)`` pair returned by ``linalg.eig``."

#: The message of a backward through ``eig``: what aiograd lacks for it.
NO_COMPLEX_GRADIENTS = (
    "linalg_eig_backward: aiograd cannot differentiate through linalg.eig or linalg.eigvals: their outputs are "
    "complex, and aiograd carries no complex gradients (no complex dtypes, no Tensor.real/.imag, no conjugating "
    "backward rules). For a symmetric matrix use linalg.eigh, whose gradient is supported."
)


@backward(batched=True)
def LinalgEigBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Refused: see ``NO_COMPLEX_GRADIENTS`` (torch's rule is ``linalg_eig_backward``)."""
    raise RuntimeError(NO_COMPLEX_GRADIENTS)


def _check(A: Any, fname: str, finite: bool = True) -> None:
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(fname.replace(".", "_"), A)
    kind = A.data.dtype.kind
    if kind in "biu":  # (torch's complex counterpart of the dtype, looked up first)
        raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(A.data.dtype)}")
    check_square(A, fname)
    if A.data.dtype.itemsize < 4 or kind not in "fc":
        raise NotImplementedError(f"\"linalg_eig_out_cpu\" not implemented for '{scalar_type_name(A.data.dtype)}'")
    xp = A._device.xp
    if finite and not bool(xp.isfinite(A.data).all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")


def _complex(xp: Any, x: Any, like_dtype: Any) -> Any:
    """``x`` in the complex dtype of ``like_dtype`` (numpy gives real arrays when every
    eigenvalue is real)."""
    return x.astype(xp.result_type(like_dtype, xp.complex64), copy=False)


def _record(A: Tensor, *outs: Tensor) -> None:
    """``LinalgEigBackward0`` as the outputs' grad_fn, as torch's (complex outputs, which
    ``attach`` leaves alone: set here)."""
    node: Any = LinalgEigBackward0((edge_of(A),))
    node.num_inputs = 2
    for nr, out in enumerate(outs):
        out._requires_grad = True
        out.grad_fn = node
        if nr:
            out.output_nr = nr


@op(name="linalg_eig", top_level=False)
def eig(A: Tensor) -> Any:
    """Eigenvalues and eigenvectors (columns, unit norm) of a square matrix, complex, in LAPACK
    geev's order."""
    _check(A, "linalg.eig")
    xp, a = A._device.xp, A.data
    w, v = xp.linalg.eig(a)
    L, V = like(_complex(xp, w, a.dtype), A), like(_complex(xp, v, a.dtype), A)
    if needs_grad(A):
        _record(A, L, V)
    return EigResult(L, V)


@op(name="linalg_eigvals", top_level=False)
def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of a square matrix, complex, in LAPACK geev's order (the eigenvectors are
    computed too when ``A`` requires grad, as torch's)."""
    _check(A, "linalg.eigvals", finite=needs_grad(A))
    if needs_grad(A):
        return eig(A).eigenvalues
    xp, a = A._device.xp, A.data
    nan, inf = (xp.isnan(a).any(axis=(-2, -1)), xp.isinf(a).any(axis=(-2, -1)))
    if not (nan | inf).any():
        return like(_complex(xp, xp.linalg.eigvals(a), a.dtype), A)
    # torch's LAPACK refuses these (and returns NaN): no LAPACK call on them, NaN eigenvalues,
    # imaginary parts NaN only for an infinity (as torch's)
    w = _complex(xp, xp.linalg.eigvals(xp.where((nan | inf)[..., None, None], 0, a)), a.dtype)
    w = xp.where(nan[..., None], xp.nan, w)
    w = xp.where(inf[..., None] & ~nan[..., None], complex(xp.nan, xp.nan), w)
    return like(w.astype(_complex(xp, a[:0], a.dtype).dtype, copy=False), A)
