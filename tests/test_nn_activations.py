"""The activations of ``aiograd.nn.functional`` (aiograd/nn/_activations.py): one ``OpSpec`` row
per form through the op factory (gradcheck, gradgradcheck, values and first and second
derivatives against torch, float32, grad_fn names), then the in-place forms, the edge values and
PyTorch's errors, each against torch."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, away_from, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def nnf(lib: Any) -> Any:
    """``aiograd.nn.functional`` or ``torch.nn.functional``."""
    return F if lib is ag else torch.nn.functional


ACTIVATION_SPECS = [
    OpSpec("gelu", lambda lib, x: nnf(lib).gelu(x), ((3, 4),), domain=(-4, 4), grad_fn="GeluBackward0"),
    OpSpec("gelu_tanh", lambda lib, x: nnf(lib).gelu(x, approximate="tanh"), ((3, 4),), domain=(-4, 4),
           grad_fn="GeluBackward0", op="gelu"),
    OpSpec("silu", lambda lib, x: nnf(lib).silu(x), ((3, 4),), domain=(-5, 5), grad_fn="SiluBackward0"),
    OpSpec("mish", lambda lib, x: nnf(lib).mish(x), ((3, 4),), domain=(-5, 5), grad_fn="MishBackward0"),
    OpSpec("elu", lambda lib, x: nnf(lib).elu(x, 0.7), away_from(0.0)([(3, 4)]), grad_fn="EluBackward0"),
    OpSpec("elu_inplace", lambda lib, x: nnf(lib).elu(x * 1.0, 1.3, inplace=True), away_from(0.0)([(3, 4)]),
           grad_fn="EluBackward1", op="elu"),
    OpSpec("leaky_relu", lambda lib, x: nnf(lib).leaky_relu(x, 0.2), away_from(0.0)([(3, 4)]),
           grad_fn="LeakyReluBackward0"),
    OpSpec("leaky_relu_inplace", lambda lib, x: nnf(lib).leaky_relu(x * 1.0, inplace=True),
           away_from(0.0)([(3, 4)]), grad_fn="LeakyReluBackward1", op="leaky_relu"),
    OpSpec("softplus", lambda lib, x: nnf(lib).softplus(x), ((3, 4),), domain=(-5, 5), grad_fn="SoftplusBackward0"),
    OpSpec("softplus_beta", lambda lib, x: nnf(lib).softplus(x, beta=2.0, threshold=3.0),
           away_from(1.5, lo=-3, hi=3)([(3, 4)]), grad_fn="SoftplusBackward0", op="softplus"),
    OpSpec("hardtanh", lambda lib, x: nnf(lib).hardtanh(x, -0.5, 1.5), away_from(-0.5, 1.5)([(3, 4)]),
           grad_fn="HardtanhBackward0"),
    OpSpec("hardtanh_inplace", lambda lib, x: nnf(lib).hardtanh(x * 1.0, inplace=True), away_from(-1.0, 1.0)([(3, 4)]),
           grad_fn="HardtanhBackward0", op="hardtanh"),
    OpSpec("silu_inplace", lambda lib, x: nnf(lib).silu(x * 1.0, inplace=True), ((3, 4),), grad_fn="SiluBackward0",
           op="silu"),
    OpSpec("mish_inplace", lambda lib, x: nnf(lib).mish(x * 1.0, inplace=True), ((3, 4),), grad_fn="MishBackward0",
           op="mish"),
]

globals().update(make_op_tests(ACTIVATION_SPECS))

CALLS = {
    "gelu": lambda f, x: f.gelu(x),
    "gelu_tanh": lambda f, x: f.gelu(x, approximate="tanh"),
    "silu": lambda f, x: f.silu(x),
    "mish": lambda f, x: f.mish(x),
    "elu": lambda f, x: f.elu(x, 0.5),
    "leaky_relu": lambda f, x: f.leaky_relu(x, 0.1),
    "softplus": lambda f, x: f.softplus(x, 0.5, 4.0),
    "hardtanh": lambda f, x: f.hardtanh(x, -2.0, 0.5),
}
EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0, -0.5, 0.5, -2.0, 30.0, -30.0, 700.0, -700.0]


@requires_torch
@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
async def test_edge_values_and_gradients_match_torchs_formula(name: str, dtype: Any) -> None:
    values = np.array(EDGES, dtype=dtype)
    x, tx = ag.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning escapes
        out = CALLS[name](F, x)
        (g,) = await ag.grad(out.sum(), [x])
    # torch one element at a time: its scalar loop, PyTorch's formula (its vectorised loops may
    # disagree with it at NaN for ELU's and Hardtanh's gradients and at inf for float32 GELU)
    touts = [CALLS[name](torch.nn.functional, t) for t in tx.unbind()]
    tout = torch.stack(touts)
    tg = torch.stack([torch.autograd.grad(t, [tx])[0][i] for i, t in enumerate(touts)])
    rtol = 1e-12 if dtype == np.float64 else 1e-5  # (float32: torch rounds its steps)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=rtol, equal_nan=True)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=rtol, atol=1e-300, equal_nan=True)


@requires_torch
@pytest.mark.parametrize("name", ["silu", "mish", "elu", "leaky_relu", "hardtanh"])
async def test_inplace_writes_the_input_and_matches_torch(name: str) -> None:
    data = np.random.default_rng(3).uniform(-2, 2, (4, 5))
    leaf, tleaf = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ty = leaf * 2.0, tleaf * 2.0
    out = getattr(F, name)(y, inplace=True)
    tout = getattr(torch.nn.functional, name)(ty, inplace=True)
    assert out is y and tout is ty
    assert y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    (g,) = await ag.grad(out.sum(), [leaf])
    (tg,) = torch.autograd.grad(tout.sum(), [tleaf])
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)
    # no grad involved: written in place, nothing recorded
    plain, tplain = ag.tensor(data), torch.tensor(data)
    assert getattr(F, name)(plain, inplace=True) is plain
    getattr(torch.nn.functional, name)(tplain, inplace=True)
    np.testing.assert_allclose(plain.numpy(), tplain.numpy(), rtol=1e-12)


def _error_of(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared
        return type(e), str(e)
    raise AssertionError("no error")


ERROR_CASES = {
    "gelu_approximate": lambda lib, f: f.gelu(lib.ones(2, dtype=lib.float64), approximate="foo"),
    "hardtanh_bounds": lambda lib, f: f.hardtanh(lib.ones(2, dtype=lib.float64), 2.0, 1.0),
    "gelu_integer": lambda lib, f: f.gelu(lib.tensor([1, 2])),
    "elu_integer": lambda lib, f: f.elu(lib.tensor([1, 2])),
    "leaf_inplace": lambda lib, f: f.silu(lib.ones(2, dtype=lib.float64, requires_grad=True), inplace=True),
}


@requires_torch
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(case: str) -> None:
    ours = _error_of(lambda: ERROR_CASES[case](ag, F))
    theirs = _error_of(lambda: ERROR_CASES[case](torch, torch.nn.functional))
    assert ours == theirs


@requires_torch
@pytest.mark.parametrize("name", ["elu", "leaky_relu"])
async def test_inplace_negative_slope_backward_error_matches_torch(name: str) -> None:
    leaf, tleaf = ag.ones(3, dtype=ag.float64, requires_grad=True), torch.ones(3, dtype=torch.float64, requires_grad=True)
    out = getattr(F, name)(leaf * 1.0, -0.1, inplace=True)
    tout = getattr(torch.nn.functional, name)(tleaf * 1.0, -0.1, inplace=True)
    with pytest.raises(RuntimeError) as ours:
        await ag.grad(out.sum(), [leaf])
    with pytest.raises(RuntimeError) as theirs:
        torch.autograd.grad(tout.sum(), [tleaf])
    assert str(ours.value) == str(theirs.value)


@requires_torch
def test_torchs_vectorised_loops_differ_from_its_formula_where_aiograd_follows_the_formula() -> None:
    """The cases tests/test_edge_values.py lists as exceptions: torch's answer at NaN (ELU's and
    Hardtanh's gradients) and at +inf (float32 GELU) depends on whether the element falls in its
    vectorised loop (a long tensor) or its scalar loop (the formula, one element), and the
    vectorised loop's answer on the CPU's kernel (float32 ``gelu(inf)`` is NaN with AVX-512,
    inf on some AVX2 machines). What holds on every kernel is asserted of torch: its scalar loop gives the
    formula's answer, its vectorised loop the formula's or the documented exception's; aiograd
    gives the formula's everywhere, whatever the length."""
    f = torch.nn.functional

    def grad_at(lib: Any, fn: Any, value: float, n: int, dtype: Any) -> float:
        x = lib.full((n,), value, dtype=dtype, requires_grad=True)
        (g,) = (torch.autograd.grad if lib is torch else ag.sync.grad)(fn(x).sum(), [x])
        return float(g[0])

    def same(value: float, expected: float) -> bool:  # (NaN is NaN)
        return value == expected or (np.isnan(value) and np.isnan(expected))

    # (function, the formula's gradient at NaN, the vectorised loop's exception)
    for fn, tfn, formula, exception in ((F.hardtanh, f.hardtanh, 1.0, 0.0), (F.elu, f.elu, 1.0, np.nan)):
        for dtype, tdtype in ((ag.float64, torch.float64), (ag.float32, torch.float32)):
            assert grad_at(torch, tfn, np.nan, 1, tdtype) == formula
            assert any(same(grad_at(torch, tfn, np.nan, 64, tdtype), v) for v in (formula, exception))
            assert grad_at(ag, fn, np.nan, 1, dtype) == grad_at(ag, fn, np.nan, 64, dtype) == formula
    for n in (1, 64):
        theirs = float(f.gelu(torch.full((n,), np.inf))[0])  # (float32)
        assert theirs == np.inf if n == 1 else theirs == np.inf or np.isnan(theirs)
        assert float(F.gelu(ag.full((n,), np.inf, dtype=ag.float32))[0]) == np.inf
        assert float(F.gelu(ag.full((n,), np.inf, dtype=ag.float64))[0]) == np.inf


