"""``aiograd.nn.functional``: torch.nn.functional's activations, ``linear`` and losses.

Losses record one node each (``MseLossBackward0``, ``NllLossBackward0``), whose backward is built
from aiograd ops and constant masks, so it can be differentiated again. ``cross_entropy`` is
``nll_loss(log_softmax(input, 1), ...)``, as in PyTorch.

The other losses (``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``,
``binary_cross_entropy_with_logits``, ``kl_div``), ``normalize``/``cosine_similarity`` and the
attention functions live in ``_losses.py``, ``_binary_losses.py``, ``_distance.py`` and ``_attention.py`` beside this
module, and are re-exported here.
"""

from __future__ import annotations

import typing

import numpy as np

from .._devices._device import CPU as _CPU
from .._ops._reduce_util import _dtype_name
from .._ops._registry import backward as _backward
from .._ops._registry import op as _op
from .._ops._registry import variant as _variant
from .._ops._util import Tensor as _Tensor
from .._ops._util import attach as _attach
from .._ops._util import broadcast_error as _broadcast_error
from .._ops._util import common_device as _common_device
from .._ops._util import edge_of as _edge_of
from .._ops._util import first_order as _first_order
from .._ops._util import like as _like
from .._ops._util import needs_grad as _needs_grad
from .._ops._util import not_tensor as _not_tensor
from .._ops._util import on as _on
from .._ops._util import to_tensor as _to_tensor
from .._ops._util import wrap as _wrap
from .._ops.batching import per_sample_scalar as _per_sample_scalar
from .._ops.linalg import linear
from .._ops.padding import one_hot, pad  # shape and indexing
from .._ops.pointwise import masked_fill as _masked_fill
from .._ops.quiet import quietly as _quietly
from .._ops.shape import reduce_grad as _reduce_grad
from .._ops.softmax import log_softmax as _log_softmax
from .._ops.unary_math import relu, sigmoid, tanh
from ._activations import elu, gelu, hardtanh, leaky_relu, mish, silu, softplus
from ._activations_extra import (
    celu,
    glu,
    hardsigmoid,
    hardswish,
    logsigmoid,
    prelu,
    relu6,
    selu,
    softmin,
    softsign,
    tanhshrink,
    threshold,
)
from ._attention import multi_head_attention_forward, scaled_dot_product_attention
from ._binary_losses import binary_cross_entropy, binary_cross_entropy_with_logits, kl_div

# convolutions and pooling (families _conv and _pooling)
from ._conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d
from ._conv3d import conv3d, conv_transpose3d
from ._distance import cosine_similarity, normalize
from ._dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from ._embedding import embedding
from ._fold import fold, pixel_shuffle, pixel_unshuffle, unfold
from ._functional_losses_more import *  # noqa: F403  (more losses, ctc, embedding_bag, unpool, lp_pool)
from ._functional_losses_more import __all__ as _losses_more_all
from ._functional_more import (  # channel shuffle, shrinks, bilinear, distances, rms/lrn norms
    bilinear,
    channel_shuffle,
    gumbel_softmax,
    hardshrink,
    local_response_norm,
    pairwise_distance,
    rms_norm,
    softshrink,
)
from ._grid_sample import affine_grid, grid_sample  # upsampling and spatial transformers
from ._inplace_activations import *  # noqa: F403  (in-place activations, rrelu, *_with_indices, pdist)
from ._inplace_activations import __all__ as _rest_all
from ._instance_norm import instance_norm
from ._interpolate import interpolate, upsample, upsample_bilinear, upsample_nearest
from ._losses import huber_loss, l1_loss, smooth_l1_loss
from ._losses import legacy_reduction as _reduction
from ._losses import record_loss as _record_loss
from ._losses import target_size_warning as _target_size_warning
from ._normalization import batch_norm, group_norm, layer_norm
from ._pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from ._pooling1d import (
    adaptive_avg_pool1d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    max_pool1d,
)
from ._pooling3d import adaptive_avg_pool3d, adaptive_max_pool3d, avg_pool3d, max_pool3d
from ._softmax_functions import log_softmax, softmax

if typing.TYPE_CHECKING:
    from typing import Any

    from .._core._tensor import Tensor

