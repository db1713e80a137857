"""Reductions: sum, mean, var, max, min, prod, argmax, argmin (the log-sum-exp family, softmax
and log_softmax are in ``softmax``).

Forward passes are plain numpy; backward formulas are aiograd ops (with constant numpy masks where
a selection is needed), so ``create_graph=True`` differentiates them again.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ._reduce_util import (
    UNSET,
    _check_nonempty,
    _dtype_name,
    _expand_reduced_array,
    _one_dim,
    axes_of,
    expand_reduced,
    invalid_arguments,
)
from ._registry import backward, op, variant
from ._util import (
    Tensor,
    attach,
    edge_of,
    first_order,
    grad_enabled,
    like,
    needs_grad,
    not_tensor,
    save,
)
from ._variance import grad_scale, var_grad, variance
from .batching import per_sample_scalar
from .elementwise import where
from .pointwise import maximum, minimum
from .quiet import quietly

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from .._core._types import ValuesIndices

__all__ = ["sum", "mean", "var", "max", "min", "prod", "argmax", "argmin"]


def _in_dtype(node: Any, grad: Tensor, recorded: bool) -> Tensor:
    """A ``dtype=`` reduction's gradient cast back to its input's dtype, as torch's engine casts
    every gradient to its input's (``in_dtype`` None: the dtypes are the same); ``recorded``:
    the cast is recorded (a graph is being made), else done on the array."""
    dtype = node.in_dtype
    if dtype is None or grad.data.dtype == dtype:
        return grad
    if not recorded:
        return like(grad.data.astype(dtype), grad)
    return grad.to(dtype)  # type: ignore[no-any-return]


@backward(batched=True, in_dtype=None)
def SumBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    g = grads[0]
    if first_order():
        out = like(_expand_reduced_array(g._device.xp, g.data, self.shape, self.axes, self.keepdim), g)
        return (_in_dtype(self, out, False),)
    return (_in_dtype(self, expand_reduced(g, self.shape, self.axes, self.keepdim), True),)


SumBackward1 = variant("SumBackward1", SumBackward0, doc="``sum`` over given dims (PyTorch's name for that overload).")


def _dims_only_forms(fname: str, dims: str) -> tuple[str, str]:
    """The two forms of a reduction whose ``keepdim`` needs ``dim`` (PyTorch's ``sum``, ``mean``,
    ``prod``), as its argument parser lists them."""
    extra = ", Tensor out = None" if fname == "mean" else ""
    return (f"Tensor input, *, torch.dtype dtype = None{extra}",
            f"Tensor input, {dims} dim, bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None")


_SUM_FORMS = _dims_only_forms("sum", "tuple of ints")
_MEAN_FORMS = _dims_only_forms("mean", "tuple of ints")
_PROD_FORMS = _dims_only_forms("prod", "int")


def _no_dim(fname: str, forms: tuple[str, ...], input: Tensor, keepdim: Any, dtype: Any) -> None:
    """PyTorch's TypeError for ``keepdim`` given without ``dim`` (no form takes it alone)."""
    if keepdim is not UNSET:
        raise invalid_arguments(fname, forms, input, keepdim=keepdim, dtype=UNSET if dtype is None else dtype)


def _check_differentiable(dtype: Any) -> None:
    """PyTorch's error for a ``dtype=`` reduction to a dtype without gradients of a tensor that
    requires them."""
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        raise RuntimeError(f"Autograd not support dtype: {_dtype_name(dt)}")


