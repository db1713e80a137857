"""Elementwise math, nn.functional numerics and binary-op errors against torch: the cases the
differential fuzzer found (tests/fuzz), each run in both libraries with explicit dtypes.

Errors: torch's type and message, in torch's order of checks (operands that do not broadcast
before a dtype refusal). Values: non-finite inputs and torch's derivative formulas on bool
operands, number exponents, integral divisors.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import raised

import aiograd as ag
import aiograd.nn.functional as AF
from aiograd.sync import grad as ag_grad

torch = pytest.importorskip("torch")
TF = torch.nn.functional

nan, inf = float("nan"), float("inf")


_error = raised


def _same_error(torch_fn, ag_fn) -> None:
    expected = _error(torch_fn)
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        ag_fn()


def _both(values, dtype, requires_grad=False):
    t = torch.tensor(np.asarray(values), dtype=getattr(torch, dtype), requires_grad=requires_grad)
    a_dtype = getattr(ag, "bool_" if dtype == "bool" else dtype, None) or np.dtype(dtype)
    a = ag.tensor(np.asarray(values), dtype=a_dtype, requires_grad=requires_grad)
    return t, a


def _close(a, t, rtol=1e-6, atol=1e-9) -> None:
    expected = t.detach().numpy()
    assert a.data.dtype == expected.dtype
    np.testing.assert_allclose(a.data, expected, rtol=rtol, atol=atol, equal_nan=True)
    np.testing.assert_array_equal(np.signbit(a.data[a.data == 0]), np.signbit(expected[a.data == 0]))


# ------------------------------------------------------------------------------ errors: checks in torch's order
@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
                                "remainder", "fmod", "floor_divide", "logical_and", "logical_or", "logical_xor"])
@pytest.mark.parametrize("dtype", ["float64", "bool"])
def test_broadcast_error_before_dtype_refusal(op, dtype):
    (t1, a1), (t2, a2) = _both(np.ones((3, 2)), dtype), _both(np.ones((3, 4)), dtype)
    _same_error(lambda: getattr(torch, op)(t1, t2), lambda: getattr(ag, op)(a1, a2))


def test_logaddexp_and_lerp_integer_refusal_after_broadcast_check():
    (t1, a1), (t2, a2) = _both(np.zeros((0, 1)), "int64"), _both([[-3, -1]], "int64")
    _same_error(lambda: torch.logaddexp(t1.permute(1, 0), t2), lambda: ag.logaddexp(a1.permute(1, 0), a2))
    (t1, a1), (t2, a2) = _both([1, 2, 3], "int64"), _both([1, 2, 3, 4, 5], "int64")
    _same_error(lambda: torch.lerp(t1, t2, -0.0), lambda: ag.lerp(a1, a2, -0.0))


@pytest.mark.parametrize("other", [2, -2.25, True])
def test_maximum_minimum_take_tensors_only(other):
    t, a = _both([1.0, 2.0], "float64")
    for op in ("maximum", "minimum"):
        _same_error(lambda op=op: getattr(torch, op)(t, other), lambda op=op: getattr(ag, op)(a, other))
        _same_error(lambda op=op: getattr(torch, op)(other, t), lambda op=op: getattr(ag, op)(other, a))


def test_huber_and_smooth_l1_refuse_nan_parameters():
    (t1, a1), (t2, a2) = _both([0.5, -1.0], "float64"), _both([1.0, 2.0], "float64")
    _same_error(lambda: TF.huber_loss(t1, t2, delta=nan), lambda: AF.huber_loss(a1, a2, delta=nan))
    _same_error(lambda: TF.smooth_l1_loss(t1, t2, beta=nan), lambda: AF.smooth_l1_loss(a1, a2, beta=nan))


@pytest.mark.parametrize("name, value", [("dilation", "tensor"), ("kernel_size", 2.0), ("stride", (2.0, 1)),
                                         ("padding", True)])
def test_max_pool2d_int_arguments(name, value):
    t, a = _both(np.arange(25.0).reshape(1, 1, 5, 5), "float64")
    kwargs = {"kernel_size": 2, "stride": 1, "padding": 0, "dilation": 1}

    def call(lib, x):
        v = lib.tensor([[1, 1], [1, 1]]) if value == "tensor" else value
        return lib.nn.functional.max_pool2d(x, **{**kwargs, name: v})

    _same_error(lambda: call(torch, t), lambda: call(ag, a))


@pytest.mark.parametrize("fn", ["mish", "elu", "hardtanh"])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_inplace_activation_on_expanded_tensor(fn, dtype):
    t, a = _both([[2]], dtype)
    _same_error(lambda: getattr(TF, fn)(t.expand(2, 3), inplace=True),
                lambda: getattr(AF, fn)(a.expand(2, 3), inplace=True))


def test_batch_norm_refuses_an_expanded_running_stat():
    x = np.random.default_rng(0).standard_normal((2, 2, 4))
    a = ag.tensor(x, dtype=ag.float64)
    running_mean, running_var = ag.tensor([0.68], dtype=ag.float64).expand(2), ag.tensor([0.7, 1.4], dtype=ag.float64)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        AF.batch_norm(a, running_mean, running_var, None, None, True)


# ------------------------------------------------------------------------------ cross_entropy's label smoothing
@pytest.mark.parametrize("smoothing", [nan, -1.5])
def test_cross_entropy_smoothing_at_or_below_zero_is_none(smoothing):
    x = np.random.default_rng(1).standard_normal((3, 4))
    (t, a), (tt, at) = _both(x, "float64"), _both([0, 1, 2], "int64")
    for reduction in ("mean", "none"):
        kw = {"reduction": reduction, "label_smoothing": smoothing}
        _close(AF.cross_entropy(a, at, **kw), TF.cross_entropy(t, tt, **kw))
    # the target is checked, as torch does, and no smoothing error comes first
    (bt, ba) = _both([0, -1, 7], "int64")
    _same_error(lambda: TF.cross_entropy(t, bt, label_smoothing=smoothing),
                lambda: AF.cross_entropy(a, ba, label_smoothing=smoothing))


def test_cross_entropy_smoothing_above_one_raises_first():
    (t, a), (tt, at) = _both(np.zeros((3, 4)), "float64"), _both([0, 1], "int64")
    _same_error(lambda: TF.cross_entropy(t, tt, label_smoothing=2.0), lambda: AF.cross_entropy(a, at, label_smoothing=2.0))


# ------------------------------------------------------------------------------ pow
def test_pow_integer_tensor_exponent_negative():
    (t, a), (te, ae) = _both([-3, -2, -1, 0, 1, 2, 3], "int64"), _both([-1, -2, -3, -2, -1, 2, 3], "int64")
    _close(ag.pow(a, ae), torch.pow(t, te))
    (t8, a8), (te8, ae8) = _both([-1, 1, 2], "int8"), _both([-3, -4, -1], "int8")
    _close(ag.pow(a8, ae8), torch.pow(t8, te8))
    _close(ag.pow(2, ae), torch.pow(2, te))
    _same_error(lambda: torch.pow(t, -1), lambda: ag.pow(a, -1))


def test_pow_bool():
    (t, a), (tb, ab) = _both([True, False], "bool"), _both([True, True], "bool")
    for e in (False, True):
        _close(ag.pow(a, e), torch.pow(t, e))
    _same_error(lambda: torch.pow(t, tb), lambda: ag.pow(a, ab))
    _same_error(lambda: torch.pow(True, tb), lambda: ag.pow(True, ab))


def test_pow_backward_with_bool_exponent_tensor_raises():
    (t, a), (tb, ab) = _both([0.5, 1.5], "float64", requires_grad=True), _both([True, False], "bool")
    _same_error(lambda: torch.autograd.grad(torch.pow(t, tb).sum(), t), lambda: ag_grad(ag.pow(a, ab).sum(), a))


def test_pow_number_false_gradient_is_torch_formula():
    t, a = _both([2.29, -0.0, 0.0, -1e-40, 0.29], "float32", requires_grad=True)
    (gt,) = torch.autograd.grad(torch.pow(t, False).sum(), t)
    (ga,) = ag_grad(ag.pow(a, False).sum(), a)
    _close(ga, gt)


# ------------------------------------------------------------------------------ derivative formulas on bool operands
def test_atan2_logaddexp_backward_with_bool_operand():
    (tb, ab), (tf, af) = _both([True, False], "bool"), _both([0.5, 1.5], "float32", requires_grad=True)
    _same_error(lambda: torch.autograd.grad(torch.atan2(tb, tf).sum(), tf), lambda: ag_grad(ag.atan2(ab, af).sum(), af))
    (g_t,) = torch.autograd.grad(torch.atan2(tf, tb).sum(), tf)
    (g_a,) = ag_grad(ag.atan2(af, ab).sum(), af)
    _close(g_a, g_t)
    for order in ((0, 1), (1, 0)):
        ts, as_ = [(tb, tf)[i] for i in order], [(ab, af)[i] for i in order]
        _same_error(lambda ts=ts: torch.autograd.grad(torch.logaddexp(*ts).sum(), tf),
                    lambda as_=as_: ag_grad(ag.logaddexp(*as_).sum(), af))


def test_lerp_weight_promotion_and_bool_weight_backward():
    (t0, a0), (t1, a1), (tw, aw) = _both([0, 1], "int64"), _both([2, 5], "int64"), _both(0.3, "float32")
    _close(ag.lerp(a0, a1, aw), torch.lerp(t0, t1, tw))
    (ti, ai) = _both(1, "int64")
    _same_error(lambda: torch.lerp(t0, t1, ti), lambda: ag.lerp(a0, a1, ai))
    (s_t, s_a), (e_t, e_a), (b_t, b_a) = (_both(0.92, "float32", True), _both(-3.9, "float32", True),
                                          _both(False, "bool"))
    _same_error(lambda: torch.autograd.grad(torch.lerp(s_t, e_t, b_t), [s_t, e_t]),
                lambda: ag_grad(ag.lerp(s_a, e_a, b_a), [s_a, e_a]))


# ------------------------------------------------------------------------------ addcmul, addcdiv
@pytest.mark.parametrize("value", [0.5, 2, -0.0, 1.7])
def test_addcmul_integral_casts_value(value):
    (t, a), (tb, ab) = _both([3, 4], "int64"), _both([True, False], "bool")
    _close(ag.addcmul(a, a, a, value=value), torch.addcmul(t, t, t, value=value))
    _close(ag.addcmul(ab, a, ab, value=value), torch.addcmul(tb, t, tb, value=value))


def test_addcmul_refusals():
    (t, a), (tu, au), (tb, ab) = _both([3, 4], "int64"), _both([1], "uint8"), _both([True], "bool")
    _same_error(lambda: torch.addcmul(tb, tb, tb), lambda: ag.addcmul(ab, ab, ab))
    for value in (nan, inf, 1e30):
        _same_error(lambda v=value: torch.addcmul(t, t, t, value=v), lambda v=value: ag.addcmul(a, a, a, value=v))
    for value in (300, -256):
        _same_error(lambda v=value: torch.addcmul(tu, tu, tu, value=v), lambda v=value: ag.addcmul(au, au, au, value=v))
    _close(ag.addcmul(au, au, au, value=-1), torch.addcmul(tu, tu, tu, value=-1))


def test_addcdiv_order_of_products():
    (t0, a0), (t1, a1), (t2, a2) = (_both([-0.8], "float32"), _both([-5e-324, 2.0], "float64"),
                                    _both([-5e-324, 3.0], "float64"))
    _close(ag.addcdiv(a0, a1, a2, value=0.5), torch.addcdiv(t0, t1, t2, value=0.5))


def test_addcdiv_grads_in_the_operands_dtypes():
    (t0, a0), (t1, a1), (t2, a2) = (_both([3], "int64"), _both([[0.37]], "float64", True),
                                    _both([[1e-40], [3.5]], "float32", True))
    w = np.array([[-0.43], [-0.02]])
    gt = torch.autograd.grad(t0.addcdiv(t1, t2), [t1, t2], torch.tensor(w))
    ga = ag_grad(a0.addcdiv(a1, a2), [a1, a2], ag.tensor(w, dtype=ag.float64))
    for x, y in zip(ga, gt):
        _close(x, y)


@pytest.mark.real_default_dtype
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_addcdiv_integral_divisor_backward_raises(dtype):
    (t0, a0), (t1, a1), (t2, a2) = _both([1.0, 2.0], "float64", True), _both([1.0, 2.0], "float64", True), _both([1, 1], dtype)
    _same_error(lambda: torch.autograd.grad(torch.addcdiv(t0, t1, t2).sum(), [t0, t1]),
                lambda: ag_grad(ag.addcdiv(a0, a1, a2).sum(), [a0, a1]))


@pytest.mark.real_default_dtype
def test_addcmul_grads_in_the_operands_dtypes():
    (t0, a0), (t1, a1), (t2, a2) = _both([True, True], "bool"), _both([0.86], "float32", True), _both(1e300, "float64", True)
    w = np.array([1.55, 0.11], dtype=np.float32)
    gt = torch.autograd.grad(torch.addcmul(t0, t1, t2, value=0.0), [t1, t2], torch.tensor(w))
    ga = ag_grad(ag.addcmul(a0, a1, a2, value=0.0), [a1, a2], ag.tensor(w, dtype=ag.float32))
    for x, y in zip(ga, gt):
        _close(x, y)


# ------------------------------------------------------------------------------ non-finite values
def test_xlogy_number_other_gradient_masks_zero_input():
    t, a = _both([0.0, -0.0, 1.0, 2.0], "float64", requires_grad=True)
    for other in (nan, -1.0, 0.0, 2.0):
        (gt,) = torch.autograd.grad(torch.xlogy(t, other).sum(), t)
        (ga,) = ag_grad(ag.xlogy(a, other).sum(), a)
        _close(ga, gt)


@pytest.mark.parametrize("alpha", [nan, inf, -2.0])
def test_elu_keeps_signed_zero(alpha):
    t, a = _both([-0.0, 0.0, -1.0, -inf, 1.0, 5e-324, -5e-324], "float64")
    _close(AF.elu(a, alpha), TF.elu(t, alpha))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adaptive_avg_pool2d_nonfinite_bins(dtype):
    x = np.random.default_rng(2).standard_normal((2, 2, 3, 4))
    x[0, 0, 1, 1], x[0, 1, 0, 0], x[1, 0, 2, 3], x[1, 1, 0, 1], x[1, 1, 0, 2] = -inf, nan, inf, inf, -inf
    t, a = _both(x, dtype)
    for size in ((2, 3), (5, 2), (3, 4)):
        _close(AF.adaptive_avg_pool2d(a, size), TF.adaptive_avg_pool2d(t, size), rtol=1e-5, atol=1e-6)
    t, a = _both([[[[-inf]], [[-0.25]]]], dtype)
    _close(AF.adaptive_avg_pool2d(a.expand(2, 2, 2, 2), (2, 3)), TF.adaptive_avg_pool2d(t.expand(2, 2, 2, 2), (2, 3)))


def test_max_pool2d_minus_inf_window_picks_its_first_element_inside():
    x = np.array([[[[0.0, 0.75, -0.75, -inf], [-0.5, 0.5, 0.25, 0.0]]]])
    t, a = _both(x, "float64", requires_grad=True)
    yt, it = TF.max_pool2d(t, 2, padding=1, ceil_mode=True, return_indices=True)
    ya, ia = AF.max_pool2d(a, 2, padding=1, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(ia.data, it.numpy())
    w = np.array([[[[-0.44, 0.19, 0.28], [-1.61, 1.16, -1.67]]]])
    _close(ag_grad(ya, a, ag.tensor(w, dtype=ag.float64))[0], torch.autograd.grad(yt, t, torch.tensor(w))[0])


def test_lerp_of_bool_ends_refuses_the_weights_gradient_as_torch() -> None:
    # torch's backward computes the weight's gradient as ``grad * (end - self)``: a subtraction
    # of two bool tensors, which it refuses
    for lib, grad in ((torch, torch.autograd.grad), (ag, ag_grad)):
        bool_ = lib.bool if lib is torch else ag.bool_
        w = lib.tensor(0.71, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(False, dtype=bool_).lerp(lib.tensor(False, dtype=bool_), w)
        with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
            grad([y], [w], [lib.tensor(-0.53, dtype=lib.float64)])
