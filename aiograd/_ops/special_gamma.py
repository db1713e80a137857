"""The gamma family of special functions and the inverse error function, as PyTorch's:
``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma`` and ``erfinv``.

numpy has none of them (and scipy is not a dependency), so each is vectorised here, in float64
(a float32 input is computed in float64 and rounded once), with boolean masks for the regions:

* ``lgamma``: Sun's fdlibm ``e_lgamma_r.c`` (what glibc's and musl's ``lgamma`` are, and so
  torch's ``std::lgamma``), region by region on the exponent word of ``|x|``, with the reflection
  ``log(pi / |x sin(pi x)|) - lgamma(|x|)`` for negative ``x``. Within 1 ulp of torch for
  positive arguments; near the negative zeros of ``lgamma`` (``x`` in ``(-7, -2)`` where the
  reflection cancels) fdlibm loses bits that glibc's ``lgamma_neg`` keeps: there the error is
  absolute (about ``1e-16 * |lgamma(|x|)|``), not relative.
* ``digamma`` and ``polygamma(1, x)`` (trigamma): ATen's ``calc_digamma``/``calc_trigamma``
  (``aten/src/ATen/native/Math.h``): the recurrence up to ``x >= 10`` (6 steps for trigamma),
  the asymptotic series, the reflection for ``x < 0`` (``x < 1/2``), step for step, so the values
  are torch's to the last bit or two.
* ``polygamma(n, x)``, ``n >= 2``: ``(-1)**(n+1) n! zeta(n+1, x)`` with cephes' Hurwitz zeta as
  ATen has it (direct sum, then Euler-Maclaurin with its Bernoulli terms, each element stopping
  where its own scalar loop would).
* ``erfinv``: Giles' single-precision approximation ("Approximating the erfinv function", GPU
  Computing Gems, 2010) refined by four Newton steps on fdlibm's ``erf`` (from ``|y| >= 1/2`` on, on
  ``log(erfc(x)) = log(1 - |y|)``, exact in ``1 - |y|`` and nearly linear in the tail): within 2 ulp of torch.

Derivatives (PyTorch's derivatives.yaml), with aiograd ops so double backward works:
``erfinv' = sqrt(pi)/2 * exp(erfinv(x)**2)``, ``lgamma' = digamma``, ``digamma' = polygamma(1)``,
``polygamma(n)' = polygamma(n + 1)``, ``mvlgamma(x, p)' = sum_j digamma(x - j/2)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype, type_name
from ._registry import Unary, UnaryOp, backward, op, unary
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, save
from .quiet import quietly
from .special import _erfc, erf_of_array
from .unary_math import exp

__all__ = ["digamma", "erfinv", "lgamma", "mvlgamma", "polygamma"]

_SQRT_PI_OVER_2 = 0.88622692545275801365  # sqrt(pi) / 2
_TWO_OVER_SQRT_PI = 1.1283791670955126


def _f64(xp: Any, x: Any) -> Any:
    """``x`` in float64, flat (numpy's arithmetic on 0-d arrays gives scalars, which the
    boolean-mask assignments of fdlibm's erfc refuse); ``_back`` restores the shape."""
    return x.astype(xp.float64).reshape(-1)


def _back(x: Any, out: Any) -> Any:
    """``out`` (float64) in the input's float dtype (float64 otherwise)."""
    out = out.reshape(x.shape)
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


def _libm(xp: Any, name: str, *args: Any) -> Any:
    """``xp.<name>(*args)`` in float64 as a correctly rounded libm gives it (torch's
    ``std::pow`` in the Hurwitz zeta): on numpy computed in long double and rounded once, where
    numpy's own loop may be an ulp off (which the cancellation of the zeta's alternating terms at
    a negative ``x`` multiplies: 258 ulp from torch at worst with numpy's ``power``, 34 with
    this); through CuPy, its own."""
    if xp is not np or np.finfo(np.longdouble).nmant <= 52:
        return getattr(xp, name)(*args)
    return getattr(np, name)(*(np.asarray(a, dtype=np.longdouble) for a in args)).astype(np.float64)


def _horner(coefficients: tuple[float, ...], z: Any) -> Any:
    """``c0 + z * (c1 + z * (...))``."""
    acc = coefficients[-1] + 0.0 * z
    for c in reversed(coefficients[:-1]):
        acc = acc * z + c
    return acc


# ------------------------------------------------------------------------------ lgamma (fdlibm)
_LG_A = (7.72156649015328655494e-02, 3.22467033424113591611e-01, 6.73523010531292681824e-02,
         2.05808084325167332806e-02, 7.38555086081402883957e-03, 2.89051383673415629091e-03,
         1.19270763183362067845e-03, 5.10069792153511336608e-04, 2.20862790713908385557e-04,
         1.08011567247583939954e-04, 2.52144565451257326939e-05, 4.48640949618915160150e-05)
_TC, _TF, _TT = 1.46163214496836224576e+00, -1.21486290535849611461e-01, -3.63867699703950536541e-18
_LG_T = (4.83836122723810047042e-01, -1.47587722994593911752e-01, 6.46249402391333854778e-02,
         -3.27885410759859649565e-02, 1.79706750811820387126e-02, -1.03142241298341437450e-02,
         6.10053870246291332635e-03, -3.68452016781138256760e-03, 2.25964780900612472250e-03,
         -1.40346469989232843813e-03, 8.81081882437654011382e-04, -5.38595305356740546715e-04,
         3.15632070903625950361e-04, -3.12754168375120860518e-04, 3.35529192635519073543e-04)
_LG_U = (-7.72156649015328655494e-02, 6.32827064025093366517e-01, 1.45492250137234768737e+00,
         9.77717527963372745603e-01, 2.28963728064692451092e-01, 1.33810918536787660377e-02)
_LG_V = (1.0, 2.45597793713041134822e+00, 2.12848976379893395361e+00, 7.69285150456672783825e-01,
         1.04222645593369134254e-01, 3.21709242282423911810e-03)
_LG_S = (-7.72156649015328655494e-02, 2.14982415960608852501e-01, 3.25778796408930981787e-01,
         1.46350472652464452805e-01, 2.66422703033638609560e-02, 1.84028451407337715652e-03,
         3.19475326584100867617e-05)
_LG_R = (1.0, 1.39200533467621045958e+00, 7.21935547567138069525e-01, 1.71933865632803078993e-01,
         1.86459191715652901344e-02, 7.77942496381893596434e-04, 7.32668430744625636189e-06)
_LG_W = (4.18938533204672725052e-01, 8.33333333333329678849e-02, -2.77777777728775536470e-03,
         7.93650558643019558500e-04, -5.95187557450339963135e-04, 8.36339918996282139126e-04,
         -1.63092934096575273989e-03)


def _lgamma_positive(xp: Any, x: Any, hi: Any) -> Any:
    """fdlibm's ``lgamma`` of ``x > 0`` (finite, at least 2**-70), ``hi`` its exponent word."""
    r = xp.zeros_like(x)
    below2 = hi < 0x40000000
    # [2**-70, 2): three polynomials around 1, tc (the minimum) and 2 (or 0)
    small = hi <= 0x3FECCCCC
    r = xp.where(below2 & small, -xp.log(xp.where(below2 & small, x, 1.0)), r)
    y0 = xp.where(small, 1.0 - x, 2.0 - x)
    y1 = xp.where(small, x - (_TC - 1.0), x - _TC)
    y2 = xp.where(small, x, x - 1.0)
    i0 = xp.where(small, hi >= 0x3FE76944, hi >= 0x3FFBB4C3)
    i1 = ~i0 & xp.where(small, hi >= 0x3FCDA661, hi >= 0x3FF3B4C4)
    y = xp.where(i0, y0, xp.where(i1, y1, y2))
    z = y * y
    p1 = _horner(_LG_A[0::2], z)
    p2 = z * _horner(_LG_A[1::2], z)
    p_0 = (y * p1 + p2) - 0.5 * y
    w = z * y
    q1 = _horner(_LG_T[0::3], w)
    q2 = _horner(_LG_T[1::3], w)
    q3 = _horner(_LG_T[2::3], w)
    p_1 = _TF + (z * q1 - (_TT - w * (q2 + y * q3)))
    p_2 = -0.5 * y + y * _horner(_LG_U, y) / _horner(_LG_V, y)
    r = xp.where(below2, r + xp.where(i0, p_0, xp.where(i1, p_1, p_2)), r)
    # [2, 8): lgamma(2 + y) and the product (y + 2)...(y + i - 1)
    mid = ~below2 & (hi < 0x40200000)
    xm = xp.where(mid, x, 2.0)
    i = xp.trunc(xm)
    y = xm - i
    rm = 0.5 * y + y * _horner(_LG_S, y) / _horner(_LG_R, y)
    zz = xp.ones_like(x)
    for k in (7, 6, 5, 4, 3):
        zz = xp.where(i >= k, zz * (y + (k - 1)), zz)
    rm = xp.where(i >= 3, rm + xp.log(zz), rm)
    r = xp.where(mid, rm, r)
    # [8, 2**58): Stirling; beyond: x (log x - 1)
    big = hi >= 0x40200000
    xb = xp.where(big, x, 8.0)
    t = xp.log(xb)
    zb = 1.0 / xb
    yb = zb * zb
    wb = _LG_W[0] + zb * _horner(_LG_W[1:], yb)
    rb = xp.where(hi < 0x43900000, (xb - 0.5) * (t - 1.0) + wb, xb * (t - 1.0))
    return xp.where(big, rb, r)


def _sin_pi_abs(xp: Any, x: Any) -> Any:
    """``|sin(pi x)|`` with exact argument reduction (0 at the integers)."""
    r = x - 2.0 * xp.round(0.5 * x)  # in [-1, 1], exact
    r = xp.abs(r)
    r = xp.where(r > 0.5, 1.0 - r, r)  # (exact: Sterbenz)
    return xp.sin(xp.pi * r)


def _lgamma64(xp: Any, x: Any) -> Any:
    ax = xp.abs(x)
    hi = (ax.view(xp.uint64) >> 32).astype(xp.int64)
    tiny = hi < (0x3FF - 70) << 20
    regular = ~tiny & xp.isfinite(x)
    safe = xp.where(regular, ax, 1.0)
    r = _lgamma_positive(xp, safe, xp.where(regular, hi, 0x3FF00000))
    # exact zeros of fdlibm: lgamma(1) = lgamma(2) = 0
    r = xp.where((safe == 1.0) | (safe == 2.0), 0.0, r)
    negative = regular & (x < 0)
    t = _sin_pi_abs(xp, safe)
    nadj = xp.log(xp.pi / (xp.where(negative, t, 1.0) * safe))
    r = xp.where(negative, xp.where(t == 0.0, xp.inf, nadj - r), r)
    r = xp.where(tiny, -xp.log(ax), r)
    return xp.where(xp.isfinite(x), r, x * x)


def _lgamma(xp: Any, x: Any) -> Any:
    return quietly(lambda: _back(x, _lgamma64(xp, _f64(xp, x))))


# ------------------------------------------------------------------------------ digamma, trigamma (ATen)
_PSI_10 = 2.25175258906672110764
_PSI_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
          8.33333333333333333333E-2)


