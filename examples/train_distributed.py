"""Train an MLP with data-parallel gradients on a Dask cluster (aiograd.distributed).

    python examples/train_distributed.py                      # a LocalCluster of 2 processes
    python examples/train_distributed.py --scheduler tcp://host:8786   # an existing cluster

Needs ``pip install -e ".[distributed]"``. The data is the three-armed spiral of
``train_mlp.py`` (3,000 points, generated from a fixed seed). Each step's batch is cut into one
shard per worker; each worker computes its shard's gradients with aiograd on its own copy of the
model (shipped once, its parameters again after each optimizer step), the cluster sums them, and
``Adam`` steps here, as one process would. After the last epoch the script checks one batch's
gradients against this process's own and prints the largest difference (float rounding).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

import aiograd
import aiograd.nn.functional as F
from aiograd import nn, optim
from aiograd.distributed import DataParallel


def make_spiral(rng: np.random.Generator, classes: int = 3, points: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Three interleaved spiral arms, one per class, with a little angular noise."""
    xs, ys = [], []
    for k in range(classes):
        r = np.linspace(0.05, 1.0, points)
        theta = np.linspace(k * 4.0, (k + 1) * 4.0, points) + rng.normal(0.0, 0.3, points)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(points, k))
    return np.concatenate(xs), np.concatenate(ys)


async def train(client: object, epochs: int, batch: int) -> None:
    rng = np.random.default_rng(0)
    aiograd.manual_seed(0)
    x_all, y_all = make_spiral(rng)
    # float64 (the spiral's dtype; the default is float32): the last check compares the cluster's
    # gradients with this process's to float64 rounding
    model = nn.Sequential(nn.Linear(2, 128), nn.ReLU(), nn.Linear(128, 3)).double()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    dp = DataParallel(client, model, F.cross_entropy)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_all))
        losses = []
        for i in range(0, len(order), batch):
            rows = order[i : i + batch]
            optimizer.zero_grad()
            losses.append(await dp.backward(x_all[rows], y_all[rows]))
            optimizer.step()
        print(f"epoch {epoch:2d}  loss {np.mean(losses):.4f}")
    with aiograd.no_grad():
        accuracy = (model(aiograd.tensor(x_all)).argmax(dim=1).numpy() == y_all).mean()
    print(f"accuracy {accuracy:.3f}, {time.perf_counter() - start:.1f} s, "
          f"model shipped {dp.model_shipments}x, parameters {dp.parameter_shipments}x")
    # The last check: one batch's gradients on the cluster against this process's own.
    x, y = aiograd.tensor(x_all[:batch]), aiograd.tensor(y_all[:batch])
    _, grads = await dp.grad(x, y)
    want = await aiograd.grad(F.cross_entropy(model(x), y), list(model.parameters()))
    diff = max(float(np.abs(g.numpy() - w.numpy()).max()) for g, w in zip(grads, want, strict=True))
    print(f"largest difference from one process's gradients: {diff:.1e}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheduler", help="a running cluster's scheduler address (default: a LocalCluster)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    if args.scheduler:
        async with Client(args.scheduler, asynchronous=True) as client:
            await train(client, args.epochs, args.batch)
        return
    async with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
        asynchronous=True,
    ) as cluster, Client(cluster, asynchronous=True) as client:
        await train(client, args.epochs, args.batch)


if __name__ == "__main__":
    asyncio.run(main())
