"""More torch.* shape, joining, scatter and search ops (aiograd/_ops/joining_more.py,
scatter_more.py, scatter_reduce.py, search.py): OpSpec rows (gradcheck, gradgradcheck, values,
gradients and second derivatives against torch, float32, grad_fn names), then explicit
comparisons with torch for the ops without a gradient, the tuple results, and errors (torch's
type and message)."""

from __future__ import annotations

import numpy as np
import pytest
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

I02 = np.array([0, 2])
IDX = np.array([[0, 0, 1], [2, 2, 2]])
MASK = np.array([[True, False, True], [False, True, True]])
SORTED = lambda r: [np.sort(r.uniform(-2, 2, (5,))), r.uniform(-2, 2, (2, 3))]  # noqa: E731
NO_GRAD = "an index result (no gradient)"
distinct = lambda r: [r.permutation(np.linspace(-2, 2, 6)).reshape(2, 3), r.permutation(np.linspace(-1.9, 1.9, 6)).reshape(2, 3)]  # noqa: E731



def _reducing(reduce, include_self):
    return lambda lib, x, s: x.scatter_reduce(1, const(lib, IDX), s, reduce, include_self=include_self)


SHAPE_MORE_SPECS = [
    # ---------------------------------------------------------------- joining
    OpSpec("hstack", lambda lib, x, y: lib.hstack([x, y]), ((2, 3), (2, 1)), grad_fn="CatBackward0"),
    OpSpec("hstack_vectors", lambda lib, x, y: lib.hstack((x, y)), ((3,), (2,))),
    OpSpec("vstack", lambda lib, x, y: lib.vstack([x, y]), ((3,), (2, 3)), grad_fn="CatBackward0"),
    OpSpec("dstack", lambda lib, x, y: lib.dstack([x, y]), ((2, 3), (2, 3)), grad_fn="CatBackward0"),
    OpSpec("column_stack", lambda lib, x, y: lib.column_stack([x, y]), ((2, 3), (2,)), grad_fn="CatBackward0"),
    OpSpec("atleast_1d", lambda lib, x: lib.atleast_1d(x.sum()), ((2, 3),), grad_fn="ViewBackward0"),
    OpSpec("atleast_2d", lambda lib, x: lib.atleast_2d(x), ((3,),), grad_fn="UnsqueezeBackward0"),
    OpSpec("atleast_3d", lambda lib, x, y: lib.atleast_3d(x, y)[1] * 2.0, ((3,), (2, 3))),
    OpSpec("broadcast_tensors", lambda lib, x, y: lib.broadcast_tensors(x, y)[1], ((2, 3), (3,)),
           grad_fn="ExpandBackward0"),
    OpSpec("tensor_split", lambda lib, x: x.tensor_split(2, 1)[0], ((2, 3),), grad_fn="SliceBackward0"),
    OpSpec("tensor_split_indices", lambda lib, x: lib.tensor_split(x, [1, 5], 1)[1], ((2, 4),)),
    OpSpec("fliplr", lambda lib, x: lib.fliplr(x), ((2, 3),), grad_fn="FlipBackward0"),
    OpSpec("flipud", lambda lib, x: x.flipud(), ((2, 3),), grad_fn="FlipBackward0"),
    OpSpec("rot90", lambda lib, x: lib.rot90(x), ((2, 3),), grad_fn="Rot90Backward0"),
    OpSpec("rot90_k3_dims", lambda lib, x: x.rot90(3, [2, 0]) ** 2, ((2, 3, 2),)),
    OpSpec("diag_embed", lambda lib, x: lib.diag_embed(x), ((2, 3),), grad_fn="DiagEmbedBackward0"),
    OpSpec("diag_embed_offset", lambda lib, x: x.diag_embed(-1, 0, 2) ** 2, ((2, 3),)),
    OpSpec("block_diag", lambda lib, x, y, z: lib.block_diag(x, y, z), ((2, 3), (3,), ()),
           grad_fn="BlockDiagBackward0"),
    OpSpec("kron", lambda lib, x, y: lib.kron(x, y), ((2, 3), (3,)), grad_fn="UnsafeViewBackward0"),
    OpSpec("kron_method", lambda lib, x, y: x.kron(y), ((2, 1, 2), (2, 3))),
    OpSpec("diff", lambda lib, x: lib.diff(x), ((2, 4),), grad_fn="SubBackward0"),
    OpSpec("diff_n2_prepend_append", lambda lib, x, p, a: x.diff(2, 0, p, a), ((3, 2), (1, 2), (2, 2))),
    OpSpec("unravel_index", lambda lib, x: lib.stack(lib.unravel_index((x.abs() * 3).long(), (2, 5))), ((4,),),
           grad=False, why=NO_GRAD),
    OpSpec("broadcast_shapes", lambda lib, x: lib.tensor(list(lib.broadcast_shapes((2, 1), (3,), x.shape))), ((1,),),
           grad=False, why="a shape (no gradient)"),
    # ---------------------------------------------------------------- constructors and search
    OpSpec("tril_indices", lambda lib, x: lib.tril_indices(3, 4, 1), ((1,),), grad=False, why=NO_GRAD),
    OpSpec("triu_indices", lambda lib, x: lib.triu_indices(4, 3, -1, dtype=lib.int32), ((1,),), grad=False, why=NO_GRAD),
    OpSpec("logspace", lambda lib, x: lib.logspace(-1, 2, 7, base=2.0, dtype=lib.float64), ((1,),), grad=False,
           why="a constructor (no gradient)"),
    OpSpec("bucketize", lambda lib, b, v: lib.bucketize(v, b, right=True), SORTED, grad=False, why=NO_GRAD),
    OpSpec("searchsorted", lambda lib, b, v: lib.searchsorted(b, v, side="right", out_int32=True), SORTED,
           grad=False, why=NO_GRAD),
    # ---------------------------------------------------------------- indexing and scatter
    OpSpec("take", lambda lib, x: lib.take(x, const(lib, np.array([[0, 5], [-1, 0]]))), ((2, 3),),
           grad_fn="TakeBackward0"),
    OpSpec("index_fill", lambda lib, x: x.index_fill(1, const(lib, I02), -1.5), ((2, 3),),
           grad_fn="IndexFillBackward0"),
    OpSpec("index_fill_tensor", lambda lib, x, v: lib.index_fill(x, 0, const(lib, np.array([1, 1])), v), ((2, 3), ()),
           grad_fn="IndexFillBackward1"),
    OpSpec("index_fill_", lambda lib, x: x.clone().index_fill_(1, const(lib, I02), 2.0), ((2, 3),),
           grad_fn="IndexFillBackward0"),
    OpSpec("index_copy", lambda lib, x, s: x.index_copy(1, const(lib, I02), s), ((2, 3), (2, 2)),
           grad_fn="IndexCopyBackward0"),
    OpSpec("index_copy_", lambda lib, x, s: x.clone().index_copy_(0, const(lib, np.array([1])), s * s), ((2, 3), (1, 3))),
    OpSpec("index_put", lambda lib, x, v: lib.index_put(x, (const(lib, np.array([1, 0])),), v), ((2, 3), (3,)),
           grad_fn="IndexPutBackward0"),
    OpSpec("index_put_accumulate", lambda lib, x, v: x.index_put((const(lib, np.array([1, 1])), const(lib, I02)), v,
                                                                  accumulate=True) ** 2, ((2, 3), (2,)), op="index_put"),
    OpSpec("index_put_", lambda lib, x, v: x.clone().index_put_((const(lib, MASK),), v), ((2, 3), ())),
    *(
        OpSpec(f"scatter_reduce_{r}{'' if inc else '_exclusive'}",
               _reducing(r, inc),
               distinct if r in ("amax", "amin") else ((2, 3), (2, 3)), op="scatter_reduce",
               grad_fn="ScatterReduceBackward0")
        for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)
    ),
    OpSpec("scatter_reduce_", lambda lib, x, s: x.clone().scatter_reduce_(0, const(lib, np.array([[1, 0, 1], [1, 1, 0]])), s, "prod"),
           ((2, 3), (2, 3))),
    OpSpec("masked_scatter", lambda lib, x, s: x.masked_scatter(const(lib, MASK), s), ((2, 3), (5,)),
           grad_fn="MaskedScatterBackward0"),
    OpSpec("masked_scatter_broadcast", lambda lib, x, s: lib.masked_scatter(x, const(lib, MASK), s) ** 2, ((3,), (2, 3)),
           op="masked_scatter"),
    OpSpec("masked_scatter_", lambda lib, x, s: x.clone().masked_scatter_(const(lib, MASK[0]), s), ((2, 3), (4, 2))),
    OpSpec("slice_scatter", lambda lib, x, s: lib.slice_scatter(x, s, 1, 1, None, 2), ((2, 5), (2, 2)),
           grad_fn="SliceScatterBackward0"),
    OpSpec("select_scatter", lambda lib, x, s: x.select_scatter(s, 0, -1), ((2, 3), (3,)),
           grad_fn="SelectScatterBackward0"),
    OpSpec("select_scatter_squared", lambda lib, x, s: lib.select_scatter(x, s * s, 1, 0) ** 2, ((2, 3), (2,))),
    OpSpec("diagonal_scatter", lambda lib, x, s: lib.diagonal_scatter(x, s, 1), ((2, 3), (2,)),
           grad_fn="DiagonalScatterBackward0"),
]

