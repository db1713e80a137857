"""``Uniform``: the uniform distribution on ``[low, high)``, as ``torch.distributions.Uniform``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from .._api._factories import rand
from .._core._tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniformly distributed on the half-open interval ``[low, high)``.

    Args:
        low: the lower bound (inclusive).
        high: the upper bound (exclusive).
        validate_args: whether to check the arguments (and the values scored).
    """

    low: Tensor
    high: Tensor

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        """``low < high``."""
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def mean(self) -> Tensor:
        """``(high + low) / 2``."""
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        """nan (every point is a mode)."""
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        """``(high - low) / sqrt(12)``."""
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        """``(high - low) ** 2 / 12``."""
        return (self.high - self.low).pow(2) / 12

    def __init__(self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        if isinstance(low, numbers.Number) and isinstance(high, numbers.Number):
            batch_shape: tuple[int, ...] = ()
        else:
            batch_shape = tuple(self.low.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Uniform:
        """This distribution with ``low`` and ``high`` expanded to ``batch_shape``."""
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = tuple(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        super(Uniform, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """``interval(low, high)``."""
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """``low + rand(shape) * (high - low)``: torch's draws; gradients reach ``low`` and ``high``."""
        shape = self._extended_shape(sample_shape)
        r = rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + r * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        """``-log(high - low)`` inside ``[low, high)``, ``-inf`` outside."""
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return lb.mul(ub).log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        """``(value - low) / (high - low)`` clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        """``value * (high - low) + low``."""
        result = value * (self.high - self.low) + self.low
        return result

    def entropy(self) -> Tensor:
        """``log(high - low)``."""
        return (self.high - self.low).log()
