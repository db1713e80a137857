"""In-place ops, views and version counters (issue 3), checked against PyTorch.

- Version counters: every in-place op bumps (under no_grad too) and returns self; views, their
  views and ``detach()`` share the counter and the storage; ``x.data = y`` keeps it.
- PyTorch's errors, word for word: leaves and views of leaves, views made under no_grad,
  broadcast views, shapes and dtypes, ``detach_()``, saved tensors modified or detached in place.
- The graph: an in-place op's node becomes the grad_fn with its edge 0 to the old one; on a view
  the base is rebased (``CopySlices``) and the views get ``AsStridedBackward0``; retained grads
  follow the tensor, hooks stay.
- Gradients: a table of scenarios (in-place on slices, on bases seen through views, chains of
  views, ``__setitem__`` with masks and index arrays) whose values and first and second
  derivatives are compared with torch, and checked with finite differences.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd._core._node import Node
from aiograd._core._views import View, view_index
from aiograd._ops.inplace import CopySlices, rebase_inplace
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
DETACHED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


def const(lib: Any, value: Any) -> Any:
    """A constant operand: the numpy array for aiograd, a tensor for torch."""
    return value if lib is ag else torch.as_tensor(np.asarray(value))


def raises_exactly(exc: type[Exception], message: str) -> Any:
    """The whole message (an error raised in backward also has a "while running" note)."""
    return pytest.raises(exc, match="^" + re.escape(message) + r"(\nwhile running \w+)?$")


def torch_message(fn: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as info:
        fn()
    return str(info.value)


# ============================================================================ version counters
INPLACE_OPS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add_", lambda lib, t: t.add_(2.0)),
    ("add_alpha", lambda lib, t: t.add_(const(lib, np.arange(4.0)), alpha=0.5)),
    ("sub_", lambda lib, t: t.sub_(const(lib, np.arange(4.0)), alpha=2)),
    ("mul_", lambda lib, t: t.mul_(3.0)),
    ("div_", lambda lib, t: t.div_(const(lib, np.arange(1.0, 5.0)))),
    ("pow_", lambda lib, t: t.pow_(2)),
    ("pow_tensor", lambda lib, t: t.pow_(const(lib, np.arange(4.0)))),
    ("neg_", lambda lib, t: t.neg_()),
    ("exp_", lambda lib, t: t.exp_()),
    ("relu_", lambda lib, t: t.relu_()),
    ("clamp_", lambda lib, t: t.clamp_(-0.5, 0.5)),
    ("clamp_min", lambda lib, t: t.clamp_(min=0.0)),
    ("clamp_tensor", lambda lib, t: t.clamp_(const(lib, np.full(4, -0.3)), const(lib, np.full(4, 0.2)))),
    ("zero_", lambda lib, t: t.zero_()),
    ("fill_", lambda lib, t: t.fill_(1.5)),
    ("copy_", lambda lib, t: t.copy_(const(lib, np.arange(4.0)))),
    ("copy_broadcast", lambda lib, t: t.copy_(const(lib, np.array(7.0)))),
]
VALUES = np.array([-1.5, -0.25, 0.5, 2.0])


@pytest.mark.parametrize("name,op", INPLACE_OPS, ids=[n for n, _ in INPLACE_OPS])
def test_inplace_op_modifies_returns_self_and_bumps(name: str, op: Callable[[Any, Any], Any]) -> None:
    x = ag.tensor(VALUES)
    data = x.data
    assert op(ag, x) is x and x.data is data and x._version == 1
    with ag.no_grad():
        op(ag, x)
    assert x._version == 2
    if torch is not None:
        t = torch.tensor(VALUES)
        op(torch, t)
        op(torch, t)
        np.testing.assert_allclose(x.data, t.numpy(), rtol=1e-12)
        assert t._version == x._version


def test_augmented_assignment_is_in_place() -> None:
    x = ag.tensor([1.0, 2.0])
    v = x[1:]
    y = x
    y += 1
    y -= ag.tensor([0.5, 0.5])
    y *= 4
    y /= 2
    y **= 2
    assert y is x and x._version == 5 and v._version == 5
    np.testing.assert_allclose(x.data, [9.0, 25.0])
    np.testing.assert_allclose(v.data, [25.0])


def test_setitem_bumps_and_writes_through_views() -> None:
    x = ag.zeros(3, 4)
    row = x[1]
    x[1, 2] = 5.0
    x[0] = ag.tensor([1.0, 2.0, 3.0, 4.0])
    x[np.array([False, False, True])] = 7.0
    x[ag.tensor([0, 2]), 3] = -1.0
    row[0] = 9.0
    assert x._version == 5 and row._version == 5
    expected = np.zeros((3, 4))
    expected[1, 2], expected[0], expected[2], expected[[0, 2], 3], expected[1, 0] = 5, [1, 2, 3, 4], 7, -1, 9
    np.testing.assert_array_equal(x.data, expected)


def test_no_grad_path_works_on_any_dtype_and_records_nothing() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    i = ag.tensor([1, 2])
    i.mul_(3).add_(1)
    i[0] = 0
    assert i.tolist() == [0, 7] and i._version == 3 and i.grad_fn is None
    with ag.no_grad():
        w.mul_(2)  # a leaf may be modified under no_grad
        w[0] = 5.0
    assert w.is_leaf and w.grad_fn is None and w._version == 2 and w.tolist() == [5.0, 4.0]


VIEW_OPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("view", lambda x: x.view(6, 4)),
    ("reshape", lambda x: x.reshape(-1)),
    ("flatten", lambda x: x.flatten(1)),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("T", lambda x: x[1].T),
    ("mT", lambda x: x.mT),
    ("permute", lambda x: x.permute(1, 2, 0)),
    ("squeeze", lambda x: x[:, :1].squeeze(1)),
    ("squeeze_all", lambda x: x.squeeze()),
    ("unsqueeze", lambda x: x.unsqueeze(1)),
    ("expand", lambda x: x[:, :, :1].expand(2, 3, 5)),
    ("slice", lambda x: x[1:, ::2]),
    ("select", lambda x: x[0]),
    ("select_0d", lambda x: x[0, 1, 2]),
    ("ellipsis", lambda x: x[..., 1]),
    ("none", lambda x: x[None]),
    ("view_of_view", lambda x: x[1].T[2:]),
]


@pytest.mark.parametrize("name,op", VIEW_OPS, ids=[n for n, _ in VIEW_OPS])
def test_views_share_storage_and_version_counter(name: str, op: Callable[[Any], Any]) -> None:
    x = ag.tensor(np.arange(24.0).reshape(2, 3, 4))
    v = op(x)
    assert type(v) is View and isinstance(v, ag.Tensor) and type(v).__name__ == "Tensor"
    assert v._is_view() and v._base is x and not x._is_view() and x._base is None
    assert np.shares_memory(v.data, x.data)
    x.add_(1)
    assert v._version == 1
    np.testing.assert_array_equal(v.data, op(ag.tensor(np.arange(24.0).reshape(2, 3, 4) + 1)).data)
    if name != "expand":
        v.mul_(2)  # writes through to the base
        assert x._version == 2 and v._version == 2
        np.testing.assert_array_equal(op(x).data, v.data)
    if torch is not None:
        t = op(torch.arange(24.0).reshape(2, 3, 4))
        assert t._is_view()


def test_copies_are_not_views() -> None:
    x = ag.tensor(np.arange(6.0).reshape(2, 3))
    for copy in (x.T.reshape(-1), x[[0, 1]], x[x > 2], x.clone(), x.detach(), x.repeat(2, 1)):
        assert not copy._is_view() and copy._base is None
    assert x.contiguous() is x and x.sum_to_size(2, 3) is x
    if torch is not None:
        t = torch.arange(6.0).reshape(2, 3)
        assert not any(c._is_view() for c in (t.T.reshape(-1), t[[0, 1]], t[t > 2], t.detach()))


def test_view_needs_compatible_strides() -> None:
    message = (
        "view size is not compatible with input tensor's size and stride (at least one dimension "
        "spans across two contiguous subspaces). Use .reshape(...) instead."
    )
    x = ag.tensor(np.arange(6.0).reshape(2, 3))
    with raises_exactly(RuntimeError, message):
        x.T.view(6)
    assert x.T.reshape(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    if torch is not None:
        assert torch_message(lambda: torch.arange(6.0).reshape(2, 3).T.view(6)) == message


def test_detach_shares_counter_and_storage_but_is_not_a_view() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d._is_view() and not d.requires_grad and np.shares_memory(d.data, y.data)
    d.zero_()
    assert y._version == 1 and y.tolist() == [0.0, 0.0]
    v = y[1:]
    dv = v.detach()
    dv.add_(1)
    assert y._version == v._version == dv._version == 2


def test_data_assignment_keeps_version_counter() -> None:
    x = ag.tensor([1.0, 2.0])
    x.add_(1)
    counter = x._vc
    x.data = np.array([5.0, 6.0, 7.0])
    assert x._vc is counter and x._version == 1
    if torch is not None:
        t = torch.tensor([1.0, 2.0])
        t.add_(1)
        t.data = torch.tensor([5.0, 6.0, 7.0])
        assert t._version == 1


# ============================================================================ errors
async def test_leaf_errors_and_their_exceptions() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with raises_exactly(RuntimeError, LEAF):
        x.add_(1)
    with raises_exactly(RuntimeError, LEAF):
        x += 1
    with raises_exactly(RuntimeError, LEAF):
        x[[0]] = 1.0
    with raises_exactly(RuntimeError, VIEW_OF_LEAF):
        x[0] = 1.0
    with raises_exactly(RuntimeError, VIEW_OF_LEAF):
        x[1:].mul_(2)
    with raises_exactly(RuntimeError, VIEW_OF_LEAF):
        x.unsqueeze(0).zero_()
    with raises_exactly(RuntimeError, LEAF):
        x[...] = 1.0  # full slices and Ellipsis write to the tensor itself, as in PyTorch
    with raises_exactly(RuntimeError, LEAF):
        x[:] = ag.ones(3)
    # A leaf that does not require grad may take an operand that does (it joins the graph).
    a = ag.zeros(3)
    a.mul_(x)
    assert a.requires_grad and not a.is_leaf and a.grad_fn.name() == "MulBackward0"
    assert x._version == 0 and a._version == 1
    if torch is not None:
        t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        assert torch_message(lambda: t.add_(1)) == LEAF
        assert torch_message(lambda: t.__setitem__([0], 1.0)) == LEAF
        assert torch_message(lambda: t.__setitem__(0, 1.0)) == VIEW_OF_LEAF
        assert torch_message(lambda: t[1:].mul_(2)) == VIEW_OF_LEAF
        assert torch_message(lambda: t.__setitem__(Ellipsis, 1.0)) == LEAF
        assert torch_message(lambda: t.__setitem__(slice(None), torch.ones(3))) == LEAF


def test_view_of_a_leaf_that_requires_grad_later_still_refuses() -> None:
    x = ag.zeros(3)
    v = x[:2]
    x.requires_grad_()
    with raises_exactly(RuntimeError, VIEW_OF_LEAF):
        v.mul_(2)
    if torch is not None:
        t = torch.zeros(3)
        tv = t[:2]
        t.requires_grad_()
        assert torch_message(lambda: tv.mul_(2)) == VIEW_OF_LEAF


def test_view_made_under_no_grad_cannot_be_modified_with_grad() -> None:
    message = (
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
        "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
        "your code by moving both the view and the inplace either both inside the no_grad block "
        "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
        "to be tracked)."
    )
    y = ag.tensor([[1.0, 2.0, 3.0]], requires_grad=True) * 2
    with ag.no_grad():
        v = y[0, :2]
        u = y.T
        v.mul_(2)  # fine inside no_grad
    with raises_exactly(RuntimeError, message):
        v.mul_(2)
    with raises_exactly(RuntimeError, message):
        u.add_(1)
    if torch is not None:
        ty = torch.tensor([1.0, 2.0, 3.0], requires_grad=True) * 2
        with torch.no_grad():
            tv = ty[:2]
        assert torch_message(lambda: tv.mul_(2)) == message


def test_views_from_a_multi_output_node_refuse_recorded_in_place_ops() -> None:
    # PyTorch names the forward op ("Split"), not the node ("SplitBackward0").
    message = (
        "Output 1 of Split is a view and is being modified inplace. This view is the "
        "output of a function that returns multiple views. Such functions do not allow the output "
        "views to be modified inplace. You should replace the inplace operation by an out-of-place "
        "one."
    )
    y = ag.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) * 1
    v = y.split(2)[1]
    with raises_exactly(RuntimeError, message):
        v.mul_(2)
    with ag.no_grad():
        v.mul_(2)
    assert y.tolist() == [1.0, 2.0, 6.0, 8.0]
    if torch is not None:
        ty = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) * 1
        assert torch_message(lambda: ty.split(2)[1].mul_(2)) == message


def test_writing_to_a_broadcast_view_is_refused() -> None:
    y = ag.tensor([[1.0, 2.0, 3.0]], requires_grad=True) * 1
    e = y.expand(2, 3)
    with raises_exactly(RuntimeError, OVERLAP):
        e.add_(1)
    with raises_exactly(RuntimeError, OVERLAP):
        ag.zeros(1).expand(4).copy_(ag.ones(4))
    assert y._version == 0
    if torch is not None:
        assert torch_message(lambda: torch.zeros(3).expand(2, 3).add_(1)) == OVERLAP


def test_zeroing_or_filling_a_broadcast_view_is_allowed() -> None:
    # torch lets zero_/fill_ write into a tensor whose elements share memory (every element gets
    # the same value, so the write order does not matter); add_ and copy_ are refused above.
    z = ag.ones(3)
    ag.ones(1).expand(4).zero_()
    z.expand(2, 3).zero_()
    assert z.tolist() == [0.0, 0.0, 0.0]
    z.expand(2, 3).fill_(2.5)
    assert z.tolist() == [2.5, 2.5, 2.5]


SHAPE_ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("add_mismatch", lambda lib: lib.zeros(3).add_(lib.ones(2))),
    ("mul_grows", lambda lib: lib.zeros(2, 3).mul_(lib.ones(4, 1, 1))),
    ("copy_mismatch", lambda lib: lib.zeros(3).copy_(lib.ones(2))),
    ("copy_grows", lambda lib: lib.zeros(3).copy_(lib.ones(2, 3))),
    ("int_cast", lambda lib: lib.zeros(3, dtype=lib.int64).add_(lib.ones(3, dtype=lib.float64))),
    ("setitem_basic", lambda lib: lib.zeros(3).__setitem__(slice(0, 2), lib.ones(3))),
    ("setitem_rank", lambda lib: lib.zeros(3).__setitem__(slice(0, 2), lib.ones(2, 3))),
    ("setitem_advanced", lambda lib: lib.zeros(3).__setitem__([0, 1], lib.ones(3))),
    ("fill_tensor", lambda lib: lib.zeros(3).fill_(lib.ones(2))),
]


@pytest.mark.parametrize("name,fn", SHAPE_ERRORS, ids=[n for n, _ in SHAPE_ERRORS])
def test_shape_and_dtype_errors(name: str, fn: Callable[[Any], Any]) -> None:
    expected = {
        "add_mismatch": "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0",
        "mul_grows": "output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]",
        "copy_mismatch": "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0",
        "copy_grows": "output with shape [3] doesn't match the broadcast shape [2, 3]",
        "int_cast": "result type Double can't be cast to the desired output type Long",
        "setitem_basic": "The expanded size of the tensor (2) must match the existing size (3) at "
        "non-singleton dimension 0.  Target sizes: [2].  Tensor sizes: [3]",
        "setitem_rank": "expand(aiograd.Tensor{[2, 3]}, size=[2]): the number of sizes provided (1) "
        "must be greater or equal to the number of dimensions in the tensor (2)",
        "setitem_advanced": "shape mismatch: value tensor of shape [3] cannot be broadcast to "
        "indexing result of shape [2]",
        "fill_tensor": "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions.",
    }[name]
    with raises_exactly(RuntimeError, expected):
        fn(ag)
    # The recorded path (an operand that requires grad) gives the same message.
    if name not in ("int_cast", "fill_tensor"):
        with raises_exactly(RuntimeError, expected):
            fn_grad = {
                "add_mismatch": lambda: ag.zeros(3).add_(ag.ones(2, requires_grad=True)),
                "mul_grows": lambda: ag.zeros(2, 3).mul_(ag.ones(4, 1, 1, requires_grad=True)),
                "copy_mismatch": lambda: ag.zeros(3).copy_(ag.ones(2, requires_grad=True)),
                "copy_grows": lambda: ag.zeros(3).copy_(ag.ones(2, 3, requires_grad=True)),
                "setitem_basic": lambda: ag.zeros(3).__setitem__(slice(0, 2), ag.ones(3, requires_grad=True)),
                "setitem_rank": lambda: ag.zeros(3).__setitem__(slice(0, 2), ag.ones(2, 3, requires_grad=True)),
                "setitem_advanced": lambda: ag.zeros(3).__setitem__([0, 1], ag.ones(3, requires_grad=True)),
            }[name]
            fn_grad()
    if torch is not None:
        assert torch_message(lambda: fn(torch)) == expected.replace("aiograd.Tensor", "torch.FloatTensor")


def test_detach_inplace() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None and y._version == 0
    z = x * 3
    with raises_exactly(RuntimeError, "Can't detach views in-place. Use detach() instead."):
        z[1:].detach_()
    v = z[1:]
    z.detach_()  # detaching the base leaves its views in the graph
    assert v.requires_grad and v.grad_fn.name() == "SliceBackward0"
    if torch is not None:
        tz = torch.tensor([1.0, 2.0], requires_grad=True) * 3
        assert "view" in torch_message(lambda: tz[1:].detach_())


async def test_saved_tensor_detached_in_place() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    z = y * y  # saves y as an input
    y.detach_()
    with raises_exactly(RuntimeError, DETACHED):
        await z.sum().backward()
    y = x.exp()
    z = y.exp()  # saves only its own output
    y.detach_()
    await z.sum().backward()
    np.testing.assert_allclose(x.grad.data, np.exp(np.exp([1.0, 2.0, 3.0])) * np.exp([1.0, 2.0, 3.0]))
    if torch is not None:
        tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        ty = tx.exp()
        tz = ty * ty
        ty.detach_()
        assert torch_message(lambda: tz.sum().backward()) == DETACHED


def _version_error(kind: str, shape: str, which: str, now: int = 1, then: int = 0) -> str:
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [aiograd.{kind} [{shape}]]{which} is at version {now}; expected version "
        f"{then} instead. Hint: enable anomaly detection to find the operation that failed to "
        "compute its gradient, with aiograd.set_detect_anomaly(True, check_nan=False)."
    )


async def test_saved_tensors_see_in_place_changes() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    cases: list[tuple[Callable[[], Any], str]] = []

    def saved_input() -> Any:  # y saved by y * y; its grad_fn is now the add_'s
        y = x.exp()
        z = y * y
        y.add_(1)
        return z

    def saved_output() -> Any:  # z's ExpBackward0 saved z itself
        z = x.exp()
        z.add_(1)
        return z

    def view_after_base() -> Any:  # the view's grad_fn was regenerated
        y = x.clone()
        v = y[0:2]
        z = v * v
        y.mul_(2)
        return z

    def base_after_view() -> Any:  # the base's grad_fn is the CopySlices
        y = x.clone()
        z = y * y
        y[0:2].mul_(2)
        return z

    def itself() -> Any:  # x * x with in-place on one side
        y = x * 1
        y.mul_(y)
        return y

    keep = []

    def exp_on_view() -> Any:  # a view's exp_ saved its output: named by the view's grad_fn
        y = x * 1
        v = y[1:]
        v.exp_()
        y.add_(1)
        keep.append(v)  # (the grad_fn is held weakly, as in PyTorch: it lives with the view)
        return y

    def exp_on_view_twice() -> Any:  # ... unless that one is gone (freed with the later op)
        y = x * 1
        v = y[1:]
        v.exp_()
        v.add_(1)
        return y

    cases = [
        (saved_input, _version_error("DoubleTensor", "3", ", which is output 0 of Add,")),
        (saved_output, _version_error("DoubleTensor", "3", ", which is output 0 of Exp,")),
        (view_after_base, _version_error("DoubleTensor", "2", ", which is output 0 of AsStrided,")),
        (base_after_view, _version_error("DoubleTensor", "3", ", which is output 0 of CopySlices,")),
        (itself, _version_error("DoubleTensor", "3", ", which is output 0 of Mul,")),
        (exp_on_view, _version_error("DoubleTensor", "2", ", which is output 0 of AsStrided,", 2, 1)),
        (exp_on_view_twice, _version_error("DoubleTensor", "2", ", which is output 0 of Exp,", 2, 1)),
    ]
    for make, message in cases:
        with raises_exactly(RuntimeError, message):
            await make().sum().backward()
    if torch is not None:  # the same cases fail in torch, with the same words
        tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        for make, message in cases:
            x = tx  # noqa: F841 - the closures read ``x``
            with pytest.raises(RuntimeError) as raised:
                make().sum().backward()
            theirs = str(raised.value).replace("torch.autograd.", "aiograd.").replace("torch.", "aiograd.")
            theirs = theirs.replace("torch::autograd::", "")  # its C++ name of CopySlices
            assert theirs == message, make.__name__


# ============================================================================ graph structure
GRAD_FN_NAMES: list[tuple[Callable[[Any, Any, Any], Any], str]] = [
    (lambda lib, y, w: y.add_(w), "AddBackward0"),
    (lambda lib, y, w: y.add_(1.0), "AddBackward0"),
    (lambda lib, y, w: y.sub_(w, alpha=2), "SubBackward0"),
    (lambda lib, y, w: y.mul_(w), "MulBackward0"),
    (lambda lib, y, w: y.div_(w), "DivBackward0"),
    (lambda lib, y, w: y.pow_(2), "PowBackward0"),
    (lambda lib, y, w: y.pow_(w), "PowBackward1"),
    (lambda lib, y, w: y.neg_(), "NegBackward0"),
    (lambda lib, y, w: y.exp_(), "ExpBackward0"),
    (lambda lib, y, w: y.relu_(), "ReluBackward0"),
    (lambda lib, y, w: y.clamp_(0.0, 1.0), "ClampBackward1"),
    (lambda lib, y, w: y.clamp_(w - 1, w + 1), "ClampBackward0"),
    (lambda lib, y, w: y.clamp_(min=w), "ClampBackward0"),
    (lambda lib, y, w: y.zero_(), "ZeroBackward0"),
    (lambda lib, y, w: y.fill_(2.0), "FillBackward2"),
    (lambda lib, y, w: y.fill_(w[0]), "FillBackward3"),
    (lambda lib, y, w: y.copy_(w), "CopyBackwards"),
    (lambda lib, y, w: y.__setitem__(const(lib, np.array([0, 2])), w[:2]), "IndexPutBackward0"),
    (lambda lib, y, w: y.__setitem__(const(lib, np.array([True, False, True])), 3.0), "IndexPutBackward0"),
    (lambda lib, y, w: y.__setitem__(1, w[0]), "CopySlices"),
    (lambda lib, y, w: y.__setitem__(slice(0, 2), 5.0), "CopySlices"),
    (lambda lib, y, w: y.__setitem__(Ellipsis, 5.0), "FillBackward3"),  # no view: y itself
    (lambda lib, y, w: y.__setitem__(slice(None), w), "CopyBackwards"),
    (lambda lib, y, w: y[1:].mul_(2), "CopySlices"),
]


@pytest.mark.parametrize("i", range(len(GRAD_FN_NAMES)))
def test_grad_fn_of_an_in_place_op_leads_to_the_old_one(i: int) -> None:
    op, name = GRAD_FN_NAMES[i]
    x = ag.tensor([0.5, 1.5, 2.5], requires_grad=True)
    w = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    old = y.grad_fn
    op(ag, y, w)
    assert y.grad_fn.name() == name and y.output_nr == 0 and y.requires_grad and not y.is_leaf
    assert y.grad_fn.next_functions[0] == (old, 0)
    if torch is not None:
        tx = torch.tensor([0.5, 1.5, 2.5], requires_grad=True)
        ty = tx * 2
        op(torch, ty, torch.tensor([1.0, 2.0, 3.0], requires_grad=True))
        assert ty.grad_fn.name().replace("torch::autograd::", "") == name
        assert len(ty.grad_fn.next_functions) == len(y.grad_fn.next_functions)


def test_view_rebase_graph() -> None:
    x = ag.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    old = y.grad_fn
    v = y[1]
    sibling = y[:, 0]
    sibling_fn = sibling.grad_fn
    v.mul_(w)
    cs = y.grad_fn
    assert type(cs) is CopySlices and cs.name() == "CopySlices"
    assert cs.next_functions[0] == (old, 0) and cs.next_functions[1][0].variable is w
    assert v.grad_fn.name() == "AsStridedBackward0" and v.grad_fn.next_functions == ((cs, 0),)
    # The sibling view is regenerated when read, since the base's version moved.
    assert sibling_fn.name() == "SelectBackward0"
    assert sibling.grad_fn.name() == "AsStridedBackward0" and sibling.grad_fn.next_functions == ((cs, 0),)
    # An in-place op on the base regenerates the views too.
    y.add_(1)
    assert v.grad_fn.next_functions[0][0] is y.grad_fn and y.grad_fn.name() == "AddBackward0"
    if torch is not None:
        ty = torch.arange(6.0).reshape(2, 3).requires_grad_() * 1
        tv, ts = ty[1], ty[:, 0]
        tv.mul_(torch.tensor([1.0, 2.0, 3.0], requires_grad=True))
        assert ty.grad_fn.name() == "torch::autograd::CopySlices"
        assert tv.grad_fn.name() == ts.grad_fn.name() == "AsStridedBackward0"


def test_views_of_a_tensor_that_joins_the_graph_follow_it() -> None:
    w = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = ag.zeros(3)
    v = a[1:]
    assert not v.requires_grad and v.grad_fn is None
    a.mul_(w)
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    b = ag.zeros(3)
    u = b[1:]
    u.mul_(w[1:])  # the base joins the graph through its view
    assert b.requires_grad and b.grad_fn.name() == "CopySlices"
    assert b.grad_fn.next_functions[0] == (None, 0)
    if torch is not None:
        ta, tw = torch.zeros(3), torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        tv = ta[1:]
        ta.mul_(tw)
        assert tv.requires_grad and tv.grad_fn.name() == "AsStridedBackward0"


async def test_retained_grad_follows_the_latest_version() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.mul_(2)
    await y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0, 1.0] and x.grad.tolist() == [2.0, 2.0, 2.0]
    x.grad = None
    y = x * 1
    y.retain_grad()
    y[0:2].mul_(2)  # through a view: the base's retained grad moves to the CopySlices
    await y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0, 1.0] and x.grad.tolist() == [2.0, 2.0, 1.0]
    for modify_base in (True, False):
        x.grad = None
        y = x * 1
        v = y[0:2]
        v.retain_grad()
        if modify_base:
            y.mul_(3)
        else:
            v.mul_(3)
        await (v * v).sum().backward()
        assert v.grad.tolist() == [6.0, 12.0] and x.grad.tolist() == [18.0, 36.0, 0.0]


async def test_hook_registered_before_stays_with_the_old_version() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    before, after = [], []
    y.register_hook(lambda g: before.append(g.tolist()))
    y.mul_(2)
    y.register_hook(lambda g: after.append(g.tolist()))
    await y.sum().backward()
    assert before == [[2.0, 2.0, 2.0]] and after == [[1.0, 1.0, 1.0]]


async def test_copy_slices_frees_its_node_unless_retained() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[0:2].add_(1)
    s = y.sum()
    await s.backward(retain_graph=True)
    await s.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        await s.backward()


class _Twice(Node):
    """A node that doubles its gradient, async or not (for rebase_inplace)."""

    def apply(self, grads):  # type: ignore[no-untyped-def]
        return (grads[0] * 2,)


class _AsyncTwice(_Twice):
    is_async = True

    async def apply(self, grads):  # type: ignore[no-untyped-def]
        import asyncio

        await asyncio.sleep(0)
        return (grads[0] * 2,)


@pytest.mark.parametrize("cls", [_Twice, _AsyncTwice])
async def test_rebase_inplace_for_custom_nodes(cls: type[Node]) -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    v = y[1:]
    with ag.no_grad():
        v.mul_(2)  # what a custom Function's forward does, then mark_dirty
    rebase_inplace(v, cls((v.grad_fn and (v.grad_fn, 0),)), 0)
    assert y.grad_fn.name() == "CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    await y.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 2.0] and y.grad.tolist() == [1.0, 1.0, 1.0]
    z = x * 1
    node = cls(((z.grad_fn, 0),))
    node.num_inputs = 2
    with raises_exactly(RuntimeError, "Functions which modify views in-place must return a single Variable"):
        rebase_inplace(z[1:], node, 0)
    rebase_inplace(z, node, 1)
    assert z.grad_fn is node and z.output_nr == 1


class _DoubleDirty(ag.Function):
    """Doubles its input in place (``mark_dirty``); the backward may be async."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        x.data *= 2
        ctx.mark_dirty(x)
        return x

    @staticmethod
    async def backward(ctx: Any, g: Any) -> Any:
        import asyncio

        await asyncio.sleep(0)
        return g * 2


