"""Tensor's methods bound from ``aiograd._ops.rounding``. GENERATED: do not edit.

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
    _int: TypeAlias = builtins.int

    class RoundingMethods:
        """Declared from ``aiograd._ops.rounding``."""

        def floor_divide(self, other: TensorLike) -> Tensor:
            """``input / other`` rounded down, as Python's ``//`` (and PyTorch's ``floor_divide``):
            an integer result for integers (division by zero raises), floats otherwise."""
            ...
        def round(self, *, decimals: _int | None = None) -> Tensor:
            """Round to the nearest integer, halves to even, as PyTorch's (an integer tensor is
            copied); with ``decimals``, to that many decimal places (negative: tens, hundreds...),
            floats only."""
            ...
