"""``aiograd.linalg.lstsq``, ``eig`` and ``eigvals`` against ``torch.linalg``: factory rows for
lstsq (gradcheck, gradgradcheck, values, first and second derivatives against torch, float32,
grad_fn names) through the solution and the residuals, per driver, with vectors, batches and
broadcasting; every field of the result per driver (which are empty, shapes, dtypes, ranks,
tolerances); eig's values and eigenvectors (up to each column's phase, which LAPACK builds
choose differently); and PyTorch's errors, type and message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd._ops.eig import NO_COMPLEX_GRADIENTS


def draw(*shapes: tuple[int, ...]) -> Callable[[np.random.Generator], list[np.ndarray]]:
    """Matrices with a dominant diagonal (well-conditioned, full rank); other shapes as drawn."""

    def sample(rng: np.random.Generator) -> list[np.ndarray]:
        out = []
        for i, s in enumerate(shapes):
            x = rng.uniform(-1, 1, size=s)
            if i == 0:
                x = x + 3 * np.eye(s[-2], s[-1])
            out.append(x)
        return out

    return sample


def _sol(driver: str | None = None) -> Callable[..., Any]:
    return lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver).solution


def _res(driver: str) -> Callable[..., Any]:
    return lambda lib, a, b: lib.linalg.lstsq(a, b, driver=driver).residuals


def _both(lib: Any, a: Any, b: Any) -> Any:
    r = lib.linalg.lstsq(a, b, driver="gelsd")
    return r.solution.sum(-2) * 0.5 + r.residuals


SPECS = [
    OpSpec("linalg_lstsq", _sol(), draw((5, 3), (5, 2)), grad_fn="LinalgLstsqBackward0"),
    OpSpec("linalg_lstsq_square", _sol(), draw((3, 3), (3, 2))),
    OpSpec("linalg_lstsq_wide", _sol(), draw((3, 5), (3, 2))),
    OpSpec("linalg_lstsq_vector", _sol("gelsd"), draw((5, 3), (5,))),
    OpSpec("linalg_lstsq_batched_vector", _sol("gelss"), draw((2, 5, 3), (2, 5))),
    OpSpec("linalg_lstsq_broadcast", _sol("gels"), draw((2, 1, 4, 3), (1, 3, 4, 2))),
    OpSpec("linalg_lstsq_gels_wide_batched", _sol("gels"), draw((2, 3, 4), (2, 3, 1))),
    OpSpec("linalg_lstsq_residuals_gels", _res("gels"), draw((5, 3), (5, 2)), grad_fn="LinalgLstsqBackward0"),
    OpSpec("linalg_lstsq_residuals_gelsd_vector", _res("gelsd"), draw((2, 5, 2), (2, 5))),
    OpSpec("linalg_lstsq_residuals_broadcast", _res("gelss"), draw((2, 1, 4, 3), (1, 3, 4, 2))),
    OpSpec("linalg_lstsq_solution_and_residuals", _both, draw((6, 3), (6, 2))),
]

#: eig and eigvals: forward only (complex outputs, no complex gradients in aiograd), through
#: the moduli, which do not depend on each eigenvector's phase; sorted, whatever geev's order.
EIG_SPECS = [
    OpSpec("linalg_eig", lambda lib, a: lib.linalg.eig(a.detach()).eigenvalues.abs().sort(-1).values, ((2, 4, 4),),
           grad=False, why="complex outputs: aiograd carries no complex gradients"),
    OpSpec("linalg_eig_vectors", lambda lib, a: lib.linalg.eig(a.detach()).eigenvectors.abs().sum(-2), ((3, 3),),
           op="linalg_eig", grad=False, why="complex outputs: aiograd carries no complex gradients"),
    OpSpec("linalg_eigvals", lambda lib, a: lib.linalg.eigvals(a.detach()).abs().sort(-1).values, ((3, 5, 5),),
           grad=False, why="complex outputs: aiograd carries no complex gradients"),
]

globals().update(make_op_tests(SPECS + EIG_SPECS))

DRIVERS = [None, "gels", "gelsy", "gelsd", "gelss"]
SHAPES = [((5, 3), (5, 2)), ((5, 3), (5,)), ((3, 5), (3, 2)), ((4, 4), (4, 3)), ((2, 5, 3), (2, 5)),
          ((2, 1, 5, 3), (1, 4, 5, 2)), ((1, 5, 3), (5, 5)), ((0, 5, 3), (0, 5, 2)), ((3, 0), (3, 2)), ((0, 3), (0, 2))]


def _fields(result: Any) -> list[np.ndarray]:
    return [np.asarray(x.data if isinstance(x, ag.Tensor) else x.numpy()) for x in result]


@requires_torch
@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lstsq_fields_are_torchs(driver: str | None, sa: tuple[int, ...], sb: tuple[int, ...], dtype: str) -> None:
    """Every field per driver: shape, dtype, which are empty, values (float32 within a
    tolerance any LAPACK meets, float64 near rounding)."""
    if driver == "gels" and 0 in sa[-2:] and sa[-2] <= sa[-1]:
        pytest.skip("torch's gels of a matrix with no rows: no LAPACK call, its own zeros (covered below)")
    rng = np.random.default_rng(sum(sa) + len(sb))
    a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    ours = ag.linalg.lstsq(ag.tensor(a), ag.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    assert ours._fields == ("solution", "residuals", "rank", "singular_values")
    rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (2e-4, 2e-5)
    for name, x, y in zip(ours._fields, _fields(ours), _fields(theirs)):
        assert x.shape == y.shape and x.dtype == y.dtype, name
        np.testing.assert_allclose(x, y, err_msg=name, rtol=rtol, atol=atol)


@requires_torch
@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_rank_deficient_and_rcond_are_torchs(driver: str) -> None:
    """Rank from the tolerance (default eps * max(m, n), a given one, a negative one: eps), the
    minimum-norm solution, and no residuals when some matrix of the batch lacks full rank."""
    rank_one = np.outer([1.0, 2.0, 3.0, -1.0, 0.5], [1.0, -1.0, 0.5])
    graded = np.diag([1.0, 1e-9, 1e-17])
    b = np.random.default_rng(0).standard_normal((5, 2))
    cases = [(rank_one, b, None), (np.ones((5, 3)), b, None), (graded, b[:3], None), (graded, b[:3], 1e-8),
             (graded, b[:3], -1.0), (np.zeros((4, 2)), b[:4], None),
             (np.stack([rank_one, np.eye(5, 3) * 3 + 0.1]), np.stack([b, b]), None)]
    if driver == "gelsy":  # (torch's gelsy on the graded diagonal varies from run to run)
        cases = [c for c in cases if c[0] is not graded]
    for a, rhs, rcond in cases:
        ours = ag.linalg.lstsq(ag.tensor(a), ag.tensor(rhs), rcond, driver=driver)
        theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(rhs), rcond, driver=driver)
        for name, x, y in zip(ours._fields, _fields(ours), _fields(theirs)):
            assert x.shape == y.shape and x.dtype == y.dtype, name
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9, err_msg=f"{name} {a.shape} {rcond}")


@requires_torch
def test_lstsq_gels_of_degenerate_matrices_is_torchs() -> None:
    """An all-zero matrix: zeros (LAPACK's scaling step); rank deficiency: torch's LinAlgError,
    LAPACK's info, the batch element named; no rows: zeros."""
    b = np.random.default_rng(1).standard_normal((5, 2))
    for a, rhs in [(np.zeros((5, 3)), b), (np.zeros((0, 3)), b[:0]), (np.zeros((0, 0)), b[:0])]:
        ours = ag.linalg.lstsq(ag.tensor(a), ag.tensor(rhs), driver="gels")
        theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(rhs), driver="gels")
        for name, x, y in zip(ours._fields, _fields(ours), _fields(theirs)):
            assert x.shape == y.shape and x.dtype == y.dtype, name
            np.testing.assert_array_equal(x, y, err_msg=name)


