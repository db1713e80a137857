"""torch.nn.functional's binary and distribution losses: ``binary_cross_entropy``,
``binary_cross_entropy_with_logits`` and ``kl_div`` (the regression losses and the checks they
share are in ``_losses``).

``kl_div`` is a composite of aiograd ops, as PyTorch's; the other two record one node each, with
PyTorch's formulas (``binary_cross_entropy_backward`` in ATen's Loss.cpp,
``binary_cross_entropy_with_logits_backward`` in FunctionsManual.cpp) written with aiograd ops.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._ops._registry import backward
from .._ops._util import (
    Tensor,
    common_device,
    infer_size,
    not_tensor,
    to_tensor,
)
from .._ops.binary_math import xlogy
from .._ops.casting import result_type
from .._ops.elementwise import DivBackward0, MulBackward0, SubBackward0, where
from .._ops.reduction import MeanBackward0, SumBackward0
from ._losses import (
    _constant,
    _loss_output,
    _reduce,
    _register,
    _saved_operands,
    _times_weight,
    legacy_reduction,
    size_of,
)

__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"]

#: binary_cross_entropy_backward's floor on ``x * (1 - x)``: ATen's ``EPSILON``, a C++ float.
_BCE_EPSILON = float(np.float32(1e-12))


# ------------------------------------------------------------------------------ binary_cross_entropy
@backward(name="BinaryCrossEntropyBackward0", saved=("input", "target"), batched=True)
def _BinaryCrossEntropyBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Input: ``g * (x - y) / max(x * (1 - x), 1e-12)``; target: ``-g * logit(x)``; both times
    the weight (and over the element count for ``'mean'``), as ATen's."""
    x, y, g = _saved_operands(self, grads, batch)
    w = self.weight
    ex, ey = self.next_edges
    gx = gy = None
    if ex is not None:
        gx = _times_weight(g * (x - y) / ((1.0 - x) * x).clamp(min=_BCE_EPSILON), w)
    if ey is not None:
        gy = _times_weight(-(x / (1.0 - x)).log() * g, w)
    return (gx, gy)


@_register(_BinaryCrossEntropyBackward0)
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
) -> Tensor:
    """``-w * (y * log(x) + (1 - y) * log(1 - x))`` for probabilities ``x`` (each log clamped at
    -100, as PyTorch's), reduced. ``weight`` broadcasts to the input and gets no gradient."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("binary_cross_entropy", input)
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = to_tensor(target, input)
    if input.data.shape != target.data.shape:
        raise ValueError(
            f"Using a target size ({size_of(target)}) that is different to the input size "
            f"({size_of(input)}) is deprecated. Please ensure they have the same size."
        )
    xp = common_device(input, target, weight).xp
    w = _constant(weight, input, "weight", "binary_cross_entropy")
    if w is not None:
        w = _broadcast_weight(xp, w, input.data.shape)
    if target.data.dtype != input.data.dtype:
        raise RuntimeError(
            f"Found dtype {scalar_type_name(target.data.dtype)} but expected {scalar_type_name(input.data.dtype)}"
        )
    x, y = input.data, target.data
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not bool(((y >= 0) & (y <= 1)).all()):  # (NaN fails it too, as there)
        raise RuntimeError("all elements of target should be between 0 and 1")
    with np.errstate(all="ignore"):
        losses = (y - 1) * xp.maximum(xp.log1p(-x), -100.0) - y * xp.maximum(xp.log(x), -100.0)
        if w is not None:
            losses = losses * w
    losses = losses.astype(x.dtype, copy=False)
    return _loss_output(_BinaryCrossEntropyBackward0, xp, losses, input, target, reduction, weight=w)


def _broadcast_weight(xp: Any, w: Any, shape: tuple[int, ...]) -> Any:
    """``weight.expand(broadcast_shapes(target, weight))``, with torch.broadcast_shapes' error."""
    for i in range(1, w.ndim + 1):
        have = shape[-i] if i <= len(shape) else 1
        if w.shape[-i] not in (1, have) and i <= len(shape):
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {w.shape[-i]} at {-i}! Mismatching "
                f"argument at index 1 had aiograd.Size({list(w.shape)}); but expected shape should be "
                f"broadcastable to {list(shape)}"
            )
    return xp.broadcast_to(w, np.broadcast_shapes(shape, w.shape))


