"""Unpooling and power-average pooling layers (torch/nn/modules/pooling.py): ``MaxUnpool1d/2d/3d``
and ``LPPool1d/2d/3d``, calling their ``nn.functional`` functions."""

from __future__ import annotations

from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _ntuple(value: Any, n: int) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


class _MaxUnpoolNd(Module):
    _n = 2
    kernel_size: tuple[Any, ...]
    stride: tuple[Any, ...]
    padding: tuple[Any, ...]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _ntuple(padding, self._n)

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d``: each value at its index, zeros elsewhere."""

    _n = 1

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """``F.max_unpool1d`` with this layer's settings."""
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)  # type: ignore[attr-defined]


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d``: each value at its index, zeros elsewhere."""

    _n = 2

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """``F.max_unpool2d`` with this layer's settings."""
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)  # type: ignore[attr-defined]


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d``: each value at its index, zeros elsewhere."""

    _n = 3

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """``F.max_unpool3d`` with this layer's settings."""
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)  # type: ignore[attr-defined]


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        """``norm_type=..., kernel_size=..., stride=..., ceil_mode=...``."""
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling: ``(sum over each window of x ** p) ** (1 / p)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.lp_pool1d`` with this layer's settings."""
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)  # type: ignore[attr-defined]


class LPPool2d(_LPPoolNd):
    """Power-average pooling: ``(sum over each window of x ** p) ** (1 / p)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.lp_pool2d`` with this layer's settings."""
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)  # type: ignore[attr-defined]


class LPPool3d(_LPPoolNd):
    """Power-average pooling: ``(sum over each window of x ** p) ** (1 / p)``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.lp_pool3d`` with this layer's settings."""
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)  # type: ignore[attr-defined]
