"""``max_unpool1d/2d/3d`` and ``lp_pool1d/2d/3d`` (aiograd/nn/_unpool.py) and their layers:
values and gradients against torch (indices from ``max_poolNd(return_indices=True)``,
``output_size``), float64 gradchecks and gradgradchecks, and torch's errors word for word."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), requires_torch]  # op math: one loop is enough

RNG = np.random.default_rng(20240608)


def fn_of(lib: Any) -> Any:
    return F if lib is ag else torch.nn.functional


def _t(lib: Any, a: Any) -> Any:
    return lib.tensor(np.asarray(a))


def _raises_as_torch(call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    expected = str(theirs.value).replace("torch.", "aiograd.")
    with pytest.raises(type(theirs.value), match=re.escape(expected)):
        call(ag)


# ------------------------------------------------------------------------------ unpool, lp_pool
UNPOOL_CASES: list[tuple[str, tuple[int, ...], dict[str, Any], dict[str, Any]]] = [
    ("1d", (2, 3, 8), {"kernel_size": 2}, {}),
    ("1d_stride_output_size", (2, 3, 9), {"kernel_size": 3, "stride": 2}, {"output_size": [10]}),
    ("2d", (2, 3, 4, 6), {"kernel_size": 2}, {}),
    ("2d_unbatched_padding", (3, 5, 5), {"kernel_size": 3, "stride": 2, "padding": 1}, {}),
    ("2d_output_size", (1, 2, 5, 5), {"kernel_size": 2}, {"output_size": (1, 2, 5, 5)}),
    ("3d", (1, 2, 4, 4, 6), {"kernel_size": 2}, {}),
    ("3d_stride", (2, 4, 5, 3), {"kernel_size": (2, 3, 1), "stride": (1, 2, 1)}, {}),
]


def _distinct(shape: tuple[int, ...]) -> Any:
    return (RNG.permutation(int(np.prod(shape))) * 0.05 - 1.0).reshape(shape)


@pytest.mark.parametrize("case", UNPOOL_CASES, ids=[c[0] for c in UNPOOL_CASES])
async def test_max_unpool_matches_torch(case: Any) -> None:
    name, shape, pool_kw, extra = case
    nd = name[0]
    x = _distinct(shape)
    pooled, idx = getattr(torch.nn.functional, f"max_pool{nd}d")(torch.tensor(x), return_indices=True, **pool_kw)
    ours_p, ours_idx = getattr(F, f"max_pool{nd}d")(ag.tensor(x), return_indices=True, **pool_kw)
    np.testing.assert_array_equal(ours_idx.detach().numpy(), idx.detach().numpy())
    kw = {**pool_kw, **extra}
    src = ag.tensor(pooled.detach().numpy(), requires_grad=True)
    tsrc = pooled.clone().requires_grad_(True)
    out = getattr(F, f"max_unpool{nd}d")(src, ag.tensor(idx.detach().numpy()), **kw)
    tout = getattr(torch.nn.functional, f"max_unpool{nd}d")(tsrc, idx, **kw)
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    u = RNG.standard_normal(out.shape)
    (g,) = await ag.grad(out, [src], ag.tensor(u))
    (tg,) = torch.autograd.grad(tout, [tsrc], torch.tensor(u))
    np.testing.assert_array_equal(g.detach().numpy(), tg.detach().numpy())
    module = getattr(nn, f"MaxUnpool{nd}d")(pool_kw["kernel_size"], pool_kw.get("stride"), pool_kw.get("padding", 0))
    np.testing.assert_array_equal(module(src, ag.tensor(idx.detach().numpy()), extra.get("output_size")).detach().numpy(), out.detach().numpy())
    flat = idx.numpy().reshape(*idx.shape[: idx.dim() - int(nd)], -1)
    if all(len(np.unique(row)) == row.size for row in flat.reshape(-1, flat.shape[-1])):
        # (a repeated index, from overlapping windows, writes one value: no finite difference then)
        assert await gradgradcheck(lambda s: getattr(F, f"max_unpool{nd}d")(s, ag.tensor(idx.numpy()), **kw) ** 2, [src])


UNPOOL_ERRORS: list[Callable[[Any], Any]] = [
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((1, 1, 2, 2))), _t(lib, np.zeros((1, 1, 2, 2))), 2),
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((1, 1, 2, 2))), _t(lib, np.zeros((1, 1, 2, 3), np.int64)), 2),
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((1, 1, 2, 2))), _t(lib, np.array([[[[0, 1], [2, 16]]]])), 2),
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((1, 1, 2, 2))), _t(lib, np.array([[[[0, 1], [2, -1]]]])), 2),
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((1, 1, 2, 2))), _t(lib, np.zeros((1, 1, 2, 2), np.int64)), 2,
                                        output_size=(9, 9)),
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((1, 1, 2, 2))), _t(lib, np.zeros((1, 1, 2, 2), np.int64)), 2,
                                        output_size=(1, 1, 9)),
    lambda lib: fn_of(lib).max_unpool2d(_t(lib, np.zeros((2, 2))), _t(lib, np.zeros((2, 2), np.int64)), 2),
    lambda lib: fn_of(lib).max_unpool3d(_t(lib, np.zeros((1, 2, 2, 2))), _t(lib, np.full((1, 2, 2, 2), 300)), 2),
    lambda lib: fn_of(lib).max_unpool1d(_t(lib, np.zeros((1, 1, 2))), _t(lib, np.array([[[0, 9]]])), 2),
]


@pytest.mark.parametrize("call", UNPOOL_ERRORS, ids=range(len(UNPOOL_ERRORS)))
def test_unpool_errors_match_torch(call: Callable[[Any], Any]) -> None:
    _raises_as_torch(call)


LP_CASES: list[tuple[str, int, tuple[int, ...], float, dict[str, Any]]] = [
    ("1d_p2", 1, (2, 3, 9), 2, {"kernel_size": 3}),
    ("1d_p1.5_stride_ceil", 1, (2, 3, 9), 1.5, {"kernel_size": 2, "stride": 2, "ceil_mode": True}),
    ("2d_p2", 2, (2, 3, 6, 6), 2, {"kernel_size": 2}),
    ("2d_p3_rect", 2, (3, 6, 7), 3.0, {"kernel_size": (2, 3), "stride": (1, 2)}),
    ("2d_inf", 2, (2, 3, 6, 6), float("inf"), {"kernel_size": 2}),
    ("3d_p2", 3, (1, 2, 4, 4, 4), 2, {"kernel_size": 2}),
]


@pytest.mark.parametrize("case", LP_CASES, ids=[c[0] for c in LP_CASES])
async def test_lp_pool_matches_torch(case: Any) -> None:
    _, nd, shape, p, kw = case
    x = np.abs(_distinct(shape)) + 0.1  # (positive: fractional powers and the gradchecks stay defined)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        ours, theirs = ag.tensor(x.astype(dtype), requires_grad=True), torch.tensor(x.astype(dtype), requires_grad=True)
        out = getattr(F, f"lp_pool{nd}d")(ours, p, **kw)
        tout = getattr(torch.nn.functional, f"lp_pool{nd}d")(theirs, p, **kw)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
        u = RNG.standard_normal(out.shape).astype(dtype)
        (g,) = await ag.grad(out, [ours], ag.tensor(u))
        (tg,) = torch.autograd.grad(tout, [theirs], torch.tensor(u))
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=tol, atol=tol)
    module = getattr(nn, f"LPPool{nd}d")(p, **kw)
    np.testing.assert_allclose(module(ag.tensor(x)).detach().numpy(),
                               getattr(torch.nn, f"LPPool{nd}d")(p, **kw)(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    assert await gradcheck(lambda t: getattr(F, f"lp_pool{nd}d")(t, p, **kw), [ag.tensor(x, requires_grad=True)])


def test_lp_pool_negative_inputs_match_torch() -> None:
    x = _distinct((1, 2, 4, 4))  # a negative window sum of x**3: relu(|a|) * sign(a), as torch's
    out = F.lp_pool2d(ag.tensor(x), 3, 2)
    tout = torch.nn.functional.lp_pool2d(torch.tensor(x), 3, 2)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12, equal_nan=True)
