"""``clip_grad_norm_`` and ``clip_grad_value_`` (torch/nn/utils/clip_grad.py): rescale or clamp
the parameters' gradients in place, under no_grad, each gradient on its own device."""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable

import numpy as np

from ..._base._dtypes import get_default_dtype
from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from ..._ops.casting import to
from ..._ops.joining import stack

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _vector_norm(t: Tensor, p: float) -> Tensor:
    """torch.linalg.vector_norm of the whole tensor, for the orders torch's clipping takes."""
    a = t.abs()
    if p == math.inf:
        return a.max()
    if p == -math.inf:
        return a.min()
    if p == 0:
        return (a != 0).sum().to(t.dtype)
    if p == 1:
        return a.sum()
    if p == 2:
        return (a * a).sum().sqrt()
    return (a**p).sum() ** (1.0 / p)


def _as_list(parameters: Tensor | Iterable[Tensor], warn_empty: bool) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = list(parameters)
    if warn_empty and is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return parameters


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
    error_if_nonfinite: bool = False, foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients so that their total ``norm_type`` norm (as if concatenated) is at
    most ``max_norm``; returns that total norm (before clipping). ``norm_type`` may be ``inf``.
    ``foreach`` is accepted and ignored (there is one implementation)."""
    with no_grad():
        params = _as_list(parameters, warn_empty=True)
        grads = [p.grad for p in params if p.grad is not None]
        norm_type = float(norm_type)
        if not grads:
            return Tensor(np.array(0.0, dtype=get_default_dtype()))  # torch.tensor(0.0)
        first_device = grads[0].device
        norms = [to(_vector_norm(g, norm_type), first_device) for g in grads]
        total_norm = _vector_norm(stack(norms), norm_type)
        if error_if_nonfinite and not bool(np.isfinite(total_norm.detach().cpu().data)):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from "
                "`parameters` is non-finite, so it cannot be clipped. To disable "
                "this error and scale the gradients by the non-finite norm anyway, "
                "set `error_if_nonfinite=False`"
            )
        clip_coef = float(max_norm) / (total_norm + 1e-6)
        clip_coef_clamped = clip_coef.clamp(max=1.0)
        for g in grads:
            g.mul_(to(clip_coef_clamped, g.device))
        return total_norm


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` in place. ``foreach`` is ignored."""
    with no_grad():
        params = _as_list(parameters, warn_empty=False)
        clip_value = float(clip_value)
        for p in params:
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)



