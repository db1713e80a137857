"""Tensor's methods bound from ``aiograd._ops.vector_products``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import TypeAlias

    from .._tensor import Tensor

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _float: TypeAlias = builtins.float

    class VectorProductsMethods:
        """Declared from ``aiograd._ops.vector_products``."""

        def mv(self, vec: Tensor) -> Tensor:
            """The product of a matrix and a vector, ``(n, m) @ (m,)``: ``(n,)``."""
            ...
        def addmv(self, mat: Tensor, vec: Tensor, *, beta: _float = 1, alpha: _float = 1) -> Tensor:
            """``beta * input + alpha * (mat @ vec)``: ``input`` a vector of ``mat``'s rows (or one
            element, broadcast); where ``beta`` is 0 ``input`` is ignored, where ``alpha`` is 0 the
            product is (NaN in them does not spread)."""
            ...
        def vdot(self, other: Tensor) -> Tensor:
            """The inner product of two 1-D tensors of the same size and dtype (the first
            conjugated, which changes nothing for real tensors)."""
            ...
        def inner(self, other: Tensor) -> Tensor:
            """The sum of products over the last dims of ``input`` and ``other`` (``tensordot`` over
            them); with a 0-d operand, the product ``input * other``."""
            ...
        def addmm(
            self, mat1: Tensor, mat2: Tensor, *, beta: _float = 1, alpha: _float = 1
        ) -> Tensor:
            """``beta * input + alpha * (mat1 @ mat2)``: ``input`` broadcast to the product's shape;
            where ``beta`` is 0 ``input`` is ignored, where ``alpha`` is 0 the product is (BLAS's
            rule)."""
            ...
        def baddbmm(
            self, batch1: Tensor, batch2: Tensor, *, beta: _float = 1, alpha: _float = 1
        ) -> Tensor:
            """``beta * input + alpha * bmm(batch1, batch2)``: ``input`` broadcast to ``(b, n, p)``;
            where ``beta`` is 0 ``input`` is ignored."""
            ...
        def addbmm(
            self, batch1: Tensor, batch2: Tensor, *, beta: _float = 1, alpha: _float = 1
        ) -> Tensor:
            """``beta * input + alpha * sum_i(batch1[i] @ batch2[i])``: ``input`` broadcast to ``(n,
            p)``; where ``beta`` is 0 ``input`` is ignored, where ``alpha`` is 0 the product is."""
            ...
