"""The same seed gives torch's numbers: aiograd's generator is torch's Mersenne Twister and its
samplers are torch's CPU algorithms (aiograd/_base/_sampling.py). Each sampler, ``nn.init``
function, default layer initialisation, dropout mask, data sampler and the generator's state
bytes are compared with torch's after the same seed: integers, permutations, booleans and
float64 values exactly; float32 values from Box-Muller to a few ulp (torch's vectorised
log/sin/cos and numpy's differ in the last bit), everything else exactly."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiograd
import aiograd.nn as nn
import aiograd.utils.data as data

torch = pytest.importorskip("torch")
tdata = pytest.importorskip("torch.utils.data")
pytestmark = pytest.mark.real_default_dtype

SEEDS = [0, 1, 2**32 + 5, 67280421310721]


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().data)


def _both(seed: int, ours: Callable[[], Any], theirs: Callable[[], Any]) -> tuple[np.ndarray, np.ndarray]:
    aiograd.manual_seed(seed)
    torch.manual_seed(seed)
    a, b = _np(ours()), _np(theirs())
    # the streams stay in step too: the generators' states (torch's bytes) are equal after
    np.testing.assert_array_equal(_np(aiograd.get_rng_state()), _np(torch.get_rng_state()))
    return a, b


def _exact(seed: int, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    a, b = _both(seed, ours, theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _close(seed: int, ours: Callable[[], Any], theirs: Callable[[], Any], ulps: float = 8) -> None:
    a, b = _both(seed, ours, theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=ulps * np.finfo(a.dtype).eps, atol=ulps * np.finfo(a.dtype).eps)


DTYPES = [(aiograd.float32, torch.float32), (aiograd.float64, torch.float64), (aiograd.float16, torch.float16)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtypes", DTYPES, ids=["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(1,), (7, 3), (1000,)])
def test_rand_and_uniform_exactly(seed: int, dtypes: Any, shape: tuple[int, ...]) -> None:
    ad, td = dtypes
    _exact(seed, lambda: aiograd.rand(*shape, dtype=ad), lambda: torch.rand(*shape, dtype=td))
    # (torch's float64 ``x * (to - from) + from`` is fused: rounded once, here too)
    _exact(seed, lambda: aiograd.empty(*shape, dtype=ad).uniform_(-3.5, 0.25), lambda: torch.empty(*shape, dtype=td).uniform_(-3.5, 0.25))
    _exact(seed, lambda: aiograd.empty(*shape, dtype=ad).uniform_(-0.61, 0.61), lambda: torch.empty(*shape, dtype=td).uniform_(-0.61, 0.61))
    _exact(seed, lambda: aiograd.rand_like(aiograd.zeros(*shape, dtype=ad)), lambda: torch.rand_like(torch.zeros(*shape, dtype=td)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [1, 2, 3, 15, 16, 17, 32, 33, 1001])
def test_randn_float64_exactly_and_float32_to_ulps(seed: int, n: int) -> None:
    # below 16 elements one Box-Muller pair at a time (the second value cached in the
    # generator); from 16, torch's normal_fill in blocks of 16, the last block redrawn whole
    _close(seed, lambda: aiograd.randn(n, dtype=aiograd.float64), lambda: torch.randn(n, dtype=torch.float64), ulps=4)
    _close(seed, lambda: aiograd.randn(n), lambda: torch.randn(n))
    _close(seed, lambda: aiograd.empty(n).normal_(2.0, 0.5), lambda: torch.empty(n).normal_(2.0, 0.5))


def test_randn_caches_the_second_value_of_a_pair_across_calls() -> None:
    def draws(lib: Any) -> list[float]:
        lib.manual_seed(3)
        one = [lib.randn(1, dtype=lib.float64).item() for _ in range(3)]
        return one + lib.randn(5, dtype=lib.float64).tolist() + lib.randn(20, dtype=lib.float64).tolist()[:2] + [lib.randn(1).item()]

    np.testing.assert_allclose(draws(aiograd), draws(torch), rtol=4e-16, atol=4e-16)
    # and the cache travels in the state bytes (torch's layout), both ways
    torch.manual_seed(3)
    torch.randn(1, dtype=torch.float64)
    aiograd.set_rng_state(aiograd.tensor(_np(torch.get_rng_state())))
    assert aiograd.randn(1, dtype=aiograd.float64).item() == pytest.approx(torch.randn(1, dtype=torch.float64).item(), rel=4e-16)
    np.testing.assert_array_equal(_np(aiograd.get_rng_state()), _np(torch.get_rng_state()))


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_samplers_exactly(seed: int) -> None:
    _exact(seed, lambda: aiograd.randint(3, 17, (50,)), lambda: torch.randint(3, 17, (50,)))
    _exact(seed, lambda: aiograd.randint(-(2**40), 2**40, (9,)), lambda: torch.randint(-(2**40), 2**40, (9,)))
    _exact(seed, lambda: aiograd.randint(10, (4, 5), dtype=aiograd.float32), lambda: torch.randint(10, (4, 5), dtype=torch.float32))
    _exact(seed, lambda: aiograd.randint_like(aiograd.zeros(6, dtype=aiograd.int32), 2, 9), lambda: torch.randint_like(torch.zeros(6, dtype=torch.int32), 2, 9))
    _exact(seed, lambda: aiograd.empty(8, dtype=aiograd.int64).random_(5, 9), lambda: torch.empty(8, dtype=torch.int64).random_(5, 9))
    _exact(seed, lambda: aiograd.empty(8, dtype=aiograd.int16).random_(100), lambda: torch.empty(8, dtype=torch.int16).random_(100))
    for ad, td in [(aiograd.int64, torch.int64), (aiograd.int32, torch.int32), (aiograd.int16, torch.int16), (aiograd.int8, torch.int8),
                   (aiograd.uint8, torch.uint8), (aiograd.bool, torch.bool), (aiograd.float32, torch.float32), (aiograd.float64, torch.float64)]:
        _exact(seed, lambda ad=ad: aiograd.empty(12, dtype=ad).random_(), lambda td=td: torch.empty(12, dtype=td).random_())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 1, 2, 10, 1000, 60_000])
def test_randperm_exactly(seed: int, n: int) -> None:
    _exact(seed, lambda: aiograd.randperm(n), lambda: torch.randperm(n))


@pytest.mark.parametrize("seed", SEEDS)
def test_bernoulli_exponential_multinomial_exactly(seed: int) -> None:
    p32 = np.linspace(0, 1, 37, dtype=np.float32).reshape(37, 1) * np.ones((1, 3), np.float32)
    _exact(seed, lambda: aiograd.bernoulli(aiograd.tensor(p32)), lambda: torch.bernoulli(torch.tensor(p32)))
    _exact(seed, lambda: aiograd.bernoulli(aiograd.tensor(p32.astype(np.float64))), lambda: torch.bernoulli(torch.tensor(p32.astype(np.float64))))
    _exact(seed, lambda: aiograd.bernoulli(aiograd.zeros(40), 0.3), lambda: torch.bernoulli(torch.zeros(40), 0.3))
    _exact(seed, lambda: aiograd.zeros(40).bernoulli_(0.7), lambda: torch.zeros(40).bernoulli_(0.7))
    _exact(seed, lambda: aiograd.zeros(5, 4).bernoulli_(aiograd.tensor([0.1, 0.5, 0.9, 0.3])),
           lambda: torch.zeros(5, 4).bernoulli_(torch.tensor([0.1, 0.5, 0.9, 0.3])))
    _close(seed, lambda: aiograd.empty(50, dtype=aiograd.float64).exponential_(2.5), lambda: torch.empty(50, dtype=torch.float64).exponential_(2.5), ulps=2)
    _close(seed, lambda: aiograd.empty(50).exponential_(), lambda: torch.empty(50).exponential_(), ulps=1)
    # (no more samples than positive weights without replacement: the order in which torch's
    # topk takes tied zero keys is its sort's, unspecified)
    w = np.array([[0.1, 0.5, 0.2, 0.2, 0.0], [1, 1, 1, 1, 1], [0.5, 0.25, 3, 0.1, 1]], dtype=np.float32)
    for n, replacement in [(1, True), (1, False), (3, False), (4, False), (20, True)]:
        _exact(seed, lambda n=n, r=replacement: aiograd.multinomial(aiograd.tensor(w), n, r),
               lambda n=n, r=replacement: torch.multinomial(torch.tensor(w), n, r))
        _exact(seed, lambda n=n, r=replacement: aiograd.multinomial(aiograd.tensor(w[0].astype(np.float64)), n, r),
               lambda n=n, r=replacement: torch.multinomial(torch.tensor(w[0].astype(np.float64)), n, r))


@pytest.mark.parametrize("seed", SEEDS)
def test_normal_variants(seed: int) -> None:
    mean, std = np.linspace(-2, 2, 40).astype(np.float32), np.linspace(0.1, 3, 40).astype(np.float32)
    _close(seed, lambda: aiograd.normal(aiograd.tensor(mean), aiograd.tensor(std)), lambda: torch.normal(torch.tensor(mean), torch.tensor(std)))
    _close(seed, lambda: aiograd.normal(aiograd.tensor(mean), 2.0), lambda: torch.normal(torch.tensor(mean), 2.0))
    _close(seed, lambda: aiograd.normal(1.0, aiograd.tensor(std)), lambda: torch.normal(1.0, torch.tensor(std)))
    _close(seed, lambda: aiograd.normal(1.0, 2.0, (5, 7)), lambda: torch.normal(1.0, 2.0, (5, 7)))
    _close(seed, lambda: aiograd.randn_like(aiograd.zeros(3, 9, dtype=aiograd.float64)), lambda: torch.randn_like(torch.zeros(3, 9, dtype=torch.float64)), ulps=4)


@pytest.mark.parametrize("seed", SEEDS)
def test_fills_of_strided_views_go_in_memory_order(seed: int) -> None:
    # torch's serial kernels visit an output in memory order: a transposed view is filled
    # column by column of its logical layout
    _exact(seed, lambda: aiograd.zeros(6, 4).t().uniform_(), lambda: torch.zeros(6, 4).t().uniform_())
    _exact(seed, lambda: aiograd.zeros(3, 5, dtype=aiograd.int64).t().random_(0, 1000), lambda: torch.zeros(3, 5, dtype=torch.int64).t().random_(0, 1000))
    _close(seed, lambda: aiograd.zeros(6, 4, dtype=aiograd.float64).t().normal_(), lambda: torch.zeros(6, 4, dtype=torch.float64).t().normal_(), ulps=4)
    _exact(seed, lambda: aiograd.zeros(4, 6)[:, ::2].bernoulli_(0.5), lambda: torch.zeros(4, 6)[:, ::2].bernoulli_(0.5))


@pytest.mark.parametrize("seed", SEEDS)
def test_default_layer_initialisation_is_torchs(seed: int) -> None:
    def params(make: Callable[[], Any]) -> list[np.ndarray]:
        return [_np(p) for p in make().parameters()]

    for ours, theirs in [
        (lambda: nn.Linear(30, 20), lambda: torch.nn.Linear(30, 20)),
        (lambda: nn.Conv2d(3, 8, 3), lambda: torch.nn.Conv2d(3, 8, 3)),
        (lambda: nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2)), lambda: torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))),
    ]:
        aiograd.manual_seed(seed)
        torch.manual_seed(seed)
        for a, b in zip(params(ours), params(theirs), strict=True):
            np.testing.assert_array_equal(a, b)
    aiograd.manual_seed(seed)
    torch.manual_seed(seed)
    np.testing.assert_allclose(_np(nn.Embedding(50, 8).weight), _np(torch.nn.Embedding(50, 8).weight), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "name, kwargs",
    [("uniform_", {"a": -0.5, "b": 2.0}), ("normal_", {"mean": 1.0, "std": 0.1}), ("xavier_uniform_", {}), ("xavier_normal_", {"gain": 2.0}),
     ("kaiming_uniform_", {"a": math.sqrt(5)}), ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
     ("trunc_normal_", {"std": 0.02}), ("trunc_normal_", {}), ("trunc_normal_", {"mean": 0.0, "std": 1.0, "a": 2.0, "b": 3.0}),
     ("orthogonal_", {}), ("orthogonal_", {"gain": 3.0})],
)
def test_nn_init_is_torchs(seed: int, name: str, kwargs: dict[str, Any]) -> None:
    for shape in [(40, 30), (5, 3, 2, 2)]:
        # (orthogonal_ goes through a float32 QR: LAPACK's rounding, not the draws, limits it)
        _close(seed, lambda shape=shape: getattr(nn.init, name)(aiograd.empty(*shape), **kwargs),
               lambda shape=shape: getattr(torch.nn.init, name)(torch.empty(*shape), **kwargs), ulps=64)
    g, tg = aiograd.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    np.testing.assert_allclose(_np(getattr(nn.init, name)(aiograd.empty(6, 4), generator=g, **kwargs)),
                               _np(getattr(torch.nn.init, name)(torch.empty(6, 4), generator=tg, **kwargs)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_masks_are_torchs(seed: int, p: float) -> None:
    x = np.linspace(-1, 1, 60, dtype=np.float32).reshape(3, 20)
    _exact(seed, lambda: nn.functional.dropout(aiograd.tensor(x), p), lambda: torch.nn.functional.dropout(torch.tensor(x), p))
    _exact(seed, lambda: nn.Dropout(p)(aiograd.tensor(x.astype(np.float64))), lambda: torch.nn.Dropout(p)(torch.tensor(x.astype(np.float64))))


@pytest.mark.parametrize("seed", SEEDS)
def test_data_samplers_and_random_split_are_torchs(seed: int) -> None:
    def same(ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
        aiograd.manual_seed(seed)
        torch.manual_seed(seed)
        assert [list(x) if not isinstance(x, int) else x for x in ours()] == [list(x) if not isinstance(x, int) else x for x in theirs()]

    same(lambda: data.RandomSampler(range(100)), lambda: tdata.RandomSampler(range(100)))
    same(lambda: data.RandomSampler(range(10), num_samples=25), lambda: tdata.RandomSampler(range(10), num_samples=25))
    same(lambda: data.RandomSampler(range(10), replacement=True, num_samples=70), lambda: tdata.RandomSampler(range(10), replacement=True, num_samples=70))
    same(lambda: data.SubsetRandomSampler([4, 8, 15, 16, 23, 42]), lambda: tdata.SubsetRandomSampler([4, 8, 15, 16, 23, 42]))
    same(lambda: data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.3], 12), lambda: tdata.WeightedRandomSampler([0.1, 0.9, 0.4, 0.3], 12))
    same(lambda: data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.3], 3, replacement=False), lambda: tdata.WeightedRandomSampler([0.1, 0.9, 0.4, 0.3], 3, replacement=False))
    same(lambda: data.random_split(range(20), [0.25, 0.75]), lambda: tdata.random_split(range(20), [0.25, 0.75]))
    same(lambda: data.RandomSampler(range(30), generator=aiograd.Generator().manual_seed(seed + 1)),
         lambda: tdata.RandomSampler(range(30), generator=torch.Generator().manual_seed(seed + 1)))


def test_generator_state_bytes_are_torchs_both_ways() -> None:
    g, tg = aiograd.Generator(), torch.Generator()
    np.testing.assert_array_equal(_np(g.get_state()), _np(tg.get_state()))  # (fresh: torch's default seed)
    for n in [0, 3, 621, 1, 623, 1]:  # across the 624-word twist
        aiograd.rand(n, generator=g)
        torch.rand(n, generator=tg)
        np.testing.assert_array_equal(_np(g.get_state()), _np(tg.get_state()))
    torch.randn(3, generator=tg, dtype=torch.float64)  # (a cached normal in the state)
    g2 = aiograd.Generator().set_state(aiograd.tensor(_np(tg.get_state())))
    assert g2.initial_seed() == tg.initial_seed()
    np.testing.assert_array_equal(_np(aiograd.randn(5, generator=g2, dtype=aiograd.float64)), _np(torch.randn(5, generator=tg, dtype=torch.float64)))
    tg2 = torch.Generator()
    tg2.set_state(torch.from_numpy(_np(g2.get_state()).copy()))
    np.testing.assert_array_equal(_np(torch.rand(7, generator=tg2)), _np(aiograd.rand(7, generator=g2)))


def test_a_numpy_generator_is_accepted_and_gives_numpys_draws() -> None:
    values = aiograd.rand(4, generator=np.random.default_rng(5))
    np.testing.assert_array_equal(_np(values), np.random.default_rng(5).uniform(0, 1, 4).astype(np.float32))
    order = list(data.RandomSampler(range(8), generator=np.random.default_rng(1)))
    assert order == np.random.default_rng(1).permutation(8).tolist()
