"""``grid_sample``'s second derivatives (aiograd/nn/_grid_sample_graph.py): under
``create_graph=True`` the backward of ``GridSampler2DBackward0`` / ``GridSampler3DBackward0`` is
written with aiograd ops, so the first-order gradients can be differentiated again with respect to
the input, the grid and the incoming gradient, as torch 2.13 does (its node is
``GridSampler2DBackwardBackward0``; aiograd's are its ops' own).

For 4-D and 5-D input, bilinear (trilinear), nearest and (4-D) bicubic, every padding mode and
``align_corners``: a scalar of the first-order gradients (``(g_in ** 2).sum() + (g_grid * c).sum()``)
is differentiated with respect to the input and the grid and compared with torch (float64, to
1e-9; the grid points lie away from cell boundaries, some outside the input, so both libraries are
on the same side of the kinks); small cases pass ``gradgradcheck``; and the first-order gradients
recorded with ``create_graph=True`` equal the array path's.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn.functional as F
from aiograd.testing import gradgradcheck

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]

CASES = [(mode, padding, align) for mode, padding, align in itertools.product(
    ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True])]
SHAPES = {4: ((2, 3, 4, 5), (3, 2)), 5: ((2, 2, 3, 4, 3), (2, 1, 3))}
DIMS_CASES = [(nd, *case) for nd in (4, 5) for case in CASES if not (nd == 5 and case[0] == "bicubic")]


def draw(shape: tuple[int, ...], out: tuple[int, ...], align: bool, seed: int = 0) -> tuple[Any, Any]:
    """An input and a grid whose points lie 0.2..0.8 of a cell away from the sample points
    (and from the rounding point of nearest), some of them outside the input."""
    rng = np.random.default_rng(seed)
    n, _, *spatial = shape
    coords = []
    for size in spatial[::-1]:  # x (W) first
        c = rng.integers(-1, size, size=(n, *out)) + rng.uniform(0.2, 0.8, size=(n, *out))
        coords.append(c / (size - 1) * 2 - 1 if align else (c + 0.5) * 2 / size - 1)
    return rng.standard_normal(shape), np.stack(coords, axis=-1)


async def _grad(out: Any, inputs: list[Any], **kw: Any) -> list[Any]:
    """``ag.grad``'s gradients (none of them None here)."""
    grads = await ag.grad(out, inputs, **kw)
    assert all(t is not None for t in grads)
    return list(grads)


async def _second_order(lib: Any, x: Any, gr: Any, w: Any, c: Any, mode: str, padding: str,
                        align: bool) -> list[Any]:
    """The first-order gradients of ``(y * w).sum() + (y ** 2).sum()`` (create_graph) and the
    gradients of ``(g_in ** 2).sum() + (g_grid * c).sum()`` w.r.t. input and grid, as arrays."""
    a, g = lib.tensor(x, requires_grad=True), lib.tensor(gr, requires_grad=True)
    y = lib.nn.functional.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align)
    loss = (y * lib.tensor(w)).sum() + (y ** 2).sum()
    if lib is ag:
        gi, gg = await _grad(loss, [a, g], create_graph=True)
        second = await _grad((gi ** 2).sum() + (gg * ag.tensor(c)).sum(), [a, g])
        return [t.data for t in (gi, gg, *second)]
    gi, gg = torch.autograd.grad(loss, [a, g], create_graph=True)
    second = torch.autograd.grad((gi ** 2).sum() + (gg * torch.tensor(c)).sum(), [a, g])
    return [t.detach().numpy() for t in (gi, gg, *second)]


@requires_torch
@pytest.mark.parametrize(("nd", "mode", "padding", "align"), DIMS_CASES)
async def test_second_derivatives_match_torch(nd: int, mode: str, padding: str, align: bool) -> None:
    shape, out = SHAPES[nd]
    x, gr = draw(shape, out, align)
    rng = np.random.default_rng(1)
    w, c = rng.standard_normal((shape[0], shape[1], *out)), rng.standard_normal(gr.shape)
    ours = await _second_order(ag, x, gr, w, c, mode, padding, align)
    theirs = await _second_order(torch, x, gr, w, c, mode, padding, align)
    for name, a, t in zip(["grad_input", "grad_grid", "d/d input", "d/d grid"], ours, theirs):
        np.testing.assert_allclose(a, t, rtol=1e-9, atol=1e-12, err_msg=name)


