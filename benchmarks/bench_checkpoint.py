"""Activation checkpointing: peak memory and time of forward + backward, with and without
``checkpoint_sequential``, in both variants (``use_reentrant=True`` and ``False``).

Model: 32 layers ``h = relu(linear(h, W_i, b_i))``, W_i (1024, 1024), b_i (1024,), input x
(256, 1024), float32, loss ``h.sum()``; ``aiograd.nn.functional.linear``/``relu``. x requires
grad (a reentrant checkpoint whose input does not require grad gives its segment no gradients).
Configurations:

- plain: the 32 layers recorded as usual; ``await loss.backward()``;
- ``checkpoint_sequential(layers, s, x, use_reentrant=r)`` for each s in ``--segments``
  (default 4 and 8; sqrt(32) ~ 5.7 is the textbook optimum) and r in (True, False): s - 1
  checkpointed segments of 32 // s layers, then the rest recorded as usual. Reentrant: one node
  per segment whose backward recomputes the segment and runs a nested backward through it.
  Non-reentrant: the ordinary graph, with a placeholder for every saved tensor (saved-tensor
  hooks); the first unpack in a segment recomputes it once.

Peak memory, with ``tracemalloc`` (numpy reports its array buffers to it): the traced memory is
read before the step (the parameters, and their ``.grad`` buffers from the previous step, zeroed
in place as a training loop with ``zero_grad(set_to_none=False)`` does), the peak is reset
(``tracemalloc.reset_peak()``), and the step's figure is its peak minus that baseline: the
activations and temporaries that the step needs on top of what it holds anyway. The second
memory column does the same with ``.grad`` set to None before the step, so that the new
gradient buffers (the same in every configuration) count too. Median of ``--mem-repeats`` steps.

Time: forward + backward wall time with tracemalloc off, the garbage collector collected before
and disabled during the step (``_timing.Timer``); the configurations take turns for ``--repeats``
rounds after ``--warmup``; median per configuration. Then, if torch imports, the same model in
torch (``torch.utils.checkpoint.checkpoint_sequential(..., use_reentrant=r)``), time only:
tracemalloc does not see torch's allocations. torch runs in a process of its own (this script
with ``--worker-out``), after aiograd: in one process numpy's BLAS threads and torch's thread
pool slow each other down (torch's checkpointed steps by 3x on two cores).

Checked: aiograd's checkpointed gradients (x, first and last layer), both variants, equal its
plain ones bit for bit, and torch's plain gradients agree with aiograd's (to float32's accuracy
over 32 layers).

    python benchmarks/bench_checkpoint.py [--repeats 5] [--warmup 1] [--segments 4,8]

**Goal:** with checkpointing, peak memory <= 0.5x and time <= 1.5x of the plain step.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402
from aiograd.utils.checkpoint import checkpoint_sequential  # noqa: E402

MIB = 2**20
MEMORY_GOAL = 0.5
TIME_GOAL = 1.5


def make_arrays(args: argparse.Namespace) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """He-initialised weights (so the ReLU activations neither vanish nor blow up over 32
    layers), zero biases and a standard-normal input, all float32."""
    r = np.random.default_rng(0)
    scale = np.float32(np.sqrt(2.0 / args.width))
    weights = [
        (r.standard_normal((args.width, args.width), dtype=np.float32) * scale)
        for _ in range(args.layers)
    ]
    biases = [np.zeros(args.width, np.float32) for _ in range(args.layers)]
    x = r.standard_normal((args.batch, args.width), dtype=np.float32)
    return weights, biases, x


def make_layers(linear: Callable[..., Any], relu: Callable[[Any], Any], ws: list[Any], bs: list[Any]) -> list[Callable[[Any], Any]]:
    return [lambda h, w=w, b=b: relu(linear(h, w, b)) for w, b in zip(ws, bs)]


#: A configuration: (segments, use_reentrant); (0, None) is the plain step.
Config = tuple[int, "bool | None"]


def configurations(segments: list[int]) -> list[Config]:
    return [(0, None)] + [(s, reentrant) for s in segments for reentrant in (True, False)]


def forward(layers: list[Callable[[Any], Any]], x: Any, config: Config, ckpt: Callable[..., Any]) -> Any:
    segments, reentrant = config
    if segments == 0:
        h = x
        for layer in layers:
            h = layer(h)
        return h
    return ckpt(layers, segments, x, use_reentrant=reentrant)


def label(config: Config) -> str:
    segments, reentrant = config
    if segments == 0:
        return "plain"
    return f"checkpoint_sequential, {segments} seg., {'reentrant' if reentrant else 'non-reentrant'}"


# ------------------------------------------------------------------------------------- aiograd
Figures = dict[Config, float]


def bench_aiograd(args: argparse.Namespace) -> tuple[Figures, Figures, Figures]:
    """Peak memory (MiB, grads kept / grads new) and median time (s) per configuration."""

    async def main() -> tuple[Figures, Figures, Figures]:
        weights, biases, x0 = make_arrays(args)
        ws = [aiograd.tensor(w, requires_grad=True) for w in weights]
        bs = [aiograd.tensor(b, requires_grad=True) for b in biases]
        del weights, biases
        params = ws + bs
        x = aiograd.tensor(x0, requires_grad=True)
        layers = make_layers(F.linear, F.relu, ws, bs)
        leaves = [x, *params]

        def zero_grads() -> None:
            with aiograd.no_grad():
                for p in leaves:
                    if p.grad is not None:
                        p.grad.zero_()

        async def step(config: Config) -> None:
            y = forward(layers, x, config, checkpoint_sequential)
            await y.sum().backward()

        # Correctness: checkpointed gradients equal the plain ones (bit for bit: the same ops).
        checked = [x, ws[0], ws[-1], bs[0]]
        configs = configurations(args.segments)
        await step(configs[0])
        want = [t.grad.data.copy() for t in checked]
        for config in configs[1:]:
            zero_grads()
            await step(config)
            for t, w in zip(checked, want):
                np.testing.assert_array_equal(t.grad.data, w)
        args.reference = want

        # Time, tracemalloc off; the configurations take turns.
        times: dict[Config, list[float]] = {c: [] for c in configs}
        for i in range(args.warmup + args.repeats):
            for c in configs:
                zero_grads()
                with Timer() as t:
                    await step(c)
                if i >= args.warmup:
                    times[c].append(t.seconds)

        # Peak memory above what is held before the step.
        tracemalloc.start()
        kept: dict[Config, list[float]] = {c: [] for c in configs}
        fresh: dict[Config, list[float]] = {c: [] for c in configs}
        for _ in range(args.mem_repeats):
            for c in configs:
                for keep, out in ((True, kept), (False, fresh)):
                    if keep:
                        zero_grads()  # the buffers exist: the previous step made them
                    else:
                        for p in leaves:
                            p.grad = None
                    gc.collect()
                    before = tracemalloc.get_traced_memory()[0]
                    tracemalloc.reset_peak()
                    await step(c)
                    out[c].append((tracemalloc.get_traced_memory()[1] - before) / MIB)
        tracemalloc.stop()
        args.param_mib = sum(p.data.nbytes for p in params) / MIB
        args.activation_mib = args.batch * args.width * 4 / MIB  # one layer's output
        med = statistics.median
        return (
            {c: med(v) for c, v in kept.items()},
            {c: med(v) for c, v in fresh.items()},
            {c: med(v) for c, v in times.items()},
        )

    return aiograd.run(main())


# ------------------------------------------------------------------------------------- torch
def torch_worker(args: argparse.Namespace) -> None:
    """In a process of its own: time torch's steps; save the times and the plain gradients."""
    import torch
    import torch.utils.checkpoint as torch_checkpoint

    weights, biases, x0 = make_arrays(args)
    ws = [torch.tensor(w, requires_grad=True) for w in weights]
    bs = [torch.tensor(b, requires_grad=True) for b in biases]
    x = torch.tensor(x0, requires_grad=True)
    layers = make_layers(torch.nn.functional.linear, torch.relu, ws, bs)
    leaves = [x, *ws, *bs]

    def step(config: Config) -> None:
        forward(layers, x, config, torch_checkpoint.checkpoint_sequential).sum().backward()

    configs = configurations(args.segments)
    step(configs[0])
    checked = [t.grad.numpy().copy() for t in (x, ws[0], ws[-1], bs[0])]
    for c in configs[1:]:  # untimed, as aiograd's check: the first call imports torch._dynamo
        step(c)
    times = np.zeros((len(configs), args.repeats))
    for i in range(args.warmup + args.repeats):
        for j, c in enumerate(configs):
            with torch.no_grad():
                for p in leaves:
                    p.grad.zero_()
            with Timer() as t:
                step(c)
            if i >= args.warmup:
                times[j, i - args.warmup] = t.seconds
    name = f"torch {torch.__version__.split('+')[0]} ({torch.get_num_threads()} threads)"
    grads = {f"grad{i}": g for i, g in enumerate(checked)}
    np.savez(args.worker_out, times=times, name=np.array(name), **grads)


