"""A training step on an idle and on a busy machine: default threads against one thread.

The step: an MLP 784-512-512-10 (ReLU) with cross-entropy over class indices, batch 256,
float32, SGD (``zero_grad``, forward, ``await loss.backward()``, ``step``); ``--small`` adds
bench_mlp's 784-256-256-10 at batch 64. Each (library, threads, load) runs in a fresh worker
process (this script with ``--worker``):

- threads "default": the environment as it is; aiograd sizes numpy's BLAS threads itself (the
  cores given to the process less those other processes keep busy; docs/executors.md), torch
  uses its default intra-op pool;
- threads "1": ``AIOGRAD_NUM_THREADS=1`` (and ``OPENBLAS_NUM_THREADS=1``), ``torch.set_num_threads(1)``;
- load "idle": nothing else runs; load "busy": a second process spins on one core (``while True:
  pass``, started before the worker and stopped after it), the issue's "one core busy with
  another process".

A worker takes untimed steps for ``--warmup-s`` seconds (long enough for aiograd to have seen the
load), then times ``--steps`` steps; reported: the median step. The figure that matters is
default over one thread on the busy machine: the goal is at most 1.1 (default threads never
slower than one thread); torch's is printed beside it.

    python benchmarks/bench_threads.py [--rounds 3] [--steps 60] [--small] [--no-torch]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
THREAD_VARS = ("AIOGRAD_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
SHAPES = {"mlp-512": (512, 256), "mlp-256": (256, 64)}  # hidden width, batch


def _training(lib: Any, hidden: int, batch: int) -> tuple[Any, Any, Any, Any]:
    """The model, its optimizer and a batch, in ``lib`` (aiograd or torch)."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, 10))
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((batch, 784)).astype(np.float32))
    return model, lib.optim.SGD(model.parameters(), lr=0.01), x, lib.from_numpy(rng.integers(0, 10, batch))


def _aiograd_step(hidden: int, batch: int) -> Any:
    sys.path.insert(0, os.path.join(HERE, os.pardir))
    import aiograd
    import aiograd.nn.functional as F

    model, opt, x, y = _training(aiograd, hidden, batch)

    async def step() -> None:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        await loss.backward()
        opt.step()

    return aiograd.run, step


def _torch_step(hidden: int, batch: int, one_thread: bool) -> Any:
    import torch
    import torch.nn.functional as F

    if one_thread:
        torch.set_num_threads(1)
    model, opt, x, y = _training(torch, hidden, batch)

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def worker(args: argparse.Namespace) -> None:
    hidden, batch = SHAPES[args.shape]
    times: list[float] = []
    if args.library == "aiograd":
        run, step = _aiograd_step(hidden, batch)

        async def loop() -> None:
            end = time.perf_counter() + args.warmup_s
            while time.perf_counter() < end:
                await step()
            for _ in range(args.steps):
                t = time.perf_counter()
                await step()
                times.append(time.perf_counter() - t)

        run(loop())
        import aiograd

        threads = aiograd.get_num_threads()
    else:
        import torch

        tstep = _torch_step(hidden, batch, args.threads == "1")
        end = time.perf_counter() + args.warmup_s
        while time.perf_counter() < end:
            tstep()
        for _ in range(args.steps):
            t = time.perf_counter()
            tstep()
            times.append(time.perf_counter() - t)
        threads = torch.get_num_threads()
    print(json.dumps({"median_ms": statistics.median(times) * 1e3, "threads": threads}))


def _run_worker(library: str, shape: str, threads: str, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    for var in THREAD_VARS:
        env.pop(var, None)
    if threads == "1":
        env.update({var: "1" for var in THREAD_VARS})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--library", library, "--shape", shape,
           "--threads", threads, "--steps", str(args.steps), "--warmup-s", str(args.warmup_s)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"worker {library} {shape} {threads} failed:\n{out.stderr}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--library", default="aiograd", help=argparse.SUPPRESS)
    p.add_argument("--shape", default="mlp-512", help=argparse.SUPPRESS)
    p.add_argument("--threads", default="default", help=argparse.SUPPRESS)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=60, help="timed steps per worker")
    p.add_argument("--warmup-s", type=float, default=1.5, help="seconds of untimed steps per worker")
    p.add_argument("--small", action="store_true", help="also bench_mlp's 784-256-256-10, batch 64")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--json", help="write every figure here")
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    libraries = ["aiograd"]
    if not args.no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            pass
        else:
            libraries.append("torch")
    shapes = ["mlp-512", "mlp-256"] if args.small else ["mlp-512"]
    results: dict[tuple[str, str, str, str], list[float]] = {}
    threads_seen: dict[tuple[str, str, str, str], int] = {}
    for _ in range(args.rounds):
        for load in ("idle", "busy"):
            spinner = None
            if load == "busy":
                spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            try:
                for shape in shapes:
                    for library in libraries:
                        for threads in ("default", "1"):
                            r = _run_worker(library, shape, threads, args)
                            key = (shape, load, library, threads)
                            results.setdefault(key, []).append(r["median_ms"])
                            threads_seen[key] = r["threads"]
            finally:
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
    print(f"training step: MLP 784-H-H-10, float32, SGD; Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs; median over {args.rounds} rounds of each worker's median of "
          f"{args.steps} steps; busy = a second process spinning on one core")
    print(f"{'workload':<22}{'load':<6}{'library':<9}{'default ms':>11}{'(threads)':>10}{'1 thread ms':>12}"
          f"{'default/1':>10}")
    summary = []
    for shape in shapes:
        hidden, batch = SHAPES[shape]
        for load in ("idle", "busy"):
            for library in libraries:
                d = statistics.median(results[(shape, load, library, "default")])
                one = statistics.median(results[(shape, load, library, "1")])
                name = f"{hidden}-wide, batch {batch}"
                print(f"{name:<22}{load:<6}{library:<9}{d:>11.2f}{threads_seen[(shape, load, library, 'default')]:>10}"
                      f"{one:>12.2f}{d / one:>10.2f}")
                summary.append({"shape": shape, "load": load, "library": library, "default_ms": d,
                                "one_thread_ms": one, "ratio": d / one})
    print("goal: aiograd's default/1 at most 1.1 on the busy machine (default threads never slower "
          "than one thread)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
