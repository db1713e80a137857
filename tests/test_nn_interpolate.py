"""Upsampling and spatial transformers of aiograd.nn.functional: ``interpolate`` (every mode),
``upsample*``, ``grid_sample`` (4-D; 5-D in tests/test_grid_sample_3d.py), ``affine_grid`` and the ``nn.Upsample`` layers.

The ``OpSpec`` rows (tests/op_factory.py) gradcheck a row per mode (``interpolate`` and
``grid_sample`` twice differentiable; more of the latter in
tests/test_grid_sample_double_backward.py); the sweeps below compare values, gradients and
node names with torch over modes, ``align_corners``, sizes and scale factors (with and without
``recompute_scale_factor``, up and down, non-integer), in float64 and float32; the argument
checks are compared word for word.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]


def nnf(lib: Any) -> Any:
    """The ``nn.functional`` of either library."""
    return F if lib is ag else torch.nn.functional


def interp(**kw: Any) -> Any:
    return lambda lib, x: nnf(lib).interpolate(x, **kw)


def grid_inside(shape: tuple[int, ...], out: tuple[int, int], align: bool) -> Any:
    """An input and a grid whose sample points lie inside the input, away from pixel centres
    (where bilinear and bicubic weights have kinks) and from the edges."""

    def draw(rng: np.random.Generator) -> list[Any]:
        n, _, h, w = shape
        coords = []
        for size in (w, h):
            c = rng.integers(0, size - 1, size=(n, *out)) + rng.uniform(0.2, 0.8, size=(n, *out))
            coords.append(c / (size - 1) * 2 - 1 if align else (c + 0.5) * 2 / size - 1)
        return [rng.uniform(-2, 2, size=shape), np.stack(coords, axis=-1)]

    return draw


def sampler(**kw: Any) -> Any:
    return lambda lib, x, g: nnf(lib).grid_sample(x, g, **kw)


SPECS = [
    OpSpec("interpolate_nearest", interp(size=(5, 3)), ((2, 3, 4, 4),), grad_fn="UpsampleNearest2DBackward0"),
    OpSpec("interpolate_nearest_1d", interp(scale_factor=1.5), ((2, 2, 4),), grad_fn="UpsampleNearest1DBackward0"),
    OpSpec("interpolate_nearest_exact", interp(size=(3, 7), mode="nearest-exact"), ((1, 2, 4, 5),),
           grad_fn="UpsampleNearestExact2DBackward0"),
    OpSpec("interpolate_linear", interp(size=7, mode="linear"), ((2, 2, 4),), grad_fn="UpsampleLinear1DBackward0"),
    OpSpec("interpolate_bilinear", interp(scale_factor=(1.7, 0.6), mode="bilinear"), ((2, 2, 4, 5),),
           grad_fn="UpsampleBilinear2DBackward0"),
    OpSpec("interpolate_bilinear_align", interp(size=(6, 3), mode="bilinear", align_corners=True),
           ((1, 2, 4, 5),), grad_fn="UpsampleBilinear2DBackward0"),
    OpSpec("interpolate_bicubic", interp(size=(6, 3), mode="bicubic"), ((2, 1, 4, 5),),
           grad_fn="UpsampleBicubic2DBackward0"),
    OpSpec("interpolate_trilinear", interp(scale_factor=1.5, mode="trilinear", align_corners=True),
           ((1, 2, 2, 3, 2),), grad_fn="UpsampleTrilinear3DBackward0"),
    OpSpec("interpolate_area_3d", interp(size=(2, 3, 2), mode="area"), ((1, 2, 3, 5, 4),),
           grad_fn="AdaptiveAvgPool3DBackward0"),
    OpSpec("interpolate_area", interp(size=(2, 3), mode="area"), ((2, 2, 5, 4),), grad_fn="AdaptiveAvgPool2DBackward0"),
    OpSpec("affine_grid", lambda lib, t: nnf(lib).affine_grid(t, (2, 1, 3, 4), align_corners=False), ((2, 2, 3),),
           grad_fn="AffineGridGeneratorBackward0"),
    OpSpec("affine_grid_3d", lambda lib, t: nnf(lib).affine_grid(t, (1, 1, 2, 3, 4), align_corners=True),
           ((1, 3, 4),), grad_fn="AffineGridGeneratorBackward0"),
    OpSpec("grid_sample", sampler(align_corners=False), grid_inside((2, 3, 4, 5), (3, 2), False),
           grad_fn="GridSampler2DBackward0"),
    OpSpec("grid_sample_bicubic", sampler(mode="bicubic", padding_mode="border", align_corners=True),
           grid_inside((1, 2, 5, 4), (2, 3), True), grad_fn="GridSampler2DBackward0"),
    OpSpec("grid_sample_reflection", sampler(padding_mode="reflection", align_corners=False),
           grid_inside((1, 2, 4, 4), (2, 2), False), grad_fn="GridSampler2DBackward0"),
]
globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ torch sweeps
def _tolerance(dtype: Any) -> dict[str, float]:
    return {"rtol": 1e-12, "atol": 1e-13} if dtype == np.float64 else {"rtol": 2e-6, "atol": 2e-6}


async def _compare(fn: Any, arrays: list[Any], dtype: Any, seed: int = 0) -> None:
    """Values, node name and gradients of ``fn(lib, *inputs)`` against torch's."""
    arrays = [a.astype(dtype) for a in arrays]
    ours = [ag.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = fn(ag, *ours), fn(torch, *theirs)
    assert y.shape == tuple(yt.shape)
    assert y.data.dtype == dtype
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **_tolerance(dtype))
    assert type(y.grad_fn).__name__ == yt.grad_fn.name()
    g = np.random.default_rng(seed).standard_normal(y.shape).astype(dtype)
    await y.backward(ag.tensor(g))
    yt.backward(torch.tensor(g))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.data, t.grad.numpy(), **_tolerance(dtype))


