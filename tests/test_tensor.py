"""Tensor attributes, factories, repr and dtype rules."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag


def test_dtype_follows_numpy():
    assert ag.tensor([1.0, 2.0]).dtype == np.float64
    assert ag.tensor(np.ones(2, dtype=np.float32)).dtype == np.float32
    x = ag.tensor([1.0], dtype=np.float32, requires_grad=True)
    assert (x * 2.0 + 1.0).dtype == np.float32


def test_requires_grad_needs_floating_point():
    message = "Only Tensors of floating point and complex dtype can require gradients"
    with pytest.raises(RuntimeError, match=message):
        ag.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype can require gradients$"):
        ag.tensor([1, 2]).requires_grad = True
    # torch words it differently here (lower-case "only"): see the torch comparison further down
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ag.tensor([1, 2]).requires_grad_()


def test_requires_grad_only_on_leaves():
    y = ag.tensor([1.0], requires_grad=True) * 2.0
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables. If you"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="^you can only change requires_grad flags of leaf variables.$"):
        y.requires_grad = True


def test_attributes():
    x = ag.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert x.shape == (2, 3) and x.size() == (2, 3) and x.size(1) == 3
    assert x.ndim == 2 and x.dim() == 2 and x.numel() == 6
    assert x.is_leaf and x.grad is None and x.grad_fn is None and x.output_nr == 0
    assert x.device == ag.device("cpu") and str(x.device) == "cpu"
    assert x._version == 0
    y = x * 2.0
    assert not y.is_leaf and y.requires_grad and y.grad_fn.name() == "MulBackward0"
    assert y.detach().requires_grad is False and y.detach().data is y.data
    assert ag.tensor(2.5).item() == 2.5 and x.tolist()[1] == [4.0, 5.0, 6.0]


def test_numpy_refuses_tensors_that_require_grad():
    x = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy() is x.data


def test_repr_in_torch_style():
    assert repr(ag.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(ag.tensor([1.0, 2.0], requires_grad=True) * 2.0) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(ag.tensor(3.0)) == "tensor(3.)"
    assert repr(ag.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ag.tensor([0.5], dtype=np.float32)) == "tensor([0.5000], dtype=float32)"
    assert repr(ag.tensor([0.123456, 2.0])) == "tensor([0.1235, 2.0000])"


def test_factories():
    assert ag.zeros(2, 3).shape == (2, 3) and ag.ones((2,)).tolist() == [1.0, 1.0]
    assert ag.full((2,), 7.0).tolist() == [7.0, 7.0]
    assert ag.empty(3).shape == (3,)
    assert ag.arange(3).tolist() == [0, 1, 2] and ag.arange(1, 2, 0.5).tolist() == [1.0, 1.5]
    assert ag.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert ag.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    x = ag.randn(2, 2, dtype=np.float32)
    assert ag.zeros_like(x).dtype == np.float32 and ag.ones_like(x).tolist() == [[1, 1], [1, 1]]
    assert ag.randn_like(x).dtype == np.float32
    ag.manual_seed(0)
    a = ag.rand(3).tolist()
    ag.manual_seed(0)
    assert ag.rand(3).tolist() == a
    assert ag.zeros(2, requires_grad=True).requires_grad
    t = ag.tensor([1.0, 2.0])
    assert ag.as_tensor(t) is t and ag.tensor(t).data is not t.data


def test_retain_grad_errors_and_flags():
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        ag.tensor([1.0]).retain_grad()
    y = ag.tensor([1.0], requires_grad=True) * 2.0
    y.retain_grad()
    assert y.retains_grad


async def test_retain_grad_on_non_leaf():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    await (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 8.0])
    await (h * h).sum().backward()  # h's MulBackward saved nothing it needs from h's graph
    np.testing.assert_allclose(h.grad.numpy(), [8.0, 16.0])


def test_numpy_arrays_defer_to_tensor_operators():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    out = np.array([2.0, 3.0]) * x
    assert isinstance(out, ag.Tensor) and out.grad_fn.name() == "MulBackward0"


def test_grad_assignment_is_checked_like_pytorch():
    x = ag.zeros(2, 2, requires_grad=True)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type int"):
        x.grad = 3
    # torch 2.13's words (the older "assigned grad has data of a different size/type" are gone)
    with pytest.raises(RuntimeError, match=re.escape("attempting to assign a gradient of size '[3]' to a tensor of size '[2, 2]'")):
        x.grad = ag.zeros(3)
    with pytest.raises(RuntimeError, match=re.escape("attempting to assign a gradient with dtype 'float' to a tensor with grad_dtype 'Double'")):
        x.grad = ag.zeros(2, 2, dtype=np.float32)
    g = ag.ones(2, 2)
    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None


def test_reading_grad_of_a_non_leaf_warns():
    y = ag.tensor([1.0], requires_grad=True) * 2.0
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"):
        assert y.grad is None
    y.retain_grad()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert y.grad is None


def test_inference_mode_and_like_factories():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.inference_mode():
        assert not (x * 2.0).requires_grad and ag.is_inference_mode_enabled()
    with ag.inference_mode(False):
        assert (x * 2.0).requires_grad
    assert ag.full_like(x, 7.0).tolist() == [7.0, 7.0]
    assert ag.empty_like(x).shape == (2,) and ag.rand_like(x).dtype == np.float64


def _outcome(call: Any) -> object:
    """What ``call`` gave: its value, or the exception's type and words."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - compared with torch's
        return type(exc).__name__, str(exc)


def _requires_grad_on_a_non_leaf(m: Any) -> list[object]:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    seen: list[object] = [
        _outcome(lambda: y.requires_grad_() is y),
        _outcome(lambda: y.requires_grad_(True).requires_grad),
        _outcome(lambda: y.requires_grad_(False)),
        y.requires_grad, y.grad_fn is not None,
        _outcome(lambda: y.requires_grad_(1)),
        _outcome(lambda: x.requires_grad_(0.0)),
        _outcome(lambda: x.requires_grad_(None)),
        _outcome(lambda: m.tensor([1, 2]).requires_grad_()),
        _outcome(lambda: m.tensor([1, 2]).requires_grad_(False).requires_grad),
        _outcome(lambda: x.requires_grad_(False).requires_grad),
    ]
    with m.no_grad():
        made_without_grad = x * 2.0
    seen.append(_outcome(lambda: (made_without_grad.requires_grad_().requires_grad, made_without_grad.is_leaf)))
    return seen


@requires_torch
def test_requires_grad_on_a_non_leaf_refuses_only_false_like_torch():
    assert _requires_grad_on_a_non_leaf(ag) == _requires_grad_on_a_non_leaf(torch)


def _numpy_of_a_tensor_that_requires_grad(m: Any) -> list[object]:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    seen: list[object] = [_outcome(lambda: x.numpy()), _outcome(lambda: np.asarray(y))]
    for mode in (m.no_grad(), m.inference_mode(), m.set_grad_enabled(False)):
        with mode:
            seen += [_outcome(lambda: x.numpy().tolist()), _outcome(lambda: np.asarray(y).tolist())]
            x.numpy()[0] = 5.0  # the array is shared, not copied
    seen.append(x.detach().numpy().tolist())
    with m.no_grad(), m.enable_grad():
        seen.append(_outcome(lambda: y.numpy()))
    return seen


@requires_torch
def test_numpy_is_allowed_under_no_grad_like_torch():
    assert _numpy_of_a_tensor_that_requires_grad(ag) == _numpy_of_a_tensor_that_requires_grad(torch)
