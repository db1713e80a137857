"""Scatter ops and index queries (aiograd/_ops/scatter.py): scatter (a tensor or a value),
scatter_add, index_add (and their in-place forms), masked_select, take_along_dim, nonzero.

The per-op tests come from the ``OpSpec`` table and tests/op_factory.py. Then: gradients with
duplicate indices (scatter's overwritten entries, scatter_add's and index_add's sums) against
torch's, the backward's reuse of gather and scatter (torch's ScatterBackward0), torch's error
messages word for word, and nonzero's int64 results.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

M = (3, 4)
UNIQUE = np.array([[0, 1, 2, 0], [1, 2, 0, 2]])  # along dim 0 of a (3, 4): no position twice
DUPLICATES = np.array([[0, 1, 1, 0], [0, 1, 2, 0]])  # (0, 0), (1, 1) and (0, 3) twice
ALONG_1 = np.array([[3, 0], [1, 1], [2, 0]])  # along dim 1, repeating in row 1
MASK = np.array([True, False, True, True])
SELECTED = np.array([2, 0, 2])  # index_add rows: row 2 twice

SPECS = [
    # ---------------------------------------------------------------- scatter
    OpSpec("scatter", lambda lib, x, s: x.scatter(0, const(lib, UNIQUE), s), (M, (2, 4)), grad_fn="ScatterBackward0"),
    OpSpec("scatter_dim1", lambda lib, x, s: lib.scatter(x, 1, const(lib, np.array([[3, 0], [1, 2], [0, 3]])), s),
           (M, (3, 2))),
    OpSpec("scatter_value", lambda lib, x: x.scatter(1, const(lib, ALONG_1), 2.5), (M,), grad_fn="ScatterBackward1"),
    OpSpec("scatter_value_keyword", lambda lib, x: x.scatter(0, const(lib, DUPLICATES), value=-1.0), (M,)),
    OpSpec("scatter_value_tensor", lambda lib, x: x.scatter(0, const(lib, UNIQUE), value=lib.tensor(0.5)), (M,)),
    OpSpec("scatter_squared", lambda lib, x, s: x.scatter(0, const(lib, UNIQUE), s * s) ** 2, (M, (2, 4))),
    # src larger than index (only its leading corner is read): torch's own backward refuses the
    # gradient of index's shape that its formula gives; aiograd pads it to src's shape
    OpSpec("scatter_large_src", lambda lib, x, s: x.scatter(0, const(lib, UNIQUE[:, :2]), s), (M, (3, 4)),
           torch=False, why="torch's engine refuses its own ScatterBackward0 gradient when src is larger than index"),
    # ---------------------------------------------------------------- scatter_add
    OpSpec("scatter_add", lambda lib, x, s: x.scatter_add(0, const(lib, DUPLICATES), s), (M, (2, 4)),
           grad_fn="ScatterAddBackward0"),
    OpSpec("scatter_add_unique", lambda lib, x, s: x.scatter_add(0, const(lib, UNIQUE), s), (M, (2, 4))),
    OpSpec("scatter_add_fn", lambda lib, x, s: lib.scatter_add(x, -1, const(lib, ALONG_1), s), (M, (3, 2))),
    OpSpec("scatter_add_squared", lambda lib, x, s: x.scatter_add(1, const(lib, ALONG_1), s ** 2) ** 2, (M, (3, 2))),
    OpSpec("scatter_add_large_src", lambda lib, x, s: x.scatter_add(1, const(lib, ALONG_1), s) * 1.0, (M, (3, 3)),
           torch=False, why="torch's engine refuses its own ScatterAddBackward0 gradient when src is larger than index"),
    # ---------------------------------------------------------------- index_add
    OpSpec("index_add", lambda lib, x, s: x.index_add(0, const(lib, SELECTED), s), (M, (3, 4)),
           grad_fn="IndexAddBackward0"),
    OpSpec("index_add_unique", lambda lib, x, s: x.index_add(1, const(lib, np.array([3, 0, 1])), s), (M, (3, 3))),
    OpSpec("index_add_alpha", lambda lib, x, s: lib.index_add(x, 1, const(lib, np.array([3, 3])), s, alpha=-0.5),
           (M, (3, 2))),
    OpSpec("index_add_squared", lambda lib, x, s: x.index_add(0, const(lib, SELECTED), s * x[:1], alpha=2.0) ** 2,
           (M, (3, 4))),
    # ---------------------------------------------------------------- masked_select
    OpSpec("masked_select", lambda lib, x: x.masked_select(const(lib, MASK)), (M,), grad_fn="MaskedSelectBackward0"),
    OpSpec("masked_select_broadcast_input", lambda lib, x: lib.masked_select(x, const(lib, np.eye(3, 4) > 0)),
           ((4,),)),
    OpSpec("masked_select_squared", lambda lib, x: x.masked_select(const(lib, MASK)) ** 2, (M,)),
    # ---------------------------------------------------------------- take_along_dim
    OpSpec("take_along_dim", lambda lib, x: lib.take_along_dim(x, const(lib, ALONG_1), 1), (M,),
           grad_fn="GatherBackward0"),
    OpSpec("take_along_dim_flat", lambda lib, x: x.take_along_dim(const(lib, np.array([0, 11, 5, 5]))), (M,)),
    OpSpec("take_along_dim_broadcast", lambda lib, x: lib.take_along_dim(x, const(lib, np.array([[2], [0]])), dim=0),
           ((3, 1),)),
    OpSpec("take_along_dim_squared", lambda lib, x: lib.take_along_dim(x, const(lib, ALONG_1), -1) ** 2, (M,)),
    # ---------------------------------------------------------------- in place (on a clone)
    OpSpec("scatter_", lambda lib, x, s: x.clone().scatter_(0, const(lib, UNIQUE), s), (M, (2, 4)),
           grad_fn="ScatterBackward0"),
    OpSpec("scatter_value_", lambda lib, x: x.clone().scatter_(1, const(lib, ALONG_1), -2.0), (M,),
           op="scatter_", grad_fn="ScatterBackward1"),
    OpSpec("scatter_add_", lambda lib, x, s: x.clone().scatter_add_(0, const(lib, DUPLICATES), s) ** 2, (M, (2, 4))),
    OpSpec("index_add_", lambda lib, x, s: x.clone().index_add_(0, const(lib, SELECTED), s, alpha=2.0), (M, (3, 4)),
           grad_fn="IndexAddBackward0"),
    # ---------------------------------------------------------------- nonzero
    OpSpec("nonzero", lambda lib, x: (x > 0).nonzero(), (M,), grad=False, why="an index result"),
    OpSpec("nonzero_tuple", lambda lib, x: lib.nonzero(x > 0, as_tuple=True)[1], (M,), grad=False,
           why="an index result"),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ duplicates
@requires_torch
@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x, s: x.scatter(0, const(lib, DUPLICATES), s),
        lambda lib, x, s: x.scatter_add(0, const(lib, DUPLICATES), s),
        lambda lib, x, s: x.scatter_add(1, const(lib, np.zeros((2, 4), dtype=np.int64)), s),
        lambda lib, x, s: x.index_add(0, const(lib, np.array([1, 1])), s, alpha=3.0),
        lambda lib, x, s: lib.take_along_dim(x, const(lib, DUPLICATES), 0) * s,
    ],
    ids=["scatter", "scatter_add", "scatter_add_all_to_one", "index_add", "take_along_dim"],
)
async def test_gradients_with_duplicate_indices_are_torchs(fn: Any) -> None:
    rng = np.random.default_rng(3)
    x, s = rng.standard_normal((3, 4)), rng.standard_normal((2, 4))
    xs = [ag.tensor(x, requires_grad=True), ag.tensor(s, requires_grad=True)]
    ts = [torch.tensor(x, requires_grad=True), torch.tensor(s, requires_grad=True)]
    out, tout = fn(ag, *xs), fn(torch, *ts)
    u = rng.standard_normal(out.shape)
    grads = await ag.grad(out, xs, ag.tensor(u))
    tgrads = torch.autograd.grad(tout, ts, torch.tensor(u))
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-12)


@requires_torch
async def test_scatter_backward_uses_gather_and_scatter_as_torchs_scatter_backward0() -> None:
    names = []
    for lib in (ag, torch):
        x = lib.tensor(np.ones((3, 4)), requires_grad=True)
        s = lib.tensor(np.arange(8.0).reshape(2, 4), requires_grad=True)
        out = x.scatter(0, lib.tensor(UNIQUE), s)
        u = lib.tensor(np.ones((3, 4)), requires_grad=True)
        if lib is ag:
            gx, gs = await ag.grad(out, [x, s], u, create_graph=True)
        else:
            gx, gs = torch.autograd.grad(out, [x, s], u, create_graph=True)
        # recorded as grad.scatter(dim, index, 0) and grad.gather(dim, index)
        names.append((gx.grad_fn.name(), gs.grad_fn.name()))
        expected = np.ones((3, 4))
        expected[UNIQUE, np.arange(4)] = 0.0
        np.testing.assert_array_equal(gx.detach().numpy(), expected)
        np.testing.assert_array_equal(gs.detach().numpy(), np.ones((2, 4)))
    assert names[0] == names[1] == ("ScatterBackward1", "GatherBackward0")


# ================================================================================ errors
I2 = np.array([[0, 1]])
F64 = np.float64

# (id, op taking (lib, m, index maker, float tensor maker), exception, message); torch's too
ERRORS = [
    ("scatter_bounds", lambda lib, m, i, f: m.scatter(0, i([[3, 0]]), 1.0), RuntimeError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("scatter_negative", lambda lib, m, i, f: m.scatter(0, i([[-1, 0]]), 1.0), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    ("scatter_dim", lambda lib, m, i, f: m.scatter(2, i([[0, 0]]), 1.0), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("scatter_index_ndim", lambda lib, m, i, f: m.scatter(0, i([0, 0]), 1.0), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    ("scatter_index_dtype", lambda lib, m, i, f: m.scatter(0, f([[0.0, 0.0]]), 1.0), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ("scatter_index_size", lambda lib, m, i, f: m.scatter(0, i([[0] * 5]), 1.0), RuntimeError,
     "Expected index [1, 5] to be no larger than self [3, 4] apart from dimension 0"),
    ("scatter_src_dtype", lambda lib, m, i, f: m.scatter(0, i([[0, 0]]), f([[1.0, 2.0]]).float()), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter_add_src_size", lambda lib, m, i, f: m.scatter_add(0, i([[0, 0]]), f([[1.0]])), RuntimeError,
     "Expected index [1, 2] to be no larger than self [3, 4] apart from dimension 0 and to be no larger size than src [1, 1]"),
    ("scatter_add_bounds", lambda lib, m, i, f: m.scatter_add(0, i([[5, 0]]), f([[1.0, 1.0]])), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("scatter_add_dtype", lambda lib, m, i, f: m.scatter_add(0, f([[0.0, 1.0]]), f([[1.0, 1.0]])), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ("index_add_bounds", lambda lib, m, i, f: m.index_add(0, i([0, 5]), f(np.ones((2, 4)))), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("index_add_negative", lambda lib, m, i, f: m.index_add(0, i([-1, 1]), f(np.ones((2, 4)))), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    ("index_add_shape", lambda lib, m, i, f: m.index_add(0, i([0, 1]), f(np.ones((2, 3)))), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
     "[3, 4] source.shape = [2, 3]"),
    ("index_add_count", lambda lib, m, i, f: m.index_add(0, i([0, 1]), f(np.ones((3, 4)))), RuntimeError,
     "index_add_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 0"),
    ("index_add_vector", lambda lib, m, i, f: m.index_add(0, i([[0, 1]]), f(np.ones((2, 4)))), IndexError,
     "index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 2]"),
    ("index_add_index_dtype", lambda lib, m, i, f: m.index_add(0, f([0.0, 1.0]), f(np.ones((2, 4)))), RuntimeError,
     "index_add_(): Expected dtype int32/int64 for index but got: Double"),
    ("index_add_dtype", lambda lib, m, i, f: m.index_add(0, i([0, 1]), f(np.ones((2, 4))).float()), RuntimeError,
     "index_add_(): self (Double) and source (Float) must have the same scalar type"),
    ("index_add_dim", lambda lib, m, i, f: m.index_add(2, i([0, 1]), f(np.ones((2, 4)))), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("masked_select_dtype", lambda lib, m, i, f: m.masked_select(i([1, 0, 1, 1])), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    ("masked_select_shape", lambda lib, m, i, f: m.masked_select(i([1, 0, 1]) > 0), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("take_along_dim_broadcast", lambda lib, m, i, f: lib.take_along_dim(m, i([[0, 1]]), 0), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1"),
    ("take_along_dim_ndim", lambda lib, m, i, f: lib.take_along_dim(m, i([0, 1]), 1), RuntimeError,
     "torch.take_along_dim(): input and indices should have the same number of dimensions, but got 2 "
     "dimensions for input, and 1 dimensions for indices"),
    ("take_along_dim_dtype", lambda lib, m, i, f: lib.take_along_dim(m, f([[0.0, 1.0]]), 0), RuntimeError,
     "torch.take_along_dim(): dtype of indices should be Long but got Double"),
    ("take_along_dim_flat_dtype", lambda lib, m, i, f: lib.take_along_dim(m, f([1.0])), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    ("take_along_dim_dim", lambda lib, m, i, f: lib.take_along_dim(m, i([[1]]), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
]


@requires_torch
@pytest.mark.parametrize(("op", "exc", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_messages_are_torchs(op: Any, exc: Any, message: str) -> None:
    for lib in (ag, torch):
        m = lib.tensor(np.zeros((3, 4)), requires_grad=True)
        index = lambda v, lib=lib: lib.tensor(np.asarray(v, dtype=np.int64))  # noqa: E731
        floats = lambda v, lib=lib: lib.tensor(np.asarray(v, dtype=F64))  # noqa: E731
        with pytest.raises(exc, match=f"^{re.escape(message)}$"):
            op(lib, m, index, floats)


# ================================================================================ values
@requires_torch
def test_nonzero_is_int64_as_torchs() -> None:
    for a in (np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]), np.array(3.0), np.array(0.0), np.zeros((2, 0)),
              np.arange(24).reshape(2, 3, 4) % 3):
        out, tout = ag.nonzero(ag.tensor(a)), torch.nonzero(torch.tensor(a))
        assert out.dtype == np.int64 and out.shape == tuple(tout.shape)
        np.testing.assert_array_equal(out.data, tout.numpy())
        parts, tparts = ag.tensor(a).nonzero(as_tuple=True), torch.tensor(a).nonzero(as_tuple=True)
        assert len(parts) == len(tparts)
        for p, tp in zip(parts, tparts):
            assert p.dtype == np.int64
            np.testing.assert_array_equal(p.data, tp.numpy())


def test_nonzero_of_a_tensor_that_requires_grad_has_no_grad() -> None:
    out = ag.tensor([1.0, 0.0, 2.0], requires_grad=True).nonzero()
    assert out.grad_fn is None and not out.requires_grad
    assert out.tolist() == [[0], [2]]


@requires_torch
def test_scatter_values_and_dtypes_match_torch() -> None:
    a = np.arange(12).reshape(3, 4)
    for fn in (lambda lib, t: t.scatter(0, lib.tensor(UNIQUE), lib.tensor(-a[:2])),
               lambda lib, t: t.scatter(1, lib.tensor(ALONG_1), 2.7),  # a float value into int64: cast
               lambda lib, t: t.scatter_add(0, lib.tensor(DUPLICATES), lib.tensor(a[:2])),
               lambda lib, t: t.index_add(0, lib.tensor(SELECTED), lib.tensor(a), alpha=2),
               lambda lib, t: t.masked_select(lib.tensor(a % 2 == 0)),
               lambda lib, t: lib.take_along_dim(t, lib.tensor(ALONG_1), 1)):
        out, tout = fn(ag, ag.tensor(a)), fn(torch, torch.tensor(a))
        assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch."))
        np.testing.assert_array_equal(out.data, tout.numpy())


@requires_torch
async def test_zero_dim_scatter_and_index_add_as_torchs() -> None:
    for fn in (lambda lib, x, s: x.scatter(0, lib.tensor(0), s), lambda lib, x, s: x.scatter_add(0, lib.tensor([0]), s),
               lambda lib, x, s: x.index_add(0, lib.tensor([0]), s, alpha=2.0),
               lambda lib, x, s: x.masked_select(lib.tensor(True)) * s):
        xs = [ag.tensor(1.5, requires_grad=True), ag.tensor(-2.0, requires_grad=True)]
        ts = [torch.tensor(1.5, dtype=torch.float64, requires_grad=True),
              torch.tensor(-2.0, dtype=torch.float64, requires_grad=True)]
        out, tout = fn(ag, *xs), fn(torch, *ts)
        np.testing.assert_array_equal(out.data, tout.detach().numpy())
        grads = await ag.grad(out.sum(), xs)
        tgrads = torch.autograd.grad(tout.sum(), ts)
        for g, tg in zip(grads, tgrads):
            np.testing.assert_array_equal(g.data, tg.numpy())


def test_scatter_reduce_argument_is_left_out() -> None:
    # torch deprecates scatter(..., reduce=) (use scatter_reduce) and has no gradient for it
    with pytest.raises(TypeError):
        ag.zeros(3).scatter(0, np.array([0]), 1.0, reduce="add")  # type: ignore[call-arg]


# ================================================================================ saved tensors
SAVING = {  # op -> whether torch's node saves the input itself (not only the index or mask)
    "scatter": (lambda lib, y: y.scatter(0, lib.tensor(UNIQUE), 1.0), False),
    "scatter_src": (lambda lib, y: y.scatter(0, lib.tensor(UNIQUE), y[:2] * 2.0), False),
    "scatter_add": (lambda lib, y: y.scatter_add(0, lib.tensor(DUPLICATES), y[:2] * 2.0), False),
    "index_add": (lambda lib, y: y.index_add(0, lib.tensor(SELECTED), y * 2.0), False),
    "masked_select": (lambda lib, y: y.masked_select(lib.tensor(MASK)), True),
}


@requires_torch
@pytest.mark.parametrize("name", list(SAVING))
async def test_saved_index_and_input_behave_as_torchs(name: str) -> None:
    """A second backward without retain_graph raises (the node saved its index), and where torch's
    node saves its input, an in-place change of that input before the backward raises too."""
    fn, saves_input = SAVING[name]
    messages = []
    for lib in (ag, torch):
        grad = ag.grad if lib is ag else torch.autograd.grad
        x = lib.tensor(np.ones((3, 4)), requires_grad=True)
        total = fn(lib, x.clone()).sum()
        result = grad(total, [x])
        if lib is ag:
            await result
        with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time") as info:
            result = grad(total, [x])
            if lib is ag:
                await result
        messages.append(str(info.value))
        y = x.clone()
        out = fn(lib, y)
        y.add_(1.0)
        if saves_input:
            with pytest.raises(RuntimeError, match="^one of the variables needed for gradient computation"):
                result = grad(out.sum(), [x])
                if lib is ag:
                    await result
        else:
            result = grad(out.sum(), [x])
            if lib is ag:
                await result
    assert messages[0] == messages[1]


# ================================================================================ in place
IN_PLACE = {
    "scatter_": lambda lib, v, s: v.scatter_(0, lib.tensor(np.array([[1, 0], [0, 1]])), s),
    "scatter_value_": lambda lib, v, s: v.scatter_(1, lib.tensor(np.array([[1, 0], [0, 1]])), 5.0),
    "scatter_add_": lambda lib, v, s: v.scatter_add_(0, lib.tensor(np.array([[1, 1]])), s[:1]),
    "index_add_": lambda lib, v, s: v.index_add_(1, lib.tensor(np.array([0, 0])), s, alpha=-1.0),
    "tril_": lambda lib, v, s: v.tril_(),
    "triu_": lambda lib, v, s: v.triu_(1),
}


@requires_torch
@pytest.mark.parametrize("name", list(IN_PLACE))
async def test_in_place_on_a_view_rebases_the_base_as_in_torch(name: str) -> None:
    fn = IN_PLACE[name]
    a, b = np.random.default_rng(4).standard_normal((3, 4)), np.random.default_rng(5).standard_normal((2, 2))
    results = []
    for lib in (ag, torch):
        x, s = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        base = x * 1.0
        view = base[1:, 1:3]  # a (2, 2) view
        out = fn(lib, view, s)
        assert out is view and base._version == view._version == 1
        names = (base.grad_fn.name().removeprefix("torch::autograd::"), view.grad_fn.name())
        u = lib.tensor(np.arange(12.0).reshape(3, 4))
        if lib is ag:
            grads = await ag.grad(base, [x, s], u, allow_unused=True)
        else:
            grads = torch.autograd.grad(base, [x, s], u, allow_unused=True)
        results.append((base.detach().numpy().copy(), names, [None if g is None else g.numpy() for g in grads]))
    (value, names, grads), (tvalue, tnames, tgrads) = results
    np.testing.assert_array_equal(value, tvalue)
    assert names == tnames == ("CopySlices", "AsStridedBackward0")
    for g, tg in zip(grads, tgrads):
        assert (g is None) == (tg is None)
        if g is not None:
            np.testing.assert_allclose(g, tg, rtol=1e-14)


@requires_torch
@pytest.mark.parametrize("name", list(IN_PLACE))
def test_in_place_on_a_leaf_refuses_as_torch(name: str) -> None:
    for lib in (ag, torch):
        x = lib.tensor(np.zeros((2, 2)), requires_grad=True)
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place operation.$"):
            IN_PLACE[name](lib, x, lib.tensor(np.ones((2, 2))))
        with torch.no_grad() if lib is torch else ag.no_grad():
            IN_PLACE[name](lib, x, lib.tensor(np.ones((2, 2))))
        assert x._version == 1
