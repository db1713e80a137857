"""torch.nn.functional's pointwise activations: ``gelu`` (exact and tanh), ``silu``, ``elu``,
``leaky_relu``, ``softplus``, ``hardtanh``, ``mish``, with their ``inplace=`` forms.

Each records PyTorch's node (``GeluBackward0``, ...); the forward computes on the input's arrays
through its device's array module, and each backward is PyTorch's formula (its
``*_backward`` kernels) written with aiograd ops, so double backward works. Where a formula
branches on the input (``x > 0``), the branch is a constant mask, as in PyTorch. Exact GELU keeps
the cdf its forward computed on its node, so that a first-order backward evaluates no second erf
(see the gelu section).

In-place forms (``inplace=True``) write into the input and record the same node on its old
values (PyTorch's ``EluBackward1`` and ``LeakyReluBackward1`` for ``elu_``/``leaky_relu_``, which
differentiate through the result, as PyTorch's do, with its error for a negative slope).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._ops._inplace_util import (
    OVERLAP_ERROR,
    _alias,
    _bump,
    _commit,
    _dtype_name,
    _overlapping,
    _recording,
)
from .._ops._registry import backward, op
from .._ops._util import Tensor, attach, edge_of, first_order, like, needs_grad, not_tensor, save
from .._ops.elementwise import where
from .._ops.quiet import quietly
from .._ops.rebase import _save_result
from .._ops.special import _CHUNK, _erf_rational_into, erf, erf_of_array
from .._ops.unary_math import exp, log1p, sigmoid, tanh

__all__ = ["elu", "gelu", "hardtanh", "leaky_relu", "mish", "silu", "softplus"]

_SQRT1_2 = 0.7071067811865476  # M_SQRT1_2
_GELU_PDF = 1.1283791670955126 * _SQRT1_2 * 0.5  # M_2_SQRTPI * M_SQRT1_2 * 0.5
_TANH_BETA = math.sqrt(2.0) * 1.1283791670955126 * 0.5  # PyTorch's kBeta, sqrt(2 / pi)
_TANH_KAPPA = 0.044715

_ELU_NEGATIVE = (
    "In-place elu backward calculation is triggered with a negative slope which is not supported. "
    "This is caused by calling in-place forward function with a negative slope, please call "
    "out-of-place version instead."
)
_LEAKY_NEGATIVE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
    "supported. This is caused by calling in-place forward function with a negative slope, please "
    "call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you "
    "do require supporting in-place leakRelu backward calculation with negative slope"
)


def _kernel_name_error(kernel: str, x: Any) -> NotImplementedError:
    """PyTorch's error for a kernel that has no integer version."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(x.dtype)}\'')


def _check_overlap(x: Any) -> None:
    """PyTorch's refusal to write in place into a tensor whose elements share memory (an
    expanded one), before any other check."""
    if type(x) is np.ndarray and not x.flags.writeable and _overlapping(x):
        raise RuntimeError(OVERLAP_ERROR)


def _apply(
    input: Tensor,
    forward: Callable[[Any, Any], Any],
    node_cls: type[Any],
    inplace: bool,
    kernel: str,
    **attrs: Any,
) -> Tensor:
    """Run an activation: ``forward(xp, array)`` on the input's data, the node recorded on the
    input (saved as ``x``), or written into the input when ``inplace``."""
    x = input.data
    if inplace:
        _check_overlap(x)
    if x.dtype.kind != "f":
        raise _kernel_name_error(kernel, x)
    xp = input._device.xp
    if inplace:
        if _recording(input):
            old = _alias(input, True)
            _commit(input, _apply(old, forward, node_cls, False, kernel, **attrs))
            return input
        xp.copyto(x, quietly(forward, xp, x))
        _bump(input)
        return input
    out = like(quietly(forward, xp, x).astype(x.dtype, copy=False), input)
    if needs_grad(input):
        node: Any = attach(node_cls((edge_of(input),)), out)
        node.x = save(input)
        for key, value in attrs.items():
            setattr(node, key, value)
    return out


