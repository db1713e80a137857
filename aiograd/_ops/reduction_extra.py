"""More reductions, as PyTorch's: ``amax`` and ``amin`` (differentiable, the gradient split evenly
among ties), and the logical and counting ones ``all``, ``any`` and ``count_nonzero`` (no gradient).

Kept apart from ``reduction`` (sum, mean, var, max, min, prod, argmax, argmin) so that each module
stays small; the dim handling (``axes_of``, ``expand_reduced``) and PyTorch's errors for a reduction
over nothing are shared from there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._division_util import record_not_implemented
from ._reduce_util import _check_nonempty, axes_of, expand_reduced
from ._registry import backward, op, variant
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from .shape import _dim

__all__ = ["amax", "amin", "all", "any", "count_nonzero", "histc", "bincount"]


@backward(batched=True)
def AmaxBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's ``scale_grad_by_count``: ``grad / count * mask``, the mask marking the elements
    equal to their slice's result and ``count`` how many there are per slice (a tie shares the
    gradient evenly; a NaN slice gets NaN, as PyTorch)."""
    g = expand_reduced(grads[0], self.mask.shape, self.axes, self.keepdim)
    return ((g / self.count) * self.mask,)


AminBackward0 = variant("AminBackward0", AmaxBackward0)


def _first_extreme(xp: Any, data: Any, axes: tuple[int, ...] | None, keepdim: bool, largest: bool) -> Any:
    """The extreme over ``axes`` as the element ``argmax``/``argmin`` finds: of equal elements
    (0.0 and -0.0) the first, as PyTorch's amax/amin keep it (numpy's max keeps the last);
    the first NaN of a slice that has one."""
    if axes == ():
        return data.copy()
    axes = tuple(range(data.ndim)) if axes is None else axes
    kept = [a for a in range(data.ndim) if a not in axes]
    reduced = int(np.prod([data.shape[a] for a in axes]))  # (not -1: kept dims may be empty)
    flat = xp.transpose(data, kept + list(axes)).reshape(tuple(data.shape[a] for a in kept) + (reduced,))
    find = xp.argmax if largest else xp.argmin
    values = xp.take_along_axis(flat, find(flat, axis=-1, keepdims=True), axis=-1)[..., 0]
    return xp.expand_dims(values, axes) if keepdim else values


def _extreme(input: Tensor, dim: Any, keepdim: bool, largest: bool) -> Tensor:
    fname = "amax" if largest else "amin"
    data, xp = input.data, input._device.xp
    if data.size == 0 and isinstance(dim, (tuple, list)) and data.ndim:
        # PyTorch's order: a dim of size 0 is refused before a repeated dim
        _check_nonempty(data, tuple(_dim(int(d), data.ndim) for d in dim), fname)
    axes = axes_of(dim, data.ndim)
    _check_nonempty(data, axes, fname)
    out = like(_first_extreme(xp, data, axes, keepdim, largest), input)
    if needs_grad(input):
        # the result back in the input's rank (a full reduction's 0-d result broadcasts as it is)
        full = xp.expand_dims(out.data, axes) if axes and not keepdim else out.data
        mask = data == full
        count = mask.sum(axis=axes, keepdims=True)
        # A NaN slice has no element equal to its result: PyTorch's ``grad / 0 * 0`` makes its
        # gradient NaN. The same NaN comes from a NaN factor over a count of 1, without the
        # invalid-value warning numpy would give for inf * 0.
        empty = count == 0
        node = attach((AmaxBackward0 if largest else AminBackward0)((edge_of(input),)), out)
        node.mask = xp.where(empty, data.dtype.type(np.nan), mask.astype(data.dtype))
        node.count = xp.where(empty, 1, count).astype(data.dtype)
        node.axes, node.keepdim = axes, keepdim
    return out


