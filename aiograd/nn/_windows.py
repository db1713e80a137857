"""Sliding windows over the last two (or three) dims (im2col) and their adjoint (col2im), on arrays and as
differentiable tensor ops: what convolutions and pooling are built from.

A window geometry is one ``Axis`` per spatial dim: kernel size, stride, dilation, padding
before the input, input length and number of windows. ``windows(x)`` turns ``(..., H, W)`` into
the strided view ``(..., kh, kw, OH, OW)`` (``sliding_window_view``, no copy but the padding; the kernel dims
first, so that a window position's plane is read in runs along OW);
``overlap_add(cols)`` is its adjoint: it adds each window back where it came from (one strided
add per kernel position, so a loop bounded by the kernel size, never over pixels) and drops the
padding. ``unfold``/``fold`` are the same on tensors, each the other's backward, so anything
written with them (a convolution's backward, average pooling's) can be differentiated again.
Leading dims pass through untouched, batch dims of a batched backward included.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, NamedTuple

import numpy as np

from .._ops._registry import backward
from .._ops._util import Tensor, attach, edge_of, like, needs_grad

__all__ = ["Axis", "windows", "overlap_add", "unfold", "fold", "permute", "xp_of", "scratch"]


class Axis(NamedTuple):
    """The window geometry along one spatial dim."""

    kernel: int
    stride: int
    dilation: int
    pad: int  # zeros (or the fill) before the input; after it, as many as the windows reach
    size: int  # the input's length
    out: int  # the number of windows

    @property
    def reach(self) -> int:
        """The padded length the windows span: up to the last element of the last window."""
        return (self.out - 1) * self.stride + self.dilation * (self.kernel - 1) + 1


Geometry = tuple[Axis, ...]  # one Axis per spatial dim (two for the 1-D and 2-D ops, three for 3-D)


def windows(xp: Any, x: Any, geom: Geometry, fill: float = 0) -> Any:
    """``(..., H, W) -> (..., kh, kw, OH, OW)`` (and likewise for any number of spatial dims):
    every window, a strided view of the padded input."""
    n = len(geom)
    pads = [(0, 0)] * (x.ndim - n)
    cut = []
    for a in geom:
        pads.append((a.pad, max(a.reach - a.size - a.pad, 0)))
        cut.append(slice(0, a.reach))
    if any(p != (0, 0) for p in pads):
        x = xp.pad(x, pads, constant_values=fill)
    x = x[(..., *cut)]
    if n == 2:  # (the common case spelled out: fewer Python steps per call)
        (kh, sh, dh, *_), (kw, sw, dw, *_) = geom
        view = xp.lib.stride_tricks.sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(-2, -1))
        view = view[..., ::sh, ::sw, ::dh, ::dw]
        lead = tuple(range(view.ndim - 4))
        return view.transpose(*lead, view.ndim - 2, view.ndim - 1, view.ndim - 4, view.ndim - 3)
    extent = tuple(a.dilation * (a.kernel - 1) + 1 for a in geom)
    view = xp.lib.stride_tricks.sliding_window_view(x, extent, axis=tuple(range(-n, 0)))
    view = view[(..., *(slice(None, None, a.stride) for a in geom), *(slice(None, None, a.dilation) for a in geom))]
    lead = tuple(range(view.ndim - 2 * n))
    return view.transpose(*lead, *range(view.ndim - n, view.ndim), *range(view.ndim - 2 * n, view.ndim - n))


def overlap_add(xp: Any, cols: Any, geom: Geometry) -> Any:
    """The adjoint of ``windows``: ``(..., kh, kw, OH, OW) -> (..., H, W)``, each window added
    back at its place (overlaps summed), the padding dropped."""
    n = len(geom)
    if n == 2:  # (the common case spelled out: fewer Python steps per call)
        return _overlap_add_2d(xp, cols, geom)
    lead = cols.shape[: cols.ndim - 2 * n]
    out = xp.zeros(lead + tuple(max(a.reach, a.pad + a.size) for a in geom), dtype=cols.dtype)
    spans = [(a.out - 1) * a.stride + 1 for a in geom]
    for pos in itertools.product(*(range(a.kernel) for a in geom)):
        at = tuple(slice(i * a.dilation, i * a.dilation + span, a.stride) for i, a, span in zip(pos, geom, spans))
        out[(..., *at)] += cols[(..., *pos, *(slice(None),) * n)]
    return out[(..., *(slice(a.pad, a.pad + a.size) for a in geom))]


def _overlap_add_2d(xp: Any, cols: Any, geom: Geometry) -> Any:
    ah, aw = geom
    lead = cols.shape[:-4]
    out = xp.zeros(lead + (max(ah.reach, ah.pad + ah.size), max(aw.reach, aw.pad + aw.size)), dtype=cols.dtype)
    span_h, span_w = (ah.out - 1) * ah.stride + 1, (aw.out - 1) * aw.stride + 1
    for i in range(ah.kernel):
        rows = slice(i * ah.dilation, i * ah.dilation + span_h, ah.stride)
        for j in range(aw.kernel):
            out[..., rows, j * aw.dilation : j * aw.dilation + span_w : aw.stride] += cols[..., i, j, :, :]
    return out[..., ah.pad : ah.pad + ah.size, aw.pad : aw.pad + aw.size]


# ------------------------------------------------------------------------------ scratch buffers
#: Per thread: temporaries of the array path kept from one call to the next. A fresh multi-MB
#: numpy array is memory the allocator may have just handed back to the system, and page
#: faults on it can cost more than the arithmetic; convolutions of one model repeat the same
#: shapes, so their im2col buffers are reused instead. Device arrays (CuPy) have their own pool.
_scratch = threading.local()
#: Buffers above this size are not kept (a bound on what a thread holds on to).
SCRATCH_LIMIT = 64 << 20


def scratch(xp: Any, purpose: Any, shape: tuple[int, ...], dtype: Any, zero: bool = False) -> Any:
    """A temporary array of ``shape`` for ``purpose``, reused across calls on numpy (its
    contents are whatever the last user left, or zeros when it is new and ``zero``)."""
    if xp is not np:
        return xp.zeros(shape, dtype=dtype) if zero else xp.empty(shape, dtype=dtype)
    cache = getattr(_scratch, "buffers", None)
    if cache is None:
        cache = _scratch.buffers = {}
    key = (purpose, shape, np.dtype(dtype).str)
    buf = cache.get(key)
    if buf is None:
        buf = np.zeros(shape, dtype=dtype)
        if buf.nbytes <= SCRATCH_LIMIT:
            if len(cache) >= 32:
                cache.clear()
            cache[key] = buf
    return buf


def xp_of(t: Tensor) -> Any:
    """The array module of ``t``'s device."""
    return t._device.xp


