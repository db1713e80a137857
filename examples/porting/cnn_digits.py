"""``cnn_digits_torch.py`` ported to aiograd: the imports changed (aiograd under torch's name), the
training step ``async`` and its backward awaited; every other line is the torch script's, and
after the same seed it computes torch's numbers, through the checkpoint and the resumption
(tests/test_porting_examples.py compares the losses step by step).

    python examples/porting/cnn_digits.py [--epochs 6] [--resume-at 3] [--double]
"""

import argparse
import asyncio
import os
import tempfile

import numpy as np
from sklearn.datasets import load_digits

import aiograd as torch
import aiograd.nn.functional as F
from aiograd import nn
from aiograd.optim.lr_scheduler import ReduceLROnPlateau
from aiograd.utils.data import DataLoader, TensorDataset, random_split


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


def make_data(batch_size):
    digits = load_digits()
    x = torch.from_numpy(digits.images.astype(np.float32) / 16.0).unsqueeze(1).to(torch.get_default_dtype())
    y = torch.from_numpy(digits.target).long()
    generator = torch.Generator().manual_seed(42)
    train, valid, test = random_split(TensorDataset(x, y), [0.7, 0.15, 0.15], generator=generator)
    return (DataLoader(train, batch_size=batch_size, shuffle=True),
            DataLoader(valid, batch_size=256), DataLoader(test, batch_size=256))


async def train_epoch(model, loader, optimizer, max_norm):
    model.train()
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        await loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total, correct, count = 0.0, 0, 0
    for x, y in loader:
        logits = model(x)
        total += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(1) == y).sum().item()
        count += y.numel()
    return total / count, correct / count


def build(lr):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    scheduler = ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=0, threshold=0.3)
    return model, optimizer, scheduler


async def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--resume-at", type=int, default=3, help="stop after this epoch and resume from the checkpoint")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--double", action="store_true", help="float64 throughout")
    args = parser.parse_args(argv)
    if args.double:
        torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    train_loader, valid_loader, test_loader = make_data(args.batch_size)
    checkpoint_path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    model, optimizer, scheduler = build(lr=3e-3)
    history = []
    epoch = 0
    while epoch < args.epochs:
        losses = await train_epoch(model, train_loader, optimizer, max_norm=1.0)
        history += losses
        valid_loss, valid_accuracy = evaluate(model, valid_loader)
        scheduler.step(valid_loss)
        lr = optimizer.param_groups[0]["lr"]
        print(f"epoch {epoch}: train loss {np.mean(losses):.4f}, valid loss {valid_loss:.4f} ({valid_accuracy:.1%}), lr {lr:g}")
        epoch += 1
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}, checkpoint_path)
        if epoch == args.resume_at:
            # start over from the file, as after a crash: new objects, the saved state
            checkpoint = torch.load(checkpoint_path)
            model, optimizer, scheduler = build(lr=1.0)
            model.load_state_dict(checkpoint["model"])
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler.load_state_dict(checkpoint["scheduler"])
            torch.set_rng_state(checkpoint["rng"])
            epoch = checkpoint["epoch"]
            print(f"resumed from {checkpoint_path} at epoch {epoch}")
    test_loss, test_accuracy = evaluate(model, test_loader)
    print(f"test loss {test_loss:.4f}, accuracy {test_accuracy:.1%}")
    torch.set_default_dtype(torch.float32)
    return history + [test_loss]


if __name__ == "__main__":
    asyncio.run(main())
