"""Tensor's methods bound from ``aiograd._ops.products``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor

    class ProductsMethods:
        """Declared from ``aiograd._ops.products``."""

        def dot(self, tensor: Tensor) -> Tensor:
            """The inner product of two 1-D tensors of the same size and dtype."""
            ...
        def outer(self, vec2: Tensor) -> Tensor:
            """The outer product of two 1-D tensors: ``input[:, None] * vec2`` (PyTorch's composite,
            so its node is ``MulBackward0``)."""
            ...
        def trace(self) -> Tensor:
            """The sum of the main diagonal of a 2-D tensor (rectangular too)."""
            ...
