"""``aiograd.linalg`` against ``torch.linalg``: factory rows for every decomposition (gradcheck,
gradgradcheck, values, first and second derivatives against torch, float32, grad_fn names) on
well-conditioned inputs, with batch dims; eigenvectors and singular vectors only through
gauge-invariant functions (as PyTorch's own tests); the norms; the degenerate cases (det of
singular matrices, repeated eigenvalues and singular values, QR modes without a derivative);
and PyTorch's errors, type and message."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag


def well_conditioned(*shapes: tuple[int, ...]) -> Callable[[np.random.Generator], list[np.ndarray]]:
    """Square matrices ``X + 3 I`` (far from singular); other shapes drawn as they are."""

    def draw(rng: np.random.Generator) -> list[np.ndarray]:
        out = []
        for s in shapes:
            x = rng.uniform(-1, 1, size=s)
            if len(s) >= 2 and s[-1] == s[-2]:
                x = x + 3 * np.eye(s[-1])
            out.append(x)
        return out

    return draw


def spd(lib: Any, x: Any) -> Any:
    """A symmetric positive-definite matrix made from ``x`` (differentiable in ``x``)."""
    n = x.shape[-1]
    return x @ x.mT + n * (lib.eye(n, dtype=x.dtype))


def sym(x: Any) -> Any:
    return x + x.mT


def weights(lib: Any, like: Any) -> Any:
    """Fixed distinct weights, so that a sum over a factor sees every entry differently."""
    w = np.linspace(0.5, 1.5, int(np.prod(like.shape))).reshape(like.shape)
    return lib.tensor(w, dtype=like.dtype)


SPECS = [
    # ---------------------------------------------------------------- inv, solve
    OpSpec("linalg_inv", lambda lib, a: lib.linalg.inv(a), well_conditioned((3, 3)), grad_fn="LinalgInvExBackward0"),
    OpSpec("linalg_inv_batched", lambda lib, a: lib.linalg.inv(a), well_conditioned((2, 3, 3)), op="linalg_inv"),
    OpSpec("linalg_pinv", lambda lib, a: lib.linalg.pinv(a), well_conditioned((3, 3)), grad_fn="LinalgPinvBackward0"),
    OpSpec("linalg_pinv_wide", lambda lib, a: lib.linalg.pinv(a), well_conditioned((2, 4)), op="linalg_pinv"),
    OpSpec("linalg_pinv_tall_batched", lambda lib, a: lib.linalg.pinv(a), well_conditioned((2, 4, 3)), op="linalg_pinv"),
    OpSpec("linalg_pinv_hermitian", lambda lib, a: lib.linalg.pinv(sym(a), hermitian=True), well_conditioned((3, 3)),
           op="linalg_pinv"),
    OpSpec("linalg_solve", lambda lib, a, b: lib.linalg.solve(a, b), well_conditioned((3, 3), (3, 2)),
           grad_fn="LinalgSolveExBackward0"),
    OpSpec("linalg_solve_vector", lambda lib, a, b: lib.linalg.solve(a, b), well_conditioned((3, 3), (3,))),
    OpSpec("linalg_solve_batched_vector", lambda lib, a, b: lib.linalg.solve(a, b), well_conditioned((2, 3, 3), (2, 3))),
    OpSpec("linalg_solve_broadcast_a", lambda lib, a, b: lib.linalg.solve(a, b), well_conditioned((3, 3), (2, 3, 2))),
    OpSpec("linalg_solve_broadcast_b", lambda lib, a, b: lib.linalg.solve(a, b), well_conditioned((2, 1, 3, 3), (2, 3, 1))),
    OpSpec("linalg_solve_left_false", lambda lib, a, b: lib.linalg.solve(a, b, left=False),
           well_conditioned((3, 3), (2, 3)), op="linalg_solve"),
    # ---------------------------------------------------------------- det, slogdet
    OpSpec("linalg_det", lambda lib, a: lib.linalg.det(a), ((3, 3),), grad_fn="LinalgDetBackward0"),
    OpSpec("linalg_det_batched", lambda lib, a: lib.linalg.det(a), ((2, 2, 4, 4),)),
    OpSpec("linalg_det_1x1", lambda lib, a: lib.linalg.det(a), ((2, 1, 1),)),
    OpSpec("linalg_slogdet", lambda lib, a: lib.linalg.slogdet(a).logabsdet, well_conditioned((3, 3)),
           grad_fn="LinalgSlogdetBackward0"),
    OpSpec("linalg_slogdet_signed", lambda lib, a: lib.linalg.slogdet(a)[0] * lib.linalg.slogdet(a)[1], ((2, 3, 3),)),
    # ---------------------------------------------------------------- cholesky
    OpSpec("linalg_cholesky", lambda lib, x: lib.linalg.cholesky(spd(lib, x)), ((3, 3),),
           grad_fn="LinalgCholeskyExBackward0"),
    OpSpec("linalg_cholesky_upper", lambda lib, x: lib.linalg.cholesky(spd(lib, x), upper=True), ((2, 3, 3),)),
    # ---------------------------------------------------------------- qr
    OpSpec("linalg_qr_q_tall", lambda lib, a: lib.linalg.qr(a).Q, ((4, 3),), grad_fn="LinalgQrBackward0"),
    OpSpec("linalg_qr_r_tall", lambda lib, a: lib.linalg.qr(a).R, ((4, 3),), grad_fn="LinalgQrBackward0"),
    OpSpec("linalg_qr_both_square", lambda lib, a: lib.linalg.qr(a)[0] @ weights(lib, a) + lib.linalg.qr(a)[1],
           ((2, 3, 3),)),
    OpSpec("linalg_qr_q_wide", lambda lib, a: lib.linalg.qr(a).Q, ((3, 5),)),
    OpSpec("linalg_qr_r_wide", lambda lib, a: lib.linalg.qr(a).R, ((2, 3, 5),)),
    OpSpec("linalg_qr_complete_wide", lambda lib, a: lib.linalg.qr(a, mode="complete").Q.sum() + lib.linalg.qr(a, "complete").R,
           ((3, 4),)),
    # ---------------------------------------------------------------- eigh (gauge-invariant functions)
    OpSpec("linalg_eigh_values", lambda lib, x: lib.linalg.eigh(sym(x)).eigenvalues, ((4, 4),),
           grad_fn="LinalgEighBackward0"),
    OpSpec("linalg_eigh_vectors_squared", lambda lib, x: lib.linalg.eigh(sym(x)).eigenvectors ** 2, ((2, 3, 3),)),
    OpSpec("linalg_eigh_both", lambda lib, x: (lambda r: r[1] * r[1] * r[0].unsqueeze(-2))(lib.linalg.eigh(sym(x))),
           ((3, 3),)),
    OpSpec("linalg_eigh_upper", lambda lib, x: lib.linalg.eigh(sym(x), UPLO="U").eigenvectors ** 2, ((3, 3),)),
    OpSpec("linalg_eigh_projector", lambda lib, x: (lambda v: v[..., :1] @ v[..., :1].mT)(lib.linalg.eigh(sym(x))[1]),
           ((3, 3),)),
    # ---------------------------------------------------------------- svd (gauge-invariant functions)
    OpSpec("linalg_svd_values", lambda lib, a: lib.linalg.svd(a, full_matrices=False).S, ((4, 3),),
           grad_fn="LinalgSvdBackward0"),
    OpSpec("linalg_svd_values_wide_batched", lambda lib, a: lib.linalg.svd(a).S, ((2, 3, 5),)),
    OpSpec("linalg_svd_u_squared_tall", lambda lib, a: lib.linalg.svd(a, full_matrices=False).U ** 2, ((4, 3),)),
    OpSpec("linalg_svd_vh_squared_wide", lambda lib, a: lib.linalg.svd(a, full_matrices=False).Vh ** 2, ((3, 5),)),
    OpSpec("linalg_svd_u_vh_square", lambda lib, a: (lambda r: r.U @ r.Vh)(lib.linalg.svd(a)), ((2, 3, 3),)),
    OpSpec("linalg_svd_all_tall", lambda lib, a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh + r.U @ r.Vh)(
        lib.linalg.svd(a, full_matrices=False)), ((4, 3),)),
    OpSpec("linalg_svd_all_wide", lambda lib, a: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh + r.U @ r.Vh)(
        lib.linalg.svd(a, full_matrices=False)), ((2, 4),)),
    OpSpec("linalg_svd_full_matrices_leading", lambda lib, a: (lambda r: r.U[..., :3] ** 2 + r.S.sum())(
        lib.linalg.svd(a, full_matrices=True)), ((4, 3),)),
]

#: The norms: composites of the ops above (and of the vector norm), as PyTorch's.
NORM_SPECS = [
    OpSpec(f"linalg_norm_{name}", fn, shapes, op=None)
    for name, fn, shapes in [
        ("default", lambda lib, a: lib.linalg.norm(a), ((2, 3, 4),)),
        ("vector_ord3", lambda lib, a: lib.linalg.norm(a, 3), ((5,),)),
        ("vector_dim", lambda lib, a: lib.linalg.norm(a, 1.5, dim=1, keepdim=True), ((2, 3),)),
        ("fro", lambda lib, a: lib.linalg.norm(a, "fro"), ((2, 3),)),
        ("nuc", lambda lib, a: lib.linalg.norm(a, "nuc"), ((3, 4),)),
        ("spectral", lambda lib, a: lib.linalg.norm(a, 2), ((3, 4),)),
        ("spectral_min", lambda lib, a: lib.linalg.norm(a, -2), ((4, 3),)),
        ("one", lambda lib, a: lib.linalg.norm(a, 1), ((3, 4),)),
        ("inf", lambda lib, a: lib.linalg.norm(a, float("inf")), ((3, 4),)),
        ("matrix_dims", lambda lib, a: lib.linalg.norm(a, "nuc", dim=(0, 2), keepdim=True), ((3, 2, 4),)),
        ("matrix_norm_batched", lambda lib, a: lib.linalg.matrix_norm(a, -1), ((2, 3, 4),)),
        ("matrix_norm_ninf_dims", lambda lib, a: lib.linalg.matrix_norm(a, float("-inf"), dim=(2, 0)), ((3, 2, 4),)),
        ("vector_norm_neg", lambda lib, a: lib.linalg.vector_norm(a, -1.5, dim=(0, 1)), ((2, 3, 2),)),
        ("vector_norm_ninf", lambda lib, a: lib.linalg.vector_norm(a, float("-inf"), dim=-1), ((2, 3),)),
        ("vector_norm_inf", lambda lib, a: lib.linalg.vector_norm(a, float("inf")), ((2, 3),)),
        ("svdvals", lambda lib, a: lib.linalg.svdvals(a), ((2, 3, 4),)),
    ]
]

globals().update(make_op_tests(SPECS + NORM_SPECS))


@requires_torch
def test_vector_norm_ord_zero_counts_nonzeros() -> None:
    x = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])
    ours = ag.linalg.vector_norm(ag.tensor(x, requires_grad=True), 0, dim=1)
    theirs = torch.linalg.vector_norm(torch.tensor(x, requires_grad=True), 0, dim=1)
    np.testing.assert_array_equal(ours.data, theirs.detach().numpy())


def test_return_types_are_named_like_torchs() -> None:
    a = ag.tensor(np.eye(3) * 2.0)
    assert ag.linalg.slogdet(a)._fields == ("sign", "logabsdet")
    assert ag.linalg.qr(a)._fields == ("Q", "R")
    assert ag.linalg.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert ag.linalg.svd(a)._fields == ("U", "S", "Vh")
    if torch is not None:
        t = torch.eye(3) * 2.0
        for fn in ("slogdet", "qr", "eigh", "svd"):
            ours, theirs = getattr(ag.linalg, fn)(a), getattr(torch.linalg, fn)(t)
            assert len(ours) == len(theirs)
            for name, value in zip(ours._fields, theirs):
                assert getattr(theirs, name) is value


@requires_torch
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_qr_values_and_shapes(mode: str, shape: tuple[int, ...]) -> None:
    x = np.random.default_rng(5).standard_normal(shape)
    (q, r), (tq, tr) = ag.linalg.qr(ag.tensor(x), mode), torch.linalg.qr(torch.tensor(x), mode)
    assert q.shape == tuple(tq.shape) and r.shape == tuple(tr.shape)
    np.testing.assert_allclose(q.data, tq.numpy(), atol=1e-12)
    np.testing.assert_allclose(r.data, tr.numpy(), atol=1e-12)


# ================================================================================ degenerate cases
def _grad(out: Any, xs: list[Any], **kwargs: Any) -> Any:
    return ag.sync.grad(out, xs, **kwargs)


SINGULAR = [
    ("rank_1", np.array([[1.0, 2.0], [2.0, 4.0]])),
    ("zero_row", np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [4.0, 5.0, 6.0]])),
    ("rank_1_3x3", np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 2.0])),
    ("batch_mixed", np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[2.0, 1.0], [0.5, 3.0]])])),
]


@requires_torch
@pytest.mark.parametrize(("name", "a"), SINGULAR, ids=[n for n, _ in SINGULAR])
def test_det_gradient_at_singular_matrices(name: str, a: np.ndarray) -> None:
    """First order: PyTorch's LU formula (0 where det is exactly 0); recorded: the SVD formula
    (the adjugate), whose own derivative is PyTorch's too."""
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = _grad(ag.linalg.det(x).sum(), [x])
    (tg,) = torch.autograd.grad(torch.linalg.det(t).sum(), t)
    np.testing.assert_allclose(g.data, tg.numpy(), atol=1e-12)

    (g,) = _grad(ag.linalg.det(x).sum(), [x], create_graph=True)
    (tg,) = torch.autograd.grad(torch.linalg.det(t).sum(), t, create_graph=True)
    np.testing.assert_allclose(g.data, tg.detach().numpy(), atol=1e-12)
    w = np.random.default_rng(3).standard_normal(a.shape)
    (gg,) = _grad((g * ag.tensor(w)).sum(), [x])
    (tgg,) = torch.autograd.grad((tg * torch.tensor(w)).sum(), t)
    np.testing.assert_allclose(gg.data, tgg.numpy(), atol=1e-10)