@op(SumBackward0, SumBackward1)
def sum(
    input: Tensor, dim: int | Sequence[int] | None = UNSET, keepdim: bool = UNSET, *, dtype: DTypeLike | None = None
) -> Tensor:
    """Sum over ``dim`` (int, tuple, or None for all); ``keepdim`` only with ``dim``, as PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("sum", input)
    cls = SumBackward1
    if dim is UNSET:  # sum(input): PyTorch's other overload (its own node; no keepdim)
        _no_dim("sum", _SUM_FORMS, input, keepdim, dtype)
        dim, keepdim, cls = None, False, SumBackward0
    elif keepdim is UNSET:
        keepdim = False
    axes = axes_of(dim, input.data.ndim)
    data = input.data
    if dtype is None:
        if data.dtype.kind in "bu":  # PyTorch: int64 (numpy: uint64 for unsigned)
            dtype = np.int64
    elif needs_grad(input):
        _check_differentiable(dtype)
    try:
        out = like(data.sum(axis=axes, keepdims=keepdim, dtype=dtype), input)
    except RuntimeWarning:  # numpy's warning made an error (inf + -inf): quietly, as torch
        out = like(quietly(lambda: data.sum(axis=axes, keepdims=keepdim, dtype=dtype)), input)
    if needs_grad(input):
        node = attach(cls((edge_of(input),)), out)
        node.shape, node.axes, node.keepdim = data.shape, axes, keepdim
        if out.data.dtype != data.dtype:
            node.in_dtype = data.dtype
    return out


@backward(batched=True, in_dtype=None)
def MeanBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    if first_order():
        # the mean of nothing (count 0): its gradient is empty, so the NaN of 0/0 goes nowhere
        g = grads[0].data / self.count if self.count else quietly(lambda: grads[0].data / self.count)
        out = like(_expand_reduced_array(grads[0]._device.xp, g, self.shape, self.axes, self.keepdim), grads[0])
        return (_in_dtype(self, out, False),)
    return (_in_dtype(self, expand_reduced(grads[0] / self.count, self.shape, self.axes, self.keepdim), True),)


MeanBackward1 = variant("MeanBackward1", MeanBackward0, doc="``mean`` over given dims (PyTorch's name for that overload).")


@op(MeanBackward0, MeanBackward1)
def mean(
    input: Tensor, dim: int | Sequence[int] | None = UNSET, keepdim: bool = UNSET, *, dtype: DTypeLike | None = None
) -> Tensor:
    """Mean over ``dim`` (int, tuple, or None for all); ``keepdim`` only with ``dim``, as PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("mean", input)
    cls = MeanBackward1
    if dim is UNSET:  # mean(input): PyTorch's other overload (its own node; no keepdim)
        _no_dim("mean", _MEAN_FORMS, input, keepdim, dtype)
        dim, keepdim, cls = None, False, MeanBackward0
    elif keepdim is UNSET:
        keepdim = False
    data = input.data
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
            f"complex dtype. Got: {_dtype_name(np.dtype(dtype))}"
        )
    if data.dtype.kind != "f" and dtype is None:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {_dtype_name(data.dtype)}"
        )
    axes = axes_of(dim, data.ndim)
    count = data.size if axes is None else int(np.prod([data.shape[a] for a in axes]))
    if not count:  # the mean of nothing: 0 / 0, NaN, without numpy's "Mean of empty slice" warning
        total = data.sum(axis=axes, keepdims=keepdim, dtype=dtype)
        out = like(quietly(lambda: total / total.dtype.type(0)), input)
    else:
        try:
            out = like(data.mean(axis=axes, keepdims=keepdim, dtype=dtype), input)
        except RuntimeWarning:  # numpy's warning made an error (inf + -inf): quietly, as torch
            out = like(quietly(lambda: data.mean(axis=axes, keepdims=keepdim, dtype=dtype)), input)
    if needs_grad(input):
        node = attach(cls((edge_of(input),)), out)
        node.shape, node.axes, node.keepdim, node.count = data.shape, axes, keepdim, float(count)
        if out.data.dtype != data.dtype:
            node.in_dtype = data.dtype
    return out


# ------------------------------------------------------------------------------ var
@backward(saved=("x",), batched=True, empty_dim=False)
def VarBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (var_grad(self, grads[0]),)


