"""Tensor's methods bound from ``aiograd._ops.inplace_variants``. GENERATED: do not edit.

Declared for type checkers only, as the package's docstring says; written by
``python3 tools/gen_tensor_api.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import builtins
    from collections.abc import Sequence
    from typing import TypeAlias

    from numpy.typing import DTypeLike

    from .._tensor import Tensor
    from .._types import TensorLike

    # Also Tensor methods: inside the class these names mean the methods, so annotations
    # spell the builtins through these aliases.
    _float: TypeAlias = builtins.float
    _int: TypeAlias = builtins.int

    class InplaceVariantsMethods:
        """Declared from ``aiograd._ops.inplace_variants``."""

        def abs_(self) -> Tensor:
            """``abs`` in place: the result is written into ``self``, which is returned."""
            ...
        def acos_(self) -> Tensor:
            """``acos`` in place: the result is written into ``self``, which is returned."""
            ...
        def asin_(self) -> Tensor:
            """``asin`` in place: the result is written into ``self``, which is returned."""
            ...
        def atan_(self) -> Tensor:
            """``atan`` in place: the result is written into ``self``, which is returned."""
            ...
        def ceil_(self) -> Tensor:
            """``ceil`` in place: the result is written into ``self``, which is returned."""
            ...
        def cos_(self) -> Tensor:
            """``cos`` in place: the result is written into ``self``, which is returned."""
            ...
        def cosh_(self) -> Tensor:
            """``cosh`` in place: the result is written into ``self``, which is returned."""
            ...
        def digamma_(self) -> Tensor:
            """``digamma`` in place: the result is written into ``self``, which is returned."""
            ...
        def erf_(self) -> Tensor:
            """``erf`` in place: the result is written into ``self``, which is returned."""
            ...
        def erfc_(self) -> Tensor:
            """``erfc`` in place: the result is written into ``self``, which is returned."""
            ...
        def erfinv_(self) -> Tensor:
            """``erfinv`` in place: the result is written into ``self``, which is returned."""
            ...
        def expm1_(self) -> Tensor:
            """``expm1`` in place: the result is written into ``self``, which is returned."""
            ...
        def floor_(self) -> Tensor:
            """``floor`` in place: the result is written into ``self``, which is returned."""
            ...
        def frac_(self) -> Tensor:
            """``frac`` in place: the result is written into ``self``, which is returned."""
            ...
        def lgamma_(self) -> Tensor:
            """``lgamma`` in place: the result is written into ``self``, which is returned."""
            ...
        def log_(self) -> Tensor:
            """``log`` in place: the result is written into ``self``, which is returned."""
            ...
        def log10_(self) -> Tensor:
            """``log10`` in place: the result is written into ``self``, which is returned."""
            ...
        def log1p_(self) -> Tensor:
            """``log1p`` in place: the result is written into ``self``, which is returned."""
            ...
        def log2_(self) -> Tensor:
            """``log2`` in place: the result is written into ``self``, which is returned."""
            ...
        def reciprocal_(self) -> Tensor:
            """``reciprocal`` in place: the result is written into ``self``, which is returned."""
            ...
        def rsqrt_(self) -> Tensor:
            """``rsqrt`` in place: the result is written into ``self``, which is returned."""
            ...
        def sigmoid_(self) -> Tensor:
            """``sigmoid`` in place: the result is written into ``self``, which is returned."""
            ...
        def sign_(self) -> Tensor:
            """``sign`` in place: the result is written into ``self``, which is returned."""
            ...
        def sin_(self) -> Tensor:
            """``sin`` in place: the result is written into ``self``, which is returned."""
            ...
        def sinh_(self) -> Tensor:
            """``sinh`` in place: the result is written into ``self``, which is returned."""
            ...
        def sqrt_(self) -> Tensor:
            """``sqrt`` in place: the result is written into ``self``, which is returned."""
            ...
        def square_(self) -> Tensor:
            """``square`` in place: the result is written into ``self``, which is returned."""
            ...
        def tan_(self) -> Tensor:
            """``tan`` in place: the result is written into ``self``, which is returned."""
            ...
        def tanh_(self) -> Tensor:
            """``tanh`` in place: the result is written into ``self``, which is returned."""
            ...
        def trunc_(self) -> Tensor:
            """``trunc`` in place: the result is written into ``self``, which is returned."""
            ...
        def atan2_(self, other: Tensor) -> Tensor:
            """``atan2`` in place: the result is written into ``self``, which is returned."""
            ...
        def hypot_(self, other: Tensor) -> Tensor:
            """``hypot`` in place: the result is written into ``self``, which is returned."""
            ...
        def fmod_(self, other: TensorLike) -> Tensor:
            """``fmod`` in place: the result is written into ``self``, which is returned."""
            ...
        def xlogy_(self, other: TensorLike) -> Tensor:
            """``xlogy`` in place: the result is written into ``self``, which is returned."""
            ...
        def true_divide_(self, other: TensorLike) -> Tensor:
            """``true_divide`` in place: the result is written into ``self``, which is returned."""
            ...
        def lerp_(self, end: Tensor, weight: TensorLike) -> Tensor:
            """``lerp`` in place: the result is written into ``self``, which is returned."""
            ...
        def nan_to_num_(
            self, nan: _float = 0.0, posinf: _float | None = None, neginf: _float | None = None
        ) -> Tensor:
            """``nan_to_num`` in place: the result is written into ``self``, which is returned."""
            ...
        def addcmul_(self, tensor1: Tensor, tensor2: Tensor, *, value: _float = 1) -> Tensor:
            """``addcmul`` in place: the result is written into ``self``, which is returned."""
            ...
        def addcdiv_(self, tensor1: Tensor, tensor2: Tensor, *, value: _float = 1) -> Tensor:
            """``addcdiv`` in place: the result is written into ``self``, which is returned."""
            ...
        def masked_fill_(self, mask: Tensor, value: TensorLike) -> Tensor:
            """``masked_fill`` in place: the result is written into ``self``, which is returned."""
            ...
        def cumsum_(self, dim: _int, *, dtype: DTypeLike | None = None) -> Tensor:
            """``cumsum`` in place: the result is written into ``self``, which is returned."""
            ...
        def cumprod_(self, dim: _int, *, dtype: DTypeLike | None = None) -> Tensor:
            """``cumprod`` in place: the result is written into ``self``, which is returned."""
            ...
        def eq_(self, other: TensorLike) -> Tensor:
            """``eq`` in place: the result is written into ``self``, which is returned."""
            ...
        def ne_(self, other: TensorLike) -> Tensor:
            """``ne`` in place: the result is written into ``self``, which is returned."""
            ...
        def lt_(self, other: TensorLike) -> Tensor:
            """``lt`` in place: the result is written into ``self``, which is returned."""
            ...
        def le_(self, other: TensorLike) -> Tensor:
            """``le`` in place: the result is written into ``self``, which is returned."""
            ...
        def gt_(self, other: TensorLike) -> Tensor:
            """``gt`` in place: the result is written into ``self``, which is returned."""
            ...
        def ge_(self, other: TensorLike) -> Tensor:
            """``ge`` in place: the result is written into ``self``, which is returned."""
            ...
        def t_(self) -> Tensor:
            """``t`` in place: the result is written into ``self``, which is returned."""
            ...
        def transpose_(self, dim0: _int, dim1: _int) -> Tensor:
            """``transpose`` in place: the result is written into ``self``, which is returned."""
            ...
        def squeeze_(self, dim: _int | Sequence[_int] = ...) -> Tensor:
            """``squeeze`` in place: the result is written into ``self``, which is returned."""
            ...
        def unsqueeze_(self, dim: _int) -> Tensor:
            """``unsqueeze`` in place: the result is written into ``self``, which is returned."""
            ...
        def arctan2_(self, other: Tensor) -> Tensor:
            """``atan2`` in place: the result is written into ``self``, which is returned."""
            ...
