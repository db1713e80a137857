"""torch.nn.functional's regression losses, ``l1_loss``, ``smooth_l1_loss`` and ``huber_loss``,
and the checks and reductions every loss shares (``_binary_losses`` has the binary and
distribution ones).

As in PyTorch, ``l1_loss`` is a composite of aiograd ops (its nodes are ``AbsBackward0``,
``MeanBackward0``, ...), while the other two record one node each
(``SmoothL1LossBackward0``, ...). Those nodes' formulas are PyTorch's (``smooth_l1_loss_backward``,
``binary_cross_entropy_backward`` in ATen's Loss.cpp, ``binary_cross_entropy_with_logits_backward``
in FunctionsManual.cpp), written with aiograd ops, so a loss can be differentiated twice. A
reduced loss's gradient is a one-element tensor; ``per_sample_scalar`` shapes it (with the batch
dims of ``grad(..., is_grads_batched=True)`` in front) to broadcast against the elements.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._ops._registry import backward, register
from .._ops._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    infer_size,
    like,
    needs_grad,
    not_tensor,
    save,
    to_tensor,
)
from .._ops.batching import per_sample_scalar
from .._ops.casting import result_type
from .._ops.elementwise import DivBackward0, MulBackward0, where
from .._ops.quiet import quietly
from .._ops.reduction import MeanBackward0, SumBackward0
from .._ops.shape import broadcast_to
from .._ops.unary_math import AbsBackward0

__all__ = [
    "huber_loss",
    "l1_loss",
    "legacy_reduction",
    "smooth_l1_loss",
    "target_size_warning",
]

_REDUCTIONS = ("none", "mean", "sum")


def _register(*nodes: type[Any]) -> Any:
    """Register a loss under its own name in the ``losses`` family of the op table."""

    def deco(forward: Any) -> Any:
        return register(forward.__name__, forward, *nodes, family="losses")

    return deco


# ------------------------------------------------------------------------------ shared checks
def legacy_reduction(size_average: Any, reduce: Any, reduction: str, stacklevel: int = 3) -> str:
    """Check ``reduction``; map the deprecated ``size_average``/``reduce`` flags as PyTorch's
    ``_Reduction.legacy_get_string`` does, with its warning."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
        warnings.warn(
            "size_average and reduce args will be deprecated, please use "
            f"reduction='{reduction}' instead.",
            UserWarning,
            stacklevel=stacklevel,
        )
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def size_of(t: Tensor) -> str:
    """A shape as PyTorch's messages write it (``aiograd.Size([2, 3])``)."""
    return f"aiograd.Size({list(t.data.shape)})"


def target_size_warning(input: Tensor, target: Tensor, stacklevel: int = 3) -> None:
    """PyTorch's warning for a target shaped unlike the input (it will be broadcast)."""
    if input.data.shape != target.data.shape:
        warnings.warn(
            f"Using a target size ({size_of(target)}) that is different to the input size "
            f"({size_of(input)}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            UserWarning,
            stacklevel=stacklevel,
        )


