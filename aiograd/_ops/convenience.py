"""Small torch conveniences built from the other families: ``t``, ``*_as``, ``square``, ``std``,
``norm``, ``contiguous``. Composites are differentiable (to any order) through their parts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._registry import backward, op, register
from ._util import Tensor, attach, edge_of, grad_enabled, like, needs_grad, save
from .casting import ToCopyBackward0
from .elementwise import PowBackward0, clone, where
from .reduction import axes_of, expand_reduced, var_grad, variance
from .shape import ExpandBackward0, TransposeBackward0, ViewBackward0, expand, reshape, transpose

__all__ = ["t", "square", "std", "norm"]



@op(TransposeBackward0)
def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dimensions (``input.t()``)."""
    if input.data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.data.ndim}D")
    return transpose(input, 0, 1) if input.data.ndim == 2 else input


@op(ExpandBackward0)
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``."""
    return expand(input, other.data.shape)


@op(ViewBackward0)
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.shape)``."""
    return reshape(input, other.data.shape)


reshape_as = register("reshape_as", view_as, ViewBackward0)


@op()
def contiguous(input: Tensor) -> Tensor:
    """``input`` itself when its array is C-contiguous, else a recorded contiguous copy."""
    if input.data.flags.c_contiguous:
        return input
    out = clone(input)
    out.data = input._device.xp.ascontiguousarray(out.data)
    return out


def is_contiguous(input: Tensor) -> bool:
    """True if the array is C-contiguous."""
    return bool(input.data.flags.c_contiguous)


def is_floating_point(input: Tensor) -> bool:
    """True for floating point dtypes."""
    return input.data.dtype.kind == "f"


@op(ToCopyBackward0)
def type_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` cast to ``other``'s dtype (differentiable)."""
    return input.to(other)  # type: ignore[attr-defined, no-any-return]


@op(PowBackward0)
def square(input: Tensor) -> Tensor:
    """Elementwise ``input ** 2``."""
    return input**2


@backward(saved=("x", "result"))
def StdBackward0(self: Any, grads: list[Any]) -> Any:
    """PyTorch's std_backward: the variance's gradient of ``grad / (2 * std)``, taken as 0 where
    the std is 0 (a constant slice has gradient 0, not NaN)."""
    g, result = grads[0], self.result.unpack(self)
    zero = result.data == 0  # a device-less constant
    return (var_grad(self, where(zero, 0.0, g / where(zero, 1.0, result * 2.0))),)


@op(StdBackward0)
def std(
    input: Tensor,
    dim: int | Sequence[int] | bool | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    *,
    correction: float | None = None,
) -> Tensor:
    """Standard deviation: ``sqrt(var(...))`` with ``var``'s arguments (one node, as PyTorch)."""
    values, axes, dof = variance(input, dim, unbiased, keepdim, correction, "std")
    out = like(input._device.xp.sqrt(values), input)
    if needs_grad(input):
        node = attach(StdBackward0((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.shape, node.axes, node.keepdim = input.data.shape, axes, keepdim
        node.scale = 2.0 / dof if dof > 0 else float("inf")
    return out


@backward(saved=("x", "result"))
def LinalgVectorNormBackward0(self: Any, grads: list[Any]) -> Any:
    """Backward of the 2-norm: ``g * x / norm``, and 0 where the norm is 0 (as PyTorch)."""
    g = grads[0]
    x, result = self.x.unpack(self), self.result.unpack(self)
    if not grad_enabled():
        xp = g._device.xp
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = xp.where(result.data == 0, 0.0, g.data / result.data).astype(g.data.dtype)
        if self.axes is not None and not self.keepdim:
            scale = xp.expand_dims(scale, self.axes)
        out = like(x.data * scale, g)
        return (out,)
    zero = result.data == 0  # a device-less constant
    safe = where(zero, 1.0, result)
    scale = where(zero, 0.0, g / safe)
    return (x * expand_reduced(scale, x.data.shape, self.axes, self.keepdim),)


@op(LinalgVectorNormBackward0)
def norm(
    input: Tensor, p: float | str = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False
) -> Tensor:
    """The vector p-norm over ``dim`` (all elements by default); ``p`` = 2, 1, inf or any p > 0."""
    data = input.data
    if data.dtype.kind != "f":
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {data.dtype}"
        )
    if p == "fro":
        p = 2
    axes = axes_of(dim, data.ndim)
    if p == 2:
        out = like(input._device.xp.sqrt(input._device.xp.square(data).sum(axis=axes, keepdims=keepdim)), input)
        if needs_grad(input):
            node = attach(LinalgVectorNormBackward0((edge_of(input),)), out)
            node.x, node.result = save(input), save(out, is_output=True)
            node.axes, node.keepdim = axes, keepdim
        return out
    magnitude = input.abs()
    if p == float("inf"):
        if axes is None:
            return magnitude.max()
        for axis in reversed(axes):  # max is associative: reduce one dim at a time
            magnitude = magnitude.max(axis, keepdim=True).values
        return magnitude if keepdim else magnitude.squeeze(axes)
    if p == 1:
        return magnitude.sum(dim, keepdim)
    if not isinstance(p, (int, float)) or p <= 0:
        raise RuntimeError(f"norm(): p must be a positive number, 'fro' or inf, but got {p}")
    return (magnitude**p).sum(dim, keepdim) ** (1.0 / p)


def _pos(input: Tensor) -> Tensor:
    return input


TENSOR_METHODS: dict[str, Any] = {
    "t": t,
    "expand_as": expand_as,
    "view_as": view_as,
    "reshape_as": reshape_as,
    "contiguous": contiguous,
    "is_contiguous": is_contiguous,
    "is_floating_point": is_floating_point,
    "type_as": type_as,
    "square": square,
    "std": std,
    "norm": norm,
    "__pos__": _pos,
}
