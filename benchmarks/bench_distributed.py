"""Data-parallel gradients on a Dask LocalCluster against one process (aiograd.distributed).

Model: 784-1024-1024-10 MLP, tanh, cross-entropy over class indices (mean), float64. One
measurement is the whole batch's loss and gradients with respect to every parameter:

- ``one process``: ``aiograd.grad`` here, on this process's BLAS threads (the environment's);
- ``DataParallel, N workers``: ``await DataParallel(...).grad(x, y)`` on a LocalCluster of N
  worker processes with one thread each (and single-threaded BLAS in them), N = 1 and 2. The
  parameters are unchanged between calls, so after the first call only the shards and the summed
  gradients travel: what a training step costs besides the optimizer's parameter shipment,
  which is measured apart (``parameter shipment``: the same call after an in-place update).

Also the round trip of a call on a 4-row batch (``overhead``): what DataParallel costs before
any math; and a call on a batch placed on the workers once (``DataParallel.scatter``), which
sends no data. Every figure is the median of ``--repeats`` calls after ``--warmup``; the
gradients are checked against one process's first (``rtol=1e-9``).

    python benchmarks/bench_distributed.py [--batch 4096] [--repeats 7] [--warmup 2]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_distributed.py   # one process on one core too

Needs ``pip install -e ".[distributed]"``. On a 2-core machine two worker processes share the
cores with the client and the scheduler, so the 2-worker figure shows the overhead more than
the speedup a machine per worker would give.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import numpy as np

import aiograd as ag
import aiograd.nn.functional as F
from aiograd import nn
from aiograd.distributed import DataParallel


def make_model() -> nn.Module:
    ag.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 1024), nn.Tanh(), nn.Linear(1024, 1024), nn.Tanh(), nn.Linear(1024, 10))


async def median_ms(call, repeats: int, warmup: int) -> float:  # type: ignore[no-untyped-def]
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


async def on_cluster(
    workers: int, model: nn.Module, x: ag.Tensor, y: ag.Tensor, want: list[ag.Tensor | None],
    args: argparse.Namespace,
) -> list[tuple[str, float]]:
    """The DataParallel rows for a LocalCluster of ``workers`` processes."""
    from distributed import Client, LocalCluster

    params = list(model.parameters())
    rows = []
    async with LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        asynchronous=True, silence_logs=50,
    ) as cluster, Client(cluster, asynchronous=True) as client:
        dp = DataParallel(client, model, F.cross_entropy)
        _, got = await dp.grad(x, y)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-12)

        async def grad_call() -> None:
            await dp.grad(x, y)

        async def small_call() -> None:
            await dp.grad(x[:4], y[:4])

        scattered = await dp.scatter(x, y)

        async def scattered_call() -> None:
            await dp.grad(scattered)

        async def shipped_call() -> None:
            with ag.no_grad():
                params[0].mul_(1.0)  # a new version: the parameters travel again
            await dp.grad(x, y)

        name = f"{workers} worker{'s' if workers > 1 else ''}"
        rows.append((f"DataParallel, {name}", await median_ms(grad_call, args.repeats, args.warmup)))
        if workers == 2:
            rows.append((f"overhead (4 rows, {name})", await median_ms(small_call, args.repeats, args.warmup)))
            rows.append((f"batch scattered once, {name}", await median_ms(scattered_call, args.repeats, args.warmup)))
            rows.append((f"with parameter shipment, {name}", await median_ms(shipped_call, args.repeats, args.warmup)))
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()

    try:
        import distributed  # noqa: F401
    except ImportError:
        print('skipped: distributed is not installed (pip install -e ".[distributed]")')
        return

    rng = np.random.default_rng(0)
    x, y = ag.tensor(rng.standard_normal((args.batch, 784))), ag.tensor(rng.integers(0, 10, args.batch))
    model = make_model()
    params = list(model.parameters())

    async def one_process() -> list[ag.Tensor | None]:
        return list(await ag.grad(F.cross_entropy(model(x), y), params))

    want = await one_process()
    rows = [("one process", await median_ms(one_process, args.repeats, args.warmup))]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the workers' (they inherit it)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for workers in (1, 2):
        rows += await on_cluster(workers, model, x, y, want, args)
    base = rows[0][1]
    print(f"MLP 784-1024-1024-10, batch {args.batch}, float64; median of {args.repeats} calls; gradients agree")
    print(f"{'':38s}{'ms':>9s}{'vs one process':>16s}")
    for name, ms in rows:
        ratio = "" if name.startswith("overhead") else f"{base / ms:15.2f}x"  # no math to compare
        print(f"{name:38s}{ms:9.1f}{ratio}")


if __name__ == "__main__":
    asyncio.run(main())
