"""Pooling: ``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d`` of aiograd.nn.functional.

The ``OpSpec`` rows (tests/op_factory.py) cover kernel sizes, strides (and their default, the
kernel), paddings, dilations, ``ceil_mode``, ``count_include_pad``, ``divisor_override``, uneven
adaptive bins, batched and unbatched inputs. Max pooling's inputs are drawn without ties (a tie
has no derivative); ties, NaNs and the returned indices are compared with torch separately, and
the argument checks word for word.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough


def nnf(lib: Any) -> Any:
    """The ``nn.functional`` of either library."""
    return F if lib is ag else torch.nn.functional


def distinct(shape: tuple[int, ...]) -> Any:
    """A sampler of one input whose entries are at least 0.05 apart (no ties in any window)."""

    def draw(rng: np.random.Generator) -> list[Any]:
        values = rng.permutation(np.prod(shape)) * 0.05 - 1.0
        return [values.reshape(shape)]

    return draw


def max_pool(shape: tuple[int, ...], *args: Any, **kw: Any) -> tuple[Any, Any]:
    return (lambda lib, x: nnf(lib).max_pool2d(x, *args, **kw)), distinct(shape)


def avg_pool(*args: Any, **kw: Any) -> Any:
    return lambda lib, x: nnf(lib).avg_pool2d(x, *args, **kw)


def adaptive(size: Any) -> Any:
    return lambda lib, x: nnf(lib).adaptive_avg_pool2d(x, size)


MAX = "MaxPool2DWithIndicesBackward0"
AVG = "AvgPool2DBackward0"
ADAPTIVE = "AdaptiveAvgPool2DBackward0"
MAX_ROWS = [
    ("max_pool2d", (2, 2, 4, 4), (2,), {}),
    ("max_pool2d_stride", (1, 2, 5, 5), (3,), {"stride": 1}),
    ("max_pool2d_rect", (1, 1, 5, 6), ((2, 3),), {"stride": (1, 2)}),
    ("max_pool2d_padding", (1, 2, 5, 5), (3,), {"stride": 2, "padding": 1}),
    ("max_pool2d_dilation", (1, 1, 6, 6), (2,), {"stride": 1, "dilation": 2, "padding": 1}),
    ("max_pool2d_ceil_mode", (1, 2, 5, 5), (2,), {"ceil_mode": True}),
    ("max_pool2d_ceil_mode_padding", (1, 1, 6, 5), (3,), {"stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool2d_unbatched", (2, 4, 5), (2,), {"stride": (2, 1)}),
]
SPECS = [
    OpSpec(name, max_pool(shape, *args, **kw)[0], max_pool(shape, *args, **kw)[1], grad_fn=MAX)
    for name, shape, args, kw in MAX_ROWS
] + [
    OpSpec("max_pool2d_return_indices", lambda lib, x: nnf(lib).max_pool2d(x, 2, return_indices=True)[0],
           distinct((1, 2, 4, 4)), grad_fn=MAX),
    # ---------------------------------------------------------------- avg_pool2d
    OpSpec("avg_pool2d", avg_pool(2), ((2, 2, 4, 4),), grad_fn=AVG),
    OpSpec("avg_pool2d_stride", avg_pool(3, 1), ((1, 2, 4, 5),), grad_fn=AVG),
    OpSpec("avg_pool2d_padding", avg_pool(3, 2, 1), ((1, 2, 5, 5),), grad_fn=AVG),
    OpSpec("avg_pool2d_exclude_pad", avg_pool((3, 2), 2, 1, count_include_pad=False), ((1, 1, 5, 4),), grad_fn=AVG),
    OpSpec("avg_pool2d_ceil_mode", avg_pool(2, ceil_mode=True), ((1, 2, 5, 5),), grad_fn=AVG),
    OpSpec("avg_pool2d_ceil_mode_padding", avg_pool(3, 2, 1, ceil_mode=True), ((1, 1, 6, 5),), grad_fn=AVG),
    OpSpec("avg_pool2d_ceil_mode_exclude_pad", avg_pool(3, 2, 1, ceil_mode=True, count_include_pad=False),
           ((1, 1, 6, 5),), grad_fn=AVG),
    OpSpec("avg_pool2d_divisor_override", avg_pool(2, 1, 1, divisor_override=3), ((1, 1, 3, 4),), grad_fn=AVG),
    OpSpec("avg_pool2d_unbatched", avg_pool(2, 1), ((2, 3, 4),), grad_fn=AVG),
    # ---------------------------------------------------------------- adaptive_avg_pool2d
    OpSpec("adaptive_avg_pool2d", adaptive(2), ((2, 2, 4, 4),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool2d_uneven", adaptive((3, 2)), ((1, 2, 7, 5),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool2d_larger", adaptive((5, 4)), ((1, 1, 3, 3),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool2d_none", adaptive((None, 2)), ((1, 2, 3, 5),), grad_fn=ADAPTIVE),
    OpSpec("adaptive_avg_pool2d_unbatched", adaptive((2, 3)), ((3, 4, 5),), grad_fn=ADAPTIVE),
    # a (1, 1) output is ``mean`` over the plane, as in PyTorch
    OpSpec("adaptive_avg_pool2d_global", adaptive(1), ((2, 3, 4, 5),), grad_fn="MeanBackward1"),
    OpSpec("adaptive_avg_pool2d_squared", lambda lib, x: nnf(lib).adaptive_avg_pool2d(x * x, 2),
           ((1, 1, 3, 3),), grad_fn=ADAPTIVE),
    # ---------------------------------------------------------------- a small CNN's layers
    OpSpec("max_pool2d_after_conv", lambda lib, x, w: nnf(lib).max_pool2d(nnf(lib).conv2d(x, w, padding=1).tanh(), 2),
           ((1, 1, 4, 4), (2, 1, 3, 3)), grad_fn=MAX),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ ties, NaN, indices
@requires_torch
@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1},
                                {"kernel_size": 2, "stride": 1, "dilation": 2, "ceil_mode": True}],
                         ids=["disjoint", "overlapping", "dilated"])
async def test_ties_pick_torchs_element_and_gradient(kw: dict[str, Any]) -> None:
    x = np.random.default_rng(0).integers(0, 3, (2, 2, 6, 5)).astype(np.float64)
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(a, return_indices=True, **kw)
    tout, tidx = torch.nn.functional.max_pool2d(t, return_indices=True, **kw)
    assert idx.dtype == np.int64 and not idx.requires_grad
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    u = np.random.default_rng(1).standard_normal(out.shape)
    (g,) = await ag.grad(out, [a], ag.tensor(u))
    (tg,) = torch.autograd.grad(tout, [t], torch.tensor(u))
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-12, atol=1e-12)


@requires_torch
def test_nan_wins_as_in_torch() -> None:
    x = np.array([[[[1.0, np.nan, 3.0], [np.nan, 5.0, 2.0], [0.0, 1.0, -np.inf]]]])
    out, idx = F.max_pool2d(ag.tensor(x), 2, 1, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(torch.tensor(x), 2, 1, return_indices=True)
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    np.testing.assert_array_equal(out.data, tout.numpy())


# ================================================================================ errors
ERRORS = [
    # (name, function, input shape, positional arguments, keyword arguments)
    ("max_pad_too_big", "max_pool2d", (2, 4, 5, 5), (2,), {"padding": 2}),
    ("max_output_too_small", "max_pool2d", (2, 4, 5, 5), (7,), {}),
    ("max_zero_stride", "max_pool2d", (2, 4, 5, 5), (2,), {"stride": 0}),
    ("max_zero_dilation", "max_pool2d", (2, 4, 5, 5), (2,), {"dilation": 0}),
    ("max_2d_input", "max_pool2d", (5, 5), (2,), {}),
    ("max_empty_input", "max_pool2d", (2, 0, 5, 5), (2,), {}),
    ("max_kernel_3_ints", "max_pool2d", (2, 4, 5, 5), ((2, 2, 2),), {}),
    ("avg_pad_too_big", "avg_pool2d", (2, 4, 5, 5), (2,), {"padding": 2}),
    ("avg_output_too_small", "avg_pool2d", (2, 4, 5, 5), (7,), {}),
    ("avg_zero_divisor", "avg_pool2d", (2, 4, 5, 5), (2,), {"divisor_override": 0}),
    ("avg_2d_input", "avg_pool2d", (5, 5), (2,), {}),
    ("avg_5d_input", "avg_pool2d", (1, 2, 3, 4, 5), (2,), {}),
    ("avg_empty_plane", "avg_pool2d", (2, 4, 0, 5), (2,), {}),
    ("max_5d_input", "max_pool2d", (1, 2, 3, 4, 5), (2,), {}),
    ("max_empty_unbatched", "max_pool2d", (0, 5, 5), (2,), {}),
    ("adaptive_2d_input", "adaptive_avg_pool2d", (5, 5), (2,), {}),
    ("adaptive_negative", "adaptive_avg_pool2d", (2, 4, 5, 5), (-1,), {}),
    ("adaptive_3_sizes", "adaptive_avg_pool2d", (2, 4, 5, 5), ((2, 3, 4),), {}),
]


@requires_torch
@pytest.mark.parametrize(("name", "fn", "shape", "args", "kw"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name: str, fn: str, shape: Any, args: Any, kw: dict[str, Any]) -> None:
    x = np.random.default_rng(0).standard_normal(shape)
    with pytest.raises(Exception) as expected:
        getattr(torch.nn.functional, fn)(torch.tensor(x), *args, **kw)
    with pytest.raises(expected.type, match=f"^{re.escape(str(expected.value))}$"):
        getattr(F, fn)(ag.tensor(x), *args, **kw)


@requires_torch
@pytest.mark.parametrize("fn", ["max_pool2d", "avg_pool2d"])
async def test_an_empty_batch_pools_to_an_empty_batch(fn: str) -> None:
    x = ag.tensor(np.ones((0, 2, 4, 4)), requires_grad=True)
    out = getattr(F, fn)(x, 2)
    assert out.shape == tuple(getattr(torch.nn.functional, fn)(torch.ones(0, 2, 4, 4), 2).shape)
    (g,) = await ag.grad(out.sum(), [x])
    assert g.shape == x.shape


@requires_torch
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_output_shapes_match_torch_over_a_grid(ceil_mode: bool) -> None:
    x = np.random.default_rng(2).standard_normal((1, 2, 7, 6))
    for k in (1, 2, 3):
        for s in (1, 2, 3):
            for p in range(k // 2 + 1):
                for d in (1, 2):
                    args = (k, s, p, d, ceil_mode)
                    try:
                        expected = torch.nn.functional.max_pool2d(torch.tensor(x), *args)
                    except RuntimeError:
                        with pytest.raises(RuntimeError):
                            F.max_pool2d(ag.tensor(x), *args)
                        continue
                    np.testing.assert_array_equal(F.max_pool2d(ag.tensor(x), *args).data, expected.numpy())
                    if d == 1:
                        avg = torch.nn.functional.avg_pool2d(torch.tensor(x), k, s, p, ceil_mode)
                        np.testing.assert_allclose(F.avg_pool2d(ag.tensor(x), k, s, p, ceil_mode).data,
                                                   avg.numpy(), rtol=1e-12)


# ================================================================================ tiling windows
# Windows that tile the input (kernel == stride, no padding or dilation, sizes a multiple of the
# kernel: ``MaxPool2d(2)``) take a faster path (``_pooling._tile_max``/``_tile_spread``); it
# must give the general path's and torch's numbers: ties, signed zeros, infinities, NaN.
TILES = [(2, (2, 3, 6, 6)), ((2, 3), (2, 2, 4, 9)), (3, (1, 2, 6, 3)), (1, (1, 2, 3, 2)), (2, (3, 4, 2))]


def _tie_heavy(shape: tuple[int, ...], dtype: Any) -> Any:
    """Few distinct values (many ties), both zeros and both infinities among them."""
    rng = np.random.default_rng(8)
    x = rng.integers(-1, 2, shape).astype(dtype)
    flat = x.reshape(-1)
    flat[rng.permutation(flat.size)[: flat.size // 4]] = -0.0
    flat[rng.permutation(flat.size)[:3]] = np.inf
    flat[rng.permutation(flat.size)[:3]] = -np.inf
    return x


@requires_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("kernel", "shape"), TILES, ids=[str(t) for t in TILES])
async def test_tiling_windows_give_torchs_values_indices_and_gradients(kernel: Any, shape: Any, dtype: Any) -> None:
    from aiograd.nn import _pooling

    x = _tie_heavy(shape, dtype)
    assert _pooling._tiles(_pooling._geometry(x, "max_pool2d", kernel, None, 0, 1, False))
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(a, kernel, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(t, kernel, return_indices=True)
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    np.testing.assert_array_equal(np.signbit(out.data), np.signbit(tout.detach().numpy()))
    # upstream gradients finite (a -0.0 among them), then with a NaN and an inf: each lands at
    # its maximum, +0.0 everywhere else
    u = np.random.default_rng(9).standard_normal(out.shape).astype(dtype)
    u.reshape(-1)[0] = -0.0
    for _ in range(2):
        (g,) = await ag.grad(out, [a], ag.tensor(u), retain_graph=True)
        (tg,) = torch.autograd.grad(tout, [t], torch.tensor(u), retain_graph=True)
        assert g.dtype == tg.numpy().dtype
        np.testing.assert_array_equal(g.data, tg.numpy())
        np.testing.assert_array_equal(np.signbit(g.data), np.signbit(tg.numpy()))
        u.reshape(-1)[1:3] = [np.nan, np.inf]


@pytest.mark.parametrize(("kernel", "shape"), TILES, ids=[str(t) for t in TILES])
def test_tiling_windows_agree_with_the_general_path(kernel: Any, shape: Any) -> None:
    import math

    from aiograd.nn import _pooling
    from aiograd.nn._windows import windows

    x = _tie_heavy(shape, np.float64)
    geom = _pooling._geometry(x, "max_pool2d", kernel, None, 0, 1, False)
    best, pick = _pooling._running_max(np, windows(np, x, geom, fill=-math.inf), False)
    tile_best, tile_pick = _pooling._tile_max(np, x, geom)
    np.testing.assert_array_equal(tile_pick, pick)
    assert tile_pick.dtype == pick.dtype
    np.testing.assert_array_equal(tile_best, best)
    np.testing.assert_array_equal(np.signbit(tile_best), np.signbit(best))
    # a gradient with a leading batch dim (a batched backward's), a NaN among it
    g = np.random.default_rng(10).standard_normal((2, *best.shape))
    g.reshape(-1)[0] = -0.0
    for _ in range(2):  # finite, then with a NaN
        tile, general = _pooling._tile_spread(np, g, pick, geom), _pooling._spread(np, g, pick, geom)
        np.testing.assert_array_equal(tile, general)
        np.testing.assert_array_equal(np.signbit(tile), np.signbit(general))
        g.reshape(-1)[1] = np.nan


@requires_torch
async def test_nan_in_tiling_windows_follows_torch() -> None:
    x = np.array([[[[1.0, np.nan, 3.0, 0.0], [np.nan, 5.0, 2.0, 7.0],
                    [0.0, -np.inf, np.nan, np.nan], [-1.0, 1.0, 4.0, 9.0]]]])
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, idx = F.max_pool2d(a, 2, return_indices=True)
    tout, tidx = torch.nn.functional.max_pool2d(t, 2, return_indices=True)
    np.testing.assert_array_equal(idx.data, tidx.numpy())
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    (g,) = await ag.grad(out.sum(), [a])
    (tg,) = torch.autograd.grad(tout.sum(), [t])
    np.testing.assert_array_equal(g.data, tg.numpy())


@requires_torch
async def test_tiling_windows_differentiate_twice_and_batched_as_torch() -> None:
    x = _tie_heavy((2, 2, 4, 6), np.float64)
    x[np.isinf(x)] = 3.0  # (finite: the second derivative multiplies)
    a, t = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = F.max_pool2d(a, 2), torch.nn.functional.max_pool2d(t, 2)
    rng = np.random.default_rng(11)
    u, v = rng.standard_normal(out.shape), rng.standard_normal(x.shape)
    au, tu = ag.tensor(u, requires_grad=True), torch.tensor(u, requires_grad=True)
    (g,) = await ag.grad(out, [a], au, create_graph=True)
    (tg,) = torch.autograd.grad(tout, [t], tu, create_graph=True)
    (gu,) = await ag.grad((g * ag.tensor(v)).sum(), [au])
    (tgu,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), [tu])
    np.testing.assert_array_equal(gu.data, tgu.numpy())
    batch = rng.standard_normal((3, *out.shape))
    (gb,) = await ag.grad(out, [a], ag.tensor(batch), is_grads_batched=True)
    (tgb,) = torch.autograd.grad(tout, [t], torch.tensor(batch), is_grads_batched=True)
    np.testing.assert_array_equal(gb.data, tgb.numpy())
