"""Pooling: ``max_pool2d``, ``avg_pool2d`` and ``adaptive_avg_pool2d``, as torch.nn.functional's.

Max and average pooling read the input's windows as one strided view (``_windows.windows``,
``(..., kh, kw, OH, OW)``). Max pooling runs over the kernel positions (a loop bounded by the
kernel size, each step a whole-array comparison) and keeps, per window, the position of the first
largest element (a NaN wins, the last one, as PyTorch's CPU kernel); ``return_indices`` turns it
into the flat index into the input's ``H*W`` plane. Windows that tile the input (kernel ==
stride, no padding or dilation: ``MaxPool2d(2)``) take a faster path over contiguous copies of
each kernel position's plane (``_tile_max``, ``_tile_spread``), same numbers. Max pooling's backward adds each gradient back at its
position, one strided add per kernel position (windows may overlap); recorded, it is a scatter
at the flat indices (``bincount``) whose backward is a gather there, so it differentiates again. Average pooling
is linear: its backward is ``fold`` of the gradient over the windows, divided by PyTorch's
divisor. Adaptive average pooling is ``P_h @ x @ P_w.T`` with constant bin matrices built from
PyTorch's ``start = floor(i*H/OH)``, ``end = ceil((i+1)*H/OH)``, so its backward is two products.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .._base._dtypes import type_name
from .._ops._registry import backward, op
from .._ops._util import (
    Tensor,
    attach,
    edge_of,
    first_order,
    like,
    needs_grad,
    not_tensor,
    to_tensor,
)
from .._ops.quiet import quietly
from ._windows import Axis, fold, windows, xp_of

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


#: The position of each geometry argument in PyTorch's pooling signatures, for its TypeErrors.
_POSITIONS = {"kernel_size": 2, "stride": 3, "padding": 4, "dilation": 5}


def _int(value: Any, name: str, what: str, pos: int | None = None) -> int:
    """An int argument (or a tuple's element at ``pos``), as PyTorch's ``IntArrayRef`` parser
    takes it: an integer or a one-element integer tensor; a bool or a float is its TypeError."""
    try:
        if type(value) is bool:
            raise TypeError
        if isinstance(value, Tensor) and value.data.size == 1 and value.data.dtype.kind == "b":
            return int(value.data.reshape(()))  # (a one-element bool tensor counts, as there)
        return operator.index(value)
    except TypeError:
        where = f"(position {_POSITIONS[what]}) must be tuple of ints"
        found = f"not {type_name(value)}" if pos is None else f"but found element of type {type_name(value)} at pos {pos}"
        raise TypeError(f"{name}(): argument '{what}' {where}, {found}") from None


def _pair(value: Any, name: str, what: str, allow_empty: bool = False) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return (_int(value[0], name, what, 0),) * 2
        if len(value) == 2:
            return _int(value[0], name, what, 0), _int(value[1], name, what, 1)
        if allow_empty and not value:
            return ()  # type: ignore[return-value]
        raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of two ints")
    return (_int(value, name, what),) * 2


def _out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's ``pooling_output_shape``: the last window must start inside the input or its
    left padding."""
    span = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = span // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _geometry(x: Any, name: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> tuple[Axis, Axis]:
    """The windows of a 2-D pooling, with PyTorch's checks (``pool2d_shape_check``) in its order."""
    k = _pair(kernel_size, name, "kernel_size")
    s = _pair(stride, name, "stride", allow_empty=True) if stride is not None else ()
    s = s or k
    p = _pair(padding, name, "padding")
    d = _pair(dilation, name, "dilation")
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    if any(v <= 0 for v in k):
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kH: {k[0]} kW: {k[1]}"
        )
    if any(v <= 0 for v in d):
        raise RuntimeError(
            f"dilation should be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}"
        )
    if x.ndim not in (3, 4) and name == "max_pool2d":
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if x.ndim not in (3, 4) or 0 in (x.shape if x.ndim == 3 else x.shape[1:]):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
            f"got:{list(x.shape)}"
        )
    for pi, ki, di in zip(p, k, d):
        if pi > (di * (ki - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={pi}, "
                f"kernel_size={ki} and dilation={di}"
            )
    h, w = x.shape[-2:]
    outs = [_out_size(n, ki, si, pi, di, ceil_mode) for n, ki, si, pi, di in zip((h, w), k, s, p, d)]
    if any(o < 1 for o in outs):
        c = x.shape[-3]
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{outs[0]}x{outs[1]}). "
            "Output size is too small"
        )
    ah, aw = (Axis(ki, si, di, pi, n, o) for ki, si, di, pi, n, o in zip(k, s, d, p, (h, w), outs))
    return ah, aw


