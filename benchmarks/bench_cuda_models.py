"""On a CUDA GPU, against torch CUDA in the same run: a ResNet-18 training step, 64 saliency
requests through ``serving.batch``, two backward calls on two streams, and the event loop's
longest stall while the GPU works (issue 32). ``bench_cuda.py`` has the MLP step.

- **ResNet-18 step**: torchvision's ``resnet18`` as ``_bench_model_defs.py`` writes it (10
  classes), 224x224, batch 32, float32, SGD (momentum 0.9, weight decay 1e-4): zero_grad,
  forward, cross-entropy, ``await loss.backward()``, step. Both libraries start from the same
  weights; the first step's loss is checked against torch's (rtol 1e-3).
- **Saliency**: ``bench_saliency.py``'s MLP (32-128-128-1, tanh), 64 requests of 8 rows, each the
  gradient of ``sum(model(x))`` for its ``x``: aiograd's through ``serving.batch`` (one batched
  forward and backward on the GPU for all 64), torch's one after another, and torch's batched
  by hand; the results are checked against each other.
- **Two streams**: two independent graphs ``sum(tanh(X @ W_i) @ V_i)`` (4096 wide), each
  recorded inside ``with aiograd.cuda.stream(s_i)``, so that its backward runs on ``s_i``; the
  two backward calls awaited one after the other, then together (``asyncio.gather``). Together
  in less time than one after the other shows the GPU overlapping the two streams.
- **Loop stall**: a coroutine ticking every millisecond while 20 ResNet-18 steps run (their
  losses not read: ``item()`` waits for the GPU on the loop's thread); its largest gap is the
  longest the event loop was held. On the GPU the forward only queues kernels and the backward
  awaits the GPU on the loop, so this is what a service sees while the GPU works.

Each timing synchronizes the device before reading the clock; ``--warmup`` untimed iterations
first, then ``--repeats`` timed ones; medians.

``--dry-run`` runs the same code on the CPU with small sizes (no figures worth reading: it
checks the script where there is no GPU). Without CuPy or a GPU and without ``--dry-run``, it
prints one ``skipped:`` line and exits 0.

    python benchmarks/bench_cuda_models.py [--repeats 10] [--warmup 3] [--dry-run]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)

from _bench_model_defs import make_resnet18  # noqa: E402
from bench_responsiveness import Ticker, summary  # noqa: E402

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402


class Sizes:
    """The workloads' sizes: the issue's on a GPU, small ones for ``--dry-run``."""

    def __init__(self, dry_run: bool) -> None:
        self.image, self.batch = (32, 2) if dry_run else (224, 32)
        self.requests, self.rows = (8, 2) if dry_run else (64, 8)
        self.wide = 128 if dry_run else 4096
        self.stall_steps = 2 if dry_run else 20


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        aiograd.cuda.synchronize()


def torch_synchronize(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


async def timed(step: Callable[[], Awaitable[Any]], sync: Callable[[], None], warmup: int,
                repeats: int) -> float:
    """Median seconds of ``await step()``, the device synchronized around each."""
    for _ in range(warmup):
        await step()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        await step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ------------------------------------------------------------------------------ ResNet-18
def resnet_models(torch: Any, dev: str, tdev: str) -> tuple[Any, Any]:
    """The same weights in both libraries (torch's initialisation)."""
    torch.manual_seed(0)
    tnet = make_resnet18(torch).to(tdev).train()
    state = {k: v.detach().cpu().numpy() for k, v in tnet.state_dict().items()}
    anet = make_resnet18(aiograd).float()
    anet.load_state_dict({k: aiograd.tensor(v) for k, v in state.items()})
    return anet.to(dev).train(), tnet


async def bench_resnet(torch: Any, sizes: Sizes, dev: str, tdev: str, args: argparse.Namespace) -> dict[str, float]:
    anet, tnet = resnet_models(torch, dev, tdev)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((sizes.batch, 3, sizes.image, sizes.image)).astype(np.float32)
    y = rng.integers(0, 10, sizes.batch)
    ax, ay = aiograd.tensor(x, device=dev), aiograd.tensor(y, device=dev)
    tx, ty = torch.tensor(x, device=tdev), torch.tensor(y, device=tdev)
    aopt = aiograd.optim.SGD(anet.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    topt = torch.optim.SGD(tnet.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)

    async def ag_step(read_loss: bool = True) -> float:
        aopt.zero_grad()
        loss = F.cross_entropy(anet(ax), ay)
        await loss.backward()
        aopt.step()
        # (reading the loss waits for the GPU, holding the loop: not in the stall measurement)
        return float(loss.item()) if read_loss else 0.0

    async def torch_step() -> float:
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tnet(tx), ty)
        loss.backward()
        topt.step()
        return float(loss.item())

    first_ag, first_torch = await ag_step(), await torch_step()
    np.testing.assert_allclose(first_ag, first_torch, rtol=1e-3, err_msg="ResNet-18 first step's loss")
    ag_s = await timed(ag_step, lambda: synchronize(dev), args.warmup, args.repeats)
    torch_s = await timed(torch_step, lambda: torch_synchronize(torch, tdev), args.warmup, args.repeats)

    # the loop's longest stall while steps run
    async with Ticker() as ticker:
        for _ in range(sizes.stall_steps):
            await ag_step(read_loss=False)
    synchronize(dev)  # (a blocking wait: after the ticker stopped)
    gaps = summary(ticker.gaps)
    return {"resnet_ag_ms": ag_s * 1e3, "resnet_torch_ms": torch_s * 1e3,
            "stall_max_ms": gaps["max"] * 1e3, "stall_p99_ms": gaps["p99"] * 1e3}


# ------------------------------------------------------------------------------ saliency
def saliency_params(rng: np.random.Generator) -> list[np.ndarray]:
    sizes = (32, 128, 128, 1)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def mlp(lib_f: Any, p: list[Any], x: Any) -> Any:
    h = lib_f.linear(x, p[0], p[1]).tanh()
    h = lib_f.linear(h, p[2], p[3]).tanh()
    return lib_f.linear(h, p[4], p[5])


async def bench_saliency(torch: Any, sizes: Sizes, dev: str, tdev: str, args: argparse.Namespace) -> dict[str, float]:
    rng = np.random.default_rng(1)
    params = saliency_params(rng)
    xs = [rng.standard_normal((sizes.rows, 32)).astype(np.float32) for _ in range(sizes.requests)]
    ap = [aiograd.tensor(p, device=dev) for p in params]
    tp = [torch.tensor(p, device=tdev) for p in params]
    axs = [aiograd.tensor(x, device=dev) for x in xs]
    txs = [torch.tensor(x, device=tdev) for x in xs]

    @aiograd.serving.batch(max_batch_size=sizes.requests, batch_wait_timeout_s=0)
    async def saliency(inputs: list[aiograd.Tensor]) -> list[aiograd.Tensor]:
        x = aiograd.cat(inputs).requires_grad_()
        (g,) = await aiograd.grad(mlp(F, ap, x).sum(), [x])
        return list(g.split([t.shape[0] for t in inputs]))

    async def ag_batched() -> list[Any]:
        return list(await asyncio.gather(*(saliency(x) for x in axs)))

    def torch_one(x: Any) -> Any:
        x = x.clone().requires_grad_()
        (g,) = torch.autograd.grad(mlp(torch.nn.functional, tp, x).sum(), [x])
        return g

    async def torch_sequential() -> list[Any]:
        return [torch_one(x) for x in txs]

    async def torch_by_hand() -> list[Any]:
        return list(torch_one(torch.cat(txs)).split(sizes.rows))

    ours = [g.cpu().numpy() for g in await ag_batched()]
    for a, b in zip(ours, [g.cpu().numpy() for g in await torch_sequential()]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5, err_msg="saliency against torch's")
    sync_ag, sync_torch = (lambda: synchronize(dev)), (lambda: torch_synchronize(torch, tdev))
    return {
        "saliency_ag_batched_ms": await timed(ag_batched, sync_ag, args.warmup, args.repeats) * 1e3,
        "saliency_torch_sequential_ms": await timed(torch_sequential, sync_torch, args.warmup, args.repeats) * 1e3,
        "saliency_torch_by_hand_ms": await timed(torch_by_hand, sync_torch, args.warmup, args.repeats) * 1e3,
    }


# ------------------------------------------------------------------------------ two streams
async def bench_streams(sizes: Sizes, dev: str, args: argparse.Namespace) -> dict[str, float]:
    """Two backward calls one after the other and together, each graph on its own stream."""
    if not dev.startswith("cuda"):
        return {}
    n = sizes.wide
    rng = np.random.default_rng(2)
    x = aiograd.tensor(rng.standard_normal((n, n)).astype(np.float32) / 64, device=dev)
    ws = [aiograd.tensor(rng.standard_normal((n, n)).astype(np.float32) / 64, device=dev, requires_grad=True)
          for _ in range(2)]
    vs = [aiograd.tensor(rng.standard_normal((n, n // 4)).astype(np.float32) / 64, device=dev, requires_grad=True)
          for _ in range(2)]
    streams = [aiograd.cuda.Stream(), aiograd.cuda.Stream()]

    def graph(i: int) -> Any:
        with aiograd.cuda.stream(streams[i]):
            return ((x @ ws[i]).tanh() @ vs[i]).sum()

    def reset() -> None:
        for t in (*ws, *vs):
            t.grad = None

    async def one_after_the_other() -> None:
        reset()
        for i in range(2):
            await graph(i).backward()

    async def together() -> None:
        reset()
        losses = [graph(0), graph(1)]
        await asyncio.gather(*(loss.backward() for loss in losses))

    sync = lambda: synchronize(dev)  # noqa: E731
    return {"streams_serial_ms": await timed(one_after_the_other, sync, args.warmup, args.repeats) * 1e3,
            "streams_together_ms": await timed(together, sync, args.warmup, args.repeats) * 1e3}


# ------------------------------------------------------------------------------ main
async def main_async(args: argparse.Namespace) -> int:
    import torch

    sizes = Sizes(args.dry_run)
    dev = "cpu" if args.dry_run else "cuda"
    tdev = "cuda" if dev == "cuda" and torch.cuda.is_available() else "cpu"
    name = aiograd.cuda.get_device_name() if dev == "cuda" else "none (dry run on the CPU)"
    print(f"GPU: {name}; torch {torch.__version__} on {tdev}; "
          f"sizes: ResNet-18 {sizes.image}x{sizes.image} batch {sizes.batch}, "
          f"{sizes.requests} saliency requests of {sizes.rows} rows, streams {sizes.wide} wide")
    figures: dict[str, float] = {}
    figures.update(await bench_resnet(torch, sizes, dev, tdev, args))
    figures.update(await bench_saliency(torch, sizes, dev, tdev, args))
    figures.update(await bench_streams(sizes, dev, args))
    print("checks passed: ResNet-18's first loss and the saliencies agree with torch's (rtol 1e-3)")
    f = figures
    print(f"\nResNet-18 training step      aiograd {f['resnet_ag_ms']:9.2f} ms   torch {f['resnet_torch_ms']:9.2f} ms"
          f"   aiograd/torch {f['resnet_ag_ms'] / f['resnet_torch_ms']:.2f}x")
    print(f"loop's longest stall during {sizes.stall_steps} steps: {f['stall_max_ms']:.2f} ms "
          f"(p99 gap {f['stall_p99_ms']:.2f} ms; a 1 ms ticker)")
    print(f"{sizes.requests} saliency requests      aiograd batched {f['saliency_ag_batched_ms']:8.2f} ms   "
          f"torch sequential {f['saliency_torch_sequential_ms']:8.2f} ms "
          f"({f['saliency_torch_sequential_ms'] / f['saliency_ag_batched_ms']:.1f}x)   "
          f"torch batched by hand {f['saliency_torch_by_hand_ms']:8.2f} ms")
    if "streams_serial_ms" in f:
        print(f"two backward calls on two streams: one after the other {f['streams_serial_ms']:.2f} ms, "
              f"together {f['streams_together_ms']:.2f} ms "
              f"({f['streams_serial_ms'] / f['streams_together_ms']:.2f}x: above 1, the streams overlapped)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="on the CPU, small sizes: checks the script")
    args = parser.parse_args()
    if not args.dry_run and not aiograd.cuda.is_available():
        print("skipped: no CUDA GPU (CuPy missing or no GPU seen); --dry-run runs it on the CPU")
        return 0
    return aiograd.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
