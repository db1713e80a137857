"""``OneHotCategorical``: a categorical draw as a one-hot vector, as
``torch.distributions.OneHotCategorical``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._api._factories import eye
from .._core._tensor import Tensor
from ..nn.functional import one_hot
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical"]


class OneHotCategorical(Distribution):
    """A ``Categorical`` whose samples are one-hot vectors of length ``K`` (the event dim).

    Args:
        probs: nonnegative, finite weights with a positive sum (normalised).
        logits: unnormalised log-probabilities.
        validate_args: whether to check the arguments (and the values scored).
    """

    arg_constraints: dict[str, constraints.Constraint] = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support: constraints.Constraint = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> OneHotCategorical:
        """This distribution with its parameter expanded to ``batch_shape + (K,)``."""
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = tuple(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        """The normalised probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The normalised log-probabilities."""
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        """The most probable category, one-hot."""
        probs = self._categorical.probs
        mode = probs.argmax(dim=-1)
        return one_hot(mode, num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        """``probs * (1 - probs)``."""
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of the parameter given."""
        return self._categorical.param_shape

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """The categorical sample (torch's draws), one-hot in the parameter's dtype."""
        probs = self._categorical.probs
        num_events = self._categorical._num_events
        indices = self._categorical.sample(tuple(sample_shape))
        return one_hot(indices, num_events).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        """The categorical ``log_prob`` of the hot index."""
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self) -> Tensor:
        """The categorical entropy."""
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The ``K`` one-hot vectors along dim 0."""
        n = self.event_shape[0]
        values = eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + self.batch_shape + (n,))
        return values
