"""``Gamma``, as ``torch.distributions.Gamma``, and the standard-gamma sampler that ``Beta`` and
``Dirichlet`` share.

Sampling is Marsaglia and Tsang's method ("A simple method for generating gamma variables",
2000), vectorised: each round draws one standard normal and one uniform per element still
pending (from aiograd's generator, so reproducible under ``aiograd.manual_seed``) until every
element is accepted; a concentration below 1 is boosted (``Gamma(a + 1) * U**(1/a)``). It is
the algorithm torch's ``_standard_gamma`` uses, but not its stream of draws (torch draws per
element, rejection by rejection), so for the same seed the samples differ from torch's: same
distribution, not the same values. ``Gamma.rsample`` differentiates a sample ``x`` with
respect to the concentration by torch's ``_standard_gamma_grad`` (``standard_gamma_grad_one``:
a Taylor series for ``x < 0.8``, Rice's saddle-point expansion for ``alpha > 8``, a bivariate
rational approximation otherwise), attached as ``x + (alpha - alpha.detach()) * dx/dalpha``
(its value is ``x``; its grad_fn is not torch's ``StandardGammaBackward0``, and it has no
second derivative, as torch's has none).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._api._factories import empty, tensor
from .._base._finfo import finfo
from .._base._grad_mode import no_grad
from .._core._tensor import Tensor
from .._ops.binary_math import xlogy
from .._ops.special_gamma import _digamma64, digamma, lgamma
from . import constraints
from .distribution import Distribution
from .kl import register_kl
from .utils import broadcast_all

__all__ = ["Gamma"]


def _draw(n: int, kind: str) -> np.ndarray[Any, Any]:
    t = empty((n,), dtype=np.float64)
    return (t.uniform_() if kind == "uniform" else t.normal_()).numpy().copy()


def _standard_gamma(concentration: Tensor) -> Tensor:
    """Samples of ``Gamma(concentration, 1)``, of ``concentration``'s shape and dtype, without
    gradient, at least the dtype's smallest normal number (as torch's)."""
    alpha = np.asarray(concentration.detach().numpy(), dtype=np.float64).reshape(-1)
    boost = alpha < 1.0
    a = np.where(boost, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    out = np.empty_like(a)
    pending = np.flatnonzero(np.isfinite(a))
    out[~np.isfinite(a)] = np.nan
    while pending.size:
        x, u = _draw(pending.size, "normal"), _draw(pending.size, "uniform")
        dp, cp = d[pending], c[pending]
        v = (1.0 + cp * x) ** 3
        with np.errstate(divide="ignore", invalid="ignore"):
            accept = (v > 0) & (np.log(u) < 0.5 * x * x + dp - dp * v + dp * np.log(np.where(v > 0, v, 1.0)))
        out[pending[accept]] = (dp * v)[accept]
        pending = pending[~accept]
    if boost.any():
        u = _draw(int(boost.sum()), "uniform")
        with np.errstate(divide="ignore", under="ignore"):
            out[boost] *= u ** (1.0 / alpha[boost])
    dtype = concentration.dtype
    out = np.maximum(out, finfo(dtype).tiny).astype(dtype).reshape(tuple(concentration.shape))
    return tensor(out, dtype=dtype)


_GRAD_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
            (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
             -0.00058392623),
            (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
             0.00085092367, -1.5247877e-07))


def _standard_gamma_grad(alpha: np.ndarray[Any, Any], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``d x / d alpha`` of a ``Gamma(alpha, 1)`` sample ``x`` at a fixed quantile: torch's
    ``standard_gamma_grad_one``, vectorised (float64)."""
    with np.errstate(all="ignore"):
        # x < 0.8: Taylor series of the incomplete gamma function
        numer, denom = np.ones_like(x), alpha.copy()
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = x**alpha
        pdf = x ** (alpha - 1) * np.exp(-x)
        cdf = pow_x_alpha * series1
        cdf_alpha = (np.log(x) - _digamma64(np, alpha)) * cdf - pow_x_alpha * series2
        small = -cdf_alpha / pdf
        small = np.where(np.isnan(small), 0.0, small)
        # alpha > 8: Rice's saddle point expansion
        near = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
        numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
        numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
        saddle_near = numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
        den = np.sqrt(8 * alpha)
        term2 = den / (alpha - x)
        term3 = (x - alpha - alpha * np.log(x / alpha)) ** -1.5
        term23 = np.where(x < alpha, term2 - term3, term2 + term3)
        term1 = np.log(x / alpha) * term23 - np.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        saddle = np.where(near, saddle_near, -stirling * (x * term1) / den)
        # otherwise: the bivariate rational approximation
        u, v = np.log(x / alpha), np.log(alpha)
        c = [_GRAD_UV[0][i] + u * (_GRAD_UV[1][i] + u * _GRAD_UV[2][i]) for i in range(8)]
        p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
        q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
        rational = np.exp(p / q)
    return np.where(x < 0.8, small, np.where(alpha > 8.0, saddle, rational))


class Gamma(Distribution):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    ``sample`` draws by Marsaglia and Tsang's method from aiograd's generator: reproducible
    under ``aiograd.manual_seed``, but not torch's values for the same seed (torch consumes its
    generator differently). ``rsample``'s gradient with respect to ``concentration`` is torch's
    ``_standard_gamma_grad`` (see the module note).

    Args:
        concentration: the shape (positive).
        rate: the rate, 1 / scale (positive).
        validate_args: whether to check the arguments (and the values scored).
    """

    concentration: Tensor
    rate: Tensor

    arg_constraints: dict[str, constraints.Constraint] = {
        "concentration": constraints.positive, "rate": constraints.positive}
    support: constraints.Constraint = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        """``concentration / rate``."""
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        """``(concentration - 1) / rate``, at least 0."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        """``concentration / rate**2``."""
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration: Tensor | float, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape: tuple[int, ...] = ()
        else:
            batch_shape = tuple(self.concentration.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Gamma:
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """``standard_gamma(concentration) / rate``, without gradient (see the class note)."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
            return value.clamp(min=finfo(value.dtype).tiny)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A sample whose gradient reaches ``concentration`` (torch's ``_standard_gamma_grad``)
        and ``rate`` (``-value / rate``)."""
        shape = self._extended_shape(sample_shape)
        alpha = self.concentration.expand(shape)
        x = _standard_gamma(alpha)
        a = np.asarray(alpha.detach().numpy(), dtype=np.float64)
        dx = tensor(_standard_gamma_grad(a, np.asarray(x.numpy(), dtype=np.float64)).astype(x.data.dtype), dtype=x.dtype)
        value = (x + (alpha - alpha.detach()) * dx) / self.rate.expand(shape)
        value.detach().clamp_(min=finfo(value.dtype).tiny)  # (the values only, as torch's)
        return value

    def log_prob(self, value: Tensor) -> Tensor:
        """``concentration log(rate) + (concentration - 1) log(value) - rate value - lgamma(concentration)``."""
        if not isinstance(value, Tensor):
            value = tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def entropy(self) -> Tensor:
        """``concentration - log(rate) + lgamma(concentration) + (1 - concentration) digamma(concentration)``."""
        return (self.concentration - self.rate.log() + lgamma(self.concentration)
                + (1.0 - self.concentration) * digamma(self.concentration))


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4