def _digamma_from(xp: Any, x: Any) -> Any:
    """ATen's ``calc_digamma`` for finite ``x > 0``: recurrence up to 10, asymptotic series."""
    result = xp.zeros_like(x)
    while True:
        low = x < 10
        if not low.any():
            break
        result = xp.where(low, result - 1.0 / xp.where(low, x, 1.0), result)
        x = xp.where(low, x + 1.0, x)
    z = 1.0 / (x * x)
    poly = _PSI_A[0]
    for c in _PSI_A[1:]:
        poly = poly * z + c
    y = xp.where(x < 1.0e17, z * poly, 0.0)
    out = result + xp.log(x) - (0.5 / x) - y
    return xp.where(x == 10, result + _PSI_10, out)


def _digamma64(xp: Any, x: Any) -> Any:
    finite = xp.isfinite(x)
    negative = finite & (x < 0)
    integer = x == xp.trunc(xp.where(finite, x, 0.0))
    safe = xp.where(finite & (x != 0) & ~(negative & integer), x, 1.0)
    arg = xp.where(negative, 1.0 - safe, safe)
    out = _digamma_from(xp, arg)
    r = safe - xp.trunc(safe)  # modf's fractional part, tan(pi r) more accurate than tan(pi x)
    out = xp.where(negative, out - xp.pi / xp.tan(xp.pi * r), out)
    out = xp.where(negative & integer, xp.nan, out)
    out = xp.where(x == 0, xp.copysign(xp.inf, -x), out)
    return xp.where(finite, out, xp.where(x > 0, xp.inf, xp.nan))


