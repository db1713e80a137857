"""Learning-rate schedulers, ``torch.optim.lr_scheduler``'s: ``LRScheduler`` (the base),
``LambdaLR``, ``StepLR``, ``MultiStepLR``, ``ExponentialLR``, ``CosineAnnealingLR``,
``LinearLR`` and ``OneCycleLR``, with PyTorch's chainable (recursive) formulas, so the learning rates are PyTorch's
number for number, its closed forms when ``step(epoch)`` is given, and its warnings.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right as _bisect_right
from collections import Counter as _Counter
from collections.abc import Callable as _Callable
from collections.abc import Iterable as _Iterable
from functools import wraps as _wraps
from typing import Any as _Any
from weakref import ref as _ref

from .optimizer import Optimizer as _Optimizer

# (the imports are private: this is a public module whose names are all in __all__)

__all__ = [
    "LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
    "LinearLR", "OneCycleLR",
]

_EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)

_OVERRIDDEN_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before "
    "`lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)

_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
    "will result in PyTorch skipping the first value of the learning rate schedule. "
    "See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


def _lrs(optimizer: _Optimizer) -> list[_Any]:
    return [group["lr"] for group in optimizer.param_groups]


class LRScheduler:
    """Base class of the schedulers (``torch.optim.lr_scheduler.LRScheduler``).

    On creation with ``last_epoch=-1`` each group's ``initial_lr`` is set to its ``lr`` and the
    scheduler takes its first step (epoch 0). ``step()`` moves one epoch on and writes the new
    rates into the optimizer's groups; ``get_last_lr()`` returns them. Subclasses give
    ``get_lr()`` (the rates at ``last_epoch`` from the current ones) and may give
    ``_get_closed_form_lr()`` (used by the deprecated ``step(epoch)``).
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: _Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, _Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler with last_epoch >= 0.\n"
                        "This typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not recommended)"
                    )
        self.base_lrs: list[_Any] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch: int = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, _Any]:
        """Every attribute but the optimizer (PyTorch's layout)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, _Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[_Any]:
        """The learning rates the last ``step()`` set, one per group."""
        return self._last_lr

    def get_lr(self) -> list[_Any]:
        """The learning rates at ``last_epoch`` (the subclasses' formula)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or, deprecated, to ``epoch``) and set the groups' rates."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(_OVERRIDDEN_WARNING, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr: list[_Any] = _lrs(self.optimizer)


def _track_optimizer_steps(optimizer: _Optimizer) -> None:
    """Wrap the optimizer's ``step`` (once) so that it records having been called, for the
    warning when the scheduler steps first (PyTorch's ``patch_track_step_called``)."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = _ref(optimizer)
    func = optimizer.step.__func__  # type: ignore[attr-defined]

    @_wraps(func)
    def wrapper(*args: _Any, **kwargs: _Any) -> _Any:
        opt = opt_ref()
        opt._opt_called = True  # type: ignore[union-attr]
        return func.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    optimizer.step = wrapper  # type: ignore[method-assign]


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=2,
        )


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


def _format_param(name: str, optimizer: _Optimizer, param: _Any) -> list[_Any]:
    """One value per group: a list or tuple as given (its length checked), else repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(param)
    return [param] * len(optimizer.param_groups)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin), as ``torch.optim.lr_scheduler.OneCycleLR``: the rate
    rises from ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of ``total_steps`` (or
    ``epochs * steps_per_epoch``), then anneals to ``initial_lr / final_div_factor`` (three phases
    with ``three_phase``); the momentum (or Adam's ``beta1``) cycles the other way. Step it after
    every batch."""

    def __init__(
        self,
        optimizer: _Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, _Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps: int = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        rise_end = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for idx, group in enumerate(optimizer.param_groups):
                group["initial_lr"] = max_lrs[idx] / div_factor
                group["max_lr"] = max_lrs[idx]
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1: bool = "betas" in optimizer.defaults
            max_momentums = _format_param("max_momentum", optimizer, max_momentum)
            base_momentums = _format_param("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for m_momentum, b_momentum, group in zip(max_momentums, base_momentums, optimizer.param_groups):
                    if self.use_beta1:
                        group["betas"] = (m_momentum, *group["betas"][1:])
                    else:
                        group["momentum"] = m_momentum
                    group["max_momentum"] = m_momentum
                    group["base_momentum"] = b_momentum
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[_Any]:
        """The rate (and momentum, written into the groups) at step ``last_epoch``."""
        _warn_get_lr_called_within_step(self)
        lrs = []
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is {self.total_steps}"
            )
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    computed_lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal_func(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start_step = phase["end_step"]
            lrs.append(computed_lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str, end_momentum: str) -> dict[str, _Any]:
    return {
        "end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
        "start_momentum": start_momentum, "end_momentum": end_momentum,
    }
