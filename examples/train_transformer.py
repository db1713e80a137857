"""Train a 2-layer character-level transformer with ``aiograd.nn`` on this repository's own docs.

    python examples/train_transformer.py [--steps 300] [--width 128] [--seed 0]

The text is ``docs/engine.md`` (it ships with the repository; no download): the first 90% to
train on, the rest held out. The model: token and position embeddings, two pre-norm
``nn.TransformerEncoderLayer``s with a causal mask (a position attends only to itself and
earlier ones), a final ``LayerNorm`` and a linear head over the characters; cross-entropy of the
next character at every position, ``optim.AdamW`` with a linear warm-up (``LambdaLR``) and
gradient clipping (``nn.utils.clip_grad_norm_``). Every ``--every`` steps it prints the training
loss and the held-out loss in bits per character, and at the end a sample generated greedily
from a prompt.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

import aiograd
import aiograd.nn.functional as F
from aiograd import nn, optim

TEXT = Path(__file__).resolve().parent.parent / "docs" / "engine.md"


class CharTransformer(nn.Module):
    """Next-character prediction over sequences of at most ``context`` characters."""

    def __init__(self, vocab: int, context: int, width: int, heads: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=dropout, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx: aiograd.Tensor) -> aiograd.Tensor:
        length = idx.shape[1]
        # True above the diagonal: those (query, key) pairs are masked out
        causal = aiograd.tensor(np.triu(np.ones((length, length), dtype=bool), 1))
        h = self.tokens(idx) + self.positions(aiograd.arange(length))
        for block in self.blocks:
            h = block(h, src_mask=causal, is_causal=True)
        return self.head(self.norm(h))


def batches(data: np.ndarray, rng: np.random.Generator, batch: int, context: int) -> tuple[aiograd.Tensor, aiograd.Tensor]:
    """``batch`` random windows of the text and the same windows shifted by one character."""
    starts = rng.integers(0, len(data) - context - 1, batch)
    window = starts[:, None] + np.arange(context)
    return aiograd.tensor(data[window]), aiograd.tensor(data[window + 1])


def loss_of(model: CharTransformer, x: aiograd.Tensor, y: aiograd.Tensor) -> aiograd.Tensor:
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def generate(model: CharTransformer, prompt: np.ndarray, n: int, context: int) -> np.ndarray:
    """``n`` characters after ``prompt``, each the most likely next one."""
    out = list(prompt)
    model.eval()
    with aiograd.no_grad():
        for _ in range(n):
            window = aiograd.tensor(np.asarray(out[-context:])[None])
            out.append(int(model(window)[0, -1].argmax()))
    model.train()
    return np.asarray(out[len(prompt):])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--every", type=int, default=50, help="print the losses every N steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    text = TEXT.read_text(encoding="utf-8")
    chars = sorted(set(text))
    code = {c: i for i, c in enumerate(chars)}
    data = np.array([code[c] for c in text], dtype=np.int64)
    cut = int(0.9 * len(data))
    train, held_out = data[:cut], data[cut:]
    print(f"{TEXT.name}: {len(text):,} characters, {len(chars)} distinct")

    aiograd.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    # float32, as torch's layers (aiograd's are made in its default float64)
    model = CharTransformer(len(chars), args.context, args.width, args.heads, args.layers, args.dropout).float()
    print(f"model: {sum(p.numel() for p in model.parameters()):,} parameters")
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    schedule = optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warmup))
    bits = 1 / math.log(2)
    start = time.perf_counter()
    running = []
    for step in range(1, args.steps + 1):
        x, y = batches(train, rng, args.batch, args.context)
        opt.zero_grad()
        loss = loss_of(model, x, y)
        await loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        running.append(loss.item())
        if step % args.every == 0 or step == args.steps:
            model.eval()
            with aiograd.no_grad():
                held = loss_of(model, *batches(held_out, rng, 4 * args.batch, args.context)).item()
            model.train()
            print(f"step {step:4d}  loss {np.mean(running) * bits:.3f}  "
                  f"held-out {held * bits:.3f} bits/char")
            running = []
    print(f"trained in {time.perf_counter() - start:.1f} s")
    prompt = "The engine "
    sample = generate(model, np.array([code[c] for c in prompt]), 80, args.context)
    print("sample: " + repr(prompt + "".join(chars[i] for i in sample)))


if __name__ == "__main__":
    aiograd.run(main())
