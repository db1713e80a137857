"""More scans and a two-sided reduction, as PyTorch's: ``cummax`` and ``cummin`` (a ``(values,
indices)`` namedtuple; the gradient scattered to the indices, PyTorch's ``cummaxmin_backward``),
``logcumsumexp`` (computed without overflow; PyTorch's backward, which is a ``logcumsumexp`` again,
so differentiable to any order) and ``aminmax`` (a ``(min, max)`` namedtuple, one node for both,
ties sharing the gradient evenly as ``amin``/``amax``).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._reduce_util import _check_nonempty, axes_of, expand_reduced
from ._registry import backward, op, variant
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, save
from .elementwise import where
from .quiet import quietly, quietly_ops
from .rearrange import flip
from .reduction_extra import _first_extreme
from .scans import _scan_dim
from .scatter import scatter_add
from .shape import _dim
from .unary_math import abs, exp, log

__all__ = ["aminmax", "cummax", "cummin", "logcumsumexp"]


def _return_type(name: str, fields: list[str]) -> Any:
    cls = namedtuple(name, fields)  # type: ignore[misc]
    cls.__module__ = "aiograd.return_types"
    cls.__doc__ = f"The ``({', '.join(fields)})`` pair returned by ``{name}``."
    return cls


CummaxResult = _return_type("cummax", ["values", "indices"])
CumminResult = _return_type("cummin", ["values", "indices"])
AminmaxResult = _return_type("aminmax", ["min", "max"])


# ------------------------------------------------------------------------------ cummax, cummin
@backward()
def CummaxBackward0(self: Any, grads: list[Any]) -> Any:
    """PyTorch's cummaxmin_backward: zeros with the gradient added at ``indices`` along the dim."""
    g = grads[0]
    if g is None:
        return (None,)
    if self.dim is None:
        return (g,)
    zeros = like(g._device.xp.zeros(g.data.shape, dtype=g.data.dtype), g)
    return (scatter_add(zeros, self.dim, self.indices, g),)


CumminBackward0 = variant("CumminBackward0", CummaxBackward0)


def _cumextreme(fname: str, input: Any, dim: Any, largest: bool) -> Any:
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    d = _scan_dim(input, dim, fname)
    x, xp = input.data, input._device.xp
    result = CummaxResult if largest else CumminResult
    if x.ndim == 0:
        values, indices = x.copy(), xp.zeros((), dtype=np.int64)
    else:
        running = (xp.maximum if largest else xp.minimum).accumulate(x, axis=d)
        updated = x == running
        if x.dtype.kind in "fc":
            updated |= xp.isnan(x)
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        positions = xp.arange(x.shape[d], dtype=np.int64).reshape(shape)
        indices = xp.maximum.accumulate(xp.where(updated, positions, 0), axis=d) if x.size else \
            xp.zeros(x.shape, dtype=np.int64)
        values = xp.take_along_axis(x, indices, axis=d)
    out = like(values, input)
    if needs_grad(input):
        node: Any = attach((CummaxBackward0 if largest else CumminBackward0)((edge_of(input),)), out)
        node.dim, node.indices = (d if x.ndim else None), indices
    return result(out, like(indices, input))


@op(CummaxBackward0)
def cummax(input: Tensor, dim: int) -> Any:
    """The running maximum along ``dim`` and where it was taken: a ``(values, indices)``
    namedtuple; of equal values the latest index, and NaN once one is met, as PyTorch's."""
    return _cumextreme("cummax", input, dim, True)


@op(CumminBackward0)
def cummin(input: Tensor, dim: int) -> Any:
    """The running minimum along ``dim`` and its indices: see :func:`cummax`."""
    return _cumextreme("cummin", input, dim, False)


# ------------------------------------------------------------------------------ logcumsumexp
def _reversed(x: Tensor, d: int) -> Tensor:
    return flip(logcumsumexp(flip(x, d), d), d)


