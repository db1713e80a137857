"""``Categorical``: the categorical distribution over ``0 .. K-1``, parameterised by ``probs`` or
``logits``, as ``torch.distributions.Categorical``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._api._factories import arange, full
from .._base._dtypes import int64
from .._base._finfo import finfo
from .._core._tensor import Tensor
from .._ops.random_ops import multinomial
from . import constraints
from .distribution import Distribution
from .utils import broadcast_tensors, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """A draw of one of ``K`` categories (the last dim of ``probs`` or ``logits``), batched over the
    other dims. ``probs`` are normalised to sum to 1, ``logits`` to log-sum-exp 0.

    Args:
        probs: nonnegative, finite weights with a positive sum.
        logits: unnormalised log-probabilities.
        validate_args: whether to check the arguments (and the values scored).
    """

    arg_constraints: dict[str, constraints.Constraint] = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            assert logits is not None
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            # Normalize
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = tuple(self._param.shape[:-1]) if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Categorical:
        """This distribution with its parameter expanded to ``batch_shape + (K,)``."""
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = tuple(batch_shape)
        param_shape = batch_shape + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """``integer_interval(0, K - 1)``."""
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        """The normalised log-probabilities (from the clamped ``probs`` when given those)."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """The normalised probabilities (``softmax(logits)`` when given those)."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of the parameter given."""
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        """nan, batch-shaped (categories have no mean)."""
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        """The most probable category."""
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        """nan, batch-shaped."""
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """``multinomial(probs_2d, numel(sample_shape), True).T`` reshaped: torch's draws (int64)."""
        shape = tuple(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = multinomial(probs_2d, math.prod(shape), True).T
        return samples_2d.reshape(self._extended_shape(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """The normalised logit of each category in ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        """``-sum(probs * logits)`` (logits clamped to the dtype's finite range)."""
        min_real = finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        p_log_p = logits * self.probs
        return -p_log_p.sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0 .. K-1`` along dim 0 (int64)."""
        num_events = self._num_events
        values = arange(num_events, dtype=int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
