"""Reductions: var, max, min, prod, logsumexp, softmax, log_softmax, argmax, argmin (amax, amin,
all, any, count_nonzero and the signatures of std and norm: tests/test_ops_reduction_extra.py).

Each case in CASES is one call written so that it runs unchanged on an aiograd tensor and on a
torch tensor (the method names and signatures are torch's). Every case is gradchecked, most are
gradgradchecked, and, with torch installed, forward values, gradients and node names are compared
with torch's.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, rng, to_torch, torch

import aiograd as ag
from aiograd._ops import reduction as R
from aiograd._ops import softmax as S
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def first(out: Any) -> Any:
    """The differentiable output: ``values`` of a ``(values, indices)`` pair."""
    return out if hasattr(out, "data") and not isinstance(out, tuple) else out[0]


@dataclass(frozen=True)
class Case:
    id: str
    fn: Callable[[Any], Any]
    shape: tuple[int, ...] = (3, 4)
    make: str = "normal"  # how the input is drawn: see make_input
    gradgrad: bool = True

    def __str__(self) -> str:
        return self.id


def make_input(case: Case, dtype: Any = np.float64) -> np.ndarray:
    """Deterministic data: distinct normals, or distinct values away from zero for prod."""
    g = rng(0)
    if case.make == "prod":
        # Magnitudes in [0.5, 1.5] with random signs: products stay O(1), no zeros, no ties.
        size = int(np.prod(case.shape))
        mags = np.linspace(0.5, 1.5, size)
        data = g.permutation(mags) * g.choice([-1.0, 1.0], size)
        return data.reshape(case.shape).astype(dtype)
    # A permutation of well-separated values: no ties, so max/min are differentiable here.
    size = int(np.prod(case.shape))
    data = g.permutation(np.linspace(-2.0, 2.0, size)) + g.uniform(-0.01, 0.01, size)
    return data.reshape(case.shape).astype(dtype)


CASES = [
    # var
    Case("var_all", lambda x: x.var()),
    Case("var_dim1", lambda x: x.var(1)),
    Case("var_dim_neg", lambda x: x.var(-1), shape=(2, 3, 4)),
    Case("var_dim_tuple", lambda x: x.var((0, 2)), shape=(2, 3, 4)),
    Case("var_keepdim", lambda x: x.var(1, keepdim=True)),
    Case("var_correction0", lambda x: x.var(0, correction=0)),
    Case("var_correction2", lambda x: x.var(None, correction=2, keepdim=True)),
    Case("var_unbiased_false", lambda x: x.var(1, False)),
    Case("var_unbiased_positional_keepdim", lambda x: x.var(0, True, True)),
    Case("var_unbiased_only", lambda x: x.var(False)),
    Case("var_unbiased_kw", lambda x: x.var(dim=(0, 1), unbiased=False)),
    Case("var_1d", lambda x: x.var(0), shape=(5,)),
    # max / min
    Case("max_all", lambda x: x.max()),
    Case("min_all", lambda x: x.min()),
    Case("max_dim0", lambda x: x.max(0)),
    Case("max_dim_neg_keepdim", lambda x: x.max(-1, keepdim=True)),
    Case("max_dim_kw", lambda x: x.max(dim=1), shape=(2, 3, 4)),
    Case("min_dim1", lambda x: x.min(1)),
    Case("min_dim_neg_keepdim", lambda x: x.min(-2, True), shape=(2, 3, 4)),
    Case("max_0d_dim", lambda x: x.max(0), shape=()),
    Case("min_1d", lambda x: x.min(0), shape=(5,)),
    # prod (zeros have their own tests below)
    Case("prod_all", lambda x: x.prod(), make="prod"),
    Case("prod_dim1", lambda x: x.prod(1), make="prod"),
    Case("prod_dim_neg_keepdim", lambda x: x.prod(-1, keepdim=True), shape=(2, 3, 4), make="prod"),
    Case("prod_dim0_kw", lambda x: x.prod(dim=0), make="prod"),
    Case("prod_0d", lambda x: x.prod(), shape=(), make="prod"),
    # logsumexp
    Case("logsumexp_dim1", lambda x: x.logsumexp(1)),
    Case("logsumexp_dim_neg_keepdim", lambda x: x.logsumexp(-1, keepdim=True), shape=(2, 3, 4)),
    Case("logsumexp_tuple", lambda x: x.logsumexp((0, 2)), shape=(2, 3, 4)),
    Case("logsumexp_all_dims", lambda x: x.logsumexp((0, 1))),
    Case("logsumexp_1d", lambda x: x.logsumexp(0), shape=(5,)),
    # softmax / log_softmax
    Case("softmax_dim0", lambda x: x.softmax(0)),
    Case("softmax_dim1", lambda x: x.softmax(1)),
    Case("softmax_dim_neg", lambda x: x.softmax(-1), shape=(2, 3, 4)),
    Case("softmax_mid", lambda x: x.softmax(1), shape=(2, 3, 4)),
    Case("log_softmax_dim0", lambda x: x.log_softmax(0)),
    Case("log_softmax_dim1", lambda x: x.log_softmax(1)),
    Case("log_softmax_dim_neg", lambda x: x.log_softmax(-1), shape=(2, 3, 4)),
    Case("log_softmax_1d", lambda x: x.log_softmax(0), shape=(5,)),
]


def _ag(data: np.ndarray) -> ag.Tensor:
    return ag.tensor(data, requires_grad=True)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_gradcheck(case: Case) -> None:
    assert await gradcheck(lambda x: first(case.fn(x)), [_ag(make_input(case))])


@pytest.mark.parametrize("case", [c for c in CASES if c.gradgrad], ids=str)
async def test_gradgradcheck(case: Case) -> None:
    assert await gradgradcheck(lambda x: first(case.fn(x)), [_ag(make_input(case))])


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=str)
async def test_matches_torch(case: Case) -> None:
    data = make_input(case)
    x, tx = _ag(data), to_torch(data)
    out, tout = case.fn(x), case.fn(tx)
    if isinstance(tout, tuple):  # (values, indices): same fields, same indices
        assert type(out).__name__ == type(tout).__name__
        assert out._fields == ("values", "indices")
        assert out.indices.dtype == np.int64 and not out.indices.requires_grad
        np.testing.assert_array_equal(out.indices.data, tout.indices.numpy())
        np.testing.assert_array_equal(out[1].data, tout[1].numpy())
    out, tout = first(out), first(tout)
    assert out.shape == tuple(tout.shape)
    assert out.grad_fn.name() == type(tout.grad_fn).__name__
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    seed = rng(1).standard_normal(out.shape)
    (gx,) = await ag.grad(out, [x], ag.tensor(seed))
    (tgx,) = torch.autograd.grad(tout, [tx], torch.tensor(seed))
    np.testing.assert_allclose(gx.data, tgx.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_float32_stays_float32(case: Case) -> None:
    x = ag.tensor(make_input(case, np.float32), requires_grad=True)
    out = first(case.fn(x))
    assert out.dtype == np.float32
    (g,) = await ag.grad(out, [x], ag.ones_like(out), retain_graph=True)
    assert g.dtype == np.float32
    # Higher order too: formulas use Python floats, so nothing is upcast.
    (g1,) = await ag.grad(out, [x], ag.ones_like(out), create_graph=True)
    assert g1.dtype == np.float32


# ------------------------------------------------------------------------------ max / min ties
TIES = np.array([[1.0, 3.0, 3.0, -2.0], [3.0, 0.5, 2.0, 3.0], [-1.0, -1.0, -2.0, -2.0]])
TIE_CALLS = [
    ("max", lambda x: x.max()),
    ("min", lambda x: x.min()),
    ("max_dim1", lambda x: x.max(1)),
    ("max_dim0", lambda x: x.max(0)),
    ("min_dim1_keepdim", lambda x: x.min(1, keepdim=True)),
    ("min_dim0", lambda x: x.min(0)),
    ("argmax", lambda x: x.argmax()),
    ("argmin", lambda x: x.argmin()),
    ("argmax_dim1", lambda x: x.argmax(1)),
    ("argmin_dim0_keepdim", lambda x: x.argmin(0, keepdim=True)),
]


@requires_torch
@pytest.mark.parametrize("call", [c for _, c in TIE_CALLS], ids=[n for n, _ in TIE_CALLS])
async def test_ties_match_torch(call: Callable[[Any], Any]) -> None:
    x, tx = _ag(TIES), to_torch(TIES)
    out, tout = call(x), call(tx)
    if isinstance(tout, tuple):
        np.testing.assert_array_equal(out.indices.data, tout.indices.numpy())
    out, tout = first(out), first(tout)
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    assert out.dtype == (np.int64 if tout.dtype == torch.int64 else np.float64)
    if not tout.requires_grad:
        assert not out.requires_grad and out.grad_fn is None
        return
    seed = np.arange(1.0, out.data.size + 1).reshape(out.shape)
    (gx,) = await ag.grad(out, [x], ag.tensor(seed))
    (tgx,) = torch.autograd.grad(tout, [tx], torch.tensor(seed))
    np.testing.assert_allclose(gx.data, tgx.numpy(), rtol=1e-12)


async def test_full_max_splits_grad_evenly_among_ties() -> None:
    x = _ag(TIES)
    await x.max().backward()
    expected = np.where(TIES == 3.0, 0.25, 0.0)
    np.testing.assert_array_equal(x.grad.data, expected)
    y = _ag(TIES)
    await y.min().backward()
    np.testing.assert_array_equal(y.grad.data, np.where(TIES == -2.0, 1 / 3, 0.0))


async def test_max_dim_grad_goes_to_returned_index_only() -> None:
    x = _ag(TIES)
    values, indices = R.max(x, 1)
    np.testing.assert_array_equal(indices.data, [1, 0, 0])  # the first maximum
    await values.sum().backward()
    expected = np.zeros_like(TIES)
    expected[[0, 1, 2], [1, 0, 0]] = 1.0
    np.testing.assert_array_equal(x.grad.data, expected)


async def test_max_with_nan_propagates_like_torch() -> None:
    data = np.array([[1.0, np.nan, 3.0], [0.0, 2.0, np.nan]])
    x = _ag(data)
    assert np.isnan(x.max().item())
    values, indices = x.max(1)
    np.testing.assert_array_equal(indices.data, [1, 2])
    assert np.isnan(values.data).all()
    np.testing.assert_array_equal(x.argmax(1).data, [1, 2])
    (g,) = await ag.grad(x.max(), [x])
    np.testing.assert_array_equal(g.data, np.isnan(data) * 0.5)


@requires_torch
async def test_max_min_with_tensor_other_is_elementwise() -> None:
    a_data, b_data = np.array([[1.0, 5.0], [2.0, 2.0]]), np.array([3.0, 2.0])
    a, b, ta, tb = _ag(a_data), _ag(b_data), to_torch(a_data), to_torch(b_data)
    for fname in ("max", "min"):
        out, tout = getattr(a, fname)(b), getattr(torch, fname)(ta, tb)
        assert out.grad_fn.name() == type(tout.grad_fn).__name__
        np.testing.assert_array_equal(out.data, tout.detach().numpy())
        ga = await ag.grad(out.sum(), [a, b])
        tga = torch.autograd.grad(tout.sum(), [ta, tb])
        for g, tg in zip(ga, tga):
            np.testing.assert_array_equal(g.data, tg.numpy())
    np.testing.assert_array_equal(R.max(a, b).data, ag.maximum(a, b).data)


def test_return_type_and_methods() -> None:
    x = ag.tensor([[1.0, 4.0], [3.0, 2.0]])
    res = x.max(1)
    assert res.values is res[0] and res.indices is res[1]
    values, indices = x.min(0)
    assert values.tolist() == [1.0, 2.0] and indices.tolist() == [0, 1]
    assert "values=" in repr(res) and repr(res).startswith("max(")
    for module, names in (
        (R, ("max", "min", "var", "prod", "argmax", "argmin", "sum", "mean")),
        (S, ("logsumexp", "softmax", "log_softmax")),
    ):
        for name in names:
            assert getattr(ag.Tensor, name) is getattr(module, name)
            assert name in module.__all__


# ------------------------------------------------------------------------------ argmax / argmin
ARG_CALLS = [
    ("argmax_none", lambda x: x.argmax()),
    ("argmax_none_keepdim", lambda x: x.argmax(keepdim=True)),
    ("argmax_dim0", lambda x: x.argmax(0)),
    ("argmax_neg_keepdim", lambda x: x.argmax(-1, keepdim=True)),
    ("argmin_none", lambda x: x.argmin()),
    ("argmin_dim1", lambda x: x.argmin(dim=1)),
    ("argmin_neg3", lambda x: x.argmin(-3)),
]


@requires_torch
@pytest.mark.parametrize("call", [c for _, c in ARG_CALLS], ids=[n for n, _ in ARG_CALLS])
def test_argmax_argmin_match_torch(call: Callable[[Any], Any]) -> None:
    data = make_input(Case("arg", lambda x: x, shape=(2, 3, 4)))
    out, tout = call(ag.tensor(data, requires_grad=True)), call(to_torch(data))
    assert out.dtype == np.int64 and not out.requires_grad
    assert out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.data, tout.numpy())


def test_argmax_on_0d_and_functions() -> None:
    s = ag.tensor(2.5)
    assert R.argmax(s).item() == 0 and R.argmin(s, 0).item() == 0
    assert R.argmax(ag.tensor([1, 7, 7, 2])).item() == 1  # integers, first of the ties


# ------------------------------------------------------------------------------ prod with zeros
ZERO_INPUTS = {
    "one_zero": np.array([[1.5, 0.0, -2.0], [0.5, 3.0, -1.0]]),
    "two_zeros_same_row": np.array([[0.0, 2.0, 0.0], [0.5, 3.0, -1.0]]),
    "zeros_in_each_row": np.array([[0.0, 2.0, 1.5], [0.5, 0.0, -1.0]]),
    "three_zeros": np.array([[0.0, 0.0, 0.0], [1.5, -0.5, 2.0]]),
    "mixed": np.array([[0.0, 0.0, 1.5, 2.0], [-1.0, 0.0, 0.5, 2.0], [1.0, 1.5, -0.5, 0.75]]),
}
ZERO_CALLS = {
    "all": lambda x: x.prod(),
    "dim0": lambda x: x.prod(0),
    "dim1": lambda x: x.prod(1),
    "dim_neg_keepdim": lambda x: x.prod(-1, keepdim=True),
}
ZERO_PARAMS = [
    pytest.param(data, call, id=f"{dn}-{cn}")
    for dn, data in ZERO_INPUTS.items()
    for cn, call in ZERO_CALLS.items()
]


@pytest.mark.parametrize(("data", "call"), ZERO_PARAMS)
async def test_prod_zeros_gradcheck(data: np.ndarray, call: Callable[[Any], Any]) -> None:
    assert await gradcheck(call, [_ag(data)])
    assert await gradgradcheck(call, [_ag(data)])


@requires_torch
@pytest.mark.parametrize(("data", "call"), ZERO_PARAMS)
async def test_prod_zeros_match_torch_to_third_order(data: np.ndarray, call: Callable[[Any], Any]) -> None:
    x, tx = _ag(data), to_torch(data)
    out, tout = call(x), call(tx)
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    g = rng(2)
    seeds = [g.standard_normal(out.shape)] + [g.standard_normal(data.shape) for _ in range(2)]
    # d(out . s0)/dx, then d(that . s1)/dx, then d(that . s2)/dx: first, second, third order.
    y, ty = out, tout
    for order, s in enumerate(seeds):
        last = order == len(seeds) - 1
        (y,) = await ag.grad((y * ag.tensor(s)).sum(), [x], create_graph=not last)
        (ty,) = torch.autograd.grad((ty * torch.tensor(s)).sum(), [tx], create_graph=not last)
        np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=1e-12, atol=1e-12)
        assert np.isfinite(y.data).all()


async def test_prod_zero_grads_values() -> None:
    x = _ag(np.array([2.0, 0.0, 3.0]))
    await x.prod().backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 6.0, 0.0])
    y = _ag(np.array([2.0, 0.0, 0.0, 3.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero anywhere
        await y.prod().backward()
    np.testing.assert_array_equal(y.grad.data, [0.0, 0.0, 0.0, 0.0])


def test_prod_int_and_dtype() -> None:
    assert R.prod(ag.tensor([2, 3, 4])).dtype == np.int64
    assert R.prod(ag.tensor([True, True])).dtype == np.int64
    x = ag.tensor(np.array([1.5, 2.0], dtype=np.float32), requires_grad=True)
    out = x.prod(dtype=np.float64)
    assert out.dtype == np.float64 and out.item() == 3.0


# ------------------------------------------------------------------------------ stability, edges
@requires_torch
@pytest.mark.parametrize(
    "data",
    [
        np.array([[1000.0, 1000.0, -1000.0], [-1e4, 3.0, 1e4]]),
        np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, 2.0]]),
        np.array([[np.inf, 0.0, 1.0], [-5.0, 7.0, -3.0]]),
    ],
    ids=["large", "minus_inf", "plus_inf"],
)
@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax"])
async def test_stable_with_large_and_infinite_values(data: np.ndarray, name: str) -> None:
    x, tx = _ag(data), to_torch(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warnings from numpy
        out = getattr(x, name)(1)
    tout = getattr(tx, name)(1)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12)
    if np.isinf(data).any():
        return
    assert np.isfinite(out.data).all()
    (gx,) = await ag.grad(out.sum(), [x])
    (tgx,) = torch.autograd.grad(tout.sum(), [tx])
    np.testing.assert_allclose(gx.data, tgx.numpy(), rtol=1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.softmax(0),
        lambda x: x.log_softmax(-1),
        lambda x: x.logsumexp(0),
        lambda x: x.prod(),
        lambda x: x.prod(0),
        lambda x: x.max(),
        lambda x: x.min(0, keepdim=True),
    ],
    ids=["softmax", "log_softmax", "logsumexp", "prod", "prod_dim", "max", "min_dim_keepdim"],
)
async def test_zero_dim_input_matches_torch(call: Callable[[Any], Any]) -> None:
    x, tx = _ag(np.array(1.25)), to_torch(np.array(1.25))
    out, tout = first(call(x)), first(call(tx))
    assert out.shape == tuple(tout.shape) == ()
    np.testing.assert_allclose(out.data, tout.detach().numpy())
    (gx,) = await ag.grad(out, [x])
    (tgx,) = torch.autograd.grad(tout, [tx])
    np.testing.assert_allclose(gx.data, tgx.numpy())


def test_var_degrees_of_freedom_warning_and_nan() -> None:
    x = ag.tensor([[1.0, 2.0]], requires_grad=True)
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        out = x.var(0)
    assert np.isnan(out.data).all()
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert np.isinf(x.var(correction=3).item())
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert np.isnan(ag.tensor(3.0).var().item())


def test_var_argument_errors() -> None:
    x = ag.tensor([[1.0, 2.0], [3.0, 5.0]])
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        x.var(0, True, correction=1)
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        ag.tensor([1, 2, 3]).var()
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.var((0, -2))


# ------------------------------------------------------------------------------ error messages
DIM_ERRORS = [
    ("var", lambda x: x.var(2), 2),
    ("var_tuple", lambda x: x.var((0, -3)), -3),
    ("max", lambda x: x.max(2), 2),
    ("min", lambda x: x.min(-3), -3),
    ("prod", lambda x: x.prod(2), 2),
    ("logsumexp", lambda x: x.logsumexp(5), 5),
    ("softmax", lambda x: x.softmax(2), 2),
    ("log_softmax", lambda x: x.log_softmax(-3), -3),
    ("argmax", lambda x: x.argmax(2), 2),
    ("argmin", lambda x: x.argmin(-3), -3),
]


@pytest.mark.parametrize(("call", "bad"), [(c, b) for _, c, b in DIM_ERRORS], ids=[n for n, _, _ in DIM_ERRORS])
def test_bad_dim_error(call: Callable[[Any], Any], bad: int) -> None:
    message = f"Dimension out of range (expected to be in range of [-2, 1], but got {bad})"
    with pytest.raises(IndexError, match=re.escape(message)):
        call(ag.tensor(np.ones((2, 3))))
    if torch is not None:
        with pytest.raises(IndexError, match=re.escape(message)):
            call(torch.ones(2, 3))


EMPTY_ERRORS = [
    ("max", lambda x: x.max(), RuntimeError),
    ("min", lambda x: x.min(), RuntimeError),
    ("max_dim", lambda x: x.max(0), IndexError),
    ("min_dim", lambda x: x.min(0), IndexError),
    ("argmax", lambda x: x.argmax(), IndexError),
    ("argmin_dim", lambda x: x.argmin(0), IndexError),
]


@pytest.mark.parametrize(
    ("call", "exc"), [(c, e) for _, c, e in EMPTY_ERRORS], ids=[n for n, _, _ in EMPTY_ERRORS]
)
def test_reductions_over_nothing_raise_like_torch(call: Callable[[Any], Any], exc: type) -> None:
    with pytest.raises(exc) as info:
        call(ag.tensor(np.ones((0, 3))))
    assert "Expected reduction dim" in str(info.value)
    if torch is not None:
        with pytest.raises(exc) as tinfo:
            call(torch.ones(0, 3))
        assert str(info.value) == str(tinfo.value).split(" (Triggered")[0]


def test_non_float_softmax_raises() -> None:
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        ag.tensor([1, 2, 3]).softmax(0)
    out = ag.tensor([1, 2, 3]).softmax(0, dtype=np.float64)
    np.testing.assert_allclose(out.data.sum(), 1.0)
    assert ag.tensor([1, 2, 3]).logsumexp(0).dtype == np.float32


def test_max_over_empty_non_reduced_dim() -> None:
    values, indices = ag.tensor(np.ones((0, 3))).max(1)
    assert values.shape == (0,) and indices.shape == (0,) and indices.dtype == np.int64