async def test_custom_function_marking_a_view_dirty() -> None:
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    v = y[1:]
    assert _DoubleDirty.apply(v) is v
    assert y.grad_fn.name() == "CopySlices" and v.grad_fn.name() == "AsStridedBackward0"
    assert y.tolist() == [1.0, 8.0, 18.0]
    await (y * y).sum().backward()
    if torch is not None:

        class DoubleDirty(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, t: Any) -> Any:
                t.mul_(2)
                ctx.mark_dirty(t)
                return t

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2

        tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        ty = tx * tx
        DoubleDirty.apply(ty[1:])
        (ty * ty).sum().backward()
        np.testing.assert_allclose(x.grad.data, tx.grad.numpy())


def test_view_index_maps_any_view_to_its_base() -> None:
    base = np.arange(60.0).reshape(3, 4, 5)
    views = [
        base[1], base[:, ::2, 1:4], base.transpose(2, 0, 1)[::-1], base[..., 3], base[1, 2, 3, ...],
        base.reshape(12, 5)[3:9:2], base[::-1, ::-2], base[2:2],
    ]
    strided = np.arange(120.0).reshape(6, 4, 5)[::2]  # a base that is itself not contiguous
    cases = [(v, base) for v in views] + [(v, strided) for v in (strided[1:, ::-1], strided.T[1:3])]
    for view, of in cases:
        flat, overlap = view_index(view, of)
        assert not overlap and flat.shape == view.shape
        np.testing.assert_array_equal(of.reshape(-1)[flat], view)
    flat, overlap = view_index(np.broadcast_to(base[:1, :1], (2, 1, 5)), base)
    assert overlap and flat.tolist() == [[[0, 1, 2, 3, 4]], [[0, 1, 2, 3, 4]]]
    with pytest.raises(RuntimeError, match="must lie inside its base"):
        view_index(np.zeros(3), base)