@op(VarBackward0)
def var(
    input: Tensor,
    dim: int | Sequence[int] | bool | None = UNSET,
    unbiased: bool = UNSET,
    keepdim: bool = UNSET,
    *,
    correction: float | None = UNSET,
) -> Tensor:
    """Variance over ``dim`` (int, tuple, or None for all) with Bessel's ``correction`` (default 1).

    As ``torch.var``: ``var(x, dim, unbiased, keepdim)``, ``var(x, dim, correction=c,
    keepdim=...)`` or ``var(x, unbiased)``; ``unbiased=False`` means ``correction=0``.
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("var", input)
    values, axes, dof = variance(input, dim, unbiased, keepdim, correction, explicit_none=True)
    out = like(values, input)
    data = input.data
    if needs_grad(input):
        node = attach(VarBackward0((edge_of(input),)), out)
        node.x, node.shape, node.axes, node.keepdim = save(input), data.shape, axes, bool(keepdim)
        grad_scale(node, dim, data, dof)
    return out


# ------------------------------------------------------------------------------ max, min
def _return_type(name: str) -> Any:
    cls = namedtuple(name, ["values", "indices"])  # type: ignore[misc]
    cls.__module__ = "aiograd.return_types"
    cls.__doc__ = f"The ``(values, indices)`` pair returned by ``{name}(input, dim)``."
    return cls


MaxResult = _return_type("max")
MinResult = _return_type("min")


@backward(batched=True)
def MaxBackward1(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Full max: the gradient is shared evenly among the elements equal to the maximum."""
    g = per_sample_scalar(grads[0], self.mask.ndim, batch)
    return (g.expand(g.data.shape[: g.data.ndim - self.mask.ndim] + self.mask.shape) * self.mask.astype(g.data.dtype),)


MinBackward1 = variant("MinBackward1", MaxBackward1)


@backward(batched=True)
def MaxBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Max over a dim: the gradient goes to the element at the returned index only."""
    g = expand_reduced(grads[0], self.mask.shape, self.axes, self.keepdim)
    return (g * self.mask.astype(g.data.dtype),)


MinBackward0 = variant("MinBackward0", MaxBackward0)


_EXTREME_FORMS = ("Tensor input, *, Tensor out = None", "Tensor input, Tensor other, *, Tensor out = None",
                  "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None")


def _extreme(input: Tensor, dim: Any, keepdim: Any, largest: bool) -> Any:
    fname = "max" if largest else "min"
    if isinstance(dim, Tensor) and keepdim is UNSET:  # max(input, other): elementwise, as torch.max
        return (maximum if largest else minimum)(input, dim)
    data, xp = input.data, input._device.xp
    if dim is UNSET and keepdim is UNSET:
        _check_nonempty(data, None, fname)
        value = data.max() if largest else data.min()
        out = like(value, input)
        if needs_grad(input):
            mask = xp.isnan(data) if xp.isnan(value) else (data == value)
            share = mask / xp.count_nonzero(mask)
            node = attach((MaxBackward1 if largest else MinBackward1)((edge_of(input),)), out)
            node.mask = share
        return out
    if dim is UNSET or dim is None or isinstance(dim, Tensor):  # (keepdim needs an int dim)
        raise invalid_arguments(fname, _EXTREME_FORMS, input, dim, keepdim=keepdim)
    axes = _one_dim(dim, data.ndim, fname)
    keepdim = bool(keepdim)
    _check_nonempty(data, axes, fname)
    if axes:
        idx = (xp.argmax if largest else xp.argmin)(data, axis=axes[0], keepdims=True)
        values = xp.take_along_axis(data, idx, axis=axes[0])
        if not keepdim:
            idx, values = idx.squeeze(axes[0]), values.squeeze(axes[0])
    else:
        idx, values = xp.zeros((), dtype=np.int64), data.copy()
    out = like(values, input)
    if needs_grad(input):
        mask = xp.zeros(data.shape, dtype=bool)
        if axes:
            full_idx = idx if keepdim else xp.expand_dims(idx, axes[0])
            xp.put_along_axis(mask, full_idx, True, axis=axes[0])
        else:
            mask[...] = True
        node = attach((MaxBackward0 if largest else MinBackward0)((edge_of(input),)), out)
        node.mask, node.axes, node.keepdim = mask, axes, keepdim
    return (MaxResult if largest else MinResult)(out, like(idx.astype(np.int64), input))


# The forms of ``max`` and ``min``, for type checkers (``Tensor.max``'s declaration is made from them).
@overload
def max(input: Tensor) -> Tensor: ...
@overload
def max(input: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...
@overload
def max(input: Tensor, dim: Tensor) -> Tensor: ...


@op(MaxBackward0, MaxBackward1)
def max(input: Tensor, dim: int | Tensor = UNSET, keepdim: bool = UNSET) -> Tensor | ValuesIndices:
    """Maximum, as ``torch.max``.

    ``max(input)``: the largest element (its gradient is split evenly among ties).
    ``max(input, dim, keepdim=False)``: a ``(values, indices)`` namedtuple; the gradient goes to
    the element at each returned index (the first maximum). ``max(input, other)`` with a tensor
    ``other`` is the elementwise ``maximum``.
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("max", input)
    return _extreme(input, dim, keepdim, True)