MODES = [("nearest", (2, 3, 5)), ("nearest", (2, 3, 5, 4)), ("nearest", (1, 2, 3, 4, 5)),
         ("nearest-exact", (2, 3, 5)), ("nearest-exact", (2, 3, 5, 4)), ("nearest-exact", (1, 2, 3, 4, 5)),
         ("linear", (2, 3, 5)), ("bilinear", (2, 3, 5, 4)), ("bicubic", (2, 3, 5, 4)),
         ("trilinear", (1, 2, 3, 4, 5)), ("area", (2, 3, 7)), ("area", (2, 3, 7, 5)), ("area", (1, 2, 5, 6, 7))]
SIZES = [{"size": 7}, {"size": 3}, {"size": (4, 9, 2)}, {"scale_factor": 1.7}, {"scale_factor": 0.6},
         {"scale_factor": 2}, {"scale_factor": 1.1}, {"scale_factor": 1.7, "recompute_scale_factor": True},
         {"scale_factor": 0.45, "recompute_scale_factor": False}, {"scale_factor": (2.5, 0.7, 1.3)}]


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("kw", SIZES, ids=[str(k) for k in SIZES])
@pytest.mark.parametrize("mode,shape", MODES, ids=[f"{m}-{len(s) - 2}d" for m, s in MODES])
async def test_interpolate_matches_torch(mode: str, shape: tuple[int, ...], kw: dict[str, Any], dtype: Any) -> None:
    nd = len(shape) - 2
    kw = {k: v[:nd] if isinstance(v, tuple) else v for k, v in kw.items()}
    corners = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
    x = np.random.default_rng(nd).standard_normal(shape)
    for align in corners:
        await _compare(lambda lib, t, a=align: nnf(lib).interpolate(t, mode=mode, align_corners=a, **kw), [x], dtype)


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
async def test_grid_sample_matches_torch(mode: str, padding: str, align: bool, dtype: Any) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 5, 4))
    grid = rng.uniform(-1.7, 1.7, (2, 6, 7, 2))  # inside and outside [-1, 1]
    await _compare(lambda lib, a, g: nnf(lib).grid_sample(a, g, mode, padding, align), [x, grid], dtype)


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 1, 3), (2, 1, 3, 4, 2)])
async def test_affine_grid_matches_torch(size: tuple[int, ...], align: bool, dtype: Any) -> None:
    theta = np.random.default_rng(3).standard_normal((2, len(size) - 2, len(size) - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the unit-size warning, compared below)
        await _compare(lambda lib, t: nnf(lib).affine_grid(t, size, align), [theta], dtype)


# ------------------------------------------------------------------------------ higher order
async def test_interpolate_double_backward_matches_torch() -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4))
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ga,) = await ag.grad((F.interpolate(a, scale_factor=1.5, mode="bicubic") ** 2).sum(), [a],
                                   create_graph=True)
    (gt,) = torch.autograd.grad((torch.nn.functional.interpolate(t, scale_factor=1.5, mode="bicubic") ** 2).sum(),
                                t, create_graph=True)
    (gga,) = await ag.grad((ga ** 2).sum(), [a])
    (ggt,) = torch.autograd.grad((gt ** 2).sum(), t)
    np.testing.assert_allclose(gga.data, ggt.numpy(), rtol=1e-10)


