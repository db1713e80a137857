"""torch.nn.functional's normalisations: ``layer_norm``, ``batch_norm`` (training and eval, with
running statistics) and ``group_norm``, recording PyTorch's ``NativeLayerNormBackward0``,
``NativeBatchNormBackward0`` and ``NativeGroupNormBackward0``.

All three normalise ``x`` over some axes, ``xhat = (x - mean) * rstd`` with
``rstd = 1 / sqrt(var + eps)`` (the biased variance), then scale and shift by ``weight`` and
``bias``. The forward computes on arrays through the input's array module. The backward is
PyTorch's formula (``layer_norm_backward``/``batch_norm_backward``/``group_norm_backward``)::

    grad_input  = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)),  gxhat = g * weight
    grad_weight = sum(g * xhat),  grad_bias = sum(g)   (over the axes the parameter is shared on)

written with aiograd ops on the saved input (``mean``, ``rstd`` and ``xhat`` recomputed from it),
so ``create_graph=True`` differentiates through the statistics too. A first-order backward (grad
mode off) of ``layer_norm`` and training ``batch_norm`` computes the same formula on arrays from
the forward's statistics instead. In eval mode ``batch_norm``
uses the running statistics, constants: ``grad_input = g * weight * rstd``.

``batch_norm`` in training updates ``running_mean``/``running_var`` in place, as PyTorch's:
``(1 - momentum) * running + momentum * batch``, the batch variance unbiased (``n / (n - 1)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._ops._inplace_util import OVERLAP_ERROR, _bump, _dtype_name, _overlapping
from .._ops._registry import backward, op
from .._ops._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    first_order,
    like,
    needs_grad,
    not_tensor,
    save,
)
from .._ops.quiet import quietly
from ._normalization_fused import (
    batch_norm_forward,
    batch_norm_grads,
    fusable,
    layer_norm_forward,
    layer_norm_grads,
    vector,
)

__all__ = ["batch_norm", "group_norm", "layer_norm"]


# ------------------------------------------------------------------------------ shared
def _stats(xp: Any, x: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any]:
    """Mean and ``1 / sqrt(biased var + eps)`` of ``x`` over ``axes`` (kept as size-1 dims)."""
    mean = x.mean(axis=axes, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    return mean, 1.0 / xp.sqrt(var + eps)


def _normalized(x: Tensor, axes: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor]:
    """``xhat`` and ``rstd`` of a tensor, with aiograd ops (differentiable)."""
    d = x - x.mean(axes, keepdim=True)
    rstd = ((d * d).mean(axes, keepdim=True) + eps).rsqrt()
    return d * rstd, rstd


def _input_grad(gxhat: Tensor, xhat: Tensor, rstd: Tensor, axes: tuple[int, ...]) -> Tensor:
    """The gradient through ``xhat = (x - mean(x)) * rstd(x)`` (statistics over ``axes``)."""
    return rstd * (gxhat - gxhat.mean(axes, keepdim=True) - xhat * (gxhat * xhat).mean(axes, keepdim=True))


def _affine(xp: Any, y: Any, weight: Any, bias: Any, shape: tuple[int, ...]) -> Any:
    """``y * weight + bias``, the parameters reshaped to ``shape`` to broadcast."""
    if weight is not None:
        y = y * weight.data.reshape(shape)
    if bias is not None:
        y = y + bias.data.reshape(shape)
    return y


def _record(cls: type[Any], out: Tensor, input: Tensor, weight: Any, bias: Any, **attrs: Any) -> None:
    """Attach ``cls`` (edges: input, weight, bias) to ``out``, saving the input and weight."""
    if not needs_grad(input, weight, bias):
        return
    edges = (edge_of(input), edge_of(weight) if weight is not None else None, edge_of(bias) if bias is not None else None)
    node: Any = attach(cls(edges), out)
    node.input = save(input)
    node.weight = save(weight) if weight is not None else None
    for key, value in attrs.items():
        setattr(node, key, value)


def _parameter_grads(self: Any, g: Tensor, xhat: Tensor, axes: tuple[int, ...], shape: tuple[int, ...]) -> tuple[Any, Any]:
    """``grad_weight = sum(g * xhat)`` and ``grad_bias = sum(g)`` over ``axes``, shaped as the
    parameters, where their edges exist."""
    _, edge_w, edge_b = self.next_edges
    gw = (g * xhat).sum(axes).reshape(shape) if edge_w is not None else None
    gb = g.sum(axes).reshape(shape) if edge_b is not None else None
    return gw, gb


def _array_grads(self: Any, g: Tensor, x: Tensor, w_b: Any, param_axes: tuple[int, ...],
                 param_shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The same three gradients on arrays, from the forward's saved statistics: the first-order
    backward (grad mode off), which then needs no graph and no recomputed statistics."""
    mean, rstd = self.stats
    axes, gd, xd = self.axes, g.data, x.data
    edge_x, edge_w, edge_b = self.next_edges

    def compute() -> tuple[Any, Any, Any]:
        xhat = (xd - mean) * rstd
        gx = gw = gb = None
        if edge_x is not None:
            gxhat = gd * w_b.data if w_b is not None else gd
            gx = rstd * (gxhat - gxhat.mean(axis=axes, keepdims=True)
                         - xhat * (gxhat * xhat).mean(axis=axes, keepdims=True))
        if edge_w is not None:
            gw = (gd * xhat).sum(axis=param_axes).reshape(param_shape)
        if edge_b is not None:
            gb = gd.sum(axis=param_axes).reshape(param_shape)
        return gx, gw, gb

    return tuple(None if a is None else like(a.astype(gd.dtype, copy=False), g) for a in quietly(compute))


