"""Tensor's methods bound from ``aiograd._ops._operator_util``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor
    from .._types import TensorLike

    class OperatorUtilMethods:
        """Declared from ``aiograd._ops._operator_util``."""

        def __mod__(self, other: TensorLike) -> Tensor:
            """``remainder(self, other)``."""
            ...
        def __rmod__(self, other: TensorLike) -> Tensor:
            """``remainder(other, self)``: a number or an array on the left."""
            ...
        def __imod__(self, other: TensorLike) -> Tensor:
            """``self = remainder(self, other)`` in place."""
            ...
        def __floordiv__(self, other: TensorLike) -> Tensor:
            """``floor_divide(self, other)``."""
            ...
        def __rfloordiv__(self, other: TensorLike) -> Tensor:
            """``floor_divide(other, self)``: a number or an array on the left."""
            ...
        def __ifloordiv__(self, other: TensorLike) -> Tensor:
            """``self = floor_divide(self, other)`` in place."""
            ...
        def __and__(self, other: TensorLike) -> Tensor:
            """``bitwise_and(self, other)``."""
            ...
        def __rand__(self, other: TensorLike) -> Tensor:
            """``bitwise_and(other, self)``: a number or an array on the left."""
            ...
        def __iand__(self, other: TensorLike) -> Tensor:
            """``self = bitwise_and(self, other)`` in place."""
            ...
        def __or__(self, other: TensorLike) -> Tensor:
            """``bitwise_or(self, other)``."""
            ...
        def __ror__(self, other: TensorLike) -> Tensor:
            """``bitwise_or(other, self)``: a number or an array on the left."""
            ...
        def __ior__(self, other: TensorLike) -> Tensor:
            """``self = bitwise_or(self, other)`` in place."""
            ...
        def __xor__(self, other: TensorLike) -> Tensor:
            """``bitwise_xor(self, other)``."""
            ...
        def __rxor__(self, other: TensorLike) -> Tensor:
            """``bitwise_xor(other, self)``: a number or an array on the left."""
            ...
        def __ixor__(self, other: TensorLike) -> Tensor:
            """``self = bitwise_xor(self, other)`` in place."""
            ...
        def __lshift__(self, other: TensorLike) -> Tensor:
            """``bitwise_left_shift(self, other)``."""
            ...
        def __rlshift__(self, other: TensorLike) -> Tensor:
            """``bitwise_left_shift(other, self)``: a number or an array on the left."""
            ...
        def __ilshift__(self, other: TensorLike) -> Tensor:
            """``self = bitwise_left_shift(self, other)`` in place."""
            ...
        def __rshift__(self, other: TensorLike) -> Tensor:
            """``bitwise_right_shift(self, other)``."""
            ...
        def __rrshift__(self, other: TensorLike) -> Tensor:
            """``bitwise_right_shift(other, self)``: a number or an array on the left."""
            ...
        def __irshift__(self, other: TensorLike) -> Tensor:
            """``self = bitwise_right_shift(self, other)`` in place."""
            ...
