"""``erfinv``, ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma`` (aiograd/_ops/special_gamma.py):
``OpSpec`` rows through the op factory (gradcheck, gradgradcheck, values and gradients against
torch, float32, grad_fn names), then dense value comparisons with torch over wide ranges, the
edges (poles, zeros, infinities, NaN) and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd._ops.special_gamma import digamma, erfinv, lgamma, mvlgamma, polygamma

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

SPECS = [
    OpSpec("erfinv", lambda lib, x: erfinv(x) if lib is ag else x.erfinv(), ((2, 3),), domain=(-0.9, 0.9),
           grad_fn="ErfinvBackward0"),
    OpSpec("lgamma", lambda lib, x: lgamma(x) if lib is ag else x.lgamma(), ((2, 3),), domain=(0.2, 6),
           grad_fn="LgammaBackward0"),
    OpSpec("lgamma_negative", lambda lib, x: lgamma(x - 3.5) if lib is ag else (x - 3.5).lgamma(), ((2, 3),),
           domain=(-0.4, 0.4), grad_fn="LgammaBackward0"),
    OpSpec("digamma", lambda lib, x: digamma(x) if lib is ag else x.digamma(), ((2, 3),), domain=(0.2, 12),
           grad_fn="DigammaBackward0"),
    OpSpec("polygamma", lambda lib, x: polygamma(2, x) if lib is ag else torch.polygamma(2, x), ((2, 3),),
           domain=(0.3, 12), grad_fn="PolygammaBackward0", rtol=1e-6),
    OpSpec("polygamma_1", lambda lib, x: polygamma(1, x) if lib is ag else torch.polygamma(1, x), ((2, 3),),
           domain=(-2.4, -2.1), grad_fn="PolygammaBackward0", rtol=1e-6),
    OpSpec("mvlgamma", lambda lib, x: mvlgamma(x, 3) if lib is ag else torch.mvlgamma(x, 3), ((2, 3),),
           domain=(1.2, 5), grad_fn="MvlgammaBackward0"),
    # the in-place variants (aiograd/_ops/inplace_variants.py), on a copy of the leaf
    OpSpec("erfinv_", lambda lib, x: x.clone().erfinv_(), ((2, 3),), domain=(-0.9, 0.9), grad_fn="ErfinvBackward0"),
    OpSpec("lgamma_", lambda lib, x: x.clone().lgamma_(), ((2, 3),), domain=(0.2, 6), grad_fn="LgammaBackward0"),
    OpSpec("digamma_", lambda lib, x: x.clone().digamma_(), ((2, 3),), domain=(0.2, 12), grad_fn="DigammaBackward0"),
]

globals().update(make_op_tests(SPECS))

RNG = np.random.default_rng(7)
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0, -1.0, -2.0, -3.0, 0.5, -0.5, 1e-320, -1e-320,
                  1e-300, 1e308, -1e308, 1 - 1e-16, -(1 - 1e-16)])
RANGES = {
    "tiny": np.geomspace(1e-310, 1e-3, 2000),
    "(0,2)": RNG.uniform(0, 2, 5000),
    "[2,8)": RNG.uniform(2, 8, 5000),
    "[8,1000)": RNG.uniform(8, 1e3, 5000),
    "large": np.geomspace(1e3, 1e300, 2000),
    "(-10,0)": RNG.uniform(-10, 0, 5000),
    "(-200,-10)": RNG.uniform(-200, -10, 5000),
    "near poles": (-np.arange(1, 20)[:, None] + np.array([1e-12, 1e-8, 1e-4, -1e-12, -1e-8, -1e-4])).ravel(),
    "edges": EDGES,
}


def _close(ours: np.ndarray, theirs: np.ndarray, ulps: float, atol: float = 0.0) -> None:
    same = (ours == theirs) | (np.isnan(ours) & np.isnan(theirs))
    with np.errstate(invalid="ignore"):
        err = np.abs(ours - theirs)
    bound = ulps * np.spacing(np.abs(theirs).astype(theirs.dtype)) + atol
    bad = ~same & ~(err <= bound)
    assert not bad.any(), (ours[bad][:5], theirs[bad][:5])


# (ulps, absolute tolerance: where the function crosses zero, torch's own value is off by the
# rounding of its largest partial sum, ~1e-15; fdlibm's lgamma cancels near its negative zeros)
CASES = {
    "lgamma": (lgamma, lambda t: t.lgamma(), 3, 1e-14),
    "digamma": (digamma, lambda t: t.digamma(), 4, 2e-15),
    "trigamma": (lambda x: polygamma(1, x), lambda t: torch.polygamma(1, t), 2, 0.0),
    "polygamma2": (lambda x: polygamma(2, x), lambda t: torch.polygamma(2, t), 8, 1e-14),
    "polygamma5": (lambda x: polygamma(5, x), lambda t: torch.polygamma(5, t), 16, 0.0),
}


@requires_torch
@pytest.mark.parametrize("region", sorted(RANGES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_matches_torch(name: str, region: str) -> None:
    ours_fn, theirs_fn, ulps, atol = CASES[name]
    x = RANGES[region]
    ours = ours_fn(ag.tensor(x)).numpy()
    theirs = theirs_fn(torch.tensor(x)).numpy()
    assert ours.dtype == np.float64
    _close(ours, theirs, ulps, atol)


@requires_torch
def test_erfinv_float64_within_an_ulp_of_torch() -> None:
    y = np.concatenate([RNG.uniform(-1, 1, 20000), 1 - np.geomspace(1e-16, 0.5, 2000),
                        -1 + np.geomspace(1e-16, 0.5, 2000), np.geomspace(1e-310, 1e-2, 1000), EDGES, [2.0, -2.0]])
    _close(erfinv(ag.tensor(y)).numpy(), torch.erfinv(torch.tensor(y)).numpy(), 1)


@requires_torch
@pytest.mark.parametrize("name", ["erfinv", "lgamma", "digamma", "trigamma"])
def test_float32_matches_torch(name: str) -> None:
    # (torch's float32 trigamma reflects with a float sin(pi x): 1e-6 relative off for x < 1/2)
    low = {"erfinv": -1, "trigamma": 0.5}.get(name, -10)
    x = RNG.uniform(low, 1 if name == "erfinv" else 30, 5000).astype(np.float32)
    fns = {"erfinv": (erfinv, torch.erfinv), "lgamma": (lgamma, torch.lgamma), "digamma": (digamma, torch.digamma),
           "trigamma": (lambda t: polygamma(1, t), lambda t: torch.polygamma(1, t))}
    ours = fns[name][0](ag.tensor(x)).numpy()
    theirs = fns[name][1](torch.tensor(x)).numpy()
    assert ours.dtype == np.float32
    # torch computes float in float (digamma near its root 1.4616 loses ~1e-7 absolute); ours
    # in float64, rounded once
    _close(ours, theirs, 4, 2e-6 if name in ("digamma", "trigamma") else 1e-7)


@requires_torch
def test_integer_and_bool_inputs_give_the_default_dtype() -> None:
    for ours, theirs in [(lgamma(ag.tensor([1, 2, 5])), torch.lgamma(torch.tensor([1, 2, 5]))),
                         (polygamma(2, ag.tensor([1, 3])), torch.polygamma(2, torch.tensor([1, 3]))),
                         (erfinv(ag.tensor([True, False])), torch.erfinv(torch.tensor([True, False])))]:
        assert ours.dtype == ag.get_default_dtype()  # (the suite pins float64; torch's is float32 here)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@requires_torch
def test_methods_and_errors_as_torch() -> None:
    x = ag.tensor([0.5, 1.5])
    np.testing.assert_allclose(ag.Tensor.polygamma(x, 1).numpy(), torch.tensor([0.5, 1.5]).polygamma(1).numpy())
    with pytest.raises(RuntimeError, match="does not support negative n"):
        polygamma(-1, x)
    with pytest.raises(TypeError, match=r"argument 'n' \(position 1\) must be int, not float"):
        polygamma(1.5, x)
    with pytest.raises(TypeError, match="must be Tensor"):
        polygamma(1, [1.0])
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        mvlgamma(ag.tensor([0.5, 2.0]), 0)
    # (torch 2.13 checks no domain: inf at a pole)
    np.testing.assert_allclose(mvlgamma(ag.tensor([0.5, 2.0]), 2).numpy(), torch.mvlgamma(torch.tensor([0.5, 2.0]), 2).numpy())
    with pytest.raises(TypeError, match="must be Tensor"):
        erfinv([0.5])


@requires_torch
async def test_double_backward_of_erfinv_and_polygamma() -> None:
    if True:
        for fn, tfn in [(erfinv, torch.erfinv), (lambda t: polygamma(3, t), lambda t: torch.polygamma(3, t)),
                        (lgamma, torch.lgamma)]:
            x = ag.tensor([0.3, 0.7], requires_grad=True)
            (g,) = await ag.grad(fn(x).sum(), [x], create_graph=True)
            (gg,) = await ag.grad(g.sum(), [x])
            tx = torch.tensor([0.3, 0.7], dtype=torch.float64, requires_grad=True)
            (tg,) = torch.autograd.grad(tfn(tx).sum(), [tx], create_graph=True)
            (tgg,) = torch.autograd.grad(tg.sum(), [tx])
            np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
            np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-10)