def _broadcast_pair(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.broadcast_tensors(input, target)`` (expanded views; nothing when equal)."""
    if input.data.shape == target.data.shape:
        return input, target
    shape = infer_size(input.data.shape, target.data.shape)
    return broadcast_to(input, shape), broadcast_to(target, shape)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """ATen's ``apply_loss_reduction`` on a recorded loss (``mean`` of nothing is NaN)."""
    if reduction == "mean":
        return loss.mean()  # type: ignore[no-any-return]
    if reduction == "sum":
        return loss.sum()  # type: ignore[no-any-return]
    return loss


def _reduce_array(xp: Any, losses: Any, reduction: str) -> Any:
    """``apply_loss_reduction`` on the elementwise losses' array."""
    if reduction == "mean":
        return xp.asarray(quietly(losses.mean)).astype(losses.dtype, copy=False)
    if reduction == "sum":
        return xp.asarray(losses.sum()).astype(losses.dtype, copy=False)
    return losses


def _constant(value: Any, input: Tensor, name: str, fname: str) -> Any:
    """A non-differentiable tensor argument (``weight``, ``pos_weight``) as an array on the input's
    device, in its dtype; PyTorch's error if it requires grad."""
    if value is None:
        return None
    if needs_grad(value):
        raise RuntimeError(
            f"The function '{fname}' is not differentiable with respect to argument '{name}'. "
            "This input cannot have requires_grad True."
        )
    data = value.data if isinstance(value, Tensor) else value
    return input._device.xp.asarray(data).astype(input.data.dtype, copy=False)


def _scale(g: Tensor, reduction: str, ndim: int, numel: int, batch: int) -> Tensor:
    """The gradient of the loss elements: the output's, broadcast back (behind ``batch`` batch
    dims), over ``numel`` for mean."""
    if reduction == "none":
        return g
    g = per_sample_scalar(g, ndim, batch)
    if reduction == "sum":
        return g
    return g * (1.0 / numel if numel else float("nan"))  # (an empty mean: an empty gradient)


def record_loss(cls: type[Any], out: Tensor, input: Tensor, target: Tensor, reduction: str) -> Any:
    """Attach ``cls`` to ``out`` with the input and target saved, if either requires grad."""
    if not needs_grad(input, target):
        return None
    node: Any = attach(cls((edge_of(input), edge_of(target))), out)
    node.input, node.target, node.reduction = save(input), save(target), reduction
    return node


def _loss_output(
    cls: type[Any], xp: Any, losses: Any, input: Tensor, target: Tensor, reduction: str, **saved: Any
) -> Tensor:
    """The reduced elementwise ``losses`` array as the loss tensor, with node ``cls`` recorded
    (holding ``saved`` besides input, target and reduction) when either operand requires grad."""
    out = like(_reduce_array(xp, losses, reduction), input)
    node = record_loss(cls, out, input, target, reduction)
    if node is not None:
        for name, value in saved.items():
            setattr(node, name, value)
    return out


def _saved_operands(node: Any, grads: list[Any], batch: int) -> tuple[Tensor, Tensor, Tensor]:
    """A loss node's input and target, and its output's gradient scaled to their elements."""
    x, y = node.input.unpack(node), node.target.unpack(node)
    return x, y, _scale(grads[0], node.reduction, x.data.ndim, x.data.size, batch)


def _each_way(node: Any, part: Any, x: Tensor, y: Tensor) -> tuple[Tensor | None, Tensor | None]:
    """``part(x - y)`` for the input and ``part(y - x)`` for the target (so equal operands give
    both +0), for the operands that need one."""
    ex, ey = node.next_edges
    return (part(x - y) if ex is not None else None, part(y - x) if ey is not None else None)


def _promoted_data(input: Tensor, target: Tensor) -> Any:
    """``input - target`` on the arrays, in torch's result type (an integer target counts as the
    input's float dtype: numpy would make int64 with float32 float64)."""
    x, y = input.data, target.data
    if x.dtype != y.dtype:
        dtype = result_type(input, target)
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
    return x - y


def float_target(input: Tensor, target: Tensor) -> Tensor:
    """An integer or bool target (a constant: it never requires grad) as a tensor of the
    result type, for the backward formulas (aiograd's ``-`` refuses bools, as torch's does;
    torch's loss kernels take them)."""
    if target.data.dtype.kind not in "biu" or input.data.dtype.kind not in "fc":
        return target
    return like(target.data.astype(result_type(input, target)), target)


def floating_kernel(kernel: str, input: Tensor, target: Tensor) -> None:
    """torch's NotImplementedError for a loss kernel run on integers (both operands integral)."""
    dtype = result_type(input, target)
    if dtype.kind in "biu":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dtype)}\'')



def _times_weight(grad: Tensor, weight: Any) -> Tensor:
    """``grad * weight``, or ``grad`` without a weight."""
    return grad if weight is None else grad * weight


