"""aiograd.nn.init: torch's gain table, fan computation and errors, in-place fills under no_grad
from the default generator, and fresh layers distributed as torch's (Kolmogorov-Smirnov tests
against the exact distribution and against torch's own draws, fixed seeds)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
from aiograd.nn import init

pytestmark = requires_torch
stats = pytest.importorskip("scipy.stats")


def _same_error(ours: Any, theirs: Any) -> None:
    with pytest.raises(Exception) as t_info:
        theirs()
    with pytest.raises(type(t_info.value)) as a_info:
        ours()
    assert str(a_info.value) == str(t_info.value)


@pytest.mark.parametrize(
    "nonlinearity, param",
    [
        ("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None), ("conv_transpose1d", None),
        ("conv_transpose2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("leaky_relu", math.sqrt(5)),
        ("selu", None),
    ],
)
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(nonlinearity, param)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.calculate_gain("leaky_relu", True),
        lambda lib, x: lib.calculate_gain("softsign"),
        lambda lib, x: lib.xavier_uniform_(x[:1].reshape(1)),
        lambda lib, x: lib.kaiming_normal_(x, mode="fan_avg"),
        lambda lib, x: lib.orthogonal_(x.reshape(-1)),
    ],
)
def test_errors_match_torch(call):
    _same_error(
        lambda: call(init, ag.zeros(3, 4)),
        lambda: call(torch.nn.init, torch.zeros(3, 4, dtype=torch.float64)),
    )


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2), (8, 2, 3, 3)])
def test_fans_match_torch(shape):
    assert init._calculate_fan_in_and_fan_out(ag.zeros(*shape)) == torch.nn.init._calculate_fan_in_and_fan_out(
        torch.zeros(*shape)
    )


def test_fills_are_in_place_unrecorded_and_bump_the_version():
    p = nn.Parameter(ag.zeros(3, 4))
    for fill, check in [
        (lambda t: init.constant_(t, 2.5), lambda d: (d == 2.5).all()),
        (init.ones_, lambda d: (d == 1).all()),
        (init.zeros_, lambda d: (d == 0).all()),
        (init.eye_, lambda d: (d == np.eye(3, 4)).all()),
        (lambda t: init.uniform_(t, -1, 1), lambda d: (abs(d) <= 1).all()),
        (init.normal_, lambda d: d.std() > 0),
    ]:
        version = p._version
        assert fill(p) is p
        assert check(p.detach().numpy()) and p.grad_fn is None and p.requires_grad and p._version == version + 1


def test_the_default_generator_makes_layers_reproducible():
    ag.manual_seed(7)
    a = nn.Linear(6, 4)
    ag.manual_seed(7)
    b = nn.Linear(6, 4)
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    np.testing.assert_array_equal(a.bias.data, b.bias.data)
    c = nn.Linear(6, 4)
    assert not np.array_equal(a.weight.data, c.weight.data)
    rng = np.random.default_rng(3)
    x = init.normal_(ag.zeros(5), generator=rng)
    np.testing.assert_array_equal(x.data, np.random.default_rng(3).normal(0.0, 1.0, 5))


def _draws(make: Any, count: int) -> np.ndarray:
    return np.concatenate([np.asarray(make()).ravel() for _ in range(count)])


def test_a_fresh_linear_is_distributed_as_torchs():
    ag.manual_seed(0)
    torch.manual_seed(0)
    fan_in = 20
    bound = 1 / math.sqrt(fan_in)
    ours = [nn.Linear(fan_in, 30) for _ in range(20)]
    theirs = [torch.nn.Linear(fan_in, 30) for _ in range(20)]
    for name in ("weight", "bias"):
        a = np.concatenate([getattr(m, name).data.ravel() for m in ours])
        t = np.concatenate([getattr(m, name).detach().numpy().ravel() for m in theirs])
        assert np.abs(a).max() <= bound and np.abs(t).max() <= bound
        # U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both, as torch's kaiming_uniform_(a=sqrt(5)) gives
        assert stats.kstest(a, stats.uniform(-bound, 2 * bound).cdf).pvalue > 1e-3
        assert stats.ks_2samp(a, t).pvalue > 1e-3
    # and a clearly different law is rejected (the test can fail)
    a = np.concatenate([m.weight.data.ravel() for m in ours])
    assert stats.kstest(a, stats.uniform(-2 * bound, 4 * bound).cdf).pvalue < 1e-6


@pytest.mark.parametrize(
    "fill, args",
    [
        ("xavier_uniform_", {}), ("xavier_normal_", {"gain": 2.0}), ("kaiming_uniform_", {"nonlinearity": "relu"}),
        ("kaiming_normal_", {"mode": "fan_out"}), ("trunc_normal_", {"std": 2.0, "a": -1.0, "b": 3.0}),
        ("normal_", {"mean": 1.0, "std": 0.5}), ("uniform_", {"a": -3.0, "b": 1.0}),
    ],
)
def test_init_functions_draw_from_torchs_distributions(fill, args):
    ag.manual_seed(1)
    torch.manual_seed(1)
    shape = (40, 25, 3)
    a = _draws(lambda: getattr(init, fill)(ag.zeros(*shape), **args).data, 3)
    t = _draws(lambda: getattr(torch.nn.init, fill)(torch.zeros(*shape, dtype=torch.float64), **args).numpy(), 3)
    assert stats.ks_2samp(a, t).pvalue > 1e-3
    if fill == "trunc_normal_":
        assert a.min() >= -1.0 and a.max() <= 3.0


def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain():
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        w = init.orthogonal_(ag.zeros(*shape), gain=2.0).data.reshape(shape[0], -1)
        small = w @ w.T if shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(small, 4.0 * np.eye(small.shape[0]), atol=1e-12)


def test_zero_element_tensors_warn_as_torch():
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        init.kaiming_uniform_(ag.zeros(0, 3))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.nn.init.kaiming_uniform_(torch.zeros(0, 3))
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