# ============================================================================ gradients vs torch
@dataclass(frozen=True)
class Scenario:
    name: str
    fn: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    torch: bool = True
    gradgrad: bool = False  # also gradgradcheck (finite differences of second derivatives)


SCENARIOS = [
    # in-place on a slice of a non-leaf, then backward to the leaf
    Scenario("slice_mul", lambda lib, x, w: _slice_mul(x, w), ((4,), (2,)), gradgrad=True),
    Scenario("slice_step", lambda lib, x, w: _slice_step(x, w), ((5,), (3,))),
    Scenario("select_0d", lambda lib, x, w: _select_0d(x, w), ((2, 3), ())),
    # in-place on the base, then backward through a view
    Scenario("base_then_view", lambda lib, x, w: _base_then_view(x, w), ((3, 4), (3, 4)), gradgrad=True),
    Scenario("expand_read_after_base", lambda lib, x, w: _expand_after(x, w), ((1, 3), (2, 3))),
    Scenario("nongrad_base_seen_by_view", lambda lib, x: _nongrad_base_view(lib, x), ((4,),)),
    # chains of views
    Scenario("chain_views", lambda lib, x, w: _chain(x, w), ((3, 4), (3,)), gradgrad=True),
    Scenario("view_of_view_after", lambda lib, x, w: _view_of_view(x, w), ((4, 4), (4,))),
    Scenario("sibling_views", lambda lib, x, w: _siblings(x, w), ((3, 4), (4,))),
    Scenario("twice_on_view", lambda lib, x, w: _twice(x, w), ((4,), (2,))),
    Scenario("transposed", lambda lib, x, w: _transposed(x, w), ((2, 3), (2, 3))),
    Scenario("unsqueeze", lambda lib, x, w: _unsqueeze(x, w), ((3,), (3,))),
    Scenario("reshape_view", lambda lib, x, w: _reshape_view(x, w), ((2, 3), (6,))),
    Scenario("permute_select", lambda lib, x, w: _permute(x, w), ((2, 3, 2), (2,))),
    Scenario("nongrad_base", lambda lib, x: _nongrad_base(lib, x), ((3,),), gradgrad=True),
    # every op on a view
    Scenario("exp_view", lambda lib, x, w: _on_row(x, w, lambda r: r.exp_()), ((2, 3), (2, 3)), gradgrad=True),
    Scenario("relu_view", lambda lib, x, w: _on_row(x - 1, w, lambda r: r.relu_()), ((2, 3), (2, 3))),
    Scenario("neg_view", lambda lib, x, w: _on_row(x, w, lambda r: r.neg_()), ((2, 3), (2, 3))),
    Scenario("pow_view", lambda lib, x, w: _on_row(x, w, lambda r: r.pow_(3)), ((2, 3), (2, 3))),
    Scenario("pow_tensor_view", lambda lib, x, w: _on_row(x, w, lambda r: r.pow_(w[0])), ((2, 3), (2, 3)), gradgrad=True),
    Scenario("div_view", lambda lib, x, w: _on_row(x, w, lambda r: r.div_(w[1])), ((2, 3), (2, 3)), gradgrad=True),
    Scenario("sub_view", lambda lib, x, w: _on_row(x, w, lambda r: r.sub_(w[1], alpha=3)), ((2, 3), (2, 3))),
    Scenario("clamp_view", lambda lib, x, w: _on_row(x - 1, w, lambda r: r.clamp_(-0.2, 0.3)), ((2, 3), (2, 3))),
    Scenario("clamp_tensor_view", lambda lib, x, w: _on_row(x, w, lambda r: r.clamp_(w[0] - 0.3, w[1] + 0.2)), ((2, 3), (2, 3))),
    Scenario("zero_view", lambda lib, x, w: _on_row(x, w, lambda r: r.zero_()), ((2, 3), (2, 3))),
    Scenario("fill_view", lambda lib, x, w: _on_row(x, w, lambda r: r.fill_(w[0, 0])), ((2, 3), (2, 3))),
    Scenario("copy_view", lambda lib, x, w: _on_row(x, w, lambda r: r.copy_(w[0, :1])), ((2, 3), (2, 3))),
    Scenario("iops_view", lambda lib, x, w: _iops_view(x, w), ((2, 3), (2, 3)), gradgrad=True),
    # plain in-place ops on non-leaves
    Scenario("ops_chain", lambda lib, x, w: _ops_chain(x, w), ((3,), (3,)), gradgrad=True),
    Scenario("clamp_tensor", lambda lib, x, lo, hi: _clamp_tensor(x, lo, hi), ((3, 4), (4,), (4,))),
    Scenario("mul_self_old_value", lambda lib, x, w: _mul_keep(x, w), ((3,), (3,)), gradgrad=True),
    # __setitem__
    Scenario("setitem_basic", lambda lib, x, w: _setitem(x, 1, w), ((3, 4), (4,)), gradgrad=True),
    Scenario("setitem_number", lambda lib, x: _setitem(x, (1, slice(2, None)), 5.0), ((3, 4),)),
    Scenario("setitem_broadcast", lambda lib, x, w: _setitem(x, slice(0, 2), w), ((3, 4), (1, 4))),
    Scenario("setitem_mask", lambda lib, x, w: _setitem(x, const(lib, np.array([[True, False, True, False]] * 3)), w.repeat(2)), ((3, 4), (3,))),
    Scenario("setitem_index", lambda lib, x, w: _setitem(x, const(lib, np.array([3, 0])), w), ((5,), (2,)), gradgrad=True),
    Scenario("setitem_index_broadcast", lambda lib, x, w: _setitem(x, const(lib, np.array([2, 0])), w), ((3, 4), (4,))),
    Scenario("setitem_mixed", lambda lib, x, w: _setitem(x, (1, const(lib, np.array([0, 2]))), w), ((3, 4), (2,))),
    Scenario("setitem_into_view", lambda lib, x, w: _setitem_view(lib, x, w), ((3, 4), (2,))),
    Scenario("iadd_on_index", lambda lib, x, w: _iadd_index(x, w), ((3, 4), (4,))),
]


