"""Adamax, ``torch.optim.Adamax``: Adam with the infinity norm in place of the second moment,
with the arithmetic of PyTorch's ``_single_tensor_adamax``."""

from __future__ import annotations

from typing import Any

from .optimizer import (
    Optimizer,
    addcdiv_,
    check_betas,
    check_flags,
    check_nonnegative,
    gradient,
    increment_step,
    lerp_,
    write,
)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma and Ba), as ``torch.optim.Adamax``.

    Per parameter: ``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 * u, |g| + eps)`` and
    ``p -= lr / (1 - beta1**t) * m / u``. The state holds ``step``, ``exp_avg`` and ``exp_inf``.
    ``foreach`` and ``capturable`` are accepted for PyTorch's signature; every step runs the
    single-tensor arithmetic.
    """

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(
        self,
        params: Any,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        for p, state in self._with_state(group, "exp_avg", "exp_inf"):
            xp, param = p._device.xp, p.data
            grad = gradient(p, group["maximize"], weight_decay)
            step = increment_step(state["step"])
            exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
            lerp_(xp, exp_avg.data, grad, 1 - beta1)
            exp_inf.data *= beta2
            norm = xp.abs(grad)
            norm += eps
            xp.maximum(exp_inf.data, norm, out=exp_inf.data)
            clr = lr / (1 - beta1**step)
            addcdiv_(param, exp_avg.data, exp_inf.data, -clr)
            write(exp_avg)
            write(exp_inf)
            write(p)
