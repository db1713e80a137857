"""Tensor's methods bound from ``aiograd._ops.bitwise``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor
    from .._types import TensorLike

    class BitwiseMethods:
        """Declared from ``aiograd._ops.bitwise``."""

        def bitwise_and(self, other: TensorLike) -> Tensor:
            """Elementwise AND of bool or integer operands (logical on bool); no gradient."""
            ...
        def bitwise_or(self, other: TensorLike) -> Tensor:
            """Elementwise OR of bool or integer operands (logical on bool); no gradient."""
            ...
        def bitwise_xor(self, other: TensorLike) -> Tensor:
            """Elementwise exclusive OR of bool or integer operands (logical on bool); no
            gradient."""
            ...
        def bitwise_not(self) -> Tensor:
            """Elementwise NOT of a bool or integer tensor (on bool the logical not); no
            gradient."""
            ...
        def bitwise_left_shift(self, other: TensorLike) -> Tensor:
            """``input << other``, elementwise, for integer operands (0 where ``other`` is negative
            or the dtype's width or more); no gradient."""
            ...
        def bitwise_right_shift(self, other: TensorLike) -> Tensor:
            """``input >> other``, elementwise, for integer operands (arithmetic for signed ones; a
            negative or too large ``other`` gives 0, or -1 for a negative value); no gradient."""
            ...
        def logical_and(self, other: Tensor) -> Tensor:
            """Elementwise ``input and other`` (non-zero is true), any dtypes; a bool tensor."""
            ...
        def logical_or(self, other: Tensor) -> Tensor:
            """Elementwise ``input or other`` (non-zero is true), any dtypes; a bool tensor."""
            ...
        def logical_xor(self, other: Tensor) -> Tensor:
            """Elementwise exclusive or of the truth of ``input`` and ``other``; a bool tensor."""
            ...
        def logical_not(self) -> Tensor:
            """Elementwise ``not input`` (zero is true); a bool tensor."""
            ...
        def __invert__(self) -> Tensor:
            """``~input``: ``bitwise_not`` (the logical not on bool); floats are a TypeError."""
            ...
