"""The unary math of ``aiograd/_ops/unary_math.py`` (expm1, log2, log10, rsqrt, reciprocal, the
trigonometric, hyperbolic and rounding functions): one ``OpSpec`` row each through the op
factory (gradcheck, gradgradcheck, values and gradients against torch, float32, grad_fn names),
then the edge values and integer inputs, against torch."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, away_from, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

positive = (0.3, 2.0)
INTEGERS = tuple(float(k) for k in range(-3, 4))
HALVES = tuple(k + 0.5 for k in range(-3, 3))

SPECS = [
    OpSpec("expm1", lambda lib, x: x.expm1(), ((2, 3),), grad_fn="Expm1Backward0"),
    OpSpec("log2", lambda lib, x: lib.log2(x), ((2, 3),), domain=positive, grad_fn="Log2Backward0"),
    OpSpec("log10", lambda lib, x: x.log10(), ((2, 3),), domain=positive, grad_fn="Log10Backward0"),
    OpSpec("rsqrt", lambda lib, x: x.rsqrt(), ((2, 3),), domain=positive, grad_fn="RsqrtBackward0"),
    OpSpec("reciprocal", lambda lib, x: lib.reciprocal(x), away_from(0.0, gap=0.3)([(2, 3)]),
           grad_fn="ReciprocalBackward0"),
    OpSpec("tan", lambda lib, x: x.tan(), ((2, 3),), domain=(-1.2, 1.2), grad_fn="TanBackward0"),
    OpSpec("asin", lambda lib, x: lib.asin(x), ((2, 3),), domain=(-0.9, 0.9), grad_fn="AsinBackward0"),
    OpSpec("acos", lambda lib, x: x.acos(), ((2, 3),), domain=(-0.9, 0.9), grad_fn="AcosBackward0"),
    OpSpec("atan", lambda lib, x: x.atan(), ((2, 3),), domain=(-3, 3), grad_fn="AtanBackward0"),
    OpSpec("sinh", lambda lib, x: lib.sinh(x), ((2, 3),), grad_fn="SinhBackward0"),
    OpSpec("cosh", lambda lib, x: x.cosh(), ((2, 3),), grad_fn="CoshBackward0"),
    OpSpec("floor", lambda lib, x: x.floor() * x, away_from(*INTEGERS)([(2, 3)]), grad_fn=None),
    OpSpec("floor_alone", lambda lib, x: lib.floor(x), away_from(*INTEGERS)([(3,)]), grad_fn="FloorBackward0"),
    OpSpec("ceil", lambda lib, x: x.ceil(), away_from(*INTEGERS)([(2, 3)]), grad_fn="CeilBackward0"),
    OpSpec("round", lambda lib, x: lib.round(x), away_from(*HALVES)([(2, 3)]), grad_fn="RoundBackward0"),
    OpSpec("trunc", lambda lib, x: x.trunc(), away_from(*INTEGERS)([(2, 3)]), grad_fn="TruncBackward0"),
    OpSpec("frac", lambda lib, x: x.frac() * x, away_from(*INTEGERS)([(2, 3)]), grad_fn=None),
    OpSpec("frac_alone", lambda lib, x: lib.frac(x), away_from(*INTEGERS)([(4,)]), grad_fn="FracBackward0"),
]

globals().update(make_op_tests(SPECS))

NAMES = ["expm1", "log2", "log10", "rsqrt", "reciprocal", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "floor", "ceil", "round", "trunc", "frac"]
EDGES = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.5, 0.5, 1.5, np.inf, -np.inf, np.nan, 1e-300, 1e300])


@requires_torch
@pytest.mark.parametrize("name", NAMES)
def test_edge_values_match_torch_quietly(name: str) -> None:
    """Poles, domain edges, infinities and NaN give torch's values, with no numpy warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = getattr(ag, name)(ag.tensor(EDGES)).numpy()
    theirs = getattr(torch, name)(torch.tensor(EDGES)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, equal_nan=True)
    numbers = ~np.isnan(theirs)  # (a NaN's sign bit is not part of torch's contract)
    np.testing.assert_array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))


@requires_torch
@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "reciprocal", "rsqrt", "expm1", "log2"])
def test_integer_inputs_give_torchs_dtype_and_values(name: str) -> None:
    values = np.array([-3, 0, 2, 7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = getattr(ag, name)(ag.tensor(values))
        theirs = getattr(torch, name)(torch.tensor(values))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7, equal_nan=True)
    # aiograd's default float is float64 (torch's float32): integer -> float follows it
    expected: Any = values.dtype if theirs.dtype == torch.int64 else np.float64
    assert ours.dtype == expected


async def test_rounding_gradients_are_zero_and_frac_passes_through() -> None:
    x = ag.tensor([-1.25, 0.5, 2.75], requires_grad=True)
    for fn in (ag.floor, ag.ceil, ag.round, ag.trunc):
        (g,) = await ag.grad(fn(x).sum(), [x])
        np.testing.assert_array_equal(g.numpy(), np.zeros(3))
    (g,) = await ag.grad(ag.frac(x).sum(), [x])
    np.testing.assert_array_equal(g.numpy(), np.ones(3))
