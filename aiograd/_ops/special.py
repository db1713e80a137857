"""Special functions, as PyTorch's: ``erf`` and ``erfc``.

numpy has no error function (and scipy is not a dependency), so the forward is Sun's fdlibm
``s_erf.c`` (as in FreeBSD's msun and Go's ``math.Erf``), vectorised: the elements are split by fdlibm's regions
(``|x| < 0.84375``, ``[0.84375, 1.25)``, ``[1.25, 28)`` with its two rational approximations,
beyond) with boolean masks and each region's rational approximation evaluated on its elements,
all through the input's array module (numpy or CuPy). fdlibm's error is below 1 ulp. ``erfc`` is computed directly in the tail
(``exp(-x*x - 0.5625 + R/S) / x``), not as ``1 - erf``, so it keeps its relative accuracy down
to the underflow.

A float32 (or float16) ``erf`` takes a faster path, one formula with no regions:
``erf(x) = x * P(x*x) / Q(x*x)`` on ``x`` clamped to ``[-4, 4]`` (float32's erf is +-1 from
3.92 on), the rational form Eigen and XLA use for float erf, with coefficients refit here (degrees
6 and 5 in ``x*x``, minimax relative error 2.5e-9 on ``[0, 4]``) and evaluated in float64, so
that the one rounding to float32 dominates: within 0.55 ulp of the true erf (0.5415 at worst
over every 211th float32). torch's float32 erf (Sleef's) is within 0.77 ulp; Eigen's coefficients
evaluated in float32 are 7 ulp off, which is why the evaluation is in float64. It runs in chunks
of ``_CHUNK`` elements through four preallocated float64 buffers, every step in place (``out=``),
so no pass allocates and each stays in cache: about 10x faster than the float64 path's region
gathers. float64 inputs keep fdlibm (a rational of this size cannot reach float64's 1 ulp).

Derivatives (PyTorch's derivatives.yaml): ``erf' = 2/sqrt(pi) * exp(-x**2)``, ``erfc' = -erf'``,
written with aiograd ops so double backward works.
"""

from __future__ import annotations

from typing import Any

from ._registry import Unary, UnaryOp, unary
from .quiet import quietly
from .unary_math import exp

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


# float32's erf: x * P(z) / Q(z), z = x*x, |x| <= 4; coefficients ascending in z (fit by
# Lawson's iteration on the linearised relative error, 30000 Chebyshev nodes on [0, 4]).
_P32 = (1.1283791698950099, 0.18518841110917236, 0.05431919017657732, 0.0038495933686494926,
        0.00037978491836029307, 4.689692705207134e-06, -1.3226378699677943e-08)
_Q32 = (1.0, 0.49745237410827076, 0.11395605135618425, 0.015462613291886673,
        0.0013078083509713257, 6.315757289601662e-05)
_CHUNK = 16384  # elements: four float64 buffers of 128 KiB stay in a core's L2


def _poly(coefficients: tuple[float, ...], z: Any) -> Any:
    """``c0 + z * (c1 + z * (...))``, Horner's rule as fdlibm writes it (in place: one array)."""
    acc = z * coefficients[-1]
    acc += coefficients[-2]
    for c in reversed(coefficients[:-2]):
        acc *= z
        acc += c
    return acc


def _small_y(x: Any) -> Any:
    """``|x| < 0.84375``: ``erf(x) = x + x * y``."""
    z = x * x
    return _poly(_PP, z) / _poly(_QQ, z)


def _mid(ax: Any) -> Any:
    """``0.84375 <= |x| < 1.25``: ``erf(|x|) = erx + P(s)/Q(s)``, ``s = |x| - 1``."""
    s = ax - 1.0
    return _poly(_PA, s) / _poly(_QA, s)


def _tail(xp: Any, ax: Any) -> Any:
    """``|x| >= 1.25``: ``erfc(|x|)``, 0 from 28 on (where it underflows)."""
    # On |x| clipped to [1.25, 28] (the formula is meaningless outside):
    # erfc(t) = exp(-hi*hi - 0.5625) * exp((hi - t)(hi + t) + R/S) / t, with hi = t cut to
    # single precision, so that hi*hi is exact and the large exponent loses nothing.
    t = xp.clip(ax, 1.25, 28.0)
    inv = 1.0 / (t * t)
    r_over_s = xp.where(t < 1.0 / 0.35, _poly(_RA, inv) / _poly(_SA, inv), _poly(_RB, inv) / _poly(_SB, inv))
    hi = t.astype(xp.float32).astype(xp.float64)
    value = xp.exp(-hi * hi - 0.5625) * xp.exp((hi - t) * (hi + t) + r_over_s) / t
    return xp.where(ax < 28.0, value, 0.0)


def _regions(xp: Any, x: Any) -> tuple[Any, Any, Any, Any]:
    """``x`` in float64 and the masks of fdlibm's regions (NaN in none of them). Each element is
    computed in its own region only (gathered with the mask): about twice as fast as every
    region everywhere picked with ``where``."""
    xd = x.astype(xp.float64)  # (a copy: the output starts as it, NaN passed through)
    ax = xp.abs(xd)
    small = ax < 0.84375
    tail = ax >= 1.25
    mid = ~(small | tail) & (ax == ax)
    return xd, small, mid, tail


