import numpy as np, asyncio, torch
import aiograd as ag
import aiograd.functional as AF
import torch.autograd.functional as TF
rng = np.random.default_rng(0)
xn = rng.standard_normal(4); yn = rng.standard_normal(4)
def f(lib):
    def fn(x, y): return (x.tanh() * y, (x * y).sum())
    return fn
def s(lib):
    def fn(x, y): return (x.exp() * y * y).sum()
    return fn
def cmp(a, t):
    if isinstance(t, tuple):
        assert isinstance(a, tuple) and len(a) == len(t), (type(a), type(t))
        for u, w in zip(a, t): cmp(u, w)
    else:
        assert isinstance(a, ag.Tensor), type(a)
        np.testing.assert_allclose(a.data, t.detach().numpy(), rtol=1e-12, atol=1e-14)
async def main():
    X, Y = ag.tensor(xn), ag.tensor(yn)
    TX, TY = torch.tensor(xn), torch.tensor(yn)
    for vec in (False, True):
        cmp(await AF.jacobian(f(ag), (X, Y), vectorize=vec), TF.jacobian(f(torch), (TX, TY), vectorize=vec))
        cmp(await AF.jacobian(lambda x: x.tanh(), X, vectorize=vec), TF.jacobian(lambda x: x.tanh(), TX, vectorize=vec))
        cmp(await AF.hessian(s(ag), (X, Y), vectorize=vec), TF.hessian(s(torch), (TX, TY), vectorize=vec))
        cmp(await AF.hessian(lambda x: (x**3).sum(), X, vectorize=vec), TF.hessian(lambda x: (x**3).sum(), TX, vectorize=vec))
    V = ag.tensor(yn); TV = torch.tensor(yn)
    cmp(await AF.vjp(lambda x: x.tanh(), X, V), TF.vjp(lambda x: x.tanh(), TX, TV))
    cmp(await AF.jvp(lambda x: x.tanh(), X, V), TF.jvp(lambda x: x.tanh(), TX, TV))
    cmp(await AF.hvp(lambda x: (x**3).sum(), X, V), TF.hvp(lambda x: (x**3).sum(), TX, TV))
    cmp(await AF.vhp(lambda x: (x**3).sum(), X, V), TF.vhp(lambda x: (x**3).sum(), TX, TV))
    print("ok")
asyncio.run(main())
