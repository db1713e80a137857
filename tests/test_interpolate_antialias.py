"""``interpolate(..., antialias=True)``: ``bilinear``, ``bicubic`` and ``lanczos`` on 4-D input
(aiograd/nn/_interpolate_aa.py), against torch's CPU kernels.

The ``OpSpec`` rows gradcheck and gradgradcheck a row per mode (up and down, ``align_corners``);
the sweeps compare values, node names and gradients with torch over sizes and scale factors
(with and without ``recompute_scale_factor``, odd sizes, an unchanged axis, a width of 1, where
torch's vertical pass gives every row the first row's value), in float64 and float32; uint8
(torch's fixed-point path, no gradient) is compared exactly; the errors word for word.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]


def nnf(lib: Any) -> Any:
    return F if lib is ag else torch.nn.functional


def interp(**kw: Any) -> Any:
    return lambda lib, x: nnf(lib).interpolate(x, antialias=True, **kw)


SPECS = [
    OpSpec("interpolate_aa_bilinear_down", interp(size=(3, 2), mode="bilinear"), ((2, 2, 7, 5),),
           grad_fn="UpsampleBilinear2DAaBackward0"),
    OpSpec("interpolate_aa_bilinear_up_align", interp(scale_factor=(1.7, 0.6), mode="bilinear", align_corners=True),
           ((1, 2, 4, 6),), grad_fn="UpsampleBilinear2DAaBackward0"),
    OpSpec("interpolate_aa_bicubic_down", interp(scale_factor=0.45, mode="bicubic"), ((1, 2, 9, 7),),
           grad_fn="UpsampleBicubic2DAaBackward0"),
    OpSpec("interpolate_aa_bicubic_align", interp(size=(6, 2), mode="bicubic", align_corners=True), ((2, 1, 4, 7),),
           grad_fn="UpsampleBicubic2DAaBackward0"),
    OpSpec("interpolate_aa_lanczos", interp(size=(3, 8), mode="lanczos"), ((1, 2, 8, 5),),
           grad_fn="UpsampleLanczos2DAaBackward0"),
]
globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ torch sweeps
def _close(ours: Any, theirs: Any, dtype: Any) -> None:
    """Relative to the largest magnitude: torch's compiled cubic and sine may fuse or round a
    last bit differently (the weights agree to a few ulps)."""
    scale = max(float(np.abs(theirs).max()), 1.0) if theirs.size else 1.0
    atol = (1e-13 if dtype == np.float64 else 1e-5) * scale
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=atol)


SHAPES = [(2, 3, 7, 9), (1, 2, 16, 5), (1, 1, 23, 31), (2, 2, 1, 6)]
SIZES = [{"size": (3, 4)}, {"size": (13, 2)}, {"size": (50, 40)}, {"size": (7, 9)}, {"size": (7, 5)},
         {"size": (4, 1)}, {"size": 1}, {"scale_factor": 0.3}, {"scale_factor": 1.7},
         {"scale_factor": (0.45, 2.5)}, {"scale_factor": 1.1}, {"scale_factor": 0.6, "recompute_scale_factor": True},
         {"scale_factor": 0.5, "recompute_scale_factor": False}, {"scale_factor": 0.13}]
MODES = [("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True), ("lanczos", False)]


def _out_size(shape: tuple[int, ...], kw: dict[str, Any]) -> list[int]:
    if "size" in kw:
        s = kw["size"]
        return list(s) if isinstance(s, tuple) else [s, s]
    f = kw["scale_factor"]
    f = f if isinstance(f, tuple) else (f, f)
    return [int(n * v) for n, v in zip(shape[2:], f)]


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("mode,align", MODES, ids=[f"{m}-{'align' if a else 'half'}" for m, a in MODES])
@pytest.mark.parametrize("kw", SIZES, ids=[str(k) for k in SIZES])
async def test_values_and_gradients_match_torch(kw: dict[str, Any], mode: str, align: bool, dtype: Any) -> None:
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        if min(_out_size(shape, kw)) <= 0:
            continue  # (the error is compared below)
        x = rng.standard_normal(shape).astype(dtype)
        a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y = F.interpolate(a, mode=mode, align_corners=align, antialias=True, **kw)
        yt = torch.nn.functional.interpolate(t, mode=mode, align_corners=align, antialias=True, **kw)
        assert y.shape == tuple(yt.shape) and y.data.dtype == dtype
        _close(y.data, yt.detach().numpy(), dtype)
        assert type(y.grad_fn).__name__ == yt.grad_fn.name()
        g = rng.standard_normal(y.shape).astype(dtype)
        await y.backward(ag.tensor(g))
        yt.backward(torch.tensor(g))
        _close(a.grad.data, t.grad.numpy(), dtype)


@requires_torch
@pytest.mark.parametrize("mode,align", MODES, ids=[f"{m}-{'align' if a else 'half'}" for m, a in MODES])
def test_uint8_matches_torch_exactly(mode: str, align: bool) -> None:
    """torch's int16 fixed-point path, bit for bit; 1, 3 and 4 channels take its AVX2 kernel."""
    rng = np.random.default_rng(1)
    for c, (h, w), kw in itertools.product([1, 3, 4, 5], [(17, 23), (8, 8), (5, 1)],
                                           [{"size": (5, 7)}, {"size": (30, 40)}, {"size": (4, 1)},
                                            {"scale_factor": 0.6}, {"size": (17, 9)}]):
        if min(_out_size((2, c, h, w), kw)) <= 0:
            continue
        x = rng.integers(0, 256, (2, c, h, w)).astype(np.uint8)
        y = F.interpolate(ag.tensor(x), mode=mode, align_corners=align, antialias=True, **kw)
        yt = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, align_corners=align, antialias=True, **kw)
        assert y.data.dtype == np.uint8 and not y.requires_grad
        np.testing.assert_array_equal(y.data, yt.numpy(), err_msg=f"{c, h, w, kw}")