# (grid_sample's second derivatives: tests/test_grid_sample_double_backward.py)


# ------------------------------------------------------------------------------ checks
def _errors(fn: Any, *shapes: tuple[int, ...]) -> tuple[BaseException, BaseException]:
    caught = []
    for lib in (ag, torch):
        args = [lib.zeros(s, dtype=lib.float64) for s in shapes]
        with pytest.raises(Exception) as info:
            fn(lib, *args)
        caught.append(info.value)
    return caught[0], caught[1]


ERRORS = [
    ("align_nearest", lambda lib, x: nnf(lib).interpolate(x, size=3, align_corners=True), (1, 1, 4)),
    ("both", lambda lib, x: nnf(lib).interpolate(x, size=3, scale_factor=2), (1, 1, 4)),
    ("neither", lambda lib, x: nnf(lib).interpolate(x), (1, 1, 4)),
    ("size_len", lambda lib, x: nnf(lib).interpolate(x, size=(3, 4)), (1, 1, 4)),
    ("size_type", lambda lib, x: nnf(lib).interpolate(x, size=(3.0, 4)), (1, 1, 4, 4)),
    ("scale_len", lambda lib, x: nnf(lib).interpolate(x, scale_factor=(2, 2, 2)), (1, 1, 4, 4)),
    ("recompute_size", lambda lib, x: nnf(lib).interpolate(x, size=3, recompute_scale_factor=True), (1, 1, 4)),
    ("antialias_linear", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="linear", antialias=True), (1, 1, 4)),
    ("linear_4d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="linear"), (1, 1, 4, 4)),
    ("bilinear_3d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bilinear"), (1, 1, 4)),
    ("trilinear_4d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="trilinear"), (1, 1, 4, 4)),
    ("bicubic_3d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bicubic"), (1, 1, 4)),
    ("two_dims", lambda lib, x: nnf(lib).interpolate(x, size=3), (4, 4, 4, 4, 4, 4)),
    ("zero_size", lambda lib, x: nnf(lib).interpolate(x, size=0), (1, 1, 4)),
    ("zero_size_2d", lambda lib, x: nnf(lib).interpolate(x, size=(2, 0), mode="bilinear"), (1, 1, 4, 4)),
    ("grid_mode", lambda lib, x, g: nnf(lib).grid_sample(x, g, mode="area", align_corners=False),
     (1, 1, 3, 3), (1, 2, 2, 2)),
    ("grid_padding", lambda lib, x, g: nnf(lib).grid_sample(x, g, padding_mode="wrap", align_corners=False),
     (1, 1, 3, 3), (1, 2, 2, 2)),
    ("grid_batch", lambda lib, x, g: nnf(lib).grid_sample(x, g, align_corners=False), (2, 1, 3, 3), (1, 2, 2, 2)),
    ("grid_last", lambda lib, x, g: nnf(lib).grid_sample(x, g, align_corners=False), (1, 1, 3, 3), (1, 2, 2, 3)),
    ("grid_dims", lambda lib, x, g: nnf(lib).grid_sample(x, g, align_corners=False), (1, 1, 3, 3), (1, 2, 2)),
    ("affine_shape", lambda lib, t: nnf(lib).affine_grid(t, [1, 1, 3, 3], align_corners=False), (1, 3, 3)),
    ("affine_3d_shape", lambda lib, t: nnf(lib).affine_grid(t, [1, 1, 2, 3, 3], align_corners=False), (1, 2, 3)),
    ("affine_size", lambda lib, t: nnf(lib).affine_grid(t, (1, 3, 3), align_corners=False), (1, 2, 3)),
    ("affine_zero", lambda lib, t: nnf(lib).affine_grid(t, [1, 1, 0, 3], align_corners=False), (1, 2, 3)),
]


