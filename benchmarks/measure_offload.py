"""Offload break-even: the thread round trip against the time of node math, on this machine.

The engine sends a node to its device's executor only when ``Node.cost(buffer)``, an estimate of
the node's numpy work in nanoseconds, exceeds ``Engine.offload_threshold``. This script measures
the two sides of that trade and recommends the threshold:

1. **Round trip** of ``ThreadExecutor.submit`` of a no-op function awaited from a running loop
   (``aiograd.run``'s loop: uvloop when installed, and plain asyncio): latency of one call at a
   time (median, p10, p90), and, with ``capacity`` calls kept in flight, the wall time per call
   and the CPU time the loop's own thread spends per call (``time.thread_time``).
2. **Elementwise node math** as a function of size, 1e2 to 1e7 elements, float64 and float32:
   ``g * y`` (MulBackward's shape of work) and ``g * (1 - y * y)`` (TanhBackward's: three ufunc
   calls, two temporaries). Each call allocates its result, as a node does. Fitted as
   ``t = t0 + c * n`` (least squares on the relative error), giving ns per element.
3. **Matmuls**, float64 and float32, for several ``(m, k, n)``, including the transposed operands
   that MmBackward0 passes (``g @ b.T``, ``a.T @ g``). Fitted as ``t = t0 + c * 2mkn``: ns per flop.
4. **Two threads at once**: per-call time of the same node math called back to back by one pool
   thread, and by two at once: what two threads can gain at most on it, with no engine between.

Then the break-even, the round trip in the cost's units (ns), and the recommended threshold:
twice the round trip, rounded up to two significant digits, so that an offloaded node at the
threshold spends at most a third of its latency on the trip.

Timing: ``time.perf_counter_ns``; each figure is the median of several repeats of a loop that runs
long enough (>= 2 ms) for the clock; the garbage collector is off while timing. BLAS threads come
from the environment (``run_all.py --threads 1`` sets them before numpy loads); the count in use is
printed, since it changes the matmul figures.

    python benchmarks/measure_offload.py [--json out.json] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
from aiograd.executors import ThreadExecutor  # noqa: E402

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
DTYPES = (np.float64, np.float32)
SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000)
MATMULS = (
    # (m, k, n, layout): "nn" a @ b, "nt" a @ b.T, "tn" a.T @ b (the layouts MmBackward0 uses)
    (16, 16, 16, "nn"),
    (32, 32, 32, "nn"),
    (64, 64, 64, "nn"),
    (128, 128, 128, "nn"),
    (256, 256, 256, "nn"),
    (512, 512, 512, "nn"),
    (256, 512, 64, "nn"),
    (256, 64, 512, "nt"),   # bench_branches: g @ V.T
    (512, 256, 64, "tn"),   # bench_branches: tanh_out.T @ g
    (512, 256, 512, "tn"),  # bench_branches: X.T @ g
    (1024, 1024, 1024, "nn"),
)


def blas_threads() -> int | None:
    """How many threads numpy's BLAS uses (threadpoolctl, or OpenBLAS as bundled with numpy)."""
    from bench_mlp import blas_threads as probe

    return probe()


# ------------------------------------------------------------------------------------- timing
def time_ns(fn: Callable[[], Any], *, repeats: int = 7, min_ns: float = 2e6) -> float:
    """Median ns per call of ``fn()``, over ``repeats`` loops of at least ``min_ns`` each."""
    fn()
    t0 = time.perf_counter_ns()
    fn()
    once = max(time.perf_counter_ns() - t0, 1)
    number = max(1, int(min_ns / once))
    samples = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter_ns() - t0) / number)
    finally:
        gc.enable()
    return statistics.median(samples)


