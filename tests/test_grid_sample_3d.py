"""``grid_sample`` on 5-D input (aiograd/nn/_grid_sample.py): ``input`` ``(N, C, D, H, W)``
sampled at the ``(x, y, z)`` of ``grid`` ``(N, D', H', W', 3)``.

Values, gradients (input and grid) and node names (``GridSampler3DBackward0``) are compared with
torch over modes (``bilinear``, which is trilinear here, and ``nearest``) x padding modes x
``align_corners`` x shapes (a unit axis among them), with grid points inside, exactly on the
border and far outside, in float64 (to 1e-12) and float32 (to ~1e-5); NaN, infinite and huge
coordinates follow the 3-D kernel. The bilinear gradients are also checked by finite
differences (points away from cell boundaries); the argument checks are compared word for word.
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
from aiograd.testing import gradcheck

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]


def nnf(lib: Any) -> Any:
    """The ``nn.functional`` of either library."""
    return F if lib is ag else torch.nn.functional


def grid_mixed(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    """Grid coordinates inside [-1, 1], exactly on its border (and at 0), and far outside."""
    g = rng.uniform(-1.0, 1.0, shape)
    pick = rng.uniform(size=shape)
    g = np.where(pick < 0.15, rng.choice([-1.0, 1.0, 0.0], size=shape), g)
    g = np.where((pick >= 0.15) & (pick < 0.3), rng.uniform(1.05, 6.0, shape) * rng.choice([-1, 1], shape), g)
    return np.where(pick > 0.97, rng.choice([-40.0, 25.0], size=shape), g)


def grid_inside(shape: tuple[int, ...], out: tuple[int, int, int], align: bool) -> Any:
    """An input and a grid whose points lie inside the input, away from the cell boundaries
    (where the trilinear weights have kinks) and from the edges."""

    def draw(rng: np.random.Generator) -> list[Any]:
        n, _, d, h, w = shape
        coords = []
        for size in (w, h, d):
            c = rng.integers(0, size - 1, size=(n, *out)) + rng.uniform(0.2, 0.8, size=(n, *out))
            coords.append(c / (size - 1) * 2 - 1 if align else (c + 0.5) * 2 / size - 1)
        return [rng.uniform(-2, 2, size=shape), np.stack(coords, axis=-1)]

    return draw


def _tolerance(dtype: Any) -> dict[str, Any]:
    return {"rtol": 1e-12, "atol": 1e-12} if dtype == np.float64 else {"rtol": 1e-5, "atol": 1e-5}


async def _compare(fn: Any, arrays: list[Any], dtype: Any, seed: int = 0) -> None:
    """Values, node name and gradients of ``fn(lib, *inputs)`` against torch's."""
    arrays = [a.astype(dtype) for a in arrays]
    ours = [ag.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = fn(ag, *ours), fn(torch, *theirs)
    assert y.shape == tuple(yt.shape)
    assert y.data.dtype == dtype
    np.testing.assert_allclose(y.data, yt.detach().numpy(), **_tolerance(dtype))
    assert type(y.grad_fn).__name__ == yt.grad_fn.name() == "GridSampler3DBackward0"
    g = np.random.default_rng(seed).standard_normal(y.shape).astype(dtype)
    await y.backward(ag.tensor(g))
    yt.backward(torch.tensor(g))
    for a, t in zip(ours, theirs):
        assert a.grad is not None and t.grad is not None and a.grad.data.dtype == dtype
        np.testing.assert_allclose(a.grad.data, t.grad.numpy(), **_tolerance(dtype))


SHAPES = [((2, 3, 4, 5, 6), (2, 3, 2, 4)), ((1, 2, 1, 3, 2), (1, 2, 3, 2)), ((2, 1, 3, 3, 3), (2, 1, 1, 5))]


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("shapes", SHAPES, ids=["4x5x6", "unit_depth", "cube"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
async def test_grid_sample_3d_matches_torch(mode: str, padding: str, align: bool,
                                            shapes: tuple[tuple[int, ...], tuple[int, ...]], dtype: Any) -> None:
    rng = np.random.default_rng(sum(shapes[0]))
    x = rng.standard_normal(shapes[0])
    grid = grid_mixed(rng, shapes[1] + (3,))
    await _compare(lambda lib, a, g: nnf(lib).grid_sample(a, g, mode, padding, align), [x, grid], dtype)


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d_non_finite_coordinates_match_torch(mode: str, padding: str, align: bool, dtype: Any) -> None:
    x = np.random.default_rng(1).standard_normal((1, 2, 3, 4, 5)).astype(dtype)
    special = [np.nan, np.inf, -np.inf, 1e12, -1e12, 3e9, 0.5]
    grid = np.array([[a, b, c] for a in special for b in (0.25, np.nan, -1e12) for c in (-0.5, np.inf)], dtype=dtype)
    grid = grid.reshape(1, 1, 6, -1, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numpy's on NaN; torch's none)
        y = F.grid_sample(ag.tensor(x), ag.tensor(grid), mode, padding, align)
    yt = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode, padding, align)
    np.testing.assert_allclose(y.data, yt.numpy(), **_tolerance(dtype))


# ------------------------------------------------------------------------------ finite differences
SPECS_3D = [
    OpSpec("grid_sample_3d", lambda lib, x, g: nnf(lib).grid_sample(x, g, align_corners=False),
           grid_inside((2, 2, 3, 4, 3), (2, 1, 3), False), grad_fn="GridSampler3DBackward0"),
    OpSpec("grid_sample_3d_border", lambda lib, x, g: nnf(lib).grid_sample(x, g, padding_mode="border",
                                                                           align_corners=True),
           grid_inside((1, 2, 4, 3, 3), (2, 2, 2), True), grad_fn="GridSampler3DBackward0"),
]
globals().update({f"{k}_3d": v for k, v in make_op_tests(SPECS_3D).items()})


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
async def test_grid_sample_3d_gradcheck(padding: str, align: bool) -> None:
    x, grid = grid_inside((1, 2, 3, 2, 4), (2, 2, 1), align)(np.random.default_rng(5))
    inputs = [ag.tensor(x, requires_grad=True), ag.tensor(grid, requires_grad=True)]
    assert await gradcheck(lambda a, g: F.grid_sample(a, g, "bilinear", padding, align), inputs)


async def test_grid_sample_3d_nearest_grid_gradient_is_zero() -> None:
    rng = np.random.default_rng(2)
    x = ag.tensor(rng.standard_normal((1, 2, 3, 3, 3)), requires_grad=True)
    grid = ag.tensor(rng.uniform(-1, 1, (1, 2, 2, 2, 3)), requires_grad=True)
    await (F.grid_sample(x, grid, mode="nearest", align_corners=True) ** 2).sum().backward()
    assert grid.grad is not None and x.grad is not None
    assert not grid.grad.data.any() and x.grad.data.any()


async def test_grid_sample_3d_one_input_needing_grad() -> None:
    rng = np.random.default_rng(4)
    x = ag.tensor(rng.standard_normal((2, 1, 2, 3, 2)))
    grid = ag.tensor(rng.uniform(-1, 1, (2, 1, 2, 2, 3)), requires_grad=True)
    await F.grid_sample(x, grid, align_corners=False).sum().backward()
    assert x.grad is None and grid.grad is not None and grid.grad.shape == grid.shape


# ------------------------------------------------------------------------------ checks
def _sampler(**kw: Any) -> Any:
    return lambda lib, x, g: nnf(lib).grid_sample(x, g, **{"align_corners": False, **kw})


ERRORS = [
    ("bicubic_5d", _sampler(mode="bicubic"), (1, 1, 2, 2, 2), (1, 1, 1, 1, 3)),
    ("bicubic_5d_grid_4d", _sampler(mode="bicubic"), (1, 1, 3, 3, 3), (1, 2, 2, 3)),
    ("grid_4d", _sampler(), (1, 1, 2, 2, 2), (1, 1, 1, 3)),
    ("grid_6d", _sampler(), (1, 1, 2, 2, 2), (1, 1, 1, 1, 1, 3)),
    ("input_6d", _sampler(), (1, 1, 2, 2, 2, 2), (1, 1, 1, 1, 1, 4)),
    ("input_3d", _sampler(), (1, 1, 3), (1, 2, 1)),
    ("last_dim_2", _sampler(), (1, 1, 2, 2, 2), (1, 1, 1, 1, 2)),
    ("last_dim_3_for_4d", _sampler(), (1, 1, 2, 2), (1, 1, 1, 1, 3)),
    ("batch", _sampler(), (2, 1, 2, 2, 2), (1, 1, 1, 1, 3)),
    ("batch_and_dims", _sampler(), (2, 1, 2, 2), (1, 1, 1, 1, 3)),
    ("empty_depth", _sampler(), (1, 1, 0, 2, 2), (1, 1, 1, 1, 3)),
    ("empty_width_2d", _sampler(), (1, 1, 2, 0), (1, 1, 1, 2)),
    ("mode", _sampler(mode="trilinear"), (1, 1, 2, 2, 2), (1, 1, 1, 1, 3)),
]


@requires_torch
@pytest.mark.parametrize("fn,shapes", [(e[1], e[2:]) for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_match_torch(fn: Any, shapes: tuple[tuple[int, ...], ...]) -> None:
    caught = []
    for lib in (ag, torch):
        with pytest.raises(Exception) as info:
            fn(lib, *[lib.zeros(s, dtype=lib.float64) for s in shapes])
        caught.append(info.value)
    assert type(caught[0]) is type(caught[1])
    assert str(caught[0]) == str(caught[1])


@requires_torch
@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64"), ("int64", "int64"),
                                    ("int64", "float64"), ("int32", "float32")])
@pytest.mark.parametrize("nd", [2, 3])
def test_dtype_errors_match_torch(nd: int, dtypes: tuple[str, str]) -> None:
    caught = []
    for lib in (ag, torch):
        x = lib.zeros((1, 1) + (2,) * nd, dtype=getattr(lib, dtypes[0]))
        g = lib.zeros((1, 1) + (1,) * nd + (nd,), dtype=getattr(lib, dtypes[1]))
        with pytest.raises(Exception) as info:
            nnf(lib).grid_sample(x, g, align_corners=False)
        caught.append(info.value)
    assert type(caught[0]) is type(caught[1])
    assert str(caught[0]) == str(caught[1])


@requires_torch
@pytest.mark.parametrize("shapes", [((0, 1, 2, 2, 2), (0, 1, 1, 1, 3)), ((1, 0, 2, 2, 2), (1, 1, 2, 1, 3)),
                                    ((1, 2, 2, 2, 2), (1, 0, 2, 1, 3))], ids=["batch", "channels", "grid"])
async def test_empty_matches_torch(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    ours = [ag.zeros(s, dtype=ag.float64, requires_grad=True) for s in shapes]
    theirs = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in shapes]
    y = F.grid_sample(ours[0], ours[1], align_corners=True)
    yt = torch.nn.functional.grid_sample(theirs[0], theirs[1], align_corners=True)
    assert y.shape == tuple(yt.shape)
    await y.sum().backward()
    yt.sum().backward()
    for a, t in zip(ours, theirs):
        assert a.grad is not None and t.grad is not None and a.grad.shape == tuple(t.grad.shape)
