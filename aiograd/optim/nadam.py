"""NAdam, ``torch.optim.NAdam``: Adam with Nesterov momentum and momentum decay, L2 or
decoupled weight decay, with the arithmetic of PyTorch's ``_single_tensor_nadam``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core._tensor import Tensor
from .optimizer import (
    Optimizer,
    _step_dtype,
    addcdiv_,
    addcmul_,
    check_betas,
    check_flags,
    check_nonnegative,
    gradient,
    increment_step,
    lerp_,
    new_step,
    write,
    zeros_state,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat), as ``torch.optim.NAdam``.

    With ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))`` and ``mu_product`` their
    running product: Adam's moments, then ``p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom``
    and ``p -= lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom`` with
    ``denom = sqrt(v / (1 - beta2**t)) + eps``. The state holds ``step``, ``mu_product`` (0-dim
    CPU tensors), ``exp_avg`` and ``exp_avg_sq``.
    """

    _group_defaults_on_load = {
        "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
        "decoupled_weight_decay": False,
    }

    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
            "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize, "foreach": foreach, "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        momentum_decay, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:  # (PyTorch's key order)
                state["step"] = new_step()
                state["mu_product"] = Tensor._wrap(np.ones((), dtype=_step_dtype()))
                state["exp_avg"] = zeros_state(p)
                state["exp_avg_sq"] = zeros_state(p)
            xp, param = p._device.xp, p.data
            grad = gradient(p, group["maximize"], 0 if decoupled else weight_decay)
            step = increment_step(state["step"])
            bias_correction2 = 1 - beta2**step
            if decoupled and weight_decay != 0:
                param *= 1 - lr * weight_decay
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product = state["mu_product"]
            mu_product.data *= mu  # (in the state's dtype, rounded as PyTorch's)
            write(mu_product)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            lerp_(xp, exp_avg.data, grad, 1 - beta1)
            exp_avg_sq.data *= beta2
            addcmul_(exp_avg_sq.data, grad, grad, 1 - beta2)
            denom = exp_avg_sq.data / bias_correction2
            xp.sqrt(denom, out=denom)
            product = float(mu_product.data)
            mu_product_next = product * mu_next
            denom += eps
            addcdiv_(param, grad, denom, -lr * (1.0 - mu) / (1.0 - product))
            addcdiv_(param, exp_avg.data, denom, (-lr * mu_next) / (1.0 - mu_product_next))
            write(exp_avg)
            write(exp_avg_sq)
            write(p)
