"""aiograd on a CUDA GPU (CuPy) against torch CUDA, in the same run, and against aiograd on the CPU.

Two workloads, float32:

- **MLP training step**: batch 256, 1024-4096-4096-1024 (ReLU between the layers), cross-entropy
  over 1024 classes; one step is the forward, the loss, ``await loss.backward()`` and an SGD
  update of the six parameters (``p.sub_(p.grad * lr)`` under ``no_grad``, gradients reset).
- **Wide backward**: ``loss = sum_i sum(tanh(X @ W_i) @ V_i)`` over 8 independent branches,
  X (1024, 1024), W_i (1024, 1024), V_i (1024, 256); timed: the backward call alone, on a graph
  recorded just before (untimed).

Correctness first: one MLP step's gradients and one wide backward's, aiograd's on the GPU against
torch's on the GPU (rtol 1e-3, float32; skipped without torch CUDA) and against aiograd's on the
CPU.

Timing: each measurement starts and ends with a device synchronization (``aiograd.cuda.
synchronize()``, ``torch.cuda.synchronize()``) before the clock is read, so queued kernels are
inside the time; ``--warmup`` untimed iterations first (CuPy compiles and caches its kernels,
both libraries grow their memory pools), then ``--repeats`` timed ones; median reported.
``--rounds`` rounds take the implementations in turn. The CPU runs are few (``--cpu-repeats``):
they are slow and only give the GPU's speed-up.

**Goal** (issue 12): aiograd's GPU step within 1.2x of torch's (the "aiograd/torch" column <= 1.2).

Without CuPy or a GPU, prints one ``skipped:`` line and exits 0.

    python benchmarks/bench_cuda.py [--repeats 20] [--warmup 5] [--rounds 3] [--cpu-repeats 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))


def _skip_reason() -> str | None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "CuPy is not installed: pip install 'aiograd[cuda]'"
    import aiograd

    if not aiograd.cuda.is_available():
        return "CuPy sees no CUDA GPU"
    return None


# ------------------------------------------------------------------------------ workloads
BATCH, SIZES, CLASSES = 256, (1024, 4096, 4096, 1024), 1024
LR = 1e-3
BRANCHES, WIDE_N, WIDE_K = 8, 1024, 256


def mlp_arrays(seed: int = 0) -> dict[str, Any]:
    g = np.random.default_rng(seed)
    arrays: dict[str, Any] = {"x": g.standard_normal((BATCH, SIZES[0])).astype(np.float32),
                              "y": g.integers(0, CLASSES, BATCH)}
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:])):
        arrays[f"w{i}"] = (g.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
        arrays[f"b{i}"] = np.zeros(n_out, np.float32)
    return arrays


def wide_arrays(seed: int = 1) -> dict[str, Any]:
    g = np.random.default_rng(seed)
    arrays = {"x": g.standard_normal((WIDE_N, WIDE_N)).astype(np.float32) / 32}
    for i in range(BRANCHES):
        arrays[f"w{i}"] = g.standard_normal((WIDE_N, WIDE_N)).astype(np.float32) / 32
        arrays[f"v{i}"] = g.standard_normal((WIDE_N, WIDE_K)).astype(np.float32) / 32
    return arrays


class Aiograd:
    """The workloads in aiograd, on ``device``."""

    def __init__(self, device: str) -> None:
        import aiograd
        import aiograd.nn.functional as F

        self.ag, self.F, self.device = aiograd, F, device
        m = mlp_arrays()
        self.x = aiograd.tensor(m["x"], device=device)
        self.y = aiograd.tensor(m["y"], device=device)
        self.params = [aiograd.tensor(m[k], device=device, requires_grad=True)
                       for i in range(3) for k in (f"w{i}", f"b{i}")]
        w = wide_arrays()
        self.wx = aiograd.tensor(w["x"], device=device)
        self.wparams = [aiograd.tensor(w[k], device=device, requires_grad=True)
                        for i in range(BRANCHES) for k in (f"w{i}", f"v{i}")]

    def sync(self) -> None:
        if self.device != "cpu":
            self.ag.cuda.synchronize()

    async def mlp_step(self, update: bool = True) -> None:
        F, p = self.F, self.params
        h = F.linear(self.x, p[0], p[1]).relu()
        h = F.linear(h, p[2], p[3]).relu()
        loss = F.cross_entropy(F.linear(h, p[4], p[5]), self.y)
        await loss.backward()
        if not update:
            return
        with self.ag.no_grad():
            for q in p:
                q.sub_(q.grad * LR)
                q.grad = None

    def wide_graph(self) -> Any:
        p = self.wparams
        return sum((((self.wx @ p[2 * i]).tanh() @ p[2 * i + 1]).sum() for i in range(BRANCHES)),
                   start=self.ag.zeros((), dtype=np.float32, device=self.device))

    async def wide_backward(self, loss: Any) -> None:
        await loss.backward()

    def reset_wide(self) -> None:
        for q in self.wparams:
            q.grad = None

    def grads(self, params: list[Any]) -> list[np.ndarray[Any, Any]]:
        return [q.grad.cpu().data for q in params]


class Torch:
    """The same workloads in torch, on CUDA."""

    def __init__(self, dev: str = "cuda") -> None:
        import torch

        self.torch, self.dev = torch, dev
        m = mlp_arrays()
        self.x = torch.tensor(m["x"], device=dev)
        self.y = torch.tensor(m["y"], device=dev)
        self.params = [torch.tensor(m[k], device=dev, requires_grad=True)
                       for i in range(3) for k in (f"w{i}", f"b{i}")]
        w = wide_arrays()
        self.wx = torch.tensor(w["x"], device=dev)
        self.wparams = [torch.tensor(w[k], device=dev, requires_grad=True)
                        for i in range(BRANCHES) for k in (f"w{i}", f"v{i}")]

    def sync(self) -> None:
        if self.dev != "cpu":
            self.torch.cuda.synchronize()

    async def mlp_step(self, update: bool = True) -> None:
        F, p = self.torch.nn.functional, self.params
        h = F.linear(self.x, p[0], p[1]).relu()
        h = F.linear(h, p[2], p[3]).relu()
        F.cross_entropy(F.linear(h, p[4], p[5]), self.y).backward()
        if not update:
            return
        with self.torch.no_grad():
            for q in p:
                q.sub_(q.grad * LR)
                q.grad = None

    def wide_graph(self) -> Any:
        p = self.wparams
        return sum(((self.wx @ p[2 * i]).tanh() @ p[2 * i + 1]).sum() for i in range(BRANCHES))

    async def wide_backward(self, loss: Any) -> None:
        loss.backward()

    def reset_wide(self) -> None:
        for q in self.wparams:
            q.grad = None

    def grads(self, params: list[Any]) -> list[np.ndarray[Any, Any]]:
        return [q.grad.cpu().numpy() for q in params]


# ------------------------------------------------------------------------------ timing
async def time_mlp(impl: Any, warmup: int, repeats: int) -> list[float]:
    for _ in range(warmup):
        await impl.mlp_step()
    times = []
    for _ in range(repeats):
        impl.sync()
        start = time.perf_counter()
        await impl.mlp_step()
        impl.sync()
        times.append(time.perf_counter() - start)
    return times


async def time_wide(impl: Any, warmup: int, repeats: int) -> list[float]:
    times = []
    for i in range(warmup + repeats):
        impl.reset_wide()
        loss = impl.wide_graph()
        impl.sync()  # the forward's kernels are not the backward's time
        start = time.perf_counter()
        await impl.wide_backward(loss)
        impl.sync()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


async def check(gpu: Any, other: Any, name: str) -> None:
    """One MLP step's and one wide backward's gradients agree (rtol 1e-3, float32)."""
    for impl in (gpu, other):  # before any update: the same parameters
        await impl.mlp_step(update=False)
    for a, b in zip(gpu.grads(gpu.params), other.grads(other.params)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5, err_msg=f"MLP step vs {name}")
    for impl in (gpu, other):
        for q in impl.params:
            q.grad = None
    for impl in (gpu, other):
        impl.reset_wide()
        await impl.wide_backward(impl.wide_graph())
    for a, b in zip(gpu.grads(gpu.wparams), other.grads(other.wparams)):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5, err_msg=f"wide backward vs {name}")
    gpu.reset_wide()
    other.reset_wide()


async def main_async(args: argparse.Namespace) -> int:
    gpu = Aiograd("cuda")
    cpu = Aiograd("cpu")
    try:
        import torch

        tgpu: Torch | None = Torch() if torch.cuda.is_available() else None
    except ImportError:
        tgpu = None
    import aiograd

    print(f"device: {aiograd.cuda.get_device_name()}; torch CUDA: {'yes' if tgpu else 'no'}")
    await check(gpu, cpu, "aiograd on the CPU")
    if tgpu is not None:
        await check(gpu, tgpu, "torch CUDA")
    print("gradients agree (rtol 1e-3)")

    results: dict[tuple[str, str], list[float]] = {}
    impls: list[tuple[str, Any, int, int]] = [("aiograd cuda", gpu, args.warmup, args.repeats)]
    if tgpu is not None:
        impls.append(("torch cuda", tgpu, args.warmup, args.repeats))
    for _ in range(args.rounds):
        for name, impl, warmup, repeats in impls:
            results.setdefault((name, "mlp"), []).extend(await time_mlp(impl, warmup, repeats))
            results.setdefault((name, "wide"), []).extend(await time_wide(impl, warmup, repeats))
    results[("aiograd cpu", "mlp")] = await time_mlp(cpu, 1, args.cpu_repeats)
    results[("aiograd cpu", "wide")] = await time_wide(cpu, 1, args.cpu_repeats)

    def ms(key: tuple[str, str]) -> float | None:
        return statistics.median(results[key]) * 1e3 if key in results else None

    print(f"\n{'workload':<22}{'aiograd cuda':>14}{'torch cuda':>12}{'aiograd/torch':>15}"
          f"{'aiograd cpu':>13}{'cpu/cuda':>10}")
    for work, label in (("mlp", "MLP step"), ("wide", "8-branch backward")):
        a, t, c = ms(("aiograd cuda", work)), ms(("torch cuda", work)), ms(("aiograd cpu", work))
        assert a is not None and c is not None
        t_s = f"{t:10.2f}ms" if t is not None else f"{'n/a':>12}"
        r_s = f"{a / t:14.2f}x" if t is not None else f"{'n/a':>15}"
        print(f"{label:<22}{a:12.2f}ms{t_s}{r_s}{c:11.1f}ms{c / a:9.1f}x")
    print("\nGoal: aiograd/torch <= 1.2 for the MLP step (median of "
          f"{args.rounds} x {args.repeats} steps after {args.warmup} warm-up).")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu-repeats", type=int, default=2)
    args = parser.parse_args()
    reason = _skip_reason()
    if reason is not None:
        print(f"skipped: no CUDA GPU ({reason})")
        return 0
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())

