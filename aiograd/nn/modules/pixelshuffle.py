"""``PixelShuffle``, ``PixelUnshuffle`` (torch/nn/modules/pixelshuffle.py) and ``Fold``,
``Unfold`` (torch/nn/modules/fold.py)."""

from __future__ import annotations

from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Fold", "PixelShuffle", "PixelUnshuffle", "Unfold"]


class PixelShuffle(Module):
    """``(*, C*r*r, H, W) -> (*, C, H*r, W*r)``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """``F.pixel_shuffle(input, upscale_factor)``."""
        return F.pixel_shuffle(input, self.upscale_factor)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``upscale_factor=...``."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H*r, W*r) -> (*, C*r*r, H, W)``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """``F.pixel_unshuffle(input, downscale_factor)``."""
        return F.pixel_unshuffle(input, self.downscale_factor)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``downscale_factor=...``."""
        return f"downscale_factor={self.downscale_factor}"


class Fold(Module):
    """Columns summed back into an ``output_size`` image (col2im)."""

    output_size: Any
    kernel_size: Any
    dilation: Any
    padding: Any
    stride: Any

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """``F.fold`` with this layer's settings."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``output_size=..., kernel_size=..., dilation=..., padding=..., stride=...``."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """The sliding windows of an image as columns (im2col)."""

    kernel_size: Any
    dilation: Any
    padding: Any
    stride: Any

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """``F.unfold`` with this layer's settings."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``kernel_size=..., dilation=..., padding=..., stride=...``."""
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