def _digamma(xp: Any, x: Any) -> Any:
    return quietly(lambda: _back(x, _digamma64(xp, _f64(xp, x))))


def _trigamma64(xp: Any, x: Any, dtype: Any = np.float64) -> Any:
    """ATen's ``calc_trigamma``; its ``sin(pi x)`` in the input's float dtype, as there (a float
    ``sin(pi * x)`` at a negative integer is ~1e-7, not 0, and sets the value there)."""
    reflect = x < 0.5
    narrow = np.dtype(dtype) if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize < 8 else np.dtype(np.float64)
    sin_pi_x = xp.sin(x.astype(narrow) * narrow.type(np.pi)).astype(xp.float64)
    result = xp.where(reflect, -(xp.pi * xp.pi) / (sin_pi_x * sin_pi_x), 0.0)
    x = xp.where(reflect, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
    return xp.where(reflect, -result, result)


# ------------------------------------------------------------------------------ Hurwitz zeta (cephes, ATen)
_MACHEP = 1.11022302462515654042E-16
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta(xp: Any, s: float, q: Any) -> Any:
    """ATen's ``zeta(s, q)`` for an integer ``s >= 3``, each element leaving its loops where the
    scalar code returns."""
    pole = (q <= 0) & (q == xp.floor(q))
    total = _libm(xp, "power", xp.where(pole, 1.0, q), -s)
    a, b = q.copy(), xp.zeros_like(q)
    run = ~pole
    i = 0
    while True:
        go = run & ((i < 9) | (a <= 9.0))
        if not go.any():
            break
        i += 1
        a = xp.where(go, a + 1.0, a)
        b = xp.where(go, _libm(xp, "power", xp.where(go, a, 1.0), -s), b)
        total = xp.where(go, total + b, total)
        run &= ~(go & (-_MACHEP * total < b) & (b < _MACHEP * total))
    w = a
    total = xp.where(run, total + b * w / (s - 1.0) - 0.5 * b, total)
    aa, k = 1.0, 0.0
    for coefficient in _ZETA_A:
        aa *= s + k
        b = b / w
        t = aa * b / coefficient
        total = xp.where(run, total + t, total)
        run &= ~(xp.abs(t / total) < _MACHEP)
        k += 1.0
        aa *= s + k
        b = b / w
        k += 1.0
    return xp.where(pole, xp.inf, total)


def _polygamma_array(xp: Any, n: int, x: Any) -> Any:
    def compute() -> Any:
        xd = _f64(xp, x)
        if n == 0:
            out = _digamma64(xp, xd)
        elif n == 1:
            out = _trigamma64(xp, xd, x.dtype)
        else:
            factor = (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0))
            out = factor * _zeta(xp, float(n + 1), xd)
        return _back(x, out)

    return quietly(compute)