__all__ = [
    "relu", "sigmoid", "tanh", "softmax", "log_softmax", "linear", "mse_loss", "nll_loss", "cross_entropy",
    # activations, dropout, normalization, embedding
    "gelu", "silu", "elu", "leaky_relu", "softplus", "hardtanh", "mish", "relu6", "hardswish", "hardsigmoid",
    "logsigmoid", "glu", "prelu", "selu", "celu", "softsign", "tanhshrink", "threshold", "softmin",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "layer_norm", "batch_norm", "group_norm", "instance_norm", "embedding",
    # shape and indexing
    "pad", "one_hot", "pixel_shuffle", "pixel_unshuffle", "unfold", "fold",
    # losses, distances and attention (aiograd/nn/_losses.py, _distance.py, _attention.py)
    "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "kl_div", "normalize", "cosine_similarity", "scaled_dot_product_attention", "multi_head_attention_forward",
    # convolutions and pooling (families _conv and _pooling)
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
    # upsampling and spatial transformers
    "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
    # aiograd/nn/_functional_more.py
    "hardshrink", "softshrink", "channel_shuffle", "bilinear", "pairwise_distance", "rms_norm",
    "local_response_norm", "gumbel_softmax",
]
__all__ += _losses_more_all  # aiograd/nn/_functional_losses_more.py
__all__ += _rest_all  # aiograd/nn/_inplace_activations.py


# ------------------------------------------------------------------------------ mse_loss
@_backward(name="MseLossBackward0", saved=("input", "target"), batched=True)
def _MseLossBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    x, y = self.input.unpack(self), self.target.unpack(self)
    diff = x - y
    if self.reduction == "none":
        scaled = g * 2.0
    else:
        scale = 2.0 / diff.data.size if self.reduction == "mean" and diff.data.size else 2.0
        scaled = _per_sample_scalar(g * scale, diff.data.ndim, batch)
        scaled = scaled.expand(scaled.data.shape[: scaled.data.ndim - diff.data.ndim] + diff.data.shape)
    ex, ey = self.next_edges
    gx = _reduce_grad(scaled * diff, x.data.shape, batch) if ex is not None else None
    # PyTorch's target gradient is 2 * (target - input) * grad, not its negation: +0, not -0,
    # where they are equal.
    gy = _reduce_grad(scaled * (y - x), y.data.shape, batch) if ey is not None else None
    return (gx, gy)


@_op(_MseLossBackward0)
def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Squared error ``(input - target) ** 2``, averaged (``'mean'``), summed or kept (``'none'``).

    Both ``input`` and ``target`` may require grad. Shapes that differ are broadcast, with
    PyTorch's warning.
    """
    if not isinstance(input, _Tensor):  # PyTorch's TypeError, not an AttributeError
        raise _not_tensor("mse_loss", input)
    reduction = _reduction(size_average, reduce, reduction)
    target = _to_tensor(target, input)
    if input._device is not _CPU or target._device is not _CPU:
        _common_device(input, target)
    _target_size_warning(input, target)
    xp = input._device.xp
    x, y = input.data, target.data
    if x.dtype != y.dtype or x.dtype.kind in "biu":  # torch's result type (an integer target: the input's float dtype)
        from .._ops.casting import result_type
        from ._losses import floating_kernel

        floating_kernel("mse_cpu", input, target)
        dtype = result_type(input, target)
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
    try:
        sq = _quietly(_squared_error, x, y)
    except ValueError as e:  # numpy's broadcast error: PyTorch's
        raise _broadcast_error(e, input, target) from None
    if reduction == "mean":
        data = xp.asarray(_quietly(lambda: sq.mean() if sq.size else sq.sum() / 0.0))
    elif reduction == "sum":
        data = xp.asarray(_quietly(sq.sum))
    else:
        data = sq
    out = _wrap(data.astype(sq.dtype, copy=False))
    _on(out, input._device)
    from ._losses import float_target

    _record_loss(_MseLossBackward0, out, input, float_target(input, target), reduction)
    return out


def _squared_error(x: Any, y: Any) -> Any:
    diff = x - y
    return diff * diff


# ------------------------------------------------------------------------------ nll_loss
@_backward(name="NllLossBackward0", batched=True)
def _NllLossBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Gradient of the picked log-probabilities: ``-weight[target]`` at each target, 0 elsewhere.

    ``self.coef`` is that constant mask (divided by the total weight for ``'mean'``), shaped as
    the input; ``self.class_dim`` is where the class dimension sits.
    """
    g = grads[0]
    if self.reduction != "none":
        g = _per_sample_scalar(g, self.coef.ndim, batch)  # batched: (B, 1, ...) against the coefficients
    if self.reduction != "none" and _first_order():
        out = _wrap(g.data * self.coef)
        if g._device is not _CPU:
            out._device = g._device
        return (out,)
    coef = self.coef.astype(g.data.dtype, copy=False)  # a device-less constant
    if self.reduction == "none" and coef.ndim > 1:
        g = g.unsqueeze(self.class_dim + batch)
    return (g * coef,)


