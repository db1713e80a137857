"""Spatial transformers: ``grid_sample`` (4-D and 5-D input) and ``affine_grid``, as torch.nn.functional's.

``grid_sample`` follows PyTorch's CPU kernels (``GridSamplerKernel.cpp`` in 2-D,
``grid_sampler_3d_cpu`` in 3-D): a grid coordinate is unnormalized (``(g + 1) * (size - 1) / 2``
with ``align_corners``, ``(g + 1) * size / 2 - 0.5`` without), then clipped (``border``) or
reflected and clipped (``reflection``); ``bilinear`` (trilinear in 3-D) reads the corners of the
cell, ``nearest`` the one at ``rint``, ``bicubic`` (4-D only, as in PyTorch) the 4x4 around with
A = -0.75 (each neighbour's coordinate put through the padding). A neighbour outside the input
reads 0. Each sample is separable into taps along each axis (an index, a weight and the weight's
derivative with respect to the coordinate), which the forward and the backward share; the same
code serves 2-D and 3-D (the grid's last axis is x, y[, z]: W, H[, D]).

The backward is on arrays when grad mode is off (one bincount scatter-add for the input's
gradient, the weights' derivatives for the grid's; nearest gives the grid a zero gradient). Under
``create_graph=True`` it is written with aiograd ops (``_grid_sample_graph``: a ``scatter_add``,
``gather`` from the input, the weights as ops of the grid), so it can be differentiated again with
respect to the input, the grid and the incoming gradient, as PyTorch 2.13 does; the second-order
nodes recorded are those ops' (``ScatterAddBackward0``, ``MulBackward0``...), not PyTorch's single
``GridSampler2DBackwardBackward0`` / ``GridSampler3DBackwardBackward0``. ``affine_grid``
is linear in ``theta``; its backward is written with aiograd ops.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._base._grad_mode import grad_enabled
from .._ops._registry import backward, op, variant
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
from ._grid_sample_graph import grid_sample_backward_graph

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


def _taps(g: Any, size: int, mode: str, padding: str, align: bool, safe: bool) -> list[tuple[Any, Any, Any, Any]]:
    """Along one axis, for grid coordinates ``g``: the taps ``(index, in-bounds, weight, d weight
    / d g)``. ``safe``: the 3-D kernel's ``std::min``/``std::max`` clipping (NaN to the far
    border) and ``safe_downgrade_to_int_range`` (a coordinate beyond ``int`` or not finite reads
    as -100, outside)."""
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
    if safe:
        c = np.where((c >= -(2.0**31)) & (c <= 2.0**31 - 2), c, t(-100) if padding == "zeros" else t(size - 1))
    if mode == "nearest":
        idx = np.rint(c).astype(np.int64)
        return [(idx, (idx >= 0) & (idx < size), np.ones_like(c), np.zeros_like(c))]
    i0 = np.floor(c)
    frac = c - i0
    idx = i0.astype(np.int64)
    return [(idx, (idx >= 0) & (idx < size), t(1) - frac, -dc * scale),
            (idx + 1, (idx + 1 >= 0) & (idx + 1 < size), frac, dc * scale)]


def _product(factors: list[Any]) -> Any:
    """The product of arrays, left to right."""
    out = factors[0]
    for f in factors[1:]:
        out = out * f
    return out


def _sample(x: Any, grid: Any, mode: str, padding: str, align: bool) -> tuple[Any, list[Any]]:
    """The forward on arrays: ``(N, C, *grid.shape[1:-1])``, and the taps it read. An output point
    reads the corners of its cell (2 taps per axis; 4 for bicubic, 1 for nearest): for each
    combination of taps (z outermost, x innermost, PyTorch's order), the flat index, whether it is
    inside, the weight along each spatial axis (D,) H, W and its derivative, and the values read."""
    n, c, *spatial = x.shape
    nd, size = len(spatial), int(np.prod(spatial))
    axes = [_taps(grid[..., nd - 1 - k], s, mode, padding, align, nd == 3) for k, s in enumerate(spatial)]
    strides = [int(np.prod(spatial[k + 1:])) for k in range(nd)]
    flat_x = x.reshape(n, c, size)
    p = int(np.prod(grid.shape[1:-1]))
    out = np.zeros((n, c, p), dtype=x.dtype)
    taps = []
    for combo in itertools.product(*axes):
        ok = _product([tap[1] for tap in combo]).reshape(n, 1, p)
        flat = sum((tap[0] * st for tap, st in zip(combo, strides)), np.zeros((), np.int64))
        flat = np.where(ok, flat.reshape(n, 1, p), 0)
        v = np.where(ok, np.take_along_axis(flat_x, flat, axis=2), 0)  # (N, C, P)
        ws = [tap[2].reshape(n, 1, p) for tap in combo]
        out += v * _product(ws[::-1])  # (x, y, z: the kernels' product)
        taps.append((flat, ok, ws, [tap[3].reshape(n, 1, p) for tap in combo], v))
    return out.reshape((n, c) + grid.shape[1:-1]), taps


@backward(saved=("input", "grid"))
def GridSampler2DBackward0(self: Any, grads: list[Any]) -> Any:
    """PyTorch's ``grid_sampler_2d_backward`` (``_3d_`` for ``GridSampler3DBackward0``): the
    gradient scattered back at the taps (weighted) for the input, the weights' derivatives for the
    grid's; on arrays when grad mode is off, with differentiable ops (``_grid_sample_graph``) when
    it is on."""
    g = grads[0]
    n, c, *spatial = self.shape
    nd, size = len(spatial), int(np.prod(spatial))
    gd = g.data.reshape(n, c, int(np.prod(g.data.shape[2:])))
    grad_input = grad_grid = None
    if grad_enabled():  # create_graph: with ops, differentiable again (else on arrays, as before)
        x, grid = self.input.unpack(self), self.grid.unpack(self)
        axes = [quietly(_taps, grid.data[..., nd - 1 - k], s, self.mode, self.padding, self.align, nd == 3)
                for k, s in enumerate(spatial)]
        want = (self.next_edges[0] is not None, self.next_edges[1] is not None)
        return grid_sample_backward_graph(g, x, grid, self.taps, axes, self.mode, self.align, want)
    if self.next_edges[0] is not None:  # one scatter-add (bincount) over every tap
        base = (np.arange(n * c).reshape(n, c, 1) * size)
        index = np.concatenate([(base + flat).ravel() for flat, _, _, _, _ in self.taps])
        weights = np.concatenate([np.where(ok, gd * _product(ws[::-1]), 0).ravel() for _, ok, ws, _, _ in self.taps])
        gi = np.bincount(index, weights=weights, minlength=n * c * size).astype(gd.dtype, copy=False)
        grad_input = like(gi.reshape(self.shape), g)
    if self.next_edges[1] is not None:
        parts = [np.zeros((n, gd.shape[-1]), dtype=gd.dtype) for _ in range(nd)]  # along (D,) H, W
        if self.mode != "nearest":  # (nearest: a zero gradient)
            for _, _, ws, dws, v in self.taps:
                gv = (gd * v).sum(axis=1)
                for k in range(nd):
                    parts[k] += gv * _product([dws[j] if j == k else ws[j] for j in range(nd)][::-1])[:, 0]
        grad_grid = like(np.stack(parts[::-1], axis=-1).reshape(g.data.shape[:1] + g.data.shape[2:] + (nd,)), g)
    return grad_input, grad_grid


GridSampler3DBackward0 = variant("GridSampler3DBackward0", GridSampler2DBackward0,
                                 "PyTorch's ``grid_sampler_3d_backward``: ``GridSampler2DBackward0``'s rule, in 3-D.")


@op(GridSampler2DBackward0, GridSampler3DBackward0, top_level=False)
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` at the normalized ``(x, y)`` locations of ``grid``
    ``(N, OH, OW, 2)`` (or ``(N, C, D, H, W)`` at the ``(x, y, z)`` of ``(N, OD, OH, OW, 3)``), as
    ``torch.nn.functional.grid_sample`` (modes ``bilinear``, ``nearest``, ``bicubic`` (4-D only);
    padding ``zeros``, ``border``, ``reflection``). The gradients can be differentiated again."""
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
    _check(x, gr, mode)
    if input._device.xp is not np:
        raise NotImplementedError("grid_sample: aiograd computes it on numpy arrays (cpu) only")
    data, taps = quietly(_sample, x, gr, mode, padding_mode, bool(align_corners))
    out = like(data, input)
    if needs_grad(input, grid):
        node_class = GridSampler2DBackward0 if x.ndim == 4 else GridSampler3DBackward0
        node: Any = attach(node_class((edge_of(input), edge_of(grid))), out)
        node.taps, node.shape, node.mode = taps, x.shape, mode
        node.padding, node.align = padding_mode, bool(align_corners)
        node.input, node.grid = save(input), save(grid)
    return out


def _check(x: Any, gr: Any, mode: str) -> None:
    """PyTorch's checks, in its order (``check_grid_sampler_common``, then ``_2d``/``_3d``, then
    the kernel's dtypes)."""
    shapes = f"input with sizes {list(x.shape)} and grid with sizes {list(gr.shape)}"
    if x.shape[0] != gr.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {shapes}")
    if gr.shape[-1] != x.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {x.ndim - 2} in last dimension, but got grid with sizes "
            f"{list(gr.shape)}"
        )
    for i in range(2, x.ndim):
        if x.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                f"{list(x.shape)} with dimension {i} being empty"
            )
    nd = 4 if x.ndim == 4 else 5
    if x.ndim != nd or gr.ndim != nd:
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number of dimensions, but got {shapes}")
    if nd == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x.dtype.kind != "f":
        kernel = "grid_sampler_2d_cpu_kernel_impl" if nd == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(x.dtype)}\'')
    if x.dtype != gr.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(x.dtype)} but found {scalar_type_name(gr.dtype)}")


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
        node: Any = attach(AffineGridGeneratorBackward0((edge_of(theta),)), out)
        node.base, node.spatial = base, spatial
    return out


def _size_str(size: Any) -> str:
    """A tensor's shape as PyTorch's message shows it."""
    return f"torch.Size({list(size)})"