# ------------------------------------------------------------------------------ gelu
# Exact GELU computes ``cdf = 0.5 * (1 + erf(x / sqrt(2)))`` once: the forward keeps it on its
# node, and a first-order backward (grad mode off) reuses it, on arrays, instead of a second erf.
# A float32 input runs in chunks of _CHUNK elements (each pass in cache, in place), with
# float32's erf (aiograd/_ops/special.py). The roundings are torch's float kernel's:
# ``(x * 0.5) * (1 + erf(x * M_SQRT1_2))`` and ``dy * (cdf + x * (exp(x * x * -0.5) * kBeta))``.
def _flat(xp: Any, a: Any) -> Any:
    return xp.ascontiguousarray(a).reshape(-1)


def _spans(n: int) -> Any:
    return ((start, min(start + _CHUNK, n)) for start in range(0, n, _CHUNK))


def _gelu_none_and_cdf(xp: Any, x: Any) -> tuple[Any, Any]:
    """Exact GELU of the array ``x`` and its ``cdf``, both in ``x``'s dtype."""
    if x.dtype != xp.float32:
        # (asarray: a 0-dim input's product is a numpy scalar, which erf cannot fill in)
        one_plus_erf = erf_of_array(xp, xp.asarray(x * _SQRT1_2)) + 1.0
        return x * 0.5 * one_plus_erf, one_plus_erf * 0.5
    flat = _flat(xp, x)
    out, cdf = xp.empty_like(flat), xp.empty_like(flat)
    buffers = tuple(xp.empty((min(flat.shape[0], _CHUNK),), dtype=xp.float64) for _ in range(4))
    for start, stop in _spans(flat.shape[0]):
        xs, o, c = flat[start:stop], out[start:stop], cdf[start:stop]
        xp.multiply(xs, _SQRT1_2, out=o)  # (o holds the scaled input until the end)
        _erf_rational_into(xp, o, c, tuple(b[: stop - start] for b in buffers))  # type: ignore[arg-type]
        c += 1.0
        xp.multiply(xs, 0.5, out=o)
        o *= c
        c *= 0.5
    return out.reshape(x.shape), cdf.reshape(x.shape)


def _gelu_grad_from_cdf(xp: Any, g: Any, x: Any, cdf: Any) -> Any:
    """``g * (cdf + x * pdf)`` on arrays, in ``x``'s dtype, chunk by chunk (``g`` multiplied in
    its chunks too when it has ``x``'s shape; a batched ``g``, with leading dims, after)."""
    fused = g.shape == x.shape
    xf, cf = _flat(xp, x), _flat(xp, cdf)
    gf = _flat(xp, g) if fused else None
    out = xp.empty(xf.shape, dtype=x.dtype)
    for start, stop in _spans(xf.shape[0]):
        xs, o = xf[start:stop], out[start:stop]
        xp.multiply(xs, xs, out=o)
        o *= -0.5
        xp.exp(o, out=o)
        o *= _GELU_PDF
        o *= xs
        o += cf[start:stop]
        if gf is not None:
            xp.multiply(o, gf[start:stop], out=o, casting="same_kind")
    return out.reshape(x.shape) if fused else g * out.reshape(x.shape)


def _gelu_tanh(xp: Any, x: Any) -> Any:
    if x.ndim and x.dtype in (xp.float32, xp.float64):
        return _gelu_tanh_chunked(xp, x)
    inner = _TANH_BETA * (x + _TANH_KAPPA * x * x * x)
    return 0.5 * x * (1.0 + xp.tanh(inner))


# The tanh GELU on float32/float64 arrays, chunk by chunk in place (each pass in cache), in
# torch's order: ``inner = kBeta * (x + kKappa * x^3)``, ``0.5 * x * (1 + tanh(inner))``, and
# for the gradient ``dy * (0.5 * (1 + t) + 0.5 * x * (1 - t^2) * kBeta * (1 + 3 kKappa x^2))``.
def _gelu_tanh_chunked(xp: Any, x: Any) -> Any:
    flat = _flat(xp, x)
    out = xp.empty_like(flat)
    t = xp.empty((min(flat.shape[0], _CHUNK),), dtype=flat.dtype)
    for start, stop in _spans(flat.shape[0]):
        xs, o, b = flat[start:stop], out[start:stop], t[: stop - start]
        xp.multiply(xs, xs, out=b)
        b *= xs
        b *= _TANH_KAPPA
        b += xs
        b *= _TANH_BETA
        xp.tanh(b, out=b)
        b += 1.0
        xp.multiply(xs, 0.5, out=o)
        o *= b
    return out.reshape(x.shape)


