"""One SGD training step of an MLP, against the hand-written numpy floor.

Model: 784-256-256-10, ReLU, cross-entropy over class indices (mean over the batch), batch 64,
float32, weights laid out as torch's (out, in). A step is forward + backward + the update
``p -= lr * grad`` of all six parameters. Implementations:

- numpy (the floor): forward, manual backward with the fused softmax-cross-entropy gradient
  ``(softmax(z) - onehot(y)) / B``, the learning rate folded into that gradient so that every
  parameter gradient comes out already scaled, preallocated buffers (``out=``) and in-place
  updates. No framework can do less work than this.
- aiograd: ``aiograd.nn.functional`` linear/relu/cross_entropy, ``await loss.backward()``, then
  ``p.data -= lr * p.grad.data`` under ``aiograd.no_grad()`` and ``p.grad = None``.
- torch (if importable): ``torch.nn.functional``, ``loss.backward()``, ``p.sub_(p.grad,
  alpha=lr)`` under ``torch.no_grad()``, ``p.grad = None``. Its intra-op threads are set to
  numpy's BLAS thread count; if torch's default differs, it is timed at its default as well.
- autograd (HIPS, if importable): ``value_and_grad`` of the same loss written in
  ``autograd.numpy`` (log-sum-exp cross-entropy), then ``p -= lr * g``.

Correctness first: each implementation takes one step from the same initial parameters on the
same batch, and its loss and parameter update are checked against the numpy floor's.

Timing: every implementation is timed in a fresh worker process of its own (this script with
``--worker``), so that no library's imports, thread pools or heap state affect another's
timings (in one shared process they did, by up to 2x on a 2-core machine). Each worker
runs ``--warmup`` untimed steps, then times ``--steps`` steps one by one with ``perf_counter``;
the workers run in ``--rounds`` rounds that take the implementations in turn, so a change in
machine load hits all of them alike. Reported: the median step over all rounds. The batches
cycle through a few fixed ones, the same in every process. BLAS threads come from the
environment, which the workers inherit (``run_all.py --threads N`` sets it before numpy loads).

    python benchmarks/bench_mlp.py [--rounds 5] [--steps 60] [--warmup 15]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402

SIZES = (784, 256, 256, 10)
BATCH = 64
LR = 0.05
N_BATCHES = 8
DTYPE = np.float32


def blas_threads() -> int | None:
    """How many threads numpy's BLAS uses (OpenBLAS as bundled with numpy wheels, or threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info

        for info in threadpool_info():
            if info.get("internal_api") in ("openblas", "mkl", "blis"):
                return int(info["num_threads"])
    except ImportError:
        pass
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
    for path in libs:
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                     "openblas_get_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                return int(fn())
    return None


def init_params(rng: np.random.Generator) -> list[np.ndarray]:
    """torch.nn.Linear's default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias."""
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(DTYPE))
        params.append(rng.uniform(-bound, bound, fan_out).astype(DTYPE))
    return params


# ------------------------------------------------------------------------------------- numpy
class NumpyStep:
    """The floor: what an expert writes by hand for this one model."""

    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = [p.copy() for p in params]
        _, h1, h2, k = SIZES
        self.h1 = np.empty((BATCH, h1), DTYPE)
        self.h2 = np.empty((BATCH, h2), DTYPE)
        self.z = np.empty((BATCH, k), DTYPE)
        self.dh1 = np.empty((BATCH, h1), DTYPE)
        self.dh2 = np.empty((BATCH, h2), DTYPE)
        self.dw = [np.empty_like(p) for p in self.params[0::2]]
        self.rows = np.arange(BATCH)

    def __call__(self, x: np.ndarray, y: np.ndarray) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        h1, h2, z, dh1, dh2, rows = self.h1, self.h2, self.z, self.dh1, self.dh2, self.rows
        dw1, dw2, dw3 = self.dw
        # forward
        np.matmul(x, w1.T, out=h1)
        h1 += b1
        np.maximum(h1, 0, out=h1)
        np.matmul(h1, w2.T, out=h2)
        h2 += b2
        np.maximum(h2, 0, out=h2)
        np.matmul(h2, w3.T, out=z)
        z += b3
        # fused softmax + cross-entropy; z becomes lr * dloss/dz
        z -= z.max(axis=1, keepdims=True)
        picked = z[rows, y]
        np.exp(z, out=z)
        total = z.sum(axis=1, keepdims=True)
        loss = float(np.log(total).sum() - picked.sum()) / BATCH
        z *= LR / BATCH / total
        z[rows, y] -= LR / BATCH
        # backward, each gradient already scaled by lr, applied as soon as it is no longer needed
        np.matmul(z, w3, out=dh2)
        np.matmul(z.T, h2, out=dw3)
        w3 -= dw3
        b3 -= z.sum(axis=0)
        dh2 *= h2 > 0
        np.matmul(dh2, w2, out=dh1)
        np.matmul(dh2.T, h1, out=dw2)
        w2 -= dw2
        b2 -= dh2.sum(axis=0)
        dh1 *= h1 > 0
        np.matmul(dh1.T, x, out=dw1)
        w1 -= dw1
        b1 -= dh1.sum(axis=0)
        return loss


# ------------------------------------------------------------------------------------- aiograd
class AiogradStep:
    def __init__(self, params: list[np.ndarray]) -> None:
        self.params = [aiograd.tensor(p, requires_grad=True) for p in params]

    async def __call__(self, x: aiograd.Tensor, y: aiograd.Tensor) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        loss = F.cross_entropy(F.linear(h, w3, b3), y)
        await loss.backward()
        with aiograd.no_grad():
            for p in self.params:
                p.data -= LR * p.grad.data
                p.grad = None
        return loss.item()

    def arrays(self) -> list[np.ndarray]:
        return [p.data for p in self.params]


# ------------------------------------------------------------------------------------- torch
def make_torch_step(params: list[np.ndarray]) -> Any:
    import torch
    import torch.nn.functional as TF

    tparams = [torch.tensor(p, requires_grad=True) for p in params]

    def step(x: Any, y: Any) -> float:
        w1, b1, w2, b2, w3, b3 = tparams
        h = TF.relu(TF.linear(x, w1, b1))
        h = TF.relu(TF.linear(h, w2, b2))
        loss = TF.cross_entropy(TF.linear(h, w3, b3), y)
        loss.backward()
        with torch.no_grad():
            for p in tparams:
                p.sub_(p.grad, alpha=LR)
                p.grad = None
        return loss.item()

    step.arrays = lambda: [p.detach().numpy() for p in tparams]  # type: ignore[attr-defined]
    return step


# ------------------------------------------------------------------------------------- HIPS
def make_hips_step(params: list[np.ndarray]) -> Any:
    import autograd
    import autograd.numpy as anp

    hparams = [p.copy() for p in params]
    rows = np.arange(BATCH)

    def loss_fn(ps: list[Any], x: np.ndarray, y: np.ndarray) -> Any:
        w1, b1, w2, b2, w3, b3 = ps
        h = anp.maximum(anp.dot(x, w1.T) + b1, 0)
        h = anp.maximum(anp.dot(h, w2.T) + b2, 0)
        z = anp.dot(h, w3.T) + b3
        m = anp.max(z, axis=1, keepdims=True)
        lse = anp.log(anp.sum(anp.exp(z - m), axis=1)) + m[:, 0]
        return anp.mean(lse - z[rows, y])

    value_and_grad = autograd.value_and_grad(loss_fn)

    def step(x: np.ndarray, y: np.ndarray) -> float:
        loss, grads = value_and_grad(hparams, x, y)
        for p, g in zip(hparams, grads):
            p -= LR * g
        return float(loss)

    step.arrays = lambda: hparams  # type: ignore[attr-defined]
    return step


