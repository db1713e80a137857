"""``instance_norm``, as torch.nn.functional's: PyTorch's ``at::instance_norm``, a batch norm of
the input viewed as one sample of ``N*C`` channels (weight, bias and running statistics
repeated ``N`` times), viewed back; the running statistics then take the mean of the ``N``
copies' updates. So it records ``ViewBackward0`` over ``NativeBatchNormBackward0``, as there."""

from __future__ import annotations

import math

from .._ops._inplace_util import _bump
from .._ops._util import Tensor, like, not_tensor
from ._normalization import batch_norm

__all__ = ["instance_norm"]


def instance_norm(
    input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
    weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
    momentum: float = 0.1, eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel of each sample over its spatial dims, then ``* weight + bias``;
    with ``use_input_stats=False``, with the running statistics instead."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("instance_norm", input)
    shape = tuple(input.data.shape)
    if use_input_stats and math.prod(shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size aiograd.Size({list(shape)})")
    b, c = shape[0], shape[1]

    def repeated(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.repeat(b)

    def copy(t: Tensor | None) -> Tensor | None:
        return None if t is None else like(t._device.xp.tile(t.data.reshape(-1), b), t)

    rm, rv = copy(running_mean), copy(running_var)
    viewed = input.reshape(1, b * c, *shape[2:])
    out = batch_norm(viewed, rm, rv, repeated(weight), repeated(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        for stat, tmp in ((running_mean, rm), (running_var, rv)):
            if stat is not None and tmp is not None:
                xp = input._device.xp
                xp.copyto(stat.data, tmp.data.reshape(b, c).mean(0).reshape(stat.data.shape), casting="unsafe")
                _bump(stat)
    return out.view(shape)
