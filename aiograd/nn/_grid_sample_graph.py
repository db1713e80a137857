"""``grid_sample``'s backward written with aiograd ops, for ``create_graph=True``.

When grad mode is on, ``GridSampler2DBackward0`` / ``GridSampler3DBackward0`` compute their
gradients here instead of on arrays, so that they can be differentiated again with respect to the
input, the grid and the incoming gradient (PyTorch 2.13 records ``GridSampler2DBackwardBackward0``;
aiograd records the ops below: ``ScatterAddBackward0``, ``GatherBackward0``, ``MulBackward0``...).

Per tap the source index and whether it is inside are constants (computed with numpy from the grid,
as in the forward). The weights are written with ops of the grid: in bilinear (trilinear) mode the
padded coordinate is piecewise linear in the grid, so a weight is ``w + (grid - grid.detach()) * dw``
(``w`` its value and ``dw`` its constant derivative, the padding's 0/±1 mask included); in bicubic
mode the cubic weights are polynomials of the fractional coordinate ``t + (grid - grid.detach()) *
scale``. Nearest has constant weights and a zero gradient for the grid.

``grad_input`` is one ``scatter_add`` of ``grad * weight`` over every tap into the flattened input;
``grad_grid`` sums, over the taps, ``grad * input-gathered-at-tap * dweight/dgrid``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .._ops._util import Tensor, to_tensor
from .._ops.elementwise import where
from .._ops.joining import cat, stack

_A = -0.75


def _cubic(t: Tensor) -> tuple[list[Tensor], list[Tensor]]:
    """The cubic convolution weights at ``t`` (A = -0.75) and their derivatives with respect to ``t``."""
    a = _A

    def c1(x: Any) -> Any:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x: Any) -> Any:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def d1(x: Any) -> Any:
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def d2(x: Any) -> Any:
        return (3 * a * x - 10 * a) * x + 8 * a

    u, v, w = t + 1, 1 - t, 2 - t
    return [c2(u), c1(t), c1(v), c2(w)], [d2(u), d1(t), -d1(v), -d2(w)]


def _product(factors: list[Any]) -> Any:
    """The product of tensors (or arrays), left to right."""
    out = factors[0]
    for f in factors[1:]:
        out = out * f
    return out


def _axis_weights(grid: Tensor, axes: list[Any], mode: str, align: bool, spatial: list[int]) -> list[Any]:
    """Per spatial axis ((D,) H, W), per tap along it: ``(weight, dweight/dgrid)``, each ``(N, 1, P)``,
    as tensors of the grid where they depend on it."""
    n, nd = grid.shape[0], len(spatial)
    p = int(np.prod(grid.shape[1:-1]))
    out = []
    for k, size in enumerate(spatial):
        coord = grid[..., nd - 1 - k].reshape(n, 1, p)
        if mode == "nearest":  # (a constant weight, connected to the grid with a zero derivative, as torch's)
            never = np.zeros((n, 1, p), dtype=bool)
            out.append([(where(never, coord, tap[2].reshape(n, 1, p)), tap[3].reshape(n, 1, p)) for tap in axes[k]])
            continue
        delta = coord - coord.detach()  # (zero, with the grid's derivative)
        if mode == "bilinear":
            out.append([(delta * tap[3].reshape(n, 1, p) + tap[2].reshape(n, 1, p), tap[3].reshape(n, 1, p))
                        for tap in axes[k]])
            continue
        raw = grid.data[..., nd - 1 - k].reshape(n, 1, p)  # bicubic: as _grid_sample._taps
        ty = raw.dtype.type
        scale = ty((size - 1) / 2) if align else ty(size / 2)
        c = (raw + ty(1)) * scale if align else (raw + ty(1)) * scale - ty(0.5)
        t = delta * float(scale) + (c - np.floor(c))
        ws, ds = _cubic(t)
        out.append([(w, d * float(scale)) for w, d in zip(ws, ds)])
    return out


def grid_sample_backward_graph(g: Tensor, x: Tensor, grid: Tensor, taps: list[Any], axes: list[Any], mode: str,
                               align: bool, want: tuple[bool, bool]) -> tuple[Tensor | None, Tensor | None]:
    """``(grad_input, grad_grid)`` (``None`` where not ``want``-ed) with aiograd ops. ``taps`` are the
    forward's (per combination of taps: flat index, inside, ...), ``axes`` the per-axis taps of
    ``_grid_sample._taps`` (index, inside, weight, derivative), both numpy."""
    n, c, *spatial = x.shape
    nd, size = len(spatial), int(np.prod(spatial))
    p = int(np.prod(grid.shape[1:-1]))
    gd = g.reshape(n, c, p)
    per_axis = _axis_weights(grid, axes, mode, align, spatial)
    combos = list(itertools.product(*per_axis))  # (the forward's order)
    grad_input = grad_grid = None
    if want[0]:
        srcs, index = [], []
        for (flat, ok, _, _, _), combo in zip(taps, combos):
            srcs.append(where(np.broadcast_to(ok, (n, c, p)), gd * _product([w for w, _ in combo][::-1]), 0.0))
            index.append(np.broadcast_to(flat, (n, c, p)))
        zeros = to_tensor(np.zeros((n, c, size), dtype=g.data.dtype), g)
        grad_input = zeros.scatter_add(2, np.concatenate(index, axis=2), cat(srcs, 2)).reshape(tuple(x.shape))
    if want[1]:
        if mode == "nearest":  # piecewise constant: a zero gradient (connected to the grid)
            grad_grid = where(np.zeros(tuple(grid.shape), dtype=bool), grid, 0.0)
        else:
            xf = x.reshape(n, c, size)
            parts: list[Any] = [None] * nd
            for (flat, ok, _, _, _), combo in zip(taps, combos):
                okb = np.broadcast_to(ok, (n, c, p))
                v = where(okb, xf.gather(2, np.ascontiguousarray(np.broadcast_to(flat, (n, c, p)))), 0.0)
                gv = (gd * v).sum(1)
                for k in range(nd):
                    term = gv * _product([combo[j][1] if j == k else combo[j][0] for j in range(nd)][::-1])[:, 0]
                    parts[k] = term if parts[k] is None else parts[k] + term
            grad_grid = stack(parts[::-1], -1).reshape(tuple(grid.shape))
    return grad_input, grad_grid