def _slice_mul(x: Any, w: Any) -> Any:
    y = x * 1
    y[1:3].mul_(w)
    return y * x


def _slice_step(x: Any, w: Any) -> Any:
    y = x.sin()
    y[::2].mul_(w)
    return y * y


def _select_0d(x: Any, w: Any) -> Any:
    y = x * 1
    y[0, 1].mul_(w)
    return y.exp()


def _base_then_view(x: Any, w: Any) -> Any:
    y = x.clone()
    v = y[1]
    y.mul_(w)
    return v * v


def _expand_after(x: Any, w: Any) -> Any:
    y = x * 1
    e = y.expand(2, 3)
    y.mul_(2)
    return e * w


def _nongrad_base_view(lib: Any, x: Any) -> Any:
    a = lib.zeros(4, dtype=x.dtype)
    v = a[1:]
    a.add_(x)
    return v * v


def _chain(x: Any, w: Any) -> Any:
    y = x * 2
    v = y[1:]
    u = v.transpose(0, 1)[0]
    u.mul_(w[1:])
    return y.exp() + v.sum()


def _view_of_view(x: Any, w: Any) -> Any:
    y = x.sin()
    v = y[1:]
    v[0].mul_(w)
    u = v[:, 1]
    return u * 3 + y.sum()


