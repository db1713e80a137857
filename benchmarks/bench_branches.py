"""Independent branches in one backward: InlineExecutor vs ThreadExecutor vs torch.

    loss = sum over i = 1..8 of  sum(tanh(X @ W_i) @ V_i)
    X (256, 512) the input (no grad unless --x-grad), W_i (512, 512), V_i (512, 64); float64

float64 because it is aiograd's default dtype (as numpy's) and the issue names none; ``--dtype
float32`` runs the same in float32. The eight branches meet only at the loss (seven AddBackward0),
so after the first few nodes eight chains of four nodes are ready at once: SumBackward0,
MmBackward0 (``g @ V.T`` and ``H.T @ g``), TanhBackward0, MmBackward0 (``X.T @ g``). PyTorch's
CPU engine runs them one after the other; aiograd with a ThreadExecutor keeps up to ``capacity``
of the heavy ones in flight.

Implementations, each timed in fresh worker processes of its own (this script with ``--worker``):

- numpy by hand, serial: the same backward written out in numpy (no engine), branch after branch;
  the floor for one thread.
- numpy by hand, 2 threads: the same, the branches shared by a 2-thread pool: what two cores give
  this math with no engine at all (the ceiling for ThreadExecutor(2)).
- aiograd with ``InlineExecutor()``, ``ThreadExecutor(2)`` and ``ThreadExecutor(4)``, set with
  ``aiograd.set_executor("cpu", ...)``, the engine's default ``offload_threshold`` unless
  ``--threshold`` is given.
- torch: ``loss.backward()``; ``torch.set_num_threads(1)`` with single-threaded BLAS, torch's
  default thread count otherwise.

Two settings, each worker started with the environment set before numpy loads: single-threaded BLAS
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = 1) and default threading
(those variables removed). Both run whatever ``run_all.py --threads`` says.

Correctness first: every implementation computes the gradients of all W_i and V_i (and X with
``--x-grad``) once, in a worker of its own in each setting, and they must agree with the hand
written numpy ones (rtol 1e-9 in float64, 1e-4 in float32) before anything is timed.

Timed: the backward call alone, on a graph recorded just before (untimed), gradients reset in
between, the garbage collector collected before and disabled during the call. Each worker runs
``--warmup`` untimed and ``--repeats`` timed backward calls; ``--rounds`` rounds take the
implementations in turn, so a change in machine load hits all of them alike. Reported: the median
over all rounds, and for aiograd the engine's ``statistics()`` of its last call (nodes offloaded,
largest number in flight). A worker run during which other processes took more than 10% of a core
(from ``/proc/stat``) is discarded and run again, up to ``--retries`` times: on a shared 2-core
machine a busy neighbour halves what parallel branches can gain. The load seen is printed.

**Goal** (issue 4), on 2 cores with single-threaded BLAS: ThreadExecutor(2) at least 1.7x faster
than InlineExecutor, and faster than torch.

    python benchmarks/bench_branches.py [--rounds 3] [--repeats 10] [--warmup 3]
                                        [--dtype float64] [--x-grad] [--threshold NS]
                                        [--setting single|default|both]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402

BRANCHES = 8
M, K, N = 256, 512, 64  # X (M, K), W_i (K, K), V_i (K, N)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: A timed run during which other processes took more than this share of one core is run again.
BUSY = 0.10

#: (key, label); the aiograd ones are filled in with the executor in the label.
IMPLEMENTATIONS = (
    ("numpy", "numpy by hand, serial"),
    ("numpy2", "numpy by hand, 2 threads"),
    ("inline", "aiograd InlineExecutor"),
    ("thread2", "aiograd ThreadExecutor(2)"),
    ("thread4", "aiograd ThreadExecutor(4)"),
    ("torch", "torch"),
)
SETTINGS = {
    "single": "single-threaded BLAS (OMP/OPENBLAS/MKL_NUM_THREADS=1, torch.set_num_threads(1))",
    "default": "default threading (no thread variables; torch's default thread count)",
}


def make_data(dtype: Any) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """X, the W_i and the V_i: the same in every process."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K)).astype(dtype)
    ws = [(rng.standard_normal((K, K)) / np.sqrt(K)).astype(dtype) for _ in range(BRANCHES)]
    vs = [(rng.standard_normal((K, N)) / np.sqrt(K)).astype(dtype) for _ in range(BRANCHES)]
    return x, ws, vs