@requires_torch
def test_eigh_repeated_eigenvalues() -> None:
    """The eigenvalues' gradient is defined; the eigenvectors' divides by the zero gap and is
    NaN, as PyTorch's."""
    a = np.diag([1.0, 1.0, 2.0])
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = _grad(ag.linalg.eigh(x).eigenvalues.sum(), [x])
    (tg,) = torch.autograd.grad(torch.linalg.eigh(t).eigenvalues.sum(), t)
    np.testing.assert_allclose(g.data, tg.numpy(), atol=1e-12)

    lv, tlv = ag.linalg.eigh(x), torch.linalg.eigh(t)
    (g,) = _grad((lv.eigenvectors ** 2).sum() + lv.eigenvalues.sum(), [x])
    (tg,) = torch.autograd.grad((tlv.eigenvectors ** 2).sum() + tlv.eigenvalues.sum(), t)
    np.testing.assert_array_equal(np.isnan(g.data), np.isnan(tg.numpy()))
    assert np.isnan(g.data).any()


@requires_torch
def test_svd_repeated_singular_values() -> None:
    a = np.eye(3)
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = _grad(ag.linalg.svd(x).S.sum(), [x])
    (tg,) = torch.autograd.grad(torch.linalg.svd(t).S.sum(), t)
    np.testing.assert_allclose(g.data, tg.numpy(), atol=1e-12)

    (g,) = _grad((ag.linalg.svd(x).U ** 2).sum(), [x])
    (tg,) = torch.autograd.grad((torch.linalg.svd(t).U ** 2).sum(), t)
    np.testing.assert_array_equal(np.isnan(g.data), np.isnan(tg.numpy()))
    np.testing.assert_array_equal(np.isinf(g.data), np.isinf(tg.numpy()))


