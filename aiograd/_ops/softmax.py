"""The log-sum-exp family: logsumexp, softmax, log_softmax, each computed without overflow
(shifted by the maximum along the reduced dims), with backward formulas in aiograd ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._reduce_util import _dtype_name, _one_dim, _reduced_shape, axes_of, expand_reduced
from ._registry import backward, op
from ._util import (
    CPU,
    Tensor,
    attach,
    edge_of,
    first_order,
    like,
    needs_grad,
    not_tensor,
    save,
    wrap,
)
from .batching import shift_axes
from .quiet import quietly

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["logsumexp", "softmax", "log_softmax"]


# ------------------------------------------------------------------------------ logsumexp
@backward(saved=("x", "result"), batched=True)
def LogsumexpBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    x, result = self.x.unpack(self), self.result.unpack(self)
    shape = x.data.shape
    g = expand_reduced(grads[0], shape, self.axes, self.keepdim)
    return (g * (x - expand_reduced(result, shape, self.axes, self.keepdim)).exp(),)


def _stable_max(xp: Any, data: Any, axes: tuple[int, ...] | None) -> Any:
    """The max over ``axes`` (kept), with infinities replaced by 0 so that shifting is safe."""
    if data.size == 0:
        return xp.zeros(_reduced_shape(data.shape, axes, True), dtype=data.dtype)
    m = data.max(axis=axes, keepdims=True)
    return xp.where(xp.isinf(m), 0, m).astype(data.dtype, copy=False)


@op(LogsumexpBackward0)
def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))``, computed without overflow; integer inputs give float32."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("logsumexp", input)
    if input.data.dtype.kind != "f":
        input = like(input.data.astype(np.float32), input)
    data, xp = input.data, input._device.xp
    axes = axes_of(dim, data.ndim)
    m = _stable_max(xp, data, axes)
    res = quietly(lambda: xp.log(xp.exp(data - m).sum(axis=axes, keepdims=True)) + m)
    out = like(res if keepdim else res.reshape(_reduced_shape(data.shape, axes, False)), input)
    if needs_grad(input):
        node = attach(LogsumexpBackward0((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.axes, node.keepdim = axes, keepdim
    return out


# ------------------------------------------------------------------------------ softmax
def _softmax_input(input: Tensor, dim: Any, dtype: Any, fname: str) -> tuple[Tensor, tuple[int, ...]]:
    if dtype is not None:
        input = input.to(dtype)
    data = input.data
    axes = _one_dim(dim, data.ndim, fname)
    if data.dtype.kind != "f" and data.size:  # (PyTorch returns an empty integer input as it is)
        kernel = f"{fname}_lastdim_kernel_impl" if not axes or axes[0] == data.ndim - 1 else f"{fname}_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(data.dtype)}\'')
    return input, axes


def _softmax_array(xp: Any, data: Any, axes: tuple[int, ...]) -> Any:
    if not data.size:
        return data.copy()
    if not data.ndim:  # (numpy's 0-dim results are scalars: no ``out=``)
        e = xp.exp(data - data.max(axis=axes, keepdims=True))
        return e / e.sum(axis=axes, keepdims=True)
    return _softmax_shifted(xp, data, data.max(axis=axes, keepdims=True), axes)


def _softmax_vjp(xp: Any, gd: Any, y: Any, axes: tuple[int, ...]) -> Any:
    """``y * (g - sum(g * y))`` on arrays (torch's order), with one temporary."""
    if not gd.ndim or gd.shape != y.shape:
        return y * (gd - (gd * y).sum(axes, keepdims=True))
    gy = xp.multiply(gd, y)
    s = gy.sum(axes, keepdims=True)
    out = xp.subtract(gd, s, out=gy)
    out *= y
    return out


@backward(saved=("result",), batched=True)
def SoftmaxBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    y, g = self.result.unpack(self), grads[0]
    axes = shift_axes(self.axes, batch)
    if first_order() and g.data.dtype == y.data.dtype:
        return (like(quietly(_softmax_vjp, g._device.xp, g.data, y.data, axes), g),)
    return (y * (g - (g * y).sum(axes, keepdim=True)),)


def _softmax_shifted(xp: Any, data: Any, peak: Any, axes: tuple[int, ...]) -> Any:
    """Softmax of ``data`` (at least 1-dim) over ``axes``, its maxima there ``peak`` (kept dims)."""
    e = xp.subtract(data, peak)  # (a new array: exp'd in place)
    xp.exp(e, out=e)
    e /= e.sum(axis=axes, keepdims=True)
    return e


def softmax_last_with_max(input: Tensor, peak: Any) -> Tensor:
    """``softmax(input, -1)`` of a float tensor whose row maxima ``peak`` (kept dims, all
    finite) the caller has computed already (attention's safe softmax): the same node."""
    xp, axes = input._device.xp, (input.data.ndim - 1,)
    out = like(quietly(_softmax_shifted, xp, input.data, peak, axes), input)
    if needs_grad(input):
        node = attach(SoftmaxBackward0((edge_of(input),)), out)
        node.result, node.axes = save(out, is_output=True), axes
    return out


@op(SoftmaxBackward0)
def softmax(input: Tensor, dim: int, dtype: DTypeLike | None = None) -> Tensor:
    """``exp(x) / sum(exp(x), dim)``, computed without overflow (``dtype`` casts first)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("softmax", input)
    input, axes = _softmax_input(input, dim, dtype, "softmax")
    data, xp = input.data, input._device.xp
    out = like(quietly(_softmax_array, xp, data, axes), input)
    if needs_grad(input):
        node = attach(SoftmaxBackward0((edge_of(input),)), out)
        node.result, node.axes = save(out, is_output=True), axes
    return out


@backward(saved=("result",), batched=True)
def LogSoftmaxBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    y, g = self.result.unpack(self), grads[0]
    if first_order():
        gd = g.data
        return (like(quietly(_log_softmax_vjp, g._device.xp, gd, y.data, shift_axes(self.axes, batch)), g),)
    return (g - y.exp() * g.sum(shift_axes(self.axes, batch), keepdim=True),)


def _log_softmax_vjp(xp: Any, gd: Any, y: Any, axes: tuple[int, ...]) -> Any:
    e = xp.exp(y)
    if not e.ndim or e.shape != gd.shape or e.dtype != gd.dtype:
        return gd - e * gd.sum(axes, keepdims=True)
    e *= gd.sum(axes, keepdims=True)
    return xp.subtract(gd, e, out=e)


def _log_softmax_array(xp: Any, data: Any, peak: Any, axes: tuple[int, ...]) -> Any:
    shifted = xp.subtract(data, peak)
    if not shifted.ndim:
        return shifted - xp.log(xp.exp(shifted).sum(axis=axes, keepdims=True))
    e = xp.exp(shifted)
    lse = xp.log(e.sum(axis=axes, keepdims=True))
    shifted -= lse
    return shifted


@op(LogSoftmaxBackward0)
def log_softmax(input: Tensor, dim: int, dtype: DTypeLike | None = None) -> Tensor:
    """``x - logsumexp(x, dim)``, computed without overflow (``dtype`` casts first)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("log_softmax", input)
    input, axes = _softmax_input(input, dim, dtype, "log_softmax")
    data, xp = input.data, input._device.xp
    if not data.size:
        out = like(data.copy(), input)
    else:
        peak = data.max(axis=axes, keepdims=True)
        out = wrap(quietly(_log_softmax_array, xp, data, peak, axes))
        if input._device is not CPU:
            out._device = input._device
    if needs_grad(input):
        node = attach(LogSoftmaxBackward0((edge_of(input),)), out)
        node.result, node.axes = save(out, is_output=True), axes
    return out


TENSOR_METHODS = {"logsumexp": logsumexp, "softmax": softmax, "log_softmax": log_softmax}
