"""In-place and indexing ops against PyTorch, second part: ``take_along_dim``'s index wrapping,
``index_add``'s bounds checks, ``setitem`` (dtypes, leading 1s, which slices are "full"),
``copy_``, ``clamp_``'s argument binding, ``pow_`` of integers and Bool, the Bool scans and
``tril_``/``triu_`` of an expanded view. Every case runs in both libraries, dtypes given."""

from __future__ import annotations

import re

import numpy as np
import pytest

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")

# torch's default dtype is float32: aiograd's too here (a number exponent makes a Float result)
pytestmark = pytest.mark.real_default_dtype


def _bool(lib):
    return torch.bool if lib is torch else ag.bool_


def _outcome(fn):
    """(values, dtype name) of what ``fn`` returns, or (exception type, message)."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return type(e), str(e).replace("torch.", "").replace("aiograd.", "")
    dtype = str(r.dtype).replace("torch.", "").replace("bool_", "bool")
    return repr(np.asarray(r.tolist()).tolist()), dtype  # (repr: NaN equals NaN)


def _same(make, *args) -> None:
    """``make(lib, *args)`` gives the same values and dtype, or the same error, in both libraries."""
    assert _outcome(lambda: make(ag, *args)) == _outcome(lambda: make(torch, *args)), args


# ------------------------------------------------------------------------------ take_along_dim
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_take_along_dim_wraps_indices_modulo_the_dim(dim: int) -> None:
    idx = [[5, -7, 100], [-1, 0, 2]]
    values = np.arange(6.0).reshape(2, 3)
    _same(lambda lib: lib.take_along_dim(lib.tensor(values, dtype=lib.float64), lib.tensor(idx), dim))


def test_take_along_dim_negative_index_gradient() -> None:
    grads = []
    for lib in (torch, ag):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        y = lib.take_along_dim(x, lib.tensor([-1, 5, -4]), 0)
        assert y.tolist() == [4.0, 2.0, 1.0]
        grad = torch.autograd.grad if lib is torch else aiograd.sync.grad
        grads.append(grad(y.sum(), [x])[0].tolist())
    assert grads[0] == grads[1]


def test_take_along_dim_of_an_empty_dim() -> None:
    _same(lambda lib: lib.take_along_dim(lib.zeros(0, 3, dtype=lib.float64), lib.tensor([[1]]), 0))
    _same(lambda lib: lib.take_along_dim(lib.zeros(0, 3, dtype=lib.float64), lib.zeros(0, 1, dtype=lib.int64), 0))
    with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
        ag.take_along_dim(ag.zeros(0, 3, dtype=ag.float64), ag.tensor([[1]]), 0)
    # without dim the flattened input is gathered: no wrapping
    _same(lambda lib: lib.take_along_dim(lib.tensor([2.0, 3.0], dtype=lib.float64), lib.tensor([0, -1])))


# ------------------------------------------------------------------------------ index_add
INDEX_ADD_CASES = [
    ((0,), 0, [0, 0], (2,)),  # 1-D: IndexError, also when empty
    ((3,), 0, [0, -1], (2,)),
    ((), 0, [1], ()),
    ((3, 1), 0, [0, 3], (2, 1)),  # first/last dim: scatter_add's RuntimeError
    ((1, 3), 1, [0, -1], (1, 2)),
    ((2, 2, 3, 2), 3, [0, 2], (2, 2, 3, 2)),
    ((2, 3, 4), 1, [0, 5], (2, 2, 4)),  # a middle dim: IndexError
    ((2, 2, 3, 2), 2, [0, 5], (2, 2, 2, 2)),
    ((4, 0, 1), 2, [1, 0, 1], (4, 0, 3)),  # empty self of 2+ dims: no check
    ((2, 0, 4), 1, [0, 1], (2, 2, 4)),
]


@pytest.mark.parametrize("alpha", [1, 2.0, True])  # (alpha 1 only takes torch's scatter_add path)
def test_index_add_bounds_checks(alpha) -> None:
    def make(lib, shape, dim, index, source_shape):
        x = lib.zeros(shape, dtype=lib.float64)
        return lib.index_add(x, dim, lib.tensor(index), lib.ones(source_shape, dtype=lib.float64), alpha=alpha)

    for case in INDEX_ADD_CASES:
        _same(make, *case)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "float32"])
def test_index_add_converts_alpha_before_the_bounds_check(dtype: str) -> None:
    # NaN, 1e39 or a complex alpha is PyTorch's overflow error (not numpy's ValueError), before
    # the bounds check; an empty self of 2+ dims, or an empty index there, checks nothing
    def make(lib, alpha, shape, dim, index, source_shape):
        d = getattr(lib, dtype)
        x = lib.ones(shape, dtype=d)
        return lib.index_add(x, dim, lib.tensor(index, dtype=lib.int64), lib.ones(source_shape, dtype=d), alpha=alpha)

    for alpha in [float("nan"), 1e39, 1 + 1j, 2.5]:
        for case in [((3,), 0, [0, 1], (2,)), ((3,), 0, [], (0,)), ((3, 2), 1, [], (3, 0)), ((2, 3, 2), 1, [0, 5], (2, 2, 2)),
                     ((0, 2), 1, [0, 1], (0, 2))]:
            _same(make, alpha, *case)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        ag.ones(3, dtype=ag.int64).index_add_(0, ag.tensor([0]), ag.ones(1, dtype=ag.int64), alpha=float("nan"))


def test_index_add_checks_the_first_index_before_alpha() -> None:
    # 2+ dims: PyTorch's loop checks index 0, then converts alpha at its first add
    def make(lib, index):
        x = lib.ones((2, 3), dtype=lib.int64)
        return lib.index_add(x, 0, lib.tensor(index), lib.ones((len(index), 3), dtype=lib.int64), alpha=float("nan"))

    for index in ([-2, 0, 1, 1], [0, 5], [1, 0]):
        _same(make, index)


def test_in_place_scatter_ops_refuse_an_expanded_self_before_the_bounds() -> None:
    F = "float64"

    def expanded(lib):
        return lib.tensor([1.0], dtype=getattr(lib, F)).expand(3)

    cases = [
        lambda lib: expanded(lib).index_add_(0, lib.tensor([5]), lib.ones(1, dtype=getattr(lib, F))),
        lambda lib: expanded(lib).index_add_(0, lib.tensor([5]), lib.ones(1, dtype=lib.float32)),  # (dtype first)
        lambda lib: lib.tensor([1]).expand(3).index_add_(0, lib.tensor([0]), lib.ones(1, dtype=lib.int64), alpha=float("nan")),
        lambda lib: lib.tensor([[1.0]], dtype=getattr(lib, F)).expand(3, 2).index_add_(
            0, lib.tensor([], dtype=lib.int64), lib.ones(0, 2, dtype=getattr(lib, F))),
        lambda lib: expanded(lib).scatter_(0, lib.tensor([5]), lib.ones(1, dtype=getattr(lib, F))),
        lambda lib: expanded(lib).scatter_(0, lib.tensor([5]), lib.ones(1, dtype=lib.float32)),
        lambda lib: expanded(lib).scatter_add_(0, lib.tensor([5]), lib.ones(1, dtype=getattr(lib, F))),
        lambda lib: expanded(lib).scatter_(0, lib.tensor([], dtype=lib.int64), lib.ones(0, dtype=getattr(lib, F))),
    ]
    for case in cases:
        _same(case)


def test_index_add_in_place_of_an_empty_tensor() -> None:
    def make(lib):
        x = lib.zeros((4, 0, 1), dtype=lib.int64)
        source = lib.zeros((8, 0, 3), dtype=lib.int64)[::2]
        return x.index_add_(2, lib.tensor([1, 0, 1]), source, alpha=2)

    _same(make)
    with pytest.raises(IndexError, match="^index out of range in self$"):
        ag.zeros(0, dtype=ag.float64).index_add_(0, ag.tensor([0, 0]), ag.ones(2, dtype=ag.float64))


# ------------------------------------------------------------------------------ setitem
def _grad_fn_name(t) -> str | None:
    fn = t.grad_fn
    return None if fn is None else fn.name().rsplit("::", 1)[-1]


def test_setitem_slice_grad_fn() -> None:
    # only a slice from 0 as written, step 1, to the end or past it is "full" (FillBackward3)
    cases = [(0, slice(-2, None)), (3, slice(-3, None)), (3, slice(0, 100)), (3, slice(None)), (1, slice(0, -1)),
             (1, slice(0, None, 2)), (0, slice(0, None, 2)), (3, slice(0, 3))]
    for n, sl in cases:
        names = []
        for lib in (torch, ag):
            x = lib.zeros(n, dtype=lib.float64, requires_grad=True).clone()
            x[sl] = 2.0
            names.append(_grad_fn_name(x))
        assert names[0] == names[1], (n, sl)


@pytest.mark.parametrize(
    "target, index, value",
    [((1,), -1, (1,)), ((2, 3), 0, (1, 1, 3)), ((2, 3), (0, 1), (1, 1, 1)), ((2, 3), slice(None), (1, 1, 1))],
)
def test_setitem_drops_leading_ones_of_a_value_that_requires_grad(target, index, value) -> None:
    results = []
    for lib in (torch, ag):
        x = lib.zeros(target, dtype=lib.float64, requires_grad=True).clone()
        v = lib.full(value, 3.0, dtype=lib.float64, requires_grad=True)
        x[index] = v
        grad = torch.autograd.grad if lib is torch else aiograd.sync.grad
        g = grad((x * lib.arange(1.0, x.numel() + 1, dtype=lib.float64).reshape(target)).sum(), [v])[0]
        results.append((x.tolist(), _grad_fn_name(x), g.tolist(), tuple(g.shape)))
    assert results[0] == results[1]


def test_setitem_bool_target_value_of_ones_requiring_grad() -> None:
    _same(lambda lib: _set(lib.tensor([False]), -1, lib.tensor([0.48], dtype=lib.float32, requires_grad=True)))


def _set(x, index, value):
    x[index] = value
    return x


def test_setitem_one_value_at_a_mask_is_cast() -> None:
    # one mask and one value: PyTorch's masked_fill_, which casts the value
    cases = [
        lambda lib: (lib.zeros(1, 1, dtype=lib.float64), (None, lib.tensor([True])), lib.tensor([1.5], dtype=lib.float32)),
        lambda lib: (lib.zeros(2, 1, dtype=lib.float64), lib.tensor([True, False]), lib.tensor([1.5], dtype=lib.float32)),
        lambda lib: (lib.zeros(2, dtype=lib.float64), lib.tensor([True, True]), lib.tensor(1.5, dtype=lib.float32)),
        # an integer index, or a 0-d mask (an integer index in PyTorch), keeps the dtype check
        lambda lib: (lib.zeros(2, 1, dtype=lib.float64), lib.tensor([0]), lib.tensor([1.5], dtype=lib.float32)),
        lambda lib: (lib.zeros(2, dtype=lib.float64), lib.tensor(True), lib.tensor([1.5], dtype=lib.float32)),
        # more than one value keeps it too
        lambda lib: (lib.zeros(2, dtype=lib.float64), lib.tensor([True, True]), lib.tensor([1.5, 2.5], dtype=lib.float32)),
    ]
    for case in cases:
        _same(lambda lib, case: _set(*case(lib)), case)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
        _set(*cases[3](ag))


def test_setitem_masked_fill_gradient_reaches_the_value() -> None:
    results = []
    for lib in (torch, ag):
        x = lib.zeros(2, 1, dtype=lib.float64, requires_grad=True).clone()
        v = lib.tensor([3.0], dtype=lib.float32, requires_grad=True)
        x[lib.tensor([True, False])] = v
        grad = torch.autograd.grad if lib is torch else aiograd.sync.grad
        g = grad(x.sum(), [v])[0]
        results.append((x.tolist(), _grad_fn_name(x), g.tolist(), str(g.dtype).split(".")[-1]))
    assert results[0] == results[1]


def test_setitem_checks_indices_into_an_empty_dim_first() -> None:
    def make(lib, shape, index, value_dtype):
        x = lib.zeros(shape, dtype=lib.float64, requires_grad=True).clone()
        return _set(x, index(lib), lib.tensor([1.0, 2.0], dtype=getattr(lib, value_dtype)))

    cases = [
        ((0, 4), lambda lib: lib.tensor([0]), "float32"),  # (before the dtype check)
        ((0, 2), lambda lib: lib.tensor([0]), "float64"),
        ((2, 0), lambda lib: (Ellipsis, lib.tensor([1])), "float64"),
        ((0, 2), lambda lib: lib.tensor([], dtype=lib.int64), "float32"),  # (nothing indexed: the dtype check)
        ((2, 2), lambda lib: lib.tensor([5]), "float32"),
        ((2, 2), lambda lib: lib.tensor([5]), "float64"),  # PyTorch's words, not numpy's ("axis")
        ((2, 2), lambda lib: (0, lib.tensor([5, 1])), "float64"),
    ]
    for case in cases:
        _same(make, *case)
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with size 2$"):
        _set(ag.zeros((2, 2), dtype=ag.float64), ag.tensor([5]), 1.0)


def test_setitem_index_shapes_are_checked_before_the_dtypes() -> None:
    def make(lib, target_dtype, index, value_dtype):
        x = lib.zeros((4, 1, 3), dtype=_bool(lib) if target_dtype == "bool" else getattr(lib, target_dtype))
        return _set(x, index(lib), lib.tensor([-0.83, 0.33], dtype=getattr(lib, value_dtype), requires_grad=True))

    cases = [
        ("bool", lambda lib: (1, lib.tensor([0, 0]), lib.zeros(0, dtype=lib.int64)), "float64"),
        ("float64", lambda lib: (lib.tensor([True, False, True, True]), 0, lib.tensor([0, 1])), "float32"),
    ]
    for case in cases:
        _same(make, *case)


def test_setitem_into_an_empty_view_checks_no_bounds() -> None:
    def make(lib, shape, index, value):
        x = lib.zeros(shape, dtype=lib.float64, requires_grad=True).clone()
        return _set(x, index(lib), lib.tensor(value, dtype=lib.float64, requires_grad=True))

    cases = [
        ((3, 3, 3), lambda lib: (slice(3, None), lib.tensor([3, 1]), Ellipsis), [0.72]),
        ((0, 2, 3), lambda lib: (None, slice(None), lib.tensor([-1, -3])), [-1.1]),
    ]
    for case in cases:
        _same(make, *case)


def test_setitem_writes_an_expanded_tensor_with_torch_warnings() -> None:
    def base(lib):
        return lib.tensor([[[2]], [[3]]], dtype=lib.int64)

    cases = [
        lambda lib, b: (lib.tensor([False, True]), Ellipsis, -0.0),
        lambda lib, b: (lib.tensor([False, True]), Ellipsis, lib.tensor(5, dtype=lib.int64)),
        lambda lib, b: (lib.tensor([1]), Ellipsis, 7),
    ]
    for case in cases:
        results = []
        for lib in (torch, ag):
            b = base(lib)
            x = b.expand(2, 1, 4)
            *index, value = case(lib, b)
            with pytest.warns(UserWarning) as record:
                x[tuple(index)] = value
            messages = [str(w.message).split(" (Triggered")[0] for w in record]
            results.append((b.tolist(), x.tolist(), messages))
        assert results[0] == results[1]


# ------------------------------------------------------------------------------ copy_
def test_copy_refuses_a_source_of_more_dims() -> None:
    def make(lib):
        x = lib.zeros((1, 2, 4), dtype=lib.int64)
        return x.copy_(lib.ones((1, 1, 2, 4), dtype=_bool(lib)))

    _same(make)
    with pytest.raises(RuntimeError, match=re.escape("output with shape [1, 2, 4] doesn't match the broadcast shape [1, 1, 2, 4]")):
        make(ag)


# ------------------------------------------------------------------------------ clamp_
def _clamp_case(lib, lo, hi):
    x = lib.tensor([-0.36, -1.95, 1.55, 3.14], dtype=lib.float64, requires_grad=True).clone()
    bounds = []
    for b in (lo, hi):
        if b == "T1":
            b = lib.tensor([-1], dtype=lib.int64)
        elif b == "T0":
            b = lib.tensor(0.5, dtype=lib.float64)
        elif b == "T0rg":
            b = lib.tensor(0.5, dtype=lib.float64, requires_grad=True)
        bounds.append(b)
    y = x.clamp_(*bounds)
    return [round(v, 6) for v in y.tolist()], _grad_fn_name(y)


def test_clamp_binds_bounds_as_torch_parser() -> None:
    # a tensor with a number: the Number signature, which a 0-d tensor that requires no grad
    # matches (ClampBackward1); else a TypeError. Tensors (or None) alone: ClampBackward0.
    cases = [("T1", 1.5), (1.5, "T1"), (2, "T0"), (2, "T0rg"), ("T0", 2), ("T0", "T0"), ("T0", None),
             ("T0", "T1"), (1, None), ("T1", "T1")]
    def outcome(lib, lo, hi):
        try:
            return _clamp_case(lib, lo, hi)
        except TypeError as e:
            return TypeError, str(e)

    for lo, hi in cases:
        assert outcome(ag, lo, hi) == outcome(torch, lo, hi), (lo, hi)


def test_clamp_of_bool_with_a_number_and_a_tensor_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=re.escape("clamp_() received an invalid combination of arguments - got (float, Tensor)")):
        ag.tensor([False, True]).clamp_(1.5, ag.tensor([-2.44, 4.13], dtype=ag.float64, requires_grad=True))


def test_clamp_of_bool_by_bools_is_not_implemented() -> None:
    for args in [(False,), (None, True), (True, True)]:
        _same(lambda lib, args: lib.tensor([False, True, False], dtype=_bool(lib)).clamp_(*args), args)
        _same(lambda lib, args: lib.zeros((0, 3), dtype=_bool(lib)).clamp_(*args), args)
    with pytest.raises(NotImplementedError, match="\"clamp_min_scalar_cpu\" not implemented for 'Bool'"):
        ag.zeros((0, 4), dtype=ag.bool_).clamp_(False)


def test_clamp_with_a_bound_of_more_elements_is_a_shape_error() -> None:
    for lo, hi in [([-4, -3], 1), (1, [-4, -3])]:
        _same(lambda lib, lo, hi: lib.tensor(3, dtype=lib.int64).clamp_(lib.tensor(lo), lib.tensor(hi)), lo, hi)
    with pytest.raises(RuntimeError, match=re.escape("output with shape [] doesn't match the broadcast shape [2]")):
        ag.tensor(3, dtype=ag.int64).clamp_(ag.tensor([-4, -3]), ag.tensor(1))


# ------------------------------------------------------------------------------ pow_
def test_pow_of_bool() -> None:
    for exponent in [False, True, 0, 2, -1, 1.5, -3]:
        _same(lambda lib, e: lib.tensor([[False, True, True, False]], dtype=_bool(lib))[::2].pow_(e), exponent)


def test_pow_of_integers() -> None:
    for exponent in [-3, -1, 0, 2, 1.5, True]:
        _same(lambda lib, e: lib.tensor(-4, dtype=lib.int64).pow_(e), exponent)
        _same(lambda lib, e: lib.tensor([-4, 2], dtype=lib.int64).pow_(e), exponent)


def test_pow_of_integers_by_tensors() -> None:
    _same(lambda lib: lib.tensor([2, 3, 1, -1], dtype=lib.int64).pow_(lib.tensor([-1, 2, -2, -3], dtype=lib.int64)))
    _same(lambda lib: lib.tensor([2, 30], dtype=lib.uint8).pow_(2))
    _same(lambda lib: lib.tensor([False, True], dtype=_bool(lib)).pow_(lib.tensor([True, False], dtype=_bool(lib))))
    _same(lambda lib: lib.zeros((2, 0), dtype=_bool(lib)).pow_(lib.zeros((4, 0), dtype=_bool(lib))))  # (shapes first)
    _same(lambda lib: lib.tensor([[True]], dtype=_bool(lib)).expand(2, 1).pow_(lib.tensor([[True], [False]], dtype=_bool(lib))))
    with pytest.raises(RuntimeError, match="^Integers to negative integer powers are not allowed.$"):
        ag.tensor([-4], dtype=ag.int64).pow_(-3)


# ------------------------------------------------------------------------------ cumsum_ / cumprod_
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_bool_scans_of_at_most_one_element(name: str) -> None:
    for shape in [(), (0,), (4, 0, 1), (2,)]:  # ((2,): PyTorch's NotImplementedError)
        dim = -1 if not shape else 0
        _same(lambda lib, shape, dim: getattr(lib.ones(shape, dtype=_bool(lib)), name + "_")(dim), shape, dim)
        _same(lambda lib, shape, dim: getattr(lib, name)(lib.ones(shape, dtype=_bool(lib)), dim, dtype=_bool(lib)), shape, dim)
        _same(lambda lib, shape, dim: getattr(lib, name)(lib.ones(shape, dtype=lib.float32), dim, dtype=_bool(lib)), shape, dim)


def test_scan_keeps_a_small_integer_dtype() -> None:
    _same(lambda lib: lib.cumsum(lib.full((3,), 100, dtype=lib.uint8), 0, dtype=lib.uint8))
    _same(lambda lib: lib.cumprod(lib.full((3,), 7, dtype=lib.uint8), 0, dtype=lib.uint8))


# ------------------------------------------------------------------------------ tril_ / triu_
@pytest.mark.parametrize(
    "shape, sizes, name, diagonal",
    [((1, 1, 1), (4, 1, 4), "tril_", 0), ((1, 1), (4, 2), "triu_", 0), ((1, 3), (3, 3), "tril_", 0),
     ((3, 1), (3, 3), "triu_", 1), ((1, 3), (3, 3), "triu_", -1)],
)
def test_tril_triu_write_an_expanded_view(shape, sizes, name, diagonal) -> None:
    results = []
    for lib in (torch, ag):
        base = lib.tensor(np.arange(1.0, 1 + np.prod(shape)).reshape(shape), dtype=lib.float64)
        y = getattr(base.expand(*sizes), name)(diagonal)
        results.append((y.tolist(), base.tolist()))
    assert results[0] == results[1]
    # a NaN that stays is no change: the zeros written win, as in PyTorch
    for lib in (torch, ag):
        base = lib.tensor([[float("nan")]], dtype=lib.float64)
        assert getattr(base.expand(3, 3), name)(diagonal).tolist() == [[0.0] * 3] * 3
    # the scatter ops still refuse an expanded view, as PyTorch's
    x = ag.zeros((1, 1), dtype=ag.float64).expand(3, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.index_add_(0, ag.tensor([0]), ag.ones((1, 3), dtype=ag.float64))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.scatter_add_(0, ag.tensor([[0, 1, 2]]), ag.ones((1, 3), dtype=ag.float64))
