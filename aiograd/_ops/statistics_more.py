"""``quantile``, ``nanquantile``, ``cov``, ``corrcoef``, ``trapezoid`` (``trapz``) and
``cumulative_trapezoid``, composed from aiograd's differentiable ops in the order of PyTorch's
own compositions (Sorting.cpp's ``quantile_impl``, Correlation.cpp, Integration.cpp), so that
values and gradients are theirs. The last node of a composition is aiograd's op for the last step
(PyTorch's C++ scalar overloads name some of theirs differently, ``MulBackward1`` for a tensor
times a double, ``SqueezeBackward4`` for an in-place squeeze).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from ._reduce_util import invalid_arguments
from ._registry import op, variant
from ._util import UNSET, Tensor, like, not_tensor
from .elementwise import DivBackward0, MulBackward0, WhereBackward0  # noqa: F401 (node lists)
from .quiet import quietly_ops
from .shape import SqueezeBackward1, SqueezeBackward4, _dim

__all__ = ["corrcoef", "cov", "cumulative_trapezoid", "nanquantile", "quantile", "trapezoid", "trapz"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _nodes(*names: str) -> tuple[Any, ...]:
    """The node classes of registered ops, by op name (the last node of each composition)."""
    from ._registry import OPS

    return tuple(n for name in names for n in OPS[name].nodes)


# ------------------------------------------------------------------------------ quantile
def _quantile(input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    fname = "nanquantile" if ignore_nan else "quantile"
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    xp, data = input._device.xp, input.data
    scalar_q = not isinstance(q, Tensor)
    if scalar_q and not 0 <= float(q) <= 1:
        raise RuntimeError(f"{fname}() q must be in the range [0, 1] but got {float(q):g}")
    if interpolation not in _MODES:
        raise RuntimeError(f"{fname}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    qd = xp.asarray(q, dtype=data.dtype) if scalar_q else q.data
    if data.size == 0:
        raise RuntimeError(f"{fname}() input tensor must be non-empty")
    if qd.ndim > 1:
        raise RuntimeError(f"{fname}() q must be a scalar or 1D tensor")
    if data.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{fname}() input tensor must be either float or double dtype")
    if qd.dtype != data.dtype:
        raise RuntimeError(f"{fname}() q tensor must be same dtype as the input tensor")
    if not scalar_q and not ((qd >= 0) & (qd <= 1)).all():
        raise RuntimeError(f"{fname}() q values must be in the range [0, 1]")
    out_shape: list[int] = []
    if dim is not None and data.ndim > 0:
        d = _dim(int(dim), data.ndim)
        out_shape = list(data.shape)
        if keepdim:
            out_shape[d] = 1
        else:
            del out_shape[d]
    elif keepdim:
        out_shape = [1] * data.ndim
    if dim is None:
        srt = input.flatten().sort().values
    else:
        d = _dim(int(dim), max(data.ndim, 1))
        srt = input.unsqueeze(-1).transpose(d, -1).sort().values if data.ndim else input.reshape(1).sort().values
    full = [qd.size, *out_shape]
    in_shape = [*full[1:], srt.shape[-1]]
    srt = srt.reshape(*in_shape)
    qv = qd.reshape(-1)
    isnan = xp.isnan(srt.data)
    if ignore_nan:
        ranks = qv * ((~isnan).sum(-1, keepdims=True) - 1).astype(data.dtype)
        ranks = xp.where(ranks < 0, 0, ranks).astype(data.dtype)
    else:
        last = srt.shape[-1] - 1
        ranks = xp.broadcast_to(qv * data.dtype.type(last), isnan.shape[:-1] + (qv.size,))
        ranks = xp.where(isnan.any(-1, keepdims=True), data.dtype.type(last), ranks).astype(data.dtype)
    if interpolation == "lower":
        ranks = xp.floor(ranks)
    elif interpolation == "higher":
        ranks = xp.ceil(ranks)
    elif interpolation == "nearest":
        ranks = xp.round(ranks)  # (round half to even, as PyTorch's round_)
    below = ranks.astype(np.int64)
    values = srt.gather(-1, like(below, input))
    if interpolation in ("linear", "midpoint"):
        if interpolation == "midpoint":
            weights = xp.where(ranks == below, 0, 0.5).astype(data.dtype)
        else:
            weights = (ranks - below).astype(data.dtype)
        above = srt.gather(-1, like(xp.ceil(ranks).astype(np.int64), input))
        values = values.lerp(above, like(weights, input))
    if qd.ndim != 0:
        values = values.unsqueeze(0).transpose(0, -1)
    return _renamed(values.squeeze(-1), SqueezeBackward1, SqueezeBackward4)  # (PyTorch's ``squeeze_(-1)``)


@op(SqueezeBackward4)
def quantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles (``q`` a number or a 1-D tensor in [0, 1]) over ``dim`` (all
    elements by default), as ``torch.quantile``: between sorted values by ``interpolation``
    (linear, lower, higher, midpoint or nearest); NaN where a slice has a NaN. The gradient flows
    to the sorted values picked; ``q`` gets none."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


@op(SqueezeBackward4)
def nanquantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` of the elements that are not NaN (NaN where a slice is all NaN), as
    ``torch.nanquantile``."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


# ------------------------------------------------------------------------------ cov, corrcoef
def _weights(w: Any, n: int, name: str, integral: bool) -> None:
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                           "dimensions")
    kind = w.data.dtype.kind
    if integral and kind not in "iu":
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{scalar_type_name(w.data.dtype)} dtype")
    if not integral and kind != "f":
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{scalar_type_name(w.data.dtype)} dtype")
    if w.data.size != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.data.size} != {n}")
    if n and (w.data < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")


@op(*_nodes("squeeze"))
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in columns), as
    ``torch.cov``: ``correction`` (1: Bessel's), integer frequency weights ``fweights`` and
    floating observation weights ``aweights``."""
    if not isinstance(input, Tensor):
        raise not_tensor("cov", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.data.dtype == np.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        _weights(fweights, n, "fweights", True)
        w = fweights
    if aweights is not None:
        _weights(aweights, n, "aweights", False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum: Any = like(np.asarray(n, dtype=np.int64), input)
    else:
        w_sum = w.sum()
        if not bool((w_sum.data != 0).all()):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool((norm.data <= 0).all()):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    x = x - avg.unsqueeze(1)
    c = x.mm((x if w is None else x * w).t())
    return quietly_ops(lambda: c.true_divide(norm)).squeeze()


@op(*_nodes("clip", "div"))
def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in ``input``'s rows, as
    ``torch.corrcoef`` (``cov`` normalised by the standard deviations, clipped to [-1, 1])."""
    if not isinstance(input, Tensor):
        raise not_tensor("corrcoef", input)
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return quietly_ops(lambda: c / c)
    std = c.diagonal().sqrt()
    c = quietly_ops(lambda: c / std.reshape(-1, 1))
    c = quietly_ops(lambda: c / std.reshape(1, -1))
    return c.clip(-1, 1)


# ------------------------------------------------------------------------------ trapezoid
# ATen's ``tensor * double`` and ``tensor / double`` (``mul.Scalar``, ``div.Scalar``): the nodes
# that end Integration.cpp's compositions
MulBackward1 = variant("MulBackward1", MulBackward0, "``tensor * number`` (ATen's ``mul.Scalar``).",
                       module=__name__)
DivBackward1 = variant("DivBackward1", DivBackward0, "``tensor / number`` (ATen's ``div.Scalar``).",
                       module=__name__)


def _renamed(out: Tensor, old: Any, new: Any) -> Tensor:
    node: Any = out.grad_fn
    if type(node) is old:
        node.__class__ = new
    return out


def _parse(fname: str, y: Any, x: Any, dx: Any, dim: Any) -> tuple[Tensor | None, float]:
    """PyTorch's two signatures, ``(y, x, *, dim)`` and ``(y, *, dx=1, dim)``: anything else
    (None for ``x``, ``dx`` or ``dim``, both ``x`` and ``dx``, a number for ``x``) is its
    argument parser's TypeError."""
    sigs = ("Tensor y, Tensor x, *, int dim = -1)", "Tensor y, *, Number dx = 1, int dim = -1")
    bad_x = x is not UNSET and not isinstance(x, Tensor)
    if not isinstance(y, Tensor) or bad_x or dx is None or dim is None or (x is not UNSET and dx is not UNSET):
        kw = {"dx": dx, "dim": dim}
        raise invalid_arguments(fname, [s.rstrip(")") for s in sigs], y, x, **kw)
    if x is not UNSET:
        return x, 1.0
    if dx is UNSET:
        return None, 1.0
    if isinstance(dx, Tensor):
        dx = dx.item()
    if isinstance(dx, (bool, np.bool_, complex)):
        raise RuntimeError(f"{fname}: Currently, we only support dx as a real number.")
    return None, float(dx)


def _halves(t: Tensor, d: int) -> tuple[Tensor, Tensor]:
    """``t.slice(d, 0, -1)`` and ``t.slice(d, 1)``."""
    n = t.shape[d]
    return t.narrow(d, 0, max(n - 1, 0)), t.narrow(d, min(n, 1), max(n - 1, 0))


def _dx_of(y: Tensor, x: Tensor, d: int, fname: str) -> Tensor:
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{fname}: There must be one `x` value for each sample point")
        sizes = [1] * y.ndim
        sizes[d] = x.shape[0]
        xv = x.view(*sizes)
    elif x.ndim < y.ndim:
        xv = x.view(*([1] * (y.ndim - x.ndim)), *x.shape)
    else:
        xv = x
    left, right = _halves(xv, d)
    return right - left


def _zeros_except(y: Tensor, d: int) -> Tensor:
    shape = tuple(s for i, s in enumerate(y.shape) if i != d)
    return like(y._device.xp.zeros(shape, dtype=y.data.dtype), y)


@op(MulBackward1, DivBackward1, aliases=("trapz",))
def trapezoid(y: Tensor, x: Tensor = UNSET, *, dx: float = UNSET, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: samples ``y`` at points ``x`` (a tensor) or spaced
    ``dx`` apart (1 by default), as ``torch.trapezoid`` (alias ``trapz``); 0 over no samples."""
    xt, step = _parse("trapezoid", y, x, dx, dim)
    if y.ndim == 0:  # (``y.size(dim)``)
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _dim(int(dim), y.ndim)
    if y.shape[d] == 0:
        return _zeros_except(y, d)
    if xt is not None:
        if y.data.dtype == np.bool_ or xt.data.dtype == np.bool_:
            raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not supported")
        left, right = _halves(y, d)
        return _renamed(((left + right) * _dx_of(y, xt, d, "trapezoid")).sum(d) / 2.0, DivBackward0, DivBackward1)
    if y.data.dtype == np.bool_:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    out = (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * step
    return _renamed(out, MulBackward0, MulBackward1)


@op(*_nodes("cumsum"), DivBackward1)
def cumulative_trapezoid(y: Tensor, x: Tensor = UNSET, *, dx: float = UNSET, dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim`` (one value fewer than ``y`` has samples), as
    ``torch.cumulative_trapezoid``."""
    xt, step = _parse("cumulative_trapezoid", y, x, dx, dim)
    if xt is not None:
        d = _dim(int(dim), y.ndim)
        if y.data.dtype == np.bool_ or xt.data.dtype == np.bool_:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool is not "
                               "supported")
        dxt = _dx_of(y, xt, d, "cumulative_trapezoid")
        left, right = _halves(y, d)
        return _renamed(((left + right) * dxt).cumsum(d) / 2.0, DivBackward0, DivBackward1)
    if y.data.dtype == np.bool_:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
    if y.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _dim(int(dim), y.ndim)
    left, right = _halves(y, d)
    return ((left + right) * (step / 2.0)).cumsum(d)


TENSOR_METHODS = {"quantile": quantile, "nanquantile": nanquantile, "cov": cov, "corrcoef": corrcoef}
trapz = trapezoid
