"""PyTorch's type promotion (``at::result_type``) in aiograd's elementwise ops, each case run on
torch too: tensors of different dtypes promote (a float beats any integer), 0-dim tensors and
Python numbers count only when of a higher category, and each operand's gradient comes back in
its own dtype. Matrix products never promote: they raise PyTorch's errors.

aiograd's default float dtype is float64 (Python floats give float64), torch's is float32, so
torch runs these cases with ``torch.set_default_dtype(torch.float64)``: where a Python float or
true division picks the default dtype, both give float64.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag

pytestmark = requires_torch

f16, f32, f64 = np.float16, np.float32, np.float64
i8, i32, i64, u8, b = np.int8, np.int32, np.int64, np.uint8, np.bool_


@pytest.fixture(autouse=True)
def torch_default_float64() -> Iterator[None]:
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def _make(lib: Any, value: Any, dtype: Any) -> Any:
    """A tensor (a list value) or a 0-dim tensor (a number) of ``dtype``; requires grad if float."""
    arr = np.asarray(value, dtype=dtype)
    return lib.tensor(arr, requires_grad=arr.dtype.kind == "f")


def _dtype(t: Any) -> np.dtype[Any]:
    return np.dtype(str(t.dtype).removeprefix("torch."))


def _numpy(t: Any) -> np.ndarray[Any, Any]:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.data)


BINARY = {
    "add": lambda lib, a, c: a + c,
    "sub": lambda lib, a, c: a - c,
    "rsub": lambda lib, a, c: c - a,
    "mul": lambda lib, a, c: a * c,
    "div": lambda lib, a, c: a / c,
    "pow": lambda lib, a, c: a ** c,
    "maximum": lambda lib, a, c: lib.maximum(a, c),
    "minimum": lambda lib, a, c: lib.minimum(a, c),
    "where": lambda lib, a, c: lib.where(lib.tensor([True, False, True]), a, c),
    "clamp_min_tensor": lambda lib, a, c: lib.clamp(a, min=c),
    "clamp_max_tensor": lambda lib, a, c: lib.clamp(a, max=c),
    "clamp_tensors": lambda lib, a, c: lib.clamp(a, min=c, max=c + 1),
    # cat and stack promote all their tensors alike (a 0-dim one is made 1-d or expanded first)
    "cat": lambda lib, a, c: lib.cat([a.reshape(-1), c.reshape(-1)]),
    "stack": lambda lib, a, c: lib.stack([a, c.expand_as(a)]),
    "eq": lambda lib, a, c: a == c,
    "lt": lambda lib, a, c: a < c,
}

# (left value, left dtype, right value, right dtype): a list is a 1-d tensor, a number 0-dim
OPERANDS = [
    ([1.5, 2.0, 3.0], f32, [0.5, 2.0, 4.0], f64),
    ([1.5, 2.0, 3.0], f64, [0.5, 2.0, 4.0], f32),
    ([1.5, 2.0, 3.0], f32, 2.0, f64),  # a 0-dim float64 does not promote a float32 tensor
    ([1.5, 2.0, 3.0], f64, 2.0, f32),
    ([1, 2, 3], i64, [0.5, 2.0, 4.0], f32),  # int64 with float32 is float32 (numpy: float64)
    ([1, 2, 3], i64, 2.0, f32),  # a 0-dim float counts against an int tensor
    ([1, 2, 3], i32, 2, i64),  # ... a 0-dim int does not
    ([1, 2, 3], i32, [0.5, 2.0, 4.0], f16),
    ([1, 2, 3], u8, [1, 2, 3], i8),
    ([True, False, True], b, [0.5, 2.0, 4.0], f32),
    ([1.5, 2.0, 3.0], f16, [0.5, 2.0, 4.0], f32),
]


def _run(lib: Any, op: str, left: Any, right: Any) -> tuple[Any, Any, list[Any]]:
    a, c = _make(lib, *left), _make(lib, *right)
    with np.errstate(all="ignore"):
        out = BINARY[op](lib, a, c)
    leaves = [t for t in (a, c) if t.requires_grad]
    grads: list[Any] = []
    if out.requires_grad:
        if lib is torch:
            grads = list(torch.autograd.grad(out.sum(), leaves, allow_unused=True))
        else:
            grads = ag.sync.grad(out.sum(), leaves, allow_unused=True)
    return out, leaves, grads


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize(
    "case",
    OPERANDS,
    ids=[f"{np.dtype(o[1])}-{np.dtype(o[3])}{'' if isinstance(o[2], list) else '_0d'}" for o in OPERANDS],
)
def test_binary_promotion_matches_torch(op: str, case: tuple[Any, ...]) -> None:
    left, right = (case[0], case[1]), (case[2], case[3])
    try:
        expected = _run(torch, op, left, right)
    except RuntimeError as e:  # torch refuses some (pow of integers by a float 0-dim ...)
        with pytest.raises(RuntimeError) as info:
            _run(ag, op, left, right)
        assert str(info.value) == str(e)
        return
    out, leaves, grads = _run(ag, op, left, right)
    t_out, t_leaves, t_grads = expected
    assert out.dtype == _dtype(t_out)
    np.testing.assert_allclose(_numpy(out).astype(f64), _numpy(t_out).astype(f64), rtol=1e-3)
    assert len(grads) == len(t_grads)
    for g, tg, leaf in zip(grads, t_grads, leaves):
        assert (g is None) == (tg is None)
        if g is not None:
            assert g.dtype == _dtype(tg) == leaf.dtype  # each operand's gradient in its own dtype
            np.testing.assert_allclose(_numpy(g).astype(f64), _numpy(tg).astype(f64), rtol=1e-3)


SCALARS = [
    ([1.5, 2.0], f32, 2.5),  # a Python float does not promote a float tensor
    ([1.5, 2.0], f16, 2.5),
    ([1, 2], i64, 2.5),  # ... but does an int tensor, to the default float dtype
    ([1, 2], i32, 3),  # a Python int keeps an int tensor's width
    ([True, False], b, 2),  # bool with an int is int64
    ([True, False], b, 2.5),
]


@pytest.mark.parametrize("op", ["add", "sub", "rsub", "mul", "div", "maximum"])
@pytest.mark.parametrize("case", SCALARS, ids=[f"{np.dtype(c[1])}-{type(c[2]).__name__}" for c in SCALARS])
def test_python_numbers_match_torch(op: str, case: tuple[Any, ...]) -> None:
    value, dtype, number = case
    results = []
    for lib in (torch, ag):
        a = _make(lib, value, dtype)
        c = lib.tensor(number) if op == "maximum" else number  # torch.maximum takes tensors only
        try:
            results.append(BINARY[op](lib, a, c))
        except RuntimeError as e:  # subtraction with bools
            results.append(f"RuntimeError: {e}")
    t_out, out = results
    if isinstance(t_out, str):
        assert out == t_out
        return
    assert out.dtype == _dtype(t_out)
    np.testing.assert_allclose(_numpy(out).astype(f64), _numpy(t_out).astype(f64), rtol=1e-3)


# ------------------------------------------------------------------------------ matrix products
MATMUL_SHAPES = [((2, 3), (3, 2)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((4, 2, 3), (4, 3, 2)),
                 ((4, 2, 3), (3, 2)), ((4, 2, 3), (3,)), ((3,), (4, 3, 2)), ((2, 3), (4, 3, 2))]
DTYPE_PAIRS = [(f64, f32), (f32, f64), (i64, f32), (f32, i32), (f16, f32), (f64, b), (u8, f32)]


def _error(fn: Any) -> str:
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    raise AssertionError("no error")


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=[f"{a}@{c}" for a, c in MATMUL_SHAPES])
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=[f"{np.dtype(a)}-{np.dtype(c)}" for a, c in DTYPE_PAIRS])
def test_matmul_of_mixed_dtypes_raises_torchs_error(shapes: Any, dtypes: Any) -> None:
    def run(lib: Any) -> str:
        a = lib.tensor(np.ones(shapes[0], dtype=dtypes[0]))
        c = lib.tensor(np.ones(shapes[1], dtype=dtypes[1]))
        return _error(lambda: a @ c)

    assert run(ag) == run(torch)


@pytest.mark.parametrize("dtypes", DTYPE_PAIRS[:2], ids=["f64-f32", "f32-f64"])
def test_mm_of_mixed_dtypes_raises_torchs_error(dtypes: Any) -> None:
    def run(lib: Any) -> str:
        a, c = (lib.tensor(np.ones((2, 2), dtype=d)) for d in dtypes)
        return _error(lambda: lib.mm(a, c))

    assert run(ag) == run(torch)


LINEAR = [(f64, f32, None), (f32, f64, None), (f64, f32, f32), (f32, f64, f32), (f32, f32, f64),
          (f64, f64, f32)]


@pytest.mark.parametrize("x_shape", [(2, 3), (4, 2, 3), (3,)])
@pytest.mark.parametrize("dtypes", LINEAR, ids=[f"x{np.dtype(x)}-w{np.dtype(w)}-b{b and np.dtype(b)}" for x, w, b in LINEAR])
def test_linear_of_mixed_dtypes_raises_torchs_error(x_shape: Any, dtypes: Any) -> None:
    def run(lib: Any, functional: Any) -> str:
        x = lib.tensor(np.ones(x_shape, dtype=dtypes[0]))
        w = lib.tensor(np.ones((2, 3), dtype=dtypes[1]))
        bias = None if dtypes[2] is None else lib.tensor(np.ones(2, dtype=dtypes[2]))
        return _error(lambda: functional.linear(x, w, bias))

    assert run(ag, ag.nn.functional) == run(torch, torch.nn.functional)


def test_matmul_of_one_dtype_still_works() -> None:
    a = ag.tensor(np.ones((2, 3), dtype=f32), requires_grad=True)
    c = ag.tensor(np.ones((3, 2), dtype=f32), requires_grad=True)
    out = a @ c
    assert out.dtype == f32
    assert [g.dtype for g in ag.sync.grad(out.sum(), [a, c])] == [f32, f32]


def test_integer_to_a_negative_integer_power_raises_torchs_error() -> None:
    def run(lib: Any) -> str:
        x = lib.tensor(np.array([1, 2], dtype=i64))
        return _error(lambda: x**-1)

    assert run(ag) == run(torch) == "Integers to negative integer powers are not allowed."


# ------------------------------------------------------------------------------ in place
def _outcome(fn: Any) -> Any:
    """The dtype and values of what ``fn`` returns, or its exception's type and words."""
    try:
        out = fn()
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)
    return _dtype(out), _numpy(out).astype(f64).tolist()


