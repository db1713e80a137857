"""AdamW, ``torch.optim.AdamW``: Adam with decoupled weight decay (aiograd/optim/adam.py)."""

from __future__ import annotations

from typing import Any

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov and Hutter), as ``torch.optim.AdamW``: each
    step first scales the parameter by ``1 - lr * weight_decay`` (default ``1e-2``), then takes
    Adam's step on the plain gradient."""

    def __init__(
        self,
        params: Any,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused,
            decoupled_weight_decay=True,
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
