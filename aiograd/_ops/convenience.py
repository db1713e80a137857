"""Small torch conveniences built from the other families: ``t``, ``*_as``, ``square``, ``std``,
``norm``, ``contiguous``. Composites are differentiable (to any order) through their parts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import type_name
from ._reduce_util import UNSET, _dtype_name, axes_of, expand_reduced
from ._registry import backward, op, register
from ._util import Tensor, attach, edge_of, first_order, like, needs_grad, not_tensor, save
from ._variance import grad_scale, var_grad, variance
from .casting import ToCopyBackward0
from .elementwise import PowBackward0, where
from .quiet import quietly
from .shape import ExpandBackward0, TBackward0, ViewBackward0, expand, reshape, swapped, view
from .unary_math import clone, sign

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["t", "square", "std", "norm"]



@op(TBackward0)
def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dimensions (``input.t()``): a view, recorded as
    ``TBackward0`` (a 0-D or 1-D tensor's is a view of it unchanged, as PyTorch's)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("t", input)
    ndim = input.data.ndim
    if ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return swapped(input, 0, 1 if ndim == 2 else 0, TBackward0)


@op(ExpandBackward0, top_level=False)
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``."""
    return expand(input, other.data.shape)


@op(ViewBackward0, top_level=False)
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.shape)``: PyTorch's error where no view exists (``reshape_as`` copies)."""
    return view(input, other.data.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.reshape(other.shape)``."""
    return reshape(input, other.data.shape)


register("reshape_as", reshape_as, ViewBackward0, top_level=False)


@op(top_level=False)
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


@op(ToCopyBackward0, top_level=False)
def type_as(input: Tensor, other: Tensor) -> Tensor:
    """``input`` cast to ``other``'s dtype (differentiable)."""
    return input.to(other)  # type: ignore[attr-defined, no-any-return]


@op(PowBackward0)
def square(input: Tensor) -> Tensor:
    """Elementwise ``input ** 2``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("square", input)
    return input**2


@backward(saved=("x", "result"), batched=True, empty_dim=False)
def StdBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's std_backward: the variance's gradient of ``grad / (2 * std)``, taken as 0 where
    the std is 0 (a constant slice has gradient 0, not NaN)."""
    g, result = grads[0], self.result.unpack(self)
    zero = result.data == 0  # a device-less constant
    return (var_grad(self, where(zero, 0.0, g / where(zero, 1.0, result * 2.0))),)


@op(StdBackward0)
def std(
    input: Tensor,
    dim: int | Sequence[int] | bool | None = UNSET,
    unbiased: bool = UNSET,
    keepdim: bool = UNSET,
    *,
    correction: float | None = UNSET,
) -> Tensor:
    """Standard deviation: ``sqrt(var(...))`` with ``var``'s arguments (one node, as PyTorch)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("std", input)
    values, axes, dof = variance(input, dim, unbiased, keepdim, correction, "std", take_sqrt=True, explicit_none=True)
    out = like(values, input)
    if needs_grad(input):
        node = attach(StdBackward0((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.shape, node.axes, node.keepdim = input.data.shape, axes, bool(keepdim)
        grad_scale(node, dim, input.data, dof)
    return out


def _norm_grad(x: Tensor, norm: Tensor, g: Tensor, p: float, axes: tuple[int, ...] | None) -> Tensor:
    """PyTorch's norm_backward for p != 2 (``norm`` and ``g`` already expanded to x's shape),
    in aiograd ops with constant masks, so that it can be differentiated again."""
    data, n = x.data, norm.data
    if p == 1:
        return sign(x) * g
    if abs(p) == float("inf"):  # shared among the maxima (minima: -inf), NaNs counted as such
        magnitude = np.abs(data)
        mask = (magnitude == n) | np.isnan(magnitude)
        count = mask.sum(axis=axes, keepdims=True)
        return sign(x) * ((g / count.astype(data.dtype)) * mask)
    zero_x, zero_norm = data == 0, n == 0
    if p < 1:  # |x| ** (p - 1) is taken as 0 at x == 0
        scaled = sign(x) * where(zero_x, 0.0, where(zero_x, 1.0, x.abs()) ** (p - 1))
        return scaled * g * norm ** (1 - p)
    scaled = sign(x) * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
    return scaled * where(zero_norm, 0.0, g / where(zero_norm, 1.0, norm) ** (p - 1))


@backward(saved=("x", "result"), batched=True)
def LinalgVectorNormBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Backward of the p-norm, as PyTorch's norm_backward: for p = 2 ``g * x / norm``, taken as
    0 where the norm is 0; the other p as ``_norm_grad``."""
    g = grads[0]
    if self.p == 0:  # the count of non-zeros: PyTorch gives no gradient (an undefined one)
        return (None,)
    x, result = self.x.unpack(self), self.result.unpack(self)
    shape = x.data.shape
    if self.p != 2:
        norm = expand_reduced(result, shape, self.axes, self.keepdim)
        g = expand_reduced(g, shape, self.axes, self.keepdim)
        return (_norm_grad(x, norm, g, self.p, self.axes),)  # (its ops are quiet: quiet.py)
    if first_order() and not batch:  # batched: the tensor path puts the batch first
        xp = g._device.xp
        n, gd = result.data, g.data
        if self.axes is not None and not self.keepdim:
            n, gd = xp.expand_dims(n, self.axes), xp.expand_dims(gd, self.axes)
        return (like(quietly(_norm2_vjp, xp, gd, x.data, n), g),)
    norm = expand_reduced(result, shape, self.axes, self.keepdim)
    zero = norm.data == 0  # a device-less constant
    ratio = where(zero, 0.0, x / where(zero, 1.0, norm))
    return (expand_reduced(g, shape, self.axes, self.keepdim) * ratio,)


