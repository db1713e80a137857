"""Pooling layers (torch/nn/modules/pooling.py): ``MaxPool2d``, ``AvgPool2d``,
``AdaptiveAvgPool2d``, their 1-D and 3-D forms, calling the ``nn.functional`` pools."""

from __future__ import annotations

from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AvgPool1d", "AvgPool2d",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d",
]


class _Pool2d(Module):
    """A pool over ``kernel_size`` windows ``stride`` apart (``kernel_size`` when not given),
    after ``padding``."""

    stride: Any

    def __init__(self, kernel_size: Any, stride: Any, padding: Any) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Maximum over ``kernel_size`` windows (``stride`` defaults to ``kernel_size``)."""

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
        return_indices: bool = False, ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        """``F.max_pool2d`` with this layer's settings."""
        return F.max_pool2d(  # type: ignore[attr-defined]
            input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=..., dilation=..., ceil_mode=...``."""
        return f"{super().extra_repr()}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class AvgPool2d(_Pool2d):
    """Mean over ``kernel_size`` windows (``stride`` defaults to ``kernel_size``)."""

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
        count_include_pad: bool = True, divisor_override: int | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """``F.avg_pool2d`` with this layer's settings."""
        return F.avg_pool2d(  # type: ignore[attr-defined]
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
            self.divisor_override,
        )


class AdaptiveAvgPool2d(Module):
    """Mean pooling to a fixed ``output_size`` whatever the input size."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """``F.adaptive_avg_pool2d(input, output_size)``."""
        return F.adaptive_avg_pool2d(input, self.output_size)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``output_size=...``."""
        return f"output_size={self.output_size}"


class MaxPool1d(MaxPool2d):
    """Maximum over ``kernel_size`` windows of (N, C, L) inputs."""

    def forward(self, input: Tensor) -> Any:
        """``F.max_pool1d`` with this layer's settings."""
        return F.max_pool1d(  # type: ignore[attr-defined]
            input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


def _single(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


class AvgPool1d(Module):
    """Mean over ``kernel_size`` windows of (N, C, L) inputs (settings kept as 1-tuples, as torch's)."""

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """``F.avg_pool1d`` with this layer's settings."""
        return F.avg_pool1d(  # type: ignore[attr-defined]
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )

    def extra_repr(self) -> str:
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """Mean pooling of (N, C, L) inputs to a fixed ``output_size``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.adaptive_avg_pool1d(input, output_size)``."""
        return F.adaptive_avg_pool1d(input, self.output_size)  # type: ignore[attr-defined]


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed ``output_size``; ``return_indices`` also gives the maxima's indices."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        """``F.adaptive_max_pool2d(input, output_size, return_indices)``."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)  # type: ignore[attr-defined]

    def extra_repr(self) -> str:
        """``output_size=...``."""
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """Max pooling of (N, C, L) inputs to a fixed ``output_size``."""

    def forward(self, input: Tensor) -> Any:
        """``F.adaptive_max_pool1d(input, output_size, return_indices)``."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)  # type: ignore[attr-defined]


class MaxPool3d(MaxPool2d):
    """Maximum over ``kernel_size`` windows of (N, C, D, H, W) inputs."""

    def forward(self, input: Tensor) -> Any:
        """``F.max_pool3d`` with this layer's settings."""
        return F.max_pool3d(  # type: ignore[attr-defined]
            input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class AvgPool3d(AvgPool2d):
    """Mean over ``kernel_size`` windows of (N, C, D, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.avg_pool3d`` with this layer's settings."""
        return F.avg_pool3d(  # type: ignore[attr-defined]
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
            self.divisor_override,
        )


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    """Mean pooling of (N, C, D, H, W) inputs to a fixed ``output_size``."""

    def forward(self, input: Tensor) -> Tensor:
        """``F.adaptive_avg_pool3d(input, output_size)``."""
        return F.adaptive_avg_pool3d(input, self.output_size)  # type: ignore[attr-defined]


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """Max pooling of (N, C, D, H, W) inputs to a fixed ``output_size``."""

    def forward(self, input: Tensor) -> Any:
        """``F.adaptive_max_pool3d(input, output_size, return_indices)``."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)  # type: ignore[attr-defined]