def _siblings(x: Any, w: Any) -> Any:
    y = x * 2
    a, b = y[0], y[0:2]
    a.mul_(w)
    return b * 2


def _twice(x: Any, w: Any) -> Any:
    y = x * 1
    v = y[1:3]
    v.mul_(w)
    v.add_(w)
    y.mul_(x)
    return v * y[0:2]


def _transposed(x: Any, w: Any) -> Any:
    y = x + w
    y.T[1].mul_(w.T[2])
    return y * 3


def _unsqueeze(x: Any, w: Any) -> Any:
    y = x * 1
    y.unsqueeze(0).add_(w)
    return y * y


def _reshape_view(x: Any, w: Any) -> Any:
    y = x * 1
    y.reshape(6).mul_(w)
    return y * x


def _permute(x: Any, w: Any) -> Any:
    y = x * 1
    y.permute(2, 0, 1)[1].mul_(w[0])
    return y.sin()


def _nongrad_base(lib: Any, x: Any) -> Any:
    a = lib.zeros(4, dtype=x.dtype)
    v = a[1:]
    v.mul_(x)
    v.add_(x)
    return a * a


def _on_row(x: Any, w: Any, op: Callable[[Any], Any]) -> Any:
    y = x * w
    op(y[1])
    return y * w


def _iops_view(x: Any, w: Any) -> Any:
    y = x * 1
    r = y[0]
    r += w[0]
    r *= w[1]
    r -= 2
    r /= w[0]
    return y * y


