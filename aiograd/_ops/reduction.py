"""Reductions: sum, mean (more come with var, max, min, prod, logsumexp, softmax)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._util import Node, Tensor, attach, edge_of, needs_grad, wrap
from .shape import _dim

__all__ = ["sum", "mean"]


def axes_of(dim: int | Sequence[int] | None, ndim: int) -> tuple[int, ...] | None:
    """Normalise ``dim`` (int, tuple or None) to sorted non-negative axes; None means all."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not dims:
        return None
    axes = sorted({_dim(int(d), ndim) for d in dims}) if ndim else []
    if ndim and len(axes) != len(dims):
        raise RuntimeError("dim appears multiple times in the list of dims")
    return tuple(axes)


def expand_reduced(grad: Tensor, shape: tuple[int, ...], axes: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """Broadcast a reduction's gradient back over the reduced dims."""
    if axes is None:
        axes = tuple(range(len(shape)))
    if not keepdim:
        for a in axes:
            grad = grad.unsqueeze(a)
    return grad.expand(shape)


class SumBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (expand_reduced(grads[0], self.shape, self.axes, self.keepdim),)


def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (int, tuple, or None for all)."""
    axes = axes_of(dim, input.data.ndim)
    data = input.data
    if data.dtype == np.bool_ and dtype is None:
        dtype = np.int64
    out = wrap(data.sum(axis=axes, keepdims=keepdim, dtype=dtype))
    if needs_grad(input):
        node = attach(SumBackward0((edge_of(input),)), out)
        node.shape, node.axes, node.keepdim = data.shape, axes, keepdim
    return out


class MeanBackward0(Node):
    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (expand_reduced(grads[0] / self.count, self.shape, self.axes, self.keepdim),)


def mean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim`` (int, tuple, or None for all)."""
    data = input.data
    if data.dtype.kind != "f" and dtype is None:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {data.dtype}"
        )
    axes = axes_of(dim, data.ndim)
    out = wrap(data.mean(axis=axes, keepdims=keepdim, dtype=dtype))
    if needs_grad(input):
        node = attach(MeanBackward0((edge_of(input),)), out)
        count = data.size if axes is None else int(np.prod([data.shape[a] for a in axes]))
        node.shape, node.axes, node.keepdim, node.count = data.shape, axes, keepdim, float(count)
    return out


TENSOR_METHODS = {"sum": sum, "mean": mean}
