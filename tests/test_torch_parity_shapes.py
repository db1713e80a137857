"""Shapes, views and indexing against torch: node names, strict arguments, empty-shape cases."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")


def _name(t: object) -> str | None:
    fn = t.grad_fn  # type: ignore[attr-defined]
    return None if fn is None else type(fn).__name__


def _pair(shape: tuple[int, ...], requires_grad: bool = True):  # type: ignore[no-untyped-def]
    v = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) / 7 - 0.5
    return (ag.tensor(v, dtype=ag.float64, requires_grad=requires_grad),
            torch.tensor(v, dtype=torch.float64, requires_grad=requires_grad))


# ----------------------------------------------------------------------------- node names
RESHAPES = [
    ("contiguous", lambda x: x, (5, 1), (5,)),
    ("strided", lambda x: x[::2], (5, 1), (3,)),
    ("strided_same_shape", lambda x: x[::2], (5, 1), (3, 1)),
    ("expanded", lambda x: x.expand(3, 1, 2), (1, 1, 2), (3, 2)),
    ("transposed_view", lambda x: x.t(), (2, 3), (3, 1, 2)),
    ("transposed_copy", lambda x: x.t(), (2, 3), (6,)),
    ("empty", lambda x: x[:, ::2][:0], (4, 3), (0, 2)),
]


@pytest.mark.parametrize("make, shape, target", [r[1:] for r in RESHAPES], ids=[r[0] for r in RESHAPES])
def test_reshape_node_is_torchs(make, shape, target) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    a, t = make(a), make(t)
    assert _name(a.reshape(target)) == _name(t.reshape(target))
    other = np.zeros(target)
    assert _name(a.reshape_as(ag.tensor(other))) == _name(t.reshape_as(torch.tensor(other)))


def test_reshape_alias_gradient() -> None:
    a, t = _pair((5, 1))
    ya, yt = a[::2].reshape(1, 3), t[::2].reshape(1, 3)
    assert _name(ya) == _name(yt) == "ReshapeAliasBackward0"
    w = np.arange(3.0).reshape(1, 3)
    (ga,) = aiograd.sync.grad(ya, [a], ag.tensor(w))
    (gt,) = torch.autograd.grad(yt, [t], torch.tensor(w, dtype=torch.float64))
    np.testing.assert_allclose(ga.numpy(), gt.numpy())


@pytest.mark.parametrize("shape, args", [((3, 1, 2), (0, -2)), ((2, 3, 1), (1,))])
def test_flatten_of_expanded_is_reshape_alias(shape, args) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair((1,) + shape[1:])
    assert _name(a.expand(*shape).flatten(*args)) == _name(t.expand(*shape).flatten(*args))


SUMS = [((3, 2, 0), (2, 0)), ((3, 2), (2,)), ((3, 2), (1, 2)), ((3, 2), (3, 1)), ((3, 2), ()),
        ((3, 1, 2), (1, 2)), ((3, 2, 2), (2, 1)), ((0,), (1,)), ((3, 2), (3, 2))]


@pytest.mark.parametrize("shape, size", SUMS)
def test_sum_to_size_records_sum_and_view(shape, size) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    ya, yt = a.sum_to_size(size), t.sum_to_size(size)
    assert _name(ya) == _name(yt) and tuple(ya.shape) == tuple(yt.shape)
    np.testing.assert_allclose(ya.detach().numpy(), yt.detach().numpy())
    if ya.grad_fn is not None:
        w = np.arange(float(int(np.prod(size)))).reshape(size)
        (ga,) = aiograd.sync.grad(ya, [a], ag.tensor(w))
        (gt,) = torch.autograd.grad(yt, [t], torch.tensor(w, dtype=torch.float64))
        np.testing.assert_allclose(ga.numpy(), gt.numpy())


def test_mT_of_0d_is_the_tensor_itself_with_a_warning() -> None:
    a, t = _pair(())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ya, yt = a.mT, t.mT
    assert ya is a and yt is t
    assert [str(w.message) for w in caught][0] == (
        "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases."
    )


@pytest.mark.parametrize("fn", ["movedim", "moveaxis"])
@pytest.mark.parametrize("src, dst", [([], []), (0, 0), (-1, -1)])
def test_movedim_of_0d_is_an_alias(fn, src, dst) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(())
    ya, yt = getattr(ag, fn)(a, src, dst), getattr(torch, fn)(t, src, dst)
    assert _name(ya) == _name(yt) == "AliasBackward0"
    (ga,) = aiograd.sync.grad(ya, [a], ag.tensor(2.0))
    assert ga.item() == 2.0


GETITEMS = [
    (0, slice(-3, None)), (0, slice(None, 5)), (slice(-2, None),), (slice(0, -0),), (slice(-5, None),),
    (slice(None, 2),), (slice(0, 3),), (-1, slice(-3, None), Ellipsis), (Ellipsis, None, slice(3, None)),
    (slice(None), slice(0, None, 1)), (slice(0, None, 2), 0),
]


@pytest.mark.parametrize("index", GETITEMS, ids=str)
@pytest.mark.parametrize("shape", [(2, 3), (1, 3, 0)])
def test_getitem_node_is_the_last_slice_torch_applies(index, shape) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    try:
        yt = t[index]
    except IndexError:
        pytest.skip("torch refuses this index")
    assert _name(a[index]) == _name(yt)


# ----------------------------------------------------------------------------- strict arguments
MISSING = [
    ("expand", 'expand() missing 1 required positional arguments: "size"'),
    ("flip", 'flip() missing 1 required positional arguments: "dims"'),
    ("repeat", 'repeat() missing 1 required positional arguments: "repeats"'),
    ("tile", 'tile() missing 1 required positional arguments: "dims"'),
    ("sum_to_size", 'sum_to_size() missing 1 required positional arguments: "size"'),
]


@pytest.mark.parametrize("method, message", MISSING)
@pytest.mark.parametrize("shape", [(), (3,), (2, 1)])
def test_methods_need_their_sizes(method, message, shape) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    with pytest.raises(TypeError, match=re.escape(message)):
        getattr(t, method)()
    with pytest.raises(TypeError, match=re.escape(message)):
        getattr(a, method)()
    if not shape or method in ("flip", "tile", "sum_to_size"):  # (an empty size is still a size)
        assert tuple(getattr(a, method)(()).shape) == tuple(getattr(t, method)(()).shape)


def test_squeeze_refuses_none() -> None:
    a, t = _pair((1, 3, 1))
    message = r"squeeze\(\) received an invalid combination of arguments - got \(Tensor, NoneType\)"
    with pytest.raises(TypeError, match=message):
        torch.squeeze(t, None)
    with pytest.raises(TypeError, match=message):
        ag.squeeze(a, None)
    with pytest.raises(TypeError, match="squeeze"):
        a.squeeze(dim=None)
    with pytest.raises(TypeError, match=r"squeeze_\(\) received an invalid combination"):
        a.detach().squeeze_(None)
    with pytest.raises(TypeError, match="bool"):
        a.squeeze(True)
    assert a.squeeze().shape == t.squeeze().shape
    assert a.squeeze(0).shape == t.squeeze(0).shape
    assert a.squeeze(dim=(0, 2)).shape == t.squeeze(dim=(0, 2)).shape
    assert _name(a.squeeze()) == _name(t.squeeze()) == "SqueezeBackward0"


@pytest.mark.parametrize("args", [(1,), (-2,), (0, 1), (1, 0)])
def test_flatten_of_0d_checks_dims_as_1d(args) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(())
    with pytest.raises(IndexError) as theirs:
        t.flatten(*args)
    with pytest.raises(IndexError, match=re.escape(str(theirs.value))):
        a.flatten(*args)
    assert tuple(a.flatten(-1, 0).shape) == (1,)


def test_repeat_without_repeats_on_nd_is_a_type_error() -> None:
    a, t = _pair((4,))
    with pytest.raises(TypeError, match="repeats"):
        t.repeat()
    with pytest.raises(TypeError, match="repeats"):
        a.repeat()


# ----------------------------------------------------------------------------- empty shapes
@pytest.mark.parametrize("shape, dim, sizes", [((1, 0, 1), -3, (-1,)), ((0,), 0, (-1, 2)), ((2, 0), 1, (-1,)),
                                               ((1, 0, 1), 0, (1, -1, 1))])
def test_unflatten_infers_from_the_dim_alone(shape, dim, sizes) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    ya, yt = ag.unflatten(a, dim, sizes), torch.unflatten(t, dim, sizes)
    assert tuple(ya.shape) == tuple(yt.shape) and _name(ya) == _name(yt)


@pytest.mark.parametrize("shape, dim", [((0,), -2), ((0,), 5), ((0,), 1), ((0,), 0)])
@pytest.mark.parametrize("count", [1, 2])
def test_cat_of_only_legacy_empty_tensors_ignores_dim(shape, dim, count) -> None:  # type: ignore[no-untyped-def]
    pairs = [_pair(shape) for _ in range(count)]
    ya = ag.cat([p[0] for p in pairs], dim)
    yt = torch.cat([p[1] for p in pairs], dim)
    assert tuple(ya.shape) == tuple(yt.shape) == (0,) and _name(ya) == _name(yt)
    grads = aiograd.sync.grad(ya, [p[0] for p in pairs], ag.zeros(0, dtype=ag.float64))
    assert all(tuple(g.shape) == (0,) for g in grads)
    with pytest.raises(IndexError, match=r"\[-2, 1\], but got 2"):  # (a real tensor's dims count)
        ag.cat([pairs[0][0], ag.zeros(2, 3, dtype=ag.float64)], 2)


INDEX_SELECT = [
    ((3, 0), 1, [0]), ((3, 0), 0, [-1]), ((3, 0), 0, [3]), ((0, 3), 0, [0]), ((0, 3), 1, [5]),
    ((3, 2), 0, [5]), ((3, 2), 1, [5]), ((3,), 0, [5]), ((2, 3, 4), 1, [0, 5, -1]), ((2, 3, 4), 2, [5]),
    ((2, 3, 4), -2, [9]), ((), 0, [1]), ((), 0, []), ((), 0, [5, 5]),
]


@pytest.mark.parametrize("shape, dim, index", INDEX_SELECT)
def test_index_select_errors_are_torchs(shape, dim, index) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    with pytest.raises((IndexError, RuntimeError)) as theirs:
        torch.index_select(t, dim, torch.tensor(index, dtype=torch.int64))
    message = str(theirs.value).splitlines()[0]
    with pytest.raises(type(theirs.value)) as ours:
        ag.index_select(a, dim, ag.tensor(index, dtype=ag.int64))
    assert str(ours.value) == message


@pytest.mark.parametrize("shape, pad", [((0,), [1, -1]), ((0,), [-1, 1]), ((1,), [-2, 1]), ((2,), [2, -3]),
                                        ((4, 0), [1, -1, 1, 0]), ((2, 2), [0, 0, -3, 1]), ((3,), [-4, 5])])
def test_constant_pad_crops_before_padding(shape, pad) -> None:  # type: ignore[no-untyped-def]
    a, t = _pair(shape)
    message = r"narrow\(\): length must be non-negative\."
    with pytest.raises(RuntimeError, match=message):
        torch.nn.functional.pad(t, pad)
    with pytest.raises(RuntimeError, match=message):
        ag.nn.functional.pad(a, pad)