# ------------------------------------------------------------------------------------- numpy
class NumpyBranches:
    """The backward written out by hand: the same products and temporaries as the nodes'."""

    def __init__(self, x: np.ndarray, ws: list[np.ndarray], vs: list[np.ndarray], x_grad: bool,
                 threads: int) -> None:
        self.x, self.ws, self.vs, self.x_grad = x, ws, vs, x_grad
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def forward(self) -> list[np.ndarray]:
        return [np.tanh(self.x @ w) for w in self.ws]

    def branch(self, i: int, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        g = np.ones((M, N), h.dtype)               # SumBackward0: the scalar's gradient, expanded
        gv = h.T @ g                               # MmBackward0
        gh = g @ self.vs[i].T
        ga = gh * (1.0 - h * h)                    # TanhBackward0
        gw = self.x.T @ ga                         # MmBackward0
        gx = ga @ self.ws[i].T if self.x_grad else None
        return gw, gv, gx

    def backward(self, hs: list[np.ndarray]) -> list[np.ndarray]:
        if self.pool is None:
            parts = [self.branch(i, h) for i, h in enumerate(hs)]
        else:
            parts = list(self.pool.map(self.branch, range(BRANCHES), hs))
        grads = [gw for gw, _, _ in parts] + [gv for _, gv, _ in parts]
        if self.x_grad:
            gx = parts[0][2].copy()
            for _, _, g in parts[1:]:
                gx += g
            grads.append(gx)
        return grads


def run_numpy(data: Any, args: argparse.Namespace, threads: int) -> tuple[list[float], list[np.ndarray], dict[str, Any]]:
    impl = NumpyBranches(*data, args.x_grad, threads)
    times, grads = [], []
    for i in range(args.warmup + args.repeats):
        hs = impl.forward()
        with Timer() as t:
            grads = impl.backward(hs)
        if i >= args.warmup:
            times.append(t.seconds)
    return times, grads, {}


# ------------------------------------------------------------------------------------- aiograd
def executor_for(key: str) -> Any:
    from aiograd.executors import InlineExecutor, ThreadExecutor

    return InlineExecutor() if key == "inline" else ThreadExecutor(int(key[len("thread"):]))


def stats_of(engine: Any) -> dict[str, Any]:
    stats = getattr(engine, "statistics", None)
    if stats is None:
        return {}
    s = stats()
    return dict(s) if isinstance(s, dict) else {k: getattr(s, k) for k in dir(s) if not k.startswith("_")}


def run_aiograd(data: Any, args: argparse.Namespace, key: str) -> tuple[list[float], list[np.ndarray], dict[str, Any]]:
    x0, ws0, vs0 = data

    async def main() -> tuple[list[float], list[np.ndarray], dict[str, Any]]:
        set_executor = getattr(aiograd, "set_executor", None)
        if set_executor is None:
            raise SystemExit("aiograd.set_executor is missing: offloading is not in the engine yet")
        executor = executor_for(key)
        set_executor("cpu", executor)
        engine = aiograd.get_engine()
        if args.threshold is not None:
            engine.offload_threshold = args.threshold
        x = aiograd.tensor(x0, requires_grad=args.x_grad)
        ws = [aiograd.tensor(w, requires_grad=True) for w in ws0]
        vs = [aiograd.tensor(v, requires_grad=True) for v in vs0]
        params = ws + vs + ([x] if args.x_grad else [])
        times: list[float] = []
        stats: dict[str, Any] = {}
        for i in range(args.warmup + args.repeats):
            for p in params:
                p.grad = None
            loss = None
            for w, v in zip(ws, vs):
                branch = (aiograd.tanh(x @ w) @ v).sum()
                loss = branch if loss is None else loss + branch
            before = stats_of(engine)
            with Timer() as t:
                await loss.backward()
            after = stats_of(engine)
            del loss, branch
            if i >= args.warmup:
                times.append(t.seconds)
        stats = {
            "threshold": getattr(engine, "offload_threshold", None),
            "max_in_flight": after.get("max_nodes_in_flight", after.get("max_in_flight")),
            "nodes_offloaded": (after["nodes_offloaded"] - before.get("nodes_offloaded", 0)
                                if "nodes_offloaded" in after else None),
            "executor": repr(executor),
        }
        executor.close()
        return times, [p.grad.data for p in params], stats

    return aiograd.run(main())


# ------------------------------------------------------------------------------------- torch
def run_torch(data: Any, args: argparse.Namespace, setting: str) -> tuple[list[float], list[np.ndarray], dict[str, Any]]:
    import torch

    if setting == "single":
        torch.set_num_threads(1)
    x0, ws0, vs0 = data
    x = torch.from_numpy(x0).requires_grad_(args.x_grad)
    ws = [torch.from_numpy(w.copy()).requires_grad_() for w in ws0]
    vs = [torch.from_numpy(v.copy()).requires_grad_() for v in vs0]
    params = ws + vs + ([x] if args.x_grad else [])
    times = []
    for i in range(args.warmup + args.repeats):
        for p in params:
            p.grad = None
        loss = None
        for w, v in zip(ws, vs):
            branch = (torch.tanh(x @ w) @ v).sum()
            loss = branch if loss is None else loss + branch
        with Timer() as t:
            loss.backward()
        del loss, branch
        if i >= args.warmup:
            times.append(t.seconds)
    version = torch.__version__.split("+")[0]
    return times, [p.grad.numpy() for p in params], {"label": f"torch {version} ({torch.get_num_threads()} thr)"}


# ------------------------------------------------------------------------------------- worker
def worker(args: argparse.Namespace) -> None:
    """Run one implementation in this process; print its times and notes as JSON, and save its
    gradients with ``--grads``."""
    dtype = np.dtype(args.dtype).type
    data = make_data(dtype)
    gc.collect()
    gc.freeze()
    key = args.worker
    if key == "numpy":
        times, grads, notes = run_numpy(data, args, 1)
    elif key == "numpy2":
        times, grads, notes = run_numpy(data, args, 2)
    elif key == "torch":
        times, grads, notes = run_torch(data, args, args.setting)
    else:
        times, grads, notes = run_aiograd(data, args, key)
    from bench_mlp import blas_threads

    notes["blas_threads"] = blas_threads()
    if args.grads:
        np.savez(args.grads, *grads)
    print(json.dumps({"times": times, "notes": notes}))


# ------------------------------------------------------------------------------------- driver
def environment(setting: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    if setting == "single":
        env.update(dict.fromkeys(THREAD_VARS, "1"))
    return env


class CpuWatch:
    """CPU seconds that processes other than ours and our children used meanwhile (Linux)."""

    def __enter__(self) -> CpuWatch:
        self.start = self._sample()
        return self

    def __exit__(self, *exc: object) -> None:
        end = self._sample()
        self.wall = end[0] - self.start[0]
        self.others = None
        if end[1] is not None and self.start[1] is not None:
            total = end[1] - self.start[1]
            ours = end[2] - self.start[2]
            self.others = max(0.0, total - ours)

    @staticmethod
    def _sample() -> tuple[float, float | None, float]:
        import resource

        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
        total = None
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
            # user nice system idle iowait irq softirq steal: busy = all but idle and iowait
            total = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError):
            pass
        return time.perf_counter(), total, ours

    @property
    def share(self) -> float:
        """Other processes' CPU time as a share of one core over the block (0 if unknown)."""
        return self.others / self.wall if self.others is not None and self.wall else 0.0

    def note(self) -> str:
        if self.others is None:
            return ""
        warn = "  ** the machine was busy: figures are unreliable **" if self.share > BUSY else ""
        return (f"other processes used {self.others:.1f} CPU-s in {self.wall:.0f} s "
                f"({self.share:.0%} of one core){warn}")


def run_quiet(run: Callable[[], Any], retries: int) -> tuple[Any, float, int]:
    """``run()`` until other processes took at most ``BUSY`` of a core meanwhile, at most
    ``retries`` more times (waiting a little before each); returns (result, their share during
    the run kept, runs discarded)."""
    discarded = 0
    while True:
        with CpuWatch() as watch:
            result = run()
        if watch.share <= BUSY or discarded >= retries:
            return result, watch.share, discarded
        discarded += 1
        time.sleep(1.0 + discarded)


def run_worker(key: str, setting: str, args: argparse.Namespace, grads: str | None = None) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", key, "--setting", setting,
           "--dtype", args.dtype, "--warmup", str(args.warmup), "--repeats", str(args.repeats)]
    if args.x_grad:
        cmd.append("--x-grad")
    if args.threshold is not None:
        cmd += ["--threshold", str(args.threshold)]
    if grads:
        cmd += ["--grads", grads, "--warmup", "0", "--repeats", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=environment(setting))
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_gradients(setting: str, keys: list[str], args: argparse.Namespace) -> dict[str, str]:
    """Every implementation's gradients against the hand-written numpy ones; returns the keys that
    could not run, with why."""
    rtol = 1e-9 if args.dtype == "float64" else 1e-4
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ref = None
        for key in keys:
            path = os.path.join(tmp, key + ".npz")
            out = run_worker(key, setting, args, grads=path)
            if "error" in out:
                failed[key] = out["error"]
                continue
            with np.load(path) as z:
                grads = [z[f"arr_{i}"] for i in range(len(z.files))]
            if ref is None:
                ref = grads
                continue
            assert len(grads) == len(ref), (key, len(grads), len(ref))
            for i, (g, r) in enumerate(zip(grads, ref)):
                assert g.dtype == r.dtype, f"{key}: gradient {i} is {g.dtype}, expected {r.dtype}"
                np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol * float(np.abs(r).max()),
                                           err_msg=f"{key} ({setting}): gradient {i}")
    return failed


