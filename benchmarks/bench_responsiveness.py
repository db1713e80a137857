"""Responsiveness: how long the event loop goes without running other coroutines during a heavy
backward, with InlineExecutor and with ThreadExecutor.

A ticker coroutine runs ``await asyncio.sleep(0.001)`` in a loop and records the gap between
consecutive wake-ups, while the same coroutine's loop runs ``await loss.backward()`` of about a
second of matmuls:

    h = X                                  X (256, 1024), no grad
    for l in range(layers):                W_l (1024, 1024), float64
        h = tanh(h @ W_l)
    loss = h.sum()

Each layer's backward is a TanhBackward0 (262,144 elements) and an MmBackward0 with two products
of 256 x 1024 x 1024 (one for the first layer, whose input needs no gradient). The number of
layers is chosen so that the inline backward takes about ``--seconds`` (default 1) on this machine.
A chain has no parallel branches: every node is alone, so the engine offloads it only when its
estimated cost reaches ``Engine.stall_threshold`` (a node that would hold the loop that long); the
lighter nodes stay on the loop either way.

Reported, for each executor: the backward's wall time, the largest gap between ticks and the 99th
percentile, the number of ticks, and the engine's count of offloaded nodes; first the ticker alone
(the baseline: the loop's own timer resolution, 1 ms on uvloop). ``--repeats`` runs alternate the
executors; the table shows the median run's figures and the worst largest gap. Both BLAS settings
are run, each in a subprocess with the thread variables set before numpy loads: single-threaded
(``OMP/OPENBLAS/MKL_NUM_THREADS=1``) and default.

    python benchmarks/bench_responsiveness.py [--seconds 1.0] [--repeats 3]
                                              [--setting single|default|both]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
from aiograd.executors import InlineExecutor, ThreadExecutor  # noqa: E402

BATCH, WIDTH = 256, 1024
SETTINGS = {
    "single": "single-threaded BLAS (OMP/OPENBLAS/MKL_NUM_THREADS=1)",
    "default": "default threading (no thread variables)",
}


class Ticker:
    """``sleep(0.001)`` in a loop; the gaps between wake-ups, in seconds."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self._stop = False
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        perf = time.perf_counter
        last = perf()
        while not self._stop:
            await asyncio.sleep(0.001)
            now = perf()
            self.gaps.append(now - last)
            last = now

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        await asyncio.sleep(0.005)  # let it settle: the first gaps are not the backward's
        self.gaps.clear()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop = True
        assert self._task is not None
        await self._task


def summary(gaps: list[float]) -> dict[str, float]:
    s = sorted(gaps)
    return {"max": s[-1], "p99": s[min(len(s) - 1, int(0.99 * len(s)))], "ticks": len(s)}


def build(x: aiograd.Tensor, ws: list[aiograd.Tensor]) -> aiograd.Tensor:
    h = x
    for w in ws:
        h = aiograd.tanh(h @ w)
    return h.sum()


async def one_run(executor: Any, x: aiograd.Tensor, ws: list[aiograd.Tensor]) -> dict[str, Any]:
    aiograd.set_executor("cpu", executor)
    engine = aiograd.get_engine()
    for w in ws:
        w.grad = None
    loss = build(x, ws)
    offloaded = engine.statistics().nodes_offloaded
    gc.collect()
    gc.disable()  # a collection would be a gap of its own, not the engine's
    try:
        async with Ticker() as ticker:
            t0 = time.perf_counter()
            await loss.backward()
            wall = time.perf_counter() - t0
    finally:
        gc.enable()
    return {"wall": wall, **summary(ticker.gaps),
            "offloaded": engine.statistics().nodes_offloaded - offloaded}


def worker(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    x = aiograd.tensor(rng.standard_normal((BATCH, WIDTH)))

    def weights(n: int) -> list[aiograd.Tensor]:
        return [aiograd.tensor(rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH), requires_grad=True)
                for _ in range(n)]

    async def main() -> dict[str, Any]:
        inline, threads = InlineExecutor(), ThreadExecutor(2)
        # Calibrate: time the inline backward of a few layers, then size the chain.
        probe = weights(4)
        await one_run(inline, x, probe)
        per_layer = (await one_run(inline, x, probe))["wall"] / len(probe)
        layers = max(2, round(args.seconds / per_layer))
        ws = weights(layers)
        await one_run(threads, x, ws[:2])  # start the pool's threads
        gc.collect()
        gc.disable()
        try:
            async with Ticker() as ticker:
                await asyncio.sleep(0.5)
        finally:
            gc.enable()
        runs: dict[str, list[dict[str, Any]]] = {"inline": [], "thread": []}
        for _ in range(args.repeats):
            runs["inline"].append(await one_run(inline, x, ws))
            runs["thread"].append(await one_run(threads, x, ws))
        threads.close()
        from bench_mlp import blas_threads

        return {"layers": layers, "baseline": summary(ticker.gaps), "runs": runs,
                "blas_threads": blas_threads(), "stall": aiograd.get_engine().stall_threshold,
                "threshold": aiograd.get_engine().offload_threshold}

    print(json.dumps(aiograd.run(main())))


def report(setting: str, out: dict[str, Any], watch: Any) -> None:
    print(f"-- {SETTINGS[setting]}; numpy BLAS threads: {out['blas_threads'] or 'unknown'}; "
          f"{out['layers']} layers")
    print(f"   {watch.note()}")
    header = f"{'executor':<28}{'backward':>10}{'largest gap':>13}{'worst':>9}{'p99 gap':>9}{'ticks':>7}{'offloaded':>11}"
    print(header)
    print("-" * len(header))
    b = out["baseline"]
    print(f"{'ticker alone (0.5 s)':<28}{'':>10}{b['max'] * 1e3:>10.2f} ms{'':>9}"
          f"{b['p99'] * 1e3:>6.2f} ms{b['ticks']:>7}{'':>11}")
    for key, label in (("inline", "InlineExecutor()"), ("thread", "ThreadExecutor(2)")):
        runs = sorted(out["runs"][key], key=lambda r: r["max"])
        mid = runs[len(runs) // 2]
        print(f"{label:<28}{mid['wall'] * 1e3:>7.0f} ms{mid['max'] * 1e3:>10.2f} ms"
              f"{runs[-1]['max'] * 1e3:>6.1f} ms{mid['p99'] * 1e3:>6.2f} ms{mid['ticks']:>7}"
              f"{mid['offloaded']:>11}")
    print(f"(offload_threshold {out['threshold']:,.0f} ns, stall_threshold {out['stall']:,.0f} ns)")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="inline backward time to aim at")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--setting", choices=("single", "default", "both"), default="both")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    from bench_branches import CpuWatch, environment

    print(f"responsiveness: a 1 ms ticker coroutine during the backward of a chain of "
          f"tanh(h @ W), h ({BATCH}, {WIDTH}), W ({WIDTH}, {WIDTH}), float64, ~{args.seconds:g} s inline")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"aiograd.run's loop; {args.repeats} runs of each executor, alternating: the median run's "
          f"figures, and the worst largest gap")
    print()
    for setting in (("single", "default") if args.setting == "both" else (args.setting,)):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--seconds", str(args.seconds),
               "--repeats", str(args.repeats)]
        with CpuWatch() as watch:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=environment(setting))
        if proc.returncode != 0:
            sys.exit(f"worker ({setting}) failed:\n{proc.stderr}")
        report(setting, json.loads(proc.stdout.strip().splitlines()[-1]), watch)


if __name__ == "__main__":
    main()