_NllLoss2DBackward0 = _variant("NllLoss2DBackward0", _NllLossBackward0, "``nll_loss`` with spatial dims ``(N, C, d1, ...)``.")


def _check_nll(input: Tensor, target: Tensor, weight: Any) -> tuple[Any, Any, Any]:
    """PyTorch's argument checks, in its order; returns the arrays (target as int64)."""
    xp = input._device.xp  # (numpy on the CPU; an array target goes to a CUDA input's device)
    x, t = input.data, xp.asarray(target.data)
    if x.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    if t.dtype not in (np.int64, np.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_dtype_name(t.dtype)}"
        )
    if x.ndim != 1 and (t.ndim == 0 or t.shape[0] != x.shape[0]):
        raise ValueError(
            f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
            f"({t.shape[0] if t.ndim else 0})."
        )
    if x.ndim <= 2:
        if t.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if x.ndim == 1 and t.ndim == 1 and t.shape[0] != 1:
            raise ValueError(
                f"For 1D input, 1D target must have size 1, but got target size: {t.shape[0]}"
            )
    else:
        expected = (x.shape[0],) + x.shape[2:]
        if t.shape != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got {list(t.shape)}")
    n_classes = x.shape[0] if x.ndim == 1 else x.shape[1]
    w = None
    if weight is not None:
        if _needs_grad(weight):
            raise RuntimeError(
                "The function 'nll_loss_forward' is not differentiable with respect to argument "
                "'weight'. This input cannot have requires_grad True."
            )
        w = xp.asarray(weight.data if isinstance(weight, _Tensor) else weight)
        if w.shape != (n_classes,):
            raise RuntimeError(
                f"weight tensor should be defined either for all {n_classes} classes or no "
                f"classes but got weight tensor of shape: {list(w.shape)}"
            )
    return x, t.astype(np.int64), w


def _nll_loss_plain(input: Tensor, t: Any, ignore_index: int, mean: bool) -> Tensor | None:
    """The training-loop case, in a handful of numpy calls: (N, C) input, (N,) int64 targets all
    in range and none ignored, no weight, reduced. None sends anything else to the general path."""
    x = input.data
    if x.ndim != 2 or t.dtype != np.int64 or t.shape != (x.shape[0],) or not t.size:
        return None
    n_classes = x.shape[1]
    # Viewed as unsigned, a negative target is huge: one comparison checks both bounds.
    if not (t.view(np.uint64) < n_classes).all():
        return None
    if 0 <= ignore_index < n_classes and (t == ignore_index).any():
        return None
    xp = input._device.xp
    rows = xp.arange(t.size)
    scale = 1.0 / t.size if mean else 1.0
    # (0 - sum: PyTorch accumulates the terms into a +0, so a zero loss is +0, never -0)
    out = _wrap(xp.asarray((0.0 - x[rows, t].sum()) * scale, dtype=x.dtype))
    if input._device is not _CPU:
        out._device = input._device
    if _needs_grad(input):
        node = _attach(_NllLossBackward0((_edge_of(input),)), out)
        coef = xp.zeros(x.shape, x.dtype)
        coef[rows, t] = -scale
        node.coef, node.reduction, node.class_dim = coef, "mean" if mean else "sum", 1
    return out


