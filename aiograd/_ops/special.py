"""Special functions, as PyTorch's: ``erf`` and ``erfc``.

numpy has no error function (and scipy is not a dependency), so the forward is Sun's fdlibm
``s_erf.c`` (as in FreeBSD's msun and Go's ``math.Erf``), vectorised: its rational approximations
on ``|x| < 0.84375``, ``[0.84375, 1.25)``, ``[1.25, 1/0.35)`` and ``[1/0.35, 28)`` are evaluated
for every element and the right one picked with ``where``, all through the input's array module
(numpy or CuPy). fdlibm's error is below 1 ulp. ``erfc`` is computed directly in the tail
(``exp(-x*x - 0.5625 + R/S) / x``), not as ``1 - erf``, so it keeps its relative accuracy down
to the underflow. A float32 input is computed in float64 and rounded back.

Derivatives (PyTorch's derivatives.yaml): ``erf' = 2/sqrt(pi) * exp(-x**2)``, ``erfc' = -erf'``,
written with aiograd ops so double backward works.
"""

from __future__ import annotations

from typing import Any

from ._registry import Unary, UnaryOp, unary
from .elementwise import exp
from .quiet import quietly

__all__ = ["erf", "erfc"]

_TWO_OVER_SQRT_PI = 1.1283791670955126  # 2 / sqrt(pi), PyTorch's M_2_SQRTPI

# fdlibm's coefficients (s_erf.c), to the last digit.
_ERX = 8.45062911510467529297e-01  # erf(1) rounded to float precision
_EFX = 1.28379167095512586316e-01
_EFX8 = 1.02703333676410069053e00
# erf on [0, 0.84375]: x + x * P(x*x) / Q(x*x)
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# erf on [0.84375, 1.25]: erx + P(s) / Q(s), s = |x| - 1
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# erfc on [1.25, 1/0.35]: exp(-x*x - 0.5625 + R(s)/S(s)) / x, s = 1 / x**2
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e01,
       -6.23753324503260060396e01, -1.62396669462573470355e02, -1.84605092906711035994e02,
       -8.12874355063065934246e01, -9.81432934416914548592e00)
_SA = (1.0, 1.96512716674392571292e01, 1.37657754143519042600e02, 4.34565877475229228821e02,
       6.45387271733267880336e02, 4.29008140027567833386e02, 1.08635005541779435134e02,
       6.57024977031928170135e00, -6.04244152148580987438e-02)
# erfc on [1/0.35, 28]
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e01,
       -1.60636384855821916062e02, -6.37566443368389627722e02, -1.02509513161107724954e03,
       -4.83519191608651397019e02)
_SB = (1.0, 3.03380607434824582924e01, 3.25792512996573918826e02, 1.53672958608443695994e03,
       3.19985821950859553908e03, 2.55305040643316442583e03, 4.74528541206955367215e02,
       -2.24409524465858183362e01)

_SMALL = 2.0**-28  # below it erf(x) = x + efx * x
_VERY_TINY = 2.848094538889218e-306  # below it, scaled by 8 so that efx * x does not underflow


def _poly(coefficients: tuple[float, ...], z: Any) -> Any:
    """``c0 + z * (c1 + z * (...))``, Horner's rule as fdlibm writes it."""
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = c + z * acc
    return acc


class _Parts:
    """The pieces shared by erf and erfc of ``|x|`` (float64): each region's value of it."""

    def __init__(self, xp: Any, ax: Any) -> None:
        z = ax * ax
        self.small_y = _poly(_PP, z) / _poly(_QQ, z)  # erf(ax) = ax + ax * small_y
        s = ax - 1.0
        self.mid = _poly(_PA, s) / _poly(_QA, s)  # erf(ax) = erx + mid
        # The tail, on |x| clipped to [1.25, 28] (its formula is meaningless outside):
        # erfc(ax) = exp(-hi*hi - 0.5625) * exp((hi - t)(hi + t) + R/S) / t, with hi = t cut
        # to single precision, so that hi*hi is exact and the large exponent loses nothing.
        t = xp.clip(ax, 1.25, 28.0)
        inv = 1.0 / (t * t)
        near = t < 1.0 / 0.35
        r_over_s = xp.where(near, _poly(_RA, inv) / _poly(_SA, inv), _poly(_RB, inv) / _poly(_SB, inv))
        hi = t.astype(xp.float32).astype(xp.float64)
        self.tail = xp.exp(-hi * hi - 0.5625) * xp.exp((hi - t) * (hi + t) + r_over_s) / t


def _float64(xp: Any, x: Any) -> Any:
    return x.astype(xp.float64, copy=False)


def _back(x: Any, out: Any) -> Any:
    """``out`` (float64) in the input's float dtype (an integer input gives float64)."""
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


def _erf(xp: Any, x: Any) -> Any:
    def compute() -> Any:
        xd = _float64(xp, x)
        ax = xp.abs(xd)
        p = _Parts(xp, ax)
        tiny = xp.where(ax < _VERY_TINY, 0.125 * (8.0 * ax + _EFX8 * ax), ax + _EFX * ax)
        value = xp.where(
            ax < 0.84375,
            xp.where(ax < _SMALL, tiny, ax + ax * p.small_y),
            xp.where(ax < 1.25, _ERX + p.mid, xp.where(ax < 6.0, 1.0 - p.tail, 1.0)),
        )
        # odd: the sign copied back (keeps -0.0), NaN passed through
        return xp.where(xp.isnan(xd), xd, xp.copysign(value, xd))

    return quietly(lambda: _back(x, compute()))  # (the cast to float32 may underflow)


def _erfc(xp: Any, x: Any) -> Any:
    def compute() -> Any:
        xd = _float64(xp, x)
        ax = xp.abs(xd)
        negative = xd < 0
        p = _Parts(xp, ax)
        # |x| < 0.84375: 1 - erf(x), with fdlibm's split for 1/4 <= |x|, where 1 - erf loses bits
        y = p.small_y
        small = xp.where(ax < 0.25, 1.0 - (xd + xd * y), 0.5 - (xd * y + (xd - 0.5)))
        mid = xp.where(negative, 1.0 + _ERX + p.mid, 1.0 - _ERX - p.mid)
        tail = xp.where(ax < 28.0, p.tail, 0.0)
        tail = xp.where(negative, 2.0 - tail, tail)
        value = xp.where(ax < 0.84375, small, xp.where(ax < 1.25, mid, tail))
        return xp.where(xp.isnan(xd), xd, value)

    return quietly(lambda: _back(x, compute()))


def _erf_vjp(g: Any, x: Any) -> Any:
    return g * (exp(-(x * x)) * _TWO_OVER_SQRT_PI)


def _erfc_vjp(g: Any, x: Any) -> Any:
    return g * (exp(-(x * x)) * -_TWO_OVER_SQRT_PI)


UNARY = [
    Unary("erf", "ErfBackward0", _erf, _erf_vjp, "input",
          doc="The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise."),
    Unary("erfc", "ErfcBackward0", _erfc, _erfc_vjp, "input",
          doc="The complementary error function ``1 - erf(input)``, accurate in the tail."),
]

_MADE = {row.name: unary(row, __name__) for row in UNARY}  # registered, by name
erf: UnaryOp
erfc: UnaryOp
erf, ErfBackward0 = _MADE["erf"]
erfc, ErfcBackward0 = _MADE["erfc"]

#: Tensor methods (bound by ``aiograd._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {name: fn for name, (fn, _) in _MADE.items()}
