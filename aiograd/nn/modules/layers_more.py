"""More layers: ``Bilinear`` (torch/nn/modules/linear.py), ``CosineSimilarity`` and
``PairwiseDistance`` (distance.py), ``ChannelShuffle`` (channelshuffle.py), ``Hardshrink`` and
``Softshrink`` (activation.py), each calling its ``F`` function."""

from __future__ import annotations

import math
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .module import Module

__all__ = ["Bilinear", "ChannelShuffle", "CosineSimilarity", "Hardshrink", "PairwiseDistance", "Softshrink"]


class Bilinear(Module):
    """``y = x1^T A x2 + b``: ``weight`` (out_features, in1_features, in2_features) and ``bias``
    (out_features,), both from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), drawn in torch's
    order (the same values as torch's after the same seed)."""

    in1_features: int
    in2_features: int
    out_features: int
    weight: Parameter
    bias: Parameter | None

    def __init__(
        self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(new_tensor((out_features, in1_features, in2_features), dtype, device))
        if bias:
            self.bias = Parameter(new_tensor((out_features,), dtype, device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight, then the bias, from U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """``F.bilinear(input1, input2, weight, bias)``."""
        return F.bilinear(input1, input2, self.weight, self.bias)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``in1_features=..., in2_features=..., out_features=..., bias=...``."""
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dim (``F.pairwise_distance``); ``p`` is kept as
    ``norm``, as torch's."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``F.pairwise_distance(x1, x2, norm, eps, keepdim)``."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)  # type: ignore[attr-defined]


class CosineSimilarity(Module):
    """Cosine similarity along ``dim`` (``F.cosine_similarity``)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``F.cosine_similarity(x1, x2, dim, eps)``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class ChannelShuffle(Module):
    """Interleave ``groups`` groups of channels (``F.channel_shuffle``)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """``F.channel_shuffle(input, groups)``."""
        return F.channel_shuffle(input, self.groups)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``groups=...``."""
        return f"groups={self.groups}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, 0 elsewhere (``F.hardshrink``)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """``F.hardshrink(input, lambd)``."""
        return F.hardshrink(input, self.lambd)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``lambd``."""
        return f"{self.lambd}"


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between
    (``F.softshrink``)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """``F.softshrink(input, lambd)``."""
        return F.softshrink(input, self.lambd)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``lambd``."""
        return str(self.lambd)
