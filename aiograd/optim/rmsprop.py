"""RMSprop, ``torch.optim.RMSprop``: a running average of squared gradients (``alpha``),
optionally centered and with momentum, with the arithmetic of PyTorch's
``_single_tensor_rmsprop``."""

from __future__ import annotations

from typing import Any

from .optimizer import (
    Optimizer,
    add_,
    addcdiv_,
    addcmul_,
    check_flags,
    check_nonnegative,
    gradient,
    increment_step,
    lerp_,
    write,
)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), as ``torch.optim.RMSprop``.

    Per parameter: ``v = alpha * v + (1 - alpha) * g * g``; with ``centered``,
    ``ga = lerp(ga, g, 1 - alpha)`` and ``avg = sqrt(v - ga * ga) + eps``, else
    ``avg = sqrt(v) + eps``; then ``buf = momentum * buf + g / avg`` and ``p -= lr * buf`` (with
    momentum) or ``p -= lr * g / avg``. The state holds ``step``, ``square_avg``,
    ``momentum_buffer`` (momentum > 0) and ``grad_avg`` (centered). ``foreach`` and
    ``capturable`` are accepted for PyTorch's signature; every step runs the single-tensor
    arithmetic.
    """

    _group_defaults_on_load = {
        "momentum": 0, "centered": False, "foreach": None, "maximize": False, "differentiable": False,
        "capturable": False,
    }

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {
            "lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
            "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, alpha, eps, weight_decay = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
        momentum, centered, maximize = group["momentum"], group["centered"], group["maximize"]
        buffers = ["square_avg"]
        if momentum > 0:
            buffers.append("momentum_buffer")
        if centered:
            buffers.append("grad_avg")
        for p, state in self._with_state(group, *buffers):
            xp, param = p._device.xp, p.data
            grad = gradient(p, maximize, weight_decay)
            increment_step(state["step"])
            square_avg = state["square_avg"]
            square_avg.data *= alpha
            addcmul_(square_avg.data, grad, grad, 1 - alpha)
            write(square_avg)
            if centered:
                grad_avg = state["grad_avg"]
                lerp_(xp, grad_avg.data, grad, 1 - alpha)
                write(grad_avg)
                avg = square_avg.data + -1 * grad_avg.data * grad_avg.data
                xp.sqrt(avg, out=avg)
            else:
                avg = xp.sqrt(square_avg.data)
            avg += eps
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.data *= momentum
                addcdiv_(buf.data, grad, avg, 1)
                write(buf)
                add_(param, buf.data, -lr)
            else:
                addcdiv_(param, grad, avg, -lr)
            write(p)