@_op(_NllLossBackward0, _NllLoss2DBackward0)
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of the ``target`` classes, given log-probabilities ``input``.

    ``input`` is ``(N, C)`` with an ``(N,)`` integer target, ``(C,)`` with a 0-d target, or
    ``(N, C, d1, ...)`` with an ``(N, d1, ...)`` target. ``loss_n = -weight[t_n] * input[n, t_n]``;
    targets equal to ``ignore_index`` count 0. ``'mean'`` divides the sum by the total weight of
    the counted targets (``nan`` if there are none), as PyTorch. ``weight`` gets no gradient.
    """
    if not isinstance(input, _Tensor):  # PyTorch's TypeError, not an AttributeError
        raise _not_tensor("nll_loss_nd", input)
    reduction = _reduction(size_average, reduce, reduction)
    target = _to_tensor(target, input)
    if input._device is not _CPU or target._device is not _CPU or (isinstance(weight, _Tensor) and weight._device is not _CPU):
        _common_device(input, target, weight)
    if weight is None and reduction != "none":
        fast = _nll_loss_plain(input, target.data, ignore_index, reduction == "mean")
        if fast is not None:
            return fast
    x, t, w = _check_nll(input, target, weight)
    if x.ndim == 3 or x.ndim > 4:
        # as torch's nll_loss_nd: (N, C, 1, d1*d2*...) through nll_loss2d (ViewBackward0 under
        # NllLoss2DBackward0), an unreduced loss viewed back
        n, c, rest = x.shape[0], x.shape[1], int(np.prod(x.shape[2:], dtype=np.int64))
        loss = nll_loss(input.reshape(n, c, 1, rest), target.reshape(n, 1, rest), weight,
                        ignore_index=ignore_index, reduction=reduction)
        return loss if reduction != "none" else loss.view(n, *x.shape[2:])
    class_dim = 0 if x.ndim == 1 else 1
    n_classes = x.shape[class_dim]
    if x.ndim == 1:
        t = t.reshape(())
    ignored = t == ignore_index
    bad = ~ignored & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    xp = input._device.xp
    safe_t = xp.where(ignored, 0, t)
    w_t = (xp.ones(t.shape, dtype=x.dtype) if w is None else w.astype(x.dtype)[safe_t])
    w_t = xp.where(ignored, 0, w_t).astype(x.dtype, copy=False)
    idx = xp.expand_dims(safe_t, class_dim)
    picked = xp.take_along_axis(x, idx, axis=class_dim).squeeze(class_dim)
    # An ignored target's loss is 0 whatever its input (inf, NaN); PyTorch accumulates the sum
    # into a +0 (so + 0.0: a zero sum is +0, never -0).
    losses = xp.where(ignored, 0.0, -(w_t * picked)).astype(x.dtype, copy=False)
    total = None
    if reduction == "none":
        data = losses
    elif reduction == "sum":
        data = xp.asarray(losses.sum() + 0.0)
    else:
        total = w_t.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            data = xp.asarray((losses.sum() + 0.0) / total)
    out = _like(xp.asarray(data).astype(x.dtype, copy=False), input)
    if _needs_grad(input):
        cls = _NllLoss2DBackward0 if x.ndim > 2 else _NllLossBackward0
        node = _attach(cls((_edge_of(input),)), out)
        coef = xp.zeros(x.shape, dtype=x.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):
            picked_coef = -w_t if total is None else -w_t / total
        # +0 where ignored (not -0, nor NaN when every target is: PyTorch skips them)
        picked_coef = xp.where(ignored, 0.0, picked_coef).astype(x.dtype, copy=False)
        xp.put_along_axis(coef, idx, xp.expand_dims(picked_coef, class_dim), axis=class_dim)
        node.coef, node.reduction, node.class_dim = coef, reduction, class_dim
    return out


# ------------------------------------------------------------------------------ cross_entropy
@_op(_NllLossBackward0, _NllLoss2DBackward0)
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    ignore_index: int = -100,
    reduce: Any = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy between the logits ``input`` and the ``target`` classes.

    With class indices (``target`` shaped as for :func:`nll_loss`) it is
    ``nll_loss(log_softmax(input, class_dim), target, ...)``, the class dim being 1 (0 for a 1-D
    input). A floating ``target`` shaped like ``input`` holds class probabilities instead (it may
    require grad): ``loss_n = -sum_c weight[c] * target[n, c] * logp[n, c]``, and ``'mean'``
    divides by the number of samples. ``label_smoothing`` ``e`` mixes each target with the
    uniform distribution, weighting ``(1 - e)`` and ``e / C``, reduced as PyTorch does.
    """
    if not isinstance(input, _Tensor):  # PyTorch's TypeError, not an AttributeError
        raise _not_tensor("cross_entropy_loss", input)
    reduction = _reduction(size_average, reduce, reduction)
    if input.data.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.data.ndim})")
    class_dim = 0 if input.data.ndim == 1 else 1
    n_classes = input.data.shape[class_dim]
    target = _to_tensor(target, input)
    if input._device is not _CPU or target._device is not _CPU or (isinstance(weight, _Tensor) and weight._device is not _CPU):
        _common_device(input, target, weight)
    if target.data.shape == input.data.shape:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing)
    # PyTorch checks (and applies) a label smoothing only above 0: a negative or NaN one is none
    if label_smoothing > 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}"
        )
    logp = _log_softmax(input, class_dim)
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing > 0.0:
        return loss
    xp = input._device.xp
    t = xp.asarray(target.data)
    if input.data.ndim == 1:
        t = t.reshape(())
    kept = t != ignore_index
    w = _class_weight(weight, input)
    smooth = -(logp if w is None else logp * w).sum(class_dim)
    # masked_fill, as PyTorch's: an ignored target's term gets a zero gradient, even when the
    # mean over no target at all is NaN
    smooth = _masked_fill(smooth, ~kept, 0.0)
    if reduction == "none":
        smooth_red = smooth
    elif reduction == "sum":
        smooth_red = smooth.sum()
    else:
        if w is None:
            denom = float(kept.sum())
        else:
            w_data = w.data.reshape(-1)
            denom = float(w_data[xp.where(kept, t, 0)][kept].sum())
        smooth_red = smooth.sum() / denom  # (0 / 0 = NaN when every target is ignored)
    return loss * (1.0 - label_smoothing) + smooth_red * (label_smoothing / n_classes)