# ------------------------------------------------------------------------------ l1_loss
@_register(AbsBackward0, MeanBackward0, SumBackward0, MulBackward0, DivBackward0)
def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Absolute error ``|input - target|``, averaged (``'mean'``), summed or kept (``'none'``).

    ``weight`` (shaped as the input) weighs each element; its ``'mean'`` divides by the sum of the
    weights. A composite, as in PyTorch: ``(input - target).abs()`` then the reduction.
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("l1_loss", input)
    target = to_tensor(target, input)
    target_size_warning(input, target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    if weight is None:
        return _reduce((input - target).abs(), legacy_reduction(None, None, reduction))
    _check_weight_shape(input, weight)
    return _weighted((input - target).abs(), weight, reduction, by_weight=True)


def _weighted(losses: Tensor, weight: Any, reduction: str, by_weight: bool) -> Tensor:
    """torch.nn.functional's elementwise-weighted losses: ``'mean'`` is ``sum / weight.sum()``
    (``by_weight``) or the plain mean (huber_loss)."""
    weight = to_tensor(weight, losses)
    weighted = losses * weight
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()  # type: ignore[no-any-return]
    return weighted.sum() / weight.sum() if by_weight else weighted.mean()  # type: ignore[no-any-return]


def _check_weight_shape(input: Tensor, weight: Any) -> None:
    if weight is not None and np.shape(weight.data if isinstance(weight, Tensor) else weight) != input.data.shape:
        raise ValueError("Weights and input must have the same size.")


# ------------------------------------------------------------------------------ smooth_l1_loss
@backward(name="SmoothL1LossBackward0", saved=("input", "target"), batched=True)
def _SmoothL1LossBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``d / beta`` inside ``|d| < beta``, ``sign(d)`` outside, ``d = input - target``; the
    target's is the same with the operands swapped (so equal operands give +0 to both). A NaN
    ``d`` takes the inner branch (NaN), as in ATen's kernel."""
    x, y, g = _saved_operands(self, grads, batch)
    beta = self.beta

    def part(d: Tensor) -> Tensor:
        return where(d <= -beta, -g, where(d >= beta, g, d * g / beta))

    return _each_way(self, part, x, y)


@_register(_SmoothL1LossBackward0, AbsBackward0, MeanBackward0, SumBackward0)
def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: Any = None,
    reduce: Any = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 * d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 * beta`` elsewhere
    (``d = input - target``), reduced. ``beta=0`` is :func:`l1_loss`, as in PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("smooth_l1_loss", input)
    target = to_tensor(target, input)
    target_size_warning(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    if beta == 0.0:
        return _reduce((input - target).abs(), reduction)
    if not beta >= 0:  # (NaN too, as PyTorch's check)
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    xp = common_device(input, target).xp
    floating_kernel("smooth_l1_cpu", input, target)
    with np.errstate(all="ignore"):  # (inf - inf: NaN, silently as torch)
        z = xp.abs(_promoted_data(input, target))
        # PyTorch's kernel: (0.5 * z) * z / beta inside, z - 0.5 * beta outside
        losses = xp.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta).astype(z.dtype, copy=False)
    return _loss_output(_SmoothL1LossBackward0, xp, losses, input, float_target(input, target), reduction, beta=beta)


# ------------------------------------------------------------------------------ huber_loss
@backward(name="HuberLossBackward0", saved=("input", "target"), batched=True)
def _HuberLossBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``d`` inside ``|d| < delta``, ``delta * sign(d)`` outside; the target's with the operands
    swapped (ATen's ``huber_backward``)."""
    x, y, g = _saved_operands(self, grads, batch)
    delta = self.delta

    def part(d: Tensor) -> Tensor:
        return where(d <= -delta, -g * delta, where(d >= delta, g * delta, d * g))

    return _each_way(self, part, x, y)


@_register(_HuberLossBackward0, MulBackward0, MeanBackward0, SumBackward0)
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 * d**2`` where ``|d| < delta``, ``delta * (|d| - 0.5 * delta)`` elsewhere
    (``d = input - target``), reduced. ``weight`` (shaped as the input) weighs each element."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("huber_loss", input)
    target = to_tensor(target, input)
    target_size_warning(input, target)
    input, target = _broadcast_pair(input, target)
    if weight is not None:
        _check_weight_shape(input, weight)
        return _weighted(huber_loss(input, target, "none", delta), weight, reduction, by_weight=False)
    reduction = legacy_reduction(None, None, reduction)
    if not delta > 0:  # (NaN too, as PyTorch's check)
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    xp = common_device(input, target).xp
    x_dt, y_dt = input.data.dtype, target.data.dtype
    if x_dt.kind in "biu":  # torch's huber writes into a tensor of the input's dtype
        if y_dt.kind in "biu":
            raise NotImplementedError(f'"huber_cpu" not implemented for \'{scalar_type_name(x_dt)}\'')
        raise RuntimeError(
            f"result type {scalar_type_name(result_type(input, target))} can't be cast to the "
            f"desired output type {scalar_type_name(x_dt)}"
        )
    with np.errstate(all="ignore"):  # (inf - inf: NaN, silently as torch)
        z = xp.abs(_promoted_data(input, target))
        losses = xp.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)).astype(x_dt, copy=False)
    return _loss_output(_HuberLossBackward0, xp, losses, input, float_target(input, target), reduction, delta=delta)
