"""torch.* statistics, distances, windows and the linear algebra outside torch.linalg
(aiograd/_ops/statistics.py, statistics_more.py, distances.py, windows.py, linalg_compat.py):
factory rows (gradcheck, gradgradcheck, values and derivatives against torch, float32, grad_fn
names), then the ops without a gradient and errors against torch's."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])


def _spd(r: np.random.Generator, n: int = 3) -> list[np.ndarray]:
    a = r.uniform(-1, 1, (n, n))
    return [a @ a.T + n * np.eye(n)]


def _distinct(*shape: int) -> Callable[[np.random.Generator], list[np.ndarray]]:
    return lambda r: [r.permutation(np.prod(shape)).reshape(shape) * 0.37 - 1.1]


def _quiet(f: Callable[..., Any]) -> Callable[..., Any]:
    def run(*a: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(*a)

    return run


def _q_mode(m: str, lib: Any, x: Any) -> Any:
    return lib.quantile(x, 0.4, dim=0, interpolation=m)


def _cdist_p(p: float, lib: Any, a: Any, b: Any) -> Any:
    return lib.cdist(a, b, p=p)


def _window(n: str, p: bool, dt: str, lib: Any, x: Any) -> Any:
    return getattr(lib, n)(9, p, dtype=getattr(lib, dt))


NOSECOND = "torch's _cdist_backward / _pdist_backward has no derivative"

STATS_SPECS = [
    OpSpec("var_mean", lambda lib, x: lib.var_mean(x, 1)[0] * lib.var_mean(x, 1)[1], ((3, 4),)),
    OpSpec("var_mean_var", lambda lib, x: lib.var_mean(x, (0, 1), correction=0, keepdim=True)[0], ((3, 4),),
           grad_fn="VarMeanBackward0", op="var_mean"),
    OpSpec("var_mean_mean", lambda lib, x: lib.var_mean(x)[1], ((3, 4),), op="var_mean"),
    OpSpec("std_mean", lambda lib, x: lib.std_mean(x, 0, unbiased=False)[0], ((3, 4),), grad_fn="StdMeanBackward0"),
    OpSpec("std_mean_both", lambda lib, x: lib.std_mean(x, -1)[0] + lib.std_mean(x, -1)[1], ((3, 4),), op="std_mean"),
    OpSpec("nansum", lambda lib, x: x.nansum(), ((3, 4),), grad_fn="NansumBackward0"),
    OpSpec("nansum_dim", lambda lib, x: lib.nansum(x, 1, keepdim=True), ((3, 4),)),
    OpSpec("nanmean", lambda lib, x: x.nanmean(), ((3, 4),), grad_fn="DivBackward0"),
    OpSpec("nanmean_dim", lambda lib, x: lib.nanmean(x, (0,)), ((3, 4),)),
    OpSpec("nanmedian", lambda lib, x: x.nanmedian(), _distinct(3, 4), grad_fn="NanmedianBackward0"),
    OpSpec("nanmedian_dim", lambda lib, x: x.nanmedian(1).values, _distinct(3, 4), grad_fn="NanmedianBackward1"),
    OpSpec("mode", lambda lib, x: lib.mode(x.detach().round(), 1).values, _distinct(3, 5), grad=False,
           why="a rounded input: no gradient through round"),
    OpSpec("mode_grad", lambda lib, x: x.mode(0, keepdim=True).values, _distinct(3, 4), grad_fn="ModeBackward0",
           op="mode"),
    OpSpec("quantile", lambda lib, x: lib.quantile(x, 0.3), _distinct(3, 4)),
    OpSpec("quantile_dim", lambda lib, x: x.quantile(lib.tensor(np.array([0.25, 0.5, 0.9]), dtype=x.dtype), dim=1, keepdim=True),
           _distinct(3, 4)),
    *(OpSpec(f"quantile_{m}", partial(_q_mode, m),
             _distinct(3, 4)) for m in ("lower", "higher", "midpoint", "nearest")),
    OpSpec("nanquantile", lambda lib, x: lib.nanquantile(x, 0.7, dim=-1), _distinct(3, 4)),
    OpSpec("cov", lambda lib, x: lib.cov(x), ((3, 5),)),
    OpSpec("cov_weights", lambda lib, x, a: lib.cov(x, correction=2, fweights=lib.tensor(np.array([1, 2, 1, 3, 1])),
                                                    aweights=a.abs() + 0.5), ((3, 5), (5,)), op="cov"),
    OpSpec("cov_vector", lambda lib, x: x.cov(correction=0), ((5,),)),
    OpSpec("corrcoef", lambda lib, x: lib.corrcoef(x), ((3, 5),), gradgrad=True),
    OpSpec("trapezoid", lambda lib, y: lib.trapezoid(y), ((3, 4),)),
    OpSpec("trapezoid_x", lambda lib, y, x: lib.trapezoid(y, x, dim=0), ((3, 4), (3,))),
    OpSpec("trapz_dx", lambda lib, y: lib.trapz(y, dx=0.5, dim=0), ((3, 4),), op="trapezoid"),
    OpSpec("cumulative_trapezoid", lambda lib, y: lib.cumulative_trapezoid(y, dx=2.0), ((3, 4),),
           grad_fn="CumsumBackward0"),
    OpSpec("cumulative_trapezoid_x", lambda lib, y, x: lib.cumulative_trapezoid(y, x), ((3, 4), (3, 4))),
    # distances and products
    OpSpec("cdist", lambda lib, a, b: lib.cdist(a, b), ((3, 4), (5, 4)), grad_fn="CdistBackward0", gradgrad=False,
           why=NOSECOND),
    *(OpSpec(f"cdist_p{p}", partial(_cdist_p, p), ((2, 3, 4), (5, 4)),
             gradgrad=False, why=NOSECOND) for p in (0, 1, 1.5, 3, float("inf"))),
    OpSpec("cdist_mm", lambda lib, a, b: lib.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), ((3, 4), (2, 4)),
           gradgrad=False, why="torch's matrix-product form: its second derivatives at rounding level"),
    OpSpec("pdist", lambda lib, x: lib.pdist(x), ((4, 3),), grad_fn="PdistBackward0", gradgrad=False, why=NOSECOND),
    OpSpec("pdist_p1", lambda lib, x: lib.pdist(x, 1), ((4, 3),), gradgrad=False, why=NOSECOND),
    OpSpec("dist", lambda lib, a, b: lib.dist(a, b), ((3, 4), (4,)), grad_fn="DistBackward0"),
    OpSpec("dist_p3", lambda lib, a, b: a.dist(b, 3), ((3, 4), (3, 4))),
    OpSpec("dist_p1", lambda lib, a, b: a.dist(b, 1), ((3, 4), (3, 4))),
    OpSpec("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1.0), ((3, 4),), grad_fn="RenormBackward0"),
    OpSpec("renorm_p1", lambda lib, x: x.renorm(1, 1, 1.5), ((3, 4),)),
    OpSpec("addr", lambda lib, m, a, b: lib.addr(m, a, b), ((3, 4), (3,), (4,)), grad_fn="AddrBackward0"),
    OpSpec("addr_scaled", lambda lib, m, a, b: m.addr(a, b, beta=0.5, alpha=2.0), ((4,), (3,), (4,))),
    OpSpec("cross", lambda lib, a, b: lib.cross(a, b, dim=1), ((4, 3), (4, 3)), grad_fn="LinalgCrossBackward0"),
    OpSpec("linalg_cross", lambda lib, a, b: lib.linalg.cross(a, b), ((2, 4, 3), (1, 4, 3))),
    # linear algebra under its old top-level names
    OpSpec("det", lambda lib, a: lib.det(a), _spd, grad_fn="LinalgDetBackward0"),
    OpSpec("logdet", lambda lib, a: a.logdet(), _spd, grad_fn="WhereBackward0"),
    OpSpec("slogdet", lambda lib, a: lib.slogdet(a)[1], _spd, grad_fn="LinalgSlogdetBackward0"),
    OpSpec("inverse", lambda lib, a: a.inverse(), _spd, grad_fn="LinalgInvExBackward0"),
    OpSpec("pinverse", lambda lib, a: lib.pinverse(a), ((3, 2),), grad_fn="LinalgPinvBackward0"),
    OpSpec("cholesky", _quiet(lambda lib, a: lib.cholesky(a @ a.mT)), _spd, grad_fn="CholeskyBackward0"),
    OpSpec("cholesky_upper", _quiet(lambda lib, a: (a @ a.mT).cholesky(upper=True)), _spd, op="cholesky"),
    OpSpec("qr", _quiet(lambda lib, a: lib.qr(a)[1]), ((4, 3),), grad_fn="LinalgQrBackward0"),
    OpSpec("svd", lambda lib, a: lib.svd(a)[1], ((4, 3),), grad_fn="LinalgSvdBackward0"),
    OpSpec("svd_v", lambda lib, a: lib.svd(a)[2].abs(), ((3, 3),), op="svd"),
    OpSpec("matrix_exp", lambda lib, a: lib.matrix_exp(a), ((3, 3),), grad_fn="LinalgMatrixExpBackward0"),
    OpSpec("linalg_matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a * 3.0), ((2, 3, 3),)),
    OpSpec("matrix_power", lambda lib, a: lib.matrix_power(a, 5), ((3, 3),), grad_fn="MmBackward0"),
    OpSpec("matrix_power_neg", lambda lib, a: a.matrix_power(-2), _spd, op="matrix_power"),
    OpSpec("linalg_matrix_power", lambda lib, a: lib.linalg.matrix_power(a, 3), ((3, 3),)),
]
HISTOGRAM_SPECS = [
    OpSpec("histogram", lambda lib, x: lib.histogram(x.detach(), 4)[0], ((6,),), grad=False, why="counts: no gradient"),
]
WINDOW_SPECS = [
    OpSpec(name, (lambda n: lambda lib, x: getattr(lib, n)(6, dtype=lib.float64))(name), ((1,),), grad=False,
           why="a constant window") for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window")
]

globals().update(make_op_tests(STATS_SPECS + WINDOW_SPECS + HISTOGRAM_SPECS))


def _same(ours: Any, theirs: Any, rtol: float = 1e-7) -> None:
    if isinstance(theirs, (tuple, list)):
        for a, b in zip(ours, theirs):
            _same(a, b, rtol)
        return
    assert ours.shape == tuple(theirs.shape)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
    np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=rtol, atol=1e-12)


X = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, np.nan, np.nan, np.nan], [2.0, 2.0, 0.5, 2.0]])
FORWARD = [
    ("nansum", lambda lib, x: x.nansum(1)),
    ("nanmean", lambda lib, x: x.nanmean(1)),
    ("nanmedian", lambda lib, x: x.nanmedian()),
    ("nanmedian_dim", lambda lib, x: x.nanmedian(1, keepdim=True).values),
    ("nanquantile", lambda lib, x: x.nanquantile(0.5, 1)),
    ("quantile_nan", lambda lib, x: x.quantile(0.5, 1)),
    ("mode", lambda lib, x: tuple(lib.mode(lib.tensor(np.array([[1, 2, 2, 3, 3, 0], [5, 5, 1, 1, 7, 7]])), 1))),
    ("histogram", lambda lib, x: tuple(lib.histogram(x[2], 3))),
    ("histogram_range", lambda lib, x: tuple(lib.histogram(x[2], 4, range=(0.0, 4.0), density=True))),
    ("histogram_edges", lambda lib, x: tuple(lib.histogram(x[2], lib.tensor(np.array([0.0, 1.0, 2.5])),
                                                           weight=x[2] * 2))),
    *((f"{n}_{p}_{dt}", partial(_window, n, p, dt))
      for n in ("hann_window", "hamming_window", "blackman_window", "bartlett_window")
      for p in (True, False) for dt in ("float32", "float64")),
    ("windows_short", lambda lib, x: (lib.hann_window(0), lib.hamming_window(1), lib.bartlett_window(2))),
    ("cov_int_float32", lambda lib, x: lib.cov(lib.tensor(np.array([[1, 2, 4], [0, 5, 1]])))),
    ("svd_no_uv", lambda lib, x: tuple(lib.svd(x[2:].expand(2, 4) * lib.tensor(np.array([[1.0], [2.0]])),
                                               compute_uv=False))),
    ("trapezoid_empty", lambda lib, x: lib.trapezoid(x[:, :0])),
]


@requires_torch
@pytest.mark.real_default_dtype  # (torch's float32 for integer covariances and default windows)
@pytest.mark.parametrize(("name", "call"), FORWARD, ids=[n for n, _ in FORWARD])
def test_forward_matches_torch(name: str, call: Callable[[Any, Any], Any]) -> None:
    rtol = 1e-6 if "float32" in name else 1e-7
    _same(call(ag, ag.tensor(X)), call(torch, torch.tensor(X)), rtol)


def test_mode_index_rule() -> None:
    out = ag.mode(ag.tensor([[1.0, 2, 2, 3, 3, 0], [5, 5, 1, 1, 7, 7]]), 1)
    assert out.values.tolist() == [2.0, 1.0] and out.indices.tolist() == [2, 3]


ERRORS: list[tuple[str, Callable[[Any], Any], type]] = [
    ("quantile_q", lambda lib: lib.quantile(lib.ones(3), 1.5), RuntimeError),
    ("quantile_int", lambda lib: lib.quantile(lib.ones(3, dtype=lib.int64), 0.5), RuntimeError),
    ("quantile_mode", lambda lib: lib.quantile(lib.ones(3), 0.5, interpolation="foo"), RuntimeError),
    ("quantile_empty", lambda lib: lib.quantile(lib.ones(0), 0.5), RuntimeError),
    ("quantile_q_2d", lambda lib: lib.quantile(lib.ones(3), lib.ones(2, 2) / 2), RuntimeError),
    ("nanmean_int", lambda lib: lib.nanmean(lib.ones(3, dtype=lib.int64)), RuntimeError),
    ("cov_3d", lambda lib: lib.cov(lib.ones(2, 2, 2)), RuntimeError),
    ("cdist_cols", lambda lib: lib.cdist(lib.ones(2, 3), lib.ones(2, 4)), RuntimeError),
    ("cdist_1d", lambda lib: lib.cdist(lib.ones(3), lib.ones(2, 3)), RuntimeError),
    ("pdist_3d", lambda lib: lib.pdist(lib.ones(2, 3, 4)), RuntimeError),
    ("addr_2d", lambda lib: lib.addr(lib.ones(2, 2), lib.ones(2, 1), lib.ones(2)), RuntimeError),
    ("cross_no_3", lambda lib: lib.linalg.cross(lib.ones(2, 4), lib.ones(2, 4)), RuntimeError),
    ("matrix_exp_square", lambda lib: lib.matrix_exp(lib.ones(2, 3)), RuntimeError),
    ("logdet_square", lambda lib: lib.logdet(lib.ones(2, 3)), RuntimeError),
    ("det_square", lambda lib: lib.det(lib.ones(2, 3)), RuntimeError),
    ("matrix_power_square", lambda lib: lib.matrix_power(lib.ones(2, 3), 2), RuntimeError),
    ("cholesky_pd", lambda lib: lib.cholesky(-lib.eye(3)), RuntimeError),
]


@requires_torch
@pytest.mark.parametrize(("name", "call", "exc"), ERRORS, ids=[n for n, _, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any], exc: type) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as theirs:
            call(torch)
        with pytest.raises(exc) as ours:
            call(ag)
    assert str(ours.value) == str(theirs.value)


def test_deprecated_forms_warn() -> None:
    with pytest.warns(UserWarning, match="torch.cross without specifying the dim"):
        ag.cross(ag.ones(3, 3), ag.ones(3, 3))
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        ag.qr(ag.eye(3))
