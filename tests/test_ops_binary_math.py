"""The binary math of ``aiograd/_ops/binary_math.py`` (atan2, hypot, fmod, remainder, xlogy):
factory rows (gradcheck, gradgradcheck, values and gradients against torch, float32, grad_fn
names; broadcasting, number operands), then edge values, signs of zero and errors against
torch."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def quotients(shape: tuple[int, ...]) -> Any:
    """Operands whose quotient stays away from the integers (where fmod and remainder jump),
    with divisors of both signs away from 0."""

    def draw(rng: np.random.Generator) -> list[np.ndarray]:
        b = rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        q = rng.integers(-3, 3, size=shape) + rng.uniform(0.15, 0.85, size=shape)
        return [q * b, b]

    return draw


def nonzero_pair(rng: np.random.Generator) -> list[np.ndarray]:
    a = rng.uniform(0.3, 2.0, size=(2, 3)) * rng.choice([-1.0, 1.0], size=(2, 3))
    b = rng.uniform(0.3, 2.0, size=(3,)) * rng.choice([-1.0, 1.0], size=(3,))
    return [a, b]


def positive_other(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.uniform(-2.0, 2.0, size=(2, 3)), rng.uniform(0.3, 2.0, size=(2, 3))]


SPECS = [
    OpSpec("atan2", lambda lib, a, b: lib.atan2(a, b), nonzero_pair, grad_fn="Atan2Backward0"),
    OpSpec("atan2_method", lambda lib, a, b: a.atan2(b), ((3,), (2, 3)), op="atan2"),
    OpSpec("hypot", lambda lib, a, b: lib.hypot(a, b), nonzero_pair, grad_fn="HypotBackward0"),
    OpSpec("logaddexp", lambda lib, a, b: lib.logaddexp(a, b), ((2, 3), (2, 3)), domain=(-3.0, 3.0),
           grad_fn="LogaddexpBackward0"),
    OpSpec("logaddexp_method_broadcast", lambda lib, a, b: a.logaddexp(b), ((3,), (2, 3)), op="logaddexp"),
    OpSpec("fmod", lambda lib, a, b: lib.fmod(a, b), quotients((2, 3)), grad_fn="FmodBackward1"),
    OpSpec("fmod_number", lambda lib, a: a.fmod(0.7), ((2, 3),), domain=(0.05, 0.65), grad_fn="FmodBackward0",
           op="fmod"),
    OpSpec("remainder", lambda lib, a, b: lib.remainder(a, b), quotients((2, 3)),
           grad_fn="RemainderBackward1"),
    OpSpec("remainder_number", lambda lib, a: a.remainder(-0.7), ((2, 3),), domain=(0.05, 0.65),
           grad_fn="RemainderBackward0", op="remainder"),
    OpSpec("xlogy", lambda lib, a, b: lib.xlogy(a, b), positive_other, grad_fn="XlogyBackward0"),
    OpSpec("xlogy_number_other", lambda lib, a: a.xlogy(2.5), ((2, 3),), grad_fn="XlogyBackward2", op="xlogy"),
    OpSpec("xlogy_number_input", lambda lib, b: lib.xlogy(1.5, b), ((2, 3),), domain=(0.3, 2.0),
           grad_fn="XlogyBackward1", op="xlogy"),
]

globals().update(make_op_tests(SPECS))

A = np.array([0.0, -0.0, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 1.0, 0.0, 7.0])
B = np.array([1.0, -1.0, -2.0, 2.0, 0.0, -0.0, 2.0, 1.0, 1.0, np.nan, 0.0, np.inf])


@requires_torch
@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "fmod", "remainder", "xlogy"])
def test_edge_values_and_signs_match_torch_quietly(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = getattr(ag, name)(ag.tensor(A), ag.tensor(B)).numpy()
    theirs = getattr(torch, name)(torch.tensor(A), torch.tensor(B)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, equal_nan=True)
    numbers = ~np.isnan(theirs)
    np.testing.assert_array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))


@requires_torch
@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp"])
def test_tensor_only_ops_refuse_a_number_as_torch(name: str) -> None:
    with pytest.raises(TypeError) as theirs:
        getattr(torch, name)(torch.ones(2), 2.0)
    with pytest.raises(TypeError, match=str(theirs.value).replace("(", r"\(").replace(")", r"\)")):
        getattr(ag, name)(ag.ones(2), 2.0)


@requires_torch
async def test_xlogy_gradient_at_zero_input_matches_torch() -> None:
    a, b = np.array([0.0, 0.0, 2.0]), np.array([0.0, -1.0, 3.0])
    x, y = ag.tensor(a, requires_grad=True), ag.tensor(b, requires_grad=True)
    gx, gy = await ag.grad(ag.xlogy(x, y).sum(), [x, y])
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ex, ey = torch.autograd.grad(torch.xlogy(tx, ty).sum(), [tx, ty])
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), equal_nan=True)
    np.testing.assert_allclose(gy.numpy(), ey.numpy(), equal_nan=True)


@requires_torch
def test_logaddexp_refuses_integers_as_torch() -> None:
    with pytest.raises(NotImplementedError) as theirs:
        torch.logaddexp(torch.tensor([1]), torch.tensor([2]))
    with pytest.raises(NotImplementedError, match=f"^{str(theirs.value)}$"):
        ag.logaddexp(ag.tensor([1]), ag.tensor([2]))


@requires_torch
async def test_logaddexp_gradient_at_infinities_matches_torch() -> None:
    """Where both operands are the same infinity PyTorch's formula gives NaN; one infinity
    takes the whole gradient."""
    a, b = np.array([-np.inf, np.inf, np.inf, 2.0]), np.array([-np.inf, np.inf, 1.0, -np.inf])
    x, y = ag.tensor(a, requires_grad=True), ag.tensor(b, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (quietly, as torch)
        gx, gy = await ag.grad(ag.logaddexp(x, y), [x, y], ag.ones(4))
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ex, ey = torch.autograd.grad(torch.logaddexp(tx, ty), [tx, ty], torch.ones(4, dtype=torch.float64))
    np.testing.assert_array_equal(gx.numpy(), ex.numpy())
    np.testing.assert_array_equal(gy.numpy(), ey.numpy())
