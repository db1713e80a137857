"""ASGD, ``torch.optim.ASGD``: averaged stochastic gradient descent, with the arithmetic of
PyTorch's ``_single_tensor_asgd``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core._tensor import Tensor
from .optimizer import (
    Optimizer,
    _step_dtype,
    add_,
    check_flags,
    gradient,
    increment_step,
    new_step,
    write,
    zeros_state,
)

__all__ = ["ASGD"]


def _scalar_state(value: float) -> Tensor:
    """A 0-dim CPU state tensor in the step's dtype (PyTorch's ``_get_scalar_dtype``)."""
    return Tensor._wrap(np.asarray(value, dtype=_step_dtype()))


class ASGD(Optimizer):
    """Averaged SGD (Polyak and Juditsky), as ``torch.optim.ASGD``.

    Per parameter: ``p *= 1 - lambd * eta``, ``p -= eta * g``, then the average ``ax`` moves
    towards ``p`` by ``mu``; ``eta = lr / (1 + lambd * lr * t) ** alpha`` and
    ``mu = 1 / max(1, t - t0)`` for the next step. The state holds ``step``, ``eta``, ``mu``
    (0-dim tensors) and ``ax``.
    """

    _group_defaults_on_load = {"foreach": None, "maximize": False, "differentiable": False, "capturable": False}

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
            "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        for p in group["params"]:
            if p._grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:  # (PyTorch's key order)
                state["step"] = new_step()
                state["eta"] = _scalar_state(lr)
                state["mu"] = _scalar_state(1.0)
                state["ax"] = zeros_state(p)
            param = p.data
            grad = gradient(p, group["maximize"], group["weight_decay"])
            step = increment_step(state["step"])
            eta, mu, ax = float(state["eta"].data), float(state["mu"].data), state["ax"]
            param *= 1 - lambd * eta
            add_(param, grad, -eta)
            write(p)
            if mu != 1:
                ax.data += (param - ax.data) * mu
            else:
                ax.data[...] = param
            write(ax)
            # (PyTorch's ``torch.as_tensor(number)``: rounded to the default dtype, then copied
            # into the state, which a loaded state dict may have made float64)
            state["eta"].data[...] = np.asarray(lr / ((1 + lambd * lr * step) ** alpha), dtype=_step_dtype())
            state["mu"].data[...] = np.asarray(1 / max(1, step - t0), dtype=_step_dtype())
            write(state["eta"])
            write(state["mu"])