# Exact GELU computes its cdf once: the forward keeps it, a first-order backward reuses it.
def _gelu_input(dtype: Any) -> np.ndarray:
    from aiograd._ops.special import _CHUNK

    return np.random.default_rng(8).uniform(-6, 6, (3, _CHUNK + 5)).astype(dtype)  # (over a chunk)


@requires_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_gelu_saves_torchs_cdf_and_its_first_order_backward_matches_torch(dtype: Any) -> None:
    """The saved cdf is torch's ``0.5 * (1 + erf(x * M_SQRT1_2))`` to an ulp; values and
    gradients are within ``eps * |x|`` of the exact ones (torch in float64), what ``1 + erf``
    loses where it cancels (x < 0). (torch's own float32 results are not compared: how close
    they come depends on the CPU's kernel, up to 2.7 times this bound with AVX-512.)"""
    data = _gelu_input(dtype)
    g = np.random.default_rng(9).standard_normal(data.shape).astype(dtype)
    x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data)
    out = F.gelu(x)
    # torch's GeluBackwardKernelImpl recomputes the same cdf from its saved self
    tcdf = (0.5 * (1.0 + torch.erf(tx * 0.7071067811865476))).numpy()
    assert out.grad_fn.cdf.dtype == dtype
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(out.grad_fn.cdf, tcdf, rtol=0, atol=eps)
    (grad,) = await ag.grad(out, [x], ag.tensor(g))
    assert out.dtype == grad.dtype == dtype
    assert out.grad_fn.cdf is None  # freed with the saved input (no retain_graph)
    x64 = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    exact = torch.nn.functional.gelu(x64)
    (exact_grad,) = torch.autograd.grad(exact, [x64], torch.tensor(g, dtype=torch.float64))
    value_bound = eps * (np.abs(data) + np.abs(exact.detach().numpy()))
    grad_bound = eps * np.abs(g) * (np.abs(data) + 2.0)
    ours = (np.abs(out.detach().numpy() - exact.detach().numpy()), np.abs(grad.numpy() - exact_grad.numpy()))
    for error, bound in zip(ours, (value_bound, grad_bound)):
        assert (error <= bound).all(), f"{np.max(error / bound):.3g} times the bound"