def _gelu_tanh_grad(xp: Any, g: Any, x: Any) -> Any:
    """The tanh GELU's gradient ``g * d gelu(x) / dx`` on arrays of ``x``'s shape and dtype."""
    xf, gf = _flat(xp, x), _flat(xp, g)
    out = xp.empty_like(xf)
    n = min(xf.shape[0], _CHUNK)
    sq, th = xp.empty((n,), dtype=xf.dtype), xp.empty((n,), dtype=xf.dtype)
    for start, stop in _spans(xf.shape[0]):
        xs, o, a, b = xf[start:stop], out[start:stop], sq[: stop - start], th[: stop - start]
        xp.multiply(xs, xs, out=a)  # x^2
        xp.multiply(a, xs, out=b)
        b *= _TANH_KAPPA
        b += xs
        b *= _TANH_BETA
        xp.tanh(b, out=b)  # t
        a *= 3.0 * _TANH_KAPPA
        a += 1.0
        a *= _TANH_BETA  # the inner's derivative
        xp.multiply(b, b, out=o)
        xp.subtract(1.0, o, out=o)
        o *= a
        o *= xs
        o *= 0.5  # 0.5 x * (1 - t^2) * inner'
        b += 1.0
        b *= 0.5
        o += b
        o *= gf[start:stop]
    return out.reshape(x.shape)


@backward(name="GeluBackward0", saved=("x",), batched=True)
def _GeluBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """PyTorch's ``GeluBackwardKernelImpl``: ``cdf + x * pdf`` (exact), or the derivative of
    ``0.5 x (1 + tanh(inner))`` (tanh). At first order the exact one reuses the forward's cdf;
    recorded (create_graph), it recomputes it with aiograd ops, so it is differentiable."""
    g, x = grads[0], self.x.unpack(self)
    if self.approximate == "tanh":
        gd, xd = g.data, x.data
        if (first_order() and gd.dtype == xd.dtype and gd.shape == xd.shape and xd.ndim
                and xd.dtype in (np.float32, np.float64)):
            return (like(quietly(_gelu_tanh_grad, g._device.xp, gd, xd), g),)
        inner = (x + x * x * x * _TANH_KAPPA) * _TANH_BETA
        t = tanh(inner)
        right_derivative = (1.0 - t * t) * ((x * x * (3.0 * _TANH_KAPPA) + 1.0) * _TANH_BETA)
        return (g * ((t + 1.0) * 0.5 + x * 0.5 * right_derivative),)
    if first_order() and g.data.dtype == x.data.dtype:
        return (like(quietly(_gelu_grad_from_cdf, g._device.xp, g.data, x.data, self.cdf), g),)
    cdf = (erf(x * _SQRT1_2) + 1.0) * 0.5
    pdf = exp(x * x * -0.5) * _GELU_PDF
    return (g * (cdf + x * pdf),)


def _release_variables_and_cdf(self: Any) -> None:
    """Free the saved input and, with it, the forward's cdf (an array the input's size)."""
    super(_GeluBackward0, self).release_variables()
    self.cdf = None


_GeluBackward0.release_variables = _release_variables_and_cdf  # type: ignore[method-assign]


@op(_GeluBackward0, family="activations")
def gelu(input: Tensor, *, approximate: str = "none") -> Tensor:
    """``x * Phi(x)``, Phi the standard normal CDF; ``approximate='tanh'`` uses
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("gelu", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if approximate == "tanh":
        return _apply(input, _gelu_tanh, _GeluBackward0, False, "GeluKernelImpl", approximate=approximate)
    x = input.data
    if x.dtype.kind != "f":
        raise _kernel_name_error("GeluKernelImpl", x)
    data, cdf = quietly(_gelu_none_and_cdf, input._device.xp, x)
    out = like(data, input)
    if needs_grad(input):
        node: Any = attach(_GeluBackward0((edge_of(input),)), out)
        node.x = save(input)
        node.approximate = approximate
        node.cdf = cdf
    return out


# ------------------------------------------------------------------------------ silu, mish
def _silu(xp: Any, x: Any) -> Any:
    return x / (1.0 + xp.exp(-x))


@backward(name="SiluBackward0", saved=("x",), batched=True)
def _SiluBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``sigmoid(x) * (1 + x * (1 - sigmoid(x)))``."""
    g, x = grads[0], self.x.unpack(self)
    s = sigmoid(x)
    return (g * (s * (x * (1.0 - s) + 1.0)),)