def _class_weight(weight: Any, input: Tensor) -> Tensor | None:
    """``weight`` as a constant shaped to broadcast along the class dim of ``input``."""
    if weight is None:
        return None
    ndim = input.data.ndim
    class_dim = 0 if ndim == 1 else 1
    shape = [1] * ndim
    shape[class_dim] = input.data.shape[class_dim]
    if isinstance(weight, _Tensor) and _needs_grad(weight):
        # part of the graph, as torch's ``weight.view(...)`` (probability targets only: the
        # class-index path refuses it in nll_loss first)
        return weight.view(shape)  # type: ignore[no-any-return]
    w = input._device.xp.asarray(weight.data if isinstance(weight, _Tensor) else weight)
    return _on(_wrap(w.astype(input.data.dtype).reshape(shape)), input._device)


def _cross_entropy_probs(
    input: Tensor, target: Tensor, weight: Any, ignore_index: int, reduction: str, label_smoothing: float
) -> Tensor:
    """Cross entropy with class probabilities as targets (PyTorch's ``_prob_target`` path)."""
    class_dim = 0 if input.data.ndim == 1 else 1
    n_classes = input.data.shape[class_dim]
    if target.data.dtype.kind != "f":
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, got "
            f"{_dtype_name(target.data.dtype)}"
        )
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if weight is not None:
        w_shape = np.shape(weight.data if isinstance(weight, _Tensor) else weight)
        if w_shape != (n_classes,):
            raise RuntimeError(
                f"cross_entropy: weight tensor should be defined either for all {n_classes} "
                f"classes or no classes but got weight tensor of shape: {list(w_shape)}"
            )
    logp = _log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        if label_smoothing > 1.0:
            raise RuntimeError(
                f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}"
            )
        target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
    w = _class_weight(weight, input)
    terms = logp * target if w is None else logp * target * w
    if reduction == "none":
        return -terms.sum(class_dim)
    if reduction == "sum":
        return -terms.sum()
    count = input.data.size // n_classes if n_classes else 0
    return -terms.sum() / float(count) if count else -terms.sum() * float("nan")