# ------------------------------------------------------------------------------ ..._with_logits
def log_sigmoid(x: Tensor) -> Tensor:
    """``log(sigmoid(x))`` without overflow: ``min(x, 0) - log1p(exp(-|x|))``, recorded."""
    return where(x < 0, x, 0.0) - (-x.abs()).exp().log1p()


@backward(name="BinaryCrossEntropyWithLogitsBackward0", saved=("input", "target"), batched=True)
def _BinaryCrossEntropyWithLogitsBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Input: ``(sigmoid(x) - y)``, or ``(p*y + 1 - y) * sigmoid(x) - p*y`` with ``pos_weight``
    ``p``; target: ``-x``, or ``log_sigmoid(-x) - p * log_sigmoid(x)``; times ``g`` and the
    weight (FunctionsManual.cpp's ``binary_cross_entropy_with_logits_backward``)."""
    x, y, g = _saved_operands(self, grads, batch)
    w, p = self.weight, self.pos_weight
    ex, ey = self.next_edges
    gx = gy = None
    if ex is not None:
        if p is None:
            gx = (x.sigmoid() - y) * g
        else:
            t = y * p
            gx = ((t + 1.0 - y) * x.sigmoid() - t) * g
        gx = _times_weight(gx, w)
    if ey is not None:
        gy = _times_weight(-x * g if p is None else (log_sigmoid(-x) - log_sigmoid(x) * p) * g, w)
    return (gx, gy)


@_register(_BinaryCrossEntropyWithLogitsBackward0)
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed from the logits without overflow:
    ``(1 - y) * x - log_sigmoid(x) * (1 + (pos_weight - 1) * y)``, times ``weight``, reduced.
    ``weight`` and ``pos_weight`` broadcast to the input and get no gradient."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("binary_cross_entropy_with_logits", input)
    reduction = legacy_reduction(size_average, reduce, reduction)
    target = to_tensor(target, input)
    if input.data.shape != target.data.shape:
        raise ValueError(f"Target size ({size_of(target)}) must be the same as input size ({size_of(input)})")
    xp = common_device(input, target, weight, pos_weight).xp
    w = _constant(weight, input, "weight", "binary_cross_entropy_with_logits")
    p = _constant(pos_weight, input, "pos_weight", "binary_cross_entropy_with_logits")
    shape = input.data.shape
    x, y = input.data, target.data
    # torch's order of work: log_sigmoid(input), then (1 - target).mul_(input): the loss has the
    # target's (floating) dtype
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for \'{scalar_type_name(x.dtype)}\'')
    if y.dtype.kind == "b":
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if y.dtype.kind != "f":
        raise RuntimeError(
            f"result type {scalar_type_name(result_type(input, target))} can't be cast to the "
            f"desired output type {scalar_type_name(y.dtype)}"
        )
    with np.errstate(all="ignore"):
        log_sig = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))
        if p is not None:
            infer_size(p.shape, shape)  # ((pos_weight - 1) * target)
            log_sig = log_sig * ((p - 1) * y + 1)
        losses = (1 - y) * x - log_sig
        if w is not None:
            infer_size(losses.shape, w.shape)
            losses = losses * w
    losses = losses.astype(y.dtype, copy=False)
    return _loss_output(
        _BinaryCrossEntropyWithLogitsBackward0, xp, losses, input, target, reduction, weight=w, pos_weight=p
    )


# ------------------------------------------------------------------------------ kl_div
@_register(SubBackward0, MulBackward0, MeanBackward0, SumBackward0, DivBackward0)
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``:
    ``target * (log(target) - input)`` elementwise (``exp(target) * (target - input)`` with
    ``log_target``), reduced; ``'batchmean'`` divides the sum by the batch size (the first dim),
    ``'mean'`` by the element count, with PyTorch's warning. A composite, as in PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("kl_div", input)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.",
                UserWarning,
                stacklevel=2,
            )
        legacy_reduction(None, None, "sum" if reduction == "batchmean" else reduction)
    target = to_tensor(target, input)
    if input.data.dtype.kind in "biu" or target.data.dtype.kind in "biu":
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        losses = target.exp() * (target - input)
    else:
        losses = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = losses.sum()
        return total / input.data.shape[0] if input.data.ndim else total  # type: ignore[no-any-return]
    return _reduce(losses, reduction)
