"""Tensor's methods bound from ``aiograd._ops.inplace``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from .._tensor import Tensor
    from .._types import TensorLike

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _float: TypeAlias = builtins.float

    class InplaceMethods:
        """Declared from ``aiograd._ops.inplace``."""

        def add_(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``self += alpha * other`` in place."""
            ...
        def sub_(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``self -= alpha * other`` in place."""
            ...
        def mul_(self, other: TensorLike) -> Tensor:
            """``self *= other`` in place."""
            ...
        def div_(self, other: TensorLike) -> Tensor:
            """``self /= other`` in place (true division)."""
            ...
        def pow_(self, exponent: TensorLike) -> Tensor:
            """``self **= exponent`` in place."""
            ...
        def neg_(self) -> Tensor:
            """``self = -self`` in place."""
            ...
        def exp_(self) -> Tensor:
            """``self = exp(self)`` in place."""
            ...
        def relu_(self) -> Tensor:
            """``self = max(self, 0)`` in place."""
            ...
        def clamp_(self, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
            """Limit the values to ``[min, max]`` in place (bounds: numbers or tensors)."""
            ...
        def clip_(self, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
            """Limit the values to ``[min, max]`` in place (bounds: numbers or tensors)."""
            ...
        def __iadd__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __isub__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __imul__(self, other: TensorLike) -> Tensor: ...
        def __itruediv__(self, other: TensorLike) -> Tensor: ...
        def __ipow__(self, exponent: TensorLike) -> Tensor: ...