def _wrap(g: Tensor, grads: tuple[Any, Any, Any], param_shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The fused backward's array gradients as tensors, the parameters' shaped ``param_shape``."""
    gx, gw, gb = grads
    gw = None if gw is None else gw.reshape(param_shape)
    gb = None if gb is None else gb.reshape(param_shape)
    return tuple(None if a is None else like(a, g) for a in (gx, gw, gb))


def _check_float(x: Any, kernel: str) -> None:
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_dtype_name(x.dtype)}\'')


def _shape_str(shape: Sequence[int]) -> str:
    return str(list(shape))


# ------------------------------------------------------------------------------ layer_norm
# Not batched (runs once per sample under ``is_grads_batched``): a normalization reduces over axes
# of the saved input, written for one sample (a batched rule would put the batch dims in front of
# those axes).
@backward(name="NativeLayerNormBackward0", saved=("input", "weight"))
def _NativeLayerNormBackward0(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    g, x = grads[0], self.input.unpack(self)
    axes, w = self.axes, self.weight.unpack(self) if self.weight is not None else None
    lead = tuple(range(x.data.ndim - len(axes)))
    if first_order():
        wd = vector(w)
        if fusable(x.data, g.data, wd):
            mean, rstd = self.stats
            want = tuple(e is not None for e in self.next_edges)
            grads_ = quietly(layer_norm_grads, x._device.xp, g.data, x.data, wd, mean.reshape(-1),
                             rstd.reshape(-1), want)
            return _wrap(g, grads_, self.normalized_shape)
        return _array_grads(self, g, x, w, lead, self.normalized_shape)
    xhat, rstd = _normalized(x, axes, self.eps)
    gx = None
    if self.next_edges[0] is not None:
        gx = _input_grad(g * w if w is not None else g, xhat, rstd, axes)
    gw, gb = _parameter_grads(self, g, xhat, lead, self.normalized_shape)
    return (gx, gw, gb)


@op(_NativeLayerNormBackward0, family="normalization")
def layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dims (which must equal
    ``normalized_shape``), then ``* weight + bias`` (each shaped ``normalized_shape``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("layer_norm", input)
    normalized = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    x = input.data
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.data.shape) != normalized:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{_shape_str(p.data.shape)} and normalized_shape = {_shape_str(normalized)}"
            )
    k = len(normalized)
    if x.ndim < k or tuple(x.shape[x.ndim - k:]) != normalized:
        raise RuntimeError(
            f"Given normalized_shape={_shape_str(normalized)}, expected input with shape "
            f"[*{''.join(', ' + str(s) for s in normalized)}], but got input of size{_shape_str(x.shape)}"
        )
    _check_float(x, "LayerNormKernelImpl")
    common_device(input, weight, bias)
    xp = input._device.xp
    axes = tuple(range(x.ndim - k, x.ndim))
    # (inf and NaN give NaN quietly, as PyTorch)
    wd, bd = vector(weight), vector(bias)
    if fusable(x, wd, bd):
        y, mean, rstd = quietly(layer_norm_forward, xp, x, wd, bd, k, eps)
        keep = x.shape[: x.ndim - k] + (1,) * k
        mean, rstd = mean.reshape(keep), rstd.reshape(keep)
    else:
        mean, rstd = quietly(_stats, xp, x, axes, eps)
        y = quietly(lambda: _affine(xp, (x - mean) * rstd, weight, bias, normalized).astype(x.dtype, copy=False))
    out = like(y, input)
    _record(_NativeLayerNormBackward0, out, input, weight, bias, axes=axes, eps=eps, normalized_shape=normalized,
            stats=(mean, rstd))
    return out


# ------------------------------------------------------------------------------ batch_norm
# Not batched, as layer_norm's (it reduces over axes of the saved input).
@backward(name="NativeBatchNormBackward0", saved=("input", "weight"))
def _NativeBatchNormBackward0(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    g, x = grads[0], self.input.unpack(self)
    axes, w = self.axes, self.weight.unpack(self) if self.weight is not None else None
    shape = self.channel_shape
    w_b = w.reshape(shape) if w is not None else None
    if self.training:
        if first_order():
            wd = vector(w)
            if x.data.ndim >= 2 and fusable(x.data, g.data, wd):
                mean, rstd = self.stats
                want = tuple(e is not None for e in self.next_edges)
                grads_ = quietly(batch_norm_grads, x._device.xp, g.data, x.data, wd, mean.reshape(-1),
                                 rstd.reshape(-1), want)
                return _wrap(g, grads_, (x.data.shape[1],))
            return _array_grads(self, g, x, w_b, axes, (x.data.shape[1],))
        xhat, rstd = _normalized(x, axes, self.eps)
        gx = None
        if self.next_edges[0] is not None:
            gx = _input_grad(g * w_b if w_b is not None else g, xhat, rstd, axes)
    else:  # the running statistics: constants
        xhat = (x - self.running_mean) * self.running_rstd
        gx = None
        if self.next_edges[0] is not None:
            gx = g * (w_b * self.running_rstd if w_b is not None else self.running_rstd)
    gw, gb = _parameter_grads(self, g, xhat, axes, (x.data.shape[1],))
    return (gx, gw, gb)


def _check_channels(name: str, p: Any, channels: int) -> None:
    if p is not None and p.data.size != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {p.data.size}")


@op(_NativeBatchNormBackward0, family="normalization")
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims, then ``* weight + bias``.

    ``training``: with the batch's statistics, updating ``running_mean``/``running_var`` in place
    when given. Otherwise with the running statistics (required then)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("batch_norm", input)
    x = input.data
    if training:
        n = x.shape[0] * math.prod(x.shape[2:]) if x.ndim >= 1 else 1
        if n == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size aiograd.Size({list(x.shape)})"
            )
    channels = x.shape[1] if x.ndim > 1 else 1
    _check_channels("running_mean", running_mean, channels)
    _check_channels("running_var", running_var, channels)
    _check_channels("weight", weight, channels)
    _check_channels("bias", bias, channels)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation mode")
    _check_float(x, "batch_norm")
    common_device(input, running_mean, running_var, weight, bias)
    xp = input._device.xp
    axes = (0, *range(2, x.ndim))
    shape = (channels,) + (1,) * (x.ndim - 2)
    attrs: dict[str, Any] = {}
    wd, bd = vector(weight), vector(bias)
    y = None
    if training and x.ndim >= 2 and fusable(x, wd, bd):
        y, mean, rstd, sumsq = quietly(batch_norm_forward, xp, x, wd, bd, eps)
        mean, rstd = mean.reshape(shape), rstd.reshape(shape)
        if running_mean is not None and running_var is not None:
            quietly(_update_running, xp, x, axes, mean, running_mean, running_var, momentum, sumsq)
    elif training:
        mean, rstd = quietly(_stats, xp, x, axes, eps)
        if running_mean is not None and running_var is not None:
            quietly(_update_running, xp, x, axes, mean, running_mean, running_var, momentum)
    else:
        assert running_mean is not None and running_var is not None
        mean = running_mean.data.reshape(shape).astype(x.dtype, copy=False)
        rstd = quietly(lambda: (1.0 / xp.sqrt(running_var.data.reshape(shape) + eps)).astype(x.dtype, copy=False))
        attrs = {"running_mean": mean, "running_rstd": rstd}
    attrs["stats"] = (mean, rstd)
    if y is None and fusable(x, wd, bd):  # eval: ((x - mean) * (rstd * weight)) + bias, in place
        y = quietly(_eval_batch_norm, x, mean, rstd if wd is None else rstd * wd.reshape(shape),
                    None if bd is None else bd.reshape(shape))
    elif y is None:
        y = quietly(lambda: _affine(xp, (x - mean) * rstd, weight, bias, shape).astype(x.dtype, copy=False))
    out = like(y, input)
    _record(_NativeBatchNormBackward0, out, input, weight, bias, axes=axes, eps=eps, training=training,
            channel_shape=shape, **attrs)
    return out


def _eval_batch_norm(x: Any, mean: Any, scale: Any, bias: Any) -> Any:
    y = x - mean
    y *= scale
    if bias is not None:
        y += bias
    return y


def _update_running(xp: Any, x: Any, axes: tuple[int, ...], mean: Any, running_mean: Tensor, running_var: Tensor,
                    momentum: float, sumsq: Any = None) -> None:
    """PyTorch's running-statistics update, in place (the batch variance unbiased); ``sumsq``: the
    channels' sums of squared deviations when already computed."""
    for stat in (running_mean, running_var):  # (PyTorch writes into an expanded one, racing: refused)
        if type(stat.data) is np.ndarray and not stat.data.flags.writeable and _overlapping(stat.data):
            raise RuntimeError(OVERLAP_ERROR)
    n = x.size // x.shape[1]
    if sumsq is None:
        d = x - mean
        sumsq = (d * d).sum(axis=axes)
    unbiased = sumsq / max(n - 1, 1) if n > 1 else sumsq * float("nan")
    for stat, batch in ((running_mean, mean.reshape(-1)), (running_var, unbiased)):
        data = stat.data
        xp.copyto(data, ((1.0 - momentum) * data + momentum * batch).reshape(data.shape), casting="unsafe")
        _bump(stat)


# ------------------------------------------------------------------------------ group_norm
# Not batched, as layer_norm's (it reduces over axes of the saved input).
@backward(name="NativeGroupNormBackward0", saved=("input", "weight"))
def _NativeGroupNormBackward0(self: Any, grads: list[Any]) -> tuple[Any, ...]:
    g, x = grads[0], self.input.unpack(self)
    w = self.weight.unpack(self) if self.weight is not None else None
    shape, grouped = x.data.shape, self.grouped_shape
    channel_shape = (shape[1],) + (1,) * (len(shape) - 2)
    xhat_g, rstd = _normalized(x.reshape(grouped), (2,), self.eps)
    xhat = xhat_g.reshape(shape)
    gx = None
    if self.next_edges[0] is not None:
        gxhat = g * w.reshape(channel_shape) if w is not None else g
        gx = _input_grad(gxhat.reshape(grouped), xhat_g, rstd, (2,)).reshape(shape)
    gw, gb = _parameter_grads(self, g, xhat, (0, *range(2, len(shape))), (shape[1],))
    return (gx, gw, gb)


@op(_NativeGroupNormBackward0, family="normalization")
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Split the channels (dim 1) into ``num_groups`` groups and normalise each group of each
    sample, then ``* weight + bias`` per channel."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("group_norm", input)
    x = input.data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x.shape[0], x.shape[1]
    if n * c // num_groups * math.prod(x.shape[2:]) == 1:  # (torch.nn.functional's check, first)
        sizes = [n * c // num_groups, num_groups, *x.shape[2:]]
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {sizes}")
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {_shape_str(x.shape)} and num_groups={num_groups}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.data.ndim != 1 or p.data.size != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                f"{name} of shape {_shape_str(p.data.shape)} and input of shape {_shape_str(x.shape)}"
            )
    _check_float(x, "GroupNormKernelImpl")
    common_device(input, weight, bias)
    xp = input._device.xp
    grouped = (n, num_groups, -1)
    xg = x.reshape(grouped)
    shape = (c,) + (1,) * (x.ndim - 2)

    def compute() -> Any:
        mean, rstd = _stats(xp, xg, (2,), eps)
        return _affine(xp, ((xg - mean) * rstd).reshape(x.shape), weight, bias, shape).astype(x.dtype, copy=False)

    out = like(quietly(compute), input)
    _record(_NativeGroupNormBackward0, out, input, weight, bias, eps=eps, grouped_shape=grouped)
    return out