globals().update(make_op_tests(SHAPE_MORE_SPECS))


def _same(a, t):
    if isinstance(t, (tuple, list)):
        assert isinstance(a, tuple) and len(a) == len(t)
        for x, y in zip(a, t):
            _same(x, y)
        return
    assert isinstance(a, ag.Tensor)
    assert a.shape == tuple(t.shape) and a.dtype == np.dtype(str(t.dtype).removeprefix("torch."))
    np.testing.assert_allclose(a.data, t.numpy(), rtol=1e-6)


def _both(fn, *arrays):
    return fn(ag, *[ag.tensor(a) for a in arrays]), fn(torch, *[torch.as_tensor(a) for a in arrays])


@pytest.mark.parametrize("call", [
    lambda lib, x, v: lib.atleast_1d(x, v),
    lambda lib, x, v: lib.atleast_2d([x, v]),
    lambda lib, x, v: lib.atleast_3d((x,)),
    lambda lib, x, v: lib.atleast_3d(x.sum()),
    lambda lib, x, v: lib.broadcast_tensors(x, v),
    lambda lib, x, v: lib.tensor_split(x, lib.tensor(2), 1),
    lambda lib, x, v: lib.tensor_split(v, lib.tensor([1, -1])),
    lambda lib, x, v: lib.tensor_split(x, 4, 0),
    lambda lib, x, v: lib.unravel_index(lib.tensor([[-1, 7]]), (2, 3)),
    lambda lib, x, v: lib.unravel_index(lib.tensor(4), 6),
    lambda lib, x, v: lib.diff(x > 0, 1, 0),
    lambda lib, x, v: lib.block_diag(x.double(), (v > 0).int()),
    lambda lib, x, v: lib.kron(x, x.sum()),
    lambda lib, x, v: lib.searchsorted(lib.tensor([[1, 3, 5], [2, 4, 6]]), lib.tensor([[3, 6], [1, 5]])),
    lambda lib, x, v: lib.searchsorted(lib.tensor([5, 1, 7, 3]), lib.tensor([4, 7]), sorter=lib.tensor([1, 3, 0, 2])),
    lambda lib, x, v: lib.searchsorted(lib.tensor([1, 3, 5]), 3, right=True),
    lambda lib, x, v: lib.bucketize(3, lib.tensor([1, 3, 5])),
    lambda lib, x, v: lib.logspace(0, 2, 3, dtype=lib.int64),
    lambda lib, x, v: lib.logspace(lib.tensor(0.5), 2.5, 3, dtype=lib.int64),
    lambda lib, x, v: lib.logspace(0, 3, 4, 2, dtype=lib.int32),
    lambda lib, x, v: lib.logspace(0, 1, 1),
    lambda lib, x, v: lib.tril_indices(0, 3),
    lambda lib, x, v: lib.scatter_reduce(lib.arange(6).reshape(2, 3), 1, lib.tensor(IDX), lib.arange(6).reshape(2, 3) * 3, "mean"),
    lambda lib, x, v: lib.scatter_reduce(lib.arange(6).reshape(2, 3), 1, lib.tensor(IDX), lib.arange(6).reshape(2, 3), "amax", include_self=False),
    lambda lib, x, v: lib.scatter_reduce(x, 1, lib.tensor(IDX), x, "max"),
    lambda lib, x, v: lib.index_put(x, (lib.tensor(MASK),), lib.tensor(1.0)),
    lambda lib, x, v: lib.slice_scatter(lib.zeros(5), lib.ones(2), 0, -3, 10, 2),
    lambda lib, x, v: lib.take(x, lib.tensor(4)),
])
@pytest.mark.real_default_dtype
def test_values_match_torch(call):
    x = np.random.default_rng(0).uniform(-2, 2, (2, 3)).astype(np.float32)
    v = np.random.default_rng(1).uniform(-2, 2, (3,)).astype(np.float32)
    a, t = _both(call, x, v)
    _same(a, t)