def faults_per_call(fn: Callable[[], Any], calls: int = 5) -> float:
    """Minor page faults per call of ``fn()`` (after one warmup call)."""
    fn()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def page_fault_ns() -> float:
    """ns per first touch of a 4 KiB page of fresh anonymous memory (the kernel maps and zeroes
    it): one byte written per page of a new 8 MiB mmap, huge pages off. Median of 7."""
    import mmap

    size = 8 << 20
    samples = []
    for _ in range(7):
        m = mmap.mmap(-1, size)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):
            m.madvise(mmap.MADV_NOHUGEPAGE)
        pages = np.frombuffer(m, dtype=np.uint8)
        t0 = time.perf_counter_ns()
        pages[::4096] = 1
        samples.append((time.perf_counter_ns() - t0) / (size // 4096))
        del pages
        m.close()
    return statistics.median(samples)


def fit(xs: list[float], ts: list[float]) -> tuple[float, float, float]:
    """``t = t0 + c * x`` minimising the relative error; returns (t0, c, worst relative error)."""
    x = np.asarray(xs, float)
    t = np.asarray(ts, float)
    a = np.stack([1.0 / t, x / t], axis=1)
    (t0, c), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    worst = float(np.max(np.abs((t0 + c * x) / t - 1.0)))
    return float(t0), float(c), worst


def quantile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


# ------------------------------------------------------------------------------------- 1. round trip
async def round_trip(workers: int, calls: int, warmup: int) -> dict[str, float]:
    """Latency of one submit at a time, then throughput with ``workers`` calls in flight."""
    executor = ThreadExecutor(workers)
    noop = lambda: None  # noqa: E731
    try:
        for _ in range(warmup):
            await executor.submit(noop)
        samples = []
        perf = time.perf_counter_ns
        gc.collect()
        gc.disable()
        try:
            for _ in range(calls):
                t0 = perf()
                await executor.submit(noop)
                samples.append(perf() - t0)
        finally:
            gc.enable()
        samples.sort()

        # Pipelined: keep `capacity` in flight, as the engine's drain does with ready branches.
        capacity = executor.capacity
        in_flight: set[asyncio.Future[Any]] = set()
        gc.disable()
        try:
            cpu0, t0 = time.thread_time_ns(), perf()
            for _ in range(calls):
                if len(in_flight) >= capacity:
                    done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                in_flight.add(executor.submit(noop))
            await asyncio.wait(in_flight)
            wall, cpu = perf() - t0, time.thread_time_ns() - cpu0
        finally:
            gc.enable()
    finally:
        executor.close()
    return {
        "median_ns": statistics.median(samples),
        "p10_ns": quantile(samples, 0.10),
        "p90_ns": quantile(samples, 0.90),
        "pipelined_wall_ns": wall / calls,
        "pipelined_loop_cpu_ns": cpu / calls,
    }


def measure_round_trips(calls: int, warmup: int) -> list[tuple[str, dict[str, float]]]:
    loop_name = "uvloop" if _has_uvloop() else "asyncio"
    rows = [(f"aiograd.run ({loop_name}), 2 workers", aiograd.run(round_trip(2, calls, warmup)))]
    if loop_name == "uvloop":
        rows.append(("asyncio.run (asyncio), 2 workers", asyncio.run(round_trip(2, calls, warmup))))
    rows.append((f"aiograd.run ({loop_name}), 4 workers", aiograd.run(round_trip(4, calls, warmup))))
    return rows


# ------------------------------------------------------------------------------------- 2. elementwise
def elementwise_ops(n: int, dtype: Any) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    g = rng.standard_normal(n).astype(dtype)
    y = np.tanh(rng.standard_normal(n)).astype(dtype)
    return {
        "mul  g * y": lambda: g * y,
        "tanh g * (1 - y*y)": lambda: g * (1.0 - y * y),
    }


def measure_elementwise(
    sizes: tuple[int, ...], repeats: int
) -> tuple[dict[tuple[str, str], list[float]], dict[tuple[str, str], list[float]]]:
    """ns per call and page faults per call, by (op, dtype), in the order of ``sizes``."""
    out: dict[tuple[str, str], list[float]] = {}
    faults: dict[tuple[str, str], list[float]] = {}
    for dtype in DTYPES:
        for n in sizes:
            for name, fn in elementwise_ops(n, dtype).items():
                key = (name, np.dtype(dtype).name)
                out.setdefault(key, []).append(time_ns(fn, repeats=repeats))
                faults.setdefault(key, []).append(faults_per_call(fn))
    return out, faults


# ------------------------------------------------------------------------------------- 3. matmul
def matmul_fn(m: int, k: int, n: int, layout: str, dtype: Any) -> Callable[[], Any]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m) if layout == "tn" else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if layout == "nt" else (k, n)).astype(dtype)
    if layout == "tn":
        return lambda: a.T @ b
    if layout == "nt":
        return lambda: a @ b.T
    return lambda: a @ b


