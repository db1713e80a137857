"""``poisson`` (aiograd/_ops/random_poisson.py): torch's samples for torch's seed (both branches of
its algorithm, float32 and float64, both generators), the generator left where torch's is, its
zero gradient (``PoissonBackward0``) and torch's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.sync

pytestmark = pytest.mark.aiograd(backends=["asyncio"])


def _seeded(lib: Any, x: Any) -> Any:
    lib.manual_seed(3)
    return lib.poisson(x)


POISSON_SPECS = [
    # (reseeded each call: the same sample for x +- eps, so the finite differences are 0 as the rule)
    OpSpec("poisson", _seeded, ((2, 5),), domain=(0.5, 25.0), grad_fn="PoissonBackward0",
           gradgrad=False, why="the derivative is a constant zero (torch's too): nothing to differentiate again"),
]

globals().update(make_op_tests(POISSON_SPECS))

RATES = [
    np.array([0.0, 0.5, 1.0, 3.0, 9.99, 10.0, 12.5, 50.0, 1e3, 1e6]),
    np.random.default_rng(0).uniform(0, 30, (7, 11)),
    np.array([[1.0, 20.0], [5.0, 100.0]]).T,  # (a transposed rate tensor: the output's order)
]


@requires_torch
@pytest.mark.parametrize("seed", [0, 1, 42, 2024, 99999])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_samples_are_torchs_for_its_seed(seed: int, dtype: str) -> None:
    for rates in RATES:
        torch.manual_seed(seed)
        ag.manual_seed(seed)
        theirs = torch.poisson(torch.tensor(rates, dtype=getattr(torch, dtype)))
        ours = ag.poisson(ag.tensor(rates, dtype=getattr(ag, dtype)))
        assert str(ours.dtype) == dtype and tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        # the generator is left where torch's is
        np.testing.assert_array_equal(ag.rand(4, dtype=ag.float64).numpy(), torch.rand(4, dtype=torch.float64).numpy())


@requires_torch
def test_a_generator_gives_torchs_samples() -> None:
    theirs = torch.poisson(torch.full((3, 4), 7.5), generator=torch.Generator().manual_seed(5))
    ours = ag.poisson(ag.full((3, 4), 7.5), generator=ag.Generator().manual_seed(5))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@requires_torch
def test_an_infinite_rate_is_torchs_int64_min() -> None:
    torch.manual_seed(3)
    ag.manual_seed(3)
    np.testing.assert_array_equal(ag.poisson(ag.tensor(float("inf"))).numpy(),
                                  torch.poisson(torch.tensor(float("inf"))).numpy())


def test_gradient_is_zero() -> None:
    x = ag.tensor([1.0, 20.0], requires_grad=True)
    y = ag.poisson(x)
    assert y.grad_fn.name() == "PoissonBackward0"
    (g,) = aiograd.sync.grad([y], [x], [ag.tensor([2.0, -3.0])])
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])


def test_a_numpy_generator_samples_with_numpys_algorithm() -> None:
    out = ag.poisson(ag.full((1000,), 4.0), generator=np.random.default_rng(0))
    assert abs(float(out.mean()) - 4.0) < 0.3


@pytest.mark.parametrize(("make", "exc"), [
    (lambda lib: lib.poisson(lib.tensor([1.0, -1.0])), RuntimeError),
    (lambda lib: lib.poisson(lib.tensor([float("nan")])), RuntimeError),
    (lambda lib: lib.poisson(lib.tensor([1, 2])), NotImplementedError),
    (lambda lib: lib.poisson([1.0]), TypeError),
])
def test_errors_are_torchs(make: Any, exc: type) -> None:
    with pytest.raises(exc) as ours:
        make(ag)
    if torch is not None:
        with pytest.raises(exc) as theirs:
            make(torch)
        assert str(ours.value) == str(theirs.value)
