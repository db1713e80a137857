"""Stochastic gradient descent, ``torch.optim.SGD``: momentum, dampening, Nesterov momentum,
weight decay and ``maximize``, with the arithmetic of PyTorch's ``_single_tensor_sgd``."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, add_, check_flags, gradient, tensor_on, write

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), as ``torch.optim.SGD``.

    With momentum ``m``: ``buf = m * buf + (1 - dampening) * g`` (``buf = g`` on the first step),
    then ``g = g + m * buf`` (Nesterov) or ``g = buf``; ``p -= lr * g``. ``weight_decay`` adds
    ``weight_decay * p`` to the gradient first; ``maximize`` ascends. ``foreach`` and ``fused``
    are accepted for PyTorch's signature and kept in the groups; every step runs the
    single-tensor arithmetic.
    """

    _group_defaults_on_load = {
        "nesterov": False, "maximize": False, "foreach": None, "differentiable": False, "fused": False,
    }

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
            "nesterov": nesterov, "maximize": maximize, "foreach": foreach,
            "differentiable": differentiable, "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        check_flags(defaults)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        for p in group["params"]:
            if p._grad is None:
                continue
            param, grad = p.data, gradient(p, maximize, weight_decay)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    # (a copy of the gradient: PyTorch's ``grad.detach().clone()``)
                    buf = state["momentum_buffer"] = tensor_on(grad.copy() if grad is p._grad.data else grad, p)
                else:
                    b = buf.data
                    b *= momentum
                    add_(b, grad, 1 - dampening)
                    write(buf)
                grad = grad + momentum * buf.data if nesterov else buf.data
            add_(param, grad, -lr)
            write(p)

