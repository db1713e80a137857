"""torch.nn.functional's margin, embedding and likelihood losses: ``margin_ranking_loss``,
``hinge_embedding_loss``, ``cosine_embedding_loss``, ``soft_margin_loss``,
``multilabel_soft_margin_loss``, ``multilabel_margin_loss``, ``multi_margin_loss``,
``triplet_margin_loss``, ``triplet_margin_with_distance_loss``, ``poisson_nll_loss``,
``gaussian_nll_loss`` and ``pairwise_distance``.

Each is a composite of aiograd ops, written as ATen's (Loss.cpp, LossMulti*.cpp, Distance.cpp)
or torch.nn.functional's Python computes it, so its values are PyTorch's and it can be
differentiated to any order. (PyTorch records one node for ``soft_margin_loss``,
``multilabel_margin_loss`` and ``multi_margin_loss``; here their nodes are those of the parts.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._base._grad_mode import no_grad
from .._ops._util import Tensor, like, not_tensor, to_tensor
from .._ops.convenience import norm
from .._ops.elementwise import where
from .._ops.pointwise import masked_fill
from .._ops.unary_math import relu
from ._activations_extra import logsigmoid
from ._losses import _reduce, legacy_reduction

__all__ = [
    "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
]

#: Loss.cpp's ``EPSILON`` (cosine_embedding_loss's floor on the squared magnitudes).
_EPSILON = 1e-12


def _check(input: Any, name: str) -> None:
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(name, input)


def _sizes(t: Tensor) -> str:
    return str(list(t.data.shape))


# ------------------------------------------------------------------------------ pairwise
def _pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim (of the broadcast shape), as
    ``torch.nn.functional.pairwise_distance``."""
    _check(x1, "pairwise_distance")
    x2 = to_tensor(x2, x1)
    dim = max(x1.data.ndim, x2.data.ndim) - 1
    return norm(x1 - x2 + eps, p, dim, keepdim)


