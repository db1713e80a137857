"""More losses as modules (torch/nn/modules/loss.py): margin, embedding, multi-label/class,
likelihood and CTC losses, each calling its ``nn.functional`` function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .layers_more import PairwiseDistance
from .loss import _Loss, _WeightedLoss

__all__ = [
    "CTCLoss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
    "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss",
]


class MarginRankingLoss(_Loss):
    """``max(0, -y * (x1 - x2) + margin)``: ranks ``x1`` above ``x2`` where ``y`` is 1."""

    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``F.margin_ranking_loss(input1, input2, target, margin=..., reduction=...)``."""
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)  # type: ignore[attr-defined]


class HingeEmbeddingLoss(_Loss):
    """``x`` where ``y`` is 1, ``max(0, margin - x)`` where it is -1."""

    def __init__(self, margin: float = 1.0, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.hinge_embedding_loss(input, target, margin=..., reduction=...)``."""
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)  # type: ignore[attr-defined]


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` where ``y`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1."""

    def __init__(self, margin: float = 0.0, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``F.cosine_embedding_loss(input1, input2, target, margin=..., reduction=...)``."""
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)  # type: ignore[attr-defined]


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y * x))``: two-class logistic loss."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.soft_margin_loss(input, target, reduction=...)``."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)  # type: ignore[attr-defined]


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss, averaged over the classes."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.multilabel_soft_margin_loss(input, target, weight=..., reduction=...)``."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)  # type: ignore[attr-defined]


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss (targets listed up to the first -1)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.multilabel_margin_loss(input, target, reduction=...)``."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)  # type: ignore[attr-defined]


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: ``max(0, margin - x[y] + x[i])**p`` summed over ``i != y``."""

    def __init__(
        self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, size_average: Any = None,
        reduce: Any = None, reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``F.multi_margin_loss(input, target, p=..., margin=..., weight=..., reduction=...)``."""
        return F.multi_margin_loss(  # type: ignore[attr-defined]
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with the ``p``-norm pairwise distance."""

    def __init__(
        self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False, size_average: Any = None,
        reduce: Any = None, reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """``F.triplet_margin_loss`` with this loss's settings."""
        return F.triplet_margin_loss(  # type: ignore[attr-defined]
            anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps, swap=self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """:class:`TripletMarginLoss` with any ``distance_function`` (a ``PairwiseDistance()`` by
    default, a child module then, as in torch)."""

    def __init__(
        self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0,
        swap: bool = False, reduction: str = "mean",
    ) -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.distance_function: Any = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """``F.triplet_margin_with_distance_loss`` with this loss's settings."""
        return F.triplet_margin_with_distance_loss(  # type: ignore[attr-defined]
            anchor, positive, negative, distance_function=self.distance_function, margin=self.margin,
            swap=self.swap, reduction=self.reduction,
        )


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of a Poisson-distributed target."""

    def __init__(
        self, log_input: bool = True, full: bool = False, size_average: Any = None, eps: float = 1e-8,
        reduce: Any = None, reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """``F.poisson_nll_loss`` with this loss's settings."""
        return F.poisson_nll_loss(  # type: ignore[attr-defined]
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of a Gaussian target with predicted mean and variance."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:
        """``F.gaussian_nll_loss(input, target, var, full=..., eps=..., reduction=...)``."""
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)  # type: ignore[attr-defined]


class CTCLoss(_Loss):
    """The connectionist temporal classification loss."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any) -> Tensor:
        """``F.ctc_loss`` with this loss's ``blank``, ``reduction`` and ``zero_infinity``."""
        return F.ctc_loss(  # type: ignore[attr-defined]
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )
