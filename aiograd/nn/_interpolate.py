"""Upsampling: ``interpolate`` (and its deprecated alias ``upsample``), as torch.nn.functional's.

Every mode is separable: each output position of a spatial axis reads a few input positions of
that axis (``_plan``: PyTorch's ``nearest_idx``, ``nearest_exact_idx``, the linear and cubic
``compute_indices_weights`` with ``area_pixel_compute_source_index`` and
``guard_index_and_lambda``, A = -0.75, indices clamped), so the forward gathers and weights one
axis at a time, the last axis first, as PyTorch's CPU kernels nest them. The index and weight
arithmetic runs in PyTorch's types: ``float`` for the nearest modes, the input's dtype for the
interpolating ones (``opmath`` of float is float). ``area`` is adaptive average pooling.

The backward is linear: per axis, the gradient times the ``(out, in)`` matrix of that axis'
weights (a duplicate index adds up), written with aiograd ops (``transpose`` and ``@`` with a
constant matrix), so it is differentiable again and batches. ``antialias=True`` (``bilinear``,
``bicubic``, ``lanczos``) computes its weights in ``_interpolate_aa`` and records the same rule.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._ops._registry import backward, op, variant
from .._ops._util import Tensor, attach, edge_of, like, needs_grad, not_tensor, to_tensor
from ._interpolate_aa import aa_apply, aa_matrix, aa_weights
from ._pooling import adaptive_avg_pool2d
from ._pooling3d import adaptive_avg_pool3d

__all__ = ["interpolate", "upsample", "upsample_bilinear", "upsample_nearest"]

_A = -0.75  # PyTorch's bicubic constant


# ------------------------------------------------------------------------------ plans
def _nearest_scale(n_in: int, n_out: int, scale: float | None) -> np.float32:
    """PyTorch's ``compute_scales_value<float>``: ``1/scale`` if given (and positive), else ``in/out``."""
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(n_in) / np.float32(n_out)


def _area_scale(n_in: int, n_out: int, align_corners: bool, scale: float | None, t: Any) -> Any:
    """PyTorch's ``area_pixel_compute_scale<t>``."""
    if align_corners:
        return t(n_in - 1) / t(n_out - 1) if n_out > 1 else t(0)
    if scale is not None and scale > 0:
        return t(1.0 / scale)
    return t(n_in) / t(n_out)


def _cubic_coefficients(t: Any) -> list[Any]:
    """PyTorch's ``get_cubic_upsample_coefficients`` at ``t`` (arrays of the weights' dtype)."""
    a = t.dtype.type(_A)

    def conv1(x: Any) -> Any:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def conv2(x: Any) -> Any:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = t.dtype.type(1)
    return [conv2(t + one), conv1(t), conv1(one - t), conv2((one - t) + one)]


def _plan(kind: str, n_in: int, n_out: int, align_corners: bool, scale: float | None,
          dtype: Any, nd: int = 2) -> tuple[list[Any], list[Any] | None]:
    """The input indices (one int64 array of length ``n_out`` per tap) and the taps' weights
    (``None`` for the nearest modes) of one axis (``nd``: the number of spatial axes; PyTorch's
    2-D nearest kernel copies an axis whose size does not change, its 1-D and 3-D ones do not)."""
    dst = np.arange(n_out)
    if kind == "nearest":
        if n_out == n_in and nd == 2:
            return [dst], None
        if n_out == 2 * n_in:
            return [dst >> 1], None
        s = _nearest_scale(n_in, n_out, scale)
        return [np.minimum(np.floor(dst.astype(np.float32) * s).astype(np.int64), n_in - 1)], None
    if kind == "nearest-exact":
        s = np.float64(_nearest_scale(n_in, n_out, scale))
        return [np.minimum(np.floor((dst + 0.5) * s).astype(np.int64), n_in - 1)], None
    t = np.dtype(dtype).type
    ratio = _area_scale(n_in, n_out, align_corners, scale, t)
    d = dst.astype(dtype)
    half = t(0.5)
    real = ratio * d if align_corners else ratio * (d + half) - half
    if kind == "linear":
        if n_out == n_in:  # PyTorch copies
            return [dst, dst], [np.ones(n_out, dtype), np.zeros(n_out, dtype)]
        if not align_corners:
            real = np.maximum(real, t(0))
        i0 = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
        l1 = np.clip(real - i0.astype(dtype), t(0), t(1)).astype(dtype)
        i1 = i0 + (i0 < n_in - 1)
        return [i0, i1], [t(1) - l1, l1]
    # cubic
    i0 = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
    lam = np.clip(real - i0.astype(dtype), t(0), t(1)).astype(dtype)
    idx = [np.clip(i0 - 1 + j, 0, n_in - 1) for j in range(4)]
    return idx, [c.astype(dtype) for c in _cubic_coefficients(lam)]