@op(AmaxBackward0)
def amax(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """The largest value over ``dim`` (an int or a tuple; all dims by default), as ``torch.amax``.

    Unlike ``max(input, dim)`` it returns no indices and shares the gradient evenly among the
    elements equal to the maximum.
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("amax", input)
    return _extreme(input, dim, keepdim, True)


@op(AminBackward0)
def amin(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """The smallest value over ``dim``, as ``torch.amin``: see :func:`amax`."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("amin", input)
    return _extreme(input, dim, keepdim, False)


def _logical(input: Tensor, dim: Any, keepdim: bool, name: str) -> Tensor:
    data, xp = input.data, input._device.xp
    # dim=() reduces over no dimension (elementwise), as PyTorch's all/any, not over all of them
    axes = () if isinstance(dim, (tuple, list)) and not dim else axes_of(dim, data.ndim)
    result = getattr(xp, name)(data, axis=axes, keepdims=keepdim)
    # uint8 in, uint8 out: PyTorch keeps that dtype (its old boolean type); every other one gives bool
    dtype = np.uint8 if data.dtype == np.uint8 else np.bool_
    return like(xp.asarray(result).astype(dtype), input)


@op()
def all(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """True where every element over ``dim`` (int, tuple, or None for all) is non-zero; bool (uint8
    for a uint8 input), not differentiable, as ``torch.all``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("all", input)
    return _logical(input, dim, keepdim, "all")


@op()
def any(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """True where some element over ``dim`` is non-zero, as ``torch.any``: see :func:`all`."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("any", input)
    return _logical(input, dim, keepdim, "any")


@op()
def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """How many elements over ``dim`` (int, tuple, or None for all) are non-zero; int64, as
    ``torch.count_nonzero`` (which has no ``keepdim``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("count_nonzero", input)
    data, xp = input.data, input._device.xp
    axes = axes_of(dim, data.ndim)
    return like(xp.asarray(xp.count_nonzero(data, axis=axes)).astype(np.int64), input)


TENSOR_METHODS = {"amax": amax, "amin": amin, "all": all, "any": any, "count_nonzero": count_nonzero}


# ------------------------------------------------------------------------------ histc, bincount
def _c_number(v: float) -> str:
    """A bound as PyTorch's message prints it (C++'s stream: ``1``, ``2.5``, ``inf``, ``-nan``)."""
    return "-nan" if math.isnan(v) else f"{v:g}"


@op()
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """The histogram of ``input``'s elements: ``bins`` equal-width bins over ``[min, max]`` (the
    data's range where ``min == max``, widened by one each way if that is a point); elements
    outside are ignored, the last bin includes ``max``. Floating point only; no gradient."""
    if not isinstance(input, Tensor):
        raise not_tensor("histc", input)
    xp, x = input._device.xp, input.data
    if x.dtype.kind not in "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{scalar_type_name(x.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_c_number(lo)}, {_c_number(hi)}] is not finite")
    flat = x.reshape(-1)
    flat = flat[(flat >= lo) & (flat <= hi)]
    edges = xp.linspace(lo, hi, bins + 1).astype(x.dtype)
    pos = xp.clip(xp.searchsorted(edges, flat, side="right") - 1, 0, bins - 1)
    return like(xp.bincount(pos, minlength=bins).astype(x.dtype), input)


@op()
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value ``0..max(input)`` occurs in the 1-D non-negative integer ``input``
    (at least ``minlength`` counts); with ``weights``, their sums instead (float64 for integer
    weights). No derivative: weights that require grad give PyTorch's ``NotImplemented`` node."""
    if not isinstance(input, Tensor):
        raise not_tensor("bincount", input)
    xp, x = input._device.xp, input.data
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{scalar_type_name(x.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and int(x.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return like(xp.bincount(x, minlength=minlength).astype(np.int64), input)
    w = weights.data
    if w.ndim != 1 or w.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    out = like(xp.bincount(x, weights=w.astype(np.float64), minlength=minlength).astype(dtype), input)
    record_not_implemented("bincount", out, weights)
    return out


TENSOR_METHODS.update({"histc": histc, "bincount": bincount})