def bench_torch(args: argparse.Namespace) -> tuple[str, Figures] | None:
    """Run ``torch_worker`` in a fresh process (torch's thread pool and numpy's BLAS threads
    in one process slow each other down on a small machine), check its gradients against
    aiograd's, and return its median times."""
    if importlib.util.find_spec("torch") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "torch.npz")
        cmd = [
            sys.executable, os.path.abspath(__file__), "--worker-out", out,
            "--repeats", str(args.repeats), "--warmup", str(args.warmup),
            "--segments", ",".join(map(str, args.segments)), "--layers", str(args.layers),
            "--width", str(args.width), "--batch", str(args.batch),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"torch worker failed (exit {proc.returncode}):\n{proc.stderr}")
        with np.load(out) as data:
            times, name = data["times"], str(data["name"])
            checked = [data[f"grad{i}"] for i in range(len(args.reference))]
    # float32 through 32 ReLU layers: torch's own float32 gradients differ from its float64 ones
    # by about 3e-3 (relative norm), so that is the scale of agreement to expect here.
    for got, want in zip(checked, args.reference):
        err = np.linalg.norm(got - want) / max(float(np.linalg.norm(want)), 1e-30)
        assert err < 1e-2, f"torch and aiograd gradients differ: relative error {err:.2e}"
    configs = configurations(args.segments)
    return name, {c: float(np.median(times[j])) for j, c in enumerate(configs)}


