"""More of torch.nn.functional's activations: ``relu6``, ``hardswish``, ``hardsigmoid``,
``logsigmoid``, ``glu``, ``prelu``, ``selu``, ``celu``, ``softsign``, ``tanhshrink``,
``threshold`` and ``softmin``.

Where PyTorch records a dedicated node (``HardswishBackward0``, ``GluBackward0``,
``PreluKernelBackward0``...) so does each here, with PyTorch's formula written in aiograd ops (so
double backward works); ``selu`` records ``EluBackward0`` with PyTorch's scales, ``celu``
``CeluBackward0``. Those PyTorch composes (``relu6`` is ``hardtanh(x, 0, 6)``, ``softsign`` is
``x / (1 + |x|)``, ``tanhshrink`` ``x - tanh(x)``, ``softmin`` ``softmax(-x)``) are composed here
too, and record PyTorch's nodes through the ops they call.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._ops._registry import backward, op, variant
from .._ops._util import Tensor, attach, common_device, edge_of, like, needs_grad, not_tensor, save
from .._ops.elementwise import where
from .._ops.joining import cat
from .._ops.quiet import quietly
from .._ops.softmax import softmax as _softmax
from .._ops.unary_math import sigmoid, tanh
from ._activations import _apply, _elu, _EluBackward0, _kernel_name_error, hardtanh

__all__ = [
    "celu", "glu", "hardsigmoid", "hardswish", "logsigmoid", "prelu", "relu6", "selu", "softmin",
    "softsign", "tanhshrink", "threshold",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_ONE_SIXTH_F = 0.1666666716337204  # float(np.float32(1) / np.float32(6))


def _check(name: str, input: Any) -> None:
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(name, input)


# ------------------------------------------------------------------------------ composed
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(0, x), 6)``: ``hardtanh(input, 0, 6)``, as PyTorch (``HardtanhBackward0``)."""
    _check("relu6", input)
    return hardtanh(input, 0.0, 6.0, inplace)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    _check("softsign", input)
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    _check("tanhshrink", input)
    return input - tanh(input)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``softmax(-x, dim)``; leaving ``dim`` out picks one as PyTorch's deprecated rule does."""
    _check("softmin", input)
    if dim is None:
        warnings.warn(
            "Implicit dimension choice for softmin has been deprecated. Change the call to include dim=X as an argument.",
            UserWarning,
            stacklevel=_stacklevel,
        )
        dim = 0 if input.data.ndim in (0, 1, 3) else 1
    return _softmax(-input, dim, dtype=dtype)


# ------------------------------------------------------------------------------ hardswish, hardsigmoid
@backward(name="HardswishBackward0", saved=("x",), batched=True)
def _HardswishBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """0 below -3, ``x / 3 + 0.5`` up to 3, 1 above (PyTorch's ``hardswish_backward``)."""
    g, x = grads[0], self.x.unpack(self)
    xd = x.data
    return (where(xd < -3.0, 0.0, where(xd <= 3.0, g * (x / 3.0 + 0.5), g)),)


@op(_HardswishBackward0, family="activations")
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    _check("hardswish", input)

    def forward(xp: Any, x: Any) -> Any:
        return x * xp.minimum(xp.maximum(x + 3.0, 0.0), 6.0) / 6.0

    return _apply(input, forward, _HardswishBackward0, inplace, "hardswish_cpu")


@backward(name="HardsigmoidBackward0", saved=("x",), batched=True)
def _HardsigmoidBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``1 / 6`` strictly between -3 and 3, 0 elsewhere."""
    g, x = grads[0], self.x.unpack(self)
    inside = (x.data > -3.0) & (x.data < 3.0)
    return (where(inside, g * _ONE_SIXTH_F, 0.0),)  # (PyTorch's ``1.0f / 6.0f``, a float)


@op(_HardsigmoidBackward0, family="activations")
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``."""
    _check("hardsigmoid", input)

    def forward(xp: Any, x: Any) -> Any:
        return xp.minimum(xp.maximum(x + 3.0, 0.0), 6.0) / 6.0

    return _apply(input, forward, _HardsigmoidBackward0, inplace, "hardsigmoid_cpu")


# ------------------------------------------------------------------------------ logsigmoid
@backward(name="LogSigmoidBackward0", saved=("x",), batched=True)
def _LogSigmoidBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``sigmoid(-x)``."""
    g, x = grads[0], self.x.unpack(self)
    return (g * sigmoid(-x),)


@op(_LogSigmoidBackward0, family="activations")
def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``, without overflow."""
    _check("logsigmoid", input)

    def forward(xp: Any, x: Any) -> Any:
        return xp.minimum(x, 0.0) - xp.log1p(xp.exp(-xp.abs(x)))

    return _apply(input, forward, _LogSigmoidBackward0, False, "log_sigmoid_cpu")


# ------------------------------------------------------------------------------ threshold
@backward(name="ThresholdBackward0", saved=("x",), batched=True)
def _ThresholdBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """The gradient where ``x > threshold``, 0 elsewhere."""
    g, x = grads[0], self.x.unpack(self)
    return (where(x.data <= self.threshold, 0.0, g),)


