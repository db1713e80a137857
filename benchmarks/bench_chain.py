"""Engine overhead: backward time per node of a long chain of tiny ops.

    y = x
    for _ in range(STEPS):          # 3 recorded ops per step: tanh, mul, add
        y = tanh(y) * 0.9 + 0.01
    backward(y, gradient=ones)      # STEPS * 3 op nodes + 1 leaf node

x is a (16,) float64 tensor, so the math is negligible and the time measures what each library
pays per node to schedule, run and hand on one vector-Jacobian product.

What is timed, identically for every library: the backward pass alone, on a graph recorded just
before (untimed; its time is printed for information). For aiograd that is ``await
y.backward(g)`` (driven on the loop ``aiograd.run`` picks: uvloop when installed), for torch
``y.backward(g)``, and for HIPS autograd the ``vjp(g)`` returned by ``autograd.make_vjp``, which
records the trace during the forward pass and runs only the backward pass when called. The
seed gradient is passed explicitly, so no library pays for a reduction node. Each repeat records
a fresh graph; the garbage collector runs before each timed region and is disabled inside it (as
``timeit`` does). The per-node figure divides by the same node count for every library:
3 * STEPS + 1, the leaf's node included (aiograd's AccumulateGrad, torch's AccumulateGrad, HIPS's
root VJPNode); each library's graph is walked once to check that count, and the three gradients
are compared.

    python benchmarks/bench_chain.py [--steps 2000] [--repeats 15] [--warmup 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402

WIDTH = 16


def chain(y: Any, tanh: Callable[[Any], Any], steps: int) -> Any:
    for _ in range(steps):
        y = tanh(y) * 0.9 + 0.01
    return y


class Result:
    def __init__(self, name: str, forward: list[float], backward: list[float], grad: np.ndarray) -> None:
        self.name = name
        self.forward = statistics.median(forward)
        self.backward = statistics.median(backward)
        self.grad = grad


# ------------------------------------------------------------------------------------- aiograd
def count_aiograd_nodes(y: aiograd.Tensor) -> int:
    seen = {y.grad_fn}
    stack = [y.grad_fn]
    while stack:
        for fn, _ in stack.pop().next_functions:
            if fn is not None and fn not in seen:
                seen.add(fn)
                stack.append(fn)
    return len(seen)


def bench_aiograd(x0: np.ndarray, g0: np.ndarray, args: argparse.Namespace) -> Result:
    async def main() -> Result:
        engine = aiograd.get_engine()
        g = aiograd.tensor(g0)
        forward, backward = [], []
        grad = None
        for i in range(args.warmup + args.repeats):
            x = aiograd.tensor(x0, requires_grad=True)
            with Timer() as tf:
                y = chain(x, aiograd.tanh, args.steps)
            if i == 0:
                assert count_aiograd_nodes(y) == args.nodes, count_aiograd_nodes(y)
            executed = engine.nodes_executed
            with Timer() as tb:
                await y.backward(g)
            assert engine.nodes_executed - executed == args.nodes
            del y
            if i >= args.warmup:
                forward.append(tf.seconds)
                backward.append(tb.seconds)
            grad = x.grad.data
        return Result("aiograd " + aiograd.__version__, forward, backward, grad)

    return aiograd.run(main())


# ------------------------------------------------------------------------------------- torch
def bench_torch(x0: np.ndarray, g0: np.ndarray, args: argparse.Namespace) -> Result | None:
    try:
        import torch
    except ImportError:
        return None
    gc.freeze()  # keep torch's many module objects out of the collections we time around

    def count(y: Any) -> int:
        seen = {y.grad_fn}
        stack = [y.grad_fn]
        while stack:
            for fn, _ in stack.pop().next_functions:
                if fn is not None and fn not in seen:
                    seen.add(fn)
                    stack.append(fn)
        return len(seen)

    g = torch.tensor(g0)
    forward, backward = [], []
    grad = None
    for i in range(args.warmup + args.repeats):
        x = torch.tensor(x0, requires_grad=True)
        with Timer() as tf:
            y = chain(x, torch.tanh, args.steps)
        if i == 0:
            assert count(y) == args.nodes, count(y)
        with Timer() as tb:
            y.backward(g)
        del y
        if i >= args.warmup:
            forward.append(tf.seconds)
            backward.append(tb.seconds)
        grad = x.grad.numpy()
    return Result(f"torch {torch.__version__.split('+')[0]}", forward, backward, grad)


# ------------------------------------------------------------------------------------- HIPS
def bench_hips(x0: np.ndarray, g0: np.ndarray, args: argparse.Namespace) -> Result | None:
    try:
        import autograd
        import autograd.numpy as anp
        from autograd.core import VJPNode, toposort
        from autograd.tracer import trace
    except ImportError:
        return None
    from importlib.metadata import version

    gc.freeze()

    def f(x: Any) -> Any:
        return chain(x, anp.tanh, args.steps)

    start = VJPNode.new_root()
    _, end = trace(start, f, x0)
    n = sum(1 for _ in toposort(end))
    assert n == args.nodes, n
    del start, end

    forward, backward = [], []
    grad = None
    for i in range(args.warmup + args.repeats):
        with Timer() as tf:
            vjp, _ = autograd.make_vjp(f)(x0)
        with Timer() as tb:
            grad = vjp(g0)
        del vjp
        if i >= args.warmup:
            forward.append(tf.seconds)
            backward.append(tb.seconds)
    return Result(f"autograd (HIPS) {version('autograd')}", forward, backward, grad)


# ------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    args.nodes = 3 * args.steps + 1
    gc.freeze()

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(WIDTH)
    g0 = rng.standard_normal(WIDTH)

    results = [bench_aiograd(x0, g0, args)]
    for bench in (bench_torch, bench_hips):
        r = bench(x0, g0, args)
        if r is not None:
            results.append(r)
    base = results[0]
    for r in results[1:]:
        np.testing.assert_allclose(r.grad, base.grad, rtol=1e-10, atol=1e-12, err_msg=r.name)

    loop = "uvloop" if _has_uvloop() else "asyncio"
    print(
        f"chain: {args.steps} steps of y = tanh(y) * 0.9 + 0.01 on a ({WIDTH},) float64 tensor; "
        f"{args.nodes} backward nodes (3 per step + the leaf's)"
    )
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, aiograd on {loop}; "
        f"median of {args.repeats} repeats after {args.warmup} warmup; gradients agree"
    )
    print("ratio = library's backward us/node / aiograd's (above 1: aiograd is faster)")
    print()
    header = f"{'library':<24}{'forward ms':>12}{'backward ms':>13}{'us/node':>10}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    per_node_base = base.backward / args.nodes
    for r in results:
        per_node = r.backward / args.nodes
        print(
            f"{r.name:<24}{r.forward * 1e3:>12.2f}{r.backward * 1e3:>13.2f}"
            f"{per_node * 1e6:>10.2f}{per_node / per_node_base:>8.2f}"
        )


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
