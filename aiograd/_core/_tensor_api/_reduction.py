"""Tensor's methods bound from ``aiograd._ops.reduction``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import TypeAlias, overload

    from numpy.typing import DTypeLike

    from .._tensor import Tensor
    from .._types import ValuesIndices

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _bool: TypeAlias = builtins.bool
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class ReductionMethods:
        """Declared from ``aiograd._ops.reduction``."""

        def sum(
            self,
            dim: _int | Sequence[_int] | None = ...,
            keepdim: _bool = ...,
            *,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """Sum over ``dim`` (int, tuple, or None for all); ``keepdim`` only with ``dim``, as
            PyTorch."""
            ...
        def mean(
            self,
            dim: _int | Sequence[_int] | None = ...,
            keepdim: _bool = ...,
            *,
            dtype: DTypeLike | None = None,
        ) -> Tensor:
            """Mean over ``dim`` (int, tuple, or None for all); ``keepdim`` only with ``dim``, as
            PyTorch."""
            ...
        def var(
            self,
            dim: _int | Sequence[_int] | _bool | None = ...,
            unbiased: _bool = ...,
            keepdim: _bool = ...,
            *,
            correction: _float | None = ...,
        ) -> Tensor:
            """Variance over ``dim`` (int, tuple, or None for all) with Bessel's ``correction``
            (default 1)."""
            ...
        @overload
        def max(self) -> Tensor: ...
        @overload
        def max(self, dim: _int, keepdim: _bool = False) -> ValuesIndices: ...
        @overload
        def max(self, dim: Tensor) -> Tensor: ...
        def max(self, dim: _int | Tensor = ..., keepdim: _bool = ...) -> Tensor | ValuesIndices:
            """Maximum, as ``torch.max``."""
            ...
        @overload
        def min(self) -> Tensor: ...
        @overload
        def min(self, dim: _int, keepdim: _bool = False) -> ValuesIndices: ...
        @overload
        def min(self, dim: Tensor) -> Tensor: ...
        def min(self, dim: _int | Tensor = ..., keepdim: _bool = ...) -> Tensor | ValuesIndices:
            """Minimum, as ``torch.min``: see :func:`max`."""
            ...
        def prod(
            self, dim: _int = ..., keepdim: _bool = ..., *, dtype: DTypeLike | None = None
        ) -> Tensor:
            """Product of all elements, or over ``dim`` (an int, not None; ``keepdim`` only with
            it); exact gradients also with zeros."""
            ...
        def argmax(self, dim: _int | None = None, keepdim: _bool = False) -> Tensor:
            """Index of the (first) maximum, flattened when ``dim`` is None; int64, not
            differentiable."""
            ...
        def argmin(self, dim: _int | None = None, keepdim: _bool = False) -> Tensor:
            """Index of the (first) minimum, flattened when ``dim`` is None; int64, not
            differentiable."""
            ...
