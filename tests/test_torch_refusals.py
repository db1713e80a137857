"""Inputs PyTorch refuses for their dtype or value (a kernel it lacks for Bool or Long, a float
``alpha`` for integers, integer ``addcdiv``, a loss's bad parameter or target, a ``weight`` of
another dtype, an integral scan of a tensor that requires grad): aiograd raises the same error."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag

B = np.array([True, False, True])
L = np.array([1, -2, 3], dtype=np.int64)
D = np.array([0.25, 0.5, 0.75], dtype=np.float64)
S = np.array([0.5, 0.5, 0.5], dtype=np.float32)
BM = np.ones((2, 2), dtype=bool)


def _t(m: Any, a: Any, grad: bool = False) -> Any:
    return m.tensor(a.copy(), requires_grad=grad)


def _f(m: Any) -> Any:
    return m.nn.functional


def _dtype(m: Any, name: str) -> Any:
    return getattr(torch, name) if m is torch else {"long": np.int64, "bool": np.bool_, "float": np.float32}[name]


CASES = {
    "abs_bool": lambda m: m.abs(_t(m, B)),
    "abs__bool": lambda m: _t(m, B).abs_(),
    "ceil_bool": lambda m: m.ceil(_t(m, B)),
    "ceil__bool": lambda m: _t(m, B).ceil_(),
    "floor_bool": lambda m: m.floor(_t(m, B)),
    "floor__bool": lambda m: _t(m, B).floor_(),
    "round_bool": lambda m: m.round(_t(m, B)),
    "round_long_decimals": lambda m: m.round(_t(m, L), decimals=1),
    "trunc_bool": lambda m: m.trunc(_t(m, B)),
    "trunc__bool": lambda m: _t(m, B).trunc_(),
    "frac_long": lambda m: m.frac(_t(m, L)),
    "frac_bool": lambda m: m.frac(_t(m, B)),
    "frac__long": lambda m: _t(m, L).frac_(),
    "relu_bool": lambda m: m.relu(_t(m, B)),
    "F_relu_bool": lambda m: _f(m).relu(_t(m, B)),
    "fmod_bool": lambda m: m.fmod(_t(m, B), _t(m, B)),
    "remainder_bool": lambda m: m.remainder(_t(m, B), _t(m, B)),
    "remainder_bool_number": lambda m: m.remainder(_t(m, B), True),
    "hypot_long": lambda m: m.hypot(_t(m, L), _t(m, L)),
    "hypot_bool": lambda m: m.hypot(_t(m, B), _t(m, B)),
    "trace_bool": lambda m: m.trace(_t(m, BM)),
    "dot_bool": lambda m: m.dot(_t(m, B), _t(m, B)),
    "inner_bool": lambda m: m.inner(_t(m, B), _t(m, B)),
    "inner_bool_2d": lambda m: m.inner(_t(m, BM), _t(m, BM)),
    "add_float_alpha_long": lambda m: m.add(_t(m, L), _t(m, L), alpha=1.5),
    "add_float_alpha_one_long": lambda m: m.add(_t(m, L), _t(m, L), alpha=1.0),
    "add_float_alpha_bool": lambda m: m.add(_t(m, B), _t(m, B), alpha=1.5),
    "add_float_alpha_long_number": lambda m: m.add(_t(m, L), 2, alpha=1.5),
    "add_bool_alpha_long": lambda m: m.add(_t(m, L), _t(m, L), alpha=True),
    "add__float_alpha_long": lambda m: _t(m, L).add_(_t(m, L), alpha=1.5),
    "sub__float_alpha_long": lambda m: _t(m, L).sub_(_t(m, L), alpha=1.5),
    "sub_float_alpha_long": lambda m: m.sub(_t(m, L), _t(m, L), alpha=1.5),
    "sub_float_alpha_bool": lambda m: m.sub(_t(m, B), _t(m, B), alpha=1.5),
    "addcdiv_long": lambda m: m.addcdiv(_t(m, L), _t(m, L), _t(m, L)),
    "addcdiv_float_input": lambda m: m.addcdiv(_t(m, D), _t(m, L), _t(m, L)),
    "addcdiv_bool": lambda m: m.addcdiv(_t(m, B), _t(m, B), _t(m, B)),
    "addcdiv__long": lambda m: _t(m, L).addcdiv_(_t(m, L), _t(m, L)),
    "cumsum_long_dtype_grad": lambda m: _t(m, D, True).cumsum(0, dtype=_dtype(m, "long")),
    "cumprod_long_dtype_grad": lambda m: _t(m, D, True).cumprod(0, dtype=_dtype(m, "long")),
    "cumsum_bool_dtype": lambda m: _t(m, D).cumsum(0, dtype=_dtype(m, "bool")),
    "cumprod_bool_dtype_grad": lambda m: _t(m, D, True).cumprod(0, dtype=_dtype(m, "bool")),
    "huber_loss_zero_delta": lambda m: _f(m).huber_loss(_t(m, D), _t(m, D), delta=0.0),
    "huber_loss_negative_delta": lambda m: _f(m).huber_loss(_t(m, D), _t(m, D), delta=-1.0),
    "smooth_l1_loss_negative_beta": lambda m: _f(m).smooth_l1_loss(_t(m, D), _t(m, D), beta=-1.0),
    "bce_target_above_one": lambda m: _f(m).binary_cross_entropy(_t(m, D), _t(m, D * 4)),
    "bce_target_negative": lambda m: _f(m).binary_cross_entropy(_t(m, D), _t(m, -D)),
    "bce_target_nan": lambda m: _f(m).binary_cross_entropy(_t(m, D), _t(m, D * np.nan)),
    "bce_input_and_target": lambda m: _f(m).binary_cross_entropy(_t(m, D * 4), _t(m, D * 4)),
    "lerp_long_weight": lambda m: m.lerp(_t(m, D), _t(m, D), _t(m, L)),
    "lerp_float_weight": lambda m: m.lerp(_t(m, D), _t(m, D), _t(m, S)),
    "lerp__double_weight": lambda m: _t(m, S).lerp_(_t(m, S), _t(m, D)),
    "lerp_long": lambda m: m.lerp(_t(m, L), _t(m, L), _t(m, L)),
    "lerp_long_number": lambda m: m.lerp(_t(m, L), _t(m, L), 2),
}


@requires_torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_as_torch(case: str) -> None:
    fn = CASES[case]
    with pytest.raises(Exception) as expected:
        fn(torch)
    with pytest.raises(Exception) as got:
        fn(ag)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


ACCEPTED = {
    "abs_long": lambda m: m.abs(_t(m, L)),
    "relu_long": lambda m: m.relu(_t(m, L)),
    "hypot_long_double": lambda m: m.hypot(_t(m, L), _t(m, D)),
    "add_float_alpha_long_double": lambda m: m.add(_t(m, L), _t(m, D), alpha=1.5),
    "addcdiv_float_tensor1": lambda m: m.addcdiv(_t(m, L), _t(m, D), _t(m, L)),
    "smooth_l1_loss_zero_beta": lambda m: _f(m).smooth_l1_loss(_t(m, D), _t(m, D), beta=0.0),
    "lerp_0d_weight_of_another_dtype": lambda m: m.lerp(_t(m, D), _t(m, D), m.tensor(np.float32(0.5))),
    "cumsum_float_dtype_grad": lambda m: _t(m, D, True).cumsum(0, dtype=_dtype(m, "float")),
    "cumsum_long_dtype": lambda m: _t(m, D).cumsum(0, dtype=_dtype(m, "long")),
}


@requires_torch
@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_as_torch(case: str) -> None:
    expected = ACCEPTED[case](torch).detach().numpy()
    got = np.asarray(ACCEPTED[case](ag).detach().data)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