def _matrix(idx: list[Any], w: list[Any] | None, n_in: int, dtype: Any) -> Any:
    """The ``(out, in)`` matrix of one axis' taps (a repeated index adds up)."""
    m = np.zeros((len(idx[0]), n_in), dtype=dtype)
    rows = np.arange(len(idx[0]))
    for k, i in enumerate(idx):
        np.add.at(m, (rows, i), 1 if w is None else w[k])
    return m


def _apply(xp: Any, x: Any, plans: list[tuple[list[Any], list[Any] | None]]) -> Any:
    """Gather and weight ``x`` along its trailing axes (one plan each), the last axis first."""
    nd = len(plans)
    for j in range(nd - 1, -1, -1):
        axis = x.ndim - nd + j
        idx, w = plans[j]
        shape = [1] * x.ndim
        shape[axis] = -1
        if w is None:
            x = xp.take(x, xp.asarray(idx[0]), axis=axis)
            continue
        acc = None
        for i, wk in zip(idx, w):
            term = xp.take(x, xp.asarray(i), axis=axis) * xp.asarray(wk.astype(x.dtype)).reshape(shape)
            acc = term if acc is None else acc + term
        x = acc
    return x


# ------------------------------------------------------------------------------ the nodes
@backward(batched=True)
def UpsampleNearest2DBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Per spatial axis, the gradient times that axis' ``(out, in)`` weight matrix: each output's
    gradient added back at the inputs it read, weighted."""
    g = grads[0]
    nd = len(self.mats)
    for j, m in enumerate(self.mats):
        axis = -nd + j
        mt = to_tensor(m.astype(g.data.dtype, copy=False), g)
        if axis == -1:
            g = g @ mt
        else:
            g = (g.transpose(axis, -1) @ mt).transpose(axis, -1)
    return (g,)


UpsampleNearest1DBackward0 = variant("UpsampleNearest1DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleNearest3DBackward0 = variant("UpsampleNearest3DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleNearestExact1DBackward0 = variant("UpsampleNearestExact1DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleNearestExact2DBackward0 = variant("UpsampleNearestExact2DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleNearestExact3DBackward0 = variant("UpsampleNearestExact3DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleLinear1DBackward0 = variant("UpsampleLinear1DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleBilinear2DBackward0 = variant("UpsampleBilinear2DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleBicubic2DBackward0 = variant("UpsampleBicubic2DBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleTrilinear3DBackward0 = variant("UpsampleTrilinear3DBackward0", UpsampleNearest2DBackward0, module=__name__)

_NODES = {
    ("nearest", 1): UpsampleNearest1DBackward0, ("nearest", 2): UpsampleNearest2DBackward0,
    ("nearest", 3): UpsampleNearest3DBackward0, ("nearest-exact", 1): UpsampleNearestExact1DBackward0,
    ("nearest-exact", 2): UpsampleNearestExact2DBackward0, ("nearest-exact", 3): UpsampleNearestExact3DBackward0,
    ("linear", 1): UpsampleLinear1DBackward0, ("bilinear", 2): UpsampleBilinear2DBackward0,
    ("bicubic", 2): UpsampleBicubic2DBackward0, ("trilinear", 3): UpsampleTrilinear3DBackward0,
}
UpsampleBilinear2DAaBackward0 = variant("UpsampleBilinear2DAaBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleBicubic2DAaBackward0 = variant("UpsampleBicubic2DAaBackward0", UpsampleNearest2DBackward0, module=__name__)
UpsampleLanczos2DAaBackward0 = variant("UpsampleLanczos2DAaBackward0", UpsampleNearest2DBackward0, module=__name__)
_AA_NODES = {"bilinear": UpsampleBilinear2DAaBackward0, "bicubic": UpsampleBicubic2DAaBackward0,
             "lanczos": UpsampleLanczos2DAaBackward0}
_KIND = {"linear": "linear", "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}


def _check_sizes(x: Any, out: list[int]) -> None:
    """PyTorch's ``upsample_{1,2,3}d_common_check``."""
    names = ("D", "H", "W")[3 - len(out):]
    sizes = list(x.shape[2:])
    if any(s <= 0 for s in sizes) or any(s <= 0 for s in out):
        inp = ", ".join(f"{n}: {s}" for n, s in zip(names, sizes))
        outp = ", ".join(f"{n}: {s}" for n, s in zip(names, out))
        joint = " and output" if len(out) == 1 else " output"
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({inp}){joint} ({outp})"
        )


def _resample(input: Tensor, mode: str, out: list[int], scales: list[float] | None,
              align_corners: bool) -> Tensor:
    x = input.data
    nd = len(out)
    _check_sizes(x, out)
    if x.dtype.kind != "f":
        raise NotImplementedError(f"interpolate: aiograd supports floating point inputs only, got {x.dtype}")
    xp = input._device.xp
    plans: list[tuple[list[Any], list[Any] | None]] = []
    for j in range(nd):
        n_in, s = x.shape[2 + j], None if scales is None else scales[j]
        if mode in ("nearest", "nearest-exact"):
            plans.append(_plan(mode, n_in, out[j], False, s, x.dtype, nd))
        else:
            plans.append(_plan(_KIND[mode], n_in, out[j], align_corners, s, x.dtype))
    result = like(_apply(xp, x, plans), input)
    if needs_grad(input):
        node = attach(_NODES[mode, nd]((edge_of(input),)), result)
        node.mats = [_matrix(idx, w, x.shape[2 + j], x.dtype) for j, (idx, w) in enumerate(plans)]
        if mode == "nearest" and nd != 2:  # PyTorch's 1-D and 3-D backward copy an unchanged axis
            mats = [_plan(mode, x.shape[2 + j], out[j], False, None if scales is None else scales[j], x.dtype)
                    for j in range(nd)]
            node.mats = [_matrix(idx, w, x.shape[2 + j], x.dtype) for j, (idx, w) in enumerate(mats)]
        if mode == "bicubic" and list(x.shape[2:]) == out:  # PyTorch's backward copies (its forward does not)
            node.mats = [np.eye(n, dtype=x.dtype) for n in out]
    return result


def _resample_aa(input: Tensor, mode: str, out: list[int], scales: list[float] | None,
                 align_corners: bool) -> Tensor:
    """``antialias=True``: PyTorch's ``_upsample_{mode}2d_aa`` (see ``_interpolate_aa``)."""
    x = input.data
    _check_sizes(x, out)
    if x.dtype != np.uint8 and x.dtype not in (np.float32, np.float64):
        raise NotImplementedError(
            f"\"compute_index_ranges_weights\" not implemented for '{scalar_type_name(x.dtype)}'")
    wdtype = np.float64 if x.dtype == np.uint8 else x.dtype  # PyTorch's uint8 weights are double
    t = np.dtype(wdtype).type
    plans = []
    for j in range(2):
        n_in, s = x.shape[2 + j], None if scales is None else scales[j]
        plans.append(aa_weights(mode, n_in, out[j], _area_scale(n_in, out[j], align_corners, s, t), wdtype))
    result = like(aa_apply(input._device.xp, x, plans), input)
    if needs_grad(input):
        node = attach(_AA_NODES[mode]((edge_of(input),)), result)
        node.mats = [aa_matrix(*plan, x.shape[2 + j]) for j, plan in enumerate(plans)]
    return result