# ------------------------------------------------------------------------------------- driver
def make_data() -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Initial parameters and the batches: the same in every process."""
    rng = np.random.default_rng(0)
    init = init_params(rng)
    xs = [rng.standard_normal((BATCH, SIZES[0])).astype(DTYPE) for _ in range(N_BATCHES)]
    ys = [rng.integers(0, SIZES[-1], BATCH) for _ in range(N_BATCHES)]
    return init, xs, ys


def build(name: str, init: list[np.ndarray], xs: list[np.ndarray], ys: list[np.ndarray]) -> Any:
    """``(step, is_async, arrays)``: ``step(b)`` runs one step on batch ``b`` (a coroutine
    function if ``is_async``), ``arrays()`` returns the current parameters as numpy arrays."""
    if name == "numpy":
        floor = NumpyStep(init)
        return (lambda b: floor(xs[b], ys[b])), False, (lambda: floor.params)
    if name == "aiograd":
        ag = AiogradStep(init)
        ag_x = [aiograd.tensor(x) for x in xs]
        ag_y = [aiograd.tensor(y) for y in ys]
        return (lambda b: ag(ag_x[b], ag_y[b])), True, ag.arrays
    if name == "torch":
        import torch

        tstep = make_torch_step(init)
        tx = [torch.from_numpy(x) for x in xs]
        ty = [torch.from_numpy(y) for y in ys]
        return (lambda b: tstep(tx[b], ty[b])), False, tstep.arrays
    if name == "hips":
        hstep = make_hips_step(init)
        return (lambda b: hstep(xs[b], ys[b])), False, hstep.arrays
    raise ValueError(name)


def check(name: str, loss: float, arrays: list[np.ndarray], ref_loss: float,
          ref_arrays: list[np.ndarray], init: list[np.ndarray]) -> None:
    """Same loss and same parameter update as the floor, to float32 accuracy."""
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, err_msg=f"{name}: loss")
    for i, (a, r, p0) in enumerate(zip(arrays, ref_arrays, init)):
        assert a.dtype == DTYPE, f"{name}: parameter {i} became {a.dtype}"
        update, ref_update = a - p0, r - p0
        scale = float(np.abs(ref_update).max())
        np.testing.assert_allclose(update, ref_update, rtol=1e-3, atol=1e-3 * scale,
                                   err_msg=f"{name}: update of parameter {i}")


def worker(args: argparse.Namespace) -> None:
    """Time one implementation in this process; print the step times as JSON."""
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    init, xs, ys = make_data()
    step, is_async, _ = build(args.worker, init, xs, ys)
    gc.collect()
    gc.freeze()  # the imports' objects: keep them out of the collections inside timed steps

    async def run() -> list[float]:
        perf_counter = time.perf_counter
        times = []
        for i in range(args.warmup + args.steps):
            t0 = perf_counter()
            if is_async:
                await step(i % N_BATCHES)
            else:
                step(i % N_BATCHES)
            t1 = perf_counter()
            if i >= args.warmup:
                times.append(t1 - t0)
        return times

    times = aiograd.run(run())  # the same harness for all, so that only the step differs
    print(json.dumps(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60, help="timed steps per worker")
    parser.add_argument("--warmup", type=int, default=15, help="untimed steps per worker")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--torch-threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    # ---- correctness: one step of each from the same start on the same batch
    init, xs, ys = make_data()
    threads = blas_threads()
    names = ["numpy", "aiograd"]
    torch_note = "torch: not installed"
    runs: list[tuple[str, str, int]] = []  # (label, implementation, torch threads)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        names.append("torch")
        default_threads = torch.get_num_threads()
        torch_note = f"torch intra-op threads: {default_threads} by default"
    try:
        import autograd  # noqa: F401
    except ImportError:
        pass
    else:
        names.append("hips")
    ref_loss = ref_arrays = None
    for name in names:
        step, is_async, arrays = build(name, init, xs, ys)
        loss = aiograd.run(step(0)) if is_async else step(0)
        if name == "numpy":
            ref_loss, ref_arrays = loss, [p.copy() for p in arrays()]
        else:
            check(name, loss, arrays(), ref_loss, ref_arrays, init)

    # ---- timing, one fresh process per implementation and round
    from importlib.metadata import version

    for name in names:
        if name == "numpy":
            runs.append((f"numpy {np.__version__} (floor)", name, 0))
        elif name == "aiograd":
            runs.append((f"aiograd {aiograd.__version__}", name, 0))
        elif name == "torch":
            tv = torch.__version__.split("+")[0]
            matched = threads or default_threads
            runs.append((f"torch {tv} ({matched} thr, matched to BLAS)", name, matched))
            if default_threads != matched:
                runs.append((f"torch {tv} ({default_threads} thr, default)", name, default_threads))
        else:
            runs.append((f"autograd (HIPS) {version('autograd')}", name, 0))
    times: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    for _ in range(args.rounds):
        for label, name, n in runs:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", name,
                   "--steps", str(args.steps), "--warmup", str(args.warmup)]
            if n:
                cmd += ["--torch-threads", str(n)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"worker {name} failed (exit {proc.returncode}):\n{proc.stderr}")
            times[label] += json.loads(proc.stdout.strip().splitlines()[-1])

    print(
        f"mlp: one SGD step of {'-'.join(map(str, SIZES))}, ReLU, cross-entropy, batch {BATCH}, "
        f"float32 (forward + backward + update)"
    )
    env = ", ".join(f"{k}={os.environ[k]}" for k in
                    ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ)
    print(
        f"Python {platform.python_version()}; numpy BLAS threads: {threads if threads else 'unknown'}"
        f"{' (' + env + ')' if env else ''}; {torch_note}"
    )
    print(
        f"median of {args.rounds} x {args.steps} steps, each implementation in its own processes "
        f"({args.warmup} warmup steps each); loss and update of each checked against the floor's"
    )
    print()
    header = f"{'implementation':<40}{'ms/step':>10}{'vs floor':>10}"
    print(header)
    print("-" * len(header))
    floor_time = statistics.median(times[runs[0][0]])
    for label, _, _ in runs:
        t = statistics.median(times[label])
        print(f"{label:<40}{t * 1e3:>10.3f}{t / floor_time:>10.2f}")


if __name__ == "__main__":
    main()
