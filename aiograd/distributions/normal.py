"""``Normal``: the normal (Gaussian) distribution, as ``torch.distributions.Normal``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from .._base._grad_mode import no_grad
from .._core._tensor import Tensor
from .._ops.random_ops import normal
from .._ops.special import erf
from .._ops.special_gamma import erfinv
from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["Normal"]


class Normal(Distribution):
    """The normal distribution N(``loc``, ``scale``**2), batched over the parameters' broadcast shape.

    Args:
        loc: the mean.
        scale: the standard deviation (positive).
        validate_args: whether to check the arguments (and the values scored).
    """

    loc: Tensor
    scale: Tensor

    arg_constraints: dict[str, constraints.Constraint] = {"loc": constraints.real, "scale": constraints.positive}
    support: constraints.Constraint = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """``scale ** 2``."""
        return self.stddev.pow(2)

    def __init__(self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            batch_shape: tuple[int, ...] = ()
        else:
            batch_shape = tuple(self.loc.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Normal:
        """This distribution with ``loc`` and ``scale`` expanded to ``batch_shape``."""
        new = self._get_checked_instance(Normal, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Normal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """``normal(loc.expand(shape), scale.expand(shape))`` without gradient: torch's draws."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """``loc + eps * scale`` with ``eps`` standard normal: gradients reach ``loc`` and ``scale``."""
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        # compute the variance
        var = self.scale**2
        log_scale = self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of the cumulative distribution function: ``loc + scale * erfinv(2 value - 1) * sqrt(2)``."""
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        """``0.5 + 0.5 * log(2 pi) + log(scale)``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