def _ops_chain(x: Any, w: Any) -> Any:
    y = x * 1
    y += w
    y *= w
    y -= 2
    y /= w.exp()
    y **= 2
    y.neg_().exp_()
    return y


def _clamp_tensor(x: Any, lo: Any, hi: Any) -> Any:
    y = x * 1
    y.clamp_(lo - 0.5, hi + 0.2)
    return y * x


def _mul_keep(x: Any, w: Any) -> Any:
    y = x * 1
    y.mul_(w)  # saves the old y for w's gradient
    y.mul_(w)
    y.div_(w.exp())  # and here
    return y


def _setitem(x: Any, index: Any, value: Any) -> Any:
    y = x * 2
    y[index] = value
    return y * x


def _setitem_view(lib: Any, x: Any, w: Any) -> Any:
    y = x * 2
    v = y[1:]
    v[0, const(lib, np.array([1, 3]))] = w
    return y * x


def _iadd_index(x: Any, w: Any) -> Any:
    y = x * 1
    y[0] += w
    return y * x


def _arrays(sc: Scenario) -> list[np.ndarray]:
    rng = np.random.default_rng(len(sc.name))
    return [rng.uniform(0.5, 1.5, size=s) for s in sc.shapes]


async def _ag_grads(sc: Scenario, arrays: list[np.ndarray], seed: np.ndarray, seed2: list[np.ndarray]) -> Any:
    xs = [ag.tensor(a, requires_grad=True) for a in arrays]
    out = sc.fn(ag, *xs)
    grads = await ag.grad(out, xs, ag.tensor(seed), create_graph=True, allow_unused=True)
    terms = [(g * ag.tensor(s)).sum() for g, s in zip(grads, seed2) if g is not None and g.requires_grad]
    second = [None] * len(xs)
    if terms:
        second = list(await ag.grad(sum(terms[1:], terms[0]), xs, allow_unused=True))
    return out, grads, second


