"""``linalg.solve_triangular`` against PyTorch (values, gradients, second derivatives, errors,
inf/NaN at a zero pivot), and QR's backward through it (inf/NaN at a singular ``R``, never a
``LinAlgError``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")


def triangular(*shapes: tuple[int, ...]) -> Any:
    """A well-conditioned square matrix (its diagonal away from 0) and right-hand sides."""

    def draw(rng: np.random.Generator) -> list[np.ndarray]:
        a = rng.uniform(-1, 1, shapes[0])
        n = shapes[0][-1]
        a = a + np.eye(n) * (2 + rng.uniform(0, 1, n))
        return [a, *(rng.uniform(-2, 2, s) for s in shapes[1:])]

    return draw


SPECS = [
    OpSpec("linalg_solve_triangular", lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
           triangular((3, 3), (3, 2)), grad_fn="LinalgSolveTriangularBackward0"),
    OpSpec("linalg_solve_triangular_lower_right", lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False, left=False),
           triangular((2, 3, 3), (2, 4, 3)), op="linalg_solve_triangular"),
    OpSpec("linalg_solve_triangular_unit_broadcast",
           lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
           triangular((3, 3), (2, 3, 2)), op="linalg_solve_triangular"),
    OpSpec("linalg_solve_triangular_broadcast_a", lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True, left=False),
           triangular((2, 1, 3, 3), (4, 2, 3)), op="linalg_solve_triangular"),
]

globals().update(make_op_tests(SPECS))


def _both(a: np.ndarray, b: np.ndarray, dtype: str = "float64", **kw: Any) -> tuple[Any, Any]:
    """Value and both gradients (weights ``w`` = ones) from aiograd and from torch."""
    out = []
    for lib in (ag, torch):
        A = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
        B = lib.tensor(b, dtype=getattr(lib, dtype), requires_grad=True)
        X = lib.linalg.solve_triangular(A, B, **kw)
        w = lib.ones(tuple(X.shape), dtype=getattr(lib, dtype))
        grads = aiograd.sync.grad(X, [A, B], w) if lib is ag else torch.autograd.grad(X, [A, B], w)
        out.append([np.asarray(t.detach().numpy() if lib is torch else t.data) for t in (X, *grads)])
    return out[0], out[1]


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_values_and_gradients_match_torch(upper: bool, left: bool, unit: bool) -> None:
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (2, 5, 5)) + 3 * np.eye(5)
    b = rng.uniform(-2, 2, (3, 1, 5, 4) if left else (3, 1, 4, 5))
    ours, theirs = _both(a, b, upper=upper, left=left, unitriangular=unit)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_only_the_triangle_is_read() -> None:
    """Entries outside the triangle (and the diagonal when unitriangular) are never read: NaN there
    changes nothing."""
    a = np.array([[2.0, 1.0, -1.0], [np.nan, 3.0, 0.5], [np.nan, np.nan, 4.0]])
    b = np.array([[1.0], [2.0], [3.0]])
    ours, theirs = _both(a, b, upper=True)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-12, equal_nan=True)
    a_unit = a.copy()
    np.fill_diagonal(a_unit, np.nan)
    ours, theirs = _both(a_unit, b, upper=True, unitriangular=True)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_zero_pivot_gives_inf_and_nan_as_torch(dtype: str) -> None:
    """A singular triangular matrix: inf and NaN in the value and the gradients, never an error."""
    a = np.array([[0.0, 1.0], [0.0, 2.0]])
    b = np.array([[1.0, 0.0], [2.0, 0.0]])
    ours, theirs = _both(a, b, dtype, upper=True)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=1e-6, equal_nan=True)
    inf_a = np.array([[np.inf, 1.0], [0.0, 1.0]])
    ours, theirs = _both(inf_a, np.ones((2, 2)), dtype, upper=True)
    np.testing.assert_allclose(ours[0], theirs[0], equal_nan=True)


def test_larger_blocked_systems_match_torch() -> None:
    """Systems larger than one substitution block (the blocks' updates are matrix products)."""
    rng = np.random.default_rng(3)
    n = 150
    a = rng.uniform(-1, 1, (n, n)) / np.sqrt(n) + np.diag(rng.uniform(1, 2, n))
    b = rng.uniform(-1, 1, (n, 3))
    for upper in (True, False):
        ours, theirs = _both(a, b, upper=upper)
        for x, y in zip(ours, theirs):
            np.testing.assert_allclose(x, y, rtol=1e-8, atol=1e-10)


def test_second_derivative_is_differentiable_and_matches_torch() -> None:
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)
    b = rng.uniform(-1, 1, (3, 2))
    results = []
    for lib in (ag, torch):
        A = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        B = lib.tensor(b, dtype=lib.float64, requires_grad=True)
        X = lib.linalg.solve_triangular(A, B, upper=False)
        loss = (X * X).sum()
        grad = aiograd.sync.grad if lib is ag else torch.autograd.grad
        (gA,) = grad(loss, [A], create_graph=True)
        second = grad((gA * gA).sum(), [A, B])
        results.append([np.asarray(t.detach().numpy() if lib is torch else t.data) for t in second])
    for x, y in zip(*results):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_b_of_another_dtype_is_converted_to_a_dtype() -> None:
    a = np.triu(np.arange(1.0, 10.0).reshape(3, 3))
    b = np.arange(6.0).reshape(3, 2)
    results = []
    for lib in (ag, torch):
        A = lib.tensor(a, dtype=lib.float32, requires_grad=True)
        B = lib.tensor(b, dtype=lib.float64, requires_grad=True)
        X = lib.linalg.solve_triangular(A, B, upper=True)
        grad = aiograd.sync.grad if lib is ag else torch.autograd.grad
        gA, gB = grad(X.sum(), [A, B])
        results.append((str(X.dtype).split(".")[-1], str(gA.dtype).split(".")[-1], str(gB.dtype).split(".")[-1]))
    assert results[0] == results[1] == ("float32", "float32", "float64")


