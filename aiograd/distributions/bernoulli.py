"""``Bernoulli``: the Bernoulli distribution, parameterised by ``probs`` or ``logits``, as
``torch.distributions.Bernoulli``."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from .._api._factories import arange
from .._base._grad_mode import no_grad
from .._core._tensor import Tensor
from .._ops.random_ops import bernoulli
from ..nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0; exactly one of the two.

    Args:
        probs: the probability of 1, in [0, 1].
        logits: the log-odds of 1.
        validate_args: whether to check the arguments (and the values scored).
    """

    arg_constraints: dict[str, constraints.Constraint] = {"probs": constraints.unit_interval, "logits": constraints.real}
    support: constraints.Constraint = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(
        self, probs: Tensor | float | None = None, logits: Tensor | float | None = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
        else:
            assert logits is not None
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = () if is_scalar else tuple(self._param.shape)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Bernoulli:
        """This distribution with its parameter expanded to ``batch_shape``."""
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = tuple(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where ``probs > 0.5``, 0 where below, nan at 0.5."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        mode[self.probs == 0.5] = float("nan")
        return mode

    @property
    def variance(self) -> Tensor:
        """``probs * (1 - probs)``."""
        return self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds (from the clamped ``probs`` when given those)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of 1 (``sigmoid(logits)`` when given those)."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of the parameter given."""
        return tuple(self._param.shape)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """``bernoulli(probs.expand(shape))`` without gradient: torch's draws."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """``-binary_cross_entropy_with_logits(logits, value)`` elementwise."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        """``binary_cross_entropy_with_logits(logits, probs)`` elementwise."""
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``[0, 1]`` along dim 0, in the parameter's dtype."""
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
