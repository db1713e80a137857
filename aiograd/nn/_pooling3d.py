"""3-D pooling: ``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d`` and
``adaptive_max_pool3d``, as torch.nn.functional's.

Max and average pooling read the input's windows as one strided view (``_windows.windows`` over
three dims, ``(..., kd, kh, kw, OD, OH, OW)``), as the 2-D pools do: max pooling keeps, per
window, the kernel position of the first largest element (a NaN wins, the last one, as PyTorch's
CPU kernel), and its backward adds each gradient at the flat ``D*H*W`` index of its maximum
(``bincount``); recorded, that scatter's backward is a gather at the same indices, so it
differentiates again. Average pooling is linear: its backward is ``fold`` of the gradient over
the windows, divided by PyTorch's divisor. Adaptive average pooling is one bin matrix per axis
(PyTorch's bins ``[floor(i*n/out), ceil((i+1)*n/out))``); ``interpolate(mode='area')`` of a 5-D
input is this op. Adaptive max pooling takes each bin's maximum, one bin at a time.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from .._ops._registry import backward, op
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, to_tensor
from ._pooling import _bins, _int, _out_size, _scatter_array
from ._windows import Axis, fold, windows, xp_of

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]

Geometry3 = tuple[Axis, Axis, Axis]


# ------------------------------------------------------------------------------ arguments
def _triple(value: Any, name: str, what: str, message: str, allow_empty: bool = False) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return (_int(value[0], name, what, 0),) * 3
        if len(value) == 3:
            return tuple(_int(v, name, what, i) for i, v in enumerate(value))
        if allow_empty and not value:
            return ()
        raise RuntimeError(f"{name}: {what} {message}")
    return (_int(value, name, what),) * 3


def _geometry(x: Any, name: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> Geometry3:
    """The windows of a 3-D pooling, with PyTorch's checks (``pool3d_shape_check``)."""
    avg = name == "avg_pool3d"
    k = _triple(kernel_size, name, "kernel_size", "must be a single int, or a tuple of three ints" if avg
                else "must either be a single int, or a tuple of three ints")
    s = _triple(stride, name, "stride", "must be omitted, a single int, or a tuple of three ints" if avg
                else "must either be omitted, a single int, or a tuple of three ints", allow_empty=True) if stride is not None else ()
    s = s or k
    p = _triple(padding, name, "padding", "must be a single int, or a tuple of three ints" if avg
                else "must either be a single int, or a tuple of three ints")
    d = _triple(dilation, name, "dilation", "must either be a single int, or a tuple of three ints")
    if x.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for i in range(x.ndim - 4, x.ndim):
        if x.shape[i] == 0:
            where = "avg_pool3d()" if avg else "max_pool3d_with_indices_out_cpu_template()"
            raise RuntimeError(
                f"{where}: Expected input's non-batch dimensions to have positive length, but input has a shape "
                f"of {list(x.shape)} and non-batch dimension {x.shape[i]} has length zero!"  # (PyTorch prints the length)
            )
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    for pi, ki, di in zip(p, k, d):
        if pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={pi}, "
                f"kernel_size={ki} and dilation={di}"
            )
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if any(v < 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(
            f"dilation should be greater than zero, but got dilationT: {d[0]} dilationH: {d[1]} dilationW: {d[2]}"
        )
    sizes = x.shape[-3:]
    if avg and any(n < ki for n, ki in zip(sizes, k)):
        raise RuntimeError(
            f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel size "
            f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})"
        )
    if any(ki // 2 < pi for ki, pi in zip(k, p)):
        raise RuntimeError(
            f"pad should be smaller than or equal to half of kernel size, but got kT: {k[0]} kW: {k[2]} kH: {k[1]} "
            f"padT: {p[0]} padW: {p[2]} padH: {p[1]}"
        )
    outs = [_out_size(n, ki, si, pi, di, ceil_mode) for n, ki, si, pi, di in zip(sizes, k, s, p, d)]
    if any(o < 1 for o in outs):
        c = x.shape[-4]
        raise RuntimeError(
            f"Given input size: ({c}x{'x'.join(map(str, sizes))}). Calculated output size: "
            f"({c}x{'x'.join(map(str, outs))}). Output size is too small"
        )
    a, b, c3 = (Axis(ki, si, di, pi, n, o) for ki, si, di, pi, n, o in zip(k, s, d, p, sizes, outs))
    return a, b, c3


# ------------------------------------------------------------------------------ scatter and gather
def _scatter(g: Tensor, index: Any, volume: tuple[int, int, int], node: Any) -> Tensor:
    """Add each value of ``g`` ``(..., OD, OH, OW)`` at its flat ``index`` of a ``volume``
    ``(..., D, H, W)`` (``index`` broadcasts against ``g``'s leading dims); differentiable,
    recording ``node`` (its backward a gather at the same indices)."""
    xp = xp_of(g)
    gd = g.data
    g2 = gd.reshape(*gd.shape[:-3], -1, gd.shape[-1])
    i2 = index.reshape(*index.shape[:-3], -1, index.shape[-1])
    data = _scatter_array(xp, g2, i2, (volume[0] * volume[1], volume[2]))
    out = like(data.reshape(*gd.shape[:-3], *volume), g)
    if needs_grad(g):
        n = attach(node((edge_of(g),)), out)
        n.index, n.volume = index, volume
    return out


def _gather(t: Tensor, index: Any, node: Any) -> Tensor:
    """The values of ``t`` ``(..., D, H, W)`` at the flat ``index`` ``(..., OD, OH, OW)``."""
    xp = xp_of(t)
    volume = tuple(t.data.shape[-3:])
    lead = t.data.shape[:-3]
    idx = xp.broadcast_to(index, lead + index.shape[-3:])
    data = xp.take_along_axis(t.data.reshape(*lead, -1), idx.reshape(*lead, -1), axis=-1).reshape(idx.shape)
    out = like(data, t)
    if needs_grad(t):
        n = attach(MaxPool3DGatherBackward((edge_of(t),)), out)
        n.index, n.volume, n.scatter = index, volume, node
    return out


@backward()
def MaxPool3DWithIndicesBackwardBackward0(self: Any, grads: list[Any]) -> Any:
    """Backward of the max-pool scatter: a gather at the same indices."""
    return (_gather(grads[0], self.index, MaxPool3DWithIndicesBackwardBackward0),)


@backward()
def AdaptiveMaxPool3DBackwardBackward0(self: Any, grads: list[Any]) -> Any:
    """Backward of the adaptive max-pool scatter: a gather at the same indices."""
    return (_gather(grads[0], self.index, AdaptiveMaxPool3DBackwardBackward0),)


@backward()
def MaxPool3DGatherBackward(self: Any, grads: list[Any]) -> Any:
    """Backward of the gather at max-pool indices: the scatter again."""
    return (_scatter(grads[0], self.index, self.volume, self.scatter),)


# ------------------------------------------------------------------------------ max_pool3d
@backward(batched=True)
def MaxPool3DWithIndicesBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each output's gradient added at its maximum's input position (overlapping windows sum)."""
    return (_scatter(grads[0], self.index, self.volume, MaxPool3DWithIndicesBackwardBackward0),)


def _running_max(xp: Any, win: Any, has_nan: bool) -> tuple[Any, Any]:
    """Max and its kernel position over windows ``(..., kd, kh, kw, OD, OH, OW)``: a later
    element replaces the maximum only if larger, or if it is NaN (ties: the first; NaN: the last)."""
    kernel = win.shape[-6:-3]
    positions = list(itertools.product(*(range(k) for k in kernel)))
    best = win[(..., *positions[0], slice(None), slice(None), slice(None))].copy()
    pick = xp.zeros(best.shape, dtype=np.int32 if len(positions) < 2**31 else np.int64)
    for k, pos in enumerate(positions[1:], 1):
        v = win[(..., *pos, slice(None), slice(None), slice(None))]
        take = v > best
        if has_nan:
            take |= xp.isnan(v)
        best = xp.where(take, v, best)
        pick = xp.where(take, k, pick)
    return best, pick


def _starts(xp: Any, a: Axis) -> Any:
    """The input position of each window's first kernel element along ``a``."""
    return xp.arange(a.out) * a.stride - a.pad


def _first_inside(xp: Any, pick: Any, data: Any, geom: Geometry3) -> Any:
    """PyTorch's pick for a window whose maximum is -inf: its first element inside the input."""
    first = [xp.maximum(0, -(_starts(xp, a) // a.dilation)) for a in geom]
    (kd, kh, kw) = (a.kernel for a in geom)
    inside = (first[0][:, None, None] * (kh * kw) + first[1][None, :, None] * kw + first[2][None, None, :])
    return xp.where(data == -math.inf, inside.astype(pick.dtype), pick)


def _flat_index(xp: Any, pick: Any, geom: Geometry3) -> Any:
    """The flat ``D*H*W`` index of each window's element at kernel position ``pick``."""
    ad, ah, aw = geom
    pick = pick.astype(np.int64)
    i, rest = pick // (ah.kernel * aw.kernel), pick % (ah.kernel * aw.kernel)
    j, k = rest // aw.kernel, rest % aw.kernel
    dd = _starts(xp, ad)[:, None, None] + i * ad.dilation
    hh = _starts(xp, ah)[:, None] + j * ah.dilation
    ww = _starts(xp, aw) + k * aw.dilation
    return ((dd * ah.size + hh) * aw.size + ww).astype(np.int64)


@op(MaxPool3DWithIndicesBackward0, family="_pooling")
def max_pool3d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:
    """Max over each window of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as
    ``torch.nn.functional.max_pool3d``; ``stride`` defaults to ``kernel_size``. With
    ``return_indices`` also the int64 flat index of each maximum in its ``D*H*W`` volume."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("max_pool3d", input)
    x = input.data
    geom = _geometry(x, "max_pool3d", kernel_size, stride, padding, dilation, ceil_mode)
    xp = xp_of(input)
    has_nan = x.dtype.kind == "f" and bool(xp.isnan(x).any())
    data, pick = _running_max(xp, windows(xp, x, geom, fill=-math.inf), has_nan)
    if any(a.pad for a in geom) and x.dtype.kind == "f" and bool((data == -math.inf).any()):
        pick = _first_inside(xp, pick, data, geom)
    out = like(data, input)
    index = _flat_index(xp, pick, geom) if needs_grad(input) or return_indices else None
    if needs_grad(input):
        node = attach(MaxPool3DWithIndicesBackward0((edge_of(input),)), out)
        node.index, node.volume = index, tuple(x.shape[-3:])
    if return_indices:
        return out, like(index, input)
    return out


# ------------------------------------------------------------------------------ avg_pool3d
@backward(batched=True)
def AvgPool3DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each output's gradient, divided by its divisor, spread over its window (``fold``)."""
    g = grads[0]
    kernel = tuple(a.kernel for a in self.geom)
    scaled = (g / to_tensor(self.divisor, g)).unsqueeze(-4).unsqueeze(-4).unsqueeze(-4)
    return (fold(scaled.expand(*g.data.shape[:-3], *kernel, *g.data.shape[-3:]), self.geom),)


def _divisor(xp: Any, geom: Geometry3, count_include_pad: bool, divisor_override: Any, dtype: Any) -> Any:
    """PyTorch's divisor per output position (``avg_pool3d_out_frame``)."""
    if divisor_override is not None:
        return xp.asarray(float(divisor_override), dtype=dtype)
    sizes = []
    for a in geom:
        start = np.arange(a.out) * a.stride - a.pad
        end = np.minimum(start + a.kernel, a.size + a.pad)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, a.size)
        sizes.append(end - start)
    return xp.asarray((sizes[0][:, None, None] * sizes[1][:, None] * sizes[2]).astype(dtype))


@op(AvgPool3DBackward0, top_level=False, family="_pooling")
def avg_pool3d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:
    """Mean over each window of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as
    ``torch.nn.functional.avg_pool3d``: the padding's zeros count unless
    ``count_include_pad=False``; ``divisor_override`` replaces the divisor."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("avg_pool3d", input)
    x = input.data
    geom = _geometry(x, "avg_pool3d", kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    xp = xp_of(input)
    divisor = _divisor(xp, geom, count_include_pad, divisor_override, x.dtype)
    data = windows(xp, x, geom).sum(axis=(-6, -5, -4)) / divisor
    out = like(data.astype(x.dtype, copy=False), input)
    if needs_grad(input):
        node = attach(AvgPool3DBackward0((edge_of(input),)), out)
        node.geom, node.divisor = geom, divisor
    return out


# ------------------------------------------------------------------------------ adaptive pools
def _output_size(x: Any, output_size: Any, name: str, length: str) -> list[int]:
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 3:
            raise RuntimeError(length)
        sizes = list(output_size)
    else:
        sizes = [output_size] * 3
    if x.ndim not in (4, 5):
        raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got{':' if 'max' in name else ''} {list(x.shape)}")
    return [x.shape[-3 + i] if s is None else int(s) for i, s in enumerate(sizes)]


def _nonempty(x: Any, name: str) -> None:
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
                f"{list(x.shape)} with dimension {i} being empty"
            )


def _bounds(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


@backward(batched=True)
def AdaptiveAvgPool3DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Per spatial axis, the gradient times that axis' ``(out, in)`` bin matrix: each output's
    gradient spread evenly over its bin."""
    g = grads[0]
    for axis, m in zip((-3, -2, -1), self.bins):
        mt = to_tensor(m.astype(g.data.dtype, copy=False), g)
        g = g @ mt if axis == -1 else (g.transpose(axis, -1) @ mt).transpose(axis, -1)
    return (g,)


@op(AdaptiveAvgPool3DBackward0, top_level=False, family="_pooling")
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average over ``output_size`` bins of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as
    ``torch.nn.functional.adaptive_avg_pool3d``; a ``None`` in ``output_size`` keeps that size.
    A ``(1, 1, 1)`` output is the mean over the volume, as in PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("adaptive_avg_pool3d", input)
    x = input.data
    sizes = _output_size(x, output_size, "adaptive_avg_pool3d", "adaptive_avg_pool3d: output_size must be 3")
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            "adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
            f"received {{{sizes[0]}, {sizes[1]},{sizes[2]}}}"
        )
    _nonempty(x, "adaptive_avg_pool3d")
    if sizes == [1, 1, 1]:  # PyTorch's shortcut: a mean (``MeanBackward1``)
        return input.mean((-3, -2, -1), keepdim=True)
    xp = xp_of(input)
    data = x
    for axis, n in zip((-3, -2, -1), sizes):  # each bin's sum then its mean, one axis at a time
        parts = [data[(..., slice(s, e), *(slice(None),) * (-1 - axis))].sum(axis, keepdims=True) / (e - s)
                 for s, e in _bounds(data.shape[axis], n)]
        data = xp.concatenate(parts, axis=axis) if parts else data[(..., slice(0, 0), *(slice(None),) * (-1 - axis))]
    out = like(data.astype(x.dtype, copy=False), input)
    if needs_grad(input):
        node = attach(AdaptiveAvgPool3DBackward0((edge_of(input),)), out)
        node.bins = [_bins(np, x.shape[-3 + i], sizes[i], x.dtype) for i in range(3)]
    return out


@backward(batched=True)
def AdaptiveMaxPool3DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each output's gradient added at its maximum's position in the input volume."""
    return (_scatter(grads[0], self.index, self.volume, AdaptiveMaxPool3DBackwardBackward0),)


def _bin_max(xp: Any, x: Any, sizes: list[int]) -> tuple[Any, Any]:
    """The max and flat volume index of each of PyTorch's adaptive bins over ``x`` ``(..., D, H, W)``."""
    d, h, w = x.shape[-3:]
    lead = x.shape[:-3]
    out = xp.empty((*lead, *sizes), dtype=x.dtype)
    index = xp.empty((*lead, *sizes), dtype=xp.int64)
    has_nan = x.dtype.kind == "f" and bool(xp.isnan(x).any())
    for (i, (ds, de)), (j, (hs, he)), (k, (ws, we)) in itertools.product(
        *(enumerate(_bounds(n, o)) for n, o in zip((d, h, w), sizes))
    ):
        win = x[..., ds:de, hs:he, ws:we].reshape(*lead, -1)
        at = xp.argmax(win, axis=-1)
        if has_nan:  # (the last NaN wins, as PyTorch's kernel)
            nan = xp.isnan(win)
            last = win.shape[-1] - 1 - xp.argmax(nan[..., ::-1], axis=-1)
            at = xp.where(nan.any(-1), last, at)
        bh, bw = he - hs, we - ws
        out[..., i, j, k] = xp.take_along_axis(win, at[..., None], axis=-1)[..., 0]
        index[..., i, j, k] = ((ds + at // (bh * bw)) * h + hs + (at // bw) % bh) * w + ws + at % bw
    return out, index


@op(AdaptiveMaxPool3DBackward0, top_level=False, family="_pooling")
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over ``output_size`` bins of ``input`` ``(N, C, D, H, W)`` or ``(C, D, H, W)``, as
    ``torch.nn.functional.adaptive_max_pool3d``; a ``None`` in ``output_size`` keeps that size.
    With ``return_indices`` also the int64 flat index of each maximum in its ``D*H*W`` volume."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("adaptive_max_pool3d", input)
    x = input.data
    sizes = _output_size(x, output_size, "adaptive_max_pool3d",
                         "adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    _nonempty(x, "adaptive_max_pool3d")
    xp = xp_of(input)
    data, index = _bin_max(xp, x, sizes)
    out = like(data, input)
    if needs_grad(input):
        node = attach(AdaptiveMaxPool3DBackward0((edge_of(input),)), out)
        node.index, node.volume = index, tuple(x.shape[-3:])
    if return_indices:
        return out, like(index, input)
    return out