@requires_torch
@pytest.mark.parametrize("driver", ["gels", "gelsd"])
@pytest.mark.parametrize("wrt", ["A", "B", "both"])
async def test_lstsq_gradients_through_both_outputs_are_torchs(driver: str, wrt: str) -> None:
    """First and second derivatives of a loss of the solution and the residuals, with respect
    to one input or both (the other a constant), over a broadcast batch of vectors."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 6, 3)) + 2 * np.eye(6, 3)
    b = rng.standard_normal((2, 6))
    w = rng.standard_normal((2, 3))
    A, B = ag.tensor(a, requires_grad=wrt != "B"), ag.tensor(b, requires_grad=wrt != "A")
    tA, tB = torch.tensor(a, requires_grad=wrt != "B"), torch.tensor(b, requires_grad=wrt != "A")
    xs, ts = [x for x in (A, B) if x.requires_grad], [t for t in (tA, tB) if t.requires_grad]

    r, tr = ag.linalg.lstsq(A, B, driver=driver), torch.linalg.lstsq(tA, tB, driver=driver)
    loss = (r.solution * ag.tensor(w)).sum() + (r.residuals * r.residuals).sum()
    tloss = (tr.solution * torch.tensor(w)).sum() + (tr.residuals * tr.residuals).sum()
    grads = await ag.grad(loss, xs, create_graph=True)
    tgrads = torch.autograd.grad(tloss, ts, create_graph=True)
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-9, atol=1e-11)
    second = await ag.grad(sum((g * g).sum() for g in grads), xs)
    tsecond = torch.autograd.grad(sum((g * g).sum() for g in tgrads), ts)
    for g, tg in zip(second, tsecond):
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-8, atol=1e-10)


async def test_lstsq_gradcheck_through_the_residuals_with_a_vector_rhs() -> None:
    rng = np.random.default_rng(3)
    a = ag.tensor(rng.standard_normal((5, 2)) + np.eye(5, 2), requires_grad=True)
    b = ag.tensor(rng.standard_normal(5), requires_grad=True)
    fn = lambda a, b: ag.linalg.lstsq(a, b, driver="gelss").residuals  # noqa: E731
    assert await ag.autograd.gradcheck(fn, (a, b))
    assert await ag.autograd.gradgradcheck(fn, (a, b))


def test_lstsq_records_one_node_for_the_solution_and_the_residuals() -> None:
    a = ag.tensor(np.eye(4, 2) + 0.5, requires_grad=True)
    r = ag.linalg.lstsq(a, ag.ones(4, 1, dtype=ag.float64), driver="gelsd")
    assert r.solution.grad_fn is r.residuals.grad_fn
    assert r.solution.grad_fn.name() == "LinalgLstsqBackward0"
    assert r.residuals.output_nr == 1
    assert not r.rank.requires_grad and not r.singular_values.requires_grad
    if torch is not None:
        tr = torch.linalg.lstsq(torch.tensor(a.data, requires_grad=True), torch.ones(4, 1, dtype=torch.float64),
                                driver="gelsd")
        assert tr.solution.grad_fn.name() == "LinalgLstsqBackward0" and tr.residuals.grad_fn is tr.solution.grad_fn
        assert not tr.rank.requires_grad and not tr.singular_values.requires_grad


# ================================================================================ eig
@requires_torch
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (1, 1), (2, 0, 0), (6, 6)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_eig_values_and_vectors_are_torchs(shape: tuple[int, ...], dtype: str) -> None:
    """Eigenvalues in torch's order, eigenvectors of unit norm equal to torch's up to each
    column's phase (LAPACK builds pick the sign of a real eigenvector differently), complex64
    for float32, complex128 for float64; eigvals the same values."""
    a = np.random.default_rng(len(shape) + shape[-1]).standard_normal(shape).astype(dtype)
    (w, v), (tw, tv) = ag.linalg.eig(ag.tensor(a)), torch.linalg.eig(torch.tensor(a))
    vals = ag.linalg.eigvals(ag.tensor(a))
    rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (1e-4, 1e-5)
    for ours, theirs in [(w, tw), (v, tv), (vals, tw)]:
        assert ours.shape == tuple(theirs.shape) and ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
    np.testing.assert_allclose(w.data, tw.numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(vals.data, tw.numpy(), rtol=rtol, atol=atol)
    tv = tv.numpy()
    phase = (v.data.conj() * tv).sum(-2, keepdims=True)
    phase = phase / np.where(np.abs(phase) == 0, 1, np.abs(phase))
    np.testing.assert_allclose(v.data * phase, tv, rtol=rtol, atol=atol)
    if v.data.size:
        np.testing.assert_allclose(np.linalg.norm(v.data, axis=-2), 1, rtol=1e-5)
        np.testing.assert_allclose(a.astype(v.data.dtype) @ v.data, v.data * w.data[..., None, :], rtol=rtol, atol=atol)


@requires_torch
def test_eigvals_of_non_finite_matrices_are_nan_as_torchs() -> None:
    """eig refuses them; eigvals (no eigenvectors) gives NaN (NaN imaginary parts for an
    infinity), as torch's."""
    a = np.stack([np.eye(2), np.full((2, 2), np.nan), np.array([[1.0, np.inf], [0.0, 1.0]])])
    ours, theirs = ag.linalg.eigvals(ag.tensor(a)).data, torch.linalg.eigvals(torch.tensor(a)).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_eig_of_a_real_spectrum_is_complex() -> None:
    w, v = ag.linalg.eig(ag.tensor(np.diag([3.0, 1.0, 2.0])))
    assert w.dtype == np.complex128 and v.dtype == np.complex128
    np.testing.assert_array_equal(w.data, [3, 1, 2])
    assert ag.linalg.eigvals(ag.tensor(np.eye(2, dtype=np.float32))).dtype == np.complex64
    assert ag.linalg.eig(ag.tensor(np.eye(2)))._fields == ("eigenvalues", "eigenvectors")


