"""``Dirichlet`` and ``Beta``, as ``torch.distributions.Dirichlet`` and ``Beta`` (a Beta is the
first coordinate of a two-category Dirichlet, as there).

Samples are normalised standard-gamma draws (``aiograd/distributions/gamma.py``): the right
distribution, reproducible under ``aiograd.manual_seed``, but not torch's values for the same
seed. ``rsample`` is not available (``has_rsample = False``): torch's reparameterised gradient
(``_dirichlet_grad``) is not implemented.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from .._api._factories import tensor
from .._base._finfo import finfo
from .._base._grad_mode import no_grad
from .._core._tensor import Tensor
from .._ops.binary_math import xlogy
from .._ops.joining import stack
from .._ops.special_gamma import digamma, lgamma
from . import constraints
from .distribution import Distribution
from .gamma import _standard_gamma
from .kl import register_kl
from .utils import broadcast_all

__all__ = ["Beta", "Dirichlet"]


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex, with ``concentration`` (positive, at least
    one-dimensional: the last dim is the event). No ``rsample`` (see the module note).

    Args:
        concentration: the concentration parameters, ``(..., k)``.
        validate_args: whether to check the arguments (and the values scored).
    """

    concentration: Tensor

    arg_constraints: dict[str, constraints.Constraint] = {
        "concentration": constraints.independent(constraints.positive, 1)}
    support: constraints.Constraint = constraints.simplex
    has_rsample = False

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Dirichlet:
        """This distribution with ``concentration`` expanded to ``batch_shape + event_shape``."""
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """Standard-gamma draws normalised over the last dim, without gradient."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            g = _standard_gamma(self.concentration.expand(shape))
            tiny = finfo(g.dtype).tiny
            return (g / g.sum(-1, True)).clamp(min=tiny, max=1 - finfo(g.dtype).eps)

    def log_prob(self, value: Tensor) -> Tensor:
        """``sum((concentration - 1) log(value)) + lgamma(sum(concentration)) - sum(lgamma(concentration))``."""
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration - 1.0, value).sum(-1) + lgamma(self.concentration.sum(-1))
                - lgamma(self.concentration).sum(-1))

    @property
    def mean(self) -> Tensor:
        """``concentration / concentration.sum(-1)``."""
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def variance(self) -> Tensor:
        """``a (a0 - a) / (a0**2 (a0 + 1))``, ``a0`` the total concentration."""
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        """The differential entropy, torch's formula."""
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (lgamma(self.concentration).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))


class Beta(Distribution):
    """The beta distribution on ``[0, 1]`` with ``concentration1`` (alpha) and
    ``concentration0`` (beta): a two-category ``Dirichlet``'s first coordinate. No ``rsample``
    (see the module note).

    Args:
        concentration1: alpha (positive).
        concentration0: beta (positive).
        validate_args: whether to check the arguments (and the values scored).
    """

    arg_constraints: dict[str, constraints.Constraint] = {
        "concentration1": constraints.positive, "concentration0": constraints.positive}
    support: constraints.Constraint = constraints.unit_interval
    has_rsample = False

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number):
            both = tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = stack([c1, c0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Beta:
        """This distribution with its parameters expanded to ``batch_shape``."""
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = tuple(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self) -> Tensor:
        """alpha."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """beta."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        """``alpha / (alpha + beta)``."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Tensor:
        """``alpha beta / ((alpha + beta)**2 (alpha + beta + 1))``."""
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """The first coordinate of a Dirichlet draw, without gradient."""
        return self._dirichlet.sample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``, as the Dirichlet's at ``(value, 1 - value)``."""
        if not isinstance(value, Tensor):
            value = tensor(value, dtype=self.concentration1.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        """The Dirichlet's entropy."""
        return self._dirichlet.entropy()


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sum_p)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sum_q)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (sum_q - sum_p) * digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5