async def test_gelu_first_order_backward_evaluates_no_erf_and_create_graph_does(monkeypatch: Any) -> None:
    from aiograd.nn import _activations

    calls: list[int] = []

    def counting_erf(t: Any) -> Any:
        calls.append(1)
        return ag.erf(t)

    monkeypatch.setattr(_activations, "erf", counting_erf)
    x = ag.tensor(_gelu_input(np.float32), requires_grad=True)
    (first,) = await ag.grad(F.gelu(x).sum(), [x])
    assert calls == []
    (recorded,) = await ag.grad(F.gelu(x).sum(), [x], create_graph=True)
    assert calls == [1] and recorded.requires_grad
    np.testing.assert_array_equal(recorded.detach().numpy(), first.numpy())  # the same roundings


@requires_torch
async def test_gelu_float32_double_backward_matches_torch() -> None:
    data = _gelu_input(np.float32)[:, :200]
    x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    (g,) = await ag.grad(F.gelu(x).sum(), [x], create_graph=True)
    (gg,) = await ag.grad((g * g).sum(), [x])
    (tg,) = torch.autograd.grad(torch.nn.functional.gelu(tx).sum(), [tx], create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), [tx])
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-5, atol=1e-6)


@requires_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
async def test_gelu_gradcheck_and_gradgradcheck_over_a_chunk(approximate: str) -> None:
    """float64 finite differences through the chunked array backward and the recorded one."""
    x = ag.tensor(np.random.default_rng(10).uniform(-4, 4, (40,)), requires_grad=True)
    assert await ag.testing.gradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
    assert await ag.testing.gradgradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
