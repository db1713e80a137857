"""Spatial transformers: ``grid_sample`` (4-D input) and ``affine_grid``, as torch.nn.functional's.

``grid_sample`` follows PyTorch's CPU kernel (``GridSampler.cpp``): a grid coordinate is
unnormalized (``(g + 1) * (size - 1) / 2`` with ``align_corners``, ``(g + 1) * size / 2 - 0.5``
without), then clipped (``border``) or reflected and clipped (``reflection``); ``bilinear`` reads
the four neighbours, ``nearest`` the one at ``rint``, ``bicubic`` the 4x4 around with A = -0.75
(each neighbour's coordinate put through the padding). A neighbour outside the input reads 0.
Each sample is separable into taps along x and along y (an index, a weight and the weight's
derivative with respect to the coordinate), which the forward and the backward share.

The backward is on arrays (a scatter-add for the input's gradient, the weights' derivatives for
the grid's): first order only. Under ``create_graph=True`` the gradients carry PyTorch's
``NotImplemented`` node, so a second derivative through them raises. ``affine_grid`` is linear in
``theta``; its backward is written with aiograd ops.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._base._grad_mode import grad_enabled
from .._ops._division_util import record_not_implemented
from .._ops._registry import backward, op
from .._ops._util import (
    Tensor,
    attach,
    edge_of,
    like,
    needs_grad,
    not_tensor,
    save,
    to_tensor,
)
from .._ops.quiet import quietly

__all__ = ["affine_grid", "grid_sample"]

_A = -0.75
_DEFAULT_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details."
)


def _reflect(c: Any, twice_low: int, twice_high: int) -> tuple[Any, Any]:
    """PyTorch's ``reflect_coordinates_set_grad``: the reflected coordinate and its derivative."""
    if twice_low == twice_high:
        return np.zeros_like(c), np.zeros_like(c)
    t = c.dtype.type
    lo, span = t(twice_low / 2), t((twice_high - twice_low) / 2)
    c = c - lo
    sign = np.where(c < 0, t(-1), t(1))
    c = np.abs(c)
    extra = np.fmod(c, span)
    flips = np.floor(c / span)
    even = np.fmod(flips, 2) == 0
    return np.where(even, extra + lo, span - extra + lo), np.where(even, sign, -sign)


def _clip(c: Any, size: int) -> tuple[Any, Any]:
    """PyTorch's ``clip_coordinates_set_grad``."""
    t = c.dtype.type
    inside = (c > 0) & (c < size - 1)
    return np.clip(c, t(0), t(size - 1)), inside.astype(c.dtype)


def _pad(c: Any, size: int, padding: str, align: bool) -> tuple[Any, Any]:
    """A source coordinate put through the padding mode, and its derivative."""
    if padding == "border":
        return _clip(c, size)
    if padding == "reflection":
        r, dr = _reflect(c, 0, 2 * (size - 1)) if align else _reflect(c, -1, 2 * size - 1)
        r, dc = _clip(r, size)
        return r, dr * dc
    return c, np.ones_like(c)


def _cubic(t: Any) -> tuple[list[Any], list[Any]]:
    """The cubic convolution weights at ``t`` and their derivatives (PyTorch's
    ``get_cubic_upsample_coefficients`` and ``get_cubic_coefficients_grad``)."""
    ty = t.dtype.type
    a, one, two = ty(_A), ty(1), ty(2)

    def c1(x: Any) -> Any:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def c2(x: Any) -> Any:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    w = [c2(t + one), c1(t), c1(one - t), c2(two - t)]
    x0, x1, x2, x3 = -one - t, -t, one - t, two - t
    d = [(-3 * a * x0 - 10 * a) * x0 - 8 * a, (-3 * (a + 2) * x1 - 2 * (a + 3)) * x1,
         (3 * (a + 2) * x2 - 2 * (a + 3)) * x2, (3 * a * x3 - 10 * a) * x3 + 8 * a]
    return w, [-v for v in d]  # (PyTorch's are the negated derivatives, subtracted)


