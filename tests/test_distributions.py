"""``aiograd.distributions`` against ``torch.distributions`` in float64: ``log_prob``, ``entropy``,
the moments, ``cdf``/``icdf``, ``kl_divergence`` and their gradients (``await loss.backward()``),
same-seed ``sample``/``rsample``, validation with torch's messages, and batch/event/sample shapes."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiograd
import aiograd.distributions as AD

torch = pytest.importorskip("torch")
TD = torch.distributions
RNG = np.random.default_rng(7)


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _params(values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    ours = {k: aiograd.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for k, v in values.items()}
    theirs = {k: torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for k, v in values.items()}
    return ours, theirs


async def _against_torch(
    values: dict[str, Any], build: Callable[[Any, Any, dict[str, Any]], list[Any]], rtol: float = 1e-10
) -> None:
    """``build(lib, distributions, params)`` returns a list of tensors, for aiograd and for torch:
    their values must agree, and so must the parameters' gradients of a weighted sum of the
    finite floating ones."""
    ours, theirs = _params(values)
    a = build(aiograd, AD, ours)
    b = build(torch, TD, theirs)
    assert len(a) == len(b)
    loss_a: Any = 0.0
    loss_b: Any = 0.0
    for x, y in zip(a, b):
        xa, ya = _np(x), _np(y)
        assert xa.shape == ya.shape, (xa.shape, ya.shape)
        assert xa.dtype == ya.dtype, (xa.dtype, ya.dtype)
        np.testing.assert_allclose(xa, ya, rtol=rtol, atol=1e-12, equal_nan=True)
        if y.dtype == torch.float64 and y.requires_grad and np.all(np.isfinite(ya)):
            w = RNG.standard_normal(ya.shape)
            loss_a = loss_a + (x * aiograd.tensor(w)).sum()
            loss_b = loss_b + (y * torch.tensor(w)).sum()
    assert isinstance(loss_b, torch.Tensor), "nothing differentiable to compare"
    await loss_a.backward()
    loss_b.backward()
    for k in ours:
        ga, gb = ours[k].grad, theirs[k].grad
        if gb is None:
            assert ga is None or not np.any(_np(ga)), k
            continue
        assert ga is not None, k
        np.testing.assert_allclose(_np(ga), _np(gb), rtol=rtol, atol=1e-12, err_msg=k)


def _f64(lib: Any, v: Any) -> Any:
    return lib.tensor(v, dtype=lib.float64)


def _same_seed(seed: int, ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    aiograd.manual_seed(seed)
    torch.manual_seed(seed)
    a, b = _np(ours()), _np(theirs())
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    # the same draws; the arithmetic after them (``loc + eps * scale``, the matmul) to a few ulp
    np.testing.assert_allclose(a, b, rtol=8 * np.finfo(np.float64).eps, atol=1e-15)
    np.testing.assert_array_equal(_np(aiograd.get_rng_state()), _np(torch.get_rng_state()))


# ------------------------------------------------------------------------------ values and gradients

LOC = RNG.standard_normal((3, 1))
SCALE = RNG.uniform(0.5, 2.0, (4,))
X = RNG.standard_normal((2, 3, 4))


async def test_normal_values_and_gradients() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Normal(p["loc"], p["scale"])
        x = p["x"]
        return [d.log_prob(x), d.entropy(), d.mean, d.mode, d.variance, d.stddev, d.cdf(x), d.perplexity()]

    await _against_torch({"loc": LOC, "scale": SCALE, "x": X}, build)


@pytest.mark.real_default_dtype  # numbers become tensors of the default dtype (float32), as torch's
async def test_normal_with_numbers_has_an_empty_batch_shape() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Normal(0.5, 2.0)
        assert tuple(d.batch_shape) == () and tuple(d.event_shape) == ()
        return [d.log_prob(p["x"]), d.entropy()]

    await _against_torch({"x": X}, build)


@pytest.mark.parametrize("param", ["probs", "logits"])
async def test_bernoulli_values_and_gradients(param: str) -> None:
    value = RNG.uniform(0.05, 0.95, (3, 4)) if param == "probs" else RNG.standard_normal((3, 4)) * 2

    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Bernoulli(**{param: p["w"]})
        x = _f64(lib, [[0.0], [1.0], [1.0]])
        return [d.log_prob(x), d.entropy(), d.mean, d.variance, d.stddev, d.probs, d.logits, d.mode]

    await _against_torch({"w": value}, build)


def test_bernoulli_mode_is_nan_at_one_half() -> None:
    ours = AD.Bernoulli(aiograd.tensor([0.2, 0.5, 0.9])).mode
    theirs = TD.Bernoulli(torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)).mode
    np.testing.assert_array_equal(_np(ours), _np(theirs))
    assert math.isnan(_np(ours)[1])


@pytest.mark.parametrize("param", ["probs", "logits"])
async def test_categorical_values_and_gradients(param: str) -> None:
    value = RNG.uniform(0.1, 2.0, (2, 3, 5)) if param == "probs" else RNG.standard_normal((2, 3, 5)) * 2
    idx = RNG.integers(0, 5, (4, 2, 3))

    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Categorical(**{param: p["w"]})
        assert tuple(d.batch_shape) == (2, 3) and tuple(d.event_shape) == ()
        return [d.log_prob(lib.tensor(idx)), d.entropy(), d.probs, d.logits, d.mode, d.mean, d.variance,
                d.enumerate_support()]

    await _against_torch({"w": value}, build)


async def test_categorical_entropy_with_a_zero_probability() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Categorical(probs=p["w"])
        return [d.entropy(), d.log_prob(lib.tensor([0, 1]))]

    await _against_torch({"w": [[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]]}, build)


async def test_uniform_values_and_gradients() -> None:
    low = RNG.uniform(-2, 0, (3,))
    high = low + RNG.uniform(0.5, 3, (3,))
    x = low + (high - low) * RNG.uniform(0.01, 0.99, (5, 3))

    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Uniform(p["low"], p["high"])
        return [d.log_prob(p["x"]), d.entropy(), d.mean, d.variance, d.stddev, d.cdf(p["x"]), d.icdf(p["u"]),
                d.mode]

    await _against_torch({"low": low, "high": high, "x": x, "u": RNG.uniform(0, 1, (5, 3))}, build)


def test_uniform_log_prob_outside_the_support_is_minus_infinity() -> None:
    d = AD.Uniform(aiograd.tensor(0.0), aiograd.tensor(1.0), validate_args=False)
    t = TD.Uniform(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64), validate_args=False)
    x = [-0.5, 0.0, 0.5, 1.0, 1.5]
    np.testing.assert_array_equal(_np(d.log_prob(aiograd.tensor(x))), _np(t.log_prob(torch.tensor(x, dtype=torch.float64))))
    np.testing.assert_array_equal(_np(d.cdf(aiograd.tensor(x))), _np(t.cdf(torch.tensor(x, dtype=torch.float64))))


def _spd(n: int, *batch: int) -> np.ndarray:
    a = RNG.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
async def test_multivariate_normal_values_and_gradients(form: str) -> None:
    m = _spd(3, 2)
    matrix = np.linalg.cholesky(m) if form == "scale_tril" else m
    loc = RNG.standard_normal((4, 1, 3))  # broadcast with the matrices' batch (2,)
    x = RNG.standard_normal((5, 4, 2, 3))

    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.MultivariateNormal(p["loc"], **{form: p["m"]})
        assert tuple(d.batch_shape) == (4, 2) and tuple(d.event_shape) == (3,)
        return [d.log_prob(p["x"]), d.entropy(), d.mean, d.mode, d.variance, d.stddev, d.scale_tril,
                d.covariance_matrix, d.precision_matrix]

    await _against_torch({"loc": loc, "m": matrix, "x": x}, build, rtol=1e-9)


async def test_independent_normal_sums_over_the_reinterpreted_dims() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.Independent(D.Normal(p["loc"], p["scale"]), 1)
        assert tuple(d.batch_shape) == (3,) and tuple(d.event_shape) == (4,)
        assert d.has_rsample and not d.has_enumerate_support
        return [d.log_prob(p["x"]), d.entropy(), d.mean, d.variance]

    await _against_torch({"loc": LOC, "scale": SCALE, "x": X}, build)


async def test_one_hot_categorical_values_and_gradients() -> None:
    idx = RNG.integers(0, 4, (6, 2))
    onehot = np.eye(4)[idx]

    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        d = D.OneHotCategorical(logits=p["w"])
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (4,)
        return [d.log_prob(_f64(lib, onehot)), d.entropy(), d.mean, d.variance, d.mode, d.enumerate_support()]

    await _against_torch({"w": RNG.standard_normal((2, 4))}, build)


# ------------------------------------------------------------------------------ KL divergences

async def test_kl_normal_normal() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        return [D.kl_divergence(D.Normal(p["a"], p["s"]), D.Normal(p["b"], p["t"]))]

    await _against_torch({"a": LOC, "s": SCALE, "b": RNG.standard_normal(4), "t": RNG.uniform(0.5, 2, (3, 4))}, build)


async def test_kl_bernoulli_bernoulli_with_infinities() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        return [
            D.kl_divergence(D.Bernoulli(probs=p["p"]), D.Bernoulli(logits=p["q"])),
            D.kl_divergence(D.Bernoulli(probs=_f64(lib, [0.0, 0.3, 1.0, 0.5])), D.Bernoulli(probs=_f64(lib, [0.2, 0.0, 0.4, 1.0]))),
        ]

    await _against_torch({"p": RNG.uniform(0.05, 0.95, (3,)), "q": RNG.standard_normal(3)}, build)


async def test_kl_categorical_categorical_and_one_hot() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        return [
            D.kl_divergence(D.Categorical(probs=p["p"]), D.Categorical(logits=p["q"])),
            D.kl_divergence(D.OneHotCategorical(probs=p["p"]), D.OneHotCategorical(logits=p["q"])),
            D.kl_divergence(D.Categorical(probs=_f64(lib, [0.0, 0.5, 0.5])), D.Categorical(probs=_f64(lib, [0.5, 0.0, 0.5]))),
        ]

    await _against_torch({"p": RNG.uniform(0.1, 1, (2, 4)), "q": RNG.standard_normal((2, 4))}, build)


async def test_kl_uniform_uniform_is_infinite_outside() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        inside = D.kl_divergence(D.Uniform(p["a"], p["b"]), D.Uniform(p["c"], p["d"]))
        outside = D.kl_divergence(D.Uniform(_f64(lib, [0.0, 0.0, -1.0]), _f64(lib, [1.0, 2.0, 1.0])),
                                  D.Uniform(_f64(lib, [-1.0, 0.5, -2.0]), _f64(lib, [3.0, 3.0, 0.5])))
        return [inside, outside]

    await _against_torch({"a": [0.0, 0.2, -1.0], "b": [1.0, 2.0, 1.0], "c": [-1.0, 0.0, -2.0], "d": [3.0, 3.0, 2.0]}, build)


async def test_kl_multivariate_normal() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        a = D.MultivariateNormal(p["a"], scale_tril=p["L"])
        b = D.MultivariateNormal(p["b"], covariance_matrix=p["S"])
        return [D.kl_divergence(a, b), D.kl_divergence(b, a)]

    L = np.linalg.cholesky(_spd(3, 2))
    await _against_torch({"a": RNG.standard_normal((2, 3)), "L": L, "b": RNG.standard_normal(3), "S": _spd(3)}, build, rtol=1e-9)


async def test_kl_independent_independent() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        a = D.Independent(D.Normal(p["a"], p["s"]), 1)
        b = D.Independent(D.Normal(p["b"], p["t"]), 1)
        return [D.kl_divergence(a, b)]

    await _against_torch({"a": LOC, "s": SCALE, "b": RNG.standard_normal(4), "t": RNG.uniform(0.5, 2, (3, 4))}, build)


def test_kl_of_an_unregistered_pair_and_register_kl() -> None:
    n, u = AD.Normal(0.0, 1.0), AD.Uniform(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Uniform"):
        AD.kl_divergence(n, u)
    with pytest.raises(NotImplementedError):
        AD.kl_divergence(AD.Independent(AD.Normal(aiograd.zeros(2), aiograd.ones(2)), 1),
                         AD.Independent(AD.Normal(aiograd.zeros(2, 2), aiograd.ones(2, 2)), 2))

    class MyNormal(AD.Normal):
        pass

    assert float(AD.kl_divergence(MyNormal(0.0, 1.0), AD.Normal(1.0, 1.0))) == pytest.approx(0.5)  # subclass dispatch

    @AD.register_kl(MyNormal, AD.Uniform)
    def _mine(p: Any, q: Any) -> Any:
        return aiograd.tensor(42.0)

    assert float(AD.kl_divergence(MyNormal(0.0, 1.0), u)) == 42.0


# ------------------------------------------------------------------------------ same-seed samples

SEEDS = [0, 3, 2**32 + 5]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 17)])
def test_samples_equal_torchs_after_the_same_seed(seed: int, sample_shape: tuple[int, ...]) -> None:
    loc, scale = RNG.standard_normal((3, 1)), RNG.uniform(0.5, 2, (4,))
    probs = RNG.uniform(0.05, 1, (2, 3, 5))
    low = RNG.standard_normal(3)
    L = np.linalg.cholesky(_spd(3, 2))
    mloc = RNG.standard_normal(3)
    a, t = (lambda v: aiograd.tensor(v, dtype=aiograd.float64)), (lambda v: torch.tensor(v, dtype=torch.float64))
    cases: list[tuple[Callable[[], Any], Callable[[], Any]]] = [
        (lambda: AD.Normal(a(loc), a(scale)).sample(sample_shape), lambda: TD.Normal(t(loc), t(scale)).sample(sample_shape)),
        (lambda: AD.Normal(a(loc), a(scale)).rsample(sample_shape), lambda: TD.Normal(t(loc), t(scale)).rsample(sample_shape)),
        (lambda: AD.Bernoulli(a(probs[..., 0])).sample(sample_shape), lambda: TD.Bernoulli(t(probs[..., 0])).sample(sample_shape)),
        (lambda: AD.Bernoulli(logits=a(loc)).sample(sample_shape), lambda: TD.Bernoulli(logits=t(loc)).sample(sample_shape)),
        (lambda: AD.Categorical(a(probs)).sample(sample_shape), lambda: TD.Categorical(t(probs)).sample(sample_shape)),
        (lambda: AD.OneHotCategorical(a(probs)).sample(sample_shape), lambda: TD.OneHotCategorical(t(probs)).sample(sample_shape)),
        (lambda: AD.Uniform(a(low), a(low + 2)).sample(sample_shape), lambda: TD.Uniform(t(low), t(low + 2)).sample(sample_shape)),
        (lambda: AD.MultivariateNormal(a(mloc), scale_tril=a(L)).rsample(sample_shape),
         lambda: TD.MultivariateNormal(t(mloc), scale_tril=t(L)).rsample(sample_shape)),
        (lambda: AD.Independent(AD.Normal(a(loc), a(scale)), 2).sample(sample_shape),
         lambda: TD.Independent(TD.Normal(t(loc), t(scale)), 2).sample(sample_shape)),
    ]
    for ours, theirs in cases:
        _same_seed(seed, ours, theirs)


async def test_rsample_gradients_reach_the_parameters() -> None:
    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        lib.manual_seed(11)
        n = D.Normal(p["loc"], p["scale"]).rsample((6,))
        u = D.Uniform(p["low"], p["low"] + p["width"]).rsample((2,))
        m = D.MultivariateNormal(p["mloc"], scale_tril=p["L"]).rsample((4,))
        s = D.Normal(p["loc"], p["scale"]).sample()
        return [n, u, m, s]

    await _against_torch(
        {"loc": LOC, "scale": SCALE, "low": RNG.standard_normal(3), "width": RNG.uniform(1, 2, 3),
         "mloc": RNG.standard_normal(3), "L": np.linalg.cholesky(_spd(3))},
        build,
    )


def test_samples_carry_no_gradient_but_rsample_does() -> None:
    d = AD.Normal(aiograd.zeros(2, requires_grad=True), aiograd.ones(2, requires_grad=True))
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    assert AD.Normal.has_rsample and AD.Uniform.has_rsample and AD.MultivariateNormal.has_rsample
    assert not AD.Bernoulli.has_rsample and not AD.Categorical.has_rsample


# ------------------------------------------------------------------------------ validation

def _torch_message(text: str) -> str:
    """torch's message with its ``torch.Size([...])`` written as aiograd's tuples."""
    text = text.replace("dtype=torch.", "dtype=")
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", lambda m: repr(tuple(int(s) for s in m.group(1).split(", ") if s)), text)


def _same_error(ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    with pytest.raises(ValueError) as theirs_error:
        theirs()
    with pytest.raises(ValueError) as ours_error:
        ours()
    assert str(ours_error.value) == _torch_message(str(theirs_error.value))


@pytest.mark.real_default_dtype  # the tensors in the messages are written as torch writes them
def test_invalid_parameters_raise_torchs_value_errors() -> None:
    a, t = (lambda v: aiograd.tensor(v, dtype=aiograd.float64)), (lambda v: torch.tensor(v, dtype=torch.float64))
    _same_error(lambda: AD.Normal(a(0.0), a(-1.0)), lambda: TD.Normal(t(0.0), t(-1.0)))
    # (one element: aiograd writes ``tensor([0., nan])`` with torch's spacing only without a nan)
    _same_error(lambda: AD.Normal(a([math.nan]), a([1.0])), lambda: TD.Normal(t([math.nan]), t([1.0])))
    _same_error(lambda: AD.Bernoulli(a([0.5, 1.5])), lambda: TD.Bernoulli(t([0.5, 1.5])))
    _same_error(lambda: AD.Bernoulli(), lambda: TD.Bernoulli())
    _same_error(lambda: AD.Categorical(a([0.5, -0.5, 1.0])), lambda: TD.Categorical(t([0.5, -0.5, 1.0])))
    _same_error(lambda: AD.Categorical(a(1.0)), lambda: TD.Categorical(t(1.0)))
    _same_error(lambda: AD.Uniform(a(1.0), a(0.0)), lambda: TD.Uniform(t(1.0), t(0.0)))
    bad = [[1.0, 2.0], [2.0, 1.0]]  # symmetric, not positive definite
    _same_error(lambda: AD.MultivariateNormal(a([0.0, 0.0]), a(bad)), lambda: TD.MultivariateNormal(t([0.0, 0.0]), t(bad)))
    _same_error(lambda: AD.MultivariateNormal(a([0.0, 0.0]), scale_tril=a([[1.0, 1.0], [0.0, 1.0]])),
                lambda: TD.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 1.0], [0.0, 1.0]])))
    _same_error(lambda: AD.MultivariateNormal(a([0.0, 0.0])), lambda: TD.MultivariateNormal(t([0.0, 0.0])))
    _same_error(lambda: AD.MultivariateNormal(a(0.0), a(np.eye(2))), lambda: TD.MultivariateNormal(t(0.0), t(np.eye(2))))
    _same_error(lambda: AD.Independent(AD.Normal(a([0.0]), a([1.0])), 2), lambda: TD.Independent(TD.Normal(t([0.0]), t([1.0])), 2))


@pytest.mark.real_default_dtype  # the tensors in the messages are written as torch writes them
def test_invalid_values_raise_torchs_value_errors() -> None:
    a, t = (lambda v: aiograd.tensor(v, dtype=aiograd.float64)), (lambda v: torch.tensor(v, dtype=torch.float64))
    _same_error(lambda: AD.Bernoulli(a([0.3, 0.6])).log_prob(a([0.5, 1.0])), lambda: TD.Bernoulli(t([0.3, 0.6])).log_prob(t([0.5, 1.0])))
    _same_error(lambda: AD.Normal(a([0.0, 1.0]), a([1.0, 1.0])).log_prob(a([0.0, 1.0, 2.0])),
                lambda: TD.Normal(t([0.0, 1.0]), t([1.0, 1.0])).log_prob(t([0.0, 1.0, 2.0])))
    _same_error(lambda: AD.Normal(0.0, 1.0).log_prob(0.5), lambda: TD.Normal(0.0, 1.0).log_prob(0.5))
    _same_error(lambda: AD.Categorical(a([0.5, 0.5])).log_prob(a([2.0])), lambda: TD.Categorical(t([0.5, 0.5])).log_prob(t([2.0])))
    _same_error(lambda: AD.Uniform(0.0, 1.0).log_prob(a(1.5)), lambda: TD.Uniform(0.0, 1.0).log_prob(t(1.5)))
    _same_error(lambda: AD.MultivariateNormal(a([0.0, 0.0]), a(np.eye(2))).log_prob(a([0.0, 0.0, 0.0])),
                lambda: TD.MultivariateNormal(t([0.0, 0.0]), t(np.eye(2))).log_prob(t([0.0, 0.0, 0.0])))
    _same_error(lambda: AD.OneHotCategorical(a([0.5, 0.5])).log_prob(a([1.0, 1.0])),
                lambda: TD.OneHotCategorical(t([0.5, 0.5])).log_prob(t([1.0, 1.0])))


def test_validation_can_be_turned_off() -> None:
    assert AD.Normal(aiograd.tensor(0.0), aiograd.tensor(-1.0), validate_args=False).scale.item() == -1.0
    AD.Distribution.set_default_validate_args(False)
    try:
        AD.Normal(aiograd.tensor(0.0), aiograd.tensor(-1.0))
        assert AD.Uniform(0.0, 1.0).log_prob(aiograd.tensor(1.5)).item() == -math.inf
    finally:
        AD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        AD.Normal(aiograd.tensor(0.0), aiograd.tensor(-1.0))
    with pytest.raises(ValueError):
        AD.Distribution.set_default_validate_args(1.5)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ shapes

def test_expand_and_sample_shapes() -> None:
    n = AD.Normal(aiograd.zeros(3), aiograd.ones(3)).expand((2, 3))
    assert n.batch_shape == (2, 3) and n.event_shape == ()
    assert n.sample((4,)).shape == (4, 2, 3) and n.rsample().shape == (2, 3)
    assert n.log_prob(aiograd.zeros(3)).shape == (2, 3)
    c = AD.Categorical(logits=aiograd.zeros(5)).expand((4,))
    assert c.batch_shape == (4,) and c.sample((2, 3)).shape == (2, 3, 4) and c.logits.shape == (4, 5)
    b = AD.Bernoulli(logits=aiograd.zeros(2)).expand((3, 2))
    assert b.sample().shape == (3, 2) and b.enumerate_support().shape == (2, 3, 2)
    m = AD.MultivariateNormal(aiograd.zeros(3), aiograd.eye(3)).expand((5,))
    assert m.batch_shape == (5,) and m.event_shape == (3,) and m.sample((2,)).shape == (2, 5, 3)
    assert m.covariance_matrix.shape == (5, 3, 3)
    i = AD.Independent(AD.Normal(aiograd.zeros(2, 3), aiograd.ones(2, 3)), 1).expand((4, 2))
    assert i.batch_shape == (4, 2) and i.event_shape == (3,) and i.sample().shape == (4, 2, 3)
    assert i.log_prob(aiograd.zeros(3)).shape == (4, 2)
    o = AD.OneHotCategorical(aiograd.ones(2, 3)).expand((5, 2))
    assert o.sample((7,)).shape == (7, 5, 2, 3)
    u = AD.Uniform(aiograd.zeros(2), 1.0).expand((3, 2))
    assert u.batch_shape == (3, 2) and u.entropy().shape == (3, 2)


def test_shapes_agree_with_torch() -> None:
    cases = [
        (lambda D, lib: D.Independent(D.Normal(lib.zeros(2, 3, 4), lib.ones(2, 3, 4)), 2)),
        (lambda D, lib: D.MultivariateNormal(lib.zeros(4, 1, 3), scale_tril=lib.eye(3).expand(2, 3, 3))),
        (lambda D, lib: D.Independent(D.MultivariateNormal(lib.zeros(2, 3), lib.eye(3)), 1)),
        (lambda D, lib: D.Categorical(logits=lib.zeros(6))),
        (lambda D, lib: D.Bernoulli(0.3)),
    ]
    for make in cases:
        ours, theirs = make(AD, aiograd), make(TD, torch)
        assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == tuple(theirs.event_shape)
        assert ours.sample((2,)).shape == tuple(theirs.sample((2,)).shape)
        assert ours.entropy().shape == tuple(theirs.entropy().shape)


@pytest.mark.real_default_dtype  # the tensors in the messages are written as torch writes them
def test_supports_constraints_and_reprs() -> None:
    C, TC = AD.constraints, TD.constraints
    for ours, theirs in [
        (C.real, TC.real), (C.positive, TC.positive), (C.unit_interval, TC.unit_interval), (C.simplex, TC.simplex),
        (C.real_vector, TC.real_vector), (C.lower_cholesky, TC.lower_cholesky), (C.boolean, TC.boolean),
        (C.positive_definite, TC.positive_definite), (C.one_hot, TC.one_hot), (C.integer_interval(0, 4), TC.integer_interval(0, 4)),
        (C.interval(-1.0, 2.0), TC.interval(-1.0, 2.0)), (C.half_open_interval(0.0, 1.0), TC.half_open_interval(0.0, 1.0)),
        (C.greater_than_eq(1.0), TC.greater_than_eq(1.0)), (C.less_than(3.0), TC.less_than(3.0)),
        (C.nonnegative_integer, TC.nonnegative_integer),
    ]:
        assert repr(ours) == repr(theirs)
        assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
    x = RNG.standard_normal((4, 3, 3))
    x[0] = x[0] @ x[0].T + np.eye(3)
    x[1] = np.tril(np.abs(x[1])) + np.eye(3)
    for ours, theirs in [(C.positive_definite, TC.positive_definite), (C.lower_cholesky, TC.lower_cholesky),
                         (C.simplex, TC.simplex), (C.real_vector, TC.real_vector), (C.positive, TC.positive),
                         (C.independent(C.positive, 2), TC.independent(TC.positive, 2))]:
        np.testing.assert_array_equal(_np(ours.check(aiograd.tensor(x))), theirs.check(torch.tensor(x)).numpy())
    assert C.is_dependent(AD.Categorical.support) and C.is_dependent(C.dependent)
    n = AD.Categorical(aiograd.ones(4))
    assert repr(n.support) == "IntegerInterval(lower_bound=0, upper_bound=3)"
    assert repr(AD.Independent(AD.Normal(aiograd.zeros(2), aiograd.ones(2)), 1).support) == "IndependentConstraint(Real(), 1)"
    assert repr(AD.Normal(aiograd.tensor(0.0), aiograd.tensor(1.0))) == repr(TD.Normal(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)))
    assert set(AD.MultivariateNormal.arg_constraints) == set(TD.MultivariateNormal.arg_constraints)
    assert repr(AD.Uniform(0.0, 1.0).arg_constraints["low"]) == repr(TD.Uniform(0.0, 1.0).arg_constraints["low"])


async def test_utils_match_torch() -> None:
    U, TU = AD.utils, TD.utils

    def build(lib: Any, D: Any, p: dict[str, Any]) -> list[Any]:
        u = U if lib is aiograd else TU
        x, y = u.broadcast_all(p["a"], 2.5)
        return [x, y, u.probs_to_logits(p["p"]), u.probs_to_logits(p["p"], is_binary=True),
                u.logits_to_probs(p["a"]), u.logits_to_probs(p["a"], is_binary=True), u.clamp_probs(p["p"] - 0.1)]

    await _against_torch({"a": RNG.standard_normal((2, 3)), "p": RNG.uniform(0, 1, (2, 3))}, build)
    with pytest.raises(ValueError, match="Input arguments must all be instances of Number"):
        U.broadcast_all(aiograd.zeros(2), "x")  # type: ignore[arg-type]


def test_lazy_property_is_computed_once() -> None:
    d = AD.Bernoulli(logits=aiograd.tensor([0.0, 1.0]))
    assert "probs" not in d.__dict__
    p = d.probs
    assert d.__dict__["probs"] is p and d.probs is p
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FutureWarning):
            d.sample_n(2)
