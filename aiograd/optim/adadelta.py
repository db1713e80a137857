"""Adadelta, ``torch.optim.Adadelta``: steps scaled by the ratio of running RMS of past updates
to running RMS of gradients (no learning rate needed in theory; ``lr`` scales it), with the
arithmetic of PyTorch's ``_single_tensor_adadelta``."""

from __future__ import annotations

from typing import Any

from .optimizer import (
    Optimizer,
    add_,
    addcmul_,
    check_flags,
    check_nonnegative,
    gradient,
    increment_step,
    write,
)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012), as ``torch.optim.Adadelta``.

    Per parameter: ``v = rho * v + (1 - rho) * g * g``,
    ``delta = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho * u + (1 - rho) * delta * delta``
    and ``p -= lr * delta``. The state holds ``step``, ``square_avg`` and ``acc_delta``.
    ``foreach`` and ``capturable`` are accepted for PyTorch's signature; every step runs the
    single-tensor arithmetic.
    """

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(
        self,
        params: Any,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
            "capturable": capturable, "foreach": foreach, "differentiable": differentiable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        for p, state in self._with_state(group, "square_avg", "acc_delta"):
            xp = p._device.xp
            increment_step(state["step"])
            grad = gradient(p, group["maximize"], weight_decay)
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.data *= rho
            addcmul_(square_avg.data, grad, grad, 1 - rho)
            std = xp.sqrt(square_avg.data + eps)
            delta = xp.sqrt(acc_delta.data + eps)
            delta /= std
            delta *= grad
            acc_delta.data *= rho
            addcmul_(acc_delta.data, delta, delta, 1 - rho)
            add_(p.data, delta, -lr)
            write(square_avg)
            write(acc_delta)
            write(p)