def _torch_grads(sc: Scenario, arrays: list[np.ndarray], seed: np.ndarray, seed2: list[np.ndarray]) -> Any:
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = sc.fn(torch, *xs)
    grads = torch.autograd.grad(out, xs, torch.tensor(seed), create_graph=True, allow_unused=True)
    terms = [(g * torch.tensor(s)).sum() for g, s in zip(grads, seed2) if g is not None and g.requires_grad]
    second = [None] * len(xs)
    if terms:
        second = list(torch.autograd.grad(sum(terms[1:], terms[0]), xs, allow_unused=True))
    return out, grads, second


def _same(a: Any, t: Any, shape: tuple[int, ...]) -> None:
    a_arr = np.zeros(shape) if a is None else a.data
    t_arr = np.zeros(shape) if t is None else t.detach().numpy()
    np.testing.assert_allclose(a_arr, t_arr, rtol=1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("sc", [s for s in SCENARIOS if s.torch], ids=lambda s: s.name)
async def test_scenario_matches_torch(sc: Scenario) -> None:
    arrays = _arrays(sc)
    rng = np.random.default_rng(1)
    with ag.no_grad():
        shape = sc.fn(ag, *[ag.tensor(a) for a in arrays]).shape
    seed = rng.standard_normal(shape)
    seed2 = [rng.standard_normal(a.shape) for a in arrays]
    out, grads, second = await _ag_grads(sc, arrays, seed, seed2)
    t_out, t_grads, t_second = _torch_grads(sc, arrays, seed, seed2)
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-12)
    assert out.grad_fn.name() == t_out.grad_fn.name()
    for a, g, tg, g2, tg2 in zip(arrays, grads, t_grads, second, t_second):
        _same(g, tg, a.shape)
        _same(g2, tg2, a.shape)


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda s: s.name)
async def test_scenario_gradcheck(sc: Scenario) -> None:
    xs = [ag.tensor(a, requires_grad=True) for a in _arrays(sc)]
    assert await gradcheck(lambda *t: sc.fn(ag, *t), xs)
    if sc.gradgrad:
        assert await gradgradcheck(lambda *t: sc.fn(ag, *t), xs)


