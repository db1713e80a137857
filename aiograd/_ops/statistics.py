"""Statistics as PyTorch's: ``var_mean`` and ``std_mean`` (one node for both outputs), the
NaN-ignoring ``nansum``, ``nanmean`` and ``nanmedian``, ``mode``, and ``quantile`` and
``nanquantile`` (composed from sort, gather and lerp as PyTorch's ``quantile_impl``, so that
their gradients are those of their parts).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._reduce_util import UNSET, _check_nonempty, axes_of, expand_reduced
from ._registry import backward, op, variant
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, save
from ._variance import grad_scale, var_grad, variance
from .elementwise import DivBackward0
from .reduction import _check_differentiable
from .shape import _dim

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["mode", "nanmean", "nanmedian", "nansum", "std_mean", "var_mean"]


def _return_type(name: str, fields: Sequence[str] = ("values", "indices")) -> Any:
    cls = namedtuple(name, list(fields))  # type: ignore[misc]
    cls.__module__ = "aiograd.return_types"
    cls.__doc__ = f"The ``{tuple(fields)}`` pair returned by ``{name}``."
    return cls


NanmedianResult = _return_type("nanmedian")
ModeResult = _return_type("mode")


def _check(fname: str, input: Any) -> None:
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor(fname, input)


# ------------------------------------------------------------------------------ var_mean, std_mean
def _mean_grad(node: Any, g: Tensor) -> Tensor:
    return expand_reduced(g, node.shape, node.axes, node.keepdim) / node.count


@backward(saved=("x",), batched=True, empty_dim=False)
def VarMeanBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """var_backward of the variance's gradient plus mean_backward of the mean's (either absent)."""
    gv, gm = grads
    out = None
    if gv is not None:
        out = var_grad(self, gv)
    if gm is not None:
        m = _mean_grad(self, gm)
        out = m if out is None else out + m
    return (out,)


@backward(saved=("x", "result"), batched=True, empty_dim=False)
def StdMeanBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """std_backward (``var_backward(g / (2 std))``, 0 where the std is 0) plus mean_backward."""
    from .elementwise import where

    gs, gm = grads
    out = None
    if gs is not None:
        result = self.result.unpack(self)
        zero = result.data == 0
        out = var_grad(self, where(zero, 0.0, gs / where(zero, 1.0, result * 2.0)))
    if gm is not None:
        m = _mean_grad(self, gm)
        out = m if out is None else out + m
    return (out,)


def _var_mean(input: Tensor, dim: Any, unbiased: Any, keepdim: Any, correction: Any, fname: str) -> Any:
    _check(fname, input)
    take_sqrt = fname == "std_mean"
    values, axes, dof = variance(input, dim, unbiased, keepdim, correction, fname, take_sqrt=take_sqrt,
                                 explicit_none=True)
    data, xp = input.data, input._device.xp
    total = data.sum(axis=axes, keepdims=bool(keepdim), dtype=np.float64)
    count = data.size if axes is None else int(np.prod([data.shape[a] for a in axes]))
    from .quiet import quietly

    mean = quietly(lambda: (total / count if count else total * np.nan).astype(data.dtype))
    first, second = like(values, input), like(xp.asarray(mean), input)
    if needs_grad(input):
        cls = StdMeanBackward0 if take_sqrt else VarMeanBackward0
        node: Any = attach(cls((edge_of(input),)), first, second)
        node.num_inputs = 2
        node.x, node.shape, node.axes, node.keepdim, node.count = save(input), data.shape, axes, bool(keepdim), count
        if take_sqrt:
            node.result = save(first, is_output=True)
        grad_scale(node, dim, data, dof)
    return first, second


@op(VarMeanBackward0)
def var_mean(
    input: Tensor,
    dim: int | Sequence[int] | bool | None = UNSET,
    unbiased: bool = UNSET,
    keepdim: bool = UNSET,
    *,
    correction: float | None = UNSET,
) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim`` with ``var``'s arguments, as ``torch.var_mean`` (one node)."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "var_mean")


@op(StdMeanBackward0)
def std_mean(
    input: Tensor,
    dim: int | Sequence[int] | bool | None = UNSET,
    unbiased: bool = UNSET,
    keepdim: bool = UNSET,
    *,
    correction: float | None = UNSET,
) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim`` with ``std``'s arguments, as ``torch.std_mean`` (one node)."""
    return _var_mean(input, dim, unbiased, keepdim, correction, "std_mean")


