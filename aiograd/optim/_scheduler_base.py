"""The scheduler base class, ``torch.optim.lr_scheduler.LRScheduler``, and what the schedulers
share (PyTorch's warnings, the optimizer-step tracking, ``_format_param``). Public from
``aiograd.optim.lr_scheduler``; the schedulers are there and in its sibling private modules."""

from __future__ import annotations

import warnings
from functools import wraps
from typing import Any
from weakref import ref

from .optimizer import Optimizer

__all__ = ["LRScheduler"]

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


def _lrs(optimizer: Optimizer) -> list[Any]:
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

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
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
        self.base_lrs: list[Any] = [group["initial_lr"] for group in optimizer.param_groups]
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

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (PyTorch's layout)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[Any]:
        """The learning rates the last ``step()`` set, one per group."""
        return self._last_lr

    def get_lr(self) -> list[Any]:
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
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        # (the step without its checks: SequentialLR restarts a scheduler at epoch 0 with it)
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
        self._last_lr: list[Any] = _lrs(self.optimizer)


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap the optimizer's ``step`` (once) so that it records having been called, for the
    warning when the scheduler steps first (PyTorch's ``patch_track_step_called``)."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = ref(optimizer)
    func = optimizer.step.__func__  # type: ignore[attr-defined]

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
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


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list[Any]:
    """One value per group: a list or tuple as given (its length checked), else repeated."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return list(param)
    return [param] * len(optimizer.param_groups)