@requires_torch
def test_slogdet_of_a_singular_matrix_recorded_raises_the_solvers_error() -> None:
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    s, ls = ag.linalg.slogdet(x)
    ts, tls = torch.linalg.slogdet(t)
    assert (s.item(), ls.item()) == (ts.item(), tls.item())
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        torch.autograd.grad(tls, t, create_graph=True)
    with pytest.raises(ag.linalg.LinAlgError) as ours:
        _grad(ls, [x], create_graph=True)
    assert str(ours.value) == str(theirs.value)


SLOGDET_SINGULAR = [
    ("rank_1", np.array([[1.0, 2.0], [2.0, 4.0]])),
    ("zero", np.zeros((2, 2))),
    ("rank_2_3x3", np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])),
    ("zero_column", np.array([[0.0, 1.0], [0.0, 1.0]])),
    ("batch_mixed", np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 4.0]])])),
]


@requires_torch
@pytest.mark.parametrize(("name", "a"), SLOGDET_SINGULAR, ids=[n for n, _ in SLOGDET_SINGULAR])
def test_slogdet_gradient_at_singular_matrices(name: str, a: np.ndarray) -> None:
    """First order, PyTorch's LU solve divides by the zero pivot: the same infs and NaNs."""
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = _grad(ag.linalg.slogdet(x).logabsdet.sum(), [x])
    (tg,) = torch.autograd.grad(torch.linalg.slogdet(t).logabsdet.sum(), t)
    ours, theirs = g.data, tg.numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(theirs))
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-12)