# ------------------------------------------------------------------------------ nansum, nanmean
@backward(batched=True)
def NansumBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The gradient on every element that is not NaN, zero on the NaNs."""
    g = expand_reduced(grads[0], self.mask.shape, self.axes, self.keepdim)
    out = g * self.mask.astype(g.data.dtype)
    return (out if out.data.dtype == self.dtype else out.to(self.dtype),)  # (a ``dtype=`` sum: the input's)


@op(NansumBackward0)
def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: DTypeLike | None = None) -> Tensor:
    """The sum over ``dim`` with NaNs counted as zero, as ``torch.nansum``."""
    _check("nansum", input)
    data, xp = input.data, input._device.xp
    if dtype is not None:
        if needs_grad(input):
            _check_differentiable(dtype)
        data = data.astype(dtype)
    if data.dtype.kind == "c":
        raise RuntimeError("nansum does not support complex inputs")
    axes = axes_of(dim, data.ndim) if not (isinstance(dim, (tuple, list)) and not dim) else None
    if data.dtype.kind in "biu":
        out_dtype = data.dtype if dtype is not None else np.dtype(np.int64)
        return like(xp.asarray(data.sum(axis=axes, keepdims=keepdim, dtype=out_dtype)), input)
    nan = xp.isnan(data)
    out = like(xp.asarray(xp.where(nan, 0, data).sum(axis=axes, keepdims=keepdim)).astype(data.dtype), input)
    if needs_grad(input) and data.dtype.kind == "f":
        node: Any = attach(NansumBackward0((edge_of(input),)), out)
        node.mask, node.axes, node.keepdim, node.dtype = ~nan, axes, keepdim, input.data.dtype
    return out


@op(DivBackward0)
def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: DTypeLike | None = None) -> Tensor:
    """The mean over ``dim`` of the elements that are not NaN, as ``torch.nanmean``
    (``nansum / count``: NaN where a slice is all NaN)."""
    _check("nanmean", input)
    if input.data.dtype.kind not in "fc":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{scalar_type_name(input.data.dtype)}")
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be either a floating point "
                           f"or complex dtype. Got: {scalar_type_name(np.dtype(dtype))}")
    xp = input._device.xp
    axes = axes_of(dim, input.ndim) if not (isinstance(dim, (tuple, list)) and not dim) else None
    count = (~xp.isnan(input.data)).sum(axis=axes, keepdims=keepdim)
    total = nansum(input, dim, keepdim, dtype=dtype)
    return total / like(xp.asarray(count), input)


# ------------------------------------------------------------------------------ nanmedian, mode
@backward(batched=True)
def NanmedianBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """evenly_distribute_backward: ``grad / count`` on each element equal to the result."""
    from .batching import per_sample_scalar
    from .elementwise import where

    g = per_sample_scalar(grads[0], self.mask.ndim, batch)
    return (where(self.mask, g / self.count, 0.0),)


@backward(batched=True)
def NanmedianBackward1(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """value_selecting_reduction_backward: the gradient on the element at each index."""
    g = expand_reduced(grads[0], self.mask.shape, self.axes, self.keepdim)
    return (g * self.mask.astype(g.data.dtype),)


ModeBackward0 = variant("ModeBackward0", NanmedianBackward1, "Backward of ``mode``.")


def _selected(input: Tensor, d: int, values: Any, idx: Any, keepdim: bool, cls: Any) -> tuple[Tensor, Tensor]:
    xp, data = input._device.xp, input.data
    if not keepdim and data.ndim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    out = like(xp.array(values, order="C"), input)  # (not ascontiguousarray: it makes a 0-d array 1-d)
    if needs_grad(input):
        mask = xp.zeros(data.shape, dtype=bool)
        if data.ndim:
            xp.put_along_axis(mask, idx if keepdim else xp.expand_dims(idx, d), True, axis=d)
        else:
            mask[...] = True
        node: Any = attach(cls((edge_of(input),)), out)
        node.mask, node.axes, node.keepdim = mask, (d,) if data.ndim else (), keepdim
    return out, like(xp.asarray(idx).astype(np.int64), input)


def nanmedian(input: Tensor, dim: int = UNSET, keepdim: bool = UNSET) -> Any:
    """The lower median of the elements that are not NaN (NaN where all are), as
    ``torch.nanmedian``; with ``dim``, a ``(values, indices)`` named tuple per slice. Among
    equal medians the index is the stable order's (PyTorch's ``nth_element`` may pick another)."""
    _check("nanmedian", input)
    data, xp = input.data, input._device.xp
    if dim is UNSET and keepdim is not UNSET:  # (PyTorch's argument parser, first)
        raise TypeError('nanmedian() missing 1 required positional arguments: "dim"')
    if data.dtype == np.bool_:
        raise NotImplementedError('"nanmedian_cpu" not implemented for \'Bool\'' if dim is UNSET
                                  else '"median_out" not implemented for \'Bool\'')
    if dim is UNSET:
        flat = data.reshape(-1)
        if flat.size == 0:
            from .quiet import quietly

            return like(quietly(lambda: xp.asarray(xp.nan).astype(data.dtype)), input)
        valid = flat[~xp.isnan(flat)] if data.dtype.kind == "f" else flat
        value = xp.sort(valid)[(valid.size - 1) // 2] if valid.size else xp.asarray(xp.nan, dtype=data.dtype)
        out = like(xp.asarray(value, dtype=data.dtype), input)
        if needs_grad(input):
            mask = xp.isnan(data) if xp.isnan(value) else data == value
            node: Any = attach(NanmedianBackward0((edge_of(input),)), out)
            node.mask, node.count = mask, float(mask.sum().item())
        return out
    if dim is None:
        raise TypeError("nanmedian(): argument 'dim' (position 2) must be int, not NoneType")
    keepdim = bool(keepdim) if keepdim is not UNSET else False
    d = _dim(int(dim), data.ndim)
    _check_nonempty(data, (d,) if data.ndim else (), "nanmedian")
    if not data.ndim:
        return NanmedianResult(*_selected(input, 0, data.copy(), xp.zeros((), np.int64), keepdim, NanmedianBackward1))
    order = xp.argsort(data, axis=d, kind="stable")  # (NaN sorts last)
    valid = (~xp.isnan(data)).sum(axis=d, keepdims=True) if data.dtype.kind == "f" else data.shape[d]
    pos = xp.where(valid > 0, (valid - 1) // 2, (data.shape[d] - 1) // 2)
    pos = xp.broadcast_to(pos, order.shape[:d] + (1,) + order.shape[d + 1:])
    idx = xp.take_along_axis(order, pos, axis=d)
    values = xp.take_along_axis(data, idx, axis=d)
    return NanmedianResult(*_selected(input, d, values, idx, keepdim, NanmedianBackward1))


nanmedian = op(NanmedianBackward0, NanmedianBackward1)(nanmedian)


@op(ModeBackward0)
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value of each slice along ``dim`` and its index, as ``torch.mode``: of
    equally frequent values the smallest, and the index of its last occurrence (PyTorch's CPU
    rule)."""
    _check("mode", input)
    data, xp = input.data, input._device.xp
    d = _dim(int(dim), data.ndim)
    if not data.ndim:
        return ModeResult(*_selected(input, 0, data.copy(), xp.zeros((), np.int64), keepdim, ModeBackward0))
    if data.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    moved = xp.moveaxis(data, d, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    vals, idxs = [], []
    for row in (flat.get() if hasattr(flat, "get") else flat):
        order = np.argsort(row, kind="stable")
        srt = row[order]
        same = np.concatenate([[False], (srt[1:] == srt[:-1]) | (np.isnan(srt[1:]) & np.isnan(srt[:-1]))])
        starts = np.flatnonzero(~same)
        counts = np.diff(np.append(starts, srt.size))
        best = int(np.argmax(counts))  # (the first longest run: the smallest value)
        vals.append(srt[starts[best]])
        idxs.append(int(order[starts[best] + counts[best] - 1]))  # (stable: its last occurrence)
    shape = moved.shape[:-1]
    values = xp.expand_dims(xp.asarray(np.array(vals, dtype=data.dtype).reshape(shape)), d)
    idx = xp.expand_dims(xp.asarray(np.array(idxs, dtype=np.int64).reshape(shape)), d)
    return ModeResult(*_selected(input, d, values, idx, keepdim, ModeBackward0))


TENSOR_METHODS = {"nansum": nansum, "nanmean": nanmean, "nanmedian": nanmedian, "mode": mode}
