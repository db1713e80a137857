"""torch.nn.functional's ``dropout``: zero each element with probability ``p`` and scale the
rest by ``1 / (1 - p)``, as PyTorch's ``at::dropout`` (``input * mask``, so the node is
``MulBackward0``, the mask a constant).

The mask is drawn from the default generator (aiograd/_base/_random.py) on the host and moved to the
input's device, so ``aiograd.utils.checkpoint``, which saves and replays that generator's state,
recomputes the same mask. ``p == 0``, ``training=False`` and an empty input return the input
itself, as PyTorch's; ``p == 1`` multiplies by zeros.
"""

from __future__ import annotations

import numpy as np

from .._base import _random, _sampling
from .._devices._device import device_type
from .._ops._inplace_util import _dtype_name
from .._ops._registry import op
from .._ops._util import Tensor, not_tensor, wrap
from .._ops.elementwise import MulBackward0, mul
from .._ops.inplace import mul_

__all__ = ["dropout", "dropout_mask"]


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