def bench_setting(setting: str, args: argparse.Namespace) -> None:
    keys = [k for k, _ in IMPLEMENTATIONS]
    failed = check_gradients(setting, keys, args)
    keys = [k for k in keys if k not in failed]
    times: dict[str, list[float]] = {k: [] for k in keys}
    notes: dict[str, dict[str, Any]] = {}
    worst, discarded = 0.0, 0
    with CpuWatch() as watch:
        for _ in range(args.rounds):
            for key in keys:
                out, share, n = run_quiet(lambda key=key: run_worker(key, setting, args), args.retries)
                if "error" in out:
                    sys.exit(f"worker {key} ({setting}) failed: {out['error']}")
                times[key] += out["times"]
                notes[key] = out["notes"]
                worst, discarded = max(worst, share), discarded + n

    blas = next((n.get("blas_threads") for n in notes.values() if n.get("blas_threads")), None)
    print(f"-- {SETTINGS[setting]}; numpy BLAS threads: {blas or 'unknown'}")
    if watch.others is not None:
        print(f"   load: {discarded} worker runs discarded and rerun because other processes took "
              f"over {BUSY:.0%} of a core; in the runs kept, at most {worst:.0%}"
              f"{'  ** the machine was busy: figures are unreliable **' if worst > BUSY else ''}")
    med = {k: statistics.median(v) for k, v in times.items()}
    labels = dict(IMPLEMENTATIONS)
    if "torch" in notes:
        labels["torch"] = notes["torch"]["label"]
    header = (f"{'implementation':<30}{'ms':>9}{'min ms':>9}{'vs inline':>11}{'vs torch':>10}"
              f"{'offloaded':>11}{'in flight':>11}")
    print(header)
    print("-" * len(header))
    for key in keys:
        n = notes[key]
        offloaded = n.get("nodes_offloaded")
        in_flight = n.get("max_in_flight")
        vs_inline = f"{med['inline'] / med[key]:.2f}" if "inline" in med else "-"
        vs_torch = f"{med['torch'] / med[key]:.2f}" if "torch" in med else "-"
        print(f"{labels[key]:<30}{med[key] * 1e3:>9.2f}{min(times[key]) * 1e3:>9.2f}{vs_inline:>11}"
              f"{vs_torch:>10}{'' if offloaded is None else offloaded:>11}"
              f"{'' if in_flight is None else in_flight:>11}")
    for key, why in failed.items():
        print(f"{labels[key]:<30}  not run: {why}")
    thresholds = {n.get("threshold") for n in notes.values() if n.get("threshold") is not None}
    if thresholds:
        print(f"(offload_threshold: {', '.join(f'{t:,.0f}' for t in sorted(thresholds))} ns; "
              f"offloaded and in flight: from Engine.statistics() of the last backward)")
    if setting == "single" and "thread2" in med and "inline" in med:
        speedup = med["inline"] / med["thread2"]
        print(f"goal: ThreadExecutor(2) >= 1.7x inline: {speedup:.2f}x "
              f"{'met' if speedup >= 1.7 else 'NOT met'}", end="")
        if "numpy2" in med:
            print(f" (numpy by hand, 2 threads vs serial: {med['numpy'] / med['numpy2']:.2f}x)", end="")
        print()
        if "torch" in med:
            ratio = med["torch"] / med["thread2"]
            print(f"goal: ThreadExecutor(2) faster than torch: {ratio:.2f}x "
                  f"{'met' if ratio > 1.0 else 'NOT met'}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10, help="timed backward calls per worker")
    parser.add_argument("--warmup", type=int, default=3, help="untimed backward calls per worker")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--x-grad", action="store_true", help="X requires grad too")
    parser.add_argument("--threshold", type=float, help="Engine.offload_threshold (ns) for aiograd")
    parser.add_argument("--setting", choices=("single", "default", "both"), default="both")
    parser.add_argument("--retries", type=int, default=5,
                        help="reruns of a worker during which other processes were busy")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--grads", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    print(
        f"branches: backward of {BRANCHES} x sum(tanh(X @ W_i) @ V_i), X ({M}, {K})"
        f"{' (requires grad)' if args.x_grad else ' (no grad)'}, W_i ({K}, {K}), V_i ({K}, {N}), "
        f"{args.dtype}"
    )
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs; "
        f"median of {args.rounds} x {args.repeats} backward calls, each implementation in its own "
        f"processes ({args.warmup} warmup calls each); gradients checked against numpy's first"
    )
    print("vs inline, vs torch: that one's time / this one's (above 1: this one is faster)")
    print()
    for setting in (("single", "default") if args.setting == "both" else (args.setting,)):
        bench_setting(setting, args)


if __name__ == "__main__":
    main()