def _taps(g: Any, size: int, mode: str, padding: str, align: bool) -> list[tuple[Any, Any, Any, Any]]:
    """Along one axis, for grid coordinates ``g``: the taps ``(index, in-bounds, weight, d weight
    / d g)``."""
    t = g.dtype.type
    scale = t((size - 1) / 2) if align else t(size / 2)
    c = (g + t(1)) * scale if align else (g + t(1)) * scale - t(0.5)
    if mode == "bicubic":
        base = np.floor(c)
        w, d = _cubic(c - base)
        taps = []
        for k in range(4):
            at, _ = _pad(base - 1 + k, size, padding, align)
            idx = at.astype(np.int64)
            taps.append((idx, (at >= 0) & (at <= size - 1), w[k], d[k] * scale))
        return taps
    c, dc = _pad(c, size, padding, align)
    if mode == "nearest":
        idx = np.rint(c).astype(np.int64)
        return [(idx, (idx >= 0) & (idx < size), np.ones_like(c), np.zeros_like(c))]
    i0 = np.floor(c)
    frac = c - i0
    idx = i0.astype(np.int64)
    return [(idx, (idx >= 0) & (idx < size), t(1) - frac, -dc * scale),
            (idx + 1, (idx + 1 >= 0) & (idx + 1 < size), frac, dc * scale)]


def _sample(x: Any, grid: Any, mode: str, padding: str, align: bool) -> tuple[Any, list[Any]]:
    """The forward on arrays: ``(N, C, OH, OW)``, and the taps it read."""
    n, c, h, w = x.shape
    xs = _taps(grid[..., 0], w, mode, padding, align)
    ys = _taps(grid[..., 1], h, mode, padding, align)
    batch = np.arange(n)[:, None, None]
    out = np.zeros((n, c) + grid.shape[1:3], dtype=x.dtype)
    taps = []
    for iy, oky, wy, dwy in ys:
        row = None
        for ix, okx, wx, dwx in xs:
            ok = oky & okx
            v = x[batch, :, np.where(ok, iy, 0), np.where(ok, ix, 0)]  # (N, OH, OW, C)
            v = np.where(ok[..., None], v, 0).transpose(0, 3, 1, 2)
            taps.append((iy, ix, ok, wy, wx, dwy, dwx, v))
            term = v * wx[:, None]
            row = term if row is None else row + term
        out = out + row * wy[:, None]
    return out, taps


@backward(saved=("input", "grid"))
def GridSampler2DBackward0(self: Any, grads: list[Any]) -> Any:
    """PyTorch's ``grid_sampler_2d_backward`` on arrays: the gradient scattered back at the
    taps (weighted) for the input, the weights' derivatives for the grid."""
    g = grads[0]
    gd = g.data
    n, c, h, w = self.shape
    gi = np.zeros((n, c, h * w), dtype=gd.dtype)
    gx = np.zeros(gd.shape[:1] + gd.shape[2:], dtype=gd.dtype)
    gy = np.zeros_like(gx)
    for iy, ix, ok, wy, wx, dwy, dwx, v in self.taps:
        flat = np.where(ok, iy * w + ix, 0).reshape(n, -1)
        contrib = np.where(ok[:, None], gd * (wy * wx)[:, None], 0).reshape(n, c, -1)
        for b in range(n):
            np.add.at(gi[b], (slice(None), flat[b]), contrib[b])
        gv = (gd * v).sum(axis=1)
        gx += gv * wy * dwx
        gy += gv * dwy * wx
    ggrid = np.stack([gx, gy], axis=-1)
    grad_input = like(gi.reshape(n, c, h, w), g) if self.next_edges[0] is not None else None
    grad_grid = like(ggrid, g) if self.next_edges[1] is not None else None
    if grad_enabled():  # recorded: a second derivative through these raises, as in PyTorch
        operands = (g, self.input.unpack(self), self.grid.unpack(self))
        for out in (grad_input, grad_grid):
            if out is not None:
                record_not_implemented("grid_sampler_2d_backward", out, *operands)
    return grad_input, grad_grid


