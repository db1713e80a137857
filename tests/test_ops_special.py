"""``erf`` and ``erfc`` (aiograd/_ops/special.py): one ``OpSpec`` row each through the op factory
(gradcheck, gradgradcheck, values and gradients against torch, float32, grad_fn names), then the
accuracy of the vectorised fdlibm forward against the C library's ``math.erf``/``math.erfc``
(and scipy's, where installed) over the whole range, in ulps, and against torch at the edges."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd._ops.special import erf, erfc

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

try:
    import scipy.special as scipy_special
except ImportError:  # pragma: no cover - scipy is optional
    scipy_special = None

SPECS = [
    OpSpec("erf", lambda lib, x: x.erf(), ((2, 3),), domain=(-3, 3), grad_fn="ErfBackward0"),
    OpSpec("erfc", lambda lib, x: x.erfc(), ((2, 3),), domain=(-3, 3), grad_fn="ErfcBackward0"),
]

globals().update(make_op_tests(SPECS))

# Every region of fdlibm's approximation, its boundaries, the tails down to underflow, and
# subnormal inputs.
POINTS = np.concatenate([
    np.linspace(-30.0, 30.0, 60001),
    np.geomspace(1e-320, 30.0, 4000),
    -np.geomspace(1e-320, 30.0, 4000),
    [0.84375, 1.25, 1 / 0.35, 6.0, 28.0, 2.0**-28, 2.0**-56],
])


def _ulps(actual: np.ndarray, expected: np.ndarray) -> float:
    diff = np.abs(actual - expected) / np.spacing(np.abs(expected))
    diff[actual == expected] = 0.0
    return float(diff.max())


@pytest.mark.parametrize(("fn", "reference"), [(erf, math.erf), (erfc, math.erfc)], ids=["erf", "erfc"])
def test_float64_within_a_few_ulps_of_libm(fn: object, reference: object) -> None:
    ours = fn(ag.tensor(POINTS)).numpy()  # type: ignore[operator]
    expected = np.array([reference(v) for v in POINTS])  # type: ignore[operator]
    # fdlibm: erf within 1 ulp; erfc within 4 (numpy's exp in the tail), relative error even
    # where erfc is ~1e-300 (not 1 - erf, which would be 0 there)
    assert _ulps(ours, expected) <= 4.0
    if scipy_special is not None:
        # (cephes' erfc is itself off by ~1e-13 relative deep in the tail: a relative bound)
        theirs = getattr(scipy_special, fn.__name__)(POINTS)  # type: ignore[attr-defined]
        np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-300)


def test_erfc_keeps_relative_accuracy_in_the_tail() -> None:
    x = np.array([5.0, 10.0, 20.0, 26.0])
    np.testing.assert_allclose(erfc(ag.tensor(x)).numpy(), [math.erfc(v) for v in x], rtol=1e-15)
    assert erfc(ag.tensor([27.0])).numpy()[0] > 0.0


@requires_torch
@pytest.mark.parametrize("name", ["erf", "erfc"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
async def test_edges_values_and_gradients_match_torch(name: str, dtype: type) -> None:
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 1e-45, -1.0, 0.5, 3.0, -6.5, 27.0, 40.0], dtype=dtype)
    x, tx = ag.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning escapes
        out = getattr(x, name)()
        (g,) = await ag.grad(out.sum(), [x])
    tout = getattr(tx, name)()
    (tg,) = torch.autograd.grad(tout.sum(), [tx])
    assert out.dtype == dtype
    rtol = 1e-15 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=rtol, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(out.detach().numpy()), np.signbit(tout.detach().numpy()))
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=rtol, equal_nan=True)


@requires_torch
def test_integer_input_gives_the_default_float() -> None:
    ours = ag.tensor([-2, 0, 1]).erf()
    theirs = torch.tensor([-2, 0, 1]).erf()
    assert ours.dtype == np.float64  # aiograd's default float (torch's is float32)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7)


# float32 (and float16) erf: one rational evaluated in float64, in chunks (aiograd/_ops/special.py).
def _float32_grid() -> np.ndarray:
    """Positive float32 values by their bit patterns: every 1021st float32 from 0 to 4.5 (so
    every exponent, subnormals included), every 7th around the clamp (3.9 to 4.1, where erf
    rounds to 1), and the edges."""
    top = int(np.array(4.5, np.float32).view(np.int32))
    spread = np.arange(0, top, 1021, dtype=np.int32).view(np.float32)
    lo, hi = (int(np.array(v, np.float32).view(np.int32)) for v in (3.9, 4.1))
    clamp = np.arange(lo, hi, 7, dtype=np.int32).view(np.float32)
    edges = np.array([1e-45, 1.1754942e-38, 1.1754944e-38, 2.0**-28, 0.84375, 1.25, 1 / 0.35, 3.92, 4.0,
                      np.nextafter(np.float32(4.0), np.float32(0.0)), 6.0, 28.0], np.float32)
    return np.concatenate([spread, clamp, edges])


def _float32_ulps(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|actual - exact| in ulps of float32 at the exact value (given in float64)."""
    step = np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64)
    return np.abs(actual.astype(np.float64) - exact) / step


@requires_torch
def test_float32_erf_is_within_its_documented_bound_and_torchs_of_libm() -> None:
    """Rounded once from float64, the rational is within 0.55 ulp of ``math.erf`` (0.5415 at
    worst over every 211th float32): closer than torch's own float32 erf (Sleef's, 0.77)."""
    positive = _float32_grid()
    exact_positive = np.array([math.erf(v) for v in positive.astype(np.float64)])
    x, exact = np.concatenate([positive, -positive]), np.concatenate([exact_positive, -exact_positive])
    ours = erf(ag.tensor(x)).numpy()
    assert ours.dtype == np.float32
    theirs = torch.erf(torch.from_numpy(x)).numpy()
    ours_ulps, their_ulps = _float32_ulps(ours, exact), _float32_ulps(theirs, exact)
    assert ours_ulps.max() <= 0.55
    assert ours_ulps.max() <= their_ulps.max()
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(x))  # odd, zeros' signs kept


@requires_torch
def test_float32_erf_non_finite_and_saturated_values_match_torch() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.92, 4.0, 30.0, -1e30, 3e38], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning escapes
        ours = erf(ag.tensor(x)).numpy()
    theirs = torch.erf(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_float32_erf_does_not_depend_on_chunks_or_layout() -> None:
    """A tensor longer than a chunk, and a transposed view, give each element what it gives
    alone."""
    from aiograd._ops.special import _CHUNK

    x = np.random.default_rng(5).uniform(-5, 5, (3, _CHUNK + 7)).astype(np.float32)
    whole = erf(ag.tensor(x)).numpy()
    alone = np.array([erf(ag.tensor(x[:, i])).numpy() for i in range(0, x.shape[1], 997)]).T
    np.testing.assert_array_equal(whole[:, ::997], alone)
    np.testing.assert_array_equal(erf(ag.tensor(x).T).numpy(), whole.T)


def test_float16_erf_is_within_one_ulp_of_libm() -> None:
    x = np.linspace(-5, 5, 4001).astype(np.float16)
    ours = erf(ag.tensor(x)).numpy()
    assert ours.dtype == np.float16
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    step = np.spacing(np.abs(exact.astype(np.float16))).astype(np.float64)
    assert (np.abs(ours.astype(np.float64) - exact) / step).max() <= 0.5 + 1e-3
