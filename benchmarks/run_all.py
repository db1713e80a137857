"""Run every benchmark, each in its own Python process.

A fresh process per benchmark lets the BLAS thread count be set in the environment before numpy
(and torch) load, which is the only time OpenBLAS, MKL and OpenMP read it:

    python benchmarks/run_all.py               # the environment as it is
    python benchmarks/run_all.py --threads 1   # OMP/OPENBLAS/MKL_NUM_THREADS=1 for the children

The rest of the environment is passed through unchanged. ``bench_branches.py``,
``bench_responsiveness.py`` and ``bench_threads.py`` run both settings themselves (single-threaded
BLAS and default), each in subprocesses of their own, whatever ``--threads`` says. Exits non-zero if any benchmark fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = (
    "bench_engine.py",
    "bench_chain.py",
    "bench_mlp.py",
    "measure_offload.py",
    "bench_branches.py",
    "bench_responsiveness.py",
    "bench_threads.py",
    "bench_checkpoint.py",
    "bench_saliency.py",
    "bench_jacobian.py",
    "bench_models.py",
    "bench_fast_paths.py",
    "bench_cuda.py",  # prints "skipped: no CUDA GPU (...)" and exits 0 without CuPy or a GPU
    "bench_cuda_models.py",  # the same
    "bench_distributed.py",  # prints "skipped: ..." and exits 0 without distributed
)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def short(name: str) -> str:
    """``bench_chain.py`` -> ``chain``, ``measure_offload.py`` -> ``measure_offload``."""
    name = name.removesuffix(".py")
    return name.removeprefix("bench_")


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the aiograd benchmarks as subprocesses.")
    parser.add_argument(
        "--threads", type=int, metavar="N",
        help="set " + ", ".join(THREAD_VARS) + " to N for the benchmarks",
    )
    parser.add_argument(
        "--only", choices=[short(b) for b in BENCHMARKS], action="append",
        help="run only this benchmark (repeatable)",
    )
    args = parser.parse_args()

    env = dict(os.environ)
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        for var in THREAD_VARS:
            env[var] = str(args.threads)

    failed = []
    for name in BENCHMARKS:
        if args.only and short(name) not in args.only:
            continue
        print(f"==> {name}", flush=True)
        start = time.perf_counter()
        rc = subprocess.call([sys.executable, os.path.join(HERE, name)], env=env)
        print(f"<== {name}: {'ok' if rc == 0 else f'FAILED (exit {rc})'} "
              f"in {time.perf_counter() - start:.1f} s\n", flush=True)
        if rc != 0:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
