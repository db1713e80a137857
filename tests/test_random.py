"""Randomness as torch's: ``Generator`` (seeding, state), ``generator=`` on every sampler, the
samplers' shapes, dtypes and errors (compared with torch's), their statistics for a fixed seed
(and, in tests/test_random_torch_stream.py, torch's very values), and reproducibility."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import aiograd

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.real_default_dtype

N = 20_000


def _np(t: aiograd.Tensor) -> np.ndarray:
    return np.asarray(t.data)


# ------------------------------------------------------------------------------ Generator
def test_generator_seeding_as_torch() -> None:
    g, tg = aiograd.Generator(), torch.Generator()
    assert g.initial_seed() == tg.initial_seed() == 67280421310721
    assert g.device == "cpu" and str(tg.device) == "cpu"
    assert g.manual_seed(-1) is g
    assert g.initial_seed() == tg.manual_seed(-1).initial_seed() == 2**64 - 1
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    aiograd.Generator("cpu")
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        tg.manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        g.manual_seed(2**64)
    with pytest.raises(RuntimeError, match="META device type not an accelerator"):
        aiograd.Generator(device="meta")


def test_generator_state_round_trip() -> None:
    g = aiograd.Generator().manual_seed(7)
    state = g.get_state()
    assert isinstance(state, aiograd.Tensor) and state.dtype == aiograd.uint8 and state.dim() == 1
    first = _np(aiograd.rand(5, generator=g))
    g.manual_seed(99)
    assert g.set_state(state) is g
    assert g.initial_seed() == 7
    np.testing.assert_array_equal(_np(aiograd.rand(5, generator=g)), first)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(aiograd.zeros(3))
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 3"):
        g.set_state(aiograd.zeros(3, dtype=aiograd.uint8))


def test_generator_stream_is_independent_of_the_default() -> None:
    g = aiograd.Generator().manual_seed(3)
    alone = _np(aiograd.randn(4, generator=g))
    aiograd.manual_seed(0)
    g.manual_seed(3)
    aiograd.rand(10)  # draws from the default stream between two of g's
    a = _np(aiograd.randn(2, generator=g))
    aiograd.randn(10)
    b = _np(aiograd.randn(2, generator=g))
    np.testing.assert_array_equal(np.concatenate([a, b]), alone)
    # and drawing from g leaves the default stream where it was
    aiograd.manual_seed(5)
    x = _np(aiograd.rand(3))
    aiograd.manual_seed(5)
    aiograd.rand(100, generator=g)
    np.testing.assert_array_equal(_np(aiograd.rand(3)), x)


def test_default_generator_seed_and_state() -> None:
    assert aiograd.manual_seed(11).initial_seed() == 11 == aiograd.initial_seed()
    state = aiograd.get_rng_state()
    assert state.dtype == aiograd.uint8
    x = _np(aiograd.randn(4))
    aiograd.randn(3)
    aiograd.set_rng_state(state)
    np.testing.assert_array_equal(_np(aiograd.randn(4)), x)
    assert aiograd.initial_seed() == 11
    s = aiograd.seed()
    assert aiograd.initial_seed() == s
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        aiograd.set_rng_state(aiograd.zeros(3))
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        torch.set_rng_state(torch.zeros(3))


_SCRIPT = (
    "import aiograd; aiograd.manual_seed(1234); g = aiograd.Generator().manual_seed(5);"
    "print(aiograd.rand(3).tolist(), aiograd.randint(0, 100, (4,), generator=g).tolist(),"
    " aiograd.randperm(6).tolist())"
)


def test_same_seed_same_values_across_processes() -> None:
    # (one other process, compared with this one: each start costs seconds)
    runs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60, check=True).stdout]
    aiograd.manual_seed(1234)
    g = aiograd.Generator().manual_seed(5)
    here = f"{aiograd.rand(3).tolist()} {aiograd.randint(0, 100, (4,), generator=g).tolist()} {aiograd.randperm(6).tolist()}"
    assert runs[0].strip() == here


# ------------------------------------------------------------------------------ factories
@pytest.mark.parametrize(
    "make",
    [
        lambda m, g: m.rand(2, 3, generator=g),
        lambda m, g: m.randn((2, 3), generator=g),
        lambda m, g: m.rand_like(m.zeros(2, 3, dtype=m.float64), generator=g),
        lambda m, g: m.randn_like(m.zeros(2, 3), generator=g),
        lambda m, g: m.randint(5, (2, 3), generator=g),
        lambda m, g: m.randint(-3, 5, [2, 3], generator=g, dtype=m.float32),
        lambda m, g: m.randint(high=5, size=(2, 3)),
        lambda m, g: m.randint_like(m.zeros(2, 3, dtype=m.int32), 5, generator=g),
        lambda m, g: m.randint_like(m.zeros(2, 3), 2, 9),
        lambda m, g: m.randperm(7, generator=g),
        lambda m, g: m.randperm(7, dtype=m.float32),
        lambda m, g: m.bernoulli(m.full((2, 3), 0.5, dtype=m.float64), generator=g),
        lambda m, g: m.bernoulli(m.zeros(2, 3), 0.3),
        lambda m, g: m.multinomial(m.ones(4), 2, generator=g),
        lambda m, g: m.multinomial(m.ones(2, 3), 5, True, generator=g),
        lambda m, g: m.normal(m.zeros(2, 1), m.ones(3), generator=g),
        lambda m, g: m.normal(m.zeros(2, 3, dtype=m.float64), 2.0),
        lambda m, g: m.normal(1.0, m.ones(3)),
        lambda m, g: m.normal(0.0, 1.0, (2, 3), generator=g),
        lambda m, g: m.normal(0.0, 1.0, (2,), dtype=m.float64),
    ],
)
def test_shapes_and_dtypes_as_torch(make) -> None:
    out = make(aiograd, aiograd.Generator().manual_seed(0))
    expected = make(torch, torch.Generator().manual_seed(0))
    assert tuple(out.shape) == tuple(expected.shape)
    assert str(out.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert out.grad_fn is None


def test_integer_samplers_stay_in_range() -> None:
    g = aiograd.Generator().manual_seed(1)
    x = _np(aiograd.randint(-3, 5, (N,), generator=g))
    assert x.min() == -3 and x.max() == 4
    assert abs(np.bincount(x + 3).min() / N - 1 / 8) < 0.01
    p = _np(aiograd.randperm(50, generator=g))
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    y = _np(aiograd.zeros(N).random_(2, 6, generator=g))
    assert set(np.unique(y).tolist()) == {2, 3, 4, 5}
    z = _np(aiograd.zeros(N, dtype=aiograd.int32).random_(generator=g))
    assert z.min() >= 0 and z.max() > 2**30
    f = _np(aiograd.zeros(N).random_(generator=g))
    assert f.min() >= 0 and f.max() <= 2**24 and f.max() > 2**23
    b = _np(aiograd.zeros(N, dtype=aiograd.bool).random_(generator=g))
    assert 0.45 < b.mean() < 0.55


def test_continuous_statistics() -> None:
    g = aiograd.Generator().manual_seed(2)
    u = _np(aiograd.empty(N).uniform_(2, 5, generator=g))
    assert u.min() >= 2 and u.max() < 5 and abs(u.mean() - 3.5) < 0.03 and abs(u.var() - 0.75) < 0.03
    n = _np(aiograd.empty(N, dtype=aiograd.float64).normal_(1.0, 2.0, generator=g))
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
    e = _np(aiograd.empty(N).exponential_(4.0, generator=g))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01
    r = _np(aiograd.rand(N, generator=g))
    assert r.min() >= 0 and r.max() < 1 and abs(r.mean() - 0.5) < 0.01
    s = _np(aiograd.normal(aiograd.full((N,), 3.0), aiograd.full((N,), 0.5), generator=g))
    assert abs(s.mean() - 3) < 0.02 and abs(s.std() - 0.5) < 0.02
    s = _np(aiograd.normal(-1.0, 0.0, (10,), generator=g))
    assert (s == -1).all()


def test_bernoulli_statistics() -> None:
    g = aiograd.Generator().manual_seed(3)
    probs = aiograd.tensor(np.tile([0.0, 0.2, 0.9, 1.0], (N // 4, 1)))
    out = _np(aiograd.bernoulli(probs, generator=g))
    assert set(np.unique(out).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(out.mean(axis=0), [0, 0.2, 0.9, 1], atol=0.02)
    assert out[:, 0].sum() == 0 and out[:, 3].all()
    t = _np(aiograd.zeros(N).bernoulli_(0.25, generator=g))
    assert abs(t.mean() - 0.25) < 0.02
    t = _np(aiograd.zeros(N // 2, 2).bernoulli_(aiograd.tensor([0.1, 0.8]), generator=g))
    np.testing.assert_allclose(t.mean(axis=0), [0.1, 0.8], atol=0.02)
    assert abs(_np(probs.bernoulli(0.5, generator=g)).mean() - 0.5) < 0.02


def test_multinomial_statistics() -> None:
    g = aiograd.Generator().manual_seed(4)
    w = aiograd.tensor([[1.0, 0.0, 3.0], [0.0, 2.0, 2.0]])
    out = _np(aiograd.multinomial(w, N, replacement=True, generator=g))
    assert out.shape == (2, N) and out.dtype == np.int64
    np.testing.assert_allclose(np.bincount(out[0], minlength=3) / N, [0.25, 0, 0.75], atol=0.02)
    np.testing.assert_allclose(np.bincount(out[1], minlength=3) / N, [0, 0.5, 0.5], atol=0.02)
    # without replacement: distinct indices, positive weights first, then the zero ones
    for _ in range(20):
        row = _np(w.multinomial(3, generator=g))
        assert sorted(row[0].tolist()) == [0, 1, 2] and row[0, 2] == 1 and row[1, 2] == 0
    firsts = [int(_np(aiograd.multinomial(aiograd.tensor([1.0, 3.0]), 1, generator=g))[0]) for _ in range(2000)]
    assert abs(np.mean(firsts) - 0.75) < 0.04


def test_same_generator_seed_same_values() -> None:
    def draw(g):
        return [_np(f(g)) for f in (
            lambda g: aiograd.rand(3, generator=g), lambda g: aiograd.randn(3, generator=g),
            lambda g: aiograd.randint(9, (3,), generator=g), lambda g: aiograd.randperm(5, generator=g),
            lambda g: aiograd.zeros(3).normal_(generator=g), lambda g: aiograd.zeros(3).exponential_(generator=g),
            lambda g: aiograd.multinomial(aiograd.ones(5), 3, generator=g),
        )]
    a, b = draw(aiograd.Generator().manual_seed(8)), draw(aiograd.Generator().manual_seed(8))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = draw(aiograd.Generator().manual_seed(9))
    assert not np.array_equal(a[0], c[0])


# ------------------------------------------------------------------------------ errors
_ERRORS = [
    (lambda m: m.randint(5, 2, (3,)), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda m: m.randint_like(m.zeros(2), 5, 2), RuntimeError, "random_ expects 'from' to be less than 'to'"),
    (lambda m: m.randint(0, 5, 3), TypeError, r"randint\(\) received an invalid combination of arguments"),
    (lambda m: m.randperm(-1), RuntimeError, r"Trying to create tensor with negative dimension -1: \[-1\]"),
    (lambda m: m.bernoulli(m.tensor([0.5, 1.5])), RuntimeError, r"Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda m: m.bernoulli(m.tensor([0.5, float("nan")])), RuntimeError, r"Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda m: m.bernoulli(m.tensor([0.5]), 1.3), RuntimeError, r"bernoulli_ expects p to be in \[0, 1\], but got p=1.3"),
    (lambda m: m.bernoulli(m.tensor([1, 0])), NotImplementedError, "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda m: m.zeros(3).bernoulli_(1.5), RuntimeError, r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"),
    (lambda m: m.zeros(2).bernoulli_(m.tensor([0.2, -1.0])), RuntimeError, r"Expected p_in >= 0"),
    (lambda m: m.multinomial(m.tensor([0.5, -0.2]), 1), RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda m: m.multinomial(m.tensor([0.5, float("inf")]), 1), RuntimeError, "probability tensor contains either `inf`"),
    (lambda m: m.multinomial(m.tensor([0.5, float("nan")]), 1), RuntimeError, "probability tensor contains either `inf`"),
    (lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1), RuntimeError, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    (lambda m: m.multinomial(m.tensor([0.5, 0.2]), 3), RuntimeError, r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
    (lambda m: m.multinomial(m.tensor([0.5, 0.2]), 0), RuntimeError, "cannot sample n_sample <= 0 samples"),
    (lambda m: m.multinomial(m.ones(2, 2, 2), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda m: m.multinomial(m.tensor(0.5), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda m: m.multinomial(m.tensor([1, 2]), 1), RuntimeError, "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda m: m.normal(0.0, -1.0, (2,)), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda m: m.normal(m.zeros(3), -0.5), RuntimeError, "normal expects std >= 0.0, but found std -0.5"),
    (lambda m: m.normal(m.zeros(3), m.tensor([1.0, -1.0, 1.0])), RuntimeError, r"normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(m.zeros(3), m.ones(2)), RuntimeError,
     r"The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton dimension 0"),
    (lambda m: m.normal(0.0, 1.0), TypeError, r"normal\(\) received an invalid combination of arguments"),
    (lambda m: m.zeros(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda m: m.zeros(3).uniform_(2, 1), RuntimeError, r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"),
    (lambda m: m.zeros(3, dtype=m.int64).uniform_(), NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.zeros(3).exponential_(-1), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=-1"),
    (lambda m: m.zeros(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda m: m.zeros(3).random_(5, 2), RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda m: m.zeros(3, requires_grad=True).uniform_(), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
]


@pytest.mark.parametrize("case", range(len(_ERRORS)))
def test_errors_as_torch(case: int) -> None:
    make, kind, message = _ERRORS[case]
    with pytest.raises(kind, match=message):
        make(torch)
    with pytest.raises(kind, match=message):
        make(aiograd)


def test_bad_generator_argument() -> None:
    with pytest.raises(TypeError):
        aiograd.rand(3, generator=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        torch.rand(3, generator=3)


# ------------------------------------------------------------------------------ gradients
def test_fill_of_a_graph_tensor_gets_a_zero_gradient() -> None:
    grads = []
    for m in (aiograd, torch):
        x = m.ones(3, requires_grad=True)
        y = x * 2
        y.uniform_()
        loss = (y * 3 + x).sum()
        aiograd.sync.backward(loss) if m is aiograd else loss.backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [1.0, 1.0, 1.0]


def test_samples_carry_no_gradient() -> None:
    mean = aiograd.zeros(3, requires_grad=True)
    assert not aiograd.normal(mean, 1.0).requires_grad
    assert not aiograd.bernoulli(aiograd.full((3,), 0.5, requires_grad=True)).requires_grad
    assert aiograd.rand(3, requires_grad=True).requires_grad
