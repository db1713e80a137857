"""Tensor's methods bound from ``aiograd._ops.unary_math``. GENERATED: do not edit.

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

    class UnaryMathMethods:
        """Declared from ``aiograd._ops.unary_math``."""

        def neg(self) -> Tensor:
            """``-input``."""
            ...
        def exp(self) -> Tensor:
            """Elementwise ``e ** input``."""
            ...
        def log(self) -> Tensor:
            """Natural logarithm."""
            ...
        def log1p(self) -> Tensor:
            """``log(1 + input)``, accurate near zero."""
            ...
        def sqrt(self) -> Tensor:
            """Elementwise square root."""
            ...
        def abs(self) -> Tensor:
            """Elementwise absolute value (gradient 0 at 0, as PyTorch)."""
            ...
        def sign(self) -> Tensor:
            """Elementwise sign: -1, 0 or 1, and 0 at NaN as PyTorch (gradient zero everywhere)."""
            ...
        def sin(self) -> Tensor:
            """Elementwise sine."""
            ...
        def cos(self) -> Tensor:
            """Elementwise cosine."""
            ...
        def tanh(self) -> Tensor:
            """Elementwise hyperbolic tangent."""
            ...
        def sigmoid(self) -> Tensor:
            """Elementwise logistic function ``1 / (1 + exp(-x))``, computed without overflow."""
            ...
        def relu(self) -> Tensor:
            """Elementwise ``max(x, 0)`` (gradient 0 at 0, as PyTorch)."""
            ...
        def clone(self) -> Tensor:
            """A copy of the data, recorded in the graph (its gradient passes through unchanged)."""
            ...
        def expm1(self) -> Tensor:
            """``exp(input) - 1``, accurate near zero."""
            ...
        def log2(self) -> Tensor:
            """Base-2 logarithm."""
            ...
        def log10(self) -> Tensor:
            """Base-10 logarithm."""
            ...
        def rsqrt(self) -> Tensor:
            """``1 / sqrt(input)``."""
            ...
        def reciprocal(self) -> Tensor:
            """``1 / input``."""
            ...
        def tan(self) -> Tensor:
            """Elementwise tangent."""
            ...
        def asin(self) -> Tensor:
            """Elementwise arcsine (NaN outside [-1, 1], as PyTorch)."""
            ...
        def acos(self) -> Tensor:
            """Elementwise arccosine (NaN outside [-1, 1], as PyTorch)."""
            ...
        def atan(self) -> Tensor:
            """Elementwise arctangent."""
            ...
        def sinh(self) -> Tensor:
            """Elementwise hyperbolic sine."""
            ...
        def cosh(self) -> Tensor:
            """Elementwise hyperbolic cosine."""
            ...
        def floor(self) -> Tensor:
            """Round down (gradient zero, as PyTorch)."""
            ...
        def ceil(self) -> Tensor:
            """Round up (gradient zero, as PyTorch)."""
            ...
        def trunc(self) -> Tensor:
            """Round toward zero (gradient zero, as PyTorch)."""
            ...
        def frac(self) -> Tensor:
            """``input - trunc(input)``, the fractional part with the input's sign."""
            ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def negative(self) -> Tensor:
            """``-input``."""
            ...
        def absolute(self) -> Tensor:
            """Elementwise absolute value (gradient 0 at 0, as PyTorch)."""
            ...
        def fix(self) -> Tensor:
            """Round toward zero (gradient zero, as PyTorch)."""
            ...
        def isnan(self) -> Tensor:
            """Elementwise ``isnan``: a bool tensor (no gradient); integer tensors hold no NaN or
            infinity."""
            ...
        def isinf(self) -> Tensor:
            """Elementwise ``isinf``: a bool tensor (no gradient); integer tensors hold no NaN or
            infinity."""
            ...
        def isfinite(self) -> Tensor:
            """Elementwise ``isfinite``: a bool tensor (no gradient); integer tensors hold no NaN or
            infinity."""
            ...
        def isposinf(self) -> Tensor:
            """Elementwise ``isposinf``: a bool tensor (no gradient); integer tensors hold no NaN or
            infinity."""
            ...
        def isneginf(self) -> Tensor:
            """Elementwise ``isneginf``: a bool tensor (no gradient); integer tensors hold no NaN or
            infinity."""
            ...
        def nan_to_num(
            self, nan: _float = 0.0, posinf: _float | None = None, neginf: _float | None = None
        ) -> Tensor:
            """``input`` with NaN replaced by ``nan``, positive and negative infinity by ``posinf``
            and ``neginf`` (by default the dtype's largest and smallest finite values); integer and
            bool tensors are copied."""
            ...