QR_BACKWARD_ERRORS = [("complete_tall", "complete", (3, 2)), ("r_only", "r", (3, 3))]


@requires_torch
@pytest.mark.parametrize(("name", "mode", "shape"), QR_BACKWARD_ERRORS, ids=[e[0] for e in QR_BACKWARD_ERRORS])
def test_qr_backward_refusals_are_torchs(name: str, mode: str, shape: tuple[int, int]) -> None:
    a = np.random.default_rng(1).standard_normal(shape)
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.autograd.grad(torch.linalg.qr(t, mode).R.sum(), t)
    with pytest.raises(RuntimeError) as ours:
        _grad(ag.linalg.qr(x, mode).R.sum(), [x])
    assert str(ours.value) == str(theirs.value)


# ================================================================================ errors
def _z(lib: Any, *shape: int) -> Any:
    return lib.zeros(*shape, dtype=lib.float64)


def _m(lib: Any, rows: list[list[float]]) -> Any:
    return lib.tensor(rows, dtype=lib.float64)


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("inv_not_square", lambda lib: lib.linalg.inv(_z(lib, 2, 3))),
    ("inv_1d", lambda lib: lib.linalg.inv(_z(lib, 3))),
    ("inv_int", lambda lib: lib.linalg.inv(lib.tensor([[1, 2], [3, 4]]))),
    ("inv_singular", lambda lib: lib.linalg.inv(_m(lib, [[1.0, 2.0], [2.0, 4.0]]))),
    ("inv_singular_first_pivot", lambda lib: lib.linalg.inv(_z(lib, 2, 2))),
    ("inv_singular_batch", lambda lib: lib.linalg.inv(lib.stack([lib.eye(2, dtype=lib.float64), _z(lib, 2, 2)]))),
    ("solve_singular", lambda lib: lib.linalg.solve(_z(lib, 2, 2), lib.ones(2, dtype=lib.float64))),
    ("solve_singular_batch", lambda lib: lib.linalg.solve(lib.stack([lib.eye(2, dtype=lib.float64), _z(lib, 2, 2)]),
                                                          lib.ones(2, 2, dtype=lib.float64))),
    ("solve_shapes", lambda lib: lib.linalg.solve(lib.eye(2, dtype=lib.float64), lib.ones(3, dtype=lib.float64))),
    ("solve_shapes_matrix", lambda lib: lib.linalg.solve(lib.eye(2, dtype=lib.float64), lib.ones(3, 1, dtype=lib.float64))),
    ("solve_shapes_left_false", lambda lib: lib.linalg.solve(lib.eye(2, dtype=lib.float64), lib.ones(2, dtype=lib.float64), left=False)),
    ("solve_dtypes", lambda lib: lib.linalg.solve(lib.eye(2, dtype=lib.float64), lib.ones(2, dtype=lib.float32))),
    ("solve_not_square", lambda lib: lib.linalg.solve(_z(lib, 2, 3), _z(lib, 2))),
    ("det_not_square", lambda lib: lib.linalg.det(_z(lib, 2, 3))),
    ("det_int", lambda lib: lib.linalg.det(lib.tensor([[1, 2], [3, 4]]))),
    ("slogdet_not_square", lambda lib: lib.linalg.slogdet(_z(lib, 2, 3))),
    ("cholesky_not_pd", lambda lib: lib.linalg.cholesky(_m(lib, [[1.0, 2.0], [2.0, 1.0]]))),
    ("cholesky_not_pd_first", lambda lib: lib.linalg.cholesky(_m(lib, [[-1.0, 0.0], [0.0, 1.0]]))),
    ("cholesky_not_pd_batch", lambda lib: lib.linalg.cholesky(lib.stack([lib.eye(2, dtype=lib.float64),
                                                                        _m(lib, [[1.0, 2.0], [2.0, 1.0]])]))),
    ("cholesky_not_pd_upper", lambda lib: lib.linalg.cholesky(_m(lib, [[1.0, 2.0], [0.0, 1.0]]), upper=True)),
    ("cholesky_not_square", lambda lib: lib.linalg.cholesky(_z(lib, 2, 3))),
    ("cholesky_int", lambda lib: lib.linalg.cholesky(lib.ones(2, 2, dtype=lib.int64))),
    ("eigh_not_square", lambda lib: lib.linalg.eigh(_z(lib, 2, 3))),
    ("eigh_uplo", lambda lib: lib.linalg.eigh(lib.eye(2), UPLO="X")),
    ("eigh_int", lambda lib: lib.linalg.eigh(lib.ones(2, 2, dtype=lib.int64))),
    ("qr_mode", lambda lib: lib.linalg.qr(lib.eye(2), mode="x")),
    ("qr_1d", lambda lib: lib.linalg.qr(_z(lib, 3))),
    ("svd_1d", lambda lib: lib.linalg.svd(_z(lib, 3))),
    ("svd_int", lambda lib: lib.linalg.svd(lib.ones(2, 2, dtype=lib.int64))),
    ("matrix_norm_dim", lambda lib: lib.linalg.norm(lib.ones(2, 3), "fro", dim=0)),
    ("matrix_norm_order", lambda lib: lib.linalg.matrix_norm(lib.ones(2, 3), 3)),
    ("matrix_norm_order_name", lambda lib: lib.linalg.norm(lib.ones(2, 3), "xx")),
    ("matrix_norm_1d", lambda lib: lib.linalg.matrix_norm(lib.ones(3))),
    ("norm_ord_3d", lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), 3)),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)
    assert isinstance(theirs.value, torch.linalg.LinAlgError) == isinstance(ours.value, ag.linalg.LinAlgError)
    assert isinstance(theirs.value, NotImplementedError) == isinstance(ours.value, NotImplementedError)


