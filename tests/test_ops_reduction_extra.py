"""The reductions of ``aiograd/_ops/reduction_extra.py`` (amax, amin, all, any, count_nonzero):
factory rows (``REDUCTION_SPECS``: gradcheck, gradgradcheck, values and derivatives against
torch, float32, grad_fn names), ties and NaN, dtypes, reductions over nothing and errors against
torch; then ``std``'s, ``norm``'s and ``argmax``'s signatures and errors against torch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, to_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def _ag(data: np.ndarray) -> ag.Tensor:
    return ag.tensor(data, requires_grad=True)


#: The factory's rows (tests/op_factory.py) for ``aiograd/_ops/reduction_extra.py``; gathered by
#: tests/test_op_registry.py and run on devices by tests/test_devices.py.
REDUCTION_SPECS = [
    OpSpec("amax", lambda lib, x: x.amax(), ((3, 4),), grad_fn="AmaxBackward0"),
    OpSpec("amax_dim", lambda lib, x: lib.amax(x, 1), ((3, 4),)),
    OpSpec("amax_dims_keepdim", lambda lib, x: x.amax((0, -1), keepdim=True), ((2, 3, 4),)),
    OpSpec("amax_0d", lambda lib, x: x.amax(0), ((),)),
    OpSpec("amin", lambda lib, x: x.amin(), ((3, 4),), grad_fn="AminBackward0"),
    OpSpec("amin_dim_neg", lambda lib, x: lib.amin(x, dim=-1, keepdim=True), ((2, 3, 4),)),
    OpSpec("all", lambda lib, x: (x > -1.5).all(), ((3, 4),), grad=False, why="a bool result"),
    OpSpec("all_dim", lambda lib, x: lib.all(x > 0, 1, keepdim=True), ((3, 4),), grad=False, why="a bool result"),
    OpSpec("any", lambda lib, x: (x > 1.5).any((0, 1)), ((3, 4),), grad=False, why="a bool result"),
    OpSpec("any_dim", lambda lib, x: x.any(0), ((3, 4),), grad=False, why="a bool result"),
    OpSpec("count_nonzero", lambda lib, x: (x > 0).count_nonzero(), ((3, 4),), grad=False, why="an integer result"),
    OpSpec("count_nonzero_dims", lambda lib, x: lib.count_nonzero(x * (x > 0), (0, 2)), ((2, 3, 4),), grad=False,
           why="an integer result"),
    # std and norm with each of torch's signatures (aiograd/_ops/convenience.py)
    OpSpec("std_positional_unbiased_keepdim", lambda lib, x: x.std(0, False, True), ((3, 4),), op="std"),
    OpSpec("std_correction_dims", lambda lib, x: lib.std(x, (0, 2), correction=2, keepdim=True), ((2, 3, 4),),
           op="std"),
    OpSpec("norm_neg_inf", lambda lib, x: x.norm(float("-inf")), ((3, 4),), op="norm"),
    OpSpec("norm_neg_inf_dim", lambda lib, x: x.norm(float("-inf"), 1, keepdim=True), ((3, 4),), op="norm"),
    OpSpec("norm_negative_p", lambda lib, x: x.norm(-1.5, dim=1), ((3, 4),), op="norm"),
    OpSpec("norm_fro_dims", lambda lib, x: lib.norm(x, "fro", dim=(0, 2)), ((2, 3, 4),), op="norm"),
    OpSpec("norm_p_none", lambda lib, x: x.norm(None, -1), ((3, 4),), op="norm"),
]

globals().update(make_op_tests(REDUCTION_SPECS))

AMAX_TIES = np.array([[1.0, 3.0, 3.0, -2.0], [3.0, 0.5, 2.0, 3.0], [-1.0, -1.0, -2.0, -2.0]])
AMAX_CALLS = [
    ("amax", lambda x: x.amax()),
    ("amin", lambda x: x.amin()),
    ("amax_dim1", lambda x: x.amax(1)),
    ("amin_dim0_keepdim", lambda x: x.amin(0, keepdim=True)),
    ("amax_dims", lambda x: x.amax((0, 1))),
    ("amax_zeros_of_both_signs", lambda x: (x * 0.0).amax(1)),
]


@requires_torch
@pytest.mark.parametrize(
    "data", [AMAX_TIES, np.array([[1.0, np.nan, 3.0, 3.0], [2.0, 2.0, 0.0, 1.0]])], ids=["ties", "nan"]
)
@pytest.mark.parametrize("call", [c for _, c in AMAX_CALLS], ids=[n for n, _ in AMAX_CALLS])
async def test_amax_amin_share_ties_as_torch(call: Callable[[Any], Any], data: np.ndarray) -> None:
    x, tx = _ag(data), to_torch(data)
    out, tout = call(x), call(tx)
    assert out.grad_fn.name() == type(tout.grad_fn).__name__
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    seed = np.arange(1.0, out.data.size + 1).reshape(out.shape)
    (gx,) = await ag.grad(out, [x], ag.tensor(seed))
    (tgx,) = torch.autograd.grad(tout, [tx], torch.tensor(seed))
    np.testing.assert_array_equal(gx.data, tgx.numpy())


async def test_amax_splits_evenly_where_max_dim_picks_one() -> None:
    x = _ag(AMAX_TIES)
    await x.amax(1).sum().backward()
    np.testing.assert_array_equal(x.grad.data[1], [0.5, 0.0, 0.0, 0.5])


@requires_torch
@pytest.mark.parametrize(
    "call",
    [lambda t: t.amax(), lambda t: t.amin(0), lambda t: t.all(), lambda t: t.any(1, keepdim=True),
     lambda t: t.all((0, 1)), lambda t: t.count_nonzero(), lambda t: t.count_nonzero(-1)],
    ids=["amax", "amin_dim", "all", "any_keepdim", "all_dims", "count_nonzero", "count_nonzero_dim"],
)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "bool"])
def test_dtypes_match_torch(call: Callable[[Any], Any], dtype: str) -> None:
    data = np.array([[0, 2, 1], [3, 0, 0]]).astype(dtype)
    out, tout = call(ag.tensor(data)), call(torch.tensor(data))
    assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch.")) and out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.data, tout.numpy())


@requires_torch
@pytest.mark.parametrize(
    "call",
    [lambda t: t.all(), lambda t: t.any(), lambda t: t.any(0), lambda t: t.all(1), lambda t: t.count_nonzero(),
     lambda t: t.count_nonzero(0), lambda t: t.amax(1), lambda t: t.amin(1, keepdim=True)],
    ids=["all", "any", "any_dim", "all_dim1", "count_nonzero", "count_nonzero_dim", "amax_dim1", "amin_dim1"],
)
def test_over_nothing_matches_torch(call: Callable[[Any], Any]) -> None:
    out, tout = call(ag.tensor(np.ones((0, 3)))), call(torch.ones(0, 3, dtype=torch.float64))
    assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch.")) and out.shape == tuple(tout.shape)
    np.testing.assert_array_equal(out.data, tout.numpy())


EXTRA_ERRORS: list[tuple[str, Callable[[Any], Any], type]] = [
    ("amax_empty", lambda lib: lib.ones(0, 3).amax(), RuntimeError),
    ("amin_empty", lambda lib: lib.ones(0, 3).amin(), RuntimeError),
    ("amax_empty_dim", lambda lib: lib.ones(0, 3).amax(0), IndexError),
    ("amax_dim", lambda lib: lib.ones(2, 3).amax(2), IndexError),
    ("amin_repeated_dim", lambda lib: lib.ones(2, 3).amin((0, -2)), RuntimeError),
    ("all_dim", lambda lib: lib.ones(2, 3).all(-3), IndexError),
    ("any_dim", lambda lib: lib.ones(2, 3).any(2), IndexError),
    ("count_nonzero_dim", lambda lib: lib.ones(2, 3).count_nonzero(5), IndexError),
    ("count_nonzero_repeated_dim", lambda lib: lib.ones(2, 3).count_nonzero((1, 1)), RuntimeError),
]


@requires_torch
@pytest.mark.parametrize(("name", "call", "exc"), EXTRA_ERRORS, ids=[n for n, _, _ in EXTRA_ERRORS])
def test_extra_errors_are_torchs(name: str, call: Callable[[Any], Any], exc: type) -> None:
    with pytest.raises(exc) as theirs:
        call(torch)
    with pytest.raises(exc) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)


@requires_torch
async def test_norm_zero_counts_non_zeros_without_a_gradient() -> None:
    data = np.array([[1.5, 0.0, -2.0], [0.0, 0.0, 3.0]])
    for call in (lambda t: t.norm(0), lambda t: t.norm(0, dim=1, keepdim=True)):
        x, tx = _ag(data), to_torch(data)
        out, tout = call(x), call(tx)
        assert out.grad_fn.name() == type(tout.grad_fn).__name__
        np.testing.assert_array_equal(out.data, tout.detach().numpy())
        assert await ag.grad(out.sum(), [x], allow_unused=True) == (None,)
        assert torch.autograd.grad(tout.sum(), [tx], allow_unused=True) == (None,)


SIGNATURE_ERRORS: list[tuple[str, Callable[[Any], Any], type]] = [
    ("norm_int_input", lambda lib: lib.tensor([1, 2]).norm(), RuntimeError),
    ("norm_narrowing_dtype", lambda lib: lib.ones(2, dtype=lib.float64).norm(dtype=lib.float32), RuntimeError),
    ("norm_bad_order", lambda lib: lib.ones(2, 3).norm("abc"), RuntimeError),
    ("norm_fro_three_dims", lambda lib: lib.ones(2, 3, 4).norm("fro", dim=(0, 1, 2)), RuntimeError),
    ("norm_repeated_dim", lambda lib: lib.ones(2, 3).norm(dim=(0, 0)), RuntimeError),
    ("norm_dim", lambda lib: lib.ones(2, 3).norm(2, 5), IndexError),
    ("argmax_bool", lambda lib: lib.tensor([True, False]).argmax(), RuntimeError),
    ("argmin_bool", lambda lib: lib.tensor([True, False]).argmin(0), RuntimeError),
    ("std_int_input", lambda lib: lib.tensor([1, 2]).std(), RuntimeError),
]


@requires_torch
@pytest.mark.parametrize(("name", "call", "exc"), SIGNATURE_ERRORS, ids=[n for n, _, _ in SIGNATURE_ERRORS])
def test_std_norm_argmax_errors_are_torchs(name: str, call: Callable[[Any], Any], exc: type) -> None:
    with pytest.raises(exc) as theirs:
        call(torch)
    with pytest.raises(exc) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)


def test_nuclear_norm_says_it_is_not_implemented() -> None:
    with pytest.raises(NotImplementedError, match="nuclear norm"):
        ag.ones(2, 3).norm("nuc")


@requires_torch
async def test_norm_dtype_computes_in_the_wider_dtype() -> None:
    data = np.array([[0.5, -1.25, 2.0], [1e-3, 3.0, -0.75]], dtype=np.float32)
    x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    out, tout = x.norm(3, 1, dtype=ag.float64), tx.norm(3, 1, dtype=torch.float64)
    assert out.dtype == np.float64 and out.grad_fn.name() == type(tout.grad_fn).__name__
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-15)
    (g,) = await ag.grad(out.sum(), [x])
    (tg,) = torch.autograd.grad(tout.sum(), [tx])
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-6)