def _back(x: Any, out: Any) -> Any:
    """``out`` (float64) in the input's float dtype (an integer input gives float64)."""
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


def _erf(xp: Any, x: Any) -> Any:
    def compute() -> Any:
        out, small, mid, tail = _regions(xp, x)
        v = out[small]  # signed: erf is odd, and x + x*y keeps the sign of a zero
        a = xp.abs(v)
        near_zero = xp.where(a < _VERY_TINY, 0.125 * (8.0 * v + _EFX8 * v), v + _EFX * v)
        out[small] = xp.where(a < _SMALL, near_zero, v + v * _small_y(v))
        v = out[mid]
        out[mid] = xp.copysign(_ERX + _mid(xp.abs(v)), v)
        v = out[tail]
        out[tail] = xp.copysign(1.0 - _tail(xp, xp.abs(v)), v)
        return _back(x, out)

    return quietly(compute)  # (the cast to float32 may underflow, as torch's quietly)


def _horner_into(xp: Any, coefficients: tuple[float, ...], z: Any, acc: Any) -> Any:
    """``c0 + z * (c1 + ...)`` written into ``acc`` (no temporaries)."""
    xp.multiply(z, coefficients[-1], out=acc)
    acc += coefficients[-2]
    for c in reversed(coefficients[:-2]):
        acc *= z
        acc += c
    return acc


def _erf_rational_into(xp: Any, x: Any, out: Any, buffers: tuple[Any, Any, Any, Any]) -> None:
    """float32's erf of ``x`` (a 1-d chunk) written into ``out``, in ``buffers`` (float64)."""
    t, z, p, q = buffers
    xp.clip(x, -4.0, 4.0, out=t)  # (NaN stays NaN; +-inf becomes +-4, whose erf rounds to +-1)
    xp.multiply(t, t, out=z)
    _horner_into(xp, _P32, z, p)
    _horner_into(xp, _Q32, z, q)
    p *= t  # (x * P keeps the sign of a zero)
    xp.divide(p, q, out=out, casting="same_kind")


def _erf_float32(xp: Any, x: Any) -> Any:
    """erf of a float32 or float16 array ``x``, in its dtype: the rational above, chunk by
    chunk."""
    flat = xp.ascontiguousarray(x).reshape(-1)
    out = xp.empty_like(flat)
    n = flat.shape[0]
    buffers = tuple(xp.empty((min(n, _CHUNK),), dtype=xp.float64) for _ in range(4))
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        chunk = tuple(b[: stop - start] for b in buffers)
        _erf_rational_into(xp, flat[start:stop], out[start:stop], chunk)  # type: ignore[arg-type]
    return out.reshape(x.shape)


def erf_of_array(xp: Any, x: Any) -> Any:
    """erf of an array in its float dtype (float64 for an integer one): float32's rational for
    float32 and float16, fdlibm otherwise. Shared with GELU's forward."""
    if x.dtype.kind == "f" and x.dtype.itemsize <= 4:
        return quietly(_erf_float32, xp, x)
    return _erf(xp, x)


def _erfc(xp: Any, x: Any) -> Any:
    def compute() -> Any:
        out, small, mid, tail = _regions(xp, x)
        v = out[small]
        y = _small_y(v)
        # 1 - erf(x), with fdlibm's split for 1/4 <= |x|, where 1 - erf would lose bits
        out[small] = xp.where(xp.abs(v) < 0.25, 1.0 - (v + v * y), 0.5 - (v * y + (v - 0.5)))
        v = out[mid]
        m = _mid(xp.abs(v))
        out[mid] = xp.where(v < 0, 1.0 + _ERX + m, 1.0 - _ERX - m)
        v = out[tail]
        r = _tail(xp, xp.abs(v))
        out[tail] = xp.where(v < 0, 2.0 - r, r)
        return _back(x, out)

    return quietly(compute)


def _erf_vjp(g: Any, x: Any) -> Any:
    return g * (exp(-(x * x)) * _TWO_OVER_SQRT_PI)


def _erfc_vjp(g: Any, x: Any) -> Any:
    return g * (exp(-(x * x)) * -_TWO_OVER_SQRT_PI)


UNARY = [
    Unary("erf", "ErfBackward0", erf_of_array, _erf_vjp, "input",
          doc="The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``, elementwise."),
    Unary("erfc", "ErfcBackward0", _erfc, _erfc_vjp, "input",
          doc="The complementary error function ``1 - erf(input)``, accurate in the tail."),
]

_MADE = {row.name: unary(row, __name__) for row in UNARY}  # registered, by name
erf: UnaryOp
erfc: UnaryOp
erf, ErfBackward0 = _MADE["erf"]
erfc, ErfcBackward0 = _MADE["erfc"]

#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {name: fn for name, (fn, _) in _MADE.items()}
