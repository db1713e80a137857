"""``RReLU`` (torch/nn/modules/activation.py) and torch's deprecated ``NLLLoss2d`` (an
``NLLLoss``) and ``Container`` (a ``Module`` built from keyword modules), each with torch's
``FutureWarning``."""

from __future__ import annotations

import warnings
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .loss import NLLLoss
from .module import Module

__all__ = ["Container", "NLLLoss2d", "RReLU"]


class RReLU(Module):
    """Randomized leaky ReLU: ``x`` where positive, ``a * x`` elsewhere, ``a`` drawn from
    U(lower, upper) per element while training (torch's draws, from the default generator),
    ``(lower + upper) / 2`` in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.rrelu(input, lower, upper, self.training, inplace)``."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)  # type: ignore[attr-defined, no-any-return]

    def extra_repr(self) -> str:
        """``lower=..., upper=...`` and ``inplace=True`` when set."""
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace_str}"


class NLLLoss2d(NLLLoss):
    """torch's deprecated alias of ``NLLLoss`` (warns on construction)."""

    def __init__(
        self, weight: Tensor | None = None, size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
        reduction: str = "mean",
    ) -> None:
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
            "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """torch's deprecated ``Container``: a ``Module`` holding the keyword arguments as children
    (warns on construction)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. "
            "Subclass that instead.",
            FutureWarning,
            stacklevel=2,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)
