"""torch.nn.functional's ``max_unpool1d/2d/3d`` and ``lp_pool1d/2d/3d``, composites of aiograd
ops.

Unpooling scatters each value into zeros at the flat index ``max_poolNd(return_indices=True)``
gave it (``scatter``: its gradient gathers, so it differentiates to any order; PyTorch records
``MaxUnpool2DBackward0``). Power-average pooling is torch.nn.functional's formula exactly:
``(sign(a) * relu(|a|) * prod(kernel)) ** (1/p)``, ``a = avg_pool(x ** p)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._ops._util import Tensor, like, not_tensor
from .._ops.unary_math import relu
from ._pooling import avg_pool2d, max_pool2d
from ._pooling1d import avg_pool1d, max_pool1d
from ._pooling3d import avg_pool3d, max_pool3d

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _tuple(value: Any, n: int) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _unpool_output_size(input: Tensor, kernel_size: tuple[int, ...], stride: tuple[int, ...],
                        padding: tuple[int, ...], output_size: Any) -> list[int]:
    """torch.nn.functional's ``_unpool_output_size``."""
    shape = input.data.shape
    k = len(kernel_size)
    default = [(shape[-k + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(k)]
    if output_size is None:
        return default
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(
            f"output_size should be a sequence containing {k} or {k + 2} elements, but it has a length of "
            f"'{len(output_size)}'"
        )
    for d in range(k):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return [int(s) for s in output_size]


def _unpool(input: Tensor, indices: Tensor, size: list[int], name: str, dims: int, shown: str) -> Tensor:
    """ATen's ``max_unpooling{2,3}d``: ``input``'s values at ``indices`` in zeros of ``size``."""
    x, idx = input.data, np.asarray(indices.data)
    if idx.dtype != np.int64:
        from .._base._dtypes import scalar_type_name

        raise RuntimeError(f"elements in indices should be type int64 but got: {scalar_type_name(idx.dtype)}")
    if x.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Input to {name} should be a {dims + 1}d or {dims + 2}d Tensor, but got a tensor with {x.ndim} dimensions."
        )
    if idx.shape != x.shape:
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({list(x.shape)}) but got "
            f"indices tensor with shape: {list(idx.shape)}"
        )
    plane = math.prod(size)
    lead = x.shape[: x.ndim - dims]
    flat_idx = idx.reshape(*lead, -1)
    bad = (flat_idx < 0) | (flat_idx >= plane)
    if bad.any():
        raise RuntimeError(f"Found an invalid max index: {int(flat_idx[bad][0])} (output volumes are of size {shown})")
    zeros = like(np.zeros((*lead, plane), dtype=x.dtype), input)
    out = zeros.scatter(len(lead), like(flat_idx, indices), input.reshape(*lead, -1))
    return out.reshape(*lead, *size)  # type: ignore[no-any-return]


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of ``max_pool1d``: each value at its index, zeros elsewhere."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("max_unpool1d", input)
    k = _tuple(kernel_size, 1)
    s = _tuple(stride, 1) if stride is not None else k
    size = _unpool_output_size(input, k, s, _tuple(padding, 1), output_size)
    out = _unpool(input.unsqueeze(-1), indices.unsqueeze(-1), [*size, 1], "max_unpooling2d", 2, f"{size[0]}x1")
    return out.squeeze(-1)  # type: ignore[no-any-return]


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of ``max_pool2d``: each value at its flat ``H*W`` index, zeros elsewhere."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("max_unpool2d", input)
    k = _tuple(kernel_size, 2)
    s = _tuple(stride, 2) if stride is not None else k
    size = _unpool_output_size(input, k, s, _tuple(padding, 2), output_size)
    return _unpool(input, indices, size, "max_unpooling2d", 2, "x".join(map(str, size)))


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of ``max_pool3d``: each value at its flat ``D*H*W`` index, zeros elsewhere."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("max_unpool3d", input)
    k = _tuple(kernel_size, 3)
    s = _tuple(stride, 3) if stride is not None else k
    size = _unpool_output_size(input, k, s, _tuple(padding, 3), output_size)
    return _unpool(input, indices, size, "max_unpooling3d", 3, "x".join(map(str, size)))


def _lp(out: Tensor, kernel: int, norm_type: float) -> Tensor:
    return ((out.sign() * relu(out.abs())) * kernel) ** (1.0 / norm_type)  # type: ignore[no-any-return]


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x ** p) ** (1 / p)``, as torch.nn.functional's (``p`` inf: the
    max of ``|x|``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("lp_pool1d", input)
    if norm_type == math.inf:
        return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)  # type: ignore[no-any-return]
    if norm_type == -math.inf:
        return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)  # type: ignore[no-any-return]
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp(out, _tuple(kernel_size, 1)[0], norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x ** p) ** (1 / p)``, as torch.nn.functional's (``p`` inf: the
    max of ``|x|``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("lp_pool2d", input)
    kw, kh = _tuple(kernel_size, 2)
    if norm_type == math.inf:
        return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)  # type: ignore[no-any-return]
    if norm_type == -math.inf:
        return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)  # type: ignore[no-any-return]
    out = avg_pool2d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp(out, kw * kh, norm_type)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x ** p) ** (1 / p)``, as torch.nn.functional's (``p`` inf: the
    max of ``|x|``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("lp_pool3d", input)
    kd, kw, kh = _tuple(kernel_size, 3)
    if norm_type == math.inf:
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)  # type: ignore[no-any-return]
    if norm_type == -math.inf:
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)  # type: ignore[no-any-return]
    out = avg_pool3d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp(out, kd * kw * kh, norm_type)
