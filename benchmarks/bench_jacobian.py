"""``aiograd.functional.jacobian`` of a 256 -> 256 MLP: vectorized (one batched backward) against
the row-by-row loop and against torch.

Model: ``f(x) = W2 @ tanh(W1 @ x + b1) + b2``, W1 and W2 (256, 256), x (256,), float64
(float64, so that the Jacobians can be compared to float64 rounding). The
Jacobian is (256, 256): 256 rows, each one vector-Jacobian product.

- vectorized: ``await jacobian(f, x, vectorize=True)``: the 256 rows of the identity go through
  ONE backward as a batch of grad_outputs (``grad(..., is_grads_batched=True)``);
- loop: ``await jacobian(f, x)``: one backward per row (256 backward calls);
- torch: ``torch.autograd.functional.jacobian(f, x, vectorize=True)`` (and its loop, for
  information), in a process of its own (after aiograd: torch's thread pool and numpy's BLAS
  threads in one process slow each other down on a small machine).

Each timing is the median of ``--repeats`` calls after ``--warmup``, the garbage collector
collected before and disabled during each (``_timing.Timer``). Checked: vectorized == loop to
float64 rounding (the batched backward does each matrix-vector product of the loop as one
matrix product, BLAS gemm instead of gemv: last-bit differences), and torch's Jacobian agrees
with aiograd's.

    python benchmarks/bench_jacobian.py [--repeats 15] [--warmup 3] [--width 256]

The vectorized backward's time is two 256 x 256 x 256 matrix products (gemm); the loop's is the
engine's per-call overhead times 256. On a machine whose cores are busy with other work,
OpenBLAS's multi-threaded gemm stalls waiting for its descheduled threads (a 0.6 ms product then
takes 15 ms, median): run it on an idle machine, or single-threaded
(``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_jacobian.py``).

**Goal:** vectorized >= 10x faster than aiograd's loop, and no slower than torch's vectorized
(ratio = torch's time / aiograd's >= 1.0).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
from aiograd.functional import jacobian  # noqa: E402

LOOP_GOAL = 10.0
TORCH_GOAL = 1.0


def make_arrays(width: int) -> dict[str, np.ndarray]:
    r = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(width)
    return {
        "w1": r.standard_normal((width, width)) * scale,
        "b1": r.standard_normal(width) * 0.1,
        "w2": r.standard_normal((width, width)) * scale,
        "b2": r.standard_normal(width) * 0.1,
        "x": r.standard_normal(width),
    }


def median_time(call: Callable[[], Any], repeats: int, warmup: int) -> tuple[float, Any]:
    times = []
    result = None
    for i in range(warmup + repeats):
        with Timer() as t:
            result = call()
        if i >= warmup:
            times.append(t.seconds)
    return statistics.median(times), result


# ------------------------------------------------------------------------------------- aiograd
def bench_aiograd(args: argparse.Namespace) -> tuple[dict[str, float], np.ndarray]:
    arrays = make_arrays(args.width)
    w1, b1, w2, b2 = (aiograd.tensor(arrays[k]) for k in ("w1", "b1", "w2", "b2"))
    x = aiograd.tensor(arrays["x"])

    def f(x: aiograd.Tensor) -> aiograd.Tensor:
        return w2 @ (w1 @ x + b1).tanh() + b2

    async def main() -> tuple[dict[str, float], np.ndarray]:
        loop_runner = asyncio_runner(lambda: jacobian(f, x))
        vec_runner = asyncio_runner(lambda: jacobian(f, x, vectorize=True))
        t_vec, j_vec = await vec_runner(args.repeats, args.warmup)
        t_loop, j_loop = await loop_runner(max(3, args.repeats // 3), 1)
        # One gemm over the batch against a gemv per row: equal to BLAS rounding, not bitwise.
        np.testing.assert_allclose(j_vec.data, j_loop.data, rtol=1e-13, atol=1e-15)
        return {"vectorized": t_vec, "loop": t_loop, "diff": float(np.abs(j_vec.data - j_loop.data).max())}, j_vec.data

    return aiograd.run(main())


def asyncio_runner(make: Callable[[], Any]) -> Callable[[int, int], Any]:
    """Time ``await make()`` as ``median_time`` times a call."""

    async def run(repeats: int, warmup: int) -> tuple[float, Any]:
        times = []
        result = None
        for i in range(warmup + repeats):
            with Timer() as t:
                result = await make()
            if i >= warmup:
                times.append(t.seconds)
        return statistics.median(times), result

    return run


# ------------------------------------------------------------------------------------- torch
def torch_worker(args: argparse.Namespace) -> None:
    import torch
    import torch.autograd.functional as TF

    arrays = make_arrays(args.width)
    w1, b1, w2, b2 = (torch.tensor(arrays[k]) for k in ("w1", "b1", "w2", "b2"))
    x = torch.tensor(arrays["x"])

    def f(x: Any) -> Any:
        return w2 @ torch.tanh(w1 @ x + b1) + b2

    t_vec, j_vec = median_time(lambda: TF.jacobian(f, x, vectorize=True), args.repeats, args.warmup)
    t_loop, _ = median_time(lambda: TF.jacobian(f, x), max(3, args.repeats // 3), 1)
    name = f"torch {torch.__version__.split('+')[0]} ({torch.get_num_threads()} threads)"
    np.savez(args.worker_out, vec=t_vec, loop=t_loop, jac=j_vec.numpy(), name=np.array(name))


def bench_torch(args: argparse.Namespace, reference: np.ndarray) -> tuple[str, float, float] | None:
    if importlib.util.find_spec("torch") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "torch.npz")
        cmd = [
            sys.executable, os.path.abspath(__file__), "--worker-out", out, "--repeats",
            str(args.repeats), "--warmup", str(args.warmup), "--width", str(args.width),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"torch worker failed (exit {proc.returncode}):\n{proc.stderr}")
        with np.load(out) as data:
            t_vec, t_loop, jac, name = float(data["vec"]), float(data["loop"]), data["jac"], str(data["name"])
    np.testing.assert_allclose(jac, reference, rtol=1e-10, atol=1e-12, err_msg="torch and aiograd Jacobians differ")
    return name, t_vec, t_loop


# ------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed calls (default 15)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    parser.add_argument("--width", type=int, default=256, help="input, hidden and output size (default 256)")
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker_out:
        torch_worker(args)
        return

    times, jac = bench_aiograd(args)
    torch_result = bench_torch(args, jac)

    print(f"jacobian of a {args.width} -> {args.width} -> {args.width} tanh MLP, float64 "
          f"(median of {args.repeats}; Python {platform.python_version()}, numpy {np.__version__})")
    print(f"{'':34}{'ms':>10}")
    print(f"{'aiograd vectorize=True':34}{times['vectorized'] * 1e3:10.2f}")
    print(f"{'aiograd loop (vectorize=False)':34}{times['loop'] * 1e3:10.2f}")
    speedup = times["loop"] / times["vectorized"]
    ok = speedup >= LOOP_GOAL
    if torch_result is not None:
        name, t_vec, t_loop = torch_result
        print(f"{name + ' vectorize=True':34}{t_vec * 1e3:10.2f}")
        print(f"{name + ' loop':34}{t_loop * 1e3:10.2f}")
    print()
    print(f"vectorized vs loop: {speedup:.1f}x faster (goal >= {LOOP_GOAL:.0f}x); "
          f"largest difference {times['diff']:.1e}")
    if torch_result is not None:
        ratio = torch_result[1] / times["vectorized"]
        ok = ok and ratio >= TORCH_GOAL
        print(f"torch vectorized / aiograd vectorized: {ratio:.2f} (goal >= {TORCH_GOAL:.1f})")
    print("goal met" if ok else "goal NOT met")


if __name__ == "__main__":
    main()
