"""The scans of ``aiograd/_ops/scans.py`` (cumsum, cumprod): factory rows (gradcheck,
gradgradcheck, values and first and second derivatives against torch, float32, grad_fn names),
cumprod's exact gradients with zeros in the input up to the third order against torch, dtypes,
and PyTorch's errors, word for word."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, rng, to_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

#: Exact zeros among the factors: one per row, two in a row, a leading and a trailing one.
ZEROS = np.array([[1.5, 0.0, -2.0, 0.7], [0.0, 0.8, 0.0, -1.2], [0.9, -1.1, 1.3, 0.0]])


def with_zeros(r: np.random.Generator) -> list[np.ndarray]:
    return [ZEROS]


SPECS = [
    OpSpec("cumsum", lambda lib, x: x.cumsum(1), ((3, 4),), grad_fn="CumsumBackward0"),
    OpSpec("cumsum_dim0", lambda lib, x: lib.cumsum(x, 0), ((3, 4),)),
    OpSpec("cumsum_neg_dim_3d", lambda lib, x: x.cumsum(-2), ((2, 3, 4),)),
    OpSpec("cumsum_1d", lambda lib, x: x.cumsum(dim=0), ((5,),)),
    OpSpec("cumsum_0d", lambda lib, x: x.cumsum(0), ((),)),
    OpSpec("cumprod", lambda lib, x: x.cumprod(1), ((3, 4),), grad_fn="CumprodBackward0"),
    OpSpec("cumprod_dim0", lambda lib, x: lib.cumprod(x, 0), ((3, 4),)),
    OpSpec("cumprod_neg_dim_3d", lambda lib, x: x.cumprod(-2), ((2, 3, 4),)),
    OpSpec("cumprod_0d", lambda lib, x: x.cumprod(0), ((),)),
    OpSpec("cumprod_size_1_dim", lambda lib, x: x.cumprod(1), ((3, 1),)),
    OpSpec("cumprod_zeros", lambda lib, x: x.cumprod(1), with_zeros),
    OpSpec("cumprod_zeros_dim0", lambda lib, x: x.cumprod(0), with_zeros),
    OpSpec("cumprod_zeros_3d", lambda lib, x: x.reshape(3, 2, 2).cumprod(-1), with_zeros),
]

globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ cumprod with zeros
ZERO_INPUTS = {
    "one_zero": np.array([2.0, 0.0, 3.0, -1.5]),
    "two_zeros": np.array([2.0, 0.0, 3.0, 0.0, -1.5]),
    "leading_zero": np.array([0.0, 1.5, -2.0]),
    "trailing_zero": np.array([1.5, -2.0, 0.0]),
    "all_zeros": np.array([0.0, 0.0, 0.0]),
    "rows": ZEROS,
}


@requires_torch
@pytest.mark.parametrize("data", list(ZERO_INPUTS.values()), ids=list(ZERO_INPUTS))
async def test_cumprod_zeros_match_torch_to_third_order(data: np.ndarray) -> None:
    assert await gradcheck(lambda t: t.cumprod(-1), [ag.tensor(data, requires_grad=True)])
    assert await gradgradcheck(lambda t: t.cumprod(-1), [ag.tensor(data, requires_grad=True)])
    x, tx = ag.tensor(data, requires_grad=True), to_torch(data)
    y, ty = x.cumprod(-1), tx.cumprod(-1)
    np.testing.assert_array_equal(y.data, ty.detach().numpy())
    g = rng(3)
    for order in range(3):  # d(y . s)/dx, three times over
        s = g.standard_normal(y.shape)
        last = order == 2
        (y,) = await ag.grad((y * ag.tensor(s)).sum(), [x], create_graph=not last)
        (ty,) = torch.autograd.grad((ty * torch.tensor(s)).sum(), [tx], create_graph=not last)
        np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=1e-12, atol=1e-12)


async def test_cumprod_zero_gradient_values() -> None:
    x = ag.tensor([2.0, 0.0, 3.0], requires_grad=True)
    await x.cumprod(0).sum().backward()
    # y = [x0, x0 x1, x0 x1 x2]: d/dx0 = 1 + x1 + x1 x2, d/dx1 = x0 + x0 x2, d/dx2 = x0 x1
    np.testing.assert_array_equal(x.grad.data, [1.0, 8.0, 0.0])


# ------------------------------------------------------------------------------ dtypes
@requires_torch
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize(
    ("data", "kwargs"),
    [
        (np.array([1, 2, 3], dtype=np.int64), {}),
        (np.array([1, 2, 3], dtype=np.int32), {}),
        (np.array([True, True, False]), {}),
        (np.array([1, 2, 3], dtype=np.uint8), {}),
        (np.array([1, 2, 3]), {"dtype": "float32"}),
        (np.array([1.5, 2.5], dtype=np.float32), {"dtype": "float64"}),
    ],
    ids=["int64", "int32", "bool", "uint8", "int_to_float32", "float32_to_float64"],
)
def test_dtypes_match_torch(name: str, data: np.ndarray, kwargs: dict[str, Any]) -> None:
    ours_kw = {k: getattr(ag, v) for k, v in kwargs.items()}
    theirs_kw = {k: getattr(torch, v) for k, v in kwargs.items()}
    out = getattr(ag.tensor(data), name)(0, **ours_kw)
    tout = getattr(torch.tensor(data), name)(0, **theirs_kw)
    assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch."))
    np.testing.assert_array_equal(out.data, tout.numpy())


@requires_torch
async def test_dtype_argument_casts_before_the_scan_and_back_in_the_gradient() -> None:
    data = np.array([[0.5, 1.5, -2.0]], dtype=np.float32)
    x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    out, tout = x.cumprod(1, dtype=ag.float64), tx.cumprod(1, dtype=torch.float64)
    assert out.dtype == np.float64 and out.grad_fn.name() == tout.grad_fn.name()
    (g,) = await ag.grad(out.sum(), [x])
    (tg,) = torch.autograd.grad(tout.sum(), [tx])
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g.data, tg.numpy())


# ------------------------------------------------------------------------------ errors
ERRORS: list[tuple[str, Callable[[Any], Any], type]] = [
    ("cumsum_dim_out_of_range", lambda lib: lib.ones(2, 3).cumsum(2), IndexError),
    ("cumprod_dim_out_of_range", lambda lib: lib.ones(2, 3).cumprod(-3), IndexError),
    ("cumsum_0d_dim_1", lambda lib: lib.tensor(1.0).cumsum(1), IndexError),
]


@requires_torch
@pytest.mark.parametrize(("name", "call", "exc"), ERRORS, ids=[n for n, _, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any], exc: type) -> None:
    with pytest.raises(exc) as theirs:
        call(torch)
    with pytest.raises(exc, match=re.escape(str(theirs.value))):
        call(ag)


def test_dim_is_required() -> None:
    with pytest.raises(TypeError):
        ag.ones(2).cumsum()  # type: ignore[call-arg]
