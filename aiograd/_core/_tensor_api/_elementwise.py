"""Tensor's methods bound from ``aiograd._ops.elementwise``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from typing import Any, TypeAlias

    from .._tensor import Tensor
    from .._types import TensorLike

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _float: TypeAlias = builtins.float

    class ElementwiseMethods:
        """Declared from ``aiograd._ops.elementwise``."""

        def add(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``input + alpha * other`` with broadcasting."""
            ...
        def sub(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``input - alpha * other`` with broadcasting."""
            ...
        def mul(self, other: TensorLike) -> Tensor:
            """Elementwise product with broadcasting."""
            ...
        def div(self, other: TensorLike, *, rounding_mode: str | None = None) -> Tensor:
            """Elementwise true division with broadcasting; ``rounding_mode="trunc"`` rounds the
            quotient toward zero, ``"floor"`` down (``rounding.rounded_div``: zero gradients)."""
            ...
        def pow(self, exponent: TensorLike) -> Tensor:
            """``input ** exponent`` with broadcasting; either side may be a number."""
            ...
        def multiply(self, other: TensorLike) -> Tensor:
            """Elementwise product with broadcasting."""
            ...
        def subtract(self, other: TensorLike, *, alpha: _float = 1) -> Tensor:
            """``input - alpha * other`` with broadcasting."""
            ...
        def divide(self, other: TensorLike, *, rounding_mode: str | None = None) -> Tensor:
            """Elementwise true division with broadcasting; ``rounding_mode="trunc"`` rounds the
            quotient toward zero, ``"floor"`` down (``rounding.rounded_div``: zero gradients)."""
            ...
        def true_divide(self, other: TensorLike) -> Tensor:
            """Elementwise true division with broadcasting; the same as :func:`div`."""
            ...
        def where(self, condition: Any, other: Any) -> Tensor:
            """``where(condition, self, other)``: ``self`` where ``condition`` holds, ``other``
            elsewhere."""
            ...
        def eq(self, other: TensorLike) -> Tensor:
            """Elementwise ``equal`` comparison; a bool tensor (no gradient)."""
            ...
        def ne(self, other: TensorLike) -> Tensor:
            """Elementwise ``not_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def lt(self, other: TensorLike) -> Tensor:
            """Elementwise ``less`` comparison; a bool tensor (no gradient)."""
            ...
        def le(self, other: TensorLike) -> Tensor:
            """Elementwise ``less_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def gt(self, other: TensorLike) -> Tensor:
            """Elementwise ``greater`` comparison; a bool tensor (no gradient)."""
            ...
        def ge(self, other: TensorLike) -> Tensor:
            """Elementwise ``greater_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def not_equal(self, other: TensorLike) -> Tensor:
            """Elementwise ``not_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def less(self, other: TensorLike) -> Tensor:
            """Elementwise ``less`` comparison; a bool tensor (no gradient)."""
            ...
        def less_equal(self, other: TensorLike) -> Tensor:
            """Elementwise ``less_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def greater(self, other: TensorLike) -> Tensor:
            """Elementwise ``greater`` comparison; a bool tensor (no gradient)."""
            ...
        def greater_equal(self, other: TensorLike) -> Tensor:
            """Elementwise ``greater_equal`` comparison; a bool tensor (no gradient)."""
            ...
        def __add__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __radd__(self, other: TensorLike) -> Tensor:
            """``add(other, self)``: a number or an array on the left."""
            ...
        def __sub__(self, other: TensorLike, *, alpha: _float = 1) -> Tensor: ...
        def __rsub__(self, other: TensorLike) -> Tensor:
            """``sub(other, self)``: a number or an array on the left."""
            ...
        def __mul__(self, other: TensorLike) -> Tensor: ...
        def __rmul__(self, other: TensorLike) -> Tensor:
            """``mul(other, self)``: a number or an array on the left."""
            ...
        def __truediv__(self, other: TensorLike, *, rounding_mode: str | None = None) -> Tensor: ...
        def __rtruediv__(self, other: TensorLike) -> Tensor:
            """``other / self``, as torch's ``Tensor.__rtruediv__``: ``self.reciprocal() * other``
            (``MulBackward0`` over ``ReciprocalBackward0``; so ``0 / x`` is NaN where ``1 / x``
            overflows, a subnormal ``x``, as there)."""
            ...
        def __pow__(self, exponent: TensorLike) -> Tensor: ...
        def __rpow__(self, other: TensorLike) -> Tensor:
            """``pow(other, self)``: a number or an array on the left."""
            ...
        def __eq__(self, other: object) -> Tensor: ...  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        def __ne__(self, other: object) -> Tensor: ...  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        def __lt__(self, other: TensorLike) -> Tensor: ...
        def __le__(self, other: TensorLike) -> Tensor: ...
        def __gt__(self, other: TensorLike) -> Tensor: ...
        def __ge__(self, other: TensorLike) -> Tensor: ...
