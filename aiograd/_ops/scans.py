"""Scans: ``cumsum`` and ``cumprod`` along one dim, as PyTorch's, with their backward formulas.

The backward of a cumulative sum is a cumulative sum from the other end (PyTorch's
``reversed_cumsum``); both directions are one node, ``CumsumBackward0``, so every order of
derivative is again a scan. ``cumprod``'s backward is PyTorch's ``cumprod_backward``: without
zeros in the input ``reversed_cumsum(result * grad) / input``; with zeros, at first order PyTorch's
O(n) formula, and under ``create_graph`` an exact one with no division (see
``_cumprod_grad_with_zeros``), differentiable again.

Backward formulas address the scanned dim from the end (a negative dim), so that the leading
batch dims of ``grad(..., is_grads_batched=True)`` pass through them untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._division_util import refuse_kinds
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, first_order, like, needs_grad, not_tensor, save
from .indexing import getitem
from .joining import cat
from .quiet import quietly
from .shape import _dim

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["cumsum", "cumprod"]


def _scan_dim(input: Tensor, dim: Any, fname: str) -> int:
    """``dim`` checked as PyTorch does and counted from the end (-1 for a 0-d input)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{fname}(): argument 'dim' must be int, not {type(dim).__name__}")
    ndim = input.data.ndim
    return _dim(int(dim), ndim) - max(ndim, 1)


def _cast(input: Tensor, dtype: Any, fname: str = "cumsum") -> Tensor:
    """``input`` in the scan's dtype: ``dtype`` if given, else int64 for bool and integer inputs
    (PyTorch's promotion for cumulative sums and products). PyTorch refuses a bool ``dtype``
    (no ``<fname>_out`` kernel) unless there is at most one element, and an integral one for an input that requires grad."""
    if dtype is not None:
        out: Tensor = input.to(dtype)  # type: ignore[attr-defined]
        kind = out.data.dtype.kind
        if out.data.ndim and out.data.size:  # (a 0-d or empty one is computed)
            refuse_kinds(f"{fname}_out", out.data.dtype, "b")
        if kind in "iu" and needs_grad(input):
            raise RuntimeError(f"Autograd not support dtype: {scalar_type_name(out.data.dtype)}")
        return out
    if input.data.dtype.kind in "biu":
        return input.to(np.int64)  # type: ignore[attr-defined, no-any-return]
    return input


def _along(d: int, index: Any) -> tuple[Any, ...]:
    """An index that applies ``index`` to dim ``d`` (negative) and keeps every other dim, the
    leading batch dims included."""
    return (Ellipsis, index) + (slice(None),) * (-d - 1)


# ------------------------------------------------------------------------------ cumsum
@backward(batched=True)
def CumsumBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The adjoint of a cumulative sum is the cumulative sum in the other direction."""
    if self.dim is None:  # a 0-d input: the identity (its gradient may carry batch dims)
        return (grads[0],)
    return (_cumsum(grads[0], self.dim, not self.reverse),)


def _cumsum(input: Tensor, d: int, reverse: bool) -> Tensor:
    """The cumulative sum along ``d`` (negative), from the end when ``reverse``."""
    data, xp = input.data, input._device.xp
    if data.ndim == 0:
        values = data.copy()
    elif reverse:  # (quietly: inf + -inf is NaN without a word, as PyTorch)
        values = xp.flip(quietly(xp.cumsum, xp.flip(data, d), d, data.dtype), d)
    else:
        values = quietly(xp.cumsum, data, d, data.dtype)  # (numpy's would widen small ints)
    if values.dtype.kind == "f":
        # PyTorch's accumulator starts at +0.0, so its sums are never -0.0 (numpy's first one is
        # the first element itself): adding +0.0 turns exactly the -0.0s into +0.0
        values += values.dtype.type(0.0)
    out = like(values, input)
    if needs_grad(input):
        node = attach(CumsumBackward0((edge_of(input),)), out)
        node.dim, node.reverse = (d if data.ndim else None), reverse
    return out


@op(CumsumBackward0)
def cumsum(input: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """Cumulative sum along ``dim``, as ``torch.cumsum``; bool and integer inputs give int64
    unless ``dtype`` says otherwise (the input is cast to ``dtype`` first)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("cumsum", input)
    d = _scan_dim(input, dim, "cumsum")
    return _cumsum(_cast(input, dtype), d, False)