@op(_SiluBackward0, family="activations")
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (the swish)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("silu", input)
    return _apply(input, _silu, _SiluBackward0, inplace, "silu_cpu")


def _mish(xp: Any, x: Any) -> Any:
    return x * xp.tanh(xp.log1p(xp.exp(x)))


@backward(name="MishBackward0", saved=("x",), batched=True)
def _MishBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``tanh(softplus(x)) + x * sigmoid(x) * (1 - tanh(softplus(x))**2)``."""
    g, x = grads[0], self.x.unpack(self)
    t = tanh(log1p(exp(x)))
    return (g * (t + x * sigmoid(x) * (1.0 - t * t)),)


@op(_MishBackward0, family="activations")
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("mish", input)
    return _apply(input, _mish, _MishBackward0, inplace, "mish_cpu")


# ------------------------------------------------------------------------------ elu
@backward(name="EluBackward0", saved=("x",), batched=True)
def _EluBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``alpha * exp(x)`` where ``x <= 0``, 1 elsewhere (NaN included: PyTorch's formula, and
    its scalar loop; its vectorised loop gives NaN there)."""
    g, x = grads[0], self.x.unpack(self)
    scale, input_scale = getattr(self, "scale", 1.0), getattr(self, "input_scale", 1.0)
    if scale == 1.0 and input_scale == 1.0:
        return (g * where(x.data <= 0, exp(x) * self.alpha, 1.0),)
    # (selu's and celu's: PyTorch's elu_backward with its scale and input_scale)
    inner = exp(x * input_scale) if input_scale != 1.0 else exp(x)
    return (g * where(x.data <= 0, inner * (self.alpha * scale * input_scale), scale),)


@backward(name="EluBackward1", saved=("result",), batched=True)
def _EluBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``elu_``'s, through the result: ``result + alpha`` where ``result <= 0``, 1 elsewhere."""
    if self.alpha < 0:
        raise RuntimeError(_ELU_NEGATIVE)
    g, y = grads[0], self.result.unpack(self)
    return (g * where(y.data <= 0, y + self.alpha, 1.0),)


def _elu(alpha: float) -> Callable[[Any, Any], Any]:
    def forward(xp: Any, x: Any) -> Any:
        # (a zero keeps its sign, as PyTorch's, whatever alpha: NaN, negative)
        return xp.where(x >= 0, x, alpha * xp.expm1(x))

    return forward


@op(_EluBackward0, _EluBackward1, family="activations")
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("elu", input)
    if inplace:
        return _result_inplace(input, _elu(alpha), _EluBackward1, "elu_cpu", alpha=alpha)
    return _apply(input, _elu(alpha), _EluBackward0, False, "elu_cpu", alpha=alpha)


def _result_inplace(input: Tensor, forward: Callable[[Any, Any], Any], node_cls: type[Any], kernel: str, **attrs: Any) -> Tensor:
    """``elu_``/``leaky_relu_``: written in place, the node differentiating through the result."""
    x = input.data
    _check_overlap(x)
    if x.dtype.kind != "f":
        raise _kernel_name_error(kernel, x)
    xp = input._device.xp
    if not _recording(input):
        xp.copyto(x, quietly(forward, xp, x))
        _bump(input)
        return input
    old = _alias(input, False)
    out = like(quietly(forward, xp, x).astype(x.dtype, copy=False), input)
    node: Any = attach(node_cls((edge_of(old),)), out)
    for key, value in attrs.items():
        setattr(node, key, value)
    _commit(input, out)
    node.result = _save_result(input)
    return input


# ------------------------------------------------------------------------------ leaky_relu
@backward(name="LeakyReluBackward0", saved=("x",), batched=True)
def _LeakyReluBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """1 where ``x > 0``, ``negative_slope`` elsewhere."""
    g, x = grads[0], self.x.unpack(self)
    positive = x.data > 0
    return (g * _mask_values(positive, 1.0, self.negative_slope, x),)


