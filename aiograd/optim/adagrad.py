"""Adagrad, ``torch.optim.Adagrad``: per-coordinate rates from the running sum of squared
gradients, with ``lr_decay``, L2 weight decay and ``maximize``, with the arithmetic of PyTorch's
``_single_tensor_adagrad``."""

from __future__ import annotations

from typing import Any

from .optimizer import (
    Optimizer,
    addcdiv_,
    addcmul_,
    check_flags,
    gradient,
    increment_step,
    new_step,
    tensor_on,
    write,
)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), as ``torch.optim.Adagrad``.

    Per parameter: ``sum += g * g`` and ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)``.
    As in PyTorch the state (``step``, and ``sum`` filled with ``initial_accumulator_value``) is
    created with the optimizer, not on the first step. ``foreach`` and ``fused`` are accepted
    for PyTorch's signature; every step runs the single-tensor arithmetic.
    """

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False, "fused": None}

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "fused": fused,
        }
        super().__init__(params, defaults)
        check_flags(defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p: Any) -> dict[str, Any]:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step()
            value = self.defaults["initial_accumulator_value"]
            state["sum"] = tensor_on(p._device.xp.full_like(p.data, value), p)
        return state

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps, weight_decay = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self._init_state(p)  # (a group added later gets its state on its first step)
            xp, param = p._device.xp, p.data
            step = increment_step(state["step"])
            grad = gradient(p, group["maximize"], weight_decay)
            clr = lr / (1 + (step - 1) * lr_decay)
            state_sum = state["sum"]
            addcmul_(state_sum.data, grad, grad, 1)
            write(state_sum)
            std = xp.sqrt(state_sum.data)
            std += eps
            addcdiv_(param, grad, std, -clr)
            write(p)