async def test_scenario_leaves_are_untouched() -> None:
    """The scenarios modify intermediate tensors only: their leaves keep version 0."""
    for sc in SCENARIOS:
        xs = [ag.tensor(a, requires_grad=True) for a in _arrays(sc)]
        sc.fn(ag, *xs)
        assert all(x._version == 0 for x in xs), sc.name


async def test_negative_step_view() -> None:
    """numpy has negative steps (torch has not): the geometry still maps the view to its base."""
    x = ag.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    w = ag.tensor([10.0, 20.0, 30.0], requires_grad=True)

    def fn(x: Any, w: Any) -> Any:
        y = x * 1
        y[::-2].mul_(w)
        return y * y

    out = fn(x, w)
    np.testing.assert_allclose(out.data, np.array([30.0, 2.0, 60.0, 4.0, 50.0]) ** 2)
    assert await gradcheck(fn, [x, w])


@requires_torch
@pytest.mark.parametrize("device", ["cpu", "sim"])
@pytest.mark.parametrize("broadcast", [False, True], ids=["slice", "expand"])
async def test_regenerated_view_higher_order_grads_match_torch(device: str, broadcast: bool) -> None:
    """A view's grad_fn regenerated on read (``AsStridedBackward0``) is differentiable again, to
    any order: its formula records ``AsStridedScatterBackward0``, whose formula records it."""
    weights = [[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]

    def build(lib: Any, x: Any) -> Any:
        y = x * 1
        view = y.unsqueeze(0).expand(2, 3) if broadcast else y[1:]
        y.mul_(x)  # the view's base moves on: its grad_fn is regenerated when next read
        w = lib.tensor(weights if broadcast else weights[0][:2], dtype=lib.float64)
        return ((view**3) * w.to(x.device)).sum()

    x = ag.tensor([0.5, -1.5, 2.0], requires_grad=True, device=device)
    loss = build(ag, x)
    assert loss.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].name() == (
        "AsStridedBackward0"
    )
    (g1,) = await ag.grad(loss, x, create_graph=True)
    (g2,) = await ag.grad(g1.sum(), x, create_graph=True)
    (g3,) = await ag.grad(g2.sum(), x)
    tx = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
    tl = build(torch, tx)
    (t1,) = torch.autograd.grad(tl, tx, create_graph=True)
    (t2,) = torch.autograd.grad(t1.sum(), tx, create_graph=True)
    (t3,) = torch.autograd.grad(t2.sum(), tx)
    for ours, theirs in ((g1, t1), (g2, t2), (g3, t3)):
        assert ours.device.type == device
        np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=1e-12)
