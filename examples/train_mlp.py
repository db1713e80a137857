"""Train a two-layer MLP on a three-armed spiral, written as a PyTorch user writes it.

    python examples/train_mlp.py

The data (3 classes, 1,000 points each, in 2-D) is generated here from a fixed seed and split
with ``random_split`` (a fifth held out); a ``DataLoader`` shuffles the training points into
batches of 64. The model is ``nn.Sequential(Linear, ReLU, Linear)``, the loss
``nn.CrossEntropyLoss``, the optimizer ``optim.Adam`` with a ``StepLR`` schedule. Each step
awaits ``loss.backward()``; the rest is torch's code (``examples/porting/`` shows a torch script
and its port side by side). Prints the mean loss of every epoch, saves the weights with
``aiograd.save`` (safetensors when that package is installed, else ``.npz``; never pickle), loads
them into a fresh model and prints its training and held-out accuracy
(both about 99%).
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

import aiograd
from aiograd import nn, optim
from aiograd.utils.data import DataLoader, TensorDataset, random_split

CLASSES = 3
POINTS_PER_CLASS = 1000
HIDDEN = 128
EPOCHS = 40


def make_spiral(rng: np.random.Generator) -> TensorDataset:
    """Three interleaved spiral arms, one per class, with a little angular noise."""
    xs, ys = [], []
    for k in range(CLASSES):
        r = np.linspace(0.05, 1.0, POINTS_PER_CLASS)
        theta = np.linspace(k * 4.0, (k + 1) * 4.0, POINTS_PER_CLASS)
        theta += rng.normal(0.0, 0.3, POINTS_PER_CLASS)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(POINTS_PER_CLASS, k))
    # float32, the dtype of the parameters (aiograd's default, as torch's): numpy's is float64
    x = aiograd.from_numpy(np.concatenate(xs).astype(np.float32))
    return TensorDataset(x, aiograd.from_numpy(np.concatenate(ys)))


def model_for_spirals() -> nn.Module:
    return nn.Sequential(nn.Linear(2, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))


def accuracy(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = count = 0
    with aiograd.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(dim=1) == y).sum().item())
            count += len(y)
    return correct / count


async def main() -> None:
    aiograd.manual_seed(0)
    train_set, test_set = random_split(make_spiral(np.random.default_rng(0)), [0.8, 0.2])
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
    model = model_for_spirals()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=15, gamma=0.3)

    start = time.perf_counter()
    for epoch in range(1, EPOCHS + 1):
        model.train()
        total, batches = 0.0, 0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            await loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
        scheduler.step()
        print(f"epoch {epoch:3d}  loss {total / batches:.4f}")
    elapsed = time.perf_counter() - start

    path = os.path.join(tempfile.mkdtemp(), "spiral_mlp.pt")
    aiograd.save(model.state_dict(), path)
    restored = model_for_spirals()
    restored.load_state_dict(aiograd.load(path))
    train_eval, test_eval = DataLoader(train_set, batch_size=512), DataLoader(test_set, batch_size=512)
    print(f"training accuracy {accuracy(restored, train_eval):.1%}, held-out accuracy "
          f"{accuracy(restored, test_eval):.1%}, after {EPOCHS} epochs ({elapsed:.1f} s; "
          f"weights saved to and loaded from {path})")


if __name__ == "__main__":
    aiograd.run(main())
