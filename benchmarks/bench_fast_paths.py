"""What each backward rule's array fast path earns.

A rule's derivative is written once with aiograd's ops (differentiable, batch-aware, device
generic). A few rules also compute it directly on arrays when grad mode is off, the common
first-order backward; such a copy stays only where this benchmark shows it earns its keep.

For each rule, a forward at a size typical of the models in ``bench_models.py`` records one node;
the first-order backward of that graph (``await y.backward(g)`` into fresh ``.grad``s, so what a
rule's output costs downstream, a copy where a leaf cannot keep it, counts too) is then timed with
the fast paths on and with them off (``aiograd._ops._util.array_fast_paths(False)``: the rule's
formula on tensors, recording nothing). Runs alternate between the two, and the figure is the median of the
paired ratios, slow/fast: 1.50 means the fast path saves a third of the rule's time.
``tests/test_fast_paths.py`` checks that the two agree.

    python benchmarks/bench_fast_paths.py [--repeats 7] [--min-time 0.02] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402
from aiograd._ops._util import array_fast_paths  # noqa: E402

rng = np.random.default_rng(0)
# the leaves the case being built created: a graph holds its leaves weakly (as PyTorch's
# AccumulateGrad does), so they are kept here while their backward is timed
leaves: list[aiograd.Tensor] = []


def t(*shape: int, grad: bool = True, positive: bool = False) -> aiograd.Tensor:
    data = rng.standard_normal(shape).astype(np.float32)
    if positive:
        data = 1.0 + 0.01 * data
    out = aiograd.tensor(data, requires_grad=grad)
    if grad:
        leaves.append(out)
    return out


def _index_put() -> aiograd.Tensor:
    z = t(256, 512).clone()
    z[aiograd.tensor(np.arange(0, 256, 3))] = t(86, 512)
    return z


def _copy_slices() -> aiograd.Tensor:
    z = t(256, 512).clone()
    z[:, 100:300].mul_(2.0)
    return z


def _prod_with_zeros() -> aiograd.Tensor:
    x = t(256, 64)
    with aiograd.no_grad():
        x[::7, 3] = 0.0
    return x.prod(1)


# name -> the forward that records the node whose rule is timed (its output's grad_fn)
CASES: dict[str, Callable[[], aiograd.Tensor]] = {
    "add (broadcast bias)": lambda: t(256, 512) + t(512),
    "mul (broadcast)": lambda: t(256, 512) * t(512),
    "exp": lambda: t(256, 512).exp(),
    "tanh": lambda: t(256, 512).tanh(),
    "sigmoid": lambda: t(256, 512).sigmoid(),
    "relu": lambda: t(256, 512).relu(),
    "sum(dim)": lambda: t(256, 512).sum(1),
    "mean(dim)": lambda: t(256, 512).mean(1),
    "prod(dim), zeros": _prod_with_zeros,
    "vector_norm p=2": lambda: aiograd.linalg.vector_norm(t(256, 512), dim=1),
    "log_softmax": lambda: F.log_softmax(t(256, 1000), dim=1),
    "nll_loss": lambda: F.nll_loss(F.log_softmax(t(256, 1000), 1), aiograd.tensor(rng.integers(0, 1000, 256))),
    "gelu": lambda: F.gelu(t(64, 3072)),
    "det (64 of 8x8)": lambda: aiograd.linalg.det(t(64, 8, 8)),
    "slogdet (64 of 8x8)": lambda: aiograd.linalg.slogdet(t(64, 8, 8))[1],
    "cumprod": lambda: t(256, 512, positive=True).cumprod(1),  # (values near 1: no overflow)
    "mm": lambda: t(256, 512) @ t(512, 256),
    "linear (addmm)": lambda: F.linear(t(256, 512), t(256, 512), t(256)),
    "conv2d": lambda: F.conv2d(t(16, 16, 32, 32), t(32, 16, 3, 3), t(32), padding=1),
    "max_pool2d": lambda: F.max_pool2d(t(16, 32, 32, 32), 2),
    "avg_pool2d": lambda: F.avg_pool2d(t(16, 32, 32, 32), 2),
    "adaptive_avg_pool2d": lambda: F.adaptive_avg_pool2d(t(16, 64, 8, 8), 1),
    "layer_norm": lambda: F.layer_norm(t(32, 64, 256), (256,), t(256), t(256)),
    "batch_norm (training)": lambda: F.batch_norm(t(16, 32, 32, 32), None, None, t(32), t(32), training=True),
    "index_put": _index_put,
    "copy_slices (in-place on a view)": _copy_slices,
    # tiny tensors, where a rule's per-op overhead is what costs (bench_chain's, a small MLP's)
    "tiny add": lambda: t(16) + t(16),
    "tiny mul": lambda: t(16) * t(16),
    "tiny exp": lambda: t(16).exp(),
    "tiny tanh": lambda: t(16).tanh(),
    "tiny sigmoid": lambda: t(16).sigmoid(),
    "tiny relu": lambda: t(16).relu(),
    "tiny sum": lambda: t(4, 16).sum(1),
    "tiny mean": lambda: t(4, 16).mean(1),
    "tiny vector_norm": lambda: aiograd.linalg.vector_norm(t(4, 16), dim=1),
    "tiny log_softmax": lambda: F.log_softmax(t(4, 16), dim=1),
    "tiny nll_loss": lambda: F.nll_loss(F.log_softmax(t(4, 16), 1), aiograd.tensor(rng.integers(0, 16, 4))),
    "tiny gelu": lambda: F.gelu(t(4, 16)),
    "tiny layer_norm": lambda: F.layer_norm(t(4, 16), (16,)),
    "tiny mm": lambda: t(4, 16) @ t(16, 8),
    "tiny linear (addmm)": lambda: F.linear(t(4, 16), t(8, 16), t(8)),
}


async def time_backward(y: aiograd.Tensor, g: aiograd.Tensor, min_time: float) -> float:
    """Seconds per ``await y.backward(g)`` into fresh ``.grad``s of the case's leaves, looped for
    at least ``min_time``."""
    n = 1
    while True:
        with Timer() as timer:
            for _ in range(n):
                for leaf in leaves:
                    leaf.grad = None
                await y.backward(g, retain_graph=True)
        if timer.seconds >= min_time:
            return timer.seconds / n
        n *= 2


async def measure(make: Callable[[], aiograd.Tensor], repeats: int, min_time: float) -> tuple[float, float, float]:
    """(fast seconds, slow seconds, median of the paired slow/fast ratios) of one rule."""
    leaves.clear()
    y = make()
    g = aiograd.tensor(rng.standard_normal(y.shape).astype(np.float32))
    fast, slow = [], []
    for _ in range(repeats):
        fast.append(await time_backward(y, g, min_time))
        with array_fast_paths(False):
            slow.append(await time_backward(y, g, min_time))
    ratios = [s / f for s, f in zip(slow, fast)]
    return statistics.median(fast), statistics.median(slow), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.02, help="seconds each timed loop runs at least")
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"{'rule':34s} {'fast':>10s} {'formula':>10s} {'formula/fast':>13s}")

    async def run_cases() -> None:
        for name, make in CASES.items():
            if args.only and args.only not in name:
                continue
            fast, slow, ratio = await measure(make, args.repeats, args.min_time)
            print(f"{name:34s} {fast * 1e6:8.1f}us {slow * 1e6:8.1f}us {ratio:12.2f}x", flush=True)

    aiograd.run(run_cases())
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