def test_linalg_error_is_a_runtime_error() -> None:
    assert issubclass(ag.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="singular"):
        ag.linalg.inv(ag.zeros(2, 2))


@requires_torch
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle_as_torchs(uplo: str) -> None:
    """A non-symmetric input: only the triangle ``UPLO`` names is read, in values and gradients."""
    a = np.random.default_rng(2).standard_normal((2, 3, 3))
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (w, v), (tw, tv) = ag.linalg.eigh(x, UPLO=uplo), torch.linalg.eigh(t, UPLO=uplo)
    np.testing.assert_allclose(w.data, tw.detach().numpy(), rtol=1e-12)
    (g,) = _grad((w * ag.tensor([1.0, 2.0, 3.0])).sum() + (v ** 2 * weights(ag, v)).sum(), [x])
    (tg,) = torch.autograd.grad((tw * torch.tensor([1.0, 2.0, 3.0], dtype=tw.dtype)).sum() + (tv ** 2 * weights(torch, tv)).sum(), t)
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-9, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle_as_torchs(upper: bool) -> None:
    base = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    a = base + np.triu(np.full((3, 3), 0.3), 1) * (-1 if upper else 1)  # the triangles differ
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, tout = ag.linalg.cholesky(x, upper=upper), torch.linalg.cholesky(t, upper=upper)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12)
    w = np.random.default_rng(4).standard_normal((3, 3))
    (g,) = _grad((out * ag.tensor(w)).sum(), [x])
    (tg,) = torch.autograd.grad((tout * torch.tensor(w)).sum(), t)
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_svd_full_matrices_gradient_ignores_the_completing_vectors(shape: tuple[int, int]) -> None:
    """With ``full_matrices=True`` only the first k singular vectors enter the gradient (PyTorch
    narrows ``gU`` and ``gVh``): the columns of U (rows of Vh) past k are not differentiable."""
    a = np.random.default_rng(6).standard_normal(shape)
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    r, tr = ag.linalg.svd(x), torch.linalg.svd(t)
    assert r.U.shape == tuple(tr.U.shape) and r.Vh.shape == tuple(tr.Vh.shape)
    # squares: invariant to the signs of the singular vectors (LAPACK builds may choose others)
    (g,) = _grad((r.U ** 2 * weights(ag, r.U)).sum() + (r.Vh ** 2 * weights(ag, r.Vh)).sum(), [x])
    (tg,) = torch.autograd.grad((tr.U ** 2 * weights(torch, tr.U)).sum() + (tr.Vh ** 2 * weights(torch, tr.Vh)).sum(), t)
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-9, atol=1e-12)


