"""``Dropout`` (torch/nn/modules/dropout.py): zeroes elements with probability ``p`` in training
mode (drawing from the default generator, through ``F.dropout``), the identity in eval mode."""

from __future__ import annotations

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


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