def _norm2_vjp(xp: Any, gd: Any, x: Any, n: Any) -> Any:
    return gd * xp.where(n == 0, 0.0, x / n).astype(gd.dtype)


def _norm_values(xp: Any, data: Any, p: float, axes: Any, keepdim: bool, count: int) -> Any:
    if count == 1 and p != 0:  # a single element's norm is its magnitude, as PyTorch (no underflow)
        return xp.abs(data).sum(axis=axes, keepdims=keepdim)
    if p == 2:
        return xp.sqrt(xp.square(data).sum(axis=axes, keepdims=keepdim))
    magnitude = xp.abs(data)
    if p == float("inf"):
        return magnitude.max(axis=axes, keepdims=keepdim)
    if p == -float("inf"):
        return magnitude.min(axis=axes, keepdims=keepdim)
    if p == 0:  # the count of non-zeros
        return (magnitude != 0).sum(axis=axes, keepdims=keepdim).astype(data.dtype)
    if p == 1:
        return magnitude.sum(axis=axes, keepdims=keepdim)
    return (magnitude**p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)


def _norm_order(p: float | str | None, dim: int | Sequence[int] | None) -> float:
    """``torch.norm``'s ``p`` as a vector norm's order: None and ``'fro'`` (over at most 2 dims)
    are 2; any other string is a matrix norm, which aiograd does not have (PyTorch's errors for
    a bad one; ``'nuc'``, the nuclear norm, is not implemented)."""
    if p is None:
        return 2.0
    if not isinstance(p, str):
        return float(p)
    dims = 1 if dim is None or isinstance(dim, (int, np.integer)) else len(dim)
    if p == "fro" and dims <= 2:
        return 2.0
    if dims != 2 and dim is not None:
        shown = " ".join(str(d) for d in ((dim,) if isinstance(dim, (int, np.integer)) else dim))
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {shown}")
    if p == "nuc":
        raise NotImplementedError("norm(): the nuclear norm (p='nuc') is not implemented in aiograd")
    raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")


@op(LinalgVectorNormBackward0)
def norm(
    input: Tensor,
    p: float | str | None = "fro",
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    out: None = None,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The vector p-norm over ``dim`` (all elements by default), as ``torch.norm``: ``p`` any
    number (inf and -inf: the largest and smallest magnitude; 0: the count of non-zeros, with
    no gradient) or ``'fro'`` (= 2, the default); ``dtype`` computes in a wider dtype. One node
    for every p, as PyTorch, with its gradients at zeros and NaNs (see
    docs/gradients-at-edges.md)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("norm", input)
    if out is not None:  # (aiograd writes no results into given tensors)
        name = "torch.dtype" if isinstance(out, np.dtype) else type_name(out)  # (a dtype: torch's)
        what = "aiograd has no out= tensors" if isinstance(out, Tensor) else f"must be Tensor, not {name}"
        raise TypeError(f"linalg_vector_norm(): argument 'out' {what}")
    data = input.data
    if data.dtype.kind != "f":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{_dtype_name(data.dtype)}"
        )
    p = _norm_order(p, dim)
    if dtype is not None:
        if np.dtype(dtype).kind != "f" or np.dtype(dtype).itemsize < data.dtype.itemsize:
            raise RuntimeError(
                f"linalg.vector_norm: the dtype of the input ({_dtype_name(data.dtype)}) should be "
                f"convertible without narrowing to the specified dtype ({_dtype_name(np.dtype(dtype))})"
            )
        input = input.to(dtype)  # type: ignore[attr-defined]
        data = input.data
    axes = axes_of(dim, data.ndim)
    xp = input._device.xp
    count = data.size if axes is None else int(np.prod([data.shape[a] for a in axes]))
    if not count and (p < 0 or p == float("inf")):
        _no_identity(data, p, dim)
    values = quietly(_norm_values, xp, data, p, axes, keepdim, count)
    out = like(xp.asarray(values), input)
    if needs_grad(input):
        node = attach(LinalgVectorNormBackward0((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.axes, node.keepdim, node.p = axes, keepdim, float(p)
    return out


def _no_identity(data: Any, p: float, dim: Any) -> None:
    """PyTorch's error for a norm with no identity (inf, or p < 0) over nothing."""
    dims = () if dim is None else (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    empty = [d for d in dims if data.ndim and data.shape[int(d)] == 0]
    where = f"the dimension {empty[0]}because this dimension is empty and" if empty else "an empty tensor because"
    raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on {where} the operation does not have an identity")


def _norm_method(
    self: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None, keepdim: bool = False,
    dtype: DTypeLike | None = None,
) -> Tensor:
    """The vector p-norm over ``dim`` (all elements by default), as ``Tensor.norm`` (whose fourth
    argument is ``dtype``; ``torch.norm``'s is ``out``): see :func:`norm`."""
    return norm(self, p, dim, keepdim, dtype=dtype)


def _pos(input: Tensor) -> Tensor:
    """``+input``: the tensor itself."""
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
    "norm": _norm_method,
    "__pos__": _pos,
}
