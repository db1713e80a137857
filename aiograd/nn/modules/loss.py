"""The losses as modules (torch/nn/modules/loss.py): each holds its ``reduction`` (and weights,
as buffers) and calls its ``nn.functional`` function."""

from __future__ import annotations

import warnings
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss",
    "NLLLoss", "SmoothL1Loss",
]


def _legacy_reduction(size_average: Any, reduce: Any) -> str:
    """The ``reduction`` the deprecated ``size_average``/``reduce`` flags stand for (torch's
    ``_Reduction.legacy_get_string``, with its warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.", stacklevel=3
    )
    return ret


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    weight: Tensor | None

    def __init__(
        self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.l1_loss(input, target, reduction=...)``."""
        return F.l1_loss(input, target, reduction=self.reduction)  # type: ignore[attr-defined]


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.mse_loss(input, target, reduction=...)``."""
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above it."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.smooth_l1_loss(input, target, reduction=..., beta=...)``."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)  # type: ignore[attr-defined]


class HuberLoss(_Loss):
    """Squared error below ``delta``, ``delta`` times the absolute error above it."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.huber_loss(input, target, reduction=..., delta=...)``."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)  # type: ignore[attr-defined]


class BCELoss(_WeightedLoss):
    """Binary cross entropy between probabilities and targets."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.binary_cross_entropy(input, target, weight=..., reduction=...)``."""
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)  # type: ignore[attr-defined]


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits (a sigmoid fused in, computed stably)."""

    def __init__(
        self, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.binary_cross_entropy_with_logits(input, target, weight, pos_weight=..., reduction=...)``."""
        return F.binary_cross_entropy_with_logits(  # type: ignore[attr-defined]
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence, ``input`` given as log-probabilities."""

    def __init__(
        self, size_average: Any = None, reduce: Any = None, reduction: str = "mean", log_target: bool = False
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.kl_div(input, target, reduction=..., log_target=...)``."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)  # type: ignore[attr-defined]


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of the target classes, given log-probabilities."""

    def __init__(
        self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.nll_loss(input, target, weight=..., ignore_index=..., reduction=...)``."""
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits and target classes (or class probabilities)."""

    def __init__(
        self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
        reduction: str = "mean", label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.cross_entropy(input, target, weight=..., ignore_index=..., reduction=..., label_smoothing=...)``."""
        return F.cross_entropy(
            input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )
