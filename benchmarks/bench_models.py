"""Real models' training steps, aiograd against torch (CPU): time and peak memory, side by side.

Models (``benchmarks/_bench_model_defs.py``), each written once over the library (``aiograd``
or ``torch``: the same ``nn`` code builds both, so their state dicts have the same keys):

- ``cnn``: a small CNN on 8x8 images (scikit-learn's digits' size), batch 64: Conv2d(1, 16, 3,
  padding=1), ReLU, MaxPool2d(2), Conv2d(16, 32, 3, padding=1), ReLU, MaxPool2d(2), Flatten,
  Linear(128, 10); cross-entropy; Adam.
- ``transformer``: character level, batch 16, sequence 64, width 128: token and position
  embeddings, two pre-norm ``TransformerEncoderLayer``s (4 heads, feed-forward 512, ReLU,
  causal mask), LayerNorm, a linear head over a vocabulary of 65; cross-entropy over every
  position; AdamW.
- ``resnet18``: torchvision's ResNet-18 written out (conv 7x7 stride 2, BatchNorm, ReLU, max
  pooling 3x3 stride 2, four stages of two BasicBlocks, 64/128/256/512 channels, a 1x1
  conv + BatchNorm downsample where the shape changes, adaptive average pooling, Linear(512,
  10)), 11.2M parameters; 3x64x64 images, batch 4; cross-entropy; SGD (momentum 0.9, weight
  decay 1e-4).
- ``unet``: a U-Net of three levels (16/32/64 channels; Conv3x3-BatchNorm-ReLU twice per
  level, MaxPool2d(2) down, ``Upsample(scale_factor=2, mode="bilinear", align_corners=False)``
  up, skips concatenated), a 1x1 conv to one logit per pixel; 1x64x64 images, batch 4;
  binary cross-entropy with logits on a mask; Adam.
- ``bert``: a BERT-style encoder: token + position + segment embeddings, LayerNorm, two
  post-norm ``TransformerEncoderLayer``s (width 256, 4 heads, feed-forward 1024, GELU,
  batch_first), the padding given as ``src_key_padding_mask`` (sequences of 16 to 64 tokens,
  padded to 64), a tanh pooler on the first token and a linear classifier (2 classes);
  vocabulary 1000, batch 8; cross-entropy; AdamW.
- ``gpt2``: a GPT-2-style decoder written from primitives as Hugging Face's GPT-2 is: Conv1D
  layers (weight (in, out), ``addmm(bias, x.view(-1, in), weight)``), causal
  ``F.scaled_dot_product_attention(is_causal=True)``, ``F.gelu(approximate="tanh")``, pre-norm
  LayerNorm blocks, an lm head tied to the token embedding (``F.linear(h, wte.weight)``); width
  128, 4 heads, 2 blocks, vocabulary 2048, batch 8, sequence 64; cross-entropy over every
  position (the next token); AdamW.
- ``lstm``: a 2-layer ``nn.LSTM`` (batch_first, input 64, hidden 128) over sequences of 50,
  batch 32, a linear head on the last step (10 classes); cross-entropy; Adam.

Every model runs with dropout 0 (none at all), so both libraries compute the same numbers.

A step is ``zero_grad``, forward, loss, backward (``await loss.backward()`` for aiograd) and the
optimizer's ``step``, float32 (the default dtype of both). Both libraries start from the same
weights (aiograd's initialisation, written to an ``.npz`` and loaded into each with
``load_state_dict``), and their first steps are checked against each other before anything is
timed; a mismatch stops the script, naming the tensor and its worst element:

- the loss, rtol 1e-4;
- every parameter's gradient, rtol 1e-3 and atol 1e-4 times the tensor's largest gradient:
  float32 sums in another order (another BLAS blocking, another vector width) differ by about
  1e-6 relative per layer, and ResNet-18's twenty layers of BatchNorm-normalised products add
  that up; measured here, the worst element used under a tenth of this;
- the updated weights and buffers (BatchNorm's running statistics and counters included), rtol
  1e-4 and atol 1e-5. One exception: Adam's first step moves a weight by lr * g / (|g| + eps),
  so where |g| < 1e-6 (100 eps) rounding in g moves the step by up to lr; those few weights are
  held to lr here, their gradients to the bound above.

Timing: each (library, model, threads) runs in a fresh worker process of its own (this script
with ``--worker``; the aiograd worker never imports torch): warmup steps untimed, then timed
steps, each step timed alone (``loss.item()`` included, as a training loop logs it). Rounds take
the configurations in turn (round 1: aiograd 1 thread, torch 1 thread, aiograd all threads,
torch all threads; round 2: the same again...), so a slow patch of the machine hits both
libraries. "1 thread" sets OMP/OPENBLAS/MKL_NUM_THREADS=1 in the worker's environment (and
``torch.set_num_threads(1)``); "all threads" leaves the environment as it is and gives torch
``os.cpu_count()`` threads. Reported: the median step over every round, and aiograd's over
torch's. Steps per worker default per model (fewer for resnet18), ``--steps``/``--warmup``
override them for every model.

Memory: after the warmup steps the worker drops the gradients (``zero_grad()``, to None),
collects garbage and returns the C heap's free memory to the system (glibc ``malloc_trim``),
then reads its resident set (``/proc/self/statm``): the baseline, which holds the interpreter,
the library, the weights, the optimizer's state and the batches. It resets the kernel's peak
RSS mark (``/proc/self/clear_refs``) and, after the timed steps, reads the peak (``VmHWM`` in
``/proc/self/status``). "step peak" is peak - baseline: what a training step needs on top
(activations kept for backward, gradients, temporaries). "peak" is the process's absolute peak
RSS. ``ru_maxrss`` is not used: a child started by ``subprocess`` inherits the parent's peak
in it (vfork + exec), so it would report the parent's memory; where ``clear_refs`` cannot be
written, the peak over the whole process is used instead (the report says so). Memory figures
are the median over rounds.

    python benchmarks/bench_models.py [--only resnet18,gpt2] [--threads {1,all,both}]
        [--rounds 2] [--steps N] [--warmup N] [--json out.json]
    python benchmarks/bench_models.py --profile gpt2 [--steps 5]

``--json PATH`` writes every figure: per (model, threads) and library every timed step's time,
the median, the baseline and step peak (medians over rounds) and the peak; the ratios; and the
first-step check's losses and margins.

``--profile MODEL`` runs aiograd alone, single-threaded, a few steps under cProfile (every
backward node kept on the event loop's thread, so the profile sees all of them) and prints the
top 30 functions by total time and by cumulative time.

Goals (issue 31): every model's step within 1.2x of torch's; the character transformer within
1.2x; the LSTM within 1.5x.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)

from _bench_model_defs import MODELS, N_BATCHES  # noqa: E402

import aiograd  # noqa: E402

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
LIBS = ("aiograd", "torch")
GOALS = {"lstm": 1.5}  # aiograd/torch step time; 1.2 for the others
DEFAULT_GOAL = 1.2
# the first step's check (the module docstring says why these)
LOSS_RTOL = 1e-4
GRAD_RTOL, GRAD_ATOL = 1e-3, 1e-4  # GRAD_ATOL: times the tensor's largest |gradient|
WEIGHT_RTOL, WEIGHT_ATOL = 1e-4, 1e-5
ADAM_NOISY_GRAD = 1e-6  # 100 x Adam's eps
MIB = 1024.0  # KiB per MiB


# --------------------------------------------------------------------------------- one library
class Built:
    """One library's model, optimizer and batches: ``step(b)`` runs a training step on batch
    ``b`` and returns the loss (awaitable for aiograd), ``state()`` the weights and buffers as
    numpy arrays, ``grads()`` the parameters' gradients, ``drop_grads()`` sets them to None."""

    def __init__(self, step: Callable[[int], Any], is_async: bool, net: Any, opt: Any) -> None:
        self.step, self.is_async, self.net, self.opt = step, is_async, net, opt

    def state(self) -> dict[str, np.ndarray]:
        return {k: v.detach().numpy().copy() for k, v in self.net.state_dict().items()}

    def grads(self) -> dict[str, np.ndarray]:
        return {k: p.grad.detach().numpy().copy()
                for k, p in self.net.named_parameters() if p.grad is not None}

    def drop_grads(self) -> None:
        self.opt.zero_grad(set_to_none=True)