@requires_torch
def test_slogdet_singular_gradient_batched_equals_torchs() -> None:
    """A batch of gradients (is_grads_batched) through the LU solve of a singular matrix."""
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    v = np.array([1.0, -2.0, 0.5])
    x, t = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (g,) = _grad(ag.linalg.slogdet(x).logabsdet, [x], grad_outputs=ag.tensor(v), is_grads_batched=True)
    (tg,) = torch.autograd.grad(torch.linalg.slogdet(t).logabsdet, t, torch.tensor(v), is_grads_batched=True)
    assert g.shape == tuple(tg.shape)
    np.testing.assert_array_equal(g.data, tg.numpy())


@requires_torch
def test_pinv_tolerances_rank_deficiency_and_errors_are_torchs() -> None:
    rank_one = np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 0.5])
    tiny = np.diag([1.0, 1e-9, 1e-17])
    for a, kw in [(rank_one, {}), (tiny, {}), (tiny, {"atol": 1e-8}), (tiny, {"rtol": 1e-10}),
                  (tiny, {"atol": 1e-12, "rtol": 1e-8}), (np.zeros((2, 3)), {}), (np.zeros((0, 3)), {})]:
        ours = ag.linalg.pinv(ag.tensor(a), **kw).numpy()
        theirs = torch.linalg.pinv(torch.tensor(a), **kw).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    inf = np.array([[1.0, np.inf], [2.0, 3.0]])
    np.testing.assert_array_equal(ag.linalg.pinv(ag.tensor(inf)).numpy(), torch.linalg.pinv(torch.tensor(inf)).numpy())
    np.testing.assert_allclose(ag.linalg.pinv(ag.tensor(inf), hermitian=True).numpy(),
                               torch.linalg.pinv(torch.tensor(inf), hermitian=True).numpy(), rtol=1e-12)
    with pytest.raises(ag.linalg.LinAlgError, match="linalg.svd: The algorithm failed to converge because the input matrix"):
        ag.linalg.pinv(ag.tensor([[1.0, np.nan], [2.0, 3.0]]))
    for bad, message in [(ag.tensor([1.0, 2.0]), "linalg.pinv: The input tensor A must have at least 2 dimensions."),
                         (ag.tensor([[1, 2], [3, 4]]), "linalg.pinv: Expected a floating point or complex tensor as input. Got Long")]:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            ag.linalg.pinv(bad)
