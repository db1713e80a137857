"""Values, gradients, result dtypes and shapes that once differed from PyTorch's (found by the
differential fuzzer, tests/fuzz): each case runs the same program on both and compares."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.sync

pytestmark = requires_torch


def _run(mod, program, grads_of):
    """``program(mod)`` -> (outputs, inputs); the outputs and the gradients of their sum (with
    weights of ones in each output's dtype) with respect to the inputs."""
    grad = torch.autograd.grad if mod is torch else aiograd.sync.grad
    outs, inputs = program(mod)
    outs = [o for o in outs if o.requires_grad]
    weights = [mod.ones(o.shape, dtype=o.dtype) for o in outs]
    gs = grad(outs, inputs, weights, allow_unused=True) if grads_of and outs else ()
    return outs, gs


def _same(a, b):
    if b is None:
        assert a is None
        return
    an, bn = np.asarray(a.detach().numpy()), b.detach().numpy()
    assert str(an.dtype) == str(bn.dtype), (an.dtype, bn.dtype)
    assert an.shape == bn.shape, (an.shape, bn.shape)
    np.testing.assert_allclose(an, bn, rtol=1e-6, atol=1e-12, equal_nan=True)


def _compare(program):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_outs, t_grads = _run(torch, program, True)
        a_outs, a_grads = _run(ag, program, True)
    for a, t in zip(a_outs, t_outs, strict=True):
        _same(a, t)
    for a, t in zip(a_grads, t_grads, strict=True):
        _same(a, t)


def _inplace(method, *extra):
    """``x.clone().<method>_(y, ...)`` with a float32 ``x`` and a float64 ``y``: each operand's
    gradient comes back in its own dtype."""

    def program(m):
        x = m.tensor([1.5, -2.0, 0.25], dtype=m.float32, requires_grad=True)
        y = m.tensor([0.5, 3.0, -1.0], dtype=m.float64, requires_grad=True)
        z = m.tensor([2.0, -1.0, 0.5], dtype=m.float32, requires_grad=True)
        base = x * 1
        args = {"add_": (y,), "sub_": (y,), "clamp_": (None, y), "addcmul_": (y, z), "mul_": (y,)}[method]
        out = getattr(base, method)(*args, *extra)
        return [out * 1], [x, y, z]

    return program


@pytest.mark.parametrize("method", ["add_", "sub_", "clamp_", "addcmul_", "mul_"])
def test_inplace_mixed_dtype_gradients(method):
    _compare(_inplace(method))


def test_addcmul_inplace_zero_dim_operand_gradient_dtype():
    def program(m):
        x = m.tensor([0.5], dtype=m.float32, requires_grad=True)
        y = m.tensor([4.13], dtype=m.float64, requires_grad=True)
        z = m.tensor(2.5, dtype=m.float32, requires_grad=True)
        return [(x * 1).addcmul_(y, z) * 1], [x, y, z]

    _compare(program)


def test_inplace_mixed_dtype_keeps_node_name():
    x = ag.tensor([1.0], dtype=ag.float32, requires_grad=True) * 1
    y = ag.tensor([2.0], dtype=ag.float64, requires_grad=True)
    assert type(x.add_(y).grad_fn).__name__ == "AddBackward0"


@pytest.mark.parametrize("dtype", ["bool", "int32", "uint8", "float64"])
def test_sum_to_size_empty_shape_sums(dtype):
    def program(m):
        x = m.tensor(np.array([[1, 0], [1, 1]]).astype(dtype)) if dtype != "bool" else m.tensor([True, False])
        return [x.sum_to_size(())], []

    out = program(ag)[0][0]
    ref = program(torch)[0][0]
    assert out.shape == tuple(ref.shape)
    assert str(out.numpy().dtype) == str(ref.numpy().dtype)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


@pytest.mark.parametrize("fn", ["all", "any"])
@pytest.mark.parametrize("dim", [(), []])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_any_empty_dim_is_elementwise(fn, dim, keepdim):
    v = np.array([[[0.0]], [[2.0]], [[7.0]]])
    for dtype in ("float64", "uint8", "bool"):
        a = getattr(ag, fn)(ag.tensor(v.astype(dtype)), dim, keepdim)
        t = getattr(torch, fn)(torch.tensor(v.astype(dtype)), tuple(dim), keepdim)
        assert a.shape == tuple(t.shape)
        np.testing.assert_array_equal(a.numpy(), t.numpy())
        assert str(a.numpy().dtype) == str(t.numpy().dtype)


@pytest.mark.parametrize("fn", ["std", "var"])
@pytest.mark.parametrize("dim", [(), None, (0, 1), 1])
@pytest.mark.parametrize("correction", [0, 1, 2, 3, 7])
@pytest.mark.parametrize("value", [[[-0.93, -0.9, 1.58], [0.25, 0.25, -1.0]], [[0.5]], -0.12])
def test_std_var_gradient_dim_empty(fn, dim, correction, value):
    # PyTorch's var_backward counts one element for dim=() (forward: all of them), and uses
    # 2 / (n - correction) whatever its sign when dims are given.
    if np.ndim(value) == 0 and dim not in ((), None):
        pytest.skip("no dim 1 in a 0-dim tensor")

    def program(m):
        x = m.tensor(value, dtype=m.float64, requires_grad=True)
        return [getattr(x, fn)(dim, correction=correction)], [x]

    _compare(program)


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_kl_div_empty_broadcast_target_gradient(reduction):
    def program(m):
        x = m.zeros((3, 0), dtype=m.float64, requires_grad=True)
        leaf = m.tensor([[-2.08]], dtype=m.float64, requires_grad=True)
        return [m.nn.functional.kl_div(x, leaf.expand(3, 1), reduction=reduction)], [x, leaf]

    _compare(program)


def test_xlogy_zero_gradient_where_log_is_nan():
    def program(m):
        a = m.tensor([0.0, 1.0, 2.0, 0.0, 3.0], dtype=m.float64, requires_grad=True)
        b = m.tensor([-1.0, float("nan"), -2.0, 3.0, -4.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([0.0, 1.0, 0.0, 2.0, 1.0], dtype=m.float64)
        return [m.xlogy(a, b) * w], [a, b]

    _compare(program)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32"])
def test_sum_of_integers_is_int64(dtype):
    v = np.array([[1, 0, 1], [1, 1, 0]]).astype(dtype)
    for dim in (None, 0, (0, 1)):
        a = ag.tensor(v).sum(dim) if dim is not None else ag.tensor(v).sum()
        t = torch.tensor(v).sum(dim) if dim is not None else torch.tensor(v).sum()
        assert str(a.numpy().dtype) == str(t.numpy().dtype) == "int64"
        np.testing.assert_array_equal(a.numpy(), t.numpy())
    a, t = ag.tensor(v).sum_to_size(1, 3), torch.tensor(v).sum_to_size(1, 3)
    assert str(a.numpy().dtype) == str(t.numpy().dtype) == "int64"