@backward(saved=("x", "result"), batched=True)
def LogcumsumexpBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's logcumsumexp_backward: the positive and negative parts of the gradient, each
    through a reversed logcumsumexp in log space."""
    g = grads[0]
    if self.dim is None:
        return (g,)
    x, result, d = self.x.unpack(self), self.result.unpack(self), self.dim
    lowest = g._device.xp.asarray(np.finfo(g.data.dtype).min, dtype=g.data.dtype)

    def formula() -> Tensor:  # (the lowest float minus a result overflows, as in PyTorch)
        log_abs = log(abs(g))
        positive = where(g > 0, log_abs, lowest)
        negative = where(g < 0, log_abs, lowest)
        return exp(_reversed(positive - result, d) + x) - exp(_reversed(negative - result, d) + x)

    return (quietly_ops(formula),)


@op(LogcumsumexpBackward0)
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))``, without overflow; floating point only."""
    if not isinstance(input, Tensor):
        raise not_tensor("logcumsumexp", input)
    d = _scan_dim(input, dim, "logcumsumexp")
    x, xp = input.data, input._device.xp
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for \'{scalar_type_name(x.dtype)}\'')
    values = x.copy() if x.ndim == 0 else quietly(lambda a: xp.logaddexp.accumulate(a, axis=d, dtype=a.dtype), x)
    if x.ndim:
        values += values.dtype.type(0.0)  # PyTorch's accumulator starts at -inf: never -0.0
    out = like(values, input)
    if needs_grad(input):
        node: Any = attach(LogcumsumexpBackward0((edge_of(input),)), out)
        node.x, node.result = save(input), save(out, is_output=True)
        node.dim = d if x.ndim else None
    return out


# ------------------------------------------------------------------------------ aminmax
@backward(batched=True, num_inputs=2)
def AminmaxBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``amin``'s and ``amax``'s gradients added: each shared evenly among the elements equal
    to the result (NaN for a slice holding NaN)."""
    total = None
    for g, mask, count in zip(grads, self.masks, self.counts):
        if g is not None:
            part = (expand_reduced(g, mask.shape, self.axes, self.keepdim) / count) * mask
            total = part if total is None else total + part
    return (total,)


@op(AminmaxBackward0)
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """The smallest and largest values (over ``dim``, or all of them): a ``(min, max)``
    namedtuple, as ``torch.aminmax``."""
    if not isinstance(input, Tensor):
        raise not_tensor("aminmax", input)
    data, xp = input.data, input._device.xp
    if dim is not None:
        _dim(int(dim), max(data.ndim, 1))
    axes = axes_of(dim, data.ndim) if dim is not None and data.ndim else None
    if data.size == 0:
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.")
        _check_nonempty(data, axes, "aminmax")
    outs = []
    for largest in (False, True):
        # of equal elements (0.0 and -0.0) the last, as PyTorch's aminmax kernel keeps it
        flipped = xp.flip(data, axis=tuple(range(data.ndim)) if axes is None else axes) if data.ndim else data
        value = _first_extreme(xp, flipped, axes, keepdim, largest)
        if dim is None and keepdim:
            value = value.reshape((1,) * data.ndim)
        outs.append(like(xp.asarray(value), input))
    if needs_grad(input):
        node: Any = attach(AminmaxBackward0((edge_of(input),)), *outs)
        full_axes = tuple(range(data.ndim)) if axes is None else axes
        node.masks, node.counts = [], []
        for out in outs:
            full = out.data if keepdim or not full_axes else xp.expand_dims(out.data, full_axes)
            mask = data == full
            count = mask.sum(axis=full_axes, keepdims=True)
            empty = count == 0
            node.masks.append(xp.where(empty, data.dtype.type(np.nan), mask.astype(data.dtype)))
            node.counts.append(xp.where(empty, 1, count).astype(data.dtype))
        node.axes, node.keepdim = full_axes, keepdim
    return AminmaxResult(*outs)


TENSOR_METHODS: dict[str, Any] = {"cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp,
                                  "aminmax": aminmax}