def _other(lib: Any, value: Any) -> Any:
    """A tensor of (value, dtype), anything else as it is."""
    return _make(lib, *value).detach() if isinstance(value, tuple) else value


# (self value, self dtype, method, operand): an operand (value, dtype) is a tensor
IN_PLACE = [
    ([1, 2], i64, "add_", ([0.5, 1.5], f32)),  # the result type is Float, numpy's is Double
    ([1, 2], i64, "add_", 1.5),
    ([1, 2], i32, "add_", ([1, 2], i64)),  # an int of another width is cast back
    ([1.5, 2.5], f32, "add_", ([1, 2], i64)),
    ([1.5, 2.5], f16, "mul_", ([2.0, 4.0], f64)),
    ([True, False], b, "add_", ([1, 2], i64)),
    ([True, False], b, "sub_", True),
    ([True, False], b, "sub_", ([True, True], b)),
    ([1, 2], i64, "sub_", ([True, True], b)),
    ([1, 2], i64, "sub_", ([0.5, 1.5], f32)),
    ([1, 2], i64, "mul_", ([0.5, 1.5], f32)),
    ([1, 2], i64, "mul_", 1.5),
    ([1, 2], i64, "div_", 2),  # true division of integers gives the default float dtype
    ([1, 2], i64, "div_", ([1, 2], i64)),
    ([1, 2], i32, "div_", ([2.0, 4.0], f32)),
    ([4.0, 9.0], f32, "div_", ([2, 3], i64)),
    ([1, 2], i64, "pow_", 0.5),
    ([1, 2], i64, "pow_", ([0.5, 1.5], f32)),
    ([1, 2], i64, "pow_", 2),
    ([1, 2], i64, "clamp_", 0.5),  # PyTorch names the output type in C here
    ([1, 2], i32, "clamp_", 0.5),
    ([1, 2], u8, "clamp_", 0.5),
    ([True, False], b, "clamp_", 0.5),
    ([1, 2], i64, "clamp_", ([0.5, 1.5], f32)),
    ([1, 2], i64, "clamp_", 1),
    ([1.5, 2.5], f32, "clamp_", ([1, 2], i64)),
    ([1, 2], i64, "neg_", None),
    ([True, False], b, "neg_", None),
    ([1, 2], i64, "exp_", None),
    ([1.5, 2.5], f64, "add_", "a"),  # PyTorch's TypeError, not a failed cast
    ([1.5, 2.5], f64, "sub_", None),
    ([1.5, 2.5], f64, "mul_", [1.0, 2.0]),
    ([1.5, 2.5], f64, "div_", "a"),
    ([1.5, 2.5], f64, "pow_", "a"),
    ([1.5, 2.5], f64, "clamp_", "a"),
]


