"""Learning-rate schedulers, ``torch.optim.lr_scheduler``'s: ``LRScheduler`` (the base),
``LambdaLR``, ``StepLR``, ``MultiStepLR``, ``ExponentialLR``, ``CosineAnnealingLR``,
``LinearLR``, with PyTorch's chainable (recursive) formulas, so the learning
rates are PyTorch's number for number, its closed forms when ``step(epoch)`` is given, and its
warnings; the others are in aiograd/optim/_schedulers_extra.py and _cyclic_schedulers.py
(``CyclicLR``, ``OneCycleLR``), re-exported at the end."""

from __future__ import annotations

import math
import types
from bisect import bisect_right as _bisect_right
from collections import Counter as _Counter
from collections.abc import Callable as _Callable
from collections.abc import Iterable as _Iterable
from typing import Any as _Any

from ._scheduler_base import LRScheduler, _lrs, _warn_get_lr_called_within_step
from .optimizer import Optimizer as _Optimizer

# (the imports are private: this is a public module whose names are all in __all__)

__all__ = [
    "LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
    "LinearLR", "OneCycleLR", "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR",
    "ReduceLROnPlateau", "SequentialLR", "ChainedScheduler",
]

class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)``, one function or one per group."""

    def __init__(
        self,
        optimizer: _Optimizer,
        lr_lambda: _Callable[[int], float] | list[_Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas: list[_Callable[[int], float]] = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, _Any]:
        """The attributes; a lambda that is a plain function is saved as None, a callable object
        as its ``__dict__`` (PyTorch's layout)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, _Any]) -> None:
        """Restore the attributes and the callable objects' ``__dict__``."""
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lr_lambdas
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)

    def get_lr(self) -> list[_Any]:
        """``base_lr * lambda(last_epoch)`` per group."""
        _warn_get_lr_called_within_step(self)
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: _Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[_Any]:
        """The current rates, times ``gamma`` at each multiple of ``step_size``."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[_Any]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by ``gamma`` at each milestone epoch (a repeated milestone counts as
    many times as it appears)."""

    def __init__(
        self, optimizer: _Optimizer, milestones: _Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones: _Counter[int] = _Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[_Any]:
        """The current rates, times ``gamma ** count`` at a milestone."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[_Any]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** _bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch."""

    def __init__(self, optimizer: _Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[_Any]:
        """The current rates times ``gamma`` (unchanged on the initial step)."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[_Any]:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` epochs (and back up
    over the next ``T_max``), with PyTorch's recursive formula, so the rates are PyTorch's even
    when something else changes them between steps."""

    def __init__(self, optimizer: _Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[_Any]:
        """The next rate from the current one (PyTorch's ``CosineAnnealingLR.get_lr``)."""
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and self.last_epoch > 0:
            return [
                self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                for base_lr in self.base_lrs
            ]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [
                group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                for base_lr, group in zip(self.base_lrs, groups)
            ]
        return [
            (1 + math.cos(math.pi * self.last_epoch / self.T_max))
            / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
            * (group["lr"] - self.eta_min)
            + self.eta_min
            for group in groups
        ]

    def _get_closed_form_lr(self) -> list[_Any]:
        return [
            self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base_lr in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scale the rate by a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs."""

    def __init__(
        self,
        optimizer: _Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[_Any]:
        """The next rate from the current one (PyTorch's ``LinearLR.get_lr``)."""
        _warn_get_lr_called_within_step(self)
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        return [
            group["lr"]
            * (
                1.0
                + (self.end_factor - self.start_factor)
                / (self.total_iters * self.start_factor + (self.last_epoch - 1) * (self.end_factor - self.start_factor))
            )
            for group in groups
        ]

    def _get_closed_form_lr(self) -> list[_Any]:
        return [
            base_lr
            * (self.start_factor + (self.end_factor - self.start_factor) * min(self.total_iters, self.last_epoch) / self.total_iters)
            for base_lr in self.base_lrs
        ]


from ._cyclic_schedulers import CyclicLR, OneCycleLR  # noqa: E402
from ._schedulers_extra import (  # noqa: E402
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingWarmRestarts,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
)