@op(_ThresholdBackward0, family="activations")
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, ``value`` elsewhere."""
    _check("threshold", input)

    def forward(xp: Any, x: Any) -> Any:
        return xp.where(x <= threshold, value, x)

    if input.data.dtype.kind in "iu" and not inplace:  # (an integer tensor: no gradient)
        return like(forward(input._device.xp, input.data).astype(input.data.dtype), input)
    return _apply(input, forward, _ThresholdBackward0, inplace, "threshold_cpu", threshold=threshold)


# ------------------------------------------------------------------------------ selu, celu
CeluBackward0 = variant("CeluBackward0", _EluBackward0, "``celu``'s: elu's rule with ``input_scale = 1 / alpha``.",
                        module=__name__)


@op(_EluBackward0, family="activations", top_level=False)
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with PyTorch's constants (``EluBackward0``)."""
    _check("selu", input)
    base = _elu(_SELU_ALPHA)

    def forward(xp: Any, x: Any) -> Any:
        return base(xp, x) * _SELU_SCALE

    return _apply(input, forward, _EluBackward0, inplace, "elu_cpu", alpha=_SELU_ALPHA, scale=_SELU_SCALE)


@op(CeluBackward0, family="activations")
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _check("celu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    # torch's forward is ``elu(x, alpha, 1, 1 / alpha)``, its derivative ``elu_backward`` with
    # ``1.0 / alpha.toFloat()``: alpha rounded to float there (so the slope at 0 is not exactly 1)
    input_scale = 1.0 / float(np.float32(alpha))

    def forward(xp: Any, x: Any) -> Any:
        return xp.where(x > 0, x, alpha * xp.expm1(x * (1.0 / alpha)))

    return _apply(input, forward, CeluBackward0, inplace, "elu_cpu", alpha=alpha, input_scale=input_scale)


# ------------------------------------------------------------------------------ glu
@backward(name="GluBackward0", saved=("x",), batched=True)
def _GluBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``[g * sigmoid(b), g * a * sigmoid(b) * (1 - sigmoid(b))]`` along the halved dim."""
    g, x = grads[0], self.x.unpack(self)
    a, b = x.chunk(2, self.dim)
    s = sigmoid(b)
    return (cat([g * s, g * a * s * (1.0 - s)], self.dim + batch if self.dim >= 0 else self.dim),)


@op(_GluBackward0, family="activations")
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)``, ``a`` and ``b`` the two halves of ``input`` along ``dim``."""
    _check("glu", input)
    x = input.data
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got {dim})")
    d = dim % x.ndim
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    if x.dtype.kind != "f":
        raise _kernel_name_error("glu_cpu", x)
    xp = input._device.xp
    h = x.shape[d] // 2
    a, b = xp.split(x, [h], axis=d)
    out = like(quietly(lambda: (a / (1.0 + xp.exp(-b))).astype(x.dtype, copy=False)), input)
    if needs_grad(input):
        node: Any = attach(_GluBackward0((edge_of(input),)), out)
        node.x, node.dim = save(input), d - x.ndim
    return out


# ------------------------------------------------------------------------------ prelu
@backward(name="PreluKernelBackward0", saved=("x", "weight"))
def _PreluKernelBackward0(self: Any, grads: list[Any]) -> tuple[Any, Any]:
    """``g`` where ``x > 0``, ``weight * g`` elsewhere; the weight's: ``x * g`` where ``x <= 0``,
    summed to the weight's shape."""
    g, x, w = grads[0], self.x.unpack(self), self.weight.unpack(self)
    positive = x.data > 0
    gx = where(positive, g, w * g) if self.next_edges[0] is not None else None
    gw = None
    if self.next_edges[1] is not None:
        contrib = where(positive, 0.0, x * g)
        axes = tuple(i for i in range(contrib.data.ndim) if w.data.shape[i] == 1 and contrib.data.shape[i] != 1)
        gw = contrib.sum(axes, keepdim=True) if axes else contrib
    return (gx, gw)


@op(_PreluKernelBackward0, family="activations")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one element or one per
    channel (dim 1)."""
    _check("prelu", input)
    x, w = input.data, weight.data
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}")
    common_device(input, weight)
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.size != 1 and w.size != channels:
        raise RuntimeError(
            f"Mismatch of parameter numbers and input channel size. Found parameter numbers = {w.size} and "
            f"channel size = {channels}."
        )
    if x.dtype.kind != "f":
        raise _kernel_name_error("prelu_cpu", x)
    shape = [1] * x.ndim
    if x.ndim >= 2:
        shape[1] = w.size
    if w.size == 1:
        shape = [1] * x.ndim
    wv = weight.reshape(shape) if x.ndim else weight.reshape(())
    xp = input._device.xp
    out = like(xp.where(x > 0, x, wv.data * x).astype(x.dtype, copy=False), input)
    if needs_grad(input, wv):
        node: Any = attach(_PreluKernelBackward0((edge_of(input), edge_of(wv))), out)
        node.x, node.weight = save(input), save(wv)
    return out
