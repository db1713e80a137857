"""Rearranging ops (aiograd/_ops/rearrange.py): flip, roll, narrow, select, movedim, moveaxis,
unflatten, tril, triu, diagonal, diag, tile; and ``repeat``, which ``tile`` is built on.

The per-op tests come from the ``OpSpec`` table and tests/op_factory.py (gradcheck,
gradgradcheck, forward/first/second derivatives vs torch, float32, grad_fn names). Then: the
error messages, word for word, as torch 2.13 raises them; which ops return views, and that an
in-place op through such a view updates the base, its version and its grad_fn as in torch.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

X = ((3, 4, 5),)
M = ((3, 4),)

SPECS = [
    # ---------------------------------------------------------------- flip / roll
    OpSpec("flip", lambda lib, x: x.flip(0, 2), X, grad_fn="FlipBackward0"),
    OpSpec("flip_tuple", lambda lib, x: x.flip((-1,)), X),
    OpSpec("flip_fn", lambda lib, x: lib.flip(x, (1, 0)), X),
    OpSpec("flip_0d", lambda lib, x: x.flip(0), ((),)),
    OpSpec("roll", lambda lib, x: x.roll(1, 0), X, grad_fn="RollBackward0"),
    OpSpec("roll_flat", lambda lib, x: x.roll(7), X),
    OpSpec("roll_several", lambda lib, x: x.roll((1, -3), (2, 1)), X),
    OpSpec("roll_fn", lambda lib, x: lib.roll(x, shifts=-2, dims=-1), X),
    # ---------------------------------------------------------------- views
    OpSpec("narrow", lambda lib, x: x.narrow(1, 1, 2), X, grad_fn="SliceBackward0"),
    OpSpec("narrow_negative_start", lambda lib, x: x.narrow(-1, -3, 3), X),
    OpSpec("narrow_fn", lambda lib, x: lib.narrow(x, 0, 0, 2), X),
    OpSpec("select", lambda lib, x: x.select(1, 2), X, grad_fn="SelectBackward0"),
    OpSpec("select_negative", lambda lib, x: x.select(-1, -2), X),
    OpSpec("select_fn", lambda lib, x: lib.select(x, 0, 1), ((3,),)),
    OpSpec("movedim", lambda lib, x: x.movedim(0, 2), X, grad_fn="PermuteBackward0"),
    OpSpec("movedim_tuples", lambda lib, x: x.movedim((0, 1), (2, 0)), X),
    OpSpec("movedim_fn", lambda lib, x: lib.movedim(x, -1, 0), X),
    OpSpec("moveaxis", lambda lib, x: lib.moveaxis(x, (0, 2), (1, 0)), X, grad_fn="PermuteBackward0"),
    OpSpec("unflatten", lambda lib, x: x.unflatten(1, (2, 2)), X, grad_fn="ViewBackward0"),
    OpSpec("unflatten_inferred", lambda lib, x: x.unflatten(-1, (-1, 1)), X),
    OpSpec("unflatten_fn", lambda lib, x: lib.unflatten(x.mT, 2, (2, 2)), X),
    OpSpec("diagonal", lambda lib, x: x.diagonal(), X, grad_fn="DiagonalBackward0"),
    OpSpec("diagonal_offset", lambda lib, x: x.diagonal(1, 0, 2), X),
    OpSpec("diagonal_negative", lambda lib, x: lib.diagonal(x, offset=-1, dim1=-1, dim2=1), X),
    OpSpec("diagonal_empty", lambda lib, x: x.diagonal(9) * 1.0, X),
    # a diagonal used twice and squared: second derivatives that depend on x
    OpSpec("diagonal_squared", lambda lib, x: x.diagonal(0, 1, 2) ** 2 + x.diagonal(-1, 1, 2).sum(), X),
    # ---------------------------------------------------------------- copies
    OpSpec("tril", lambda lib, x: x.tril(), X, grad_fn="TrilBackward0"),
    OpSpec("tril_offset", lambda lib, x: lib.tril(x, -1), M),
    OpSpec("triu", lambda lib, x: x.triu(1), X, grad_fn="TriuBackward0"),
    OpSpec("triu_fn", lambda lib, x: lib.triu(x, diagonal=-2), M),
    OpSpec("tril_", lambda lib, x: x.clone().tril_(1), M, grad_fn="TrilBackward0"),
    OpSpec("triu_", lambda lib, x: (x * x).triu_() * x, X, grad_fn="MulBackward0"),
    OpSpec("diag", lambda lib, x: x.diag(), ((4,),), grad_fn="DiagEmbedBackward0"),
    OpSpec("diag_offset", lambda lib, x: lib.diag(x, -2), ((3,),)),
    OpSpec("diag_matrix", lambda lib, x: x.diag(), M, grad_fn="DiagonalBackward0_copy"),
    OpSpec("diag_matrix_offset", lambda lib, x: lib.diag(x, 1) ** 2, M),
    OpSpec("tile", lambda lib, x: x.tile(2, 1), X, grad_fn="RepeatBackward0"),
    OpSpec("tile_more_dims", lambda lib, x: lib.tile(x, (2, 1, 1, 3)), M),
    OpSpec("tile_squared", lambda lib, x: x.tile((3,)) ** 2, M),
    OpSpec("repeat_squared", lambda lib, x: x.repeat(2, 1, 2) ** 2, M, op="repeat"),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ errors
# (id, op, input shape, exception, message); every one is checked against torch too.
ERRORS = [
    ("flip_repeated", lambda x: x.flip(0, -3), (3, 4, 5), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    ("flip_dim", lambda x: x.flip(3), (3, 4, 5), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("roll_align", lambda x: x.roll((1, 2), (0,)), (3, 4, 5), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:1"),
    ("roll_align_flat", lambda x: x.roll((1, 2)), (3, 4, 5), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:0"),
    ("roll_dim", lambda x: x.roll(1, 3), (3, 4, 5), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("narrow_past_end", lambda x: x.narrow(1, 3, 2), (3, 4, 5), RuntimeError,
     "start (3) + length (2) exceeds dimension size (4)."),
    ("narrow_start", lambda x: x.narrow(1, -5, 1), (3, 4, 5), IndexError,
     "start out of range (expected to be in range of [-4, 4], but got -5)"),
    ("narrow_length", lambda x: x.narrow(1, 0, -1), (3, 4, 5), RuntimeError, "narrow(): length must be non-negative."),
    ("narrow_dim", lambda x: x.narrow(3, 0, 1), (3, 4, 5), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("narrow_0d", lambda x: x.narrow(0, 0, 1), (), RuntimeError, "narrow() cannot be applied to a 0-dim tensor."),
    ("select_index", lambda x: x.select(1, 4), (3, 4, 5), IndexError,
     "select(): index 4 out of range for tensor of size [3, 4, 5] at dimension 1"),
    ("select_negative_index", lambda x: x.select(-2, -5), (3, 4, 5), IndexError,
     "select(): index -5 out of range for tensor of size [3, 4, 5] at dimension 1"),
    ("select_0d", lambda x: x.select(0, 0), (), IndexError, "select() cannot be applied to a 0-dim tensor."),
    ("movedim_lengths", lambda x: x.movedim((0, 1), (1,)), (3, 4, 5), RuntimeError,
     "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same "
     "number of dims as destination ([1] dims)"),
    ("movedim_repeated_source", lambda x: x.movedim((0, -3), (1, 2)), (3, 4, 5), RuntimeError,
     "movedim: repeated dim in `source` ([0, -3])"),
    ("movedim_repeated_destination", lambda x: x.movedim((0, 1), (1, 1)), (3, 4, 5), RuntimeError,
     "movedim: repeated dim in `destination` ([1, 1])"),
    ("movedim_dim", lambda x: x.movedim(0, 3), (3, 4, 5), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("unflatten_product", lambda x: x.unflatten(1, (3, 2)), (3, 4, 5), RuntimeError,
     "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input tensor"),
    ("unflatten_inferred", lambda x: x.unflatten(1, (3, -1)), (3, 4, 5), RuntimeError,
     "unflatten: Provided sizes [3, -1] don't multiply up to the size of dim 1 (4) in the input tensor"),
    ("unflatten_empty", lambda x: x.unflatten(1, ()), (3, 4, 5), RuntimeError, "unflatten: sizes must be non-empty"),
    ("tril_1d", lambda x: x.tril(), (3,), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    ("triu_0d", lambda x: x.triu(), (), RuntimeError, "triu: input tensor must have at least 2 dimensions"),
    ("diagonal_same_dims", lambda x: x.diagonal(0, 1, -2), (3, 4, 5), RuntimeError,
     "diagonal dimensions cannot be identical 1, -2"),
    ("diagonal_dim", lambda x: x.diagonal(0, 0, 3), (3, 4, 5), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    ("diagonal_0d", lambda x: x.diagonal(), (), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("diag_3d", lambda x: x.diag(), (3, 4, 5), RuntimeError, "diag(): Supports 1D or 2D tensors. Got 3D"),
    ("diag_0d", lambda x: x.diag(), (), RuntimeError, "diag(): Supports 1D or 2D tensors. Got 0D"),
    ("tile_negative", lambda x: x.tile(2, -1), (3, 4, 5), RuntimeError,
     "Trying to create tensor with negative dimension -5: [3, 8, -5]"),
    ("repeat_negative", lambda x: x.repeat(-1, 1, 1), (3, 4, 5), RuntimeError,
     "Trying to create tensor with negative dimension -3: [-3, 4, 5]"),
    ("repeat_too_few", lambda x: x.repeat(2), (3, 4, 5), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
]


@requires_torch
@pytest.mark.parametrize(("op", "shape", "exc", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_messages_are_torchs(op: Any, shape: Any, exc: Any, message: str) -> None:
    for x in (ag.tensor(np.zeros(shape), requires_grad=True), torch.zeros(shape, requires_grad=True)):
        with pytest.raises(exc, match=f"^{re.escape(message)}$"):
            op(x)


# ================================================================================ views
VIEWS = {
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(2, 1),
    "movedim": lambda x: x.movedim(0, -1),
    "moveaxis": lambda x: (ag if isinstance(x, ag.Tensor) else torch).moveaxis(x, -1, 0),
    "unflatten": lambda x: x.unflatten(1, (2, 2)),
    "diagonal": lambda x: x.diagonal(1, 1, 2),
    "diagonal_of_transpose": lambda x: x.transpose(0, 2).diagonal(),
}
COPIES = {
    "flip": lambda x: x.flip(0),
    "roll": lambda x: x.roll(1, 1),
    "tril": lambda x: x.tril(),
    "triu": lambda x: x.triu(),
    "diag": lambda x: x[0].diag(),
    "tile": lambda x: x.tile(1, 1),
}


@requires_torch
@pytest.mark.parametrize("name", list(VIEWS) + list(COPIES))
def test_which_ops_return_views_as_in_torch(name: str) -> None:
    fn = {**VIEWS, **COPIES}[name]
    x = ag.tensor(np.arange(60.0).reshape(3, 4, 5))
    out, tout = fn(x), fn(torch.arange(60.0, dtype=torch.float64).reshape(3, 4, 5))
    assert out._is_view() == tout._is_view() == (name in VIEWS)
    assert np.shares_memory(out.data, x.data) == (name in VIEWS)
    if name in VIEWS:
        assert out._base is x and tout._base is not None
    np.testing.assert_array_equal(out.data, tout.numpy())


@requires_torch
@pytest.mark.parametrize("name", list(VIEWS))
async def test_in_place_through_a_view_updates_the_base_as_in_torch(name: str) -> None:
    fn = VIEWS[name]
    a = np.random.default_rng(1).standard_normal((3, 4, 5))
    x, tx = ag.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = x * 1.0, tx * 1.0  # non-leaf bases, so that the in-place op is recorded
    v, tv = fn(y), fn(ty)
    assert y._version == v._version == 0
    v.mul_(2.0)
    tv.mul_(2.0)
    np.testing.assert_array_equal(y.data, ty.detach().numpy())
    assert y._version == v._version == ty._version == tv._version == 1
    assert y.grad_fn.name() == "CopySlices" and ty.grad_fn.name() == "torch::autograd::CopySlices"
    assert v.grad_fn.name() == tv.grad_fn.name() == "AsStridedBackward0"
    u = np.random.default_rng(2).standard_normal(a.shape)
    (g,) = await ag.grad(y, [x], ag.tensor(u))
    (tg,) = torch.autograd.grad(ty, [tx], torch.tensor(u))
    np.testing.assert_array_equal(g.data, tg.numpy())


@requires_torch
@pytest.mark.parametrize("name", list(VIEWS))
def test_views_see_in_place_changes_of_their_base(name: str) -> None:
    fn = VIEWS[name]
    x, tx = ag.tensor(np.zeros((3, 4, 5))), torch.zeros(3, 4, 5, dtype=torch.float64)
    v, tv = fn(x), fn(tx)
    x.add_(ag.tensor(np.arange(60.0).reshape(3, 4, 5)))
    tx.add_(torch.arange(60.0, dtype=torch.float64).reshape(3, 4, 5))
    np.testing.assert_array_equal(v.data, tv.numpy())
    assert v._version == tv._version == 1


# ================================================================================ values
@requires_torch
def test_values_and_dtypes_match_torch_on_integers() -> None:
    a = np.arange(24).reshape(2, 3, 4)
    x, tx = ag.tensor(a), torch.tensor(a)
    for fn in (lambda t: t.flip(1), lambda t: t.roll(-5), lambda t: t.roll((1, 2), (0, 2)),
               lambda t: t.narrow(2, -2, 2), lambda t: t.select(0, -1), lambda t: t.movedim(2, 0),
               lambda t: t.unflatten(2, (2, -1)), lambda t: t.tril(-1), lambda t: t.triu(2),
               lambda t: t.diagonal(-1, 2, 1), lambda t: t[0].diag(1), lambda t: t[0, 0].diag(-2),
               lambda t: t.tile(2), lambda t: t.tile((2, 1, 1, 1)), lambda t: t.diagonal(5)):
        out, tout = fn(x), fn(tx)
        assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch."))
        np.testing.assert_array_equal(out.data, tout.numpy())


def test_narrow_takes_a_tensor_start_and_an_empty_length() -> None:
    x = ag.tensor(np.arange(12.0).reshape(3, 4))
    assert x.narrow(1, ag.tensor(1), 2).tolist() == [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]]
    assert x.narrow(1, 4, 0).shape == (3, 0)
