"""The fused array code of ``layer_norm`` and training ``batch_norm`` (``_normalization``).

The forward and the first-order backward of layer_norm and training batch_norm, for float32
and float64 arrays: each statistic a single pass, the sums as matrix-vector products with a
ones vector (BLAS; numpy's reductions over non-contiguous axes run several times slower) and
the per-row sums of products as dot products; the element-wise updates in place. The variance
is that of the centred values, as PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["fusable", "vector", "layer_norm_forward", "layer_norm_grads", "batch_norm_forward", "batch_norm_grads"]


def fusable(x: Any, *others: Any) -> bool:
    """Whether the fused array code applies: a non-empty float32/float64 array, the others
    (gradient, weight, bias) ``None`` or of its dtype."""
    return x.size > 0 and x.dtype in (np.float32, np.float64) and all(o is None or o.dtype == x.dtype for o in others)


def _row_sums(xp: Any, a: Any) -> Any:
    """``a`` ``(R, L)`` -> the sum of each row ``(R,)``."""
    return a @ xp.ones(a.shape[1], dtype=a.dtype)


def _row_dots(xp: Any, a: Any, b: Any) -> Any:
    """``a``, ``b`` ``(R, L)`` -> the dot product of each pair of rows ``(R,)``."""
    if a.shape[1] >= 32 and hasattr(xp, "vecdot"):
        return xp.vecdot(a, b)
    return xp.einsum("ij,ij->i", a, b)


def _channel_sums(xp: Any, a: Any) -> Any:
    """``a`` ``(N, C, L)`` -> the sum of each channel ``(C,)``."""
    n, c, size = a.shape
    if size >= n:
        return _row_sums(xp, a.reshape(n * c, size)).reshape(n, c).sum(0)
    return (xp.ones(n, dtype=a.dtype) @ a.reshape(n, c * size)).reshape(c, size).sum(1)


def _channel_dots(xp: Any, a: Any, b: Any) -> Any:
    """``a``, ``b`` ``(N, C, L)`` -> the sum of ``a * b`` over each channel ``(C,)``."""
    n, c, size = a.shape
    if size >= 32:
        return _row_dots(xp, a.reshape(n * c, size), b.reshape(n * c, size)).reshape(n, c).sum(0)
    return _channel_sums(xp, a * b)


def vector(p: Any) -> Any:
    return None if p is None else p.data.reshape(-1)


def layer_norm_forward(xp: Any, x: Any, w: Any, b: Any, k: int, eps: float) -> tuple[Any, Any, Any]:
    """``layer_norm`` over the last ``k`` dims of ``x``: the output, the rows' mean and rstd."""
    size = math.prod(x.shape[x.ndim - k:])
    x2 = x.reshape(-1, size)
    mean = _row_sums(xp, x2) / size
    y = x2 - mean[:, None]
    rstd = 1.0 / xp.sqrt(_row_dots(xp, y, y) / size + eps)
    y *= rstd[:, None]
    if w is not None:
        y *= w
    if b is not None:
        y += b
    return y.reshape(x.shape), mean, rstd


def layer_norm_grads(xp: Any, g: Any, x: Any, w: Any, mean: Any, rstd: Any,
                            want: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
    """Its gradients (``None`` where not ``want``), ``w`` flat or ``None``::

        gx = rstd * (g*w - sum(g*w)/D) - d * rstd**3 * sum(g*w*d)/D,  d = x - mean
        gw = sum over rows of rstd * g * d,  gb = sum over rows of g
    """
    size = x.size // mean.size
    g2, x2 = g.reshape(-1, size), x.reshape(-1, size)
    gx = gw = gb = None
    if want[2]:
        gb = xp.ones(g2.shape[0], dtype=g.dtype) @ g2
    if want[0] or want[1]:
        d = x2 - mean[:, None]
        p = g2 * d
        if want[1]:
            gw = rstd @ p
        if want[0]:
            s2 = p @ w if w is not None else _row_sums(xp, p)  # sum(g*w*d) of each row
            s1 = g2 @ w if w is not None else _row_sums(xp, g2)  # sum(g*w)
            d *= (-(rstd * rstd * rstd) * s2 / size)[:, None]
            if w is not None:
                xp.multiply(g2, w, out=p)
            else:
                p[...] = g2
            p -= (s1 / size)[:, None]
            p *= rstd[:, None]
            p += d
            gx = p.reshape(x.shape)
    return gx, gw, gb


def batch_norm_forward(xp: Any, x: Any, w: Any, b: Any, eps: float) -> tuple[Any, Any, Any, Any]:
    """Training ``batch_norm`` of ``x`` ``(N, C, ...)``: the output, the channels' mean, rstd
    and sum of squared deviations."""
    n, c = x.shape[:2]
    x3 = x.reshape(n, c, -1)
    count = x.size // c
    mean = _channel_sums(xp, x3) / count
    y = x3 - mean[:, None]
    sumsq = _channel_dots(xp, y, y)
    rstd = 1.0 / xp.sqrt(sumsq / count + eps)
    y *= (rstd if w is None else rstd * w)[:, None]
    if b is not None:
        y += b[:, None]
    return y.reshape(x.shape), mean, rstd, sumsq


def batch_norm_grads(xp: Any, g: Any, x: Any, w: Any, mean: Any, rstd: Any,
                            want: tuple[bool, bool, bool]) -> tuple[Any, Any, Any]:
    """Its gradients (``None`` where not ``want``), per channel::

        gx = a * (g - sum(g)/n - d * rstd**2 * sum(g*d)/n),  a = rstd * w,  d = x - mean
        gw = rstd * sum(g*d),  gb = sum(g)
    """
    n, c = x.shape[:2]
    count = x.size // c
    g3, x3 = g.reshape(n, c, -1), x.reshape(n, c, -1)
    gx = gw = gb = None
    sum_g = _channel_sums(xp, g3) if want[0] or want[2] else None
    if want[0] or want[1]:
        d = x3 - mean[:, None]
        sum_gd = _channel_dots(xp, g3, d)
        if want[1]:
            gw = rstd * sum_gd
        if want[0]:
            a = rstd if w is None else rstd * w
            d *= (-a * rstd * rstd * sum_gd / count)[:, None]
            gx = g3 * a[:, None]
            gx += d
            gx -= (a * sum_g / count)[:, None]
            gx = gx.reshape(x.shape)
    if want[2]:
        gb = sum_g
    return gx, gw, gb
