"""Joining ops: cat (concat), stack, split, chunk, unbind.

gradcheck and gradgradcheck for every case and, where torch is installed, forward values,
gradients, grad_fn names, output_nr and error messages compared with torch's.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import rng, to_torch, torch

import aiograd as ag
from aiograd._ops.joining import cat, chunk, concat, split, stack, unbind
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def _t(shape, seed=0, requires_grad=True, dtype=np.float64):
    return ag.tensor(rng(seed).standard_normal(shape).astype(dtype), requires_grad=requires_grad)


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


async def _compare_with_torch(fn, torch_fn, inputs):
    """Forward values, shapes, grad_fn names and the gradients of a random weighting."""
    outs = _as_tuple(fn(*inputs))
    if torch is None:
        return outs
    t_inputs = [to_torch(x, x.requires_grad) for x in inputs]
    t_outs = _as_tuple(torch_fn(*t_inputs))
    assert len(outs) == len(t_outs)
    loss, t_loss = 0, 0
    for k, (o, t) in enumerate(zip(outs, t_outs)):
        assert o.shape == tuple(t.shape)
        assert o.dtype == np.dtype(str(t.dtype).removeprefix("torch."))
        np.testing.assert_array_equal(o.data, t.detach().numpy())
        if t.grad_fn is not None:
            assert o.grad_fn.name() == t.grad_fn.name()
            assert o.output_nr == t.output_nr
        w = rng(10 + k).standard_normal(o.shape)
        loss = loss + (o * ag.tensor(w.astype(o.dtype))).sum()
        t_loss = t_loss + (t * torch.tensor(w.astype(o.dtype))).sum()
    await loss.backward()
    t_loss.backward()
    for x, t in zip(inputs, t_inputs):
        if x.requires_grad:
            assert x.grad.dtype == x.dtype
            np.testing.assert_allclose(x.grad.data, t.grad.numpy(), rtol=1e-6)
    return outs


# ------------------------------------------------------------------------------ cat
CAT_CASES = [
    ("dim0", [(2, 3), (4, 3)], 0),
    ("dim1-three", [(2, 3), (2, 1), (2, 2)], 1),
    ("neg-dim", [(2, 3), (2, 1), (2, 2)], -1),
    ("3d-dim1", [(2, 1, 3), (2, 2, 3)], 1),
    ("single", [(3, 2)], 0),
    ("1d", [(3,), (2,)], 0),
    ("zero-size", [(2, 0), (2, 3)], 1),
]


def _cat_inputs(shapes, mask=None):
    return [_t(s, seed=i, requires_grad=mask is None or mask[i]) for i, s in enumerate(shapes)]


@pytest.mark.parametrize(("name", "shapes", "dim"), CAT_CASES, ids=[c[0] for c in CAT_CASES])
async def test_cat(name, shapes, dim):
    xs = _cat_inputs(shapes)
    fn = lambda *ts: cat(ts, dim)
    assert await gradcheck(fn, xs)
    assert await gradgradcheck(lambda *ts: cat(ts, dim) ** 2, xs)
    out = await _compare_with_torch(fn, lambda *ts: torch.cat(ts, dim), xs)
    assert out[0].grad_fn.name() == "CatBackward0"


async def test_cat_mixed_with_non_grad_tensors():
    xs = _cat_inputs([(2, 3), (1, 3), (3, 3)], mask=[False, True, False])
    y = concat(xs, 0)
    assert [f is None for f, _ in y.grad_fn.next_functions] == [True, False, True]
    assert await gradcheck(lambda *ts: cat(ts), xs)
    assert await gradgradcheck(lambda *ts: cat(ts) ** 2, xs)
    await _compare_with_torch(lambda *ts: cat(ts), lambda *ts: torch.cat(ts), xs)


async def test_cat_promotes_dtype_and_casts_grads_back():
    a = _t((2, 2), dtype=np.float32)
    b = _t((1, 2), seed=1)
    y = await _compare_with_torch(lambda *ts: cat(ts), lambda *ts: torch.cat(ts), [a, b])
    assert y[0].dtype == np.float64
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64


async def test_cat_skips_legacy_empty_1d_tensors():
    a, e = _t((2, 3)), _t((0,), seed=1)
    y = cat([e, a, e])
    assert y.shape == (2, 3)
    await (y * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.data, np.full((2, 3), 2.0))
    assert e.grad.shape == (0,)


async def test_cat_of_non_leaves_and_reused_input():
    x = _t((2, 3))
    y = cat([x * 2, x, x[:1]], 0)
    await y.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[4, 4, 4], [3, 3, 3]])


# ------------------------------------------------------------------------------ stack
STACK_CASES = [
    ("dim0", (2, 3), 3, 0),
    ("dim1", (2, 3), 2, 1),
    ("dim-last", (2, 3), 2, 2),
    ("neg-dim", (2, 3), 3, -1),
    ("neg-dim-first", (2, 3), 2, -3),
    ("0d", (), 3, 0),
    ("single", (4,), 1, 0),
]


@pytest.mark.parametrize(("name", "shape", "n", "dim"), STACK_CASES, ids=[c[0] for c in STACK_CASES])
async def test_stack(name, shape, n, dim):
    xs = [_t(shape, seed=i) for i in range(n)]
    fn = lambda *ts: stack(ts, dim)
    assert await gradcheck(fn, xs)
    assert await gradgradcheck(lambda *ts: stack(ts, dim) ** 2, xs)
    out = await _compare_with_torch(fn, lambda *ts: torch.stack(ts, dim), xs)
    assert out[0].grad_fn.name() == "StackBackward0"


async def test_stack_mixed_and_promoted():
    xs = [_t((2,), 0, False), _t((2,), 1, dtype=np.float32), _t((2,), 2)]
    y = await _compare_with_torch(lambda *ts: stack(ts), lambda *ts: torch.stack(ts), xs)
    assert y[0].dtype == np.float64 and xs[1].grad.dtype == np.float32
    assert xs[0].grad is None
    xs[1] = _t((2,), 1)  # float32 cannot resolve gradgradcheck's eps
    assert await gradgradcheck(lambda *ts: stack(ts, 1) ** 2, xs)


# ------------------------------------------------------------------------------ split, chunk, unbind
SPLIT_CASES = [
    # (id, shape, op, args, torch name)
    ("split-even", (6, 2), "split", (2, 0), "SplitBackward0"),
    ("split-uneven", (7, 2), "split", (3, 0), "SplitBackward0"),
    ("split-bigger", (5,), "split", (7, 0), "SplitBackward0"),
    ("split-dim1", (2, 5), "split", (2, 1), "SplitBackward0"),
    ("split-neg-dim", (2, 3, 5), "split", (2, -1), "SplitBackward0"),
    ("split-empty", (0, 2), "split", (2, 0), "SplitBackward0"),
    ("sizes", (6, 2), "split", ([1, 3, 2], 0), "SplitWithSizesBackward0"),
    ("sizes-with-zero", (2, 4), "split", ([0, 3, 0, 1], -1), "SplitWithSizesBackward0"),
    ("sizes-tuple", (4, 3), "split", ((3, 1), -2), "SplitWithSizesBackward0"),
    ("chunk-even", (6, 2), "chunk", (3, 0), "SplitBackward0"),
    ("chunk-uneven", (5,), "chunk", (4, 0), "SplitBackward0"),
    ("chunk-more-than-size", (2, 3), "chunk", (5, 1), "SplitBackward0"),
    ("chunk-neg-dim", (3, 7), "chunk", (3, -1), "SplitBackward0"),
    ("chunk-empty", (0, 3), "chunk", (3, 0), "SplitWithSizesBackward0"),
    ("unbind", (3, 2), "unbind", (0,), "UnbindBackward0"),
    ("unbind-dim1", (2, 3, 2), "unbind", (1,), "UnbindBackward0"),
    ("unbind-neg-dim", (2, 4), "unbind", (-1,), "UnbindBackward0"),
    ("unbind-1d", (3,), "unbind", (0,), "UnbindBackward0"),
]
OPS = {"split": split, "chunk": chunk, "unbind": unbind}
SPLIT_IDS = [c[0] for c in SPLIT_CASES]
MULTI_CASES = [c for c in SPLIT_CASES if len(OPS[c[2]](ag.zeros(*c[1]), *c[3])) >= 2]


def _split_fn(op, args):
    return lambda t: OPS[op](t, *args)


@pytest.mark.parametrize(("name", "shape", "op", "args", "node"), SPLIT_CASES, ids=SPLIT_IDS)
async def test_split_family(name, shape, op, args, node):
    x = _t(shape)
    fn = _split_fn(op, args)
    outs = fn(x)
    assert isinstance(outs, tuple)
    assert all(o.grad_fn is outs[0].grad_fn for o in outs)
    assert [o.output_nr for o in outs] == list(range(len(outs)))
    if outs:
        assert outs[0].grad_fn.name() == node
        assert outs[0].grad_fn.num_inputs == len(outs)
    method = getattr(x, op)(*args)
    assert [o.shape for o in method] == [o.shape for o in outs]
    assert await gradcheck(fn, [x])
    assert await gradgradcheck(lambda t: tuple(o * o for o in fn(t)), [x])
    if torch is not None:
        await _compare_with_torch(fn, lambda t: getattr(t, op)(*args), [x])


@pytest.mark.parametrize(("name", "shape", "op", "args", "node"), MULTI_CASES, ids=[c[0] for c in MULTI_CASES])
async def test_split_family_backward_through_some_outputs(name, shape, op, args, node):
    """Outputs that get no gradient count as zeros (also in the double backward)."""
    x = _t(shape)
    fn = _split_fn(op, args)
    n = len(fn(x))
    keep = [n - 1] if n == 2 else [0, n - 1]

    def some(t):
        outs = fn(t)
        return tuple(outs[k] * outs[k] for k in keep)

    assert await gradcheck(some, [x])
    assert await gradgradcheck(some, [x])
    if torch is not None:
        await _compare_with_torch(some, lambda t: tuple(getattr(t, op)(*args)[k] * getattr(t, op)(*args)[k] for k in keep), [x])


async def test_split_middle_output_gradient():
    x = _t((5, 2))
    a, b, c = split(x, 2)
    await (b * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[0, 0], [0, 0], [3, 3], [3, 3], [0, 0]])
    x.grad = None
    a, b, c = split(x, 2)
    await (a.sum() * 2 + c.sum() * 5 + a.sum()).backward()  # a reused: its grads accumulate
    np.testing.assert_array_equal(x.grad.data, [[3, 3], [3, 3], [0, 0], [0, 0], [5, 5]])


async def test_unbind_outputs_feed_separate_paths():
    x = _t((3, 2))
    r0, r1, r2 = x.unbind()
    y = stack([r2, r0 * 2])
    await y.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [[2, 2], [0, 0], [1, 1]])


async def test_split_create_graph_names():
    x = _t((4,))
    a, b = split(x, 2)
    (g,) = await ag.grad((b * b).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "CatBackward0"
    (g2,) = await ag.grad((stack([x, x]) ** 2).sum(), x, create_graph=True)
    assert g2.grad_fn.name() == "AddBackward0"  # the two stack slices accumulate


async def test_no_grad_inputs_record_nothing():
    x = _t((4, 2), requires_grad=False)
    assert all(o.grad_fn is None for o in split(x, 2))
    assert cat([x, x]).grad_fn is None and stack([x, x]).grad_fn is None
    with ag.no_grad():
        y = _t((4, 2))
        assert all(o.grad_fn is None for o in y.unbind())
        assert cat([y, y]).grad_fn is None
    i = ag.tensor([[1, 2], [3, 4]])
    assert [o.tolist() for o in i.chunk(2)] == [[[1, 2]], [[3, 4]]]


# ------------------------------------------------------------------------------ errors
A, B, C, S = (2, 3), (3, 3), (2,), ()


def _errors():
    return [
        ("cat-empty", lambda m: m.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
        ("cat-sizes", lambda m: m.cat([_ts(m, A), _ts(m, B)], 1), RuntimeError,
         "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list."),
        ("cat-ndim", lambda m: m.cat([_ts(m, A), _ts(m, C)]), RuntimeError,
         "Tensors must have same number of dimensions: got 2 and 1"),
        ("cat-0d", lambda m: m.cat([_ts(m, A), _ts(m, S)]), RuntimeError,
         "zero-dimensional tensor (at position 1) cannot be concatenated"),
        ("cat-dim", lambda m: m.cat([_ts(m, A), _ts(m, A)], 2), IndexError,
         "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        ("cat-non-tensor", lambda m: m.cat([_ts(m, A), 1]), TypeError,
         "expected Tensor as element 1 in argument 0, but got int"),
        ("stack-empty", lambda m: m.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
        ("stack-sizes", lambda m: m.stack([_ts(m, A), _ts(m, B)]), RuntimeError,
         "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 3] at entry 1"),
        ("stack-dim", lambda m: m.stack([_ts(m, A), _ts(m, A)], 3), IndexError,
         "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
        ("split-neg", lambda m: _ts(m, A).split(-1), RuntimeError,
         "split expects split_size be non-negative, but got split_size=-1"),
        ("split-zero", lambda m: _ts(m, A).split(0), RuntimeError,
         "split_size can only be 0 if dimension size is 0, but got dimension size of 2"),
        ("split-sum", lambda m: _ts(m, A).split([1, 1], 1), RuntimeError,
         "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 1), but got split_sizes=[1, 1]"),
        ("split-neg-size", lambda m: _ts(m, A).split([4, -1], 1), RuntimeError,
         "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[4, -1]"),
        ("split-0d", lambda m: _ts(m, S).split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
        ("split-dim", lambda m: _ts(m, A).split(1, 5), IndexError,
         "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
        ("chunk-zero", lambda m: _ts(m, A).chunk(0), RuntimeError,
         "chunk expects `chunks` to be greater than 0, got: 0"),
        ("chunk-0d", lambda m: _ts(m, S).chunk(1), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
        ("unbind-0d", lambda m: _ts(m, S).unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
        ("unbind-dim", lambda m: _ts(m, A).unbind(2), IndexError,
         "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ]


def _ts(m, shape):
    return m.zeros(shape)


class _Ag:
    """The aiograd functions under the names the error table calls."""

    cat = staticmethod(cat)
    stack = staticmethod(stack)
    zeros = staticmethod(lambda shape: ag.zeros(*shape))


ERRORS = _errors()


@pytest.mark.parametrize(("name", "call", "exc", "msg"), ERRORS, ids=[e[0] for e in ERRORS])
async def test_errors(name, call, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        call(_Ag)
    if torch is not None:
        with pytest.raises(exc, match=re.escape(msg)):
            call(torch)