def measure_matmuls(shapes: tuple[tuple[int, int, int, str], ...], repeats: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for dtype in DTYPES:
        out[np.dtype(dtype).name] = [
            time_ns(matmul_fn(m, k, n, layout, dtype), repeats=repeats) for m, k, n, layout in shapes
        ]
    return out


# ------------------------------------------------------------------------------------- 4. two at once
def parallel_speedup(fn: Callable[[], Any], rounds: int = 5) -> tuple[float, float]:
    """(ns per call with one pool thread calling ``fn`` back to back, ns per call with two pool
    threads doing so at once), medians over ``rounds``: the most that two threads can gain on
    this node math, with no engine and no thread going idle between calls."""
    calls = max(2, int(20e6 / time_ns(fn, repeats=3)))  # about 20 ms per thread and block
    pool = ThreadPoolExecutor(2)

    def block(n: int) -> None:
        for _ in range(n):
            fn()

    try:
        for f in [pool.submit(block, 1), pool.submit(block, 1)]:  # start both threads
            f.result()
        one, two = [], []
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            pool.submit(block, 2 * calls).result()
            one.append((time.perf_counter_ns() - t0) / (2 * calls))
            t0 = time.perf_counter_ns()
            for f in [pool.submit(block, calls), pool.submit(block, calls)]:
                f.result()
            two.append((time.perf_counter_ns() - t0) / (2 * calls))
    finally:
        pool.shutdown()
    return statistics.median(one), statistics.median(two)


# ------------------------------------------------------------------------------------- report
def fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def round_up(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant digits."""
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / scale) * scale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--quick", action="store_true", help="fewer samples (a rough look)")
    args = parser.parse_args()
    from bench_branches import CpuWatch

    with CpuWatch() as watch:
        measure(args)
    print(f"  ({watch.note()})")


def measure(args: argparse.Namespace) -> None:
    calls, warmup, repeats = (500, 100, 3) if args.quick else (3000, 300, 7)
    gc.freeze()

    threads = blas_threads()
    env = ", ".join(f"{k}={os.environ[k]}" for k in THREAD_VARS if k in os.environ)
    print("measure_offload: thread round trip vs node math, for Engine.offload_threshold")
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs; "
        f"numpy BLAS threads: {threads if threads else 'unknown'}{' (' + env + ')' if env else ''}"
    )
    print()

    # ---- 1
    trips = measure_round_trips(calls, warmup)
    print(f"1. ThreadExecutor.submit(no-op) awaited from the loop ({calls} calls after {warmup} warmup)")
    header = f"{'loop, pool':<36}{'median':>10}{'p10':>10}{'p90':>10}{'pipelined':>11}{'loop CPU':>10}"
    print(header)
    print("-" * len(header))
    for label, r in trips:
        print(
            f"{label:<36}{fmt_ns(r['median_ns']):>10}{fmt_ns(r['p10_ns']):>10}{fmt_ns(r['p90_ns']):>10}"
            f"{fmt_ns(r['pipelined_wall_ns']):>11}{fmt_ns(r['pipelined_loop_cpu_ns']):>10}"
        )
    print("(pipelined: wall time per call with `capacity` calls kept in flight; loop CPU: the loop")
    print(" thread's own CPU time per call in that run)")
    print()

    # ---- 2
    ew, ew_faults = measure_elementwise(SIZES, repeats)
    fault_ns = page_fault_ns()
    print("2. Elementwise node math: ns per element (call time / n); each call allocates its result")
    names = list(ew)
    f64 = [k for k in names if k[1] == "float64"]
    header = (f"{'n':>10}" + "".join(f"{f'{op.split()[0]} {dt}':>14}" for op, dt in names)
              + "".join(f"{f'faults {op.split()[0]}64':>14}" for op, _ in f64))
    print(header)
    print("-" * len(header))
    for i, n in enumerate(SIZES):
        print(f"{n:>10}" + "".join(f"{ew[key][i] / n:>14.3f}" for key in names)
              + "".join(f"{ew_faults[key][i]:>14.0f}" for key in f64))
    fits_ew = {key: fit([float(n) for n in SIZES], ew[key]) for key in names}
    print("-" * len(header))
    print(f"{'fit c':>10}" + "".join(f"{fits_ew[k][1]:>14.3f}" for k in names) + "   ns/element")
    print(f"{'fit t0':>10}" + "".join(f"{fits_ew[k][0]:>14.0f}" for k in names) + "   ns/call")
    print(f"{'worst err':>10}" + "".join(f"{fits_ew[k][2]:>13.0%} " for k in names))
    print("(mul: g * y; tanh: g * (1 - y*y), TanhBackward0's three ufunc calls; faults: minor page")
    print(f" faults per call, float64. A page fault costs {fault_ns / 1e3:.2f} us here: first touch of a")
    print(" 4 KiB page of memory that malloc took from the OS, which glibc does for blocks above its")
    print(" mmap threshold and hands back when they are freed, so the next call faults them in again)")
    print()

    # ---- 3
    mm = measure_matmuls(MATMULS, repeats)
    flops = [2.0 * m * k * n for m, k, n, _ in MATMULS]
    print("3. Matmuls: time and ns per flop (flop = 2*m*k*n); nt = a @ b.T, tn = a.T @ b")
    header = f"{'m x k x n':>18}{'':>4}" + "".join(f"{dt + ' time':>14}{'ns/flop':>10}" for dt in mm)
    print(header)
    print("-" * len(header))
    for i, (m, k, n, layout) in enumerate(MATMULS):
        row = f"{f'{m} x {k} x {n}':>18}{layout:>4}"
        for dt in mm:
            row += f"{fmt_ns(mm[dt][i]):>14}{mm[dt][i] / flops[i]:>10.4f}"
        print(row)
    fits_mm = {dt: fit(flops, mm[dt]) for dt in mm}
    print("-" * len(header))
    print(f"{'fit':>22}" + "".join(
        f"{'t0 ' + fmt_ns(fits_mm[dt][0]):>14}{fits_mm[dt][1]:>10.4f}" for dt in mm
    ) + "   (c in ns/flop)")
    print(f"{'worst err':>22}" + "".join(f"{'':>14}{fits_mm[dt][2]:>10.0%}" for dt in mm))
    print()

    # ---- 4
    print("4. Node math on two pool threads at once vs on one (float64; ns per call, calls back to back)")
    cases = [
        ("tanh-backward, 1e5 elements", elementwise_ops(100_000, np.float64)["tanh g * (1 - y*y)"]),
        ("tanh-backward, 1e6 elements", elementwise_ops(1_000_000, np.float64)["tanh g * (1 - y*y)"]),
        ("matmul 128 x 128 x 128", matmul_fn(128, 128, 128, "nn", np.float64)),
        ("matmul 512 x 256 x 512 tn", matmul_fn(512, 256, 512, "tn", np.float64)),
    ]
    header = f"{'node math':<30}{'1 thread':>12}{'2 threads':>12}{'speedup':>9}"
    print(header)
    print("-" * len(header))
    speedups = {}
    for label, fn in cases:
        serial, both = parallel_speedup(fn, rounds=3 if args.quick else 9)
        speedups[label] = serial / both
        print(f"{label:<30}{fmt_ns(serial):>12}{fmt_ns(both):>12}{serial / both:>9.2f}")
    print()

    # ---- summary
    rt = trips[0][1]["median_ns"]
    threshold = round_up(2 * rt)
    c_ew = fits_ew[("tanh g * (1 - y*y)", "float64")][1]
    c_mul = fits_ew[("mul  g * y", "float64")][1]
    c64, c32 = fits_mm["float64"][1], fits_mm["float32"][1]
    print("Summary (costs in Node.cost's units: estimated ns of numpy work)")
    print(f"  round trip (median, {trips[0][0]}): {rt:,.0f} ns  = break-even cost")
    print(f"  recommended offload_threshold: 2 x round trip, rounded up = {threshold:,.0f} ns")
    print(f"  float64 elementwise: {c_mul:.3f} ns/element (mul), {c_ew:.3f} ns/element (tanh backward)")
    print(f"  matmul: {c64:.4f} ns/flop float64, {c32:.4f} ns/flop float32")
    print("  what crosses the threshold:")
    print(f"    mul node         > {threshold / c_mul:,.0f} float64 elements")
    print(f"    tanh-backward    > {threshold / c_ew:,.0f} float64 elements")
    side64 = (threshold / c64 / 2) ** (1 / 3)
    side32 = (threshold / c32 / 2) ** (1 / 3)
    print(f"    one matmul       > {threshold / c64 / 2:,.0f} m*k*n float64 (about {side64:.0f}^3), "
          f"{threshold / c32 / 2:,.0f} float32 (about {side32:.0f}^3)")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "blas_threads": threads,
                "round_trip": {label: r for label, r in trips},
                "elementwise_sizes": SIZES,
                "elementwise_ns": {f"{op} {dt}": v for (op, dt), v in ew.items()},
                "elementwise_fit": {f"{op} {dt}": v for (op, dt), v in fits_ew.items()},
                "matmul_shapes": MATMULS,
                "matmul_ns": mm,
                "matmul_fit": fits_mm,
                "parallel_speedup": speedups,
                "page_fault_ns": fault_ns,
                "elementwise_faults": {f"{op} {dt}": v for (op, dt), v in ew_faults.items()},
                "break_even_ns": rt,
                "recommended_threshold_ns": threshold,
            }, f, indent=1)


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
