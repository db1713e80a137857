"""torch.linalg parity at singular, subnormal, non-finite and ill-conditioned matrices: values,
gradients, nodes and errors of inv, solve, det, slogdet, cholesky and eigh against torch's.
Matrices are tiny (1 x 1, 2 x 2) so that the LU's rounding is the same on every CPU."""

from __future__ import annotations

import re

import numpy as np
import pytest

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")

nan, inf = float("nan"), float("inf")


def _run(mod, fn, arrays, grads=None, dtype="float64"):
    """``fn(mod, *leaves)`` and, with ``grads``, the gradients of its outputs at the leaves."""
    dt = getattr(mod, dtype)
    leaves = [mod.tensor(a, dtype=dt, requires_grad=True) for a in arrays]
    out = fn(mod, *leaves)
    outs = list(out) if isinstance(out, tuple) else [out]
    values = [np.asarray(o.detach().numpy()) for o in outs]
    if grads is None:
        return values, None
    grad = torch.autograd.grad if mod is torch else aiograd.sync.grad
    gs = grad(outs, leaves, [mod.tensor(w, dtype=dt) for w in grads], allow_unused=True)
    return values, [np.asarray(g.numpy()) if g is not None else None for g in gs]


def _same(fn, arrays, grads=None, dtype="float64"):
    tv, tg = _run(torch, fn, arrays, grads, dtype)
    av, ag_ = _run(ag, fn, arrays, grads, dtype)
    for t, a in zip(tv, av):
        np.testing.assert_allclose(a, t, rtol=1e-6, atol=0, equal_nan=True)
    for t, a in zip(tg or [], ag_ or []):
        np.testing.assert_allclose(a, t, rtol=1e-5, atol=0, equal_nan=True)


def _same_error(fn, arrays, dtype="float64"):
    try:
        _run(torch, fn, arrays, dtype=dtype)
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        expected = e
    else:
        raise AssertionError("torch raised nothing")
    kind = ag.linalg.LinAlgError if isinstance(expected, torch.linalg.LinAlgError) else type(expected)
    with pytest.raises(kind, match=re.escape(str(expected))):
        _run(ag, fn, arrays, dtype=dtype)


# ------------------------------------------------------------------------------ inv
def test_inv_near_singular_follows_torchs_lu():
    a = np.array([[-0.49, -0.49], [-1.49, -1.49]])
    _same(lambda m, x: m.linalg.inv(x), [a], [np.array([[0.3, -0.2], [0.7, 1.1]])])


def test_inv_raises_where_torchs_lu_meets_a_zero_pivot():
    a = np.array([[1.03, 1.03], [-0.74, -0.74]], dtype=np.float32)
    _same_error(lambda m, x: m.linalg.inv(x), [a], dtype="float32")


# ------------------------------------------------------------------------------ solve
def test_solve_left_false_has_torchs_node_and_gradients():
    a = np.array([[2.0, 0.5], [0.3, 1.5]])
    b = np.array([[1.0, -2.0], [0.5, 0.25], [3.0, 1.0]])
    x = ag.linalg.solve(ag.tensor(a, dtype=ag.float64, requires_grad=True), ag.tensor(b, dtype=ag.float64), left=False)
    assert type(x.grad_fn).__name__ == "LinalgSolveExBackward0"
    _same(lambda m, A, B: m.linalg.solve(A, B, left=False), [a, b], [np.arange(6.0).reshape(3, 2) - 2])


def test_solve_left_false_refuses_a_vector():
    _same_error(lambda m, A, B: m.linalg.solve(A, B, left=False), [np.array([[0.03]]), np.array([-1.68])])


def test_solve_subnormal_matrix_is_nan_like_torch():
    a, b = np.array([[9.99994610111476e-41]], dtype=np.float32), np.array([[-0.0]], dtype=np.float32)
    _same(lambda m, A, B: m.linalg.solve(A, B), [a, b], dtype="float32")


# ------------------------------------------------------------------------------ det, slogdet
@pytest.mark.parametrize("value", [-0.0, -5e-324])
def test_det_gradient_at_a_singular_1x1_is_the_cofactor(value):
    _same(lambda m, x: m.linalg.det(x), [np.array([[value]])], [np.array(0.42)])


def test_det_of_a_matrix_with_inf_is_nan_like_torch():
    a = np.array([[-inf, 0.91], [1.8, 0.0]], dtype=np.float32)
    _same(lambda m, x: m.linalg.det(x), [a], dtype="float32")


def test_slogdet_subnormal_uses_torchs_lu():
    _same(lambda m, x: m.linalg.slogdet(x), [np.array([[-1.55, -1.82], [5e-324, -0.0]])])


def test_slogdet_of_nan_has_sign_zero():
    _same(lambda m, x: m.linalg.slogdet(x), [np.array([[nan]], dtype=np.float32)], dtype="float32")


# ------------------------------------------------------------------------------ cholesky, eigh
def test_cholesky_of_nan_raises_like_torch():
    _same_error(lambda m, x: m.linalg.cholesky(x), [np.array([[[nan]]])])


def test_eigh_non_convergence_is_torchs_linalg_error():
    _same_error(lambda m, x: m.linalg.eigh(x, "U"), [np.full((2, 3, 3), -inf)])
