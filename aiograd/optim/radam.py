"""RAdam, ``torch.optim.RAdam``: Adam with the variance of its adaptive rate rectified, L2 or
decoupled weight decay, with the arithmetic of PyTorch's ``_single_tensor_radam``."""

from __future__ import annotations

from typing import Any

from .optimizer import (
    Optimizer,
    addcmul_,
    check_betas,
    check_flags,
    check_nonnegative,
    gradient,
    increment_step,
    lerp_,
    write,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al.), as ``torch.optim.RAdam``.

    Adam's moments; while the approximated SMA length ``rho_t`` is at most 5 the step is
    ``p -= lr * m / (1 - beta1**t)`` (momentum SGD), after that Adam's step times the
    rectification ``r_t``. The state holds ``step``, ``exp_avg`` and ``exp_avg_sq``.
    """

    _group_defaults_on_load = {
        "foreach": None, "maximize": False, "differentiable": False, "decoupled_weight_decay": False,
        "capturable": False,
    }

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
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
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
            "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        decoupled = group["decoupled_weight_decay"]
        for p, state in self._with_state(group, "exp_avg", "exp_avg_sq"):
            xp, param = p._device.xp, p.data
            grad = gradient(p, group["maximize"], 0 if decoupled else weight_decay)
            step = increment_step(state["step"])
            if decoupled and weight_decay != 0:
                param *= 1 - lr * weight_decay
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            lerp_(xp, exp_avg.data, grad, 1 - beta1)
            exp_avg_sq.data *= beta2
            addcmul_(exp_avg_sq.data, grad, grad, 1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            update = exp_avg.data / bias_correction1
            update *= lr
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            if rho_t > 5.0:
                sqrt_v = xp.sqrt(exp_avg_sq.data)
                sqrt_v += eps
                update *= (bias_correction2**0.5) / sqrt_v
                update *= ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            param -= update
            write(exp_avg)
            write(exp_avg_sq)
            write(p)