# ------------------------------------------------------------------------------ ranking, hinge
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average: Any = None,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced."""
    _check(input1, "margin_ranking_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    input2, target = to_tensor(input2, input1), to_tensor(target, input1)
    if input1.data.ndim != input2.data.ndim or input1.data.ndim != target.data.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1, reduced."""
    _check(input, "hinge_embedding_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = to_tensor(target, input)
    margin_clamp = (margin - input).clamp(min=0)
    output_margin = where(target != 1, margin_clamp, 0.0)
    output_self = where(target != -1, input, 0.0)
    return _reduce(output_margin + output_self, reduction)


def soft_margin_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
) -> Tensor:
    """``log(1 + exp(-target * input))``, reduced."""
    _check(input, "soft_margin_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = to_tensor(target, input)
    return _reduce((-input * target).exp().log1p(), reduction)


# ------------------------------------------------------------------------------ cosine_embedding
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0, size_average: Any = None,
    reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is
    -1 (cosines of the rows, squared magnitudes floored by 1e-12 as ATen's), reduced."""
    _check(input1, "cosine_embedding_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    input2, target = to_tensor(input2, input1), to_tensor(target, input1)
    targ_dim = target.data.ndim
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if targ_dim == 1 else 1
    if input1.data.ndim != want or input2.data.ndim != want:
        raise RuntimeError(
            f"{targ_dim}D target tensor expects {want}D input tensors, but found inputs with sizes "
            f"{_sizes(input1)} and {_sizes(input2)}."
        )
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + _EPSILON
    mag_square2 = (input2 * input2).sum(targ_dim) + _EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    pos = 1 - cos
    neg = (cos - margin).clamp(min=0)
    output = where(target == 1, pos, 0.0) + where(target == -1, neg, 0.0)
    return _reduce(output, reduction)


# ------------------------------------------------------------------------------ triplet
def triplet_margin_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
    swap: bool = False, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the ``pairwise_distance`` (``swap``: the
    smaller of ``d(a, n)`` and ``d(p, n)``), reduced."""
    _check(anchor, "triplet_margin_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    positive, negative = to_tensor(positive, anchor), to_tensor(negative, anchor)
    dims = anchor.data.ndim, positive.data.ndim, negative.data.ndim
    if not dims[0] == dims[1] == dims[2]:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs"
        )
    dist_pos = _pairwise_distance(anchor, positive, p, eps)
    dist_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = dist_neg.minimum(_pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp(min=0), reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0,
    swap: bool = False, reduction: str = "mean",
) -> Tensor:
    """:func:`triplet_margin_loss` with any ``distance_function`` (``pairwise_distance`` by
    default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = anchor.ndim, positive.ndim, negative.ndim
    if not dims[0] == dims[1] == dims[2]:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D inputs"
        )
    dist = _pairwise_distance if distance_function is None else distance_function
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = dist_neg.minimum(dist(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp(min=0), reduction)


# ------------------------------------------------------------------------------ likelihoods
def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average: Any = None,
    eps: float = 1e-8, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``,
    plus Stirling's term for targets above 1 with ``full``, reduced."""
    _check(input, "poisson_nll_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = to_tensor(target, input)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * ((2 * math.pi) * target).log()
        loss = loss + masked_fill(stirling, target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """``0.5 * (log(var) + (input - target)**2 / var)`` (plus ``0.5 * log(2 pi)`` with ``full``),
    reduced; ``var`` clamped at ``eps`` without recording (its gradient as if unclamped), as
    torch.nn.functional's."""
    _check(input, "gaussian_nll_loss")
    target = to_tensor(target, input)
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = like(np.full(input.data.shape, var, dtype=input.data.dtype), input)
    elif not isinstance(var, Tensor):  # (torch.any(var < 0) on a non-tensor: its TypeError)
        raise TypeError(f"any(): argument 'input' (position 1) must be Tensor, not {type(var < 0).__name__}")
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    in_shape, var_shape = input.data.shape, var.data.shape
    if var_shape != in_shape:
        if in_shape[:-1] == var_shape:
            var = var.unsqueeze(-1)
        elif not (len(in_shape) == len(var_shape) and sum(y for x, y in zip(in_shape, var_shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ------------------------------------------------------------------------------ multi-label/class
def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average: Any = None, reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """The mean over classes of ``-(y * log sigmoid(x) + (1 - y) * log sigmoid(-x))`` (times
    ``weight``), per sample, reduced."""
    _check(input, "multilabel_soft_margin_loss")
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, "mean")
    target = to_tensor(target, input)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.data.ndim - 1
    loss = loss.sum(dim=class_dim) / input.data.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _frames(input: Tensor, target: Tensor) -> tuple[int, int]:
    """ATen's shape check of the multi-margin losses: ``(nframe, dim)``."""
    x = input.data
    if not ((x.ndim == 2 and x.shape[1] != 0) or (x.ndim == 1 and x.shape[0] != 0) or x.ndim == 0):
        raise RuntimeError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {list(x.shape)}"
        )
    if target.data.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {scalar_type_name(target.data.dtype)}")
    if x.ndim <= 1:
        return 1, (1 if x.ndim == 0 else x.shape[0])
    return x.shape[0], x.shape[1]


def _as_matrix(input: Tensor, nframe: int, dim: int) -> Tensor:
    return input.reshape(nframe, dim) if input.data.ndim < 2 else input


def _finish(loss: Tensor, input: Tensor, reduction: str) -> Tensor:
    """The per-frame losses reduced; unreduced, a 0-d loss for a 0-d or 1-D input, as ATen's."""
    if reduction == "none" and input.data.ndim < 2:
        return loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None, reduction: str = "mean"
) -> Tensor:
    """``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over the target classes ``y_j`` (up to the
    first -1) and the non-target classes ``i``, per sample, reduced."""
    _check(input, "multilabel_margin_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = to_tensor(target, input)
    nframe, dim = _frames(input, target)
    t = target.data
    if input.data.ndim <= 1:
        if not (t.ndim <= 1 and t.size == dim):
            raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {_sizes(input)}")
    elif t.shape != (nframe, dim):
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: {_sizes(input)}")
    t = t.reshape(nframe, dim)
    valid = np.cumprod(t >= 0, axis=1).astype(bool)  # the targets up to the first negative
    if bool(((t >= dim) & valid).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    safe = np.where(valid, t, 0)
    is_target = np.zeros((nframe, dim), dtype=bool)
    rows = np.repeat(np.arange(nframe), dim)[valid.reshape(-1)]
    is_target[rows, safe[valid]] = True
    x = _as_matrix(input, nframe, dim)
    xt = x.gather(1, like(safe, target))
    z = (1 - xt).unsqueeze(2) + x.unsqueeze(1)
    mask = valid[:, :, None] & ~is_target[:, None, :]
    loss = where(like(mask, target), relu(z), 0.0).sum((1, 2)) / dim
    return _finish(loss, input, reduction)


def multi_margin_loss(
    input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
    size_average: Any = None, reduce: Any = None, reduction: str = "mean",
) -> Tensor:
    """``sum_{i != y} w[y] * max(0, margin - x[y] + x[i])**p / C`` per sample, reduced."""
    _check(input, "multi_margin_loss")
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    target = to_tensor(target, input)
    nframe, dim = _frames(input, target)
    t = target.data
    if not (t.ndim <= 1 and t.size == nframe):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
            f"samples (batch size). Expected target size [{nframe}], but got {list(t.shape)}. "
            f"Input has shape {_sizes(input)}."
        )
    if weight is not None and weight.numel() != dim:
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {_sizes(weight)}")
    t = t.reshape(nframe)
    if bool(((t < 0) | (t >= dim)).any()):
        raise RuntimeError("target out of range")
    x = _as_matrix(input, nframe, dim)
    idx = like(t.reshape(nframe, 1), target)
    z = (margin - x.gather(1, idx)) + x
    h = relu(z) if p == 1 else relu(z) * relu(z)
    if weight is not None:
        h = h * to_tensor(weight, input).reshape(-1)[like(t, target)].unsqueeze(1)
    own = np.arange(dim)[None, :] == t[:, None]
    loss = where(like(own, target), 0.0, h).sum(1) / dim
    return _finish(loss, input, reduction)
