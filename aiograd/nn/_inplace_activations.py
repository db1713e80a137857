"""The rest of torch.nn.functional's names: the in-place activations (``relu_``, ``elu_``,
``leaky_relu_``, ``hardtanh_``, ``selu_``, ``celu_``, ``threshold_``), ``rrelu``/``rrelu_``, the
``*_with_indices`` pooling forms and ``pdist``.

``elu_``, ``leaky_relu_``, ``hardtanh_`` and ``relu_`` are the ``inplace=True`` forms that exist
(``EluBackward1``, ``LeakyReluBackward1``, ``HardtanhBackward0``, ``ReluBackward0``, as torch's).
``selu_``, ``celu_`` and ``threshold_`` record torch's in-place nodes (``EluBackward1``,
``CeluBackward1``, ``ThresholdBackward1``): the first two differentiate through the result as
ATen's ``elu_backward(..., is_result=True)``; ``threshold_``'s mask is the input's, as torch's
gradient shows (0 where the input was at most ``threshold``, whatever ``value``).

``rrelu`` records ``RreluWithNoiseBackward0`` (``RreluWithNoiseBackward1`` in place): the
gradient is ``grad * noise`` while training (``noise`` the slopes drawn, 1 where the input is
positive), ``leaky_relu``'s with the slope ``(lower + upper) / 2`` otherwise, as ATen's
``rrelu_with_noise_backward``. Training draws one slope per non-positive element, in memory
order, as ATen's ``_rrelu_with_noise_train``: ``uniform_real_distribution<double>(lower,
upper)`` from the default generator (53 bits of ``random64()``, ``x * (upper - lower) + lower``
rounded twice: that kernel is not compiled with FMA), the bounds in the input's ``opmath``
type, the slope rounded to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base import _random, _sampling
from .._ops._inplace_util import _alias, _bump, _commit, _recording
from .._ops._registry import backward, variant
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from .._ops.distances import pdist  # (re-exported: aiograd.pdist)
from .._ops.elementwise import where
from .._ops.quiet import quietly
from ._activations import (
    _ELU_NEGATIVE,
    _LEAKY_NEGATIVE,
    _check_overlap,
    _kernel_name_error,
    _result_inplace,
    elu,
    hardtanh,
    leaky_relu,
)
from ._activations_extra import _SELU_ALPHA, _SELU_SCALE
from ._pooling import max_pool2d
from ._pooling1d import adaptive_max_pool1d, adaptive_max_pool2d, max_pool1d
from ._pooling3d import adaptive_max_pool3d, max_pool3d

__all__ = [
    "relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_", "rrelu", "rrelu_",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "pdist",
]


def _check(name: str, input: Any) -> None:
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(name, input)


# ------------------------------------------------------------------------------ in-place activations
def relu_(input: Tensor) -> Tensor:
    """``relu`` in place (``ReluBackward0``)."""
    _check("relu_", input)
    return input.relu_()


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` in place (``EluBackward1``)."""
    return elu(input, alpha, True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` in place (``LeakyReluBackward1``)."""
    return leaky_relu(input, negative_slope, True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` in place (``HardtanhBackward0``)."""
    return hardtanh(input, min_val, max_val, True)


@backward(name="EluBackward1", saved=("result",), batched=True)
def _ScaledEluBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """ATen's ``elu_backward`` through the result: ``input_scale * (result + alpha * scale)``
    where ``result <= 0``, ``scale`` elsewhere; a negative ``alpha`` is refused, as torch's."""
    if self.alpha < 0:
        raise RuntimeError(_ELU_NEGATIVE)
    g, y = grads[0], self.result.unpack(self)
    negative = (y + self.alpha * self.scale) * self.input_scale
    return (g * where(y.data <= 0, negative, self.scale),)


_CeluBackward1 = variant("CeluBackward1", _ScaledEluBackward1, "``celu_``'s: ``input_scale = 1 / alpha``.",
                         module=__name__)


def selu_(input: Tensor) -> Tensor:
    """``selu`` in place (``EluBackward1``)."""
    _check("selu_", input)

    def forward(xp: Any, x: Any) -> Any:
        return xp.where(x >= 0, x, _SELU_ALPHA * xp.expm1(x)) * _SELU_SCALE

    return _result_inplace(input, forward, _ScaledEluBackward1, "elu_cpu", alpha=_SELU_ALPHA, scale=_SELU_SCALE,
                           input_scale=1.0)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` in place (``CeluBackward1``)."""
    _check("celu_", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    input_scale = 1.0 / float(np.float32(alpha))  # (as celu's: alpha rounded to float)

    def forward(xp: Any, x: Any) -> Any:
        return xp.where(x > 0, x, alpha * xp.expm1(x * (1.0 / alpha)))

    return _result_inplace(input, forward, _CeluBackward1, "elu_cpu", alpha=alpha, scale=1.0, input_scale=input_scale)


@backward(name="ThresholdBackward1", batched=True)
def _ThresholdBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """0 where the input was at most ``threshold``, the gradient elsewhere (torch's, whatever
    ``value`` wrote there: the mask is the input's, kept as a constant)."""
    g = grads[0]
    return (where(self.kept, g, 0.0),)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` in place (``ThresholdBackward1``)."""
    _check("threshold_", input)
    kept = None

    def forward(xp: Any, x: Any) -> Any:
        nonlocal kept
        kept = ~(x <= threshold)
        return xp.where(x <= threshold, value, x)

    out = _result_inplace(input, forward, _ThresholdBackward1, "threshold_cpu", threshold=threshold)
    if out.grad_fn is not None and type(out.grad_fn).__name__ == "ThresholdBackward1":
        out.grad_fn.kept = kept  # type: ignore[attr-defined]
    return out


# ------------------------------------------------------------------------------ rrelu
@backward(name="RreluWithNoiseBackward0", batched=True)
def _RreluWithNoiseBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``grad * factor``: the slopes drawn (1 where positive) while training, else 1 where the
    input is positive and ``(lower + upper) / 2`` elsewhere (a constant)."""
    if self.negative_check and self.slope < 0:
        raise RuntimeError(_LEAKY_NEGATIVE)
    g = grads[0]
    return (g * self.factor.astype(g.data.dtype, copy=False),)


_RreluWithNoiseBackward1 = variant("RreluWithNoiseBackward1", _RreluWithNoiseBackward0,
                                   "``rrelu_``'s (through the result).", module=__name__)


def _slopes(n: int, lower: float, upper: float, dtype: np.dtype[Any]) -> Any:
    """``n`` slopes as ATen's ``_rrelu_with_noise_train`` draws them, in float64."""
    gen = _random.resolve(None)
    if dtype == np.float64:
        lo, hi = float(lower), float(upper)
    else:  # opmath: float
        lo, hi = float(np.float32(lower)), float(np.float32(upper))
    if not isinstance(gen, _random.Generator):
        return gen.uniform(lo, hi, n)
    x = _sampling._unit(gen, n, 53)
    return x * (hi - lo) + lo


def _rrelu(input: Tensor, lower: float, upper: float, training: bool, inplace: bool) -> Tensor:
    _check("rrelu_" if inplace else "rrelu", input)
    if not float(lower) <= float(upper):
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    x = input.data
    if inplace:
        _check_overlap(x)
    if x.dtype.kind != "f":
        raise _kernel_name_error("rrelu_with_noise_out_cpu" if training else "leaky_relu_cpu", x)
    recording = _recording(input) if inplace else needs_grad(input)
    xp = input._device.xp
    slope = (lower + upper) / 2
    if training:
        flat = np.asarray(x).reshape(-1)
        negative = ~(flat > 0)
        noise = np.ones(flat.shape, dtype=np.float64)
        noise[negative] = _slopes(int(negative.sum()), lower, upper, x.dtype)
        opmath = np.float64 if x.dtype == np.float64 else np.float32
        slopes = noise.astype(opmath).reshape(x.shape)
        data = quietly(lambda: (x.astype(opmath, copy=False) * slopes).astype(x.dtype, copy=False))
        factor: Any = xp.asarray(slopes)
    else:
        data = quietly(lambda: xp.where(x > 0, x, x * slope).astype(x.dtype, copy=False))
        factor = None
    # torch's backward trains on the noise only when the bounds differ (by more than 1e-6)
    noisy = training and float(np.float32(upper)) - float(np.float32(lower)) > 1e-6
    if inplace and not recording:
        xp.copyto(x, data)
        _bump(input)
        return input
    old = _alias(input, False) if inplace else input
    out = like(data, input)
    if recording:
        node: Any = attach((_RreluWithNoiseBackward1 if inplace else _RreluWithNoiseBackward0)((edge_of(old),)), out)
        if not noisy:
            factor = xp.where((data if inplace else x) > 0, 1.0, slope).astype(x.dtype)
        node.factor, node.slope, node.negative_check = factor, slope, inplace and not noisy
    if inplace:
        _commit(input, out)
        return input
    return out


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """``x`` where positive, ``a * x`` elsewhere: ``a`` drawn from U(lower, upper) per element
    while training, ``(lower + upper) / 2`` otherwise."""
    return _rrelu(input, lower, upper, training, inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """``rrelu`` in place (``RreluWithNoiseBackward1``)."""
    return _rrelu(input, lower, upper, training, True)


# ------------------------------------------------------------------------------ pooling with indices, pdist
def max_pool1d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool1d``'s values and indices (``return_indices`` is ignored, as in torch)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)  # type: ignore[no-any-return]


def max_pool2d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool2d``'s values and indices (``return_indices`` is ignored, as in torch)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)  # type: ignore[no-any-return]


def max_pool3d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool3d``'s values and indices (``return_indices`` is ignored, as in torch)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)  # type: ignore[no-any-return]


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool1d``'s values and indices."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)  # type: ignore[no-any-return]


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool2d``'s values and indices."""
    return adaptive_max_pool2d(input, output_size, return_indices=True)  # type: ignore[no-any-return]


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool3d``'s values and indices."""
    return adaptive_max_pool3d(input, output_size, return_indices=True)  # type: ignore[no-any-return]

