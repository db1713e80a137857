"""``LayerNorm`` and ``GroupNorm`` (torch/nn/modules/normalization.py), calling
``F.layer_norm``/``F.group_norm``; weight 1 and bias 0 at first."""

from __future__ import annotations

import numbers
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .linear import register_weight_and_bias
from .module import Module

__all__ = ["GroupNorm", "LayerNorm"]


def register_affine(
    module: Module, affine: bool, shape: tuple[int, ...], bias: bool, dtype: Any, device: Any
) -> None:
    """The normalisation layers' ``weight`` and ``bias`` of ``shape`` (``bias`` None without
    ``bias``), or both None without ``affine``, as torch's LayerNorm, GroupNorm and BatchNorm."""
    if affine:
        register_weight_and_bias(module, shape, shape if bias else None, dtype, device)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def reset_affine(module: Module, affine: bool) -> None:
    """A normalisation layer's affine parameters as torch starts them: weight 1, bias 0 (none
    to reset without ``affine``)."""
    if affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


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
        register_affine(self, self.elementwise_affine, self.normalized_shape, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        reset_affine(self, self.elementwise_affine)

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
        register_affine(self, self.affine, (num_channels,), bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        reset_affine(self, self.affine)

    def forward(self, input: Tensor) -> Tensor:
        """``F.group_norm(input, num_groups, weight, bias, eps)``."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``num_groups, num_channels, eps=..., affine=..., bias=...``."""
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None
        )