def test_broadcast_shapes_and_identity():
    assert ag.broadcast_shapes((2, 1), (3,), 1) == torch.broadcast_shapes((2, 1), (3,), 1)
    assert isinstance(ag.broadcast_shapes((2, 1)), ag.Size)
    assert ag.broadcast_shapes() == torch.broadcast_shapes() == ()
    x = ag.ones(2, 3)
    assert ag.atleast_1d(x) is x and ag.broadcast_tensors(x, ag.ones(3))[0] is x
    assert ag.atleast_1d() == torch.atleast_1d() == ()


@pytest.mark.parametrize("call", [
    lambda lib, x, v: lib.hstack([]),
    lambda lib, x, v: lib.vstack(x),
    lambda lib, x, v: lib.atleast_1d(1.0),
    lambda lib, x, v: lib.broadcast_shapes((2, 3), (4,)),
    lambda lib, x, v: lib.broadcast_shapes((-1,)),
    lambda lib, x, v: lib.broadcast_tensors(x, lib.ones(4)),
    lambda lib, x, v: lib.tensor_split(x, 0),
    lambda lib, x, v: lib.tensor_split(x.sum(), 1),
    lambda lib, x, v: lib.tensor_split(x, lib.tensor([1.0])),
    lambda lib, x, v: lib.tensor_split(x, lib.tensor([[1]])),
    lambda lib, x, v: lib.fliplr(v),
    lambda lib, x, v: lib.flipud(x.sum()),
    lambda lib, x, v: lib.rot90(x, 1, [0]),
    lambda lib, x, v: lib.rot90(v),
    lambda lib, x, v: lib.rot90(x, 1, [0, 0]),
    lambda lib, x, v: lib.diag_embed(x, 0, 0, 0),
    lambda lib, x, v: lib.block_diag(x.reshape(1, 2, 3)),
    lambda lib, x, v: lib.diff(x.sum()),
    lambda lib, x, v: lib.diff(x, -1),
    lambda lib, x, v: lib.diff(x, prepend=v),
    lambda lib, x, v: lib.diff(x, prepend=1.0),
    lambda lib, x, v: lib.unravel_index(lib.tensor([1.0]), (2, 3)),
    lambda lib, x, v: lib.unravel_index(lib.tensor(1), (2, -3)),
    lambda lib, x, v: lib.tril_indices(3, 3, dtype=lib.float32),
    lambda lib, x, v: lib.triu_indices(-1, 3),
    lambda lib, x, v: lib.logspace(0, 1, -1),
    lambda lib, x, v: lib.logspace(0, 1, 3, dtype=lib.bool),
    lambda lib, x, v: lib.bucketize(v, lib.ones(2, 2)),
    lambda lib, x, v: lib.searchsorted(v, v, side="bad"),
    lambda lib, x, v: lib.searchsorted(v, v, side="left", right=True),
    lambda lib, x, v: lib.searchsorted(lib.ones(2, 3), 3.0),
    lambda lib, x, v: lib.searchsorted(lib.ones(1, 2), v),
    lambda lib, x, v: lib.searchsorted(v, v, sorter=lib.tensor([0, 1])),
    lambda lib, x, v: lib.take(x, lib.tensor([6])),
    lambda lib, x, v: lib.take(x, lib.tensor([1.0])),
    lambda lib, x, v: lib.index_fill(x, 1, lib.tensor([[0]]), 1.0),
    lambda lib, x, v: lib.index_fill(x, 1, lib.tensor([0], dtype=lib.int32), 1.0),
    lambda lib, x, v: lib.index_fill(x, 1, lib.tensor([-4]), 1.0),
    lambda lib, x, v: lib.index_fill(x, 1, lib.tensor([0]), lib.ones(1)),
    lambda lib, x, v: lib.index_copy(x, 1, lib.tensor(I02), x),
    lambda lib, x, v: lib.index_copy(x, 1, lib.tensor([3, 0]), x[:, :2]),
    lambda lib, x, v: lib.index_copy(x, 1, lib.tensor(I02), x[:, :2].double()),
    lambda lib, x, v: lib.index_copy(x, 1, lib.tensor([[0, 1]]), x[:, :2]),
    lambda lib, x, v: lib.index_put(x, (lib.tensor(I02),), v),
    lambda lib, x, v: lib.index_put(x, (lib.tensor([0, 1]),), v.double()),
    lambda lib, x, v: lib.index_put(x, (lib.tensor([0, 1]),), lib.ones(4)),
    lambda lib, x, v: lib.index_put(x, lib.tensor([0, 1]), v),
    lambda lib, x, v: lib.scatter_reduce(x, 1, lib.tensor(IDX), x, "add"),
    lambda lib, x, v: lib.scatter_reduce(x, 1, lib.tensor(IDX), x.double(), "sum"),
    lambda lib, x, v: lib.scatter_reduce(x, 1, lib.tensor(IDX) + 2, x, "sum"),
    lambda lib, x, v: lib.masked_scatter(x, lib.tensor(MASK), v),
    lambda lib, x, v: lib.masked_scatter(x, lib.tensor(MASK).int(), x),
    lambda lib, x, v: lib.masked_scatter(x, lib.tensor(MASK), x.double()),
    lambda lib, x, v: lib.slice_scatter(x, x, 1, 0, 2),
    lambda lib, x, v: lib.select_scatter(x, v[:2], 0, 0),
    lambda lib, x, v: lib.select_scatter(x, v, 0, 2),
    lambda lib, x, v: lib.diagonal_scatter(x, v),
])
@pytest.mark.real_default_dtype
def test_errors_match_torch(call):
    x = np.random.default_rng(0).uniform(-2, 2, (2, 3)).astype(np.float32)
    v = np.random.default_rng(1).uniform(-2, 2, (3,)).astype(np.float32)
    with pytest.raises(Exception) as theirs:
        call(torch, torch.as_tensor(x), torch.as_tensor(v))
    with pytest.raises(type(theirs.value)) as ours:
        call(ag, ag.tensor(x), ag.tensor(v))
    assert str(ours.value).split("\n")[0] == str(theirs.value).split("\n")[0]