# ------------------------------------------------------------------------------ max_pool2d
def _scatter(g: Tensor, index: Any, plane: tuple[int, int]) -> Any:
    """Add each value of ``g`` ``(..., OH, OW)`` at its flat ``index`` of an ``(..., H, W)``
    plane (``index`` broadcasts against ``g``'s leading batch dims)."""
    out = like(_scatter_array(xp_of(g), g.data, index, plane), g)
    if needs_grad(g):
        node = attach(MaxPool2DWithIndicesBackwardBackward0((edge_of(g),)), out)
        node.index, node.plane = index, plane
    return out


def _scatter_array(xp: Any, g: Any, index: Any, plane: tuple[int, int]) -> Any:
    size = plane[0] * plane[1]
    lead = g.shape[:-2]
    rows = g.reshape(-1, g.shape[-2] * g.shape[-1])
    idx = xp.broadcast_to(index, g.shape).reshape(rows.shape)
    flat = idx + (xp.arange(rows.shape[0]) * size)[:, None]
    out = xp.bincount(flat.reshape(-1), weights=rows.reshape(-1), minlength=rows.shape[0] * size)
    return out.astype(g.dtype, copy=False).reshape(*lead, *plane)


def _gather(t: Tensor, index: Any) -> Tensor:
    """The values of ``t`` ``(..., H, W)`` at the flat ``index`` ``(..., OH, OW)`` of each plane
    (the adjoint of ``_scatter``)."""
    xp = xp_of(t)
    plane = t.data.shape[-2:]
    lead = t.data.shape[:-2]
    idx = xp.broadcast_to(index, lead + index.shape[-2:])
    flat = t.data.reshape(*lead, -1)
    data = xp.take_along_axis(flat, idx.reshape(*lead, -1), axis=-1).reshape(idx.shape)
    out = like(data, t)
    if needs_grad(t):
        node = attach(MaxPoolGatherBackward((edge_of(t),)), out)
        node.index, node.plane = index, plane
    return out


@backward()
def MaxPool2DWithIndicesBackwardBackward0(self: Any, grads: list[Any]) -> Any:
    """Backward of the max-pool scatter: a gather at the same indices."""
    return (_gather(grads[0], self.index),)


@backward()
def MaxPoolGatherBackward(self: Any, grads: list[Any]) -> Any:
    """Backward of the gather at max-pool indices: the scatter again."""
    return (_scatter(grads[0], self.index, self.plane),)


@backward(batched=True)
def MaxPool2DWithIndicesBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each output's gradient added at its input position (overlapping windows sum)."""
    g = grads[0]
    xp = xp_of(g)
    if not first_order():
        return (_scatter(g, _flat_index(xp, self.pick, self.geom), (self.geom[0].size, self.geom[1].size)),)
    spread = _tile_spread if _tiles(self.geom) else _spread
    return (like(spread(xp, g.data, self.pick, self.geom), g),)


def _spread(xp: Any, g: Any, pick: Any, geom: tuple[Axis, Axis]) -> Any:
    """The first-order backward on arrays: per kernel position, the gradients of the windows
    whose maximum sits there, added at that position's strided view of the (padded) input."""
    ah, aw = geom
    out = xp.zeros(g.shape[:-2] + (max(ah.reach, ah.pad + ah.size), max(aw.reach, aw.pad + aw.size)), dtype=g.dtype)
    span_h, span_w = (ah.out - 1) * ah.stride + 1, (aw.out - 1) * aw.stride + 1
    for k in range(ah.kernel * aw.kernel):
        i, j = divmod(k, aw.kernel)
        rows = slice(i * ah.dilation, i * ah.dilation + span_h, ah.stride)
        cols = slice(j * aw.dilation, j * aw.dilation + span_w, aw.stride)
        out[..., rows, cols] += xp.where(pick == k, g, 0)
    return out[..., ah.pad : ah.pad + ah.size, aw.pad : aw.pad + aw.size]


