"""Antialiased resampling: ``interpolate(..., antialias=True)`` for ``bilinear``, ``bicubic`` and
``lanczos`` on 4-D input, as PyTorch's CPU kernels (``_upsample_{bilinear,bicubic,lanczos}2d_aa``).

Each output position ``i`` of an axis reads the input positions ``xmin .. xmin + xsize - 1``
around ``center = scale * (i + 0.5)`` within ``support`` (``interp_size / 2``, times ``scale``
when downsampling), weighted by the mode's filter (a triangle, Keys' cubic with ``a = -0.5``, or
Lanczos-3) at ``(x - center + 0.5) / max(scale, 1)``, the weights divided by their sum (PyTorch's
``_compute_indices_min_size_weights_aa``, PIL's ``precompute_coeffs``). ``align_corners`` only
changes ``scale`` (``(in - 1) / (out - 1)``). The index and weight arithmetic runs in the
input's dtype with PyTorch's promotions to double, the taps are added in order, and the axes
are resampled the last one first, skipping an axis whose size does not change (PyTorch's
``separable_upsample_generic_Nd_kernel_impl``). ``uint8`` input uses PyTorch's fixed-point path:
int16 weights at the largest precision (below 22 bits) that holds the largest weight, an
integer sum rounded half up and clamped to ``[0, 255]`` after each axis.

The backward (PyTorch's ``cpu_upsample_genNd_backward_aa``) is the transpose of the two axes'
``(out, in)`` weight matrices, an unchanged axis included, so ``_interpolate`` records it with the
same matrix-product rule as the other modes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["aa_apply", "aa_matrix", "aa_weights"]

#: PyTorch's ``interp_size`` of each antialiased mode.
INTERP = {"bilinear": 2, "bicubic": 4, "lanczos": 6}


def _filter(mode: str, x: Any) -> Any:
    """The mode's ``aa_filter`` on ``x`` (an array of the weights' dtype), in that dtype."""
    t = x.dtype.type
    x = np.abs(x)
    zero = np.zeros_like(x)
    if mode == "bilinear":
        return np.where(x < 1, t(1) - x, zero)
    if mode == "bicubic":
        a = t(-0.5)
        near = ((a + t(2)) * x - (a + t(3))) * x * x + t(1)
        far = ((a * x - t(5) * a) * x + t(8) * a) * x - t(4) * a
        return np.where(x < 1, near, np.where(x < 2, far, zero))

    def sinc(v: Any) -> Any:
        with np.errstate(invalid="ignore", divide="ignore"):
            p = v * t(np.pi)
            return np.where(v == 0, t(1), np.sin(p) / p)

    third = (x.astype(np.float64) / 3.0).astype(x.dtype)
    return np.where(x < 3, sinc(x) * sinc(third), zero)


def aa_weights(mode: str, n_in: int, n_out: int, scale: Any, dtype: Any) -> tuple[Any, Any, Any]:
    """``(xmin, xsize, weights)`` of one axis: the first input index and the number of taps of
    each output position, and the ``(n_out, max_interp_size)`` weights (zero past ``xsize``),
    computed as PyTorch's ``_compute_index_ranges_weights`` with ``scalar_t`` = ``dtype``
    (``scale``: PyTorch's ``area_pixel_compute_scale`` in that type)."""
    t = np.dtype(dtype).type
    s = float(scale)
    half = INTERP[mode] * 0.5
    support = t(half * s) if s >= 1.0 else t(half)
    k = int(math.ceil(float(support))) * 2 + 1
    center = (s * (np.arange(n_out) + 0.5)).astype(dtype)
    invscale = np.float64(t(1.0 / s)) if s >= 1.0 else np.float64(1.0)
    xmin = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    xmax = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64), n_in)
    xsize = np.clip(xmax - xmin, 0, k)
    taps = np.arange(k)
    pos = (xmin[:, None] + taps).astype(dtype)
    arg = (((pos - center[:, None]).astype(np.float64) + 0.5) * invscale).astype(dtype)
    used = taps < xsize[:, None]
    w = np.where(used, _filter(mode, arg), t(0)).astype(dtype)
    total = w[:, 0].copy()
    for j in range(1, k):  # PyTorch's running sum, in order
        total = total + w[:, j]
    nonzero = (total != 0)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(nonzero, w / np.where(nonzero, total[:, None], t(1)), w).astype(dtype)
    return xmin, xsize, w


def aa_matrix(xmin: Any, xsize: Any, w: Any, n_in: int) -> Any:
    """The ``(n_out, n_in)`` matrix of one axis' taps."""
    m = np.zeros((len(xmin), n_in), dtype=w.dtype)
    rows, taps = np.nonzero(np.arange(w.shape[1]) < xsize[:, None])
    m[rows, xmin[rows] + taps] = w[rows, taps]
    return m


def _int16(w: Any) -> tuple[Any, int]:
    """PyTorch's ``_compute_index_ranges_int16_weights``: the weights rescaled to int16 and
    their precision (bits)."""
    wt_max = float(w.max()) if w.size else 0.0
    precision = 0
    while precision < 22 and int(0.5 + wt_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = w * float(1 << precision)
    return np.where(v < 0, -0.5 + v, 0.5 + v).astype(np.int64), precision


def _axis(xp: Any, x: Any, axis: int, xmin: Any, xsize: Any, w: Any, precision: int | None) -> Any:
    """Resample ``x`` along ``axis``: each output adds its taps in order (a tap past ``xsize``
    adds nothing; PyTorch always reads the first)."""
    n_in = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = -1
    acc: Any = None
    for j in range(w.shape[1]):
        idx = xp.asarray(np.minimum(xmin + j, n_in - 1))
        wj = xp.asarray(w[:, j]).reshape(shape)
        if precision is not None:
            term = xp.take(x, idx, axis=axis).astype(np.int64) * wj
        else:
            term = xp.take(x, idx, axis=axis) * wj.astype(x.dtype)
        if acc is None:
            acc = term
        else:
            acc = xp.where(xp.asarray(j < xsize).reshape(shape), acc + term, acc)
    if precision is None:
        return acc
    out = (acc + (1 << (precision - 1))) >> precision
    return xp.clip(out, 0, 255).astype(np.uint8)


def aa_apply(xp: Any, x: Any, plans: list[tuple[Any, Any, Any]]) -> Any:
    """Resample the last ``len(plans)`` axes of ``x`` (one ``aa_weights`` plan each), the last
    axis first, skipping an axis whose size does not change. A ``uint8`` ``x`` takes PyTorch's
    fixed-point path (its plans computed in float64)."""
    nd = len(plans)
    for j in range(nd - 1, -1, -1):
        axis = x.ndim - nd + j
        xmin, xsize, w = plans[j]
        if len(xmin) == x.shape[axis]:
            continue
        precision = None
        if x.dtype == np.uint8:
            w, precision = _int16(w)
        if j < nd - 1 and x.shape[-1] == 1 and (precision is None or x.shape[1] > 4):
            # PyTorch's vertical pass reads the first output row's taps for the whole inner loop,
            # which TensorIterator makes this axis when the width is 1: every row is row 0 (its
            # AVX2 uint8 kernel, for up to 4 channels, is not affected).
            xmin, xsize, w = (np.repeat(a[:1], len(a), axis=0) for a in (xmin, xsize, w))
        x = _axis(xp, x, axis, xmin, xsize, w, precision)
    return x
