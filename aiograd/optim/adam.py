"""Adam, ``torch.optim.Adam``: bias-corrected first and second moment estimates, AMSGrad,
L2 or decoupled weight decay and ``maximize``, with the arithmetic of PyTorch's
``_single_tensor_adam`` (AdamW, aiograd/optim/adamw.py, is this with decoupled weight decay)."""

from __future__ import annotations

from typing import Any

from .optimizer import (
    Optimizer,
    addcdiv_,
    addcmul_,
    check_betas,
    check_flags,
    check_nonnegative,
    gradient,
    increment_step,
    lerp_,
    write,
)

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam (Kingma and Ba), as ``torch.optim.Adam``.

    Per parameter: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g``, and
    ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` (``v`` replaced by its
    running maximum with ``amsgrad``). ``weight_decay`` adds ``weight_decay * p`` to the gradient,
    or, with ``decoupled_weight_decay`` (AdamW), scales ``p`` by ``1 - lr * weight_decay`` first.
    The state holds ``step`` (a 0-dim float32 CPU tensor, as PyTorch's), ``exp_avg``,
    ``exp_avg_sq`` and ``max_exp_avg_sq``. ``foreach``, ``capturable`` and ``fused`` are accepted
    for PyTorch's signature and kept in the groups; every step runs the single-tensor arithmetic.
    """

    _group_defaults_on_load = {
        "amsgrad": False, "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
        "decoupled_weight_decay": False, "fused": None,
    }

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach, "capturable": capturable,
            "differentiable": differentiable, "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        amsgrad, maximize, decoupled = group["amsgrad"], group["maximize"], group["decoupled_weight_decay"]
        buffers = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
        for p, state in self._with_state(group, *buffers):
            xp, param = p._device.xp, p.data
            # Decoupled (AdamW): the decay scales the parameter instead of adding to the gradient.
            grad = gradient(p, maximize, 0 if decoupled else weight_decay)
            step = increment_step(state["step"])
            if decoupled and weight_decay != 0:
                param *= 1 - lr * weight_decay
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            lerp_(xp, exp_avg.data, grad, 1 - beta1)
            exp_avg_sq.data *= beta2
            addcmul_(exp_avg_sq.data, grad, grad, 1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            if amsgrad:
                max_sq = state["max_exp_avg_sq"]
                xp.maximum(max_sq.data, exp_avg_sq.data, out=max_sq.data)
                write(max_sq)
                denom = xp.sqrt(max_sq.data)
            else:
                denom = xp.sqrt(exp_avg_sq.data)
            denom /= bias_correction2_sqrt
            denom += eps
            addcdiv_(param, exp_avg.data, denom, -step_size)
            write(exp_avg)
            write(exp_avg_sq)
            write(p)
