"""Train a two-layer MLP on a three-armed spiral with plain SGD.

    python examples/train_mlp.py

The data (3 classes, 1,000 points each, in 2-D) is generated here from a fixed seed. The model is
``linear -> relu -> linear``, the loss ``cross_entropy`` over class indices, and each step does
``await loss.backward()`` and then updates the parameters in place under ``aiograd.no_grad()``.
A fifth of the points is held out. Prints the mean loss of every epoch, then the training and
held-out accuracy (both about 99%).
"""

from __future__ import annotations

import time

import numpy as np

import aiograd
import aiograd.nn.functional as F

CLASSES = 3
POINTS_PER_CLASS = 1000
HIDDEN = 128
EPOCHS = 40
BATCH = 64
LR = 0.5


def make_spiral(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Three interleaved spiral arms, one per class, with a little angular noise."""
    xs, ys = [], []
    for k in range(CLASSES):
        r = np.linspace(0.05, 1.0, POINTS_PER_CLASS)
        theta = np.linspace(k * 4.0, (k + 1) * 4.0, POINTS_PER_CLASS)
        theta += rng.normal(0.0, 0.3, POINTS_PER_CLASS)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(POINTS_PER_CLASS, k))
    # float32, the dtype of the parameters (aiograd's default, as torch's): numpy's is float64
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys)


def init_linear(fan_in: int, fan_out: int) -> tuple[aiograd.Tensor, aiograd.Tensor]:
    """He-initialised weight (fan_out, fan_in), as torch lays it out, and a zero bias."""
    weight = aiograd.randn(fan_out, fan_in) * np.sqrt(2.0 / fan_in)
    return weight.requires_grad_(), aiograd.zeros(fan_out, requires_grad=True)


async def main() -> None:
    rng = np.random.default_rng(0)
    aiograd.manual_seed(0)
    x_all, y_all = make_spiral(rng)
    shuffled = rng.permutation(len(x_all))
    held_out, train = shuffled[: len(x_all) // 5], shuffled[len(x_all) // 5 :]
    x_test, y_test = x_all[held_out], y_all[held_out]
    x_all, y_all = x_all[train], y_all[train]
    w1, b1 = init_linear(2, HIDDEN)
    w2, b2 = init_linear(HIDDEN, CLASSES)
    params = [w1, b1, w2, b2]

    def model(x: aiograd.Tensor) -> aiograd.Tensor:
        return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)

    start = time.perf_counter()
    for epoch in range(1, EPOCHS + 1):
        order = rng.permutation(len(x_all))
        total, batches = 0.0, 0
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            x, y = aiograd.tensor(x_all[idx]), aiograd.tensor(y_all[idx])
            loss = F.cross_entropy(model(x), y)
            await loss.backward()
            with aiograd.no_grad():
                for p in params:
                    p.data -= LR * p.grad.data
                    p.grad = None
            total += loss.item()
            batches += 1
        print(f"epoch {epoch:3d}  loss {total / batches:.4f}")

    elapsed = time.perf_counter() - start

    def accuracy(x: np.ndarray, y: np.ndarray) -> float:
        with aiograd.no_grad():
            predicted = model(aiograd.tensor(x)).argmax(dim=1)
        return float((predicted.numpy() == y).mean())

    print(f"training accuracy {accuracy(x_all, y_all):.1%}, held-out accuracy "
          f"{accuracy(x_test, y_test):.1%}, after {EPOCHS} epochs ({elapsed:.1f} s)")


if __name__ == "__main__":
    aiograd.run(main())
