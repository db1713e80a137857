"""``Gamma``, ``Beta``, ``Dirichlet`` and ``Normal.icdf`` (aiograd/distributions/gamma.py,
dirichlet.py, normal.py) against ``torch.distributions``: log_prob, entropy, mean, variance,
mode, the KL pairs and gradients through them; sampling (not torch's stream: the moments and
reproducibility under ``manual_seed``)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.distributions as D

pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), requires_torch]

A = [0.3, 1.0, 2.5, 7.0]
B = [1.5, 0.2, 3.0, 0.9]
V = [0.2, 1.0, 3.5, 0.01]
U = [0.1, 0.5, 0.93, 0.002]


def _t(x: list[float]) -> torch.Tensor:
    return torch.tensor(x, dtype=torch.float64)


def _pair(name: str, *params: list[float]) -> tuple[object, object]:
    return getattr(D, name)(*(ag.tensor(p) for p in params)), getattr(torch.distributions, name)(*(_t(p) for p in params))


def _close(ours: ag.Tensor, theirs: torch.Tensor) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(("name", "params", "value"), [("Gamma", (A, B), V), ("Beta", (A, B), U)], ids=["Gamma", "Beta"])
def test_values_match_torch(name: str, params: tuple[list[float], ...], value: list[float]) -> None:
    ours, theirs = _pair(name, *params)
    _close(ours.log_prob(ag.tensor(value)), theirs.log_prob(_t(value)))
    _close(ours.entropy(), theirs.entropy())
    for attr in ("mean", "variance"):
        _close(getattr(ours, attr), getattr(theirs, attr))
    assert ours.batch_shape == tuple(theirs.batch_shape) and ours.has_rsample == (name == "Gamma")


def test_gamma_mode_and_expand() -> None:
    ours, theirs = _pair("Gamma", A, B)
    _close(ours.mode, theirs.mode)
    assert ours.expand((3, 4)).batch_shape == (3, 4)


def test_dirichlet_matches_torch() -> None:
    c = [[0.5, 2.0, 3.0], [1.0, 1.0, 7.0]]
    v = [[0.2, 0.3, 0.5], [0.05, 0.15, 0.8]]
    ours, theirs = _pair("Dirichlet", c)
    _close(ours.log_prob(ag.tensor(v)), theirs.log_prob(_t(v)))
    _close(ours.entropy(), theirs.entropy())
    _close(ours.mean, theirs.mean)
    _close(ours.variance, theirs.variance)
    assert ours.event_shape == (3,) and ours.batch_shape == (2,)
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Dirichlet(ag.tensor(1.0))


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet"])
def test_kl_matches_torch(name: str) -> None:
    if name == "Dirichlet":
        p, tp = _pair(name, [[0.5, 2.0, 3.0]])
        q, tq = _pair(name, [[1.5, 0.7, 2.0]])
    else:
        p, tp = _pair(name, A, B)
        q, tq = _pair(name, B, A)
    _close(D.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq))


async def test_gradients_reach_the_parameters() -> None:
    a = ag.tensor(A, requires_grad=True)
    b = ag.tensor(B, requires_grad=True)
    loss = D.Gamma(a, b).log_prob(ag.tensor(V)).sum() + D.Beta(a, b).entropy().sum()
    await loss.backward()
    ta, tb = _t(A).requires_grad_(), _t(B).requires_grad_()
    tloss = torch.distributions.Gamma(ta, tb).log_prob(_t(V)).sum() + torch.distributions.Beta(ta, tb).entropy().sum()
    tloss.backward()
    _close(a.grad, ta.grad)
    _close(b.grad, tb.grad)


def test_normal_icdf_matches_torch() -> None:
    ours = D.Normal(ag.tensor([0.5, -1.0, 0.0, 2.0]), ag.tensor([2.0, 0.5, 1.0, 3.0])).icdf(ag.tensor(U))
    theirs = torch.distributions.Normal(_t([0.5, -1.0, 0.0, 2.0]), _t([2.0, 0.5, 1.0, 3.0])).icdf(_t(U))
    _close(ours, theirs)
    np.testing.assert_allclose(D.Normal(0.0, 1.0).cdf(D.Normal(0.0, 1.0).icdf(ag.tensor(U))).numpy(), U, rtol=1e-13)


@pytest.mark.parametrize("alpha", [0.1, 0.7, 1.0, 4.0, 50.0])
def test_gamma_samples_have_the_right_moments_and_are_reproducible(alpha: float) -> None:
    dist = D.Gamma(ag.tensor([alpha]), ag.tensor([2.0]))
    ag.manual_seed(3)
    s = dist.sample((40000,)).numpy()
    ag.manual_seed(3)
    np.testing.assert_array_equal(dist.sample((40000,)).numpy(), s)
    assert s.shape == (40000, 1) and (s > 0).all()
    mean, var = alpha / 2.0, alpha / 4.0
    assert abs(s.mean() - mean) < 5 * np.sqrt(var / len(s))
    assert abs(s.var() / var - 1) < 0.1


async def test_gamma_rsample_gradients_are_torchs_standard_gamma_grad() -> None:
    c = ag.tensor([0.05, 0.5, 3.0, 12.0, 40.0], requires_grad=True)
    r = ag.tensor([2.0, 1.0, 0.5, 3.0, 1.0], requires_grad=True)
    ag.manual_seed(1)
    v = D.Gamma(c, r).rsample((50,))
    await v.sum().backward()
    x = v.detach().numpy() * r.detach().numpy()  # the standard gamma draws
    dx = torch._standard_gamma_grad(torch.tensor([[0.05, 0.5, 3.0, 12.0, 40.0]] * 50, dtype=torch.float64), torch.tensor(x))
    np.testing.assert_allclose(c.grad.numpy(), (dx.numpy() / r.detach().numpy()).sum(0), rtol=1e-10)
    np.testing.assert_allclose(r.grad.numpy(), (-v.detach().numpy() / r.detach().numpy()).sum(0), rtol=1e-10)
    with pytest.raises(NotImplementedError):
        D.Beta(ag.tensor([2.0]), ag.tensor([3.0])).rsample()


def test_beta_and_dirichlet_samples() -> None:
    ag.manual_seed(0)
    s = D.Beta(ag.tensor([2.0, 0.5]), ag.tensor([3.0, 0.5])).sample((40000,)).numpy()
    np.testing.assert_allclose(s.mean(0), [0.4, 0.5], atol=0.01)
    d = D.Dirichlet(ag.tensor([1.0, 2.0, 3.0])).sample((1000,)).numpy()
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(d.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.03)