# ------------------------------------------------------------------------------ interpolate
def _is_integer(v: Any) -> bool:
    if isinstance(v, bool):
        return True
    if isinstance(v, (numbers.Integral, np.integer)):
        return True
    return isinstance(v, Tensor) and v.data.dtype.kind in "iub"


@op(*_NODES.values(), *_AA_NODES.values(), top_level=False)
def interpolate(
    input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
    align_corners: bool | None = None, recompute_scale_factor: bool | None = None, antialias: bool = False,
) -> Tensor:
    """Resample ``input`` ``(N, C, d1[, d2[, d3]])`` to ``size`` or by ``scale_factor``, as
    ``torch.nn.functional.interpolate``: modes ``nearest``, ``nearest-exact``, ``linear`` (3-D),
    ``bilinear`` and ``bicubic`` (4-D), ``trilinear`` (5-D) and ``area`` (adaptive average
    pooling), with PyTorch's index and weight arithmetic; ``antialias=True`` with ``bilinear``,
    ``bicubic`` and ``lanczos`` (4-D; float32, float64, and uint8 without a gradient)."""
    if not isinstance(input, Tensor):
        raise not_tensor("interpolate", input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    spatial = list(input.shape[2:])
    output_size: list[Any] | None
    scale_factors: list[Any] | None
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {spatial} and output size of {size}. Please provide input tensor in (N, C, d1, "
                    "d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                )
            if not all(_is_integer(v) for v in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], but "
                    f"got size with types {[type(v) for v in size]}"
                )
            output_size = list(size)
        else:
            output_size = [size for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please provide input "
                    "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scale_factors = list(scale_factor)
        else:
            scale_factors = [scale_factor for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        assert scale_factors is not None
        output_size = [math.floor(spatial[i] * float(scale_factors[i])) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as input"
        )
    valid = {"nearest": (1, 2, 3), "nearest-exact": (1, 2, 3), "area": (1, 2, 3), "linear": (1,),
             "bilinear": (2,), "bicubic": (2,), "trilinear": (3,), "lanczos": (2,)}
    if mode not in valid or dim not in valid[mode]:
        _wrong_dims(input.dim(), mode)
    if mode == "lanczos" and align_corners:
        raise ValueError("Lanczos mode does not support align_corners=True")
    if mode == "lanczos" and not antialias:
        raise ValueError("Lanczos mode requires antialias=True")
    if output_size is None:  # PyTorch's ``compute_output_size``: the product, truncated
        assert scale_factors is not None
        out = [int(spatial[i] * float(scale_factors[i])) for i in range(dim)]
        scales: list[float] | None = [float(s) for s in scale_factors]
    else:
        out = [int(v.item()) if isinstance(v, Tensor) else int(v) for v in output_size]
        scales = None
    if mode == "area":
        if dim == 1:
            return adaptive_avg_pool2d(input.unsqueeze(-2), (1, out[0])).squeeze(-2)
        if dim == 2:
            return adaptive_avg_pool2d(input, out)
        return adaptive_avg_pool3d(input, out)
    if antialias:
        return _resample_aa(input, mode, out, scales, bool(align_corners))
    return _resample(input, mode, out, scales, bool(align_corners))


def _wrong_dims(ndim: int, mode: str) -> None:
    """PyTorch's NotImplementedError for a mode and an input rank that do not go together."""
    need = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if ndim in (3, 4, 5) and mode in need and need[mode] != ndim:
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {need[mode]}D input")
    raise NotImplementedError(
        "Input Error: Only 3D, 4D and 5D input Tensors supported"
        f" (got {ndim}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
        f"nearest-exact (got {mode})"
    )


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of ``interpolate`` (warns, as ``torch.nn.functional.upsample``)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="nearest")`` (warns, as torch's)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)`` (warns, as torch's)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
