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
