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

The executor half (``aiograd.executors.DaskExecutor``) on a LocalCluster of 2 worker processes
with one thread each:

- the 8-branch wide backward of bench_branches.py (``loss = sum_i sum(tanh(X @ W_i) @ V_i)``,
  X (256, 512), W_i (512, 512), V_i (512, 64), float64), its backward alone, with
  ``InlineExecutor``, ``ThreadExecutor(2)``, ``DaskExecutor`` shipping every node the engine
  offloads (``ship_threshold=0``) and ``DaskExecutor`` with its default threshold;
- the round trip of an empty node: a backward of one shipped node on a 1-element tensor, against
  the same node on the loop, and a bare ``client.submit`` of a no-op for Dask's own share;
- the break-even: one weight gradient ``X.T @ G`` of (n, n) matrices (a lone MmBackward0 of
  ``2 n^3 * 0.015`` ns estimated), run here and shipped, for n from 128 to 1024: where the trip
  costs a tenth of the work, shipping can pay on a cluster with more cores than this machine
  (here, on one machine, the workers have no cores the threads lack).

    python benchmarks/bench_distributed.py [--batch 4096] [--repeats 7] [--warmup 2]
    python benchmarks/bench_distributed.py --part executor   # or --part data-parallel

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
from aiograd.executors import DaskExecutor, Executor, InlineExecutor, ThreadExecutor


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


# ------------------------------------------------------------------------------ DaskExecutor
BRANCHES, M, K, N = 8, 256, 512, 64  # bench_branches.py's graph


def wide_graph(rng: np.random.Generator) -> tuple[ag.Tensor, list[ag.Tensor]]:
    """bench_branches.py's 8-branch loss, and its parameters."""
    x = ag.tensor(rng.standard_normal((M, K)))
    ws = [ag.tensor(rng.standard_normal((K, K)) / K**0.5, requires_grad=True) for _ in range(BRANCHES)]
    vs = [ag.tensor(rng.standard_normal((K, N)) / K**0.5, requires_grad=True) for _ in range(BRANCHES)]
    loss = sum((x.mm(w).tanh().mm(v).sum() for w, v in zip(ws, vs, strict=True)), ag.tensor(0.0))
    return loss, ws + vs


def use(executor: Executor, offload_threshold: float | None = None) -> None:
    engine = ag.get_engine()
    engine.executors["cpu"] = executor
    engine.offload_threshold = 80_000.0 if offload_threshold is None else offload_threshold
    engine.stall_threshold = 1_000_000.0 if offload_threshold is None else offload_threshold


async def backward_ms(make, repeats: int, warmup: int) -> float:  # type: ignore[no-untyped-def]
    """Median ms of ``ag.grad`` on a graph ``make()`` records just before (untimed)."""
    times = []
    for i in range(warmup + repeats):
        loss, params = make()
        start = time.perf_counter()
        await ag.grad(loss, params, ag.ones_like(loss))
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