@pytest.mark.parametrize(
    "case", IN_PLACE, ids=[f"{np.dtype(c[1])}-{c[2]}-{c[3][1].__name__ if isinstance(c[3], tuple) else type(c[3]).__name__}"
                           for c in IN_PLACE],
)
def test_in_place_promotion_and_errors_match_torch(case: tuple[Any, ...]) -> None:
    value, dtype, method, operand = case

    def run(lib: Any) -> Any:
        x = lib.tensor(np.asarray(value, dtype=dtype))
        args = () if operand is None and method in ("neg_", "exp_") else (_other(lib, operand),)
        return _outcome(lambda: getattr(x, method)(*args))

    assert run(ag) == run(torch)


CLAMP_BOUNDS = [((None, "a"), "max only"), ((0, "a"), "both"), (("a", 1), "both, min bad")]


@pytest.mark.parametrize("bounds", [c[0] for c in CLAMP_BOUNDS], ids=[c[1] for c in CLAMP_BOUNDS])
def test_clamp__of_a_bad_bound_raises_torchs_type_error(bounds: Any) -> None:
    def run(lib: Any) -> Any:
        x = lib.tensor([1.5, 2.5])
        lo, hi = bounds
        return _outcome(lambda: x.clamp_(max=hi) if lo is None else x.clamp_(lo, hi))

    assert run(ag) == run(torch)


