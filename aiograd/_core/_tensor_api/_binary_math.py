"""Tensor's methods bound from ``aiograd._ops.binary_math``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor
    from .._types import TensorLike

    class BinaryMathMethods:
        """Declared from ``aiograd._ops.binary_math``."""

        def atan2(self, other: Tensor) -> Tensor:
            """The angle of the point ``(other, input)``: ``arctan(input / other)`` in the right
            quadrant, elementwise."""
            ...
        def hypot(self, other: Tensor) -> Tensor:
            """``sqrt(input ** 2 + other ** 2)``, elementwise, without overflow."""
            ...
        def fmod(self, other: TensorLike) -> Tensor:
            """The C remainder of ``input / other``: the sign of ``input``, as PyTorch's (and
            C's)."""
            ...
        def remainder(self, other: TensorLike) -> Tensor:
            """Python's modulus of ``input / other``: the sign of ``other``, as PyTorch's (a number
            ``input`` has no derivative there: its node is ``NotImplemented``)."""
            ...
        def xlogy(self, other: TensorLike) -> Tensor:
            """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN), as
            PyTorch's."""
            ...
        def arctan2(self, other: Tensor) -> Tensor:
            """The angle of the point ``(other, input)``: ``arctan(input / other)`` in the right
            quadrant, elementwise."""
            ...
        def logaddexp(self, other: Tensor) -> Tensor:
            """``log(exp(input) + exp(other))``, elementwise, without overflow; floating point
            only."""
            ...