# ------------------------------------------------------------------------------ tensor ops
@backward()
def Im2ColBackward0(self: Any, grads: list[Any]) -> Any:
    """Backward of ``unfold``: the windows' gradients added back (``fold``)."""
    return (fold(grads[0], self.geom),)


@backward()
def Col2ImBackward0(self: Any, grads: list[Any]) -> Any:
    """Backward of ``fold``: the gradient's windows (``unfold``)."""
    return (unfold(grads[0], self.geom),)


def unfold(x: Tensor, geom: Geometry) -> Tensor:
    """``windows`` of a tensor, as a new contiguous array, differentiable (node ``Im2ColBackward0``)."""
    xp = xp_of(x)
    out = like(windows(xp, x.data, geom).copy(), x)  # (a copy: a 1x1 window view may be x itself)
    if needs_grad(x):
        attach(Im2ColBackward0((edge_of(x),)), out).geom = geom
    return out


def fold(cols: Tensor, geom: Geometry) -> Tensor:
    """``overlap_add`` of a tensor, differentiable (node ``Col2ImBackward0``)."""
    out = like(overlap_add(xp_of(cols), cols.data, geom), cols)
    if needs_grad(cols):
        attach(Col2ImBackward0((edge_of(cols),)), out).geom = geom
    return out


def permute(a: Any, *axes: int) -> Any:
    """Reorder the dims of an array or a tensor (the formulas here run on both)."""
    return a.permute(*axes) if isinstance(a, Tensor) else a.transpose(axes)