# ------------------------------------------------------------------------------ erfinv
_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
                  -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
               -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257)


def _erfinv64(xp: Any, y: Any) -> Any:
    ay = xp.abs(y)
    inside = ay < 1.0
    a = xp.where(inside, ay, 0.0)
    w = -xp.log((1.0 - a) * (1.0 + a))
    central = _horner(_GILES_CENTRAL, w - 2.5)
    tail = _horner(_GILES_TAIL, xp.sqrt(xp.maximum(w, 5.0)) - 3.0)
    x = xp.where(w < 5.0, central, tail) * a
    upper = a >= 0.5
    c = 1.0 - a  # exact for a >= 1/2
    log_c = xp.log(xp.where(upper, c, 1.0))
    for _ in range(4):
        slope = _TWO_OVER_SQRT_PI * xp.exp(-x * x)
        # |y| >= 1/2: Newton on log(erfc(x)) = log(1 - |y|), nearly linear in the tail
        tail = _erfc(xp, x)
        residual = xp.where(upper, (log_c - xp.log(xp.where(upper, tail, 1.0))) * tail, erf_of_array(xp, x) - a)
        x = x - xp.where(slope > 0, residual / xp.where(slope > 0, slope, 1.0), 0.0)
    x = xp.copysign(x, y)  # (keeps -0.0)
    out = xp.where(inside, x, xp.where(ay == 1.0, xp.copysign(xp.inf, y), xp.nan))
    return xp.where(y == 0, y, out)