async def test_in_place_variants_write_through_and_record():
    for name, args in [("index_fill_", (1, I02, 2.0)), ("index_copy_", (1, I02, "src")),
                       ("index_put_", ((I02 % 2,), "row")), ("masked_scatter_", (MASK, "src")),
                       ("scatter_reduce_", (1, IDX, "full", ["amin"]))]:
        base = np.random.default_rng(3).uniform(-2, 2, (2, 3))
        outs = []
        for lib in (ag, torch):
            x = lib.tensor(base, requires_grad=True)
            shapes = {"src": (2, 2) if name == "index_copy_" else (6,), "row": (3,), "full": (2, 3)}
            real = [a[0] if isinstance(a, list) else lib.tensor(np.ones(shapes[a]) * 0.5) if isinstance(a, str) else
                    (const(lib, a) if isinstance(a, np.ndarray) else
                     tuple(const(lib, i) for i in a) if isinstance(a, tuple) else a) for a in args]
            y = x * 1.0
            assert getattr(y, name)(*real) is y
            outs.append((y, x))
        (y, x), (ty, tx) = outs
        np.testing.assert_allclose(y.data, ty.detach().numpy())
        assert y.grad_fn.name() == ty.grad_fn.name()
        await (y * y).sum().backward()
        (ty * ty).sum().backward()
        np.testing.assert_allclose(x.grad.data, tx.grad.numpy())


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
async def test_scatter_reduce_at_edges_matches_torch(reduce, include_self):
    """NaN, infinities and zeros (one and two at a position, for prod) in values and gradients."""
    base = np.array([[np.nan, 1.0, 0.0], [np.inf, -2.0, 3.0]])
    src = np.array([[0.0, 2.0, -np.inf], [0.0, 0.0, 5.0]])
    idx = np.array([[0, 0, 1], [2, 2, 2]])
    x, s = ag.tensor(base, requires_grad=True), ag.tensor(src, requires_grad=True)
    tx, ts = torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)
    y = x.scatter_reduce(1, ag.tensor(idx), s, reduce, include_self=include_self)
    ty = tx.scatter_reduce(1, torch.tensor(idx), ts, reduce, include_self=include_self)
    np.testing.assert_array_equal(y.data, ty.detach().numpy())
    await y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad.data, tx.grad.numpy())
    np.testing.assert_array_equal(s.grad.data, ts.grad.numpy())


