"""Shape ops: reshape/view, flatten, transpose, T, mT, permute, squeeze, unsqueeze, expand,
broadcast_to, sum_to_size.

The per-op tests come from the ``OpSpec`` table and the factory in tests/test_ops_elementwise.py
(gradcheck, gradgradcheck, forward/first/second derivatives vs torch, float32, grad_fn names).
Error messages are pinned word for word and, where torch is installed, checked to be torch's.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

X = ((2, 3, 4),)  # the default input: 24 elements
ONES = ((2, 1, 3, 1),)  # with size-1 dims to squeeze

def quiet_T(x: Any) -> Any:
    """``x.T`` without its deprecation warning (off two dimensions; tested on its own below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return x.T


SPECS = [
    # ---------------------------------------------------------------- reshape / view
    OpSpec("reshape_neg1", lambda lib, x: x.reshape(-1), X, grad_fn="ViewBackward0"),
    OpSpec("reshape_args", lambda lib, x: x.reshape(4, -1), X, grad_fn="ViewBackward0"),
    OpSpec("reshape_tuple", lambda lib, x: x.reshape((6, 4)), X),
    OpSpec("reshape_list", lambda lib, x: x.reshape([3, 2, -1]), X),
    OpSpec("reshape_fn", lambda lib, x: lib.reshape(x, (-1, 12)), X),
    OpSpec("reshape_0d_up", lambda lib, x: x.reshape(1, 1), ((),)),
    OpSpec("reshape_to_0d", lambda lib, x: x.reshape(()), ((1,),)),
    OpSpec("reshape_noncontiguous", lambda lib, x: x.transpose(0, 2).reshape(-1), X),
    OpSpec("view", lambda lib, x: x.view(3, -1), X, grad_fn="ViewBackward0"),
    OpSpec("view_tuple", lambda lib, x: x.view((2, 12)), X),
    # ---------------------------------------------------------------- flatten
    OpSpec("flatten", lambda lib, x: x.flatten(), X, grad_fn="ViewBackward0"),
    OpSpec("flatten_start", lambda lib, x: x.flatten(1), X),
    OpSpec("flatten_start_end", lambda lib, x: x.flatten(0, 1), X),
    OpSpec("flatten_negative", lambda lib, x: x.flatten(-2, -1), X),
    OpSpec("flatten_one_dim", lambda lib, x: x.flatten(start_dim=1, end_dim=1), X),
    OpSpec("flatten_fn", lambda lib, x: lib.flatten(x, 1), ((2, 1, 3, 2),)),
    OpSpec("flatten_0d", lambda lib, x: x.flatten(), ((),)),
    # ---------------------------------------------------------------- transpose / T / mT / permute
    OpSpec("transpose", lambda lib, x: x.transpose(0, 2), X, grad_fn="TransposeBackward0"),
    OpSpec("transpose_negative", lambda lib, x: x.transpose(-1, 0), X),
    OpSpec("transpose_same", lambda lib, x: x.transpose(1, 1), X),
    OpSpec("transpose_fn", lambda lib, x: lib.transpose(x, 1, 2), X),
    OpSpec("T_2d", lambda lib, x: x.T, ((3, 4),), grad_fn="PermuteBackward0"),
    # torch deprecates .T on other ranks (a warning): aiograd reverses all dims, as it still does
    OpSpec("T_3d", lambda lib, x: quiet_T(x) * 1.0, X, torch=False, why="torch warns (deprecated .T on 3-D)"),
    OpSpec("T_1d", lambda lib, x: quiet_T(x) * 1.0, ((4,),), torch=False, why="torch warns (deprecated .T on 1-D)"),
    OpSpec("mT", lambda lib, x: x.mT, X, grad_fn="TransposeBackward0"),
    OpSpec("mT_2d", lambda lib, x: x.mT, ((3, 4),)),
    OpSpec("permute", lambda lib, x: x.permute(2, 0, 1), X, grad_fn="PermuteBackward0"),
    OpSpec("permute_tuple", lambda lib, x: x.permute((1, 2, 0)), X),
    OpSpec("permute_negative", lambda lib, x: x.permute(-1, 0, -2), X),
    OpSpec("permute_fn", lambda lib, x: lib.permute(x, (2, 1, 0)), X),
    # ---------------------------------------------------------------- squeeze / unsqueeze
    OpSpec("squeeze", lambda lib, x: x.squeeze(), ONES, grad_fn="SqueezeBackward0"),
    OpSpec("squeeze_dim", lambda lib, x: x.squeeze(1), ONES, grad_fn="SqueezeBackward1"),
    OpSpec("squeeze_negative", lambda lib, x: x.squeeze(-1), ONES),
    OpSpec("squeeze_not_one", lambda lib, x: x.squeeze(0), ONES),
    OpSpec("squeeze_tuple", lambda lib, x: x.squeeze((1, 3)), ONES, grad_fn="SqueezeBackward2"),
    OpSpec("squeeze_tuple_mixed", lambda lib, x: x.squeeze((0, -1)), ONES),
    OpSpec("squeeze_fn", lambda lib, x: lib.squeeze(x, 1), ONES),
    OpSpec("squeeze_0d", lambda lib, x: x.squeeze(), ((),)),
    OpSpec("unsqueeze", lambda lib, x: x.unsqueeze(0), X, grad_fn="UnsqueezeBackward0"),
    OpSpec("unsqueeze_end", lambda lib, x: x.unsqueeze(3), X),
    OpSpec("unsqueeze_negative", lambda lib, x: x.unsqueeze(-1), X),
    OpSpec("unsqueeze_negative_inner", lambda lib, x: x.unsqueeze(-3), X),
    OpSpec("unsqueeze_fn", lambda lib, x: lib.unsqueeze(x, 1), X),
    OpSpec("unsqueeze_0d", lambda lib, x: x.unsqueeze(-1), ((),)),
    # ---------------------------------------------------------------- expand / broadcast_to
    OpSpec("expand", lambda lib, x: x.expand(2, 3, 4), ((3, 1),), grad_fn="ExpandBackward0"),
    OpSpec("expand_neg1", lambda lib, x: x.expand(-1, 4), ((3, 1),)),
    OpSpec("expand_new_and_neg1", lambda lib, x: x.expand(2, -1, -1), ((3, 1),)),
    OpSpec("expand_tuple", lambda lib, x: x.expand((2, 3, 4)), ((1, 4),)),
    OpSpec("expand_same", lambda lib, x: x.expand(3, 4), ((3, 4),)),
    OpSpec("expand_0d", lambda lib, x: x.expand(2, 3), ((),)),
    OpSpec("broadcast_to", lambda lib, x: lib.broadcast_to(x, (2, 3, 4)), ((3, 1),),
           grad_fn="ExpandBackward0"),
    OpSpec("broadcast_to_method", lambda lib, x: x.broadcast_to((5, 4)), ((4,),)),
    # ---------------------------------------------------------------- sum_to_size
    OpSpec("sum_to_size", lambda lib, x: x.sum_to_size(1, 3, 1), X),
    OpSpec("sum_to_size_drop_lead", lambda lib, x: x.sum_to_size(3, 4), X),
    OpSpec("sum_to_size_tuple", lambda lib, x: x.sum_to_size((3, 1)), X),
    OpSpec("sum_to_size_scalar", lambda lib, x: x.sum_to_size(1), X),
    # ---------------------------------------------------------------- composites
    OpSpec(
        "chain",
        lambda lib, x: x.reshape(4, 6).T.unsqueeze(0).expand(2, -1, -1).permute(1, 0, 2).flatten(1),
        X,
        op=None,
    ),
    # a view used twice and squared: second derivatives that depend on x
    OpSpec("views_multiplied", lambda lib, x: x.mT * x.transpose(1, 2) + x.reshape(2, 4, 3), X, op=None),
    OpSpec("expand_squared", lambda lib, x: x.expand(2, 3, 4) ** 2, ((3, 1),)),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ errors
def _x(shape: tuple[int, ...]) -> Callable[[Any], Any]:
    return lambda lib: lib.zeros(*shape) if shape else lib.tensor(0.0)


# (id, op, input shape, exception, message, torch raises the same message)
ERRORS = [
    ("reshape_invalid", lambda x: x.reshape(5, -1), (2, 3, 4), RuntimeError,
     "shape '[5, -1]' is invalid for input of size 24", True),
    ("view_invalid", lambda x: x.view(7), (2, 3), RuntimeError,
     "shape '[7]' is invalid for input of size 6", True),
    ("reshape_two_inferred", lambda x: x.reshape(-1, -1), (2, 3), RuntimeError,
     "only one dimension can be inferred", True),
    ("transpose_dim", lambda x: x.transpose(0, 3), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)", True),
    ("transpose_neg_dim", lambda x: x.transpose(-4, 0), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got -4)", True),
    ("transpose_0d", lambda x: x.transpose(0, 1), (), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)", True),
    ("permute_dim", lambda x: x.permute(0, 1, 3), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)", True),
    ("permute_length", lambda x: x.permute(0, 1), (2, 3, 4), RuntimeError,
     "permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
     "the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2", True),
    ("permute_duplicate", lambda x: x.permute(0, 0, 1), (2, 3, 4), RuntimeError,
     "permute(): duplicate dims are not allowed.", True),
    ("permute_duplicate_negative", lambda x: x.permute(0, -3, 1), (2, 3, 4), RuntimeError,
     "permute(): duplicate dims are not allowed.", True),
    ("squeeze_dim", lambda x: x.squeeze(3), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)", True),
    ("squeeze_tuple_dim", lambda x: x.squeeze((0, -4)), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got -4)", True),
    ("squeeze_0d", lambda x: x.squeeze(1), (), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)", True),
    ("squeeze_repeated", lambda x: x.squeeze((0, -2)), (3, 1), RuntimeError,
     "dim 0 appears multiple times in the list of dims", True),
    ("unsqueeze_dim", lambda x: x.unsqueeze(4), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-4, 3], but got 4)", True),
    ("unsqueeze_neg_dim", lambda x: x.unsqueeze(-5), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-4, 3], but got -5)", True),
    ("unsqueeze_0d", lambda x: x.unsqueeze(-2), (), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got -2)", True),
    ("flatten_order", lambda x: x.flatten(2, 1), (2, 3, 4), RuntimeError,
     "flatten() has invalid args: start_dim cannot come after end_dim", True),
    ("flatten_dim", lambda x: x.flatten(0, 5), (2, 3, 4), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 5)", True),
    ("expand_mismatch", lambda x: x.expand(3, 3, 4), (2, 3, 4), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
     "dimension 0.  Target sizes: [3, 3, 4].  Tensor sizes: [2, 3, 4]", True),
    ("expand_too_few", lambda x: x.expand(3, 4), (2, 3, 4), RuntimeError,
     "expand(aiograd.Tensor{[2, 3, 4]}, size=[3, 4]): the number of sizes provided (2) must be "
     "greater or equal to the number of dimensions in the tensor (3)", False),
    ("expand_leading_neg1", lambda x: x.expand(-1, 3, 4), (3, 4), RuntimeError,
     "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0", True),
    ("broadcast_to_mismatch", lambda x: x.broadcast_to((2, 5)), (3,), RuntimeError,
     "The expanded size of the tensor (5) must match the existing size (3) at non-singleton "
     "dimension 1.  Target sizes: [2, 5].  Tensor sizes: [3]", True),
    ("sum_to_size_not_expandable", lambda x: x.sum_to_size(1, 4), (3, 1), RuntimeError,
     "size {[1, 4]} is not expandable to size {[3, 1]}.", True),
    ("sum_to_size_more_dims", lambda x: x.sum_to_size(2, 3, 1), (3, 1), RuntimeError,
     "size {[2, 3, 1]} is not expandable to size {[3, 1]}.", True),
    ("sum_to_size_wrong_size", lambda x: x.sum_to_size(2, 4), (3, 4), RuntimeError,
     "size {[2, 4]} is not expandable to size {[3, 4]}.", True),
    ("mT_1d", lambda x: x.mT, (3,), RuntimeError,
     "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.", True),
    # (mT of a 0-D tensor is the tensor itself, as torch 2.13's: tests/test_torch_errors.py)
]