@requires_torch
@pytest.mark.parametrize("fn,shapes", [(e[1], e[2:]) for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_match_torch(fn: Any, shapes: tuple[tuple[int, ...], ...]) -> None:
    ours, theirs = _errors(fn, *shapes)
    assert type(ours) is type(theirs)
    assert str(ours) == str(theirs)


@requires_torch
@pytest.mark.parametrize("call", [
    lambda f, x: f.grid_sample(x, x.new_zeros((1, 2, 2, 2))),
    lambda f, x: f.affine_grid(x.new_zeros((1, 2, 3)), [1, 1, 2, 2]),
    lambda f, x: f.affine_grid(x.new_zeros((1, 2, 3)), [1, 1, 1, 2], align_corners=True),
    lambda f, x: f.upsample(x, scale_factor=2),
    lambda f, x: f.upsample_nearest(x, scale_factor=2),
    lambda f, x: f.upsample_bilinear(x, scale_factor=2),
], ids=["grid_sample_default", "affine_grid_default", "affine_grid_unit", "upsample", "upsample_nearest",
        "upsample_bilinear"])
def test_warnings_match_torch(call: Any) -> None:
    messages = []
    for lib, f in ((ag, F), (torch, torch.nn.functional)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(f, lib.zeros((1, 1, 2, 2), dtype=lib.float64))
        messages.append([str(w.message) for w in caught])
    assert messages[0] and messages[0] == messages[1]


@requires_torch
def test_grid_sample_bicubic_5d_error_matches_torch() -> None:
    ours, theirs = _errors(lambda lib, x, g: nnf(lib).grid_sample(x, g, mode="bicubic", align_corners=False),
                           (1, 1, 2, 2, 2), (1, 1, 1, 1, 3))
    assert type(ours) is type(theirs) is RuntimeError
    assert str(ours) == str(theirs) == "grid_sampler(): bicubic interpolation only supports 4D input"


# ------------------------------------------------------------------------------ layers
@requires_torch
@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.Upsample(scale_factor=2),
    lambda lib: lib.nn.Upsample(size=(3, 5), mode="bilinear"),
    lambda lib: lib.nn.Upsample(scale_factor=(1.5, 0.5), mode="bicubic", align_corners=True),
    lambda lib: lib.nn.Upsample(scale_factor=1.5, mode="nearest", recompute_scale_factor=True),
    lambda lib: lib.nn.UpsamplingNearest2d(scale_factor=3),
    lambda lib: lib.nn.UpsamplingBilinear2d(size=5),
], ids=["upsample", "bilinear_size", "bicubic_tuple", "recompute", "nearest2d", "bilinear2d"])
async def test_layers_match_torch(make: Any) -> None:
    ours, theirs = make(ag), make(torch)
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(0).standard_normal((2, 2, 3, 4))
    await _compare(lambda lib, t: (ours if lib is ag else theirs)(t), [x], np.float64)