def build(lib_name: str, model: str, weights: str) -> Built:
    spec = MODELS[model]
    batches = spec.batches()
    arrays = dict(np.load(weights))
    if lib_name == "aiograd":
        import aiograd.nn.functional as F

        net = spec.build(aiograd).float()
        net.load_state_dict({k: aiograd.tensor(v) for k, v in arrays.items()})
        net.train()
        opt = spec.make_optimizer(aiograd, net.parameters())
        data = [(tuple(aiograd.tensor(a) for a in x), aiograd.tensor(y)) for x, y in batches]

        async def ag_step(b: int) -> float:
            x, y = data[b]
            opt.zero_grad()
            loss = spec.loss(F, net(*x), y)
            await loss.backward()
            opt.step()
            return loss.item()

        return Built(ag_step, True, net, opt)

    import torch
    import torch.nn.functional as TF

    net = spec.build(torch)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    net.train()
    opt = spec.make_optimizer(torch, net.parameters())
    tdata = [(tuple(torch.from_numpy(a) for a in x), torch.from_numpy(y)) for x, y in batches]

    def torch_step(b: int) -> float:
        x, y = tdata[b]
        opt.zero_grad()
        loss = spec.loss(TF, net(*x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return Built(torch_step, False, net, opt)


def write_weights(model: str, path: str) -> None:
    aiograd.manual_seed(0)
    net = MODELS[model].build(aiograd).float()
    np.savez(path, **{k: v.numpy() for k, v in net.state_dict().items()})


def check(model: str, weights: str) -> dict[str, float]:
    """Both libraries' first step from the same weights: the same loss, gradients, updated
    weights and buffers; exits (naming the tensor) where they differ. See the module docstring
    for the tolerances."""
    spec = MODELS[model]
    results = {}
    for lib_name in LIBS:
        built = build(lib_name, model, weights)
        loss = aiograd.run(built.step(0)) if built.is_async else built.step(0)
        results[lib_name] = (loss, built.grads(), built.state())
        del built
    (ag_loss, ag_grads, ag_state), (t_loss, t_grads, t_state) = results["aiograd"], results["torch"]
    adam = spec.optimizer.startswith("Adam")
    worst = {"grad": 0.0, "weight": 0.0}
    try:
        np.testing.assert_allclose(ag_loss, t_loss, rtol=LOSS_RTOL, err_msg=f"{model}: loss")
        for what, a, t in (("gradients", ag_grads, t_grads), ("state dict", ag_state, t_state)):
            if set(a) != set(t):
                raise AssertionError(f"{model}: {what}' keys differ: {sorted(set(a) ^ set(t))}")
        for key, ref in t_grads.items():
            atol = GRAD_ATOL * float(np.abs(ref).max(initial=0.0))
            worst["grad"] = max(worst["grad"], _compare(
                ag_grads[key], ref, GRAD_RTOL, atol, f"{model}: {key}'s gradient, first step"))
        for key, ref in t_state.items():
            got = ag_state[key]
            atol = np.full(ref.shape, WEIGHT_ATOL)
            if adam and key in t_grads:
                # Adam's first step moves a weight by lr * g / (|g| + eps): where |g| is within
                # a few hundred eps, float32 rounding in g moves the step by up to lr; those
                # weights are checked through their gradient above, and here to within lr
                atol[np.abs(t_grads[key]) < ADAM_NOISY_GRAD] = spec.lr
            worst["weight"] = max(worst["weight"], _compare(
                got, ref, WEIGHT_RTOL, atol, f"{model}: {key} after the first step"))
    except AssertionError as exc:
        sys.exit(f"FIRST STEP MISMATCH between aiograd and torch\n{exc}")
    return {"aiograd_loss": float(ag_loss), "torch_loss": float(t_loss),
            "worst_grad_over_tol": worst["grad"], "worst_weight_over_tol": worst["weight"]}


def _compare(got: np.ndarray, ref: np.ndarray, rtol: float, atol: Any, what: str) -> float:
    """``max(|got - ref| / (atol + rtol * |ref|))``, which must be at most 1 (AssertionError
    naming the worst element otherwise)."""
    if got.shape != ref.shape:
        raise AssertionError(f"{what}: shape {got.shape}, torch's {ref.shape}")
    ref64 = ref.astype(np.float64)
    diff = np.abs(got.astype(np.float64) - ref64)
    excess = diff / (np.asarray(atol, dtype=np.float64) + rtol * np.abs(ref64) + 1e-300)
    if excess.size == 0:
        return 0.0
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if not excess[worst] <= 1:  # NaN fails too
        bad = int(np.count_nonzero(~(excess <= 1)))
        raise AssertionError(
            f"{what}: {bad} of {excess.size} elements differ; worst at {tuple(map(int, worst))}: "
            f"aiograd {got[worst]!r}, torch {ref[worst]!r} (rtol {rtol:g}, atol "
            f"{float(np.broadcast_to(atol, ref.shape)[worst]):g})")
    return float(excess[worst])


# ------------------------------------------------------------------------------------- memory
def rss_kib() -> float:
    """The resident set now, KiB."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024


def hwm_kib() -> float:
    """The peak resident set since the process started or the mark was last reset, KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark to the current RSS (Linux >= 4.0); False if not."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def trim_heap() -> None:
    """Hand the C heap's free memory back to the system (glibc), so that the baseline holds
    only live memory and a step's allocations show in the peak."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


# ------------------------------------------------------------------------------------- worker
def worker(args: argparse.Namespace) -> None:
    """Time one configuration in this process; print the step times and memory as JSON."""
    if args.worker == "torch":
        import torch

        torch.set_num_threads(args.torch_threads)
    spec = MODELS[args.model]
    steps = args.steps if args.steps is not None else spec.steps
    warmup = args.warmup if args.warmup is not None else spec.warmup
    built = build(args.worker, args.model, args.weights)

    async def one(i: int) -> None:
        if built.is_async:
            await built.step(i % N_BATCHES)
        else:
            built.step(i % N_BATCHES)

    if args.profile_steps:
        profile(one, warmup, args.profile_steps)
        return

    async def run() -> dict[str, Any]:
        for i in range(warmup):
            await one(i)
        peak_before = hwm_kib()
        built.drop_grads()
        gc.collect()
        trim_heap()
        baseline = rss_kib()
        reset = reset_peak()
        times = []
        for i in range(warmup, warmup + steps):
            t0 = time.perf_counter()
            await one(i)
            times.append(time.perf_counter() - t0)
        peak = hwm_kib()
        return {"times": times, "baseline_kib": baseline, "step_peak_kib": peak - baseline,
                "peak_kib": max(peak, peak_before), "peak_reset": reset}

    print(json.dumps(aiograd.run(run())))


def profile(one: Callable[[int], Awaitable[None]], warmup: int, steps: int) -> None:
    import cProfile
    import pstats

    async def run() -> None:
        aiograd.get_engine().offload_threshold = None  # every node on this thread: profiled
        for i in range(warmup):
            await one(i)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for i in range(warmup, warmup + steps):
            await one(i)
        prof.disable()
        elapsed = time.perf_counter() - t0
        print(f"{steps} steps in {elapsed * 1e3:.0f} ms under cProfile "
              f"({elapsed / steps * 1e3:.1f} ms a step; the profiler's overhead included)")
        for key in ("tottime", "cumtime"):
            print(f"\n===== top 30 by {key} =====")
            pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats(key).print_stats(30)

    aiograd.run(run())


# --------------------------------------------------------------------------------------- main
def run_worker(lib_name: str, model: str, weights: str, n_threads: int, args: argparse.Namespace,
               *, profile_steps: int = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if n_threads == 1:
        env.update({var: "1" for var in THREAD_VARS})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib_name, "--model", model,
           "--weights", weights, "--torch-threads", str(n_threads)]
    if args.steps is not None:
        cmd += ["--steps", str(args.steps)]
    if args.warmup is not None:
        cmd += ["--warmup", str(args.warmup)]
    if profile_steps:
        cmd += ["--profile-steps", str(profile_steps)]
    proc = subprocess.run(cmd, capture_output=not profile_steps, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"worker {lib_name} {model} ({n_threads} threads) failed:\n{proc.stderr}")
    return proc


def parse_models(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown model(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(MODELS)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", type=parse_models, metavar="M1,M2",
                        help=f"comma-separated models (default all: {','.join(MODELS)})")
    parser.add_argument("--threads", choices=("1", "all", "both"), default="both",
                        help="BLAS/torch threads: 1, all (os.cpu_count()), or both (default)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None,
                        help="timed steps per worker (default: per model)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed steps per worker (default: per model)")
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH as JSON")
    parser.add_argument("--profile", choices=list(MODELS), metavar="MODEL",
                        help="profile aiograd's step of MODEL (1 thread) under cProfile")
    parser.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--torch-threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--profile-steps", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.profile:
        with tempfile.TemporaryDirectory() as tmp:
            weights = os.path.join(tmp, f"{args.profile}.npz")
            write_weights(args.profile, weights)
            steps = args.steps or 5
            args.steps = None
            print(f"aiograd {args.profile}: {steps} steps under cProfile, BLAS 1 thread",
                  flush=True)
            run_worker("aiograd", args.profile, weights, 1, args, profile_steps=steps)
        return
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed (pip install torch), nothing to compare with")
        return

    cpus = os.cpu_count() or 1
    threads = {"1": [1], "all": [cpus], "both": [1, cpus]}[args.threads]
    models = args.only or list(MODELS)
    print(f"models: one training step (zero_grad, forward, loss, backward, optimizer step), "
          f"float32; Python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__.split('+')[0]}, {cpus} CPUs")
    print(f"median over {args.rounds} rounds of "
          + (f"{args.steps} steps" if args.steps is not None else "per-model steps")
          + " per configuration, each worker a fresh process; first step checked against "
          "torch's; step peak = peak RSS during the timed steps - RSS before them")
    print()
    header = (f"{'model':<12}{'threads':<9}{'aiograd ms':>11}{'torch ms':>10}{'ratio':>7}"
              f"{'goal':>6}  {'ag step MiB':>11}{'th step MiB':>12}{'ratio':>7}"
              f"{'ag peak':>9}{'th peak':>9}")
    print(header)
    print("-" * len(header))
    report: dict[str, Any] = {
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": torch.__version__, "cpus": cpus, "rounds": args.rounds,
        "steps": args.steps, "warmup": args.warmup, "checks": {}, "results": [],
    }
    no_reset = False
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            weights = os.path.join(tmp, f"{model}.npz")
            write_weights(model, weights)
            report["checks"][model] = check(model, weights)
            runs: dict[tuple[int, str], list[dict[str, Any]]] = {
                (n, lib): [] for n in threads for lib in LIBS}
            for _ in range(args.rounds):
                for n in threads:
                    for lib_name in LIBS:
                        proc = run_worker(lib_name, model, weights, n, args)
                        runs[n, lib_name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            for n in threads:
                row: dict[str, Any] = {"model": model, "threads": n}
                for lib_name in LIBS:
                    rs = runs[n, lib_name]
                    times = [t for r in rs for t in r["times"]]
                    no_reset |= not all(r["peak_reset"] for r in rs)
                    row[lib_name] = {
                        "times_ms": [t * 1e3 for t in times],
                        "median_ms": statistics.median(times) * 1e3,
                        "steps": len(rs[0]["times"]),
                        "baseline_mib": statistics.median(r["baseline_kib"] for r in rs) / MIB,
                        "step_peak_mib": statistics.median(r["step_peak_kib"] for r in rs) / MIB,
                        "peak_mib": max(r["peak_kib"] for r in rs) / MIB,
                    }
                ag, th = row["aiograd"], row["torch"]
                row["time_ratio"] = ag["median_ms"] / th["median_ms"]
                row["step_peak_ratio"] = ag["step_peak_mib"] / max(th["step_peak_mib"], 1e-9)
                row["goal"] = GOALS.get(model, DEFAULT_GOAL)
                report["results"].append(row)
                label = "1" if n == 1 else f"all ({n})"
                met = "ok" if row["time_ratio"] <= row["goal"] else "MISS"
                print(f"{model:<12}{label:<9}{ag['median_ms']:>11.2f}{th['median_ms']:>10.2f}"
                      f"{row['time_ratio']:>7.2f}{met:>6}  {ag['step_peak_mib']:>11.1f}"
                      f"{th['step_peak_mib']:>12.1f}{row['step_peak_ratio']:>7.2f}"
                      f"{ag['peak_mib']:>9.0f}{th['peak_mib']:>9.0f}", flush=True)
    print()
    print(f"goal: aiograd/torch step time <= {DEFAULT_GOAL} (lstm {GOALS['lstm']}); "
          "MiB: step peak (peak RSS during the steps - RSS before them); peak: absolute, MiB")
    print("first steps agree with torch's; the largest deviation as a fraction of its tolerance "
          "(gradients/weights): " + ", ".join(
              f"{m} {c['worst_grad_over_tol']:.2f}/{c['worst_weight_over_tol']:.2f}"
              for m, c in report["checks"].items()))
    if no_reset:
        print("note: /proc/self/clear_refs was not writable: step peaks are over whole processes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
