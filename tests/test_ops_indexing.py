"""Indexing ops: ``tensor[index]``, index_select, gather.

Every index kind is checked by gradcheck and gradgradcheck, and, where torch is installed, its
forward values, gradients (duplicate indices accumulate), second derivatives and grad_fn names are
compared with torch's. Negative slice steps (which torch does not support) use numpy as oracle.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import requires_torch, rng, to_torch, torch

import aiograd as ag
from aiograd._ops.indexing import gather, getitem, index_select
from aiograd.testing import gradcheck, gradgradcheck

# The "list-2d" index (a list of lists) is read as a tuple with PyTorch 2.13's deprecation
# warning, by torch and by aiograd alike (test_sequence_index_is_a_tuple_with_torch_warning, in test_torch_port_inplace.py, checks it).
pytestmark = [pytest.mark.filterwarnings("ignore:Using a non-tuple sequence for multidimensional indexing"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

MASK3 = np.array([True, False, True])
MASK34 = np.array([[True, False, False, True], [False, False, False, False], [True, True, False, True]])

# (id, input shape, index, torch can run it)
CASES = [
    ("int", (3, 4), 1, True),
    ("neg-int", (3, 4), -1, True),
    ("int-pair", (3, 4), (2, -3), True),
    ("int-1d", (5,), 3, True),
    ("slice", (3, 4), slice(1, 3), True),
    ("slice-step", (5, 4), slice(None, None, 2), True),
    ("slice-neg-start", (3, 4), slice(-2, None), True),
    ("slice-full", (3, 4), slice(None), True),
    ("slice-full-tuple", (3, 4), (slice(None), slice(None)), True),
    ("slice-dim1", (3, 4), (slice(None), slice(1, 3)), True),
    ("slice-out-of-range", (3, 4), slice(1, 10), True),
    ("slice-empty", (3, 4), slice(2, 1), True),
    ("slice-neg-step", (5, 4), slice(None, None, -1), False),
    ("slice-neg-step-2d", (5, 4), (slice(None, None, -2), slice(3, 0, -1)), False),
    ("slice-neg-step-int", (5, 4), (slice(4, 0, -3), 2), False),
    ("none", (3, 4), None, True),
    ("none-int", (3, 4), (None, 1), True),
    ("int-none", (3, 4), (1, None), True),
    ("slice-none-int", (3, 4), (slice(None), None, 0), True),
    ("ellipsis", (3, 4), ..., True),
    ("ellipsis-int", (2, 3, 4), (..., 1), True),
    ("int-ellipsis-none", (2, 3, 4), (1, ..., None), True),
    ("int-slice", (3, 4), (1, slice(1, 3)), True),
    ("slice-int", (3, 4), (slice(0, 2), -1), True),
    ("list", (3, 4), [0, 2], True),
    ("list-dup", (3, 4), [2, 2, 0, 2], True),
    ("list-neg", (3, 4), [-1, 0, -1], True),
    ("list-2d", (3, 4), [[0, 1], [1, 1]], True),
    ("list-empty", (3, 4), [], True),
    ("array-dup", (3, 4), np.array([1, 1, 1]), True),
    ("array-int32", (3, 4), np.array([0, 2], dtype=np.int32), True),
    ("tensor-dup", (3, 4), ag.tensor([0, 2, 0]), True),
    ("tensor-0d", (3, 4), ag.tensor(1), True),
    ("mask-rows", (3, 4), MASK3, True),
    ("mask-full", (3, 4), MASK34, True),
    ("mask-tensor", (3, 4), ag.tensor(MASK3), True),
    ("mask-list", (3, 4), [True, False, True], True),
    ("mask-all-false", (3, 4), np.zeros(3, dtype=bool), True),
    ("mask-dim1", (3, 4), (slice(None), np.array([True, True, False, True])), True),
    ("mask-3d-trailing", (2, 3, 4), (slice(None), MASK34), True),
    ("mask-int", (3, 4), (MASK3, 1), True),
    ("mask-array", (3, 4), (MASK3, [3, 3]), True),
    ("bool-scalar", (3, 4), True, True),
    ("slice-list", (3, 4), (slice(None), [0, 0, 3]), True),
    ("list-list", (3, 4), ([0, 2, 0], [1, 1, 1]), True),
    ("list-list-broadcast", (3, 4), ([[0], [2]], [1, 1, 3]), True),
    ("list-slice", (3, 4), ([0, 0], slice(1, 3)), True),
    ("int-list-3d", (2, 3, 4), (1, [0, 0]), True),
    ("list-slice-list-3d", (2, 3, 4), ([0, 1], slice(None), [2, 2]), True),
    # torch selects the int first, so the array's dimension stays in place (numpy would move it)
    ("slice-int-slice-list-4d", (2, 3, 4, 5), (slice(None), 0, slice(None), [1, 1, 4]), True),
    ("none-list-ellipsis", (2, 3, 4), (None, [0, 0], ...), True),
    ("ellipsis-list", (2, 3, 4), (..., [1, 1]), True),
    ("slice-step-list", (5, 4), (slice(None, None, 2), [3, 0, 3]), True),
    ("tensors-tuple", (3, 4), (ag.tensor([0, 0]), ag.tensor([1, 1])), True),
    ("0d-empty-tuple", (), (), True),
    ("0d-none", (), None, True),
    ("0d-ellipsis", (), ..., True),
    ("0d-mask", (), True, True),
]

IDS = [c[0] for c in CASES]


def _input(shape, seed=0):
    return ag.tensor(rng(seed).standard_normal(shape), requires_grad=True)


def _torch_index(index):
    if isinstance(index, tuple):
        return tuple(_torch_index(i) for i in index)
    if isinstance(index, ag.Tensor):
        return torch.tensor(index.data)
    if isinstance(index, np.ndarray) or (isinstance(index, list) and index and not _nested(index)):
        return torch.tensor(index)
    # a short list holding lists is read as a tuple by torch 2.13 (deprecated, with a warning),
    # and by aiograd alike: torch gets it as it is
    return index


def _nested(index: list) -> bool:
    return any(isinstance(i, (list, tuple)) for i in index)


def _np_index(index):
    if isinstance(index, tuple):
        return tuple(_np_index(i) for i in index)
    return index.data if isinstance(index, ag.Tensor) else index


@pytest.mark.parametrize(("name", "shape", "index", "_t"), CASES, ids=IDS)
async def test_getitem_gradcheck(name, shape, index, _t):
    x = _input(shape)
    assert await gradcheck(lambda t: t[index], [x])


@pytest.mark.parametrize(("name", "shape", "index", "_t"), CASES, ids=IDS)
async def test_getitem_gradgradcheck(name, shape, index, _t):
    x = _input(shape)
    # square so that the second derivative depends on x
    assert await gradgradcheck(lambda t: t[index] * t[index], [x])


@requires_torch
@pytest.mark.parametrize(("name", "shape", "index", "torch_ok"), CASES, ids=IDS)
async def test_getitem_matches_torch(name, shape, index, torch_ok):
    x = _input(shape)
    y = x[index]
    w = rng(1).standard_normal(y.shape)
    await (y * ag.tensor(w)).sum().backward()
    if torch_ok:
        tx = to_torch(x)
        ty = tx[_torch_index(index)]
        (ty * torch.tensor(w)).sum().backward()
        assert tuple(ty.shape) == y.shape
        np.testing.assert_allclose(y.data, ty.detach().numpy())
        np.testing.assert_allclose(x.grad.data, tx.grad.numpy())
        assert y.grad_fn.name() == ty.grad_fn.name()
    else:  # numpy oracle (basic indices only: no duplicates)
        expected = x.data[_np_index(index)]
        assert y.shape == expected.shape
        np.testing.assert_array_equal(y.data, expected)
        g = np.zeros(shape)
        g[_np_index(index)] = w
        np.testing.assert_allclose(x.grad.data, g)
        assert y.grad_fn.name() in {"SliceBackward0", "SelectBackward0"}


@requires_torch
@pytest.mark.parametrize(
    ("name", "shape", "index", "torch_ok"), [c for c in CASES if c[3]], ids=[c[0] for c in CASES if c[3]]
)
async def test_getitem_double_backward_matches_torch(name, shape, index, torch_ok):
    x = _input(shape)
    y = x[index]
    w = ag.tensor(rng(1).standard_normal(y.shape))
    v = ag.tensor(rng(2).standard_normal(shape))
    (g,) = await ag.grad((y * y * y * w).sum(), x, create_graph=True)
    (h,) = await ag.grad((g * v).sum(), x)

    tx = to_torch(x)
    ty = tx[_torch_index(index)]
    (tg,) = torch.autograd.grad((ty * ty * ty * to_torch(w, False)).sum(), tx, create_graph=True)
    (th,) = torch.autograd.grad((tg * to_torch(v, False)).sum(), tx)
    np.testing.assert_allclose(g.data, tg.detach().numpy())
    np.testing.assert_allclose(h.data, th.numpy())


async def test_duplicate_indices_accumulate():
    x = ag.zeros(3, 2, requires_grad=True)
    await x[[0, 2, 0, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[3, 3], [0, 0], [1, 1]])
    x.grad = None
    await x[[0, 0], [1, 1]].sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[0, 2], [0, 0], [0, 0]])


async def test_scatter_node_names_under_create_graph():
    x = _input((3, 4))
    for index, name in [
        ([0, 0], "IndexPutBackward0"),
        (1, "SelectBackwardBackward0"),
        (slice(1, 3), "SliceBackwardBackward0"),
        (None, "SqueezeBackward1"),
    ]:
        (g,) = await ag.grad((x[index] ** 2).sum(), x, create_graph=True)
        assert g.grad_fn.name() == name
        (gg,) = await ag.grad(g.sum(), x)  # d/dx sum(scatter(2 x[index])) = 2 * counts
        counts = np.zeros((3, 4))
        np.add.at(counts, index, 1.0)
        np.testing.assert_allclose(gg.data, 2 * counts)


async def test_basic_index_is_a_view_and_advanced_a_copy():
    x = ag.tensor(np.arange(12.0).reshape(3, 4))
    assert np.shares_memory(x[1:].data, x.data)
    assert not np.shares_memory(x[[1, 2]].data, x.data)


async def test_no_grad_and_integer_inputs():
    x = ag.tensor(np.arange(12).reshape(3, 4))
    y = x[[0, 0], 1:]
    assert y.grad_fn is None and y.dtype == x.dtype
    np.testing.assert_array_equal(y.data, [[1, 2, 3], [1, 2, 3]])
    f = _input((3, 4))
    with ag.no_grad():
        assert f[0].grad_fn is None


async def test_float32_grad_keeps_dtype():
    x = ag.tensor(np.ones((3, 4), dtype=np.float32), requires_grad=True)
    await x[[0, 0], 1].sum().backward()
    assert x.grad.dtype == np.float32
    assert x.grad.data[0, 1] == 2


async def test_iteration_and_chained_indexing():
    x = _input((3, 4))
    rows = list(x)
    assert [r.grad_fn.name() for r in rows] == ["SelectBackward0"] * 3
    y = x[1:][[0, 0]][:, ::2]
    await y.sum().backward()
    expected = np.zeros((3, 4))
    expected[1, ::2] = 2
    np.testing.assert_array_equal(x.grad.data, expected)


async def test_getitem_is_the_tensor_method():
    x = _input((3, 4))
    assert type(x[1].grad_fn) is type(getitem(x, 1).grad_fn)


ERRORS = [
    ((3, 4), 5, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((3, 4), (slice(None), 7), IndexError, "index 7 is out of bounds for dimension 1 with size 4"),
    ((3, 4), [5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((3, 4), (1, 2, 3), IndexError, "too many indices for tensor of dimension 2"),
    ((3, 4), np.array([True, False]), IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ((3, 4), np.ones((3, 3), dtype=bool), IndexError,
     "The shape of the mask [3, 3] at index 1 does not match the shape of the indexed tensor [3, 4] at index 1"),
    ((3, 4), np.array([1.0]), IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    ((), 0, IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++"),
    ((), slice(0, 1), IndexError, "slice() cannot be applied to a 0-dim tensor."),
    ((3,), slice(None, None, 0), ValueError, "slice step cannot be zero"),
    ((3, 4), ([0, 1], [0, 1, 2]), IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
]


@pytest.mark.parametrize(("shape", "index", "exc", "msg"), ERRORS)
async def test_getitem_errors(shape, index, exc, msg):
    x = _input(shape)
    with pytest.raises(exc, match=re.escape(msg)):
        x[index]
    if torch is not None:
        with pytest.raises(exc, match=re.escape(msg)):
            to_torch(x)[_torch_index(index)]


# ------------------------------------------------------------------------------ index_select
SELECT_CASES = [
    ("dim0", (3, 4), 0, [2, 0]),
    ("dim1-dup", (3, 4), 1, [3, 3, 0, 3]),
    ("neg-dim", (2, 3, 4), -2, [1, 1]),
    ("0d-index", (3, 4), 1, 2),
    ("empty", (3, 4), 0, np.zeros(0, dtype=np.int64)),
    ("1d", (5,), 0, [4, 0, 4]),
]


@pytest.mark.parametrize(("name", "shape", "dim", "index"), SELECT_CASES, ids=[c[0] for c in SELECT_CASES])
async def test_index_select(name, shape, dim, index):
    x = _input(shape)
    idx = ag.tensor(index, dtype=np.int64)
    assert await gradcheck(lambda t: index_select(t, dim, idx), [x])
    assert await gradgradcheck(lambda t: t.index_select(dim, idx) ** 2, [x])
    y = x.index_select(dim, idx)
    assert y.grad_fn.name() == "IndexSelectBackward0"
    if torch is None:
        return
    w = rng(1).standard_normal(y.shape)
    await (y * ag.tensor(w)).sum().backward()
    tx = to_torch(x)
    ty = torch.index_select(tx, dim, torch.tensor(idx.data))
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.data, ty.detach().numpy())
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy())


SELECT_ERRORS = [
    ([[0]], IndexError, "index_select(): Index is supposed to be a vector"),
    ([-1], IndexError, "index out of range in self"),
    ([3], IndexError, "index out of range in self"),
    (np.array([0.0]), RuntimeError, "index_select(): Expected dtype int32 or int64 for index"),
]


@pytest.mark.parametrize(("index", "exc", "msg"), SELECT_ERRORS)
async def test_index_select_errors(index, exc, msg):
    x = _input((3, 4))
    with pytest.raises(exc, match=re.escape(msg)):
        index_select(x, 0, ag.tensor(index))
    if torch is not None:
        with pytest.raises(exc, match=re.escape(msg)):
            torch.index_select(to_torch(x), 0, torch.tensor(index))


# ------------------------------------------------------------------------------ gather
GATHER_CASES = [
    ("dim0", (3, 4), 0, [[0, 2, 2, 1], [2, 2, 0, 0]]),
    ("dim1-dup", (3, 4), 1, [[3, 3], [0, 1], [2, 2]]),
    ("neg-dim", (3, 4), -1, [[1], [1]]),
    ("3d-dim1", (2, 3, 4), 1, [[[0, 2, 2], [1, 1, 1]], [[2, 0, 1], [0, 0, 0]]]),
    ("1d", (5,), 0, [4, 4, 0]),
    ("0d", (), 0, 0),
]


@pytest.mark.parametrize(("name", "shape", "dim", "index"), GATHER_CASES, ids=[c[0] for c in GATHER_CASES])
async def test_gather(name, shape, dim, index):
    x = _input(shape)
    idx = ag.tensor(index, dtype=np.int64)
    assert await gradcheck(lambda t: gather(t, dim, idx), [x])
    assert await gradgradcheck(lambda t: t.gather(dim, idx) ** 2, [x])
    y = x.gather(dim, idx)
    if shape:
        assert y.grad_fn.name() == "GatherBackward0"
    if torch is None:
        return
    w = rng(1).standard_normal(y.shape)
    await (y * ag.tensor(w)).sum().backward()
    tx = to_torch(x)
    ty = torch.gather(tx, dim, torch.tensor(idx.data))
    (ty * torch.tensor(w)).sum().backward()
    assert tuple(ty.shape) == y.shape
    np.testing.assert_allclose(y.data, ty.detach().numpy())
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy())


GATHER_ERRORS = [
    (0, [0], RuntimeError, "Index tensor must have the same number of dimensions as input tensor"),
    (0, [[0, 0, 0, 0, 0]], RuntimeError,
     "Size does not match at dimension 1 expected index [1, 5] to be no larger than self [3, 4] apart from dimension 0"),
    (0, [[-1]], RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
    (1, [[4]], RuntimeError, "index 4 is out of bounds for dimension 1 with size 4"),
    (1, np.array([[0.0]]), RuntimeError, "gather(): Expected dtype int32/int64 for index"),
]


@pytest.mark.parametrize(("dim", "index", "exc", "msg"), GATHER_ERRORS)
async def test_gather_errors(dim, index, exc, msg):
    x = _input((3, 4))
    with pytest.raises(exc, match=re.escape(msg)):
        gather(x, dim, ag.tensor(index))
    if torch is not None:
        with pytest.raises(exc, match=re.escape(msg)):
            torch.gather(to_torch(x), dim, torch.tensor(index))
