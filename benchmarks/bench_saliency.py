"""Serving-side concurrency: 64 saliency requests on one event loop, concurrent against one after
another, batched through ``aiograd.serving.batch``, and against torch sequentially, on a 2-thread
pool and batched by hand.

Model: a fixed MLP 32-128-128-1, tanh, float32 (``--dtype float64``), weights laid out as torch's
(out, in) with ``torch.nn.Linear``'s default init; the parameters do not require grad (a frozen,
served model; ``--params-grad`` makes them require it). ``--requests`` (64) requests, each with an
input batch of its own, (``--batch`` 8, 32). A request is the forward from an input that requires
grad and the gradient of the summed output with respect to that input (the saliency):

    x = tensor(batch, requires_grad=True);  (g,) = await aiograd.grad(mlp(x).sum(), x)

Implementations, each timed in fresh worker processes of its own (this script with ``--worker``):

- aiograd sequential: the requests awaited one after another on one loop;
- aiograd concurrent: ``asyncio.gather`` of the requests on one loop;
  both with the library's default executor (a ThreadExecutor: these nodes are far below its offload
  threshold, so nothing leaves the loop, but the engine estimates each node's cost to decide);
- both again with ``InlineExecutor()`` (no estimates), and concurrent with ``ThreadExecutor(2)``
  and ``offload_threshold`` and ``stall_threshold`` at 0 (every node's math sent to the pool),
  set with ``aiograd.set_executor("cpu", ...)``;
- torch sequential: ``torch.autograd.grad`` request after request;
- torch on ``concurrent.futures.ThreadPoolExecutor(2)``: ``pool.map`` of the requests;
- aiograd batched: the requests are concurrent callers (``asyncio.gather``) of a function
  decorated with ``aiograd.serving.batch(max_batch_size=64, batch_wait_timeout_s=0)``
  (``--max-batch-size``, ``--batch-wait-ms``) whose body is ``serving.per_request_grad`` of the
  same MLP: the batcher gathers them (all 64 call in one loop turn, so they go as one batch; its
  ``statistics()`` are reported) into one forward and one backward, and hands each caller its own
  gradient;
- torch batched by hand: the inputs joined with ``torch.cat``, one forward, one
  ``torch.autograd.grad`` of the sum, ``torch.split`` back: the best a torch user does by hand;
- for reference, not a goal: aiograd with the requests coalesced into one batch by hand
  (concatenated, one forward, one ``grad``, split back), with no callers to serve: the floor of
  the batched path. Batching is exact because the rows of the MLP do not interact.

torch runs with ``torch.set_num_threads(1)`` (``--torch-threads``): ops this small gain nothing
from its intra-op pool (2 threads made torch sequential about 10% slower on 2 cores), and the
2-thread pool is where this benchmark gives torch its parallelism.
The workers run with ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to 1
(``--blas-threads N``; 0 passes the environment through): the parallelism of a server is its
requests, and a multithreaded OpenBLAS on a busy 2-core machine took 16 ms instead of 1 ms for the
coalesced reference's forward (its threads spin waiting for a core).

The table's ``faults`` column counts minor page faults per batch (median): memory that malloc
took fresh from the OS. glibc's default thresholds give a batch of 512 rows (arrays of 256 KiB)
fresh pages batch after batch, hundreds of faults, a third of the batched path's time;
``--malloc-keep`` runs the workers with ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_``
fixed (``MALLOC_KEEP``), as a service would set them.

Correctness first: in this process, before anything is timed, every implementation computes the
saliencies of all requests, and they must agree with a hand-written numpy float64 backward and so
with each other (rtol 1e-4 in float32, 1e-9 in float64).

Timed: one batch of all requests, from its start until the last request completes, the garbage
collector collected before and off during it (``_timing.Timer``); each request's own completion
time from the batch start is recorded too (its latency if all arrived at once). Each worker runs
``--warmup`` untimed and ``--repeats`` timed batches; ``--rounds`` rounds take the implementations
in turn. Reported: the median batch time over all rounds and per request, the spread of the
workers' medians (a fresh process can land a few percent faster or slower), the medians over
batches of the p50 and p99 completion times, and ratios. A worker run during which other
processes took more than 10% of a core is run again (``--retries``). Then a breakdown of one
request's time by timing probes (``--no-breakdown`` skips it; ``--cprofile`` adds cProfile's top
functions). ``--only KEY[,KEY]`` times a subset (the keys are ``IMPLEMENTATIONS``'s).

Then two measurements of the batcher, each in a worker of its own (``--no-batcher-probes`` skips
them): what the batched path adds to coalescing by hand, by probes (the body called directly,
``asyncio.gather`` of no-op coroutines, callers through a batcher whose function returns its
items); and latency at low load: ``--latency-requests`` (500) requests one at a time, each alone,
through ``serving.batch(batch_wait_timeout_s=0.005)`` against the same body called directly
(median and p99), since a lone request must not wait the timeout (the batcher's policy: a call
that finds it idle is dispatched on the next loop turn); and pairs of callers whose second calls
one loop turn after the first, once the first's batch is dispatched.

Goals (issue "Serving-side concurrency"): aiograd concurrent faster than aiograd sequential, and
faster than torch with threads. "Faster" here means by at least 3%: a smaller difference is within
this benchmark's run-to-run spread on a 2-core machine, and is reported as a tie. Issue "Make
concurrency pay": aiograd batched (through ``serving.batch``) at least 4x faster than torch
sequential (met at 4.00x; within 3% below, said so); printed with it, aiograd batched against
aiograd sequential, against coalescing by hand (the batcher's and its callers' overhead) and
against torch batched by hand.

    python benchmarks/bench_saliency.py [--rounds 4] [--repeats 20] [--warmup 5] [--dtype float32]
                                        [--requests 64] [--batch 8] [--params-grad]
                                        [--nodes-per-turn N] [--torch-threads 1] [--blas-threads 1]
                                        [--max-batch-size 64] [--batch-wait-ms 0]
                                        [--only KEY[,KEY]] [--latency-requests 500]
                                        [--malloc-keep] [--no-batcher-probes] [--no-breakdown]
                                        [--cprofile]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from _saliency_model import (
    SIZES,
    aiograd_batch,
    aiograd_batched_request,
    aiograd_request,
    make_data,
    minor_faults,
    numpy_saliency,
    torch_request,
)
from _saliency_probes import (
    batch_overhead,
    breakdown_aiograd,
    breakdown_torch,
    cprofile_aiograd,
    latency_aiograd,
    print_latency,
)
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402

#: Faster by less than this is a tie (the run-to-run spread on a shared 2-core machine).
MARGIN = 0.03

#: (key, label)
IMPLEMENTATIONS = (
    ("ag_seq", "aiograd sequential"),
    ("ag_gather", "aiograd concurrent (gather)"),
    ("ag_seq_inline", "aiograd sequential, InlineExecutor"),
    ("ag_inline", "aiograd concurrent, InlineExecutor"),
    ("ag_offload", "aiograd concurrent, ThreadExecutor(2), all offloaded"),
    ("torch_seq", "torch sequential"),
    ("torch_pool", "torch, ThreadPoolExecutor(2)"),
    ("ag_batched", "aiograd concurrent through aiograd.serving.batch"),
    ("ag_batched_keep", "  the same, glibc malloc keeping freed pages"),
    ("torch_batched", "torch batched by hand"),
    ("ag_coalesced", "ref: aiograd, coalesced into one batch"),
)
TORCH_KEYS = ("torch_seq", "torch_pool", "torch_batched")
#: The batched path, and the same with glibc's malloc thresholds fixed (``MALLOC_KEEP``) in its
#: worker only: both figures in every run, so the page faults' share is always visible.
BATCHED_KEYS = ("ag_batched", "ag_batched_keep")
#: The goal for the batched path: at least this many times faster than torch sequential.
BATCHED_GOAL = 4.0
#: What running an implementation gives: batch times, completion times per batch, the last
#: batch's saliencies, notes.
Result = tuple[list[float], list[list[float]], list[np.ndarray], dict[str, Any]]


# ------------------------------------------------------------------------------------- aiograd




def configure_aiograd(key: str, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """Set the executor for ``key`` (on the running loop's engine); returns it (to close) and notes."""
    from aiograd.executors import InlineExecutor, ThreadExecutor

    executor = None
    if key in ("ag_inline", "ag_seq_inline"):
        executor = InlineExecutor()
    elif key == "ag_offload":
        executor = ThreadExecutor(2)
    if executor is not None:
        aiograd.set_executor("cpu", executor)
    engine = aiograd.get_engine()
    if key == "ag_offload":
        engine.offload_threshold = 0.0  # every node, even one with nothing to overlap with
        engine.stall_threshold = 0.0
    if args.nodes_per_turn is not None:
        if not hasattr(engine, "nodes_per_turn"):
            raise SystemExit("--nodes-per-turn: this aiograd's engine has no nodes_per_turn")
        engine.nodes_per_turn = args.nodes_per_turn or None
    notes = {
        "executor": repr(engine.executor("cpu")),
        "offload_threshold": engine.offload_threshold,
        "nodes_per_turn": getattr(engine, "nodes_per_turn", "n/a (no fairness policy)"),
        "loop": type(asyncio.get_running_loop()).__module__.split(".")[0],
    }
    return executor, notes




def run_aiograd(key: str, args: argparse.Namespace, params: list[np.ndarray], xs: list[np.ndarray],
                batches: int, warmup: int) -> Result:
    async def main() -> Any:
        executor, notes = configure_aiograd(key, args)
        if key in BATCHED_KEYS:
            request, _ = aiograd_batched_request(params, args.params_grad, args)
        else:
            request = aiograd_request(params, args.params_grad)
        engine = aiograd.get_engine()
        totals, dones, results = [], [], []
        executed = offloaded = 0
        batched = key in BATCHED_KEYS
        calls = []  # the batcher's batches (calls of its function) in each timed batch
        faults = []
        for b in range(warmup + batches):
            done = [0.0] * len(xs)
            before = engine.statistics()
            calls_before = request.statistics().batches if batched else 0
            faults_before = minor_faults()
            with Timer() as t:
                results = await aiograd_batch(key, request, xs, done, t.start)
            faults_after = minor_faults()
            after = engine.statistics()
            executed = after.nodes_executed - before.nodes_executed
            offloaded = after.nodes_offloaded - before.nodes_offloaded
            if b >= warmup:
                totals.append(t.seconds)
                dones.append(done)
                faults.append(faults_after - faults_before)
                if batched:
                    calls.append(request.statistics().batches - calls_before)
        notes.update(nodes_per_batch=executed, offloaded_per_batch=offloaded,
                     faults_per_batch=statistics.median(faults) if faults else 0)
        if batched:
            st = request.statistics()
            notes["batcher"] = {
                "calls_per_batch": sorted(set(calls)),
                "mean_batch_size": st.mean_batch_size,
                "max_batch_size": st.max_batch_size,
                "mean_queue_wait_us": st.mean_queue_wait_s * 1e6,
                "max_queue_wait_us": st.max_queue_wait_s * 1e6,
                "config": f"max_batch_size={args.max_batch_size}, "
                          f"batch_wait_timeout_s={args.batch_wait_ms / 1e3:g}",
            }
        if executor is not None:
            aiograd.set_executor("cpu", None)
            executor.close()
        return totals, dones, results, notes

    return aiograd.run(main())


# ------------------------------------------------------------------------------------- torch


def torch_batched(params: list[np.ndarray], requires_grad: bool
                  ) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
    """``saliencies(batches)``: all requests batched by hand, the best a torch user does: the
    inputs concatenated (``torch.cat``), one forward, one ``torch.autograd.grad`` of the sum, the
    gradient split back per request (``torch.split``)."""
    import torch
    import torch.nn.functional as TF

    w1, b1, w2, b2, w3, b3 = (torch.tensor(p, requires_grad=requires_grad) for p in params)
    linear, grad = TF.linear, torch.autograd.grad

    def saliencies(batches: list[np.ndarray]) -> list[np.ndarray]:
        x = torch.cat([torch.from_numpy(b) for b in batches]).requires_grad_()
        h = linear(x, w1, b1).tanh()
        h = linear(h, w2, b2).tanh()
        (g,) = grad(linear(h, w3, b3).sum(), x)
        return [piece.numpy() for piece in torch.split(g, [len(b) for b in batches])]

    return saliencies


def run_torch(key: str, args: argparse.Namespace, params: list[np.ndarray], xs: list[np.ndarray],
              batches: int, warmup: int) -> Result:
    import torch

    torch.set_num_threads(args.torch_threads)
    request = torch_request(params, args.params_grad)
    batched = torch_batched(params, args.params_grad) if key == "torch_batched" else None
    pool = ThreadPoolExecutor(2) if key == "torch_pool" else None
    perf_counter = time.perf_counter
    totals, dones, results, faults = [], [], [], []
    for b in range(warmup + batches):
        done = [0.0] * len(xs)
        faults_before = minor_faults()
        with Timer() as t:
            start = t.start
            if batched is not None:
                results = batched(xs)
                done[:] = [perf_counter() - start] * len(xs)
            elif pool is None:
                results = []
                for i, x in enumerate(xs):
                    results.append(request(x))
                    done[i] = perf_counter() - start
            else:
                def timed(i: int, start: float = start, done: list[float] = done) -> np.ndarray:
                    g = request(xs[i])
                    done[i] = perf_counter() - start
                    return g

                results = list(pool.map(timed, range(len(xs))))
        faults_after = minor_faults()
        if b >= warmup:
            totals.append(t.seconds)
            dones.append(done)
            faults.append(faults_after - faults_before)
    if pool is not None:
        pool.shutdown()
    version = torch.__version__.split("+")[0]
    return totals, dones, results, {
        "torch": version, "torch_threads": torch.get_num_threads(),
        "faults_per_batch": statistics.median(faults) if faults else 0,
    }


def run_impl(key: str, args: argparse.Namespace, params: list[np.ndarray], xs: list[np.ndarray],
             batches: int, warmup: int) -> Result:
    if key in TORCH_KEYS:
        return run_torch(key, args, params, xs, batches, warmup)
    return run_aiograd(key, args, params, xs, batches, warmup)


# ------------------------------------------------------------------------------------- worker
def worker(args: argparse.Namespace) -> None:
    """Time one implementation in this process (or run the breakdown); print JSON."""
    import gc

    key = args.worker
    if key in TORCH_KEYS or key == "breakdown_torch":
        import torch  # noqa: F401  (before the freeze: its import leaves a large heap)
    gc.collect()
    gc.freeze()  # the imports' objects: keep them out of the collections (Timer collects)
    if key == "breakdown_aiograd":
        print(json.dumps(breakdown_aiograd(args)))
        return
    if key == "breakdown_torch":
        print(json.dumps(breakdown_torch(args)))
        return
    if key == "cprofile":
        print(json.dumps(cprofile_aiograd(args)))
        return
    if key == "latency":
        print(json.dumps(latency_aiograd(args)))
        return
    if key == "batch_overhead":
        print(json.dumps(batch_overhead(args)))
        return
    params, xs = make_data(args)
    totals, dones, _, notes = run_impl(key, args, params, xs, args.repeats, args.warmup)
    from bench_mlp import blas_threads

    notes["blas_threads"] = blas_threads()
    print(json.dumps({"totals": totals, "dones": dones, "notes": notes}))


# ------------------------------------------------------------------------------------- driver
def worker_cmd(key: str, args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", key, "--dtype", args.dtype,
           "--requests", str(args.requests), "--batch", str(args.batch),
           "--warmup", str(args.warmup), "--repeats", str(args.repeats),
           "--torch-threads", str(args.torch_threads),
           "--max-batch-size", str(args.max_batch_size), "--batch-wait-ms", str(args.batch_wait_ms),
           "--latency-requests", str(args.latency_requests)]
    if args.params_grad:
        cmd.append("--params-grad")
    if args.nodes_per_turn is not None:
        cmd += ["--nodes-per-turn", str(args.nodes_per_turn)]
    return cmd


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: ``--malloc-keep``: glibc's malloc with fixed thresholds (setting them turns its dynamic
#: adjustment off): blocks up to 32 MiB come from the heap, not a fresh mmap, and the heap's top is
#: returned to the OS only past 256 MiB free. By default a batch's arrays of 512 x 128 float32
#: (256 KiB) are page-faulted in anew batch after batch (the heap's free top passes the trim
#: threshold and is given back), which cost the batched paths 30-40% here.
MALLOC_KEEP = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


def run_worker(key: str, args: argparse.Namespace) -> Any:
    env = dict(os.environ)
    if args.blas_threads:
        env.update(dict.fromkeys(THREAD_VARS, str(args.blas_threads)))
    if args.malloc_keep or key == "ag_batched_keep":
        env.update(MALLOC_KEEP)
    proc = subprocess.run(worker_cmd(key, args), capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"worker {key} failed (exit {proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_saliencies(keys: list[str], args: argparse.Namespace) -> None:
    """Every implementation's saliencies against the hand-written float64 ones, so against each other."""
    params, xs = make_data(args)
    p64 = [p.astype(np.float64) for p in params]
    ref = [numpy_saliency(p64, x.astype(np.float64))[1] for x in xs]
    rtol = 1e-4 if args.dtype == "float32" else 1e-9
    scale = max(float(np.abs(r).max()) for r in ref)
    for key in keys:
        _, _, results, _ = run_impl(key, args, params, xs, batches=1, warmup=0)
        assert len(results) == len(xs), (key, len(results))
        for i, (g, r) in enumerate(zip(results, ref)):
            assert g.dtype == np.dtype(args.dtype), f"{key}: request {i}'s saliency is {g.dtype}"
            np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol * scale,
                                       err_msg=f"{key}: saliency of request {i}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20, help="timed batches per worker")
    parser.add_argument("--warmup", type=int, default=5, help="untimed batches per worker")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8, help="rows per request")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--params-grad", action="store_true",
                        help="the parameters require grad (grad() is still taken only for x)")
    parser.add_argument("--nodes-per-turn", type=int, metavar="N",
                        help="Engine.nodes_per_turn for aiograd (0: never yield)")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="OMP/OPENBLAS/MKL_NUM_THREADS for the workers (0: the environment's)")
    parser.add_argument("--malloc-keep", action="store_true",
                        help="the workers' glibc malloc keeps freed memory (MALLOC_MMAP_THRESHOLD_ "
                             "32 MiB, MALLOC_TRIM_THRESHOLD_ 256 MiB) instead of mmapping and "
                             "returning large blocks")
    parser.add_argument("--retries", type=int, default=1,
                        help="reruns of a worker during which other processes were busy")
    parser.add_argument("--max-batch-size", type=int, default=64,
                        help="serving.batch's max_batch_size for ag_batched")
    parser.add_argument("--batch-wait-ms", type=float, default=0.0,
                        help="serving.batch's batch_wait_timeout_s for ag_batched, in ms")
    parser.add_argument("--only", metavar="KEY[,KEY]",
                        help="time only these implementations: "
                             + ", ".join(k for k, _ in IMPLEMENTATIONS))
    parser.add_argument("--latency-requests", type=int, default=500,
                        help="requests one at a time in the low-load latency measurement")
    parser.add_argument("--no-batcher-probes", action="store_true",
                        help="skip the batched path's overhead probes and low-load latency")
    parser.add_argument("--no-breakdown", action="store_true", help="skip the per-request breakdown")
    parser.add_argument("--cprofile", action="store_true", help="also print cProfile's top functions")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    from bench_branches import BUSY, CpuWatch, run_quiet

    began = time.perf_counter()

    keys = [k for k, _ in IMPLEMENTATIONS]
    labels = dict(IMPLEMENTATIONS)
    if args.only:
        only = [k.strip() for k in args.only.split(",") if k.strip()]
        unknown = [k for k in only if k not in labels]
        if unknown:
            parser.error(f"--only: unknown {', '.join(unknown)} (choose from {', '.join(keys)})")
        keys = [k for k in keys if k in only]
    try:
        import torch  # noqa: F401
    except ImportError:
        keys = [k for k in keys if k not in TORCH_KEYS]
        torch_note = "torch: not installed, skipped"
    else:
        torch_note = f"torch intra-op threads: {args.torch_threads} (torch.set_num_threads)"

    print(
        f"saliency: {args.requests} requests, each forward + grad(out.sum(), x) of an MLP "
        f"{'-'.join(map(str, SIZES))} (tanh) on its own input ({args.batch}, {SIZES[0]}), "
        f"{args.dtype}; parameters {'require' if args.params_grad else 'do not require'} grad"
    )
    check_saliencies(keys, args)
    print(f"saliencies of all {len(keys)} implementations checked against a hand-written numpy "
          "float64 backward first")

    totals: dict[str, list[float]] = {k: [] for k in keys}
    per_worker: dict[str, list[float]] = {k: [] for k in keys}  # each worker's median
    dones: dict[str, list[list[float]]] = {k: [] for k in keys}
    faults_per_worker: dict[str, list[float]] = {k: [] for k in keys}
    notes: dict[str, dict[str, Any]] = {}
    worst, discarded = 0.0, 0
    load_before = os.getloadavg()
    with CpuWatch() as watch:
        for _ in range(args.rounds):
            for key in keys:
                out, share, n = run_quiet(lambda key=key: run_worker(key, args), args.retries)
                totals[key] += out["totals"]
                per_worker[key].append(statistics.median(out["totals"]))
                dones[key] += out["dones"]
                notes[key] = out["notes"]
                faults_per_worker[key].append(out["notes"]["faults_per_batch"])
                worst, discarded = max(worst, share), discarded + n
    load_after = os.getloadavg()

    ag_notes = notes.get("ag_gather") or next(
        (notes[k] for k in keys if k not in TORCH_KEYS), {"offload_threshold": 0.0})
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"{ag_notes.get('loop', '?')} loop; numpy BLAS threads: "
        f"{ag_notes.get('blas_threads') or 'unknown'}"
        f"{f' (OMP/OPENBLAS/MKL_NUM_THREADS={args.blas_threads})' if args.blas_threads else ''}; "
        f"{torch_note}; glibc malloc: "
        + (" ".join(f"{k}={v}" for k, v in MALLOC_KEEP.items()) if args.malloc_keep
           else "default thresholds (--malloc-keep to fix them)")
    )
    print(
        f"aiograd: default executor {ag_notes.get('executor')}, offload_threshold "
        f"{ag_notes.get('offload_threshold'):,.0f} ns, nodes_per_turn {ag_notes.get('nodes_per_turn')}"
        f"; {ag_notes.get('nodes_per_batch', 0) / args.requests:g} backward nodes per request"
    )
    print(
        f"median of {args.rounds} x {args.repeats} batches of {args.requests} requests, each "
        f"implementation in its own processes ({args.warmup} warmup batches each)"
    )
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; {watch.note()}")
    print(f"{discarded} worker runs discarded and rerun (others took over {BUSY:.0%} of a core); "
          f"in the runs kept, at most {worst:.0%}"
          f"{'  ** the machine was busy: figures are unreliable **' if worst > BUSY else ''}")
    print("spread: (slowest - fastest) of the workers' medians, over the median; p50, p99: each "
          "request's completion time from the batch start (median over batches); faults: minor "
          "page faults per batch (median; memory malloc took fresh from the OS); vs X: X's time / "
          "this one's (above 1: this one is faster)")
    print()
    med = {k: statistics.median(v) for k, v in totals.items()}
    faults = {k: statistics.median(v) for k, v in faults_per_worker.items()}
    p50 = {k: statistics.median(float(np.percentile(d, 50)) for d in v) for k, v in dones.items()}
    p99 = {k: statistics.median(float(np.percentile(d, 99)) for d in v) for k, v in dones.items()}
    header = (f"{'implementation':<52}{'total ms':>9}{'spread':>8}{'us/req':>8}{'p50 ms':>8}"
              f"{'p99 ms':>8}{'faults':>7}{'vs ag seq':>10}{'vs torch':>9}{'vs t pool':>10}")
    print(header)
    print("-" * len(header))
    for key in keys:
        label = labels[key]
        if key in TORCH_KEYS:
            label = f"{label} (torch {notes[key]['torch']}, {notes[key]['torch_threads']} thr)"

        def ratio(other: str, key: str = key) -> str:
            return f"{med[other] / med[key]:.2f}" if other in med else "-"

        spread = (max(per_worker[key]) - min(per_worker[key])) / med[key]
        print(f"{label:<52}{med[key] * 1e3:>9.2f}{spread:>8.0%}{med[key] / args.requests * 1e6:>8.1f}"
              f"{p50[key] * 1e3:>8.2f}{p99[key] * 1e3:>8.2f}{faults[key]:>7.0f}{ratio('ag_seq'):>10}"
              f"{ratio('torch_seq'):>9}{ratio('torch_pool'):>10}")
    print()

    def verdict(name: str, faster: str, slower: str, factor: float = 1.0) -> None:
        """``faster`` at least ``factor`` times as fast as ``slower``; for 1, only from MARGIN on
        (less is a tie); for a factor, met at the factor, and within MARGIN below it said so."""
        if faster not in med or slower not in med:
            print(f"goal: {name}: not measured")
            return
        r = med[slower] / med[faster]
        if r >= factor * (1 + MARGIN) or (factor > 1 and r >= factor):
            word = "met"
        elif r > factor * (1 - MARGIN):
            word = (f"NOT met (within {MARGIN:.0%} of {factor:g}x)" if factor > 1
                    else f"NOT met (a tie: within {MARGIN:.0%})")
        else:
            word = "NOT met (slower)" if factor == 1 else "NOT met"
        print(f"goal: {name}: {r:.2f}x {word}")

    if "ag_offload" in notes:
        n = notes["ag_offload"]
        print(f"offload all: {n.get('offloaded_per_batch')} of {n.get('nodes_per_batch')} backward "
              f"nodes per batch went to the pool")
    verdict("aiograd concurrent faster than aiograd sequential", "ag_gather", "ag_seq")
    if "ag_inline" in med and "ag_seq_inline" in med:
        print(f"      (with InlineExecutor for both: {med['ag_seq_inline'] / med['ag_inline']:.2f}x)")
    verdict("aiograd concurrent faster than torch with a 2-thread pool", "ag_gather", "torch_pool")
    if "ag_inline" in med and "torch_pool" in med:
        print(f"      (with InlineExecutor: {med['torch_pool'] / med['ag_inline']:.2f}x)")
    verdict(f"aiograd batched (serving.batch) at least {BATCHED_GOAL:g}x faster than torch "
            "sequential", "ag_batched", "torch_seq", BATCHED_GOAL)
    if not args.malloc_keep:
        verdict(f"the same, glibc malloc keeping freed pages (in that worker only), at least "
                f"{BATCHED_GOAL:g}x", "ag_batched_keep", "torch_seq", BATCHED_GOAL)
    if "ag_batched" in med:
        b = med["ag_batched"]
        for other, what in (("ag_seq", "aiograd sequential"),
                            ("ag_coalesced", "aiograd coalesced by hand (what the callers and "
                                             "the batcher add: {:+.1%})"),
                            ("torch_batched", "torch batched by hand")):
            if other in med:
                print(f"      aiograd batched: {med[other] / b:.2f}x {what.format(b / med[other] - 1)}")
        n = notes["ag_batched"]["batcher"]
        calls = n["calls_per_batch"]
        print(f"      the batcher ({n['config']}): {'/'.join(map(str, calls))} batch(es) per "
              f"{args.requests} requests, mean batch size {n['mean_batch_size']:.1f} (max "
              f"{n['max_batch_size']}), queue wait {n['mean_queue_wait_us']:.0f} us mean, "
              f"{n['max_queue_wait_us']:.0f} us max")
    if "ag_coalesced" in med and "ag_seq" in med:
        print(f"(reference: the same requests coalesced into one batch of {args.requests * args.batch} "
              f"rows: {med['ag_seq'] / med['ag_coalesced']:.1f}x aiograd sequential)")

    if not args.no_batcher_probes:
        print()
        probes = run_worker("batch_overhead", args)
        print(f"the batched path against coalescing by hand, by probes (us per {args.requests} "
              "requests, median of 50, interleaved in one process; and minor page faults):")
        for name, (us, n) in probes.items():
            print(f"  {name:<58}{us:>8.0f} us{n:>6.0f} faults")
        print()
        print_latency(run_worker("latency", args))

    if not args.no_breakdown:
        probes = run_worker("breakdown_aiograd", args)
        nodes = probes.pop("nodes per request")
        print()
        print(f"one request, by timing probes (us, median of 30 x {args.requests} requests, "
              f"sequential, one process per library; {nodes:g} backward nodes per request in aiograd):")
        for name, us in probes.items():
            print(f"  {name:<44}{us:>8.1f}")
        if any(k in TORCH_KEYS for k in keys):
            for name, us in run_worker("breakdown_torch", args).items():
                print(f"  {name:<44}{us:>8.1f}")
    if args.cprofile:
        print()
        print(run_worker("cprofile", args))
    print(f"\n(ran in {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
