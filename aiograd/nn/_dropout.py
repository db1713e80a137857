"""torch.nn.functional's dropouts: ``dropout`` zeroes each element with probability ``p`` and
scales the rest by ``1 / (1 - p)``, as PyTorch's ``at::dropout`` (``input * mask``, so the node
is ``MulBackward0``, the mask a constant); ``dropout1d``/``2d``/``3d`` zero whole channels (one
draw per sample and channel, ATen's ``feature_dropout``); ``alpha_dropout`` and
``feature_alpha_dropout`` keep SELU's mean and variance (``input * a * mask + b``).

The mask is drawn from the default generator (aiograd/_base/_random.py) on the host and moved to the
input's device, so ``aiograd.utils.checkpoint``, which saves and replays that generator's state,
recomputes the same mask. ``p == 0``, ``training=False`` and an empty input return the input
itself, as PyTorch's; ``p == 1`` multiplies by zeros.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._base import _random, _sampling
from .._devices._device import device_type
from .._ops._inplace_util import _dtype_name
from .._ops._registry import op
from .._ops._util import Tensor, not_tensor, wrap
from .._ops.elementwise import MulBackward0, mul
from .._ops.inplace import mul_

__all__ = [
    "alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "dropout_mask", "feature_alpha_dropout",
]


def dropout_mask(input: Tensor, p: float) -> Tensor:
    """The scaled keep-mask, a constant tensor on the input's device, in its dtype."""
    x = input.data
    if p == 1.0:
        host = np.zeros(x.shape, dtype=x.dtype)
    else:
        # torch's ``empty_like(input).bernoulli_(1 - p).div_(1 - p)``: the same draws (in the
        # input's memory order) and the same rounding (a division in the input's dtype)
        strides = tuple(s // x.itemsize for s in x.strides)
        keep = _sampling.bernoulli_scalar(_random.generator(), x.shape, 1.0 - p, strides)
        host = keep.astype(x.dtype) / x.dtype.type(1.0 - p)
    dev = input._device
    data = host if dev.xp is np else device_type(dev.type).to_device(host, dev.index)
    out = wrap(data)
    out._device = dev
    return out


@op(MulBackward0, family="dropout")
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """During training, zero each element with probability ``p`` (drawn from the default
    generator) and scale the others by ``1 / (1 - p)``; the input itself otherwise."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("dropout", input)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.data.size == 0:
        return input
    if input.data.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_dtype_name(input.data.dtype)}")
    mask = dropout_mask(input, p)
    return mul_(input, mask) if inplace else mul(input, mask)


#: SELU's ``alpha * scale`` (ATen's ``alpha_dropout`` constant).
_SELU_ALPHA = 1.7580993408473766


def _noise(input: Tensor, p: float, feature: bool, alpha: bool) -> tuple[Tensor, Tensor | None]:
    """ATen's ``_dropout_impl`` noise: Bernoulli(1 - p) draws shaped as ``input`` (or, for a
    feature dropout, one per sample and channel: ``(N, C, 1, ...)``), then ``/ (1 - p)``, or
    for alpha dropout ``* a`` and the shift ``b``, each step rounded in the input's dtype; on
    the input's device."""
    x = input.data
    dtype = x.dtype
    if feature:
        if x.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape, strides = (*x.shape[:2], *([1] * (x.ndim - 2))), None
    else:
        shape, strides = x.shape, tuple(s // x.itemsize for s in x.strides)
    noise = _sampling.bernoulli_scalar(_random.generator(), shape, 1.0 - p, strides).astype(dtype)
    shift = None
    if alpha:
        a = 1.0 / np.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
        shift = (noise - dtype.type(1)) * dtype.type(_SELU_ALPHA * a) + dtype.type(_SELU_ALPHA * a * p)
        noise *= dtype.type(a)
    else:
        noise /= dtype.type(1.0 - p)
    dev = input._device

    def placed(host: np.ndarray) -> Tensor:
        out = wrap(host if dev.xp is np else device_type(dev.type).to_device(host, dev.index))
        out._device = dev
        return out

    return placed(noise), None if shift is None else placed(shift)


def _dropout_impl(input: Tensor, p: float, training: bool, inplace: bool, feature: bool, alpha: bool) -> Tensor:
    """ATen's ``_dropout_impl``: the input itself when nothing is dropped, times zeros for
    ``p == 1``, else ``input * noise`` (``+ b`` for alpha dropout), in place with ``inplace``."""
    if not isinstance(input, Tensor):
        raise not_tensor("dropout", input)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.data.size == 0:
        return input
    if input.data.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_dtype_name(input.data.dtype)}")
    if p == 1:
        zero = wrap(input._device.xp.zeros((), dtype=input.data.dtype))
        zero._device = input._device
        return mul_(input, zero) if inplace else mul(input, zero)
    noise, shift = _noise(input, p, feature, alpha)
    out = mul_(input, noise) if inplace else mul(input, noise)
    return out if shift is None else out.add_(shift)


def _channelwise(name: str, input: Tensor, p: float, training: bool, inplace: bool, batched_dims: int) -> Tensor:
    """``dropout1d``/``dropout3d``: an unbatched input (one dimension fewer) gets a batch of one."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    batched = input.dim() == batched_dims
    if not batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _dropout_impl(input, p, training, inplace, feature=True, alpha=False)
    if not batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a ``(N, C, L)`` or ``(C, L)`` input with probability ``p`` (one
    draw per sample and channel), scaling the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    return _channelwise("dropout1d", input, p, training, inplace, 3)


def _warn_rank(name: str, dims: int, spatial: int) -> None:
    """torch's deprecation warning for ``dropout2d``/``dropout3d`` of an input of another rank
    (stacklevel 3: the caller of the public function)."""
    if dims not in (spatial + 1, spatial + 2):
        warnings.warn(
            f"{name}: Received a {dims}-D input to {name}, which is deprecated and will result in an error in a "
            "future release. To retain the behavior and silence this warning, please use dropout instead. Note that "
            f"{name} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
            f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
            stacklevel=3,
        )


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a ``(N, C, H, W)`` input with probability ``p``, scaling the rest
    by ``1 / (1 - p)``. As torch's, a 3-D input is taken as ``(N, C, L)`` (with torch's warning)
    and another rank is warned about."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    dims = input.dim()
    _warn_rank("dropout2d", dims, 2)
    if dims == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is desired - "
            "input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will change in a future "
            "release to interpret the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability
    ``p``, scaling the rest by ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    _warn_rank("dropout3d", input.dim(), 3)
    return _channelwise("dropout3d", input, p, training, inplace, 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout (for SELU networks): dropped elements take SELU's negative saturation and
    the result is rescaled so the mean and variance stay; ``training`` is False by default, as
    torch's."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (one draw per sample and channel)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)
