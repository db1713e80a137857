"""Tensor's methods bound from ``aiograd._ops.batched_products``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor

    class BatchedProductsMethods:
        """Declared from ``aiograd._ops.batched_products``."""

        def bmm(self, mat2: Tensor) -> Tensor:
            """Batched matrix product of two 3-D tensors ``(b, n, m) @ (b, m, p)``, no
            broadcasting."""
            ...