@overload
def min(input: Tensor) -> Tensor: ...
@overload
def min(input: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...
@overload
def min(input: Tensor, dim: Tensor) -> Tensor: ...


@op(MinBackward0, MinBackward1)
def min(input: Tensor, dim: int | Tensor = UNSET, keepdim: bool = UNSET) -> Tensor | ValuesIndices:
    """Minimum, as ``torch.min``: see :func:`max`."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("min", input)
    return _extreme(input, dim, keepdim, False)


def _arg_extreme(input: Tensor, dim: Any, keepdim: bool, largest: bool) -> Tensor:
    fname = "argmax" if largest else "argmin"
    data, xp = input.data, input._device.xp
    if data.dtype == np.bool_:
        raise RuntimeError(f"{fname}(): does not support bool input")
    find = xp.argmax if largest else xp.argmin
    if dim is None:
        _check_nonempty(data, None, fname)
        idx = xp.asarray(find(data.reshape(-1)))
        if keepdim:
            idx = idx.reshape((1,) * data.ndim)
        return like(idx.astype(np.int64), input)
    axes = _one_dim(dim, data.ndim, fname)
    _check_nonempty(data, axes, fname)
    if not axes:
        return like(xp.zeros((), dtype=np.int64), input)
    return like(xp.asarray(find(data, axis=axes[0], keepdims=keepdim)).astype(np.int64), input)


@op()
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the (first) maximum, flattened when ``dim`` is None; int64, not differentiable."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("argmax", input)
    return _arg_extreme(input, dim, keepdim, True)


@op()
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the (first) minimum, flattened when ``dim`` is None; int64, not differentiable."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("argmin", input)
    return _arg_extreme(input, dim, keepdim, False)


# ------------------------------------------------------------------------------ prod
def _exclusive_products(xp: Any, data: Any, axes: tuple[int, ...] | None, zeros: int) -> Any:
    """PyTorch's prod_safe_zeros_backward on arrays (first order, with zeros among the factors):
    each element's product of the others as the product of the exclusive cumulative products
    from the left and from the right (so NaN and inf factors give what PyTorch gives). Over all
    elements, several zeros give zeros outright, as PyTorch does."""
    if axes is None:
        if zeros > 1:
            return xp.zeros(data.shape, dtype=data.dtype)
        return _exclusive_products(xp, data.reshape(-1), (0,), zeros).reshape(data.shape)
    axis = axes[0]
    n = data.shape[axis]
    ones = xp.ones(data.shape[:axis] + (1,) + data.shape[axis + 1:], dtype=data.dtype)
    head = xp.take(data, range(n - 1), axis=axis)
    tail = xp.flip(xp.take(data, range(1, n), axis=axis), axis=axis)
    left = xp.cumprod(xp.concatenate([ones, head], axis=axis), axis=axis)
    right = xp.flip(xp.cumprod(xp.concatenate([ones, tail], axis=axis), axis=axis), axis=axis)
    return left * right


def _prod_others(x: Tensor, result: Tensor, axes: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """For each element, the product of the other elements of its slice, as aiograd ops.

    Without zeros that is ``result / x``. With zeros, the non-zero factors ``q`` and the zero
    factors are kept apart, so nothing is divided by zero and the formula stays exact when it is
    differentiated again: an element off the zeros gets ``q / x * (product of the zeros)``; a
    zero gets ``q * (product of the other zeros)``, which is 1 for a lone zero and 0 for several
    (built one rank of zeros at a time when grad mode is on, so that higher orders are right).
    """
    data, xp = x.data, x._device.xp
    shape = data.shape
    if not data.ndim:  # a 0-d input is its own product: PyTorch passes the gradient through
        # (with or without dim; no result / x, NaN at an inf or NaN)
        return like(xp.ones(shape, dtype=data.dtype), x)
    zero = data == 0
    if not zero.any():
        return expand_reduced(result, shape, axes, keepdim) / x
    if first_order():
        return like(_exclusive_products(xp, data, axes, int(zero.sum())), x)
    x_nonzero = where(zero, 1.0, x)
    q = _prod(x_nonzero, axes, keepdim=True).expand(shape)
    r = _prod(where(zero, x, 1.0), axes, keepdim=True).expand(shape)
    if axes is None:
        rank = (xp.cumsum(zero.reshape(-1)) - 1).reshape(shape)
    else:
        rank = xp.cumsum(zero, axis=axes[0]) - 1
    counts = zero.sum(axis=axes, keepdims=True)
    if grad_enabled():
        other_zeros: Tensor = like(xp.zeros(shape, dtype=data.dtype), x)
        for k in range(int(counts.max())):
            this = zero & (rank == k)
            excl = _prod(where(zero & ~this, x, 1.0), axes, keepdim=True).expand(shape)
            other_zeros = where(this, excl, other_zeros)
    else:
        other_zeros = like(xp.broadcast_to(counts == 1, shape).astype(data.dtype), x)
    return where(zero, q * other_zeros, q / x_nonzero * r)


@backward(saved=("x", "result"), batched=True)
def ProdBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Product of all elements."""
    x, result = self.x.unpack(self), self.result.unpack(self)
    g = expand_reduced(grads[0], x.data.shape, self.axes, self.keepdim)
    return (g * _prod_others(x, result, self.axes, self.keepdim),)


ProdBackward1 = variant("ProdBackward1", ProdBackward0, """Product over one dim.""")


def _prod(input: Tensor, axes: tuple[int, ...] | None, keepdim: bool, dtype: Any = None) -> Tensor:
    if dtype is not None:
        if needs_grad(input):
            _check_differentiable(dtype)
        input = input.to(dtype)
    data = input.data
    # integers and bools give int64 unless ``dtype`` names the result's (numpy's prod widens them)
    acc = data.dtype if dtype is not None else np.int64 if data.dtype.kind in "bui" else None
    out = like(input._device.xp.asarray(quietly(lambda: data.prod(axis=axes, keepdims=keepdim, dtype=acc))), input)
    if needs_grad(input):
        cls = ProdBackward0 if axes is None else ProdBackward1
        node = attach(cls((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.axes, node.keepdim = axes, keepdim
    return out


@op(ProdBackward0, ProdBackward1)
def prod(input: Tensor, dim: int = UNSET, keepdim: bool = UNSET, *, dtype: DTypeLike | None = None) -> Tensor:
    """Product of all elements, or over ``dim`` (an int, not None; ``keepdim`` only with it); exact
    gradients also with zeros.

    Integer and bool inputs give int64, as ``torch.prod``.
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("prod", input)
    if dim is UNSET:
        _no_dim("prod", _PROD_FORMS, input, keepdim, dtype)
        return _prod(input, None, False, dtype)
    if dim is None:
        raise invalid_arguments("prod", _PROD_FORMS, input, dim, keepdim, dtype=UNSET if dtype is None else dtype)
    axes = _one_dim(dim, input.data.ndim, "prod")
    return _prod(input, axes, bool(keepdim), dtype)


TENSOR_METHODS = {
    "sum": sum, "mean": mean, "var": var, "max": max, "min": min, "prod": prod, "argmax": argmax,
    "argmin": argmin,
}