def _erfinv(xp: Any, x: Any) -> Any:
    return quietly(lambda: _back(x, _erfinv64(xp, _f64(xp, x))))


# ------------------------------------------------------------------------------ the unary records
def _erfinv_vjp(g: Any, x: Any) -> Any:
    return g * (exp(erfinv(x) ** 2) * _SQRT_PI_OVER_2)


def _lgamma_vjp(g: Any, x: Any) -> Any:
    return g * digamma(x)


def _digamma_vjp(g: Any, x: Any) -> Any:
    return g * polygamma(1, x)


UNARY = [
    Unary("erfinv", "ErfinvBackward0", _erfinv, _erfinv_vjp, "input",
          doc="The inverse error function on ``(-1, 1)`` (+-inf at +-1, NaN outside), elementwise."),
    Unary("lgamma", "LgammaBackward0", _lgamma, _lgamma_vjp, "input",
          doc="``log|Gamma(input)|``, elementwise (inf at 0 and the negative integers)."),
    Unary("digamma", "DigammaBackward0", _digamma, _digamma_vjp, "input",
          doc="The digamma function ``Gamma'(input) / Gamma(input)``, elementwise."),
]

_MADE = {row.name: unary(row, __name__) for row in UNARY}  # registered, by name
erfinv: UnaryOp
lgamma: UnaryOp
digamma: UnaryOp
erfinv, ErfinvBackward0 = _MADE["erfinv"]
lgamma, LgammaBackward0 = _MADE["lgamma"]
digamma, DigammaBackward0 = _MADE["digamma"]


def _check_n(n: Any, position: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position {position}) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return int(n)


def _floating(input: Tensor) -> Any:
    data = input.data
    if data.dtype.kind in "biu":
        data = data.astype(get_default_dtype())
    elif data.dtype.kind == "c":
        raise NotImplementedError(f"\"polygamma\" not implemented for '{type_name(data.dtype)}'")
    return data


@backward(saved=("x",), batched=True)
def PolygammaBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """PyTorch's: ``grad * polygamma(n + 1, self)``."""
    return (grads[0] * polygamma(self.n + 1, self.x.unpack(self)),)


@op(PolygammaBackward0)
def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of the digamma function, elementwise (``n = 0``: digamma)."""
    n = _check_n(n)
    if not isinstance(input, Tensor):
        raise not_tensor("polygamma", input, 2)
    out = like(_polygamma_array(input._device.xp, n, _floating(input)), input)
    if needs_grad(input):
        node: Any = attach(PolygammaBackward0((edge_of(input),)), out)
        node.n = n
        node.x = save(input)
    return out


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``Tensor.polygamma(n)``: ``polygamma(n, self)``."""
    return polygamma(_check_n(n), self)


# ------------------------------------------------------------------------------ mvlgamma
@backward(saved=("x",), batched=True)
def MvlgammaBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """PyTorch's: ``grad * sum_j digamma(self - j/2)``, ``j < p``."""
    x = self.x.unpack(self)
    total = digamma(x)
    for j in range(1, self.p):
        total = total + digamma(x - j / 2)
    return (grads[0] * total,)


@op(MvlgammaBackward0)
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``: ``p(p-1)/4 log(pi) +
    sum_{j<p} lgamma(input - j/2)`` (defined where every element exceeds ``(p - 1)/2``)."""
    if not isinstance(input, Tensor):
        raise not_tensor("mvlgamma", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    # (torch 2.13 checks no domain: lgamma's poles give inf, as there)
    xp, data = input._device.xp, _floating(input)
    xd = _f64(xp, data)
    total = quietly(lambda: sum(_lgamma64(xp, xd - j / 2) for j in reversed(range(p)))) + p * (p - 1) * math.log(math.pi) / 4
    out = like(_back(data, xp.asarray(total)), input)
    if needs_grad(input):
        node: Any = attach(MvlgammaBackward0((edge_of(input),)), out)
        node.p = p
        node.x = save(input)
    return out


#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS: dict[str, Callable[..., Tensor]] = {name: fn for name, (fn, _) in _MADE.items()}
TENSOR_METHODS.update({"polygamma": _polygamma_method, "mvlgamma": mvlgamma})
