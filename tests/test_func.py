"""aiograd.func against torch.func in float64: grad/grad_and_value (argnums, has_aux), vjp, jvp,
jacrev/jacfwd, hessian, vmap (in_dims/out_dims, nesting, randomness), per-sample gradients
through functional_call, functional_call's swapping and errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.func as AF

pytestmark = [requires_torch, pytest.mark.aiograd(backends=["asyncio", "trio"])]
if torch is not None:
    import torch.func as TF

RNG = np.random.default_rng(3)
X, Y = RNG.standard_normal(4), RNG.standard_normal(4)
XB = RNG.standard_normal((3, 4))


def both(a: np.ndarray) -> tuple[ag.Tensor, torch.Tensor]:
    return ag.tensor(a), torch.tensor(a)


def close(mine, theirs, rtol=1e-10):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(mine, type(theirs)) and len(mine) == len(theirs)
        for m, t in zip(mine, theirs):
            close(m, t, rtol)
    elif isinstance(theirs, dict):
        assert isinstance(mine, dict) and set(mine) == set(theirs)
        for k in theirs:
            close(mine[k], theirs[k], rtol)
    else:
        assert isinstance(mine, ag.Tensor), type(mine)
        assert tuple(mine.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


def f2(x, y):
    return (x.sin() * y + x * x * y.exp()).sum()


def vec(x, y):
    return x.sin() * y + x * x.exp().sum()


async def test_grad_argnums_int_and_tuple():
    (xa, xt), (ya, yt) = both(X), both(Y)
    close(await AF.grad(f2)(xa, ya), TF.grad(f2)(xt, yt))
    close(await AF.grad(f2, argnums=1)(xa, ya), TF.grad(f2, argnums=1)(xt, yt))
    close(await AF.grad(f2, argnums=(0, 1))(xa, ya), TF.grad(f2, argnums=(0, 1))(xt, yt))
    close(await AF.grad(f2, argnums=-1)(xa, ya), TF.grad(f2, argnums=-1)(xt, yt))
    assert not (await AF.grad(f2)(xa, ya)).requires_grad


async def test_grad_and_value_has_aux_and_pytree_args():
    def f(p, x):
        out = (p["w"] * x).sum() + p["b"].sum() ** 2
        return out, {"x2": x * 2}

    p_np = {"w": Y, "b": X[:2]}
    pa = {k: ag.tensor(v) for k, v in p_np.items()}
    pt = {k: torch.tensor(v) for k, v in p_np.items()}
    (xa, xt) = both(X)
    (g, (v, aux)) = await AF.grad_and_value(f, has_aux=True)(pa, xa)
    (gt, (vt, auxt)) = TF.grad_and_value(f, has_aux=True)(pt, xt)
    close(g, gt)
    close(v, vt)
    close(aux, auxt)
    g2, aux2 = await AF.grad(f, has_aux=True)(pa, xa)
    close(g2, gt)
    close(aux2, auxt)


async def test_grad_of_grad_and_unused_input():
    (xa, xt) = both(X)

    def f(x):
        return (x ** 3).sin().sum()

    close(await AF.grad(_sum_async(AF.grad(f)))(xa), TF.grad(lambda x: TF.grad(f)(x).sum())(xt))
    # an input the output does not use: zeros, as torch
    close(await AF.grad(lambda x, y: (x * 2).sum(), argnums=1)(xa, xa), torch.zeros(4, dtype=torch.float64))


def _sum_async(g):
    async def h(x):
        return (await g(x)).sum()
    return h


async def test_vjp_and_jvp():
    (xa, xt), (ya, yt) = both(X), both(Y)
    out, fn = await AF.vjp(vec, xa, ya)
    outt, fnt = TF.vjp(vec, xt, yt)
    close(out, outt)
    v = RNG.standard_normal(4)
    close(await fn(ag.tensor(v)), fnt(torch.tensor(v)))
    close(await fn(ag.tensor(2 * v)), fnt(torch.tensor(2 * v)))  # vjp_fn can be called again
    out, jv = await AF.jvp(vec, (xa, ya), (ag.tensor(v), ag.tensor(-v)))
    outt, jvt = TF.jvp(vec, (xt, yt), (torch.tensor(v), torch.tensor(-v)))
    close(out, outt)
    close(jv, jvt)
    out, fn, aux = await AF.vjp(lambda x: (x.exp(), x.cos()), xa, has_aux=True)
    outt, fnt, auxt = TF.vjp(lambda x: (x.exp(), x.cos()), xt, has_aux=True)
    close(aux, auxt)
    close(await fn(ag.tensor(v)), fnt(torch.tensor(v)))


async def test_jacrev_jacfwd_hessian():
    (xa, xt), (ya, yt) = both(X), both(Y)
    close(await AF.jacrev(vec)(xa, ya), TF.jacrev(vec)(xt, yt))
    close(await AF.jacrev(vec, argnums=(0, 1))(xa, ya), TF.jacrev(vec, argnums=(0, 1))(xt, yt))
    close(await AF.jacfwd(vec, argnums=1)(xa, ya), TF.jacfwd(vec, argnums=1)(xt, yt))
    two = lambda x: {"a": x.sin(), "b": (x * x).sum()}  # noqa: E731
    close(await AF.jacrev(two)(xa), TF.jacrev(two)(xt))
    close(await AF.hessian(f2)(xa, ya), TF.hessian(f2)(xt, yt))
    close(await AF.hessian(f2, argnums=(0, 1))(xa, ya), TF.hessian(f2, argnums=(0, 1))(xt, yt))


def test_vmap_in_dims_out_dims():
    (xa, xt) = both(XB)
    (ya, yt) = both(Y)
    f = lambda x, y: x.sin() * y  # noqa: E731
    close(AF.vmap(f, in_dims=(0, None))(xa, ya), torch.vmap(f, in_dims=(0, None))(xt, yt))
    close(AF.vmap(f, in_dims=(1, None), out_dims=1)(xa.T, ya), torch.vmap(f, in_dims=(1, None), out_dims=1)(xt.T, yt))
    g = lambda d: (d["a"] * 2, [d["a"].sum()])  # noqa: E731
    close(AF.vmap(g, in_dims=({"a": -1},), out_dims=(1, 0))({"a": xa}), torch.vmap(g, in_dims=({"a": -1},), out_dims=(1, 0))({"a": xt}))
    # nested vmap: an outer product
    outer = lambda a, b: a * b  # noqa: E731
    close(AF.vmap(AF.vmap(outer, in_dims=(None, 0)), in_dims=(0, None))(ya, ya),
          torch.vmap(torch.vmap(outer, in_dims=(None, 0)), in_dims=(0, None))(yt, yt))


async def test_vmap_of_jacrev_and_gradients_flow_through():
    (xa, xt) = both(XB)
    close(await AF.vmap(AF.jacrev(lambda x: x.sin() * x.sum()))(xa), torch.vmap(TF.jacrev(lambda x: x.sin() * x.sum()))(xt))
    xr = ag.tensor(XB, requires_grad=True)
    await AF.vmap(lambda r: (r * r).sum())(xr).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), 2 * XB)


async def test_per_sample_gradients_through_functional_call():
    ag.manual_seed(0)
    model = ag.nn.Sequential(ag.nn.Linear(4, 5), ag.nn.Tanh(), ag.nn.Linear(5, 2)).double()
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    with torch.no_grad():
        for (_n, p), (_, q) in zip(model.named_parameters(), tmodel.named_parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    data, targets = RNG.standard_normal((6, 4)), RNG.standard_normal((6, 2))

    def make_loss(fc, mod):
        def loss(params, x, t):
            out = fc(mod, params, (x.unsqueeze(0),))
            return ((out - t.unsqueeze(0)) ** 2).mean()
        return loss

    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    mine = await AF.vmap(AF.grad(make_loss(AF.functional_call, model)), in_dims=(None, 0, 0))(params, ag.tensor(data), ag.tensor(targets))
    theirs = torch.vmap(TF.grad(make_loss(TF.functional_call, tmodel)), in_dims=(None, 0, 0))(tparams, torch.tensor(data), torch.tensor(targets))
    close(mine, theirs)
    assert mine["0.weight"].shape == (6, 5, 4)
    for k, v in model.named_parameters():  # the module's own parameters are back
        assert v is not params[k] and isinstance(v, ag.nn.Parameter)


def test_functional_call_parameters_and_buffers():
    bn = ag.nn.BatchNorm1d(3).double()
    tbn = torch.nn.BatchNorm1d(3).double()
    x = RNG.standard_normal((5, 3))
    w = RNG.standard_normal(3)
    orig_weight, orig_mean = bn.weight, bn.running_mean
    mean_a, mean_t = ag.zeros(3, dtype=ag.float64), torch.zeros(3, dtype=torch.float64)
    out = AF.functional_call(bn, ({"weight": ag.tensor(w)}, {"running_mean": mean_a}), (ag.tensor(x),))
    outt = TF.functional_call(tbn, ({"weight": torch.tensor(w)}, {"running_mean": mean_t}), (torch.tensor(x),))
    close(out, outt)
    close(mean_a, mean_t)  # the given buffer got the running-stat update
    assert bn.weight is orig_weight and bn.running_mean is orig_mean
    np.testing.assert_array_equal(orig_mean.numpy(), np.zeros(3))
    close(bn.running_var, tbn.running_var)  # not given: the module's own buffer updated


def test_functional_call_errors_and_restores():
    lin = ag.nn.Linear(2, 2)
    w = lin.weight
    with pytest.raises(RuntimeError) as e:
        AF.functional_call(lin, {"weight": ag.zeros(2, 2), "extra": ag.zeros(1)}, (ag.zeros(1, 2),), strict=True)
    tlin = torch.nn.Linear(2, 2)
    with pytest.raises(RuntimeError) as et:
        TF.functional_call(tlin, {"weight": torch.zeros(2, 2), "extra": torch.zeros(1)}, (torch.zeros(1, 2),), strict=True)
    assert str(e.value) == str(et.value)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        AF.functional_call(lin, ({"weight": ag.zeros(2, 2)}, {"weight": ag.zeros(2, 2)}), (ag.zeros(1, 2),))
    with pytest.raises(RuntimeError):  # wrong shape inside forward: the weight still comes back
        AF.functional_call(lin, {"weight": ag.zeros(3, 3)}, (ag.zeros(1, 2),))
    assert lin.weight is w and "extra" not in lin.__dict__


def test_functional_call_tied_weights():
    lin = ag.nn.Linear(2, 2, bias=False).double()
    seq = ag.nn.Sequential(lin, lin)
    out = AF.functional_call(seq, {"0.weight": ag.eye(2, dtype=ag.float64) * 2}, (ag.ones(1, 2, dtype=ag.float64),))
    np.testing.assert_allclose(out.numpy(), [[4.0, 4.0]])
    with pytest.raises(ValueError, match="which are tied"):
        AF.functional_call(seq, {"0.weight": ag.eye(2), "1.weight": ag.eye(2) * 2}, (ag.ones(1, 2),))


def test_vmap_errors():
    a, b = ag.zeros(2, 3), ag.zeros(3, 3)
    with pytest.raises(ValueError) as e:
        AF.vmap(lambda x, y: x + y)(a, b)
    assert str(e.value) == "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [2, 3] for the mapped dimension"
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        AF.vmap(lambda x, n: x * n)(a, 2)
    with pytest.raises(ValueError, match="at least one Tensor to vmap over"):
        AF.vmap(lambda x: x, in_dims=(None,))(a)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        AF.vmap(lambda x: x, randomness="bad")
    with pytest.raises(RuntimeError, match="randomness error mode"):
        AF.vmap(lambda x: x + ag.randn(3))(a)
    same = AF.vmap(lambda x: x + ag.randn(3), randomness="same")(a)
    np.testing.assert_array_equal(same[0].numpy(), same[1].numpy())
    diff = AF.vmap(lambda x: x + ag.randn(3), randomness="different")(a)
    assert not np.array_equal(diff[0].numpy(), diff[1].numpy())


async def test_transform_errors():
    xa = ag.tensor(X)
    with pytest.raises(RuntimeError, match="to return a scalar Tensor, got tensor with 1 dims"):
        await AF.grad(lambda x: x * 2)(xa)
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        AF.grad(f2, argnums=(0, 0))
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        await AF.grad(f2, argnums=2)(xa, xa)
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        await AF.grad(lambda x: x.sum(), has_aux=True)(xa)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        await AF.jvp(vec, xa, xa)
    _, fn = await AF.vjp(lambda x: (x, x), xa)
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        await fn(xa)
