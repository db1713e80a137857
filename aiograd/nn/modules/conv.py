"""Convolutions (torch/nn/modules/conv.py): ``Conv1d``, ``Conv2d``, ``Conv3d`` and their
transposed forms. They hold torch's weight layout (out, in/groups, *kernel; transposed: in, out/groups, *kernel) and
initialisation and call ``F.conv{1,2,3}d``/``F.conv_transpose{1,2,3}d``."""

from __future__ import annotations

from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from ..parameter import Parameter
from .linear import register_weight_and_bias, reset_weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _ntuple(value: Any, n: int) -> tuple[Any, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


def _reverse_repeat_tuple(t: tuple[int, ...], n: int) -> tuple[int, ...]:
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):

    weight: Parameter
    bias: Parameter | None
    padding: Any

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: tuple[int, ...], stride: tuple[int, ...],
        padding: Any, dilation: tuple[int, ...], transposed: bool, output_padding: tuple[int, ...], groups: int,
        bias: bool, padding_mode: str, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(
                f"padding_mode must be one of {valid_padding_modes}, but got padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # the padding F.pad takes for the non-zero padding modes (last dimension first)
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = list(_reverse_repeat_tuple(self.padding, 2))
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        register_weight_and_bias(self, shape, (out_channels,) if bias else None, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again, as torch's convolutions initialise them."""
        reset_weight_and_bias(self.weight, self.bias, bias_without_fan_in=False)

    def extra_repr(self) -> str:
        """torch's: channels, kernel_size, stride, then the settings that differ from the default."""
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _ConvForwardNd(_ConvNd):
    """A (non-transposed) convolution over ``_spatial_dims`` dimensions: Conv1d and Conv2d differ
    only in that number (and the ``F.conv{n}d`` it calls)."""

    _spatial_dims: int

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
        dtype: Any = None,
    ) -> None:
        n = self._spatial_dims
        super().__init__(
            in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n),
            padding if isinstance(padding, str) else _ntuple(padding, n), _ntuple(dilation, n), False,
            _ntuple(0, n), groups, bias, padding_mode, device, dtype,
        )

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = getattr(F, f"conv{self._spatial_dims}d")
        if self.padding_mode != "zeros":
            return conv(  # type: ignore[no-any-return]
                F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),  # type: ignore[attr-defined]
                weight, bias, self.stride, _ntuple(0, self._spatial_dims), self.dilation, self.groups,
            )
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)  # type: ignore[no-any-return]

    def forward(self, input: Tensor) -> Tensor:
        """``F.conv1d``/``F.conv2d`` with this layer's weight, bias and settings."""
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvForwardNd):
    """1-D convolution over (N, C_in, L) inputs."""

    _spatial_dims = 1


class Conv2d(_ConvForwardNd):
    """2-D convolution over (N, C_in, H, W) inputs."""

    _spatial_dims = 2


class Conv3d(_ConvForwardNd):
    """3-D convolution over (N, C_in, D, H, W) inputs."""

    _spatial_dims = 3


class ConvTranspose2d(_ConvNd):
    """2-D transposed convolution (the gradient of a convolution with respect to its input)."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
        padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(
            in_channels, out_channels, _ntuple(kernel_size, 2), _ntuple(stride, 2), _ntuple(padding, 2),
            _ntuple(dilation, 2), True, _ntuple(output_padding, 2), groups, bias, padding_mode, device, dtype,
        )

    def _output_padding(
        self, input: Tensor, output_size: Any, stride: Any, padding: Any, kernel_size: Any, num_spatial_dims: int,
        dilation: Any = None,
    ) -> list[int]:
        if output_size is None:
            return list(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(
                f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have {num_spatial_dims} "
                f"or {num_non_spatial_dims + num_spatial_dims} elements (got {len(output_size)})"
            )
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = (
                (input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1
            )
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range "
                    f"from {min_sizes} to {max_sizes} (for an input of aiograd.Size({list(input.shape[2:])}))"
                )
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """``F.conv_transpose2d``; ``output_size`` picks the output padding, as in torch."""
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, 2, self.dilation
        )
        return F.conv_transpose2d(  # type: ignore[attr-defined]
            input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation
        )


class _ConvTransposeOfDims(ConvTranspose2d):
    """A transposed convolution over ``_dims`` spatial dims (``ConvTranspose1d``, ``3d``): the 2-D
    layer's arguments, each widened to ``_dims`` values, and the functional form of that rank."""

    _dims = 2

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
        output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
        padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        n = self._dims
        _ConvNd.__init__(
            self, in_channels, out_channels, _ntuple(kernel_size, n), _ntuple(stride, n), _ntuple(padding, n),
            _ntuple(dilation, n), True, _ntuple(output_padding, n), groups, bias, padding_mode, device, dtype,
        )

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """``F.conv_transpose1d``/``3d``; ``output_size`` picks the output padding, as in torch."""
        output_padding = self._output_padding(
            input, output_size, self.stride, self.padding, self.kernel_size, self._dims, self.dilation
        )
        functional = F.conv_transpose1d if self._dims == 1 else F.conv_transpose3d  # type: ignore[attr-defined]
        return functional(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeOfDims):
    """1-D transposed convolution over (N, C_in, L) inputs."""

    _dims = 1


class ConvTranspose3d(_ConvTransposeOfDims):
    """3-D transposed convolution over (N, C_in, D, H, W) inputs."""

    _dims = 3