@backward(name="LeakyReluBackward1", saved=("result",), batched=True)
def _LeakyReluBackward1(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``leaky_relu_``'s, through the result (the same mask for a non-negative slope)."""
    if self.negative_slope < 0:
        raise RuntimeError(_LEAKY_NEGATIVE)
    g, y = grads[0], self.result.unpack(self)
    return (g * _mask_values(y.data > 0, 1.0, self.negative_slope, y),)


def _mask_values(mask: Any, yes: float, no: float, like_tensor: Tensor) -> Any:
    """A constant array ``yes`` where ``mask``, ``no`` elsewhere, in the tensor's dtype."""
    xp = like_tensor._device.xp
    return xp.where(mask, yes, no).astype(like_tensor.data.dtype, copy=False)


def _leaky(slope: float) -> Callable[[Any, Any], Any]:
    def forward(xp: Any, x: Any) -> Any:
        return xp.where(x > 0, x, x * slope)

    return forward


@op(_LeakyReluBackward0, _LeakyReluBackward1, family="activations")
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("leaky_relu", input)
    if inplace:
        return _result_inplace(input, _leaky(negative_slope), _LeakyReluBackward1, "leaky_relu_cpu",
                               negative_slope=negative_slope)
    return _apply(input, _leaky(negative_slope), _LeakyReluBackward0, False, "leaky_relu_cpu",
                  negative_slope=negative_slope)


# ------------------------------------------------------------------------------ softplus
@backward(name="SoftplusBackward0", saved=("x",), batched=True)
def _SoftplusBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """``z / (z + 1)``, ``z = exp(beta x)``, where ``beta x <= threshold``; 1 above."""
    g, x = grads[0], self.x.unpack(self)
    z = exp(x * self.beta)
    return (g * where((x.data * self.beta) > self.threshold, 1.0, z / (z + 1.0)),)


@op(_SoftplusBackward0, family="activations")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, and ``x`` itself where ``beta x > threshold``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("softplus", input)

    def forward(xp: Any, x: Any) -> Any:
        scaled = x * beta
        return xp.where(scaled > threshold, x, xp.log1p(xp.exp(scaled)) / beta)

    return _apply(input, forward, _SoftplusBackward0, False, "softplus_cpu", beta=beta, threshold=threshold)


# ------------------------------------------------------------------------------ hardtanh
@backward(name="HardtanhBackward0", saved=("x",), batched=True)
def _HardtanhBackward0(self: Any, grads: list[Any], batch: int = 0) -> tuple[Any]:
    """0 on and outside the bounds, 1 elsewhere (NaN included: PyTorch's formula, and its scalar
    loop; its vectorised loop gives 0 there)."""
    g, x = grads[0], self.x.unpack(self)
    outside = (x.data <= self.min_val) | (x.data >= self.max_val)
    return (where(outside, 0.0, g),)


@op(_HardtanhBackward0, family="activations")
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` clamped to ``[min_val, max_val]``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("hardtanh", input)
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")

    def forward(xp: Any, x: Any) -> Any:
        return xp.minimum(xp.maximum(x, min_val), max_val)

    if input.data.dtype.kind in "biu":
        return _hardtanh_integer(input, min_val, max_val, inplace)
    return _apply(input, forward, _HardtanhBackward0, inplace, "hardtanh_cpu", min_val=min_val, max_val=max_val)


_C_INT_NAMES = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t", "uint8": "uint8_t"}


def _hardtanh_integer(input: Tensor, min_val: float, max_val: float, inplace: bool) -> Tensor:
    """PyTorch's hardtanh of an integer tensor: a clamp to the limits converted to its type
    (truncated); Bool, and negative limits for an unsigned type, are refused."""
    x = input.data
    if x.dtype.kind == "b":
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if x.dtype.kind == "u" and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    info = np.iinfo(x.dtype)
    limits = []
    for v in (min_val, max_val):
        if not (info.min <= v <= info.max):
            name = _C_INT_NAMES.get(x.dtype.name, x.dtype.name)
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        limits.append(int(v))
    xp = input._device.xp
    result = xp.clip(x, limits[0], limits[1]).astype(x.dtype, copy=False)
    if inplace:
        _check_overlap(x)
        xp.copyto(x, result)
        _bump(input)
        return input
    return like(result, input)