async def test_eig_records_torchs_node_and_its_backward_says_what_is_missing() -> None:
    a = ag.tensor(np.random.default_rng(2).standard_normal((3, 3)), requires_grad=True)
    w, v = ag.linalg.eig(a)
    assert w.grad_fn is v.grad_fn and w.grad_fn.name() == "LinalgEigBackward0" and v.output_nr == 1
    assert ag.linalg.eigvals(a).grad_fn.name() == "LinalgEigBackward0"
    if torch is not None:
        t = torch.tensor(a.data, requires_grad=True)
        assert torch.linalg.eig(t)[0].grad_fn.name() == torch.linalg.eigvals(t).grad_fn.name() == "LinalgEigBackward0"
    with pytest.raises(RuntimeError) as err:
        await ag.grad(w.abs().sum(), [a])
    assert str(err.value) == NO_COMPLEX_GRADIENTS
    assert not ag.linalg.eig(a.detach()).eigenvalues.requires_grad


# ================================================================================ errors
def _z(lib: Any, *shape: int, dtype: str = "float64") -> Any:
    return lib.zeros(*shape, dtype=getattr(lib, dtype))


def _zero_column(lib: Any, m: int, n: int) -> Any:
    """A full-rank ``m x n`` matrix but for its middle column, zero."""
    a = np.arange(1.0, m * n + 1).reshape(m, n) ** 1.5
    a[:, n // 2] = 0
    return lib.tensor(a, dtype=lib.float64)


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("lstsq_1d_input", lambda lib: lib.linalg.lstsq(_z(lib, 3), _z(lib, 3))),
    ("lstsq_0d_other", lambda lib: lib.linalg.lstsq(_z(lib, 3, 2), lib.tensor(1.0, dtype=lib.float64))),
    ("lstsq_dtypes", lambda lib: lib.linalg.lstsq(_z(lib, 3, 2), _z(lib, 3, 1, dtype="float32"))),
    ("lstsq_dims", lambda lib: lib.linalg.lstsq(_z(lib, 3, 2), _z(lib, 2, 2, 3, 1))),
    ("lstsq_dims_vector", lambda lib: lib.linalg.lstsq(_z(lib, 2, 5, 3), _z(lib, 5))),
    ("lstsq_rows", lambda lib: lib.linalg.lstsq(_z(lib, 5, 3), _z(lib, 4, 2))),
    ("lstsq_rows_vector", lambda lib: lib.linalg.lstsq(_z(lib, 5, 3), _z(lib, 4))),
    ("lstsq_rows_batched_matrix", lambda lib: lib.linalg.lstsq(_z(lib, 2, 1, 5, 3), _z(lib, 1, 4, 5))),
    ("lstsq_batch", lambda lib: lib.linalg.lstsq(_z(lib, 2, 5, 3), _z(lib, 3, 5, 2))),
    ("lstsq_batch_dim_diff", lambda lib: lib.linalg.lstsq(_z(lib, 2, 1, 5, 3), _z(lib, 4, 5, 2))),
    ("lstsq_batch_expand", lambda lib: lib.linalg.lstsq(_z(lib, 2, 1, 5, 3), _z(lib, 2, 5, 2))),
    ("lstsq_driver", lambda lib: lib.linalg.lstsq(_z(lib, 5, 3), _z(lib, 5), driver="gelsx")),
    ("lstsq_driver_before_dtype", lambda lib: lib.linalg.lstsq(_z(lib, 5, 3, dtype="int64"), _z(lib, 5, dtype="int64"),
                                                               driver="x")),
    ("lstsq_int", lambda lib: lib.linalg.lstsq(_z(lib, 5, 3, dtype="int64"), _z(lib, 5, 2, dtype="int64"))),
    ("lstsq_half", lambda lib: lib.linalg.lstsq(_z(lib, 5, 3, dtype="float16"), _z(lib, 5, 2, dtype="float16"))),
    # (a zero column or row: an exact zero on R's diagonal in every LAPACK build, LAPACK's info)
    ("lstsq_gels_rank_deficient", lambda lib: lib.linalg.lstsq(_zero_column(lib, 5, 3), _z(lib, 5, 2), driver="gels")),
    ("lstsq_gels_rank_deficient_wide", lambda lib: lib.linalg.lstsq(_zero_column(lib, 5, 3).mT, _z(lib, 3, 2),
                                                                    driver="gels")),
    ("lstsq_gels_rank_deficient_batch", lambda lib: lib.linalg.lstsq(
        lib.stack([lib.eye(5, 3, dtype=lib.float64), _zero_column(lib, 5, 3)]), _z(lib, 2, 5, 2), driver="gels")),
    ("lstsq_not_tensor", lambda lib: lib.linalg.lstsq([[1.0]], _z(lib, 1, 1))),
    ("eig_not_square", lambda lib: lib.linalg.eig(_z(lib, 2, 3))),
    ("eig_1d", lambda lib: lib.linalg.eig(_z(lib, 3))),
    ("eig_int", lambda lib: lib.linalg.eig(_z(lib, 3, 3, dtype="int64"))),
    ("eig_int_not_square", lambda lib: lib.linalg.eig(_z(lib, 2, 3, dtype="int64"))),
    ("eig_bool", lambda lib: lib.linalg.eig(lib.zeros(2, 2, dtype=lib.bool))),
    ("eig_nan", lambda lib: lib.linalg.eig(lib.full((2, 2), float("nan"), dtype=lib.float64))),
    ("eig_inf_batch", lambda lib: lib.linalg.eig(lib.stack([lib.eye(2), lib.full((2, 2), float("inf"))]))),
    ("eig_not_tensor", lambda lib: lib.linalg.eig([[1.0]])),
    ("eigvals_not_square", lambda lib: lib.linalg.eigvals(_z(lib, 2, 3))),
    ("eigvals_1d", lambda lib: lib.linalg.eigvals(_z(lib, 3))),
    ("eigvals_int", lambda lib: lib.linalg.eigvals(_z(lib, 3, 3, dtype="int64"))),
    ("eigvals_not_tensor", lambda lib: lib.linalg.eigvals([[1.0]])),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises((RuntimeError, TypeError)) as theirs:
        call(torch)
    with pytest.raises((RuntimeError, TypeError)) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)
    assert type(theirs.value).__name__.lstrip("_") in {type(ours.value).__name__, "RuntimeError"} | (
        {"LinAlgError"} if isinstance(ours.value, ag.linalg.LinAlgError) else set())
    assert isinstance(theirs.value, torch.linalg.LinAlgError) == isinstance(ours.value, ag.linalg.LinAlgError)
    assert isinstance(theirs.value, NotImplementedError) == isinstance(ours.value, NotImplementedError)
    assert isinstance(theirs.value, TypeError) == isinstance(ours.value, TypeError)