@pytest.mark.parametrize("dtypes", [(f32, f64), (f64, f32), (f32, i64)], ids=["f32-f64", "f64-f32", "f32-i64"])
def test_in_place_op_with_a_gradient_promotes_as_torch(dtypes: Any) -> None:
    """The recorded path: the out-of-place twin in the promoted dtype, cast back into ``self``;
    each operand's gradient in its own dtype."""

    def run(lib: Any) -> Any:
        x = lib.tensor(np.array([1.5, -2.5, 0.25], dtype=dtypes[0]), requires_grad=True)
        w = lib.tensor(np.array([2, -1, 3], dtype=dtypes[1]), requires_grad=np.dtype(dtypes[1]).kind == "f")
        y = x * 1.0
        y.mul_(w).add_(w).clamp_(min=w - 2)
        leaves = [t for t in (x, w) if t.requires_grad]
        if lib is torch:
            grads = torch.autograd.grad(y.sum(), leaves)
        else:
            grads = ag.sync.grad(y.sum(), leaves)
        return _outcome(lambda: y), [_outcome(lambda g=g: g) for g in grads]

    assert run(ag) == run(torch)


def test_negation_of_a_bool_tensor_raises_torchs_error() -> None:
    assert _outcome(lambda: -ag.tensor([True])) == _outcome(lambda: -torch.tensor([True]))


def test_cat_promotes_with_a_skipped_legacy_empty_tensor_too() -> None:
    """PyTorch skips a 1-D empty tensor's shape in cat, but not its dtype."""

    def run(lib: Any) -> Any:
        a = lib.tensor(np.ones((1, 2), dtype=i32))
        e = lib.tensor(np.zeros((0,), dtype=f64))
        return _outcome(lambda: lib.cat([a, e]))

    assert run(ag) == run(torch)


def test_cat_of_mixed_dtypes_has_edges_to_the_inputs_themselves() -> None:
    """As PyTorch: the cast is cat's own (each gradient cast back by CatBackward0), no
    ToCopyBackward0 node in between."""
    a = ag.tensor(np.ones(2, dtype=f32), requires_grad=True)
    c = ag.tensor(np.ones(1, dtype=f64), requires_grad=True)
    t_a, t_c = (torch.tensor(v.data, requires_grad=True) for v in (a, c))
    names = [[type(fn).__name__ for fn, _ in lib.cat(pair).grad_fn.next_functions]
             for lib, pair in ((ag, [a, c]), (torch, [t_a, t_c]))]
    assert names[0] == names[1] == ["AccumulateGrad", "AccumulateGrad"]
