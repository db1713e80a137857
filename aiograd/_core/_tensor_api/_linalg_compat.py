"""Tensor's methods bound from ``aiograd._ops.linalg_compat``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class LinalgCompatMethods:
        """Declared from ``aiograd._ops.linalg_compat``."""

        def det(self) -> Tensor:
            """The determinant of a square matrix (of each in a batch), as ``torch.det`` (=
            ``linalg.det``)."""
            ...
        def logdet(self) -> Tensor:
            """``log(det(input))``: NaN where the determinant is negative, -inf where it is 0, as
            ``torch.logdet`` (``where(sign == -1, nan, logabsdet)``: a ``WhereBackward0`` node)."""
            ...
        def slogdet(self) -> Any:
            """``(sign, logabsdet)`` of the determinant, as ``torch.slogdet`` (=
            ``linalg.slogdet``)."""
            ...
        def inverse(self) -> Tensor:
            """The inverse of a square matrix (of each in a batch), as ``torch.inverse`` (=
            ``linalg.inv``)."""
            ...
        def pinverse(self, rcond: _float = 1e-15) -> Tensor:
            """The pseudo-inverse, singular values below ``rcond`` times the largest cut, as
            ``torch.pinverse`` (``linalg.pinv(input, rtol=rcond)``)."""
            ...
        def cholesky(self, upper: _bool = False) -> Tensor:
            """The Cholesky factor (lower, or upper with ``upper=True``), as the deprecated
            ``torch.cholesky`` (its ``CholeskyBackward0`` node and its message)."""
            ...
        def qr(self, some: _bool = True) -> Any:
            """``(Q, R)``, as the deprecated ``torch.qr``: ``linalg.qr(input, 'reduced' if some else
            'complete')``."""
            ...
        def svd(self, some: _bool = True, compute_uv: _bool = True) -> Any:
            """``(U, S, V)`` with ``input = U diag(S) V^H``, as ``torch.svd``: ``V``, not
            ``linalg.svd``'s ``Vh`` (its transpose); ``some=False`` gives the full square factors;
            ``compute_uv=False`` gives zero ``U`` and ``V`` (their full shapes) and ``S`` alone
            differentiable."""
            ...
        def matrix_exp(self) -> Tensor:
            """The matrix exponential, as ``torch.matrix_exp`` (= ``linalg.matrix_exp``)."""
            ...
        def matrix_power(self, n: _int) -> Tensor:
            """``input`` to the integer power ``n``, as ``torch.matrix_power`` (=
            ``linalg.matrix_power``)."""
            ...
        def cross(self, other: Tensor, dim: _int | None = None) -> Tensor:
            """The cross product along ``dim``, as ``torch.cross``: without ``dim``, PyTorch's
            deprecated default, the first dim of size 3 (with its warning)."""
            ...