# ------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--mem-repeats", type=int, default=3, help="traced steps per config (default 3)")
    parser.add_argument("--segments", default="4,8", help="comma-separated segment counts (default 4,8)")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.segments = [int(s) for s in args.segments.split(",") if s]
    if any(not 1 <= s <= args.layers for s in args.segments):
        parser.error(f"segments must be between 1 and --layers ({args.layers})")
    if args.worker_out:
        torch_worker(args)
        return

    mem_kept, mem_fresh, times = bench_aiograd(args)
    torch_result = bench_torch(args)

    loop = "uvloop" if _has_uvloop() else "asyncio"
    print(
        f"checkpoint: {args.layers} layers h = relu(linear(h, W, b)), W ({args.width}, "
        f"{args.width}), batch {args.batch}, float32; forward + backward of h.sum()"
    )
    print(
        f"Python {platform.python_version()}, numpy {np.__version__}, aiograd on {loop}, "
        f"{os.cpu_count()} CPUs; median of {args.repeats} timed rounds after {args.warmup} "
        f"warmup, memory median of {args.mem_repeats}; checkpointed gradients equal plain"
        + ("; torch's agree" if torch_result else "")
    )
    print(
        f"held before each step: parameters {args.param_mib:.1f} MiB (+ as much for .grad); "
        f"one layer's activation {args.activation_mib:.1f} MiB"
    )
    print(
        "peak = tracemalloc peak during the step minus the memory held before it; 'new .grad': "
        "with .grad set to None first, so the gradient buffers count too"
    )
    print()
    header = (
        f"{'configuration':<52}{'peak MiB':>10}{'ratio':>7}{'new .grad':>11}{'ratio':>7}"
        f"{'time ms':>10}{'ratio':>7}"
    )
    if torch_result:
        header += f"{'torch ms':>10}{'ratio':>7}"
    print(header)
    print("-" * len(header))
    configs = configurations(args.segments)
    plain = configs[0]
    for c in configs:
        line = (
            f"{label(c):<52}{mem_kept[c]:>10.1f}{mem_kept[c] / mem_kept[plain]:>7.2f}"
            f"{mem_fresh[c]:>11.1f}{mem_fresh[c] / mem_fresh[plain]:>7.2f}"
            f"{times[c] * 1e3:>10.1f}{times[c] / times[plain]:>7.2f}"
        )
        if torch_result:
            t = torch_result[1]
            line += f"{t[c] * 1e3:>10.1f}{t[c] / t[plain]:>7.2f}"
        print(line)
    if torch_result:
        print(f"torch: {torch_result[0]}, time only (tracemalloc does not see its allocations)")
    print()
    for c in configs[1:]:
        mem_ratio, time_ratio = mem_kept[c] / mem_kept[plain], times[c] / times[plain]
        ok = mem_ratio <= MEMORY_GOAL and time_ratio <= TIME_GOAL
        print(
            f"goal (peak <= {MEMORY_GOAL}x, time <= {TIME_GOAL}x), {label(c)[23:]}: "
            f"{'met' if ok else 'NOT met'} ({mem_ratio:.2f}x memory, {time_ratio:.2f}x time)"
        )


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
