"""``LayerNorm`` and ``GroupNorm`` (torch/nn/modules/normalization.py), calling
``F.layer_norm``/``F.group_norm``; weight 1 and bias 0 at first."""

from __future__ import annotations

import numbers
from typing import Any

from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .module import Module

__all__ = ["GroupNorm", "LayerNorm"]


class LayerNorm(Module):
    """Normalise over the last dims (``normalized_shape``), then scale and shift elementwise."""

    normalized_shape: tuple[int, ...]
    weight: Parameter | None
    bias: Parameter | None

    def __init__(
        self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
        device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if self.elementwise_affine:
            self.weight = Parameter(new_tensor(self.normalized_shape, dtype, device))
            if bias:
                self.bias = Parameter(new_tensor(self.normalized_shape, dtype, device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``F.layer_norm(input, normalized_shape, weight, bias, eps)``."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``normalized_shape, eps=..., elementwise_affine=..., bias=...``."""
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None
        )


class GroupNorm(Module):
    """Normalise each of ``num_groups`` channel groups, then scale and shift per channel."""

    weight: Parameter | None
    bias: Parameter | None

    def __init__(
        self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device: Any = None,
        dtype: Any = None, *, bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if self.affine:
            self.weight = Parameter(new_tensor((num_channels,), dtype, device))
            if bias:
                self.bias = Parameter(new_tensor((num_channels,), dtype, device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``F.group_norm(input, num_groups, weight, bias, eps)``."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``num_groups, num_channels, eps=..., affine=..., bias=...``."""
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None
        )
