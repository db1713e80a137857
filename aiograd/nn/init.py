"""``aiograd.nn.init`` (torch.nn.init): fill a tensor in place, under no_grad, with values drawn
from the default generator (aiograd/_base/_random.py) or the ``generator`` passed in, with
PyTorch's fan computation, gain table and sampling (aiograd/_base/_sampling.py), so that after
the same ``manual_seed`` a fresh layer holds torch's very numbers. A plain numpy ``generator``
is accepted too: then the draws are numpy's."""

from __future__ import annotations

import math
import typing
import warnings

import numpy as np

from .._base import _sampling
from .._base._grad_mode import no_grad as _no_grad
from .._base._random import generator as _default_generator
from .._core._tensor import Tensor as _Tensor
from .._ops.casting import to as _to

if typing.TYPE_CHECKING:
    from typing import Any

    from .._core._tensor import Tensor

__all__ = [
    "calculate_gain", "constant_", "eye_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "orthogonal_", "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]


def _fill(tensor: Tensor, values: Any) -> Tensor:
    """Copy host ``values`` into ``tensor`` in place (onto its device), under no_grad."""
    source = _Tensor._wrap(np.asarray(values, dtype=tensor.data.dtype))
    with _no_grad():
        # onto the tensor's device first: a device whose arrays are not numpy's takes no host array
        tensor.copy_(_to(source, tensor.device))
    return tensor


def _rng(generator: Any) -> np.random.Generator:
    return _default_generator() if generator is None else generator


def _strides(tensor: Tensor) -> tuple[int, ...]:
    data = tensor.data
    return tuple(s // data.itemsize for s in data.strides)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (torch's table: 1 for linear, conv and sigmoid,
    5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu, 3/4 for selu)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    elif nonlinearity == "tanh":
        return 5.0 / 3
    elif nonlinearity == "relu":
        return math.sqrt(2.0)
    elif nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    elif nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.shape[1] * receptive_field_size, tensor.shape[0] * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with values from U(a, b)."""
    return _fill(tensor, _sampling.uniform(_rng(generator), tensor.shape, tensor.data.dtype, a, b, _strides(tensor)))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with values from N(mean, std**2)."""
    return _fill(tensor, _sampling.normal(_rng(generator), tensor.shape, tensor.data.dtype, mean, std, _strides(tensor)))


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator: Any = None
) -> Tensor:
    """Fill with values from N(mean, std**2) truncated to [a, b], by torch's rejection sampling
    (same draws, same arithmetic in the tensor's dtype, so the same numbers after the same seed):
    where the interval holds more than 30% of the mass, normal draws redrawn until inside; else
    uniform candidates on [a, b], each kept where a uniform's log falls below its log density
    relative to the peak."""
    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be incorrect.",
            stacklevel=2,
        )
    rng, shape, dtype, strides = _rng(generator), tensor.shape, tensor.data.dtype, _strides(tensor)
    if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
        lo, hi = dtype.type(a), dtype.type(b)
        result = _sampling.normal(rng, shape, dtype, mean, std, strides)
        while (mask := (result < lo) | (result > hi)).any():
            result = np.where(mask, _sampling.normal(rng, shape, dtype, mean, std, strides), result)
        return _fill(tensor, result)
    mode = max(a, min(mean, b))
    log_peak = dtype.type(-0.5 * ((mode - mean) / std) ** 2)

    def log_density(x: Any) -> Any:  # (torch's sub_, div_, pow_, mul_, sub_, each rounded)
        z = (x - dtype.type(mean)) / dtype.type(std)
        return z * z * dtype.type(-0.5) - log_peak

    def rejected(candidates: Any) -> Any:
        with np.errstate(divide="ignore"):
            return np.log(_sampling.uniform(rng, shape, dtype, 0.0, 1.0, strides)) > log_density(candidates)

    result = _sampling.uniform(rng, shape, dtype, a, b, strides)
    pending = rejected(result)
    while pending.any():
        candidates = _sampling.uniform(rng, shape, dtype, a, b, strides)
        result = np.where(pending, candidates, result)
        pending = np.where(pending, rejected(candidates), pending)
    return _fill(tensor, result)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with _no_grad():
        tensor.fill_(val)
    return tensor


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    with _no_grad():
        tensor.zero_()
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def _xavier_std(tensor: Tensor, gain: float) -> float:
    """Glorot's standard deviation, ``gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return gain * math.sqrt(2.0 / float(fan_in + fan_out))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    a = math.sqrt(3.0) * _xavier_std(tensor, gain)
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    return normal_(tensor, 0.0, _xavier_std(tensor, gain), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    """He's standard deviation, ``gain(nonlinearity, a) / sqrt(fan)``; None, with torch's
    warning (pointing at the kaiming_*_ caller), for a tensor with no elements."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return gain / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He uniform: U(-bound, bound) with bound = gain(nonlinearity, a) * sqrt(3 / fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator: Any = None
) -> Tensor:
    """He normal: N(0, std**2) with std = gain(nonlinearity, a) / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix (QR of a normal draw, signs fixed as torch fixes them), times
    ``gain``; dimensions after the first are flattened."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = _sampling.normal(_rng(generator), (rows, cols), tensor.data.dtype)
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))