@pytest.mark.parametrize(
    ("op", "shape", "exc", "message", "same_in_torch"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_error_messages(op: Any, shape: Any, exc: Any, message: str, same_in_torch: bool) -> None:
    x = ag.tensor(np.zeros(shape), requires_grad=True)
    with pytest.raises(exc, match=f"^{re.escape(message)}$"):
        op(x)
    if torch is not None and same_in_torch:
        with pytest.raises(exc, match=f"^{re.escape(message)}$"):
            op(torch.zeros(shape, requires_grad=True))


# ================================================================================ behaviour
@pytest.mark.parametrize(
    "op",
    [
        lambda x: x.reshape(6, 4), lambda x: x.view(-1), lambda x: x.flatten(1),
        lambda x: x.transpose(0, 2), quiet_T, lambda x: x.mT, lambda x: x.permute(1, 2, 0),
        lambda x: x.unsqueeze(1), lambda x: x.unsqueeze(1).squeeze(1), lambda x: x.squeeze(),
        lambda x: x.unsqueeze(0).expand(5, -1, -1, -1), lambda x: x.broadcast_to((2, 2, 3, 4)),
    ],
    ids=["reshape", "view", "flatten", "transpose", "T", "mT", "permute", "unsqueeze", "squeeze",
         "squeeze_none", "expand", "broadcast_to"],
)
def test_views_share_memory(op: Any) -> None:
    x = ag.tensor(np.arange(24.0).reshape(2, 3, 4))
    assert np.shares_memory(op(x).data, x.data)


def test_identity_cases_return_or_keep_the_input() -> None:
    x = ag.tensor(np.ones((3, 4)), requires_grad=True)
    assert x.sum_to_size(3, 4) is x
    v = ag.tensor([1.0, 2.0], requires_grad=True)
    vt = quiet_T(v)  # no dims to reverse: a view of it unchanged, as torch's
    assert vt is not v and vt._base is v and vt.tolist() == [1.0, 2.0]
    assert ag.tensor(5.0).flatten().shape == (1,)
    assert x.squeeze().shape == (3, 4) and x.squeeze().grad_fn.name() == "SqueezeBackward0"


def test_shapes_and_values() -> None:
    x = ag.tensor(np.arange(24.0).reshape(2, 3, 4))
    assert x.reshape(-1).tolist() == list(range(24))
    assert x.view(4, -1).shape == (4, 6)
    assert x.reshape(np.int64(2), -1).shape == (2, 12)
    assert x.flatten(1).shape == (2, 12) and x.flatten(0, 1).shape == (6, 4)
    assert x.flatten(-2).shape == (2, 12)
    assert x.transpose(0, 2).shape == (4, 3, 2) and quiet_T(x).shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)
    np.testing.assert_array_equal(quiet_T(x).data, x.data.T)
    assert x.permute(2, 0, 1).shape == (4, 2, 3)
    assert x.unsqueeze(-1).shape == (2, 3, 4, 1) and x.unsqueeze(-4).shape == (1, 2, 3, 4)
    y = ag.tensor(np.zeros((1, 3, 1, 2)))
    assert y.squeeze().shape == (3, 2) and y.squeeze(0).shape == (3, 1, 2)
    assert y.squeeze((0, 2)).shape == (3, 2) and y.squeeze([2, 0]).shape == (3, 2)
    assert y.squeeze(1).shape == (1, 3, 1, 2)
    assert ag.tensor([[1.0], [2.0]]).expand(2, 3).tolist() == [[1.0] * 3, [2.0] * 3]
    assert ag.tensor(np.ones((2, 3, 4))).sum_to_size(3, 1).tolist() == [[8.0]] * 3


async def test_gradients_of_broadcast_and_sum_to_size_are_adjoint() -> None:
    # <expand(x), y> == <x, sum_to_size(y)>, and the gradients say so
    rng = np.random.default_rng(7)
    x = ag.tensor(rng.standard_normal((3, 1)), requires_grad=True)
    y = ag.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    lhs = (x.expand(2, 3, 4) * y).sum()
    rhs = (x * y.sum_to_size(3, 1)).sum()
    np.testing.assert_allclose(lhs.item(), rhs.item())
    gx1, gy1 = await ag.grad(lhs, [x, y])
    gx2, gy2 = await ag.grad(rhs, [x, y])
    np.testing.assert_allclose(gx1.data, gx2.data)
    np.testing.assert_allclose(gy1.data, gy2.data)


async def test_float32_through_a_chain_of_views() -> None:
    x = ag.tensor(np.ones((2, 3, 4)), dtype=np.float32, requires_grad=True)
    out = x.reshape(6, 4).T.unsqueeze(0).expand(3, -1, -1).permute(1, 2, 0).flatten()
    out = out.reshape(4, 18).sum_to_size(1, 18).squeeze(0) * 2.0
    assert out.dtype == np.float32
    await out.sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.shape == (2, 3, 4)
    np.testing.assert_array_equal(x.grad.data, np.full((2, 3, 4), 6.0, dtype=np.float32))


@pytest.mark.parametrize(
    ("shape", "message"),
    [((), "Tensor.T is deprecated on 0-D tensors"), ((3,), "The use of `x.T` on tensors of dimension other than 2"),
     ((2, 3, 4), "The use of `x.T` on tensors of dimension other than 2")],
)
def test_T_off_two_dimensions_warns_as_torch_and_is_still_a_view(shape: tuple[int, ...], message: str) -> None:
    x = ag.tensor(np.ones(shape), requires_grad=True)
    with pytest.warns(UserWarning, match=re.escape(message)) as record:
        y = x.T
    assert record[0].filename == __file__  # pointed at the caller's line
    assert y is not x and y.grad_fn.name() == "PermuteBackward0" and y.shape == shape[::-1]
    if torch is not None:  # (torch warns once a process: not checked here)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert torch.ones(shape, requires_grad=True).T.grad_fn.name() == "PermuteBackward0"


def test_T_of_a_matrix_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ag.ones(2, 3).T.shape == (3, 2)