# ------------------------------------------------------------------------------ in place: PyTorch's checks
def _inplace_calls():
    i02, idx, mask = I02, IDX, MASK
    return {
        "index_fill_": lambda lib, t: t.index_fill_(1, const(lib, i02), 2.0),
        "index_copy_": lambda lib, t: t.index_copy_(1, const(lib, i02), lib.ones(2, 2, dtype=t.dtype)),
        "index_put_": lambda lib, t: t.index_put_((const(lib, np.array([1, 0])),), lib.ones(3, dtype=t.dtype)),
        "masked_scatter_": lambda lib, t: t.masked_scatter_(const(lib, mask), lib.ones(6, dtype=t.dtype)),
        "scatter_reduce_": lambda lib, t: t.scatter_reduce_(1, const(lib, idx), lib.ones(2, 3, dtype=t.dtype), "sum"),
    }


@pytest.mark.parametrize("name", sorted(_inplace_calls()))
def test_in_place_leaf_view_and_overlap_errors_match_torch(name):
    from test_ops_inplace_variants import LEAF, OVERLAP, VIEW_OF_LEAF, assert_same_outcome, outcome

    call = _inplace_calls()[name]
    base = np.random.default_rng(5).uniform(-2, 2, (2, 3))
    for lib in (ag, torch):
        x = lib.tensor(base, requires_grad=True)
        assert outcome(call, lib, x) == ("error", "RuntimeError", LEAF)
        stacked = lib.tensor(np.stack([base, base]), requires_grad=True)
        assert outcome(call, lib, stacked[0]) == ("error", "RuntimeError", VIEW_OF_LEAF)
    results = [outcome(call, lib, (lib.tensor(base[:1], requires_grad=True) * 1.0).expand(2, 3)) for lib in (ag, torch)]
    assert_same_outcome(*results)
    if name not in ("index_fill_", "index_put_"):  # (torch writes those two into an expanded tensor)
        assert results[0] == ("error", "RuntimeError", OVERLAP)
