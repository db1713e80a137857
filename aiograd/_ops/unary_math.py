"""More unary elementwise math, as PyTorch's: ``expm1``, ``log2``, ``log10``, ``rsqrt``,
``reciprocal``, the trigonometric and hyperbolic functions, and the rounding functions.

Table rows like ``elementwise.UNARY`` (one forward, one PyTorch node and its derivative each);
every derivative is written with differentiable ops, so double backward works. The rounding
functions have a zero gradient (PyTorch's ``FloorBackward0``... return zeros); ``frac`` passes
the gradient through. On an integer tensor the rounding functions return a copy, as PyTorch's
do, instead of numpy's float result.
"""

from __future__ import annotations

from typing import Any

from ._registry import Unary, UnaryOp, unary
from .elementwise import _quiet, sqrt
from .quiet import quietly

__all__ = [
    "expm1", "log2", "log10", "rsqrt", "reciprocal", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "floor", "ceil", "round", "trunc", "frac",
]

# PyTorch's constants (derivatives.yaml), to the last bit: ln(10) there is one ulp below
# ``math.log(10)``, which would move log10's gradient by an ulp.
_LN2 = 0.6931471805599453
_LN10 = 2.3025850929940456


def _via_float64(name: str) -> Any:
    """A forward computed in float64 for a narrower float input, then rounded back: numpy's
    float32 ``log10``/``log2`` are off by an ulp at exact powers (``log10(100) = 2.0000002``),
    PyTorch's are not."""
    quiet = _quiet(name)

    def forward(xp: Any, x: Any) -> Any:
        if x.dtype.kind == "f" and x.dtype.itemsize < 8:
            return quiet(xp, x.astype(xp.float64)).astype(x.dtype)
        return quiet(xp, x)

    return forward


def _rounding(name: str) -> Any:
    """A rounding forward: an integer array is returned as a copy (numpy would make floats)."""

    def forward(xp: Any, x: Any) -> Any:
        return x.copy() if x.dtype.kind in "iub" else getattr(xp, name)(x)

    return forward


def _reciprocal(xp: Any, x: Any) -> Any:
    # ``1.0 / x``: an integer input gives the default float dtype, not numpy's integer division.
    return quietly(lambda: 1.0 / x)


def _rsqrt(xp: Any, x: Any) -> Any:
    return quietly(lambda: 1.0 / xp.sqrt(x))


def _frac(xp: Any, x: Any) -> Any:
    return quietly(lambda: x - xp.trunc(x))  # PyTorch's frac: the sign follows the input


def _zero(g: Any, _: Any) -> Any:
    return g * 0.0


UNARY = [
    Unary("expm1", "Expm1Backward0", _quiet("expm1"), lambda g, y: g * (y + 1.0), "result",
          doc="``exp(input) - 1``, accurate near zero."),
    Unary("log2", "Log2Backward0", _via_float64("log2"), lambda g, x: g / (x * _LN2), "input",
          doc="Base-2 logarithm."),
    Unary("log10", "Log10Backward0", _via_float64("log10"), lambda g, x: g / (x * _LN10), "input",
          doc="Base-10 logarithm."),
    Unary("rsqrt", "RsqrtBackward0", _rsqrt, lambda g, y: g * (y * y * y) * -0.5, "result",
          doc="``1 / sqrt(input)``."),
    Unary("reciprocal", "ReciprocalBackward0", _reciprocal, lambda g, y: g * -(y * y), "result",
          doc="``1 / input``."),
    Unary("tan", "TanBackward0", _quiet("tan"), lambda g, y: g * (y * y + 1.0), "result",
          doc="Elementwise tangent."),
    Unary("asin", "AsinBackward0", _quiet("arcsin"), lambda g, x: g / sqrt(1.0 - x * x), "input",
          doc="Elementwise arcsine (NaN outside [-1, 1], as PyTorch)."),
    Unary("acos", "AcosBackward0", _quiet("arccos"), lambda g, x: -g / sqrt(1.0 - x * x), "input",
          doc="Elementwise arccosine (NaN outside [-1, 1], as PyTorch)."),
    Unary("atan", "AtanBackward0", _quiet("arctan"), lambda g, x: g / (x * x + 1.0), "input",
          doc="Elementwise arctangent."),
    Unary("sinh", "SinhBackward0", _quiet("sinh"), lambda g, x: g * cosh(x), "input",
          doc="Elementwise hyperbolic sine."),
    Unary("cosh", "CoshBackward0", _quiet("cosh"), lambda g, x: g * sinh(x), "input",
          doc="Elementwise hyperbolic cosine."),
    Unary("floor", "FloorBackward0", _rounding("floor"), _zero,
          doc="Round down (gradient zero, as PyTorch)."),
    Unary("ceil", "CeilBackward0", _rounding("ceil"), _zero,
          doc="Round up (gradient zero, as PyTorch)."),
    Unary("round", "RoundBackward0", _rounding("round"), _zero,
          doc="Round to the nearest integer, halves to even as PyTorch (gradient zero)."),
    Unary("trunc", "TruncBackward0", _rounding("trunc"), _zero,
          doc="Round toward zero (gradient zero, as PyTorch)."),
    Unary("frac", "FracBackward0", _frac, lambda g, _: g,
          doc="``input - trunc(input)``, the fractional part with the input's sign."),
]

_MADE = {row.name: unary(row, __name__) for row in UNARY}  # registered, by name
# Declared, so type checkers (and pyright --verifytypes) see each one's signature.
expm1: UnaryOp
log2: UnaryOp
log10: UnaryOp
rsqrt: UnaryOp
reciprocal: UnaryOp
tan: UnaryOp
asin: UnaryOp
acos: UnaryOp
atan: UnaryOp
sinh: UnaryOp
cosh: UnaryOp
floor: UnaryOp
ceil: UnaryOp
round: UnaryOp
trunc: UnaryOp
frac: UnaryOp
expm1, Expm1Backward0 = _MADE["expm1"]
log2, Log2Backward0 = _MADE["log2"]
log10, Log10Backward0 = _MADE["log10"]
rsqrt, RsqrtBackward0 = _MADE["rsqrt"]
reciprocal, ReciprocalBackward0 = _MADE["reciprocal"]
tan, TanBackward0 = _MADE["tan"]
asin, AsinBackward0 = _MADE["asin"]
acos, AcosBackward0 = _MADE["acos"]
atan, AtanBackward0 = _MADE["atan"]
sinh, SinhBackward0 = _MADE["sinh"]
cosh, CoshBackward0 = _MADE["cosh"]
floor, FloorBackward0 = _MADE["floor"]
ceil, CeilBackward0 = _MADE["ceil"]
round, RoundBackward0 = _MADE["round"]
trunc, TruncBackward0 = _MADE["trunc"]
frac, FracBackward0 = _MADE["frac"]

#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {name: fn for name, (fn, _) in _MADE.items()}
