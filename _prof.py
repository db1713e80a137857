import numpy as np, aiograd, cProfile, pstats, time
from aiograd.functional import jacobian
r = np.random.default_rng(0)
w1, b1, w2, b2 = (aiograd.tensor(a) for a in (r.standard_normal((256,256))/16, r.standard_normal(256), r.standard_normal((256,256))/16, r.standard_normal(256)))
x = aiograd.tensor(r.standard_normal(256))
f = lambda x: w2 @ (w1 @ x + b1).tanh() + b2
async def main():
    for _ in range(3): await jacobian(f, x, vectorize=True)
    t = time.perf_counter()
    for _ in range(20): await jacobian(f, x, vectorize=True)
    print((time.perf_counter()-t)/20*1e3, "ms")
    pr = cProfile.Profile(); pr.enable()
    for _ in range(20): await jacobian(f, x, vectorize=True)
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)
aiograd.run(main())
