"""The dropout modules (torch/nn/modules/dropout.py): ``Dropout`` zeroes elements with
probability ``p`` in training mode (drawing from the default generator, through ``F.dropout``),
``Dropout1d``/``2d``/``3d`` whole channels, ``AlphaDropout`` and ``FeatureAlphaDropout`` keep
SELU's statistics; each is the identity in eval mode."""

from __future__ import annotations

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


class Dropout(Module):
    """Zero each element with probability ``p`` while training, scaling the rest by 1/(1-p)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.dropout(input, p, training, inplace)``."""
        return F.dropout(input, self.p, self.training, self.inplace)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``p=..., inplace=...``."""
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs with probability ``p`` while
    training, scaling the rest by 1/(1-p)."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.dropout1d(input, p, training, inplace)``."""
        return F.dropout1d(input, self.p, self.training, self.inplace)  # type: ignore[attr-defined]


class Dropout2d(Dropout):
    """Zero whole channels of ``(N, C, H, W)`` inputs with probability ``p`` while training,
    scaling the rest by 1/(1-p) (a 3-D input is taken as ``(N, C, L)``, as torch's)."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.dropout2d(input, p, training, inplace)``."""
        return F.dropout2d(input, self.p, self.training, self.inplace)  # type: ignore[attr-defined]


class Dropout3d(Dropout):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs with probability
    ``p`` while training, scaling the rest by 1/(1-p)."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.dropout3d(input, p, training, inplace)``."""
        return F.dropout3d(input, self.p, self.training, self.inplace)  # type: ignore[attr-defined]


class AlphaDropout(Dropout):
    """Alpha dropout while training (for SELU networks: the mean and variance stay)."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.alpha_dropout(input, p, training)``."""
        return F.alpha_dropout(input, self.p, self.training)  # type: ignore[attr-defined]


class FeatureAlphaDropout(Dropout):
    """Alpha dropout of whole channels while training."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.feature_alpha_dropout(input, p, training)``."""
        return F.feature_alpha_dropout(input, self.p, self.training)  # type: ignore[attr-defined]