async def executor_rows(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(0)
    want = [g.numpy() for g in await ag.grad(*wide_graph(np.random.default_rng(0)))]
    async with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        asynchronous=True, silence_logs=50,
    ) as cluster, Client(cluster, asynchronous=True) as client:
        ship_all = DaskExecutor(client, ship_threshold=0, ns_per_byte=0)
        default = DaskExecutor(client)
        executors: list[tuple[str, Executor]] = [
            ("InlineExecutor", InlineExecutor()), ("ThreadExecutor(2)", ThreadExecutor(2)),
            ("DaskExecutor, every offloaded node", ship_all),
            (f"DaskExecutor, default ({default.ship_threshold / 1e6:g} ms)", default),
        ]
        rows = []
        for name, executor in executors:
            use(executor)
            got = [g.numpy() for g in await ag.grad(*wide_graph(np.random.default_rng(0)))]
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
            rows.append((name, await backward_ms(lambda: wide_graph(rng), args.repeats, args.warmup)))
        print(f"8-branch wide backward (bench_branches.py's graph), float64; median of {args.repeats}; gradients agree")
        print(f"{'':44s}{'ms':>9s}{'vs inline':>11s}")
        for name, ms in rows:
            print(f"{name:44s}{ms:9.1f}{rows[0][1] / ms:10.2f}x")
        print(f"  (nodes shipped: {ship_all.nodes_shipped} with threshold 0, {default.nodes_shipped} with the default)")

        # The round trip of an empty node: one NegBackward0 on a 1-element tensor (the root: its
        # gradient is given, so it is the backward's only node besides the leaf's accumulator).
        def empty() -> tuple[ag.Tensor, list[ag.Tensor]]:
            x = ag.tensor([1.0], requires_grad=True)
            return -x, [x]

        use(InlineExecutor())
        inline_ms = await backward_ms(empty, args.repeats * 5, args.warmup)
        use(ship_all, offload_threshold=1e-9)
        shipped_ms = await backward_ms(empty, args.repeats * 5, args.warmup)

        async def bare() -> None:
            await client.submit(_noop, pure=False)

        bare_ms = await median_ms(bare, args.repeats * 5, args.warmup)
        print()
        print(f"round trip of an empty node: {shipped_ms:.2f} ms shipped vs {inline_ms:.3f} ms on the loop; "
              f"a bare client.submit: {bare_ms:.2f} ms")

        # Break-even: a lone weight gradient X.T @ G of (n, n) matrices, here and shipped.
        print()
        print("a lone weight gradient X.T @ G of (n, n) matrices (X kept on the cluster), here in a thread and shipped")
        print(f"{'n':>6s}{'estimate ms':>13s}{'bytes ms':>10s}{'here ms':>10s}{'shipped ms':>12s}{'trip share':>12s}{'default ships':>15s}")
        for n in (128, 256, 512, 768, 1024, 1536):
            xs = ag.tensor(rng.standard_normal((n, n)))
            w = ag.tensor(rng.standard_normal((n, n)) / n**0.5, requires_grad=True)

            def lone(xs: ag.Tensor = xs, w: ag.Tensor = w) -> tuple[ag.Tensor, list[ag.Tensor]]:
                return xs.mm(w), [w]

            async def timed(executor: Executor, lone=lone, n=n) -> float:  # type: ignore[no-untyped-def]
                use(executor, offload_threshold=1e-9)
                times = []
                for i in range(args.warmup + args.repeats):
                    out, params = lone()
                    g = ag.ones(n, n)
                    start = time.perf_counter()
                    await ag.grad(out, params, g)
                    if i >= args.warmup:
                        times.append((time.perf_counter() - start) * 1e3)
                return statistics.median(times)

            here, shipped = await timed(ThreadExecutor(1)), await timed(ship_all)
            estimate = 2.0 * n**3 * 0.015 / 1e6
            moved = 2 * n * n * 8 * default.ns_per_byte / 1e6  # the gradient in, the result out
            ships = estimate * 1e6 >= max(default.ship_threshold, moved * 1e6)
            print(f"{n:6d}{estimate:13.2f}{moved:10.2f}{here:10.2f}{shipped:12.2f}"
                  f"{(shipped - here) / shipped:11.0%}{'yes' if ships else 'no':>15s}")
        for _, executor in executors:
            executor.close()
        engine = ag.get_engine()  # as it was: the data-parallel half runs on its defaults
        engine.executors.pop("cpu", None)
        use(InlineExecutor())
        engine.executors.pop("cpu", None)


def _noop() -> None:
    return None


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--part", choices=["both", "data-parallel", "executor"], default="both")
    args = parser.parse_args()

    try:
        import distributed  # noqa: F401
    except ImportError:
        print('skipped: distributed is not installed (pip install -e ".[distributed]")')
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the workers' (they inherit it)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.part in ("both", "executor"):
        await executor_rows(args)
        if args.part == "executor":
            return
        print()

    rng = np.random.default_rng(0)
    x, y = ag.tensor(rng.standard_normal((args.batch, 784))), ag.tensor(rng.integers(0, 10, args.batch))
    model = make_model()
    params = list(model.parameters())

    async def one_process() -> list[ag.Tensor | None]:
        return list(await ag.grad(F.cross_entropy(model(x), y), params))

    want = await one_process()
    rows = [("one process", await median_ms(one_process, args.repeats, args.warmup))]
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
