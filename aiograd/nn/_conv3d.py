"""3-D convolutions: ``conv3d`` and ``conv_transpose3d``, as torch.nn.functional's.

Both are ``_conv._convolution`` with three spatial dims (its im2col, products and
``ConvolutionBackward0`` are written for any number of them; only the flat unit-stride layout
is 2-D), so values, gradients and second derivatives come from the same code as ``conv2d``.
"""

from __future__ import annotations

from typing import Any

from .._ops._registry import op
from .._ops._util import Tensor, not_tensor
from ._conv import ConvolutionBackward0, _convolution

__all__ = ["conv3d", "conv_transpose3d"]


@op(ConvolutionBackward0, family="_conv")
def conv3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    dilation: Any = 1, groups: int = 1,
) -> Tensor:
    """3-D convolution (cross-correlation) of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``
    with ``weight`` ``(O, C/groups, kd, kh, kw)``, as ``torch.nn.functional.conv3d``; ``padding``
    may be ``'same'`` (stride 1 only) or ``'valid'``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("conv3d", input)
    return _convolution("conv3d", input, weight, bias, stride, padding, dilation, groups)


@op(ConvolutionBackward0, family="_conv")
def conv_transpose3d(
    input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
    output_padding: Any = 0, groups: int = 1, dilation: Any = 1,
) -> Tensor:
    """3-D transposed convolution of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)`` with
    ``weight`` ``(C, O/groups, kd, kh, kw)``: the gradient of ``conv3d`` with respect to its
    input, as ``torch.nn.functional.conv_transpose3d``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("conv_transpose3d", input)
    return _convolution("conv_transpose3d", input, weight, bias, stride, padding, dilation, groups, True, output_padding)