# ------------------------------------------------------------------------------ cumprod
def _cumprod_grad_with_zeros(x: Tensor, g: Tensor, d: int) -> Tensor:
    """d/dx_k of sum_j g_j * prod_{i<=j} x_i, exactly, when some x are zero (no division).

    It is ``L_k * S_k``: ``L_k`` the product of the factors before k (an exclusive cumulative
    product) and ``S_k = sum_{j>=k} g_j * prod_{k<i<=j} x_i``, built from the end by
    ``S_k = g_k + x_{k+1} * S_{k+1}``. A polynomial in x and g written with aiograd ops, so it
    differentiates again exactly (PyTorch falls back to an O(n^2) formula for that).
    """
    shape = list(x.data.shape)
    n, shape[d] = shape[d], 1
    ones = like(x._device.xp.ones(tuple(shape), dtype=x.data.dtype), x)
    left = _cumprod(cat([ones, getitem(x, _along(d, slice(0, n - 1)))], d), d)
    tails = [getitem(g, _along(d, slice(n - 1, n)))]
    for k in range(n - 2, -1, -1):
        tails.append(getitem(g, _along(d, slice(k, k + 1))) + getitem(x, _along(d, slice(k + 1, k + 2))) * tails[-1])
    return left * cat(tails[::-1], d)


@backward(saved=("x", "result"), batched=True)
def CumprodBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's cumprod_backward: ``reversed_cumsum(result * grad) / input`` when no factor is
    zero, else the exact product form of ``_cumprod_grad_with_zeros``."""
    g, d = grads[0], self.dim
    x = self.x.unpack(self)
    if x.data.size <= 1 or x.data.shape[d] == 1:
        return (g,)
    if not (x.data == 0).any():
        result = self.result.unpack(self)
        return (_cumsum(result * g, d, True) / x,)
    if first_order():  # first order: PyTorch's O(n) formula, NaN and inf as it gives them
        result = self.result.unpack(self)
        return (like(quietly(_first_order_with_zeros, g._device.xp, x.data, g.data, result.data, d), g),)
    return (_cumprod_grad_with_zeros(x, g, d),)


def _first_order_with_zeros(xp: Any, x: Any, g: Any, result: Any, d: int) -> Any:
    """PyTorch's first-order cumprod_backward with zeros in the input, on arrays: before a
    slice's first zero ``reversed_cumsum(result * g) / x``; at the first zero the product of
    the factors before it times ``sum_j g_j * prod_{z1<i<=j} x_i`` up to the second zero; zero
    after it."""
    zero = x == 0
    count = xp.cumsum(zero, axis=d)
    before, upto_second = count == 0, count == 1
    first = zero & upto_second
    between = upto_second & ~first
    w = xp.where(before, result * g, 0.0)
    out = xp.where(before, xp.flip(xp.cumsum(xp.flip(w, d), axis=d), d) / x, 0.0)
    ones = xp.ones((), dtype=x.dtype)
    after_first = xp.cumprod(xp.where(between, x, ones), axis=d) * xp.where(upto_second, g, 0.0)
    at_first = after_first.sum(axis=d, keepdims=True)
    index = xp.argmax(upto_second, axis=d, keepdims=True)
    prefix = xp.take_along_axis(result, xp.maximum(index - 1, 0), axis=d)
    at_first = at_first * xp.where(index == 0, ones, prefix)
    return xp.where(first, at_first, out).astype(g.dtype, copy=False)


def _cumprod(input: Tensor, d: int) -> Tensor:
    data, xp = input.data, input._device.xp
    out = like(data.copy() if data.ndim == 0 else quietly(xp.cumprod, data, d, data.dtype), input)
    if needs_grad(input):
        node = attach(CumprodBackward0((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.dim = d
    return out


@op(CumprodBackward0)
def cumprod(input: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """Cumulative product along ``dim``, as ``torch.cumprod`` (bool and integer inputs give
    int64); its gradient is exact also where the input has zeros."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("cumprod", input)
    d = _scan_dim(input, dim, "cumprod")
    return _cumprod(_cast(input, dtype, "cumprod"), d)


TENSOR_METHODS = {"cumsum": cumsum, "cumprod": cumprod}
