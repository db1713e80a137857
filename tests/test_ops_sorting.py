"""Sorting and selection (``aiograd/_ops/sorting.py``: sort, argsort, topk, kthvalue, median):
factory rows (gradcheck, gradgradcheck, values and first and second derivatives against torch,
float32, grad_fn names), the ``(values, indices)`` named tuples, ties and NaN against torch, and
PyTorch's errors, word for word."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import fake_cupy
import numpy as np
import pytest
from helpers import requires_torch, to_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd._devices import _device
from aiograd._ops import torch_selection as T

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

SPECS = [
    OpSpec("sort", lambda lib, x: x.sort().values, ((3, 4),), grad_fn="SortBackward0"),
    OpSpec("sort_dim0_descending", lambda lib, x: x.sort(0, descending=True).values, ((3, 4),)),
    OpSpec("sort_stable", lambda lib, x: lib.sort(x, dim=1, stable=True)[0], ((3, 4),), grad_fn="SortBackward1"),
    OpSpec("sort_3d", lambda lib, x: x.sort(-2, True).values, ((2, 3, 4),)),
    OpSpec("sort_0d", lambda lib, x: x.sort().values, ((),)),
    OpSpec("argsort", lambda lib, x: x.argsort(), ((3, 4),), grad=False, why="an index result"),
    OpSpec("argsort_descending", lambda lib, x: lib.argsort(x, 0, descending=True), ((3, 4),), grad=False,
           why="an index result"),
    OpSpec("topk", lambda lib, x: x.topk(2).values, ((3, 4),), grad_fn="TopkBackward0"),
    OpSpec("topk_smallest_dim0", lambda lib, x: lib.topk(x, 2, dim=0, largest=False).values, ((3, 4),)),
    OpSpec("topk_all", lambda lib, x: x.topk(4, 1).values, ((3, 4),)),
    OpSpec("topk_3d", lambda lib, x: x.topk(1, -2)[0], ((2, 3, 4),)),
    OpSpec("topk_indices", lambda lib, x: x.topk(3).indices, ((3, 4),), grad=False, why="an index result"),
    OpSpec("kthvalue", lambda lib, x: x.kthvalue(2).values, ((3, 4),), grad_fn="KthvalueBackward0"),
    OpSpec("kthvalue_dim0_keepdim", lambda lib, x: lib.kthvalue(x, 3, 0, True).values, ((3, 4),)),
    OpSpec("kthvalue_0d", lambda lib, x: x.kthvalue(1).values, ((),)),
    OpSpec("median", lambda lib, x: x.median(), ((3, 4),), grad_fn="MedianBackward0"),
    OpSpec("median_even_count", lambda lib, x: lib.median(x), ((2, 3),)),
    OpSpec("median_dim", lambda lib, x: x.median(1).values, ((3, 4),), grad_fn="MedianBackward1"),
    OpSpec("median_dim0_keepdim", lambda lib, x: x.median(0, keepdim=True)[0], ((3, 5),)),
    OpSpec("median_indices", lambda lib, x: x.median(-1).indices, ((3, 5),), grad=False, why="an index result"),
]

globals().update(make_op_tests(SPECS))


# ------------------------------------------------------------------------------ result types
@requires_torch
@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.sort(1),
        lambda x: x.sort(dim=0, descending=True, stable=True),
        lambda x: x.topk(2),
        lambda x: x.topk(2, 0, largest=False),
        lambda x: x.kthvalue(2, 1, keepdim=True),
        lambda x: x.median(0),
        lambda x: x.max(1),
    ],
    ids=["sort", "sort_stable", "topk", "topk_smallest", "kthvalue", "median", "max"],
)
def test_named_tuples_as_torchs(call: Callable[[Any], Any]) -> None:
    data = np.random.default_rng(0).standard_normal((3, 4))
    out, tout = call(ag.tensor(data, requires_grad=True)), call(to_torch(data))
    assert type(out).__name__ == type(tout).__name__ and out._fields == ("values", "indices")
    assert type(out).__module__ == "aiograd.return_types"
    assert out.values is out[0] and out.indices is out[1]
    assert out.indices.dtype == np.int64 and not out.indices.requires_grad
    np.testing.assert_array_equal(out.values.data, tout.values.detach().numpy())
    np.testing.assert_array_equal(out.indices.data, tout.indices.numpy())


# ------------------------------------------------------------------------------ ties and NaN
TIES = np.array([[1.0, 3.0, 3.0, -2.0, 3.0], [3.0, 0.5, 2.0, 3.0, 0.5], [-1.0, -1.0, -2.0, -2.0, -1.0]])
NANS = np.array([[1.0, np.nan, 0.0, np.nan, -1.0], [2.0, -1.0, 0.5, 3.0, np.nan], [0.5, 0.25, 1.0, 2.0, -3.0]])

#: Indices, values and gradients are torch's also among ties: the stable sorts, median (its
#: index the stable order's too), kthvalue and topk (PyTorch's selection algorithms, ported),
#: and the median of all, which shares the gradient evenly.
EXACT_CALLS = [
    ("sort", lambda x: x.sort(1)),
    ("sort_descending", lambda x: x.sort(1, descending=True)),
    ("sort_dim0", lambda x: x.sort(0)),
    ("sort_stable_descending", lambda x: x.sort(dim=-1, descending=True, stable=True)),
    ("argsort", lambda x: x.argsort(1)),
    ("argsort_descending", lambda x: x.argsort(1, descending=True)),
    ("median", lambda x: x.median()),
    ("median_of_row", lambda x: x[2].median()),
    ("median_dim", lambda x: x.median(1)),
    ("median_dim0_keepdim", lambda x: x.median(0, keepdim=True)),
    ("kthvalue", lambda x: x.kthvalue(2, 1)),
    ("kthvalue_4th", lambda x: x.kthvalue(4, 1)),
    ("kthvalue_dim0", lambda x: x.kthvalue(2, 0)),
    ("topk", lambda x: x.topk(2, 1)),
    ("topk_smallest", lambda x: x.topk(3, 1, largest=False)),
    ("topk_all", lambda x: x.topk(5)),
    ("topk_dim0", lambda x: x.topk(2, 0)),
]


@requires_torch
@pytest.mark.parametrize("data", [TIES, NANS], ids=["ties", "nans"])
@pytest.mark.parametrize("call", [c for _, c in EXACT_CALLS], ids=[n for n, _ in EXACT_CALLS])
async def test_ties_and_nans_match_torch(call: Callable[[Any], Any], data: np.ndarray) -> None:
    x, tx = ag.tensor(data, requires_grad=True), to_torch(data)
    out, tout = call(x), call(tx)
    if isinstance(tout, tuple):
        np.testing.assert_array_equal(out.indices.data, tout.indices.numpy())
        out, tout = out.values, tout.values
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    if not tout.requires_grad:
        assert out.dtype == np.int64 and out.grad_fn is None
        return
    seed = np.arange(1.0, out.data.size + 1).reshape(out.shape)
    (gx,) = await ag.grad(out, [x], ag.tensor(seed))
    (tgx,) = torch.autograd.grad(tout, [tx], torch.tensor(seed))
    np.testing.assert_array_equal(gx.data, tgx.numpy())


@requires_torch
@pytest.mark.parametrize("seed", range(4))
def test_kthvalue_and_median_pick_torchs_index_among_many_ties(seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 4, (5, 23)).astype(np.float64)
    data[0, ::3] = np.nan
    for k in range(1, 24):
        out, tout = ag.tensor(data).kthvalue(k, 1), torch.tensor(data).kthvalue(k, 1)
        np.testing.assert_array_equal(out.indices.data, tout.indices.numpy(), err_msg=f"k={k}")
    for dim in (0, 1):
        np.testing.assert_array_equal(ag.tensor(data).median(dim).indices.data, torch.tensor(data).median(dim).indices.numpy())


@requires_torch
@pytest.mark.parametrize("n", [5, 17, 40, 130])
@pytest.mark.parametrize("largest", [True, False])
async def test_topk_picks_torchs_indices_among_many_ties(n: int, largest: bool) -> None:
    """Slices long enough for each of PyTorch's paths: insertion sort (up to 3 after
    partitioning), introselect and introsort, and partial_sort (heap select) where k * 64 <= n."""
    data = np.random.default_rng(n).integers(0, 3, (4, n)).astype(np.float64)
    data[1, ::4] = np.nan
    for k in sorted({1, 2, n // 3, n - 1, n}):
        x, tx = ag.tensor(data, requires_grad=True), to_torch(data)
        out, tout = x.topk(k, 1, largest), tx.topk(k, 1, largest)
        np.testing.assert_array_equal(out.indices.data, tout.indices.numpy(), err_msg=f"k={k}")
        np.testing.assert_array_equal(out.values.data, tout.values.detach().numpy())
        seed = np.arange(1.0, out.values.data.size + 1).reshape(out.values.shape)
        (gx,) = await ag.grad(out.values, [x], ag.tensor(seed))
        (tgx,) = torch.autograd.grad(tout.values, [tx], torch.tensor(seed))
        np.testing.assert_array_equal(gx.data, tgx.numpy())


def test_quickselect_port_finds_the_kth_smallest() -> None:
    values = [3.0, np.nan, 1.0, 2.0, 1.0, np.nan, 0.5]
    picked = [values[T.quickselect(values, k)] for k in range(len(values))]
    np.testing.assert_array_equal(picked, np.sort(values))


def test_median_picks_the_lower_middle_and_the_first_nan() -> None:
    values, indices = ag.tensor(NANS).median(1)
    assert np.isnan(values.data[:2]).all() and values.data[2] == 0.5
    np.testing.assert_array_equal(indices.data, [1, 4, 0])
    assert ag.tensor([4.0, 1.0, 3.0, 2.0]).median().item() == 2.0


async def test_median_shares_its_gradient_among_ties() -> None:
    x = ag.tensor([1.0, 2.0, 2.0, 5.0, 2.0], requires_grad=True)
    await x.median().backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 1 / 3, 1 / 3, 0.0, 1 / 3])


@requires_torch
@pytest.mark.parametrize(
    "call",
    [lambda t: t.sort(), lambda t: t.sort(descending=True), lambda t: t.argsort(), lambda t: t.topk(2),
     lambda t: t.kthvalue(2), lambda t: t.median(), lambda t: t.median(0)],
    ids=["sort", "sort_descending", "argsort", "topk", "kthvalue", "median", "median_dim"],
)
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_and_bool_inputs_match_torch(call: Callable[[Any], Any], dtype: str) -> None:
    data = np.array([3, 0, 2, 0, 1]).astype(dtype)
    try:
        tout = call(torch.tensor(data))
    except (RuntimeError, NotImplementedError) as exc:  # (bool: no kernel for some of them)
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            call(ag.tensor(data))
        return
    out = call(ag.tensor(data))
    for o, t in zip(out if isinstance(out, tuple) else [out], tout if isinstance(tout, tuple) else [tout]):
        assert o.dtype == np.dtype(str(t.dtype).removeprefix("torch.")) and not o.requires_grad
        np.testing.assert_array_equal(o.data, t.numpy())


@requires_torch
@pytest.mark.parametrize(
    "call",
    [lambda t: t.sort(), lambda t: t.topk(1), lambda t: t.kthvalue(1), lambda t: t.median(0),
     lambda t: t.median(), lambda t: t.topk(0, 0), lambda t: t.reshape(2, 0).topk(0)],
    ids=["sort", "topk", "kthvalue", "median_dim", "median", "topk_k0", "topk_empty"],
)
async def test_small_shapes_match_torch(call: Callable[[Any], Any]) -> None:
    for data in (np.array(1.25), np.array([2.0, -1.0])):
        try:
            tout = call(to_torch(data))
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=re.escape(str(exc))):
                call(ag.tensor(data, requires_grad=True))
            continue
        x, tx = ag.tensor(data, requires_grad=True), to_torch(data)
        out, tout = call(x), call(tx)
        if isinstance(tout, tuple):
            np.testing.assert_array_equal(out.indices.data, tout.indices.numpy())
            assert out.indices.shape == tuple(tout.indices.shape)
            out, tout = out.values, tout.values
        assert out.shape == tuple(tout.shape)
        np.testing.assert_array_equal(out.data, tout.detach().numpy())
        if out.data.size:
            (gx,) = await ag.grad(out.sum(), [x])
            (tgx,) = torch.autograd.grad(tout.sum(), [tx])
            np.testing.assert_array_equal(gx.data, tgx.numpy())


# ------------------------------------------------------------------------------ errors
ERRORS: list[tuple[str, Callable[[Any], Any], type]] = [
    ("sort_dim", lambda lib: lib.ones(2, 3).sort(2), IndexError),
    ("argsort_dim", lambda lib: lib.ones(2, 3).argsort(-3), IndexError),
    ("topk_k_too_large", lambda lib: lib.ones(2, 3).topk(4), RuntimeError),
    ("topk_k_negative", lambda lib: lib.ones(2, 3).topk(-1), RuntimeError),
    ("topk_0d_k2", lambda lib: lib.tensor(1.0).topk(2), RuntimeError),
    ("topk_dim", lambda lib: lib.ones(2, 3).topk(1, 2), IndexError),
    ("kthvalue_k_too_large", lambda lib: lib.ones(2, 3).kthvalue(4), RuntimeError),
    ("kthvalue_k_zero_dim0", lambda lib: lib.ones(2, 3).kthvalue(0, 0), RuntimeError),
    ("kthvalue_0d_k2", lambda lib: lib.tensor(1.0).kthvalue(2), RuntimeError),
    ("kthvalue_empty", lambda lib: lib.ones(0, 3).kthvalue(1, 0), IndexError),
    ("kthvalue_dim", lambda lib: lib.ones(2, 3).kthvalue(1, -3), IndexError),
    ("median_empty_dim", lambda lib: lib.ones(0, 3).median(0), IndexError),
    ("median_dim", lambda lib: lib.ones(2, 3).median(2), IndexError),
]


@requires_torch
@pytest.mark.parametrize(("name", "call", "exc"), ERRORS, ids=[n for n, _, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any], exc: type) -> None:
    with pytest.raises(exc) as theirs:
        call(torch)
    with pytest.raises(exc) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------------------ a CuPy-like device
@pytest.fixture
def fakecupy() -> Iterator[Any]:
    """tests/fake_cupy.py's device type (arrays that refuse to become numpy's), registered for
    one test, as tests/test_device_arrays.py does for its module."""
    _device.register_device_type("fakecupy", fake_cupy.device_type())
    try:
        yield ag.device("fakecupy", 0)
    finally:
        del _device._SOURCES["fakecupy"]
        _device._LOADED.pop("fakecupy", None)
        for key in [k for k in _device._interned if k[0] == "fakecupy"]:
            del _device._interned[key]


@pytest.mark.parametrize(
    "call",
    [lambda t: t.kthvalue(2, 1).values, lambda t: t.kthvalue(3, 0, keepdim=True).values, lambda t: t.median(1).values,
     lambda t: t.median(), lambda t: t.topk(2).values, lambda t: t.sort(0, descending=True).values],
    ids=["kthvalue", "kthvalue_dim0", "median_dim", "median", "topk", "sort"],
)
def test_ties_and_nans_on_a_cupy_like_device(fakecupy: Any, call: Callable[[Any], Any]) -> None:
    """The tie handling copies slices to the host and back: same results, held in device arrays."""
    data = np.array([[1.0, np.nan, 3.0, 3.0, 1.0], [2.0, 2.0, 0.0, 1.0, 2.0], [np.nan, 2.0, np.nan, 1.0, 0.5]])
    results = []
    for device in ("cpu", fakecupy):
        x = ag.tensor(data, requires_grad=True, device=device)
        out = call(x)
        (g,) = ag.sync.grad(out.sum(), [x])
        assert out.device == x.device and g.device == x.device
        results.append([t.data if device == "cpu" else t.data.get() for t in (out, g)])
        if device != "cpu":
            assert type(out.data) is fake_cupy.FakeArray and type(g.data) is fake_cupy.FakeArray
    for cpu, dev in zip(*results):
        np.testing.assert_array_equal(cpu, dev)
