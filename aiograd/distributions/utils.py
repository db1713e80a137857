"""Helpers of ``torch.distributions.utils``: ``broadcast_all``, ``probs_to_logits``,
``logits_to_probs``, ``clamp_probs`` and ``lazy_property``, written with aiograd ops."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from functools import update_wrapper
from typing import Any, Generic, TypeVar

import numpy as np

from .._api._factories import empty, tensor
from .._base._dtypes import get_default_dtype
from .._base._finfo import finfo
from .._base._grad_mode import enable_grad
from .._core._tensor import Tensor
from ..nn import functional as F

euler_constant: float = 0.57721566490153286060  # Euler Mascheroni Constant

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool) or isinstance(v, bool)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors expanded to their common (broadcast) shape, as ``torch.broadcast_tensors``."""
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in tensors)


def broadcast_all(*values: Tensor | float) -> tuple[Tensor, ...]:
    """The values broadcast to one shape: numbers become tensors of the first tensor's dtype and
    device (the default dtype when there is none), as ``torch.distributions.utils.broadcast_all``."""
    if not all(isinstance(v, Tensor) or _is_number(v) for v in values):
        raise ValueError(
            "Input arguments must all be instances of Number, torch.Tensor or objects implementing __torch_function__."
        )
    if not all(isinstance(v, Tensor) for v in values):
        options: dict[str, Any] = {"dtype": get_default_dtype()}
        for value in values:
            if isinstance(value, Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = tuple(v if isinstance(v, Tensor) else tensor(v, **options) for v in values)
    return broadcast_tensors(*values)  # type: ignore[arg-type]


def _standard_normal(shape: Sequence[int], dtype: Any, device: Any) -> Tensor:
    """``empty(shape).normal_()``: torch's draws for ``rsample``."""
    return empty(tuple(shape), dtype=dtype, device=device).normal_()


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its rightmost ``dim`` dims."""
    if dim == 0:
        return value
    required_shape = tuple(value.shape[:-dim]) + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: ``sigmoid`` when ``is_binary``, else ``softmax`` over the last dim."""
    if is_binary:
        return logits.sigmoid()
    return F.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` clamped to ``[eps, 1 - eps]`` (``eps`` the dtype's machine epsilon)."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from (clamped) probabilities: ``log(p) - log1p(-p)`` when ``is_binary``, else ``log(p)``."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ps_clamped.log() - (-ps_clamped).log1p()
    return ps_clamped.log()


T = TypeVar("T", contravariant=True)
R = TypeVar("R", covariant=True)


class lazy_property(Generic[T, R]):
    """A property computed (under ``enable_grad``) on first access and then stored on the
    instance, as ``torch.distributions.utils.lazy_property``."""

    def __init__(self, wrapped: Callable[[T], R]) -> None:
        self.wrapped: Callable[[T], R] = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance: T | None, obj_type: Any = None) -> Any:
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property[T, R], property):  # type: ignore[misc]
    def __init__(self, wrapped: Callable[[T], R]) -> None:
        property.__init__(self, wrapped)