def _errors(fn: Any) -> tuple[type, str]:
    """The exception torch raises for ``fn(torch)``."""
    with pytest.raises(Exception) as info:
        fn(torch)
    return info.type, str(info.value)


@pytest.mark.parametrize(
    "case",
    [
        lambda lib: lib.linalg.solve_triangular(lib.ones(3), lib.ones(3, 2), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(3, 2), lib.ones(3, 2), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(3, 3), lib.ones(3), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(3, 3), lib.ones(2, 2), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(3, 3), lib.ones(3, 2), upper=True, left=False),
        lambda lib: lib.linalg.solve_triangular(lib.ones(2, 3, 3), lib.ones(3, 3, 2), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(3, 3, dtype=lib.int64), lib.ones(3, 2), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(3, 3) > 0, lib.ones(3, 2), upper=True),
        lambda lib: lib.linalg.solve_triangular([[1.0]], lib.ones(1, 1), upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(1, 1), [[1.0]], upper=True),
        lambda lib: lib.linalg.solve_triangular(lib.ones(1, 1), lib.ones(1, 1), upper=1),
        lambda lib: lib.linalg.solve_triangular(lib.ones(1, 1), lib.ones(1, 1), upper=True, left=None),
    ],
)
def test_errors_match_torch(case: Any) -> None:
    kind, message = _errors(case)
    with pytest.raises(kind) as info:
        case(ag)
    assert str(info.value) == message


# ------------------------------------------------------------------------------ QR's backward
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_qr_backward_at_a_singular_r_gives_nan_not_linalg_error(dtype: str) -> None:
    """The fuzzer's repro: a zero 1 x 1 matrix in a batch; PyTorch's triangular solve gives NaN
    where a general solve raised."""
    v = np.array([[[1e30]], [[-0.85]], [[-0.0]]])
    w0 = np.array([[[1.1]], [[1.93]], [[-1.21]]])
    w1 = np.array([[[1.11]], [[-0.64]], [[-0.69]]])
    results = []
    for lib in (ag, torch):
        dt = getattr(lib, dtype)
        x = lib.tensor(v, dtype=dt, requires_grad=True)
        Q, R = lib.linalg.qr(x, mode="complete")
        grad = aiograd.sync.grad if lib is ag else torch.autograd.grad
        (g,) = grad([Q, R], [x], [lib.tensor(w0, dtype=dt), lib.tensor(w1, dtype=dt)])
        results.append(np.asarray(g.numpy() if lib is torch else g.data))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, equal_nan=True)


def test_qr_backward_with_singular_square_r_matches_torch() -> None:
    """A rank-deficient square matrix whose factorization is unique up to the signs both libraries
    pick alike (a zero last column): the gradient is inf/NaN where PyTorch's is."""
    v = np.array([[3.0, 0.0], [4.0, 0.0]])
    results = []
    for lib in (ag, torch):
        x = lib.tensor(v, dtype=lib.float64, requires_grad=True)
        Q, R = lib.linalg.qr(x)
        grad = aiograd.sync.grad if lib is ag else torch.autograd.grad
        (g,) = grad([Q.sum() + R.sum()], [x])
        results.append(np.asarray(g.numpy() if lib is torch else g.data))
    assert not np.isfinite(results[1]).all()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-9, equal_nan=True)