@op(GridSampler2DBackward0, top_level=False)
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` at the normalized ``(x, y)`` locations of ``grid``
    ``(N, OH, OW, 2)``, as ``torch.nn.functional.grid_sample`` (modes ``bilinear``, ``nearest``,
    ``bicubic``; padding ``zeros``, ``border``, ``reflection``). 4-D inputs only; the gradients
    are first order."""
    if not isinstance(input, Tensor):
        raise not_tensor("grid_sampler", input)
    if not isinstance(grid, Tensor):
        raise not_tensor("grid_sampler", grid, 2, "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_DEFAULT_WARNING, stacklevel=2)
        align_corners = False
    x, gr = input.data, grid.data
    if x.dtype != gr.dtype:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to have same dtype, but input has "
            f"{input.dtype} and grid has {grid.dtype}"
        )
    if x.ndim != gr.ndim or x.ndim not in (4, 5):
        raise RuntimeError(
            f"grid_sampler(): expected {x.ndim}D input and grid with same number of dimensions, but got input with "
            f"sizes {list(x.shape)} and grid with sizes {list(gr.shape)}"
        )
    if x.shape[0] != gr.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
            f"{list(x.shape)} and grid with sizes {list(gr.shape)}"
        )
    if gr.shape[-1] != x.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {x.ndim - 2} in last dimension, but got grid with sizes "
            f"{list(gr.shape)}"
        )
    if x.ndim == 5:
        raise NotImplementedError("grid_sample: aiograd supports 4-D inputs only (5-D is not implemented)")
    if input._device.xp is not np:
        raise NotImplementedError("grid_sample: aiograd computes it on numpy arrays (cpu) only")
    data, taps = quietly(_sample, x, gr, mode, padding_mode, bool(align_corners))
    out = like(data, input)
    if needs_grad(input, grid):
        node = attach(GridSampler2DBackward0((edge_of(input), edge_of(grid))), out)
        node.taps, node.shape = taps, x.shape
        node.input, node.grid = save(input), save(grid)
    return out


# ------------------------------------------------------------------------------ affine_grid
def _steps(n: int, align: bool, dtype: Any) -> Any:
    """PyTorch's ``linspace_from_neg_one``."""
    if n <= 1:
        return np.zeros(1, dtype=dtype)
    r = np.linspace(-1, 1, n, dtype=np.float64)
    if not align:
        r = r * (n - 1) / n
    return r.astype(dtype)


def _base(spatial: list[int], align: bool, dtype: Any) -> Any:
    """The ``(prod(spatial), len(spatial) + 1)`` base grid: ``(x, y[, z], 1)`` per location."""
    axes = [_steps(s, align, dtype) for s in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(-1) for m in reversed(mesh)]  # x (W) first
    return np.stack(cols + [np.ones_like(cols[0])], axis=-1)


@backward(batched=True)
def AffineGridGeneratorBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``grad_theta = g^T @ base``, per matrix (linear in theta)."""
    g = grads[0]
    nd = len(self.spatial)
    flat = g.flatten(-nd - 1, -2)  # (..., N, L, nd)
    return (flat.transpose(-1, -2) @ to_tensor(self.base.astype(g.data.dtype, copy=False), g),)


@op(AffineGridGeneratorBackward0, top_level=False)
def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) of the affine maps ``theta``
    ``(N, 2, 3)`` (``(N, 3, 4)``), for ``grid_sample``, as ``torch.nn.functional.affine_grid``."""
    if not isinstance(theta, Tensor):
        raise not_tensor("affine_grid_generator", theta, arg="theta")
    if align_corners is None:
        warnings.warn(_DEFAULT_WARNING, stacklevel=2)
        align_corners = False
    if theta.data.dtype.kind not in "fc":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    shown, size = size, list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {shown}. Got {_size_str(theta.shape)}."
            )
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {shown}. Got {_size_str(theta.shape)}."
            )
        spatial = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {shown}."
        )
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. See the documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {shown}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"Expected theta batch size {theta.shape[0]} to match size[0] = {size[0]}")
    xp = theta._device.xp
    base = _base(spatial, bool(align_corners), theta.data.dtype)
    data = xp.asarray(base) @ xp.swapaxes(theta.data, -1, -2)  # (N, L, nd)
    out = like(data.reshape(size[0], *spatial, len(spatial)), theta)
    if needs_grad(theta):
        node = attach(AffineGridGeneratorBackward0((edge_of(theta),)), out)
        node.base, node.spatial = base, spatial
    return out


def _size_str(size: Any) -> str:
    """A tensor's shape as PyTorch's message shows it."""
    return f"torch.Size({list(size)})"
