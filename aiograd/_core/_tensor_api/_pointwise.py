"""Tensor's methods bound from ``aiograd._ops.pointwise``. GENERATED: do not edit.

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

    class PointwiseMethods:
        """Declared from ``aiograd._ops.pointwise``."""

        def clamp(self, min: _float | None = None, max: _float | None = None) -> Tensor:
            """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
            ...
        def clip(self, min: _float | None = None, max: _float | None = None) -> Tensor:
            """Limit values to ``[min, max]``; the same as :func:`clamp`."""
            ...
        def maximum(self, other: Tensor) -> Tensor:
            """Elementwise maximum; at ties the gradient is split evenly, as in PyTorch."""
            ...
        def minimum(self, other: Tensor) -> Tensor:
            """Elementwise minimum; at ties the gradient is split evenly, as in PyTorch."""
            ...
        def lerp(self, end: Tensor, weight: TensorLike) -> Tensor:
            """``input + weight * (end - input)``, elementwise; ``weight`` a number or a tensor."""
            ...
        def addcmul(self, tensor1: Tensor, tensor2: Tensor, *, value: _float = 1) -> Tensor:
            """``input + value * tensor1 * tensor2``, elementwise."""
            ...
        def addcdiv(self, tensor1: Tensor, tensor2: Tensor, *, value: _float = 1) -> Tensor:
            """``input + value * tensor1 / tensor2``, elementwise."""
            ...
        def masked_fill(self, mask: Tensor, value: TensorLike) -> Tensor:
            """``value`` where ``mask`` (a boolean tensor, broadcast to ``input``) holds, ``input``
            elsewhere; ``value`` a number or a 0-dim tensor (then differentiable)."""
            ...