@requires_torch
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
async def test_double_backward_matches_torch(mode: str) -> None:
    x = np.random.default_rng(0).standard_normal((1, 2, 9, 7))
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kw = {"size": (4, 11), "mode": mode, "antialias": True}
    (ga,) = await ag.grad((F.interpolate(a, **kw) ** 2).sum(), [a], create_graph=True)
    (gt,) = torch.autograd.grad((torch.nn.functional.interpolate(t, **kw) ** 2).sum(), t, create_graph=True)
    np.testing.assert_allclose(ga.data, gt.detach().numpy(), rtol=1e-12, atol=1e-13)
    (gga,) = await ag.grad((ga ** 2).sum(), [a])
    (ggt,) = torch.autograd.grad((gt ** 2).sum(), t)
    np.testing.assert_allclose(gga.data, ggt.numpy(), rtol=1e-11, atol=1e-12)


# ------------------------------------------------------------------------------ checks
ERRORS = [
    ("linear_3d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="linear", antialias=True), (1, 1, 4), None),
    ("nearest_4d", lambda lib, x: nnf(lib).interpolate(x, size=3, antialias=True), (1, 1, 4, 4), None),
    ("bilinear_5d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bilinear", antialias=True),
     (1, 1, 4, 4, 4), None),
    ("bicubic_3d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bicubic", antialias=True), (1, 1, 4), None),
    ("zero_size", lambda lib, x: nnf(lib).interpolate(x, scale_factor=0.13, mode="bilinear", antialias=True),
     (1, 1, 5, 9), None),
    ("lanczos_no_aa", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="lanczos"), (1, 1, 4, 4), None),
    ("lanczos_align", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="lanczos", align_corners=True,
                                                          antialias=True), (1, 1, 4, 4), None),
    ("lanczos_3d", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="lanczos"), (1, 1, 4), None),
    ("int32", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bilinear", antialias=True), (1, 1, 4, 4), "int32"),
    ("int64", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bicubic", antialias=True), (1, 1, 4, 4), "int64"),
    ("float16", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bicubic", antialias=True), (1, 1, 4, 4),
     "float16"),
    ("bool", lambda lib, x: nnf(lib).interpolate(x, size=3, mode="bilinear", antialias=True), (1, 1, 4, 4), "bool"),
]


@requires_torch
@pytest.mark.parametrize("fn,shape,dtype", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_match_torch(fn: Any, shape: tuple[int, ...], dtype: str | None) -> None:
    caught = []
    for lib in (ag, torch):
        x = lib.zeros(shape, dtype=getattr(lib, dtype or "float64"))
        with pytest.raises(Exception) as info:
            fn(lib, x)
        caught.append(info.value)
    assert type(caught[0]) is type(caught[1])
    assert str(caught[0]) == str(caught[1])
