"""A typical PyTorch training script: an MLP on scikit-learn's 8x8 digits, with a DataLoader,
CrossEntropyLoss, Adam, StepLR, train()/eval(), evaluation under no_grad, and the state dict
saved and loaded. ``mlp_digits.py`` is its aiograd port: the same lines but the imports and the
``await``s.

    python examples/porting/mlp_digits_torch.py [--epochs 5] [--double]
"""

import argparse
import os
import tempfile

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset, random_split


def make_data(batch_size):
    digits = load_digits()
    x = torch.from_numpy(digits.data.astype(np.float32) / 16.0).to(torch.get_default_dtype())
    y = torch.from_numpy(digits.target).long()
    train, test = random_split(TensorDataset(x, y), [0.8, 0.2])
    return DataLoader(train, batch_size=batch_size, shuffle=True), DataLoader(test, batch_size=256)


def train_epoch(model, loader, loss_fn, optimizer):
    model.train()
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def evaluate(model, loader, loss_fn):
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            total += loss_fn(logits, y).item() * len(y)
            correct += (logits.argmax(dim=1) == y).sum().item()
            count += len(y)
    return total / count, correct / count


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--double", action="store_true", help="float64 throughout")
    args = parser.parse_args(argv)
    if args.double:
        torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    train_loader, test_loader = make_data(args.batch_size)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
    history = []
    for epoch in range(args.epochs):
        losses = train_epoch(model, train_loader, loss_fn, optimizer)
        scheduler.step()
        history += losses
        test_loss, accuracy = evaluate(model, test_loader, loss_fn)
        print(f"epoch {epoch}: train loss {np.mean(losses):.4f}, test loss {test_loss:.4f}, accuracy {accuracy:.1%}")
    path = os.path.join(tempfile.mkdtemp(), "mlp.pt")
    torch.save(model.state_dict(), path)
    restored = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10))
    restored.load_state_dict(torch.load(path))
    print(f"restored from {path}: test accuracy {evaluate(restored, test_loader, loss_fn)[1]:.1%}")
    torch.set_default_dtype(torch.float32)
    return history


if __name__ == "__main__":
    main()