def _running_max(xp: Any, win: Any, has_nan: bool) -> tuple[Any, Any]:
    """Max and its kernel position over windows ``(..., kh, kw, OH, OW)``, one kernel position
    at a time (strided views, no copy of the windows): a later element replaces the maximum only
    if larger, or if it is NaN, as PyTorch's CPU kernel (ties: the first; NaN: the last).
    ``has_nan``: whether the input has any NaN (else that test is skipped)."""
    kh, kw = win.shape[-4:-2]
    best = win[..., 0, 0, :, :].copy()
    # (the narrowest integer that holds a kernel position: less to read in the backward)
    pick = xp.zeros(best.shape, dtype=np.int16 if kh * kw < 2**15 else np.int64)
    for k in range(1, kh * kw):
        v = win[..., k // kw, k % kw, :, :]
        take = v > best
        if has_nan:
            take |= xp.isnan(v)
        # (``where``, not masked ``copyto``: several times faster in numpy)
        best = xp.where(take, v, best)
        pick = xp.where(take, k, pick)
    return best, pick


# Tiling windows (kernel == stride, no padding or dilation, the input an exact number of
# windows; ``MaxPool2d(2)``, the common case) read ``(..., H, W)`` as ``(..., OH, kh, OW, kw)``:
# the elements at kernel position (i, j) are the plane ``[..., i, :, j]``. Each plane is copied
# out once (a strided copy) and compared whole, instead of the strided comparisons of the
# general path; the backward writes each plane of the gradient once, no zeroing and no adds
# (tiles do not overlap). Same ties (the first maximum) as ``_running_max``; an input with a NaN
# takes the general path (PyTorch's NaN rule needs the extra test).
def _tiles(geom: tuple[Axis, Axis]) -> bool:
    """Whether the windows of ``geom`` tile the input exactly."""
    return all(a.kernel == a.stride and a.pad == 0 and a.dilation == 1 and a.out * a.kernel == a.size
               for a in geom)


def _tile_planes(x: Any, geom: tuple[Axis, Axis]) -> list[Any]:
    """The ``kh*kw`` planes ``(..., OH, OW)`` of tiling windows over ``x`` ``(..., H, W)``, row-major
    kernel order, each a new contiguous array. A window row ``i`` is copied out first (runs of
    ``W``), then split by column (one long strided run): two cheap copies instead of one with
    runs of a single kernel column's ``OW`` elements."""
    (kh, *_, oh), (kw, *_, ow) = geom
    rows = x.reshape(*x.shape[:-2], oh, kh, ow * kw)
    planes = []
    for i in range(kh):
        row = rows[..., i, :].copy()
        planes += [row[..., j::kw].copy() for j in range(kw)]
    return planes


def _tile_max(xp: Any, x: Any, geom: tuple[Axis, Axis]) -> tuple[Any, Any]:
    """``_running_max`` for tiling windows of a NaN-free ``x`` ``(..., H, W)``."""
    kk = geom[0].kernel * geom[1].kernel
    planes = _tile_planes(x, geom)
    best = planes[0]
    pick = xp.zeros(best.shape, dtype=np.int16 if kk < 2**15 else np.int64)
    for k in range(1, kk):
        take = planes[k] > best
        best = xp.where(take, planes[k], best)  # (not ``maximum``: a tie keeps the first, -0.0 too)
        # a later position that takes over has the larger index: a max, not a masked store
        xp.maximum(pick, take * pick.dtype.type(k), out=pick)
    return best, pick


def _tile_spread(xp: Any, g: Any, pick: Any, geom: tuple[Axis, Axis]) -> Any:
    """``_spread`` for tiling windows: each gradient at its window's maximum, zeros elsewhere.
    Each plane is written into its window row (one long strided run), each row into the
    result. A finite gradient is masked by a product (several times faster than ``where``; a NaN
    or inf would leave NaN where the mask is 0, so those take ``where``); adding 0 makes every
    zero +0.0, as PyTorch's sum into zeros (a -0.0 gradient included)."""
    (kh, *_, oh), (kw, *_, ow) = geom
    lead = g.shape[:-2]
    finite = bool(xp.isfinite(g).all())
    out = xp.empty((*lead, oh, kh, ow * kw), dtype=g.dtype)
    row = xp.empty((*lead, oh, ow * kw), dtype=g.dtype)
    for i in range(kh):
        for j in range(kw):
            at = pick == i * kw + j
            plane = g * at if finite else xp.where(at, g, 0)
            plane += 0
            row[..., j::kw] = plane
        out[..., i, :] = row
    return out.reshape(*lead, oh * kh, ow * kw)


def _first_inside(xp: Any, pick: Any, data: Any, geom: tuple[Axis, Axis]) -> Any:
    """PyTorch's pick for a window whose maximum is -inf: its first element inside the input
    (its kernel starts at the window's first such element, and only a larger one takes over),
    where the padding's -inf fill came first here."""
    ah, aw = geom
    first = [xp.maximum(0, -((xp.arange(a.out) * a.stride - a.pad) // a.dilation)) for a in geom]
    inside = (first[0][:, None] * aw.kernel + first[1][None, :]).astype(pick.dtype)
    return xp.where(data == -math.inf, inside, pick)


def _flat_index(xp: Any, pick: Any, geom: tuple[Axis, Axis]) -> Any:
    """The flat index into the ``H*W`` plane of each window's element at kernel position ``pick``:
    element (i, j) of window (oh, ow) sits at row oh*s - p + i*d, column ow*s - p + j*d."""
    ah, aw = geom
    pick = pick.astype(np.int64)
    rows = (xp.arange(ah.out) * ah.stride - ah.pad)[:, None] + (pick // aw.kernel) * ah.dilation
    cols = (xp.arange(aw.out) * aw.stride - aw.pad) + (pick % aw.kernel) * aw.dilation
    return (rows * aw.size + cols).astype(np.int64)


@op(MaxPool2DWithIndicesBackward0)
def max_pool2d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> Any:
    """Max over each window of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.functional.max_pool2d``; ``stride`` defaults to ``kernel_size``. With
    ``return_indices`` also the int64 flat index of each maximum in its ``H*W`` plane."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("max_pool2d", input)
    x = input.data
    geom = _geometry(x, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    xp = xp_of(input)
    has_nan = x.dtype.kind == "f" and bool(xp.isnan(x).any())  # (one pass over the input)
    if _tiles(geom) and not has_nan:
        data, pick = _tile_max(xp, x, geom)
    else:
        data, pick = _running_max(xp, windows(xp, x, geom, fill=-math.inf), has_nan)
        if (geom[0].pad or geom[1].pad) and x.dtype.kind == "f" and bool((data == -math.inf).any()):
            pick = _first_inside(xp, pick, data, geom)
    out = like(data, input)
    if needs_grad(input):
        node = attach(MaxPool2DWithIndicesBackward0((edge_of(input),)), out)
        node.pick, node.geom = pick, geom
    if return_indices:
        return out, like(_flat_index(xp, pick, geom), input)
    return out


# ------------------------------------------------------------------------------ avg_pool2d
@backward(batched=True)
def AvgPool2DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each output's gradient, divided by its divisor, spread over its window (``fold``)."""
    g = grads[0]
    kh, kw = self.geom[0].kernel, self.geom[1].kernel
    scaled = (g / to_tensor(self.divisor, g)).unsqueeze(-3).unsqueeze(-3)
    return (fold(scaled.expand(*g.data.shape[:-2], kh, kw, *g.data.shape[-2:]), self.geom),)


def _divisor(xp: Any, geom: tuple[Axis, Axis], count_include_pad: bool, divisor_override: Any, dtype: Any) -> Any:
    """PyTorch's divisor per output position (``avg_pool2d_out_frame``): the window clipped to
    the padded input, or to the input itself without ``count_include_pad``."""
    if divisor_override is not None:
        return xp.asarray(float(divisor_override), dtype=dtype)
    sizes = []
    for a in geom:
        start = np.arange(a.out) * a.stride - a.pad
        end = np.minimum(start + a.kernel, a.size + a.pad)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, a.size)
        sizes.append(end - start)
    return xp.asarray(np.outer(sizes[0], sizes[1]).astype(dtype))


@op(AvgPool2DBackward0)
def avg_pool2d(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:
    """Mean over each window of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.functional.avg_pool2d``: the padding's zeros count unless
    ``count_include_pad=False``; ``divisor_override`` replaces the divisor."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("avg_pool2d", input)
    x = input.data
    if x.ndim < 3:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
            f"{max(x.ndim, 1) - 1}], but got -3)"
        )
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    geom = _geometry(x, "avg_pool2d", kernel_size, stride, padding, 1, ceil_mode)
    xp = xp_of(input)
    divisor = _divisor(xp, geom, count_include_pad, divisor_override, x.dtype)
    data = windows(xp, x, geom).sum(axis=(-4, -3)) / divisor
    out = like(data.astype(x.dtype, copy=False), input)
    if needs_grad(input):
        node = attach(AvgPool2DBackward0((edge_of(input),)), out)
        node.geom, node.divisor = geom, divisor
    return out


# ------------------------------------------------------------------------------ adaptive_avg_pool2d
@backward(batched=True)
def AdaptiveAvgPool2DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``P_h.T @ g @ P_w``: each output's gradient spread evenly over its bin."""
    g = grads[0]
    ph, pw = self.bins
    if first_order():
        return (like(ph.T @ g.data @ pw, g),)
    return (to_tensor(ph.T, g) @ g @ to_tensor(pw, g),)


def _bins(xp: Any, size: int, out: int, dtype: Any) -> Any:
    """``(out, size)``: row ``i`` averages PyTorch's bin ``[floor(i*size/out), ceil((i+1)*size/out))``."""
    m = np.zeros((out, size), dtype=dtype)
    for i in range(out):  # one row per output position (not per pixel)
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return xp.asarray(m)


def _nonfinite_bins(xp: Any, x: Any, ph: Any, pw: Any) -> Any:
    """The bin means of an input with infinities or NaN as PyTorch's sums give them (the
    products with the bins' zeros gave NaN for every bin of the row or column): NaN for a bin
    holding a NaN or both infinities, the infinity for one holding one, the finite mean else."""
    inside_h, inside_w = (ph > 0).astype(x.dtype), (pw > 0).astype(x.dtype)

    def holds(mask: Any) -> Any:
        return (inside_h @ mask.astype(x.dtype) @ inside_w.T) > 0

    finite = xp.isfinite(x)
    pos, neg = holds(x == xp.inf), holds(x == -xp.inf)
    nan = holds(xp.isnan(x)) | (pos & neg)
    mean = ph @ xp.where(finite, x, 0) @ pw.T
    return xp.where(nan, xp.nan, xp.where(pos, xp.inf, xp.where(neg, -xp.inf, mean))).astype(x.dtype, copy=False)


@op(AdaptiveAvgPool2DBackward0)
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average over ``output_size`` bins of ``input`` ``(N, C, H, W)`` or ``(C, H, W)``, as
    ``torch.nn.functional.adaptive_avg_pool2d``; a ``None`` in ``output_size`` keeps that size.
    A ``(1, 1)`` output is the mean over the plane, as in PyTorch."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("adaptive_avg_pool2d", input)
    x = input.data
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 2:
            raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
        sizes = list(output_size)
    else:
        sizes = [output_size, output_size]
    if x.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(x.shape)}")
    sizes = [x.shape[-2 + i] if s is None else int(s) for i, s in enumerate(sizes)]
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
            f"received {{{sizes[0]}, {sizes[1]}}}"
        )
    for i in range(1, x.ndim):
        if x.shape[i] == 0 and i >= x.ndim - 2:
            raise RuntimeError(
                f"adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {list(x.shape)} with dimension {i} being empty"
            )
    if sizes == [1, 1]:  # PyTorch's shortcut: a mean (``MeanBackward1``)
        return input.mean((-2, -1), keepdim=True)
    xp = xp_of(input)
    ph = _bins(xp, x.shape[-2], sizes[0], x.dtype)
    pw = _bins(xp, x.shape[-1], sizes[1], x.dtype)
    data = quietly(lambda: ph @ x @ pw.T)  # (inf times a bin's zero: NaN, quietly; mended below)
    if x.dtype.kind == "f" and not bool(xp.isfinite(data).all()):
        data = quietly(_nonfinite_bins, xp, x, ph, pw)
    out = like(data, input)
    if needs_grad(input):
        attach(AdaptiveAvgPool2DBackward0((edge_of(input),)), out).bins = (ph, pw)
    return out