@requires_torch
@pytest.mark.parametrize("nd", [4, 5])
async def test_second_derivative_w_r_t_the_incoming_gradient_matches_torch(nd: int) -> None:
    shape, out = SHAPES[nd]
    x, gr = draw(shape, out, True, seed=3)
    c = np.random.default_rng(4).standard_normal(gr.shape)
    results = []
    for lib in (ag, torch):
        a, g = lib.tensor(x, requires_grad=True), lib.tensor(gr, requires_grad=True)
        v = lib.ones((shape[0], shape[1], *out), dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.grid_sample(a, g, padding_mode="border", align_corners=True)
        if lib is ag:
            gi, gg = await _grad(y, [a, g], grad_outputs=v, create_graph=True)
            (dv,) = await _grad((gi ** 2).sum() + (gg * ag.tensor(c)).sum(), [v])
        else:
            gi, gg = torch.autograd.grad(y, [a, g], grad_outputs=v, create_graph=True)
            (dv,) = torch.autograd.grad((gi ** 2).sum() + (gg * torch.tensor(c)).sum(), [v])
        results.append(np.asarray(dv.data if lib is ag else dv.numpy()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("nd", "mode", "padding", "align"),
                         [(4, "bilinear", "zeros", False), (4, "bilinear", "reflection", True),
                          (4, "nearest", "border", False), (4, "bicubic", "border", True),
                          (4, "bicubic", "zeros", False), (5, "bilinear", "border", True),
                          (5, "bilinear", "reflection", False), (5, "nearest", "zeros", True)])
async def test_gradgradcheck(nd: int, mode: str, padding: str, align: bool) -> None:
    shape = (1, 2, 3, 3) if nd == 4 else (1, 1, 2, 3, 2)
    out = (2, 2) if nd == 4 else (1, 2, 2)
    x, gr = draw(shape, out, align, seed=5)
    inputs = [ag.tensor(x, requires_grad=True), ag.tensor(gr, requires_grad=True)]
    assert await gradgradcheck(lambda a, g: F.grid_sample(a, g, mode, padding, align), inputs)


@pytest.mark.parametrize(("nd", "mode", "padding", "align"), DIMS_CASES)
async def test_first_order_with_create_graph_equals_array_path(nd: int, mode: str, padding: str, align: bool) -> None:
    shape, out = SHAPES[nd]
    x, gr = draw(shape, out, align, seed=7)
    w = np.random.default_rng(8).standard_normal((shape[0], shape[1], *out))
    results = []
    for create_graph in (False, True):
        a, g = ag.tensor(x, requires_grad=True), ag.tensor(gr, requires_grad=True)
        y = F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align)
        gi, gg = await _grad((y * ag.tensor(w)).sum(), [a, g], create_graph=create_graph)
        assert (gi.grad_fn is not None) == create_graph
        results.append((gi.data, gg.data))
    for plain, graph in zip(*results):
        np.testing.assert_allclose(graph, plain, rtol=1e-12, atol=1e-14)


async def test_first_order_with_create_graph_float32() -> None:
    x, gr = draw((1, 2, 4, 5), (3, 2), False, seed=9)
    results = []
    for create_graph in (False, True):
        a = ag.tensor(x.astype(np.float32), requires_grad=True)
        g = ag.tensor(gr.astype(np.float32), requires_grad=True)
        y = F.grid_sample(a, g, mode="bicubic", padding_mode="reflection", align_corners=False)
        gi, gg = await _grad((y ** 2).sum(), [a, g], create_graph=create_graph)
        assert gi.dtype == ag.float32 and gg.dtype == ag.float32
        results.append((gi.data, gg.data))
    for plain, graph in zip(*results):
        np.testing.assert_allclose(graph, plain, rtol=1e-5, atol=1e-6)


async def test_one_input_needing_grad() -> None:
    x, gr = draw((1, 2, 3, 4), (2, 2), True, seed=10)
    a, g = ag.tensor(x), ag.tensor(gr, requires_grad=True)
    y = F.grid_sample(a, g, align_corners=True)
    (gg,) = await _grad((y ** 2).sum(), [g], create_graph=True)
    (d,) = await _grad((gg ** 2).sum(), [g])
    assert d.shape == g.shape
    a, g = ag.tensor(x, requires_grad=True), ag.tensor(gr)
    y = F.grid_sample(a, g, align_corners=True)
    (gi,) = await _grad((y ** 2).sum(), [a], create_graph=True)
    (d,) = await _grad((gi ** 2).sum(), [a])
    assert d.shape == a.shape
