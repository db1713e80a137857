"""One training step of a small CNN and of a small transformer, aiograd against torch (CPU).

Models, written once over the library (``aiograd`` or ``torch``: the same ``nn`` code builds
both, so their state dicts have the same keys):

- CNN on 8x8 images (scikit-learn's digits' size), batch 64: Conv2d(1, 16, 3, padding=1), ReLU,
  MaxPool2d(2), Conv2d(16, 32, 3, padding=1), ReLU, MaxPool2d(2), Flatten, Linear(128, 10);
  cross-entropy; Adam.
- Transformer, character level, batch 16, sequence 64, width 128: token and position
  embeddings, two pre-norm ``TransformerEncoderLayer``s (4 heads, feed-forward 512, GELU, causal
  mask, dropout 0 so that both libraries compute the same numbers), LayerNorm, a linear head over
  a vocabulary of 65; cross-entropy over every position; AdamW.

A step is ``zero_grad``, forward, backward (``await loss.backward()`` for aiograd) and the
optimizer's ``step``, float32. Both libraries start from the same weights (aiograd's
initialisation, written to an ``.npz`` and loaded into each with ``load_state_dict``), and their
first step is checked: the same loss, the same updated weights.

Timing: each (library, model, threads) runs in a fresh worker process of its own (this script
with ``--worker``), ``--warmup`` untimed steps then ``--steps`` timed ones; the workers run in
``--rounds`` rounds taking the configurations in turn. BLAS threads: "1 thread" sets
OMP/OPENBLAS/MKL_NUM_THREADS=1 in the worker's environment (and ``torch.set_num_threads(1)``);
"all threads" leaves the environment as it is and gives torch ``os.cpu_count()`` threads.
Reported: the median step, and aiograd's time over torch's.

    python benchmarks/bench_models.py [--rounds 3] [--steps 20] [--warmup 5] [--only cnn]

Goals: the CNN step within 2x of torch, the transformer step within 1.5x.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402

CNN_BATCH = 64
VOCAB, SEQ, WIDTH, HEADS, LAYERS, TF_BATCH = 65, 64, 128, 4, 2, 16
N_BATCHES = 4
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# ------------------------------------------------------------------------------------- models
def make_cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


def make_transformer(lib: Any) -> Any:
    nn = lib.nn

    class CharTransformer(nn.Module):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(VOCAB, WIDTH)
            self.positions = nn.Embedding(SEQ, WIDTH)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, activation="relu",
                                           batch_first=True, norm_first=True)
                for _ in range(LAYERS)
            )
            self.norm = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, VOCAB)
            # True above the diagonal: a position does not attend to later ones
            self.register_buffer("causal", lib.tensor(np.triu(np.ones((SEQ, SEQ), bool), 1)),
                                 persistent=False)
            self.register_buffer("where", lib.arange(SEQ), persistent=False)

        def forward(self, idx: Any) -> Any:
            h = self.tokens(idx) + self.positions(self.where)
            for block in self.blocks:
                h = block(h, src_mask=self.causal, is_causal=True)
            return self.head(self.norm(h))

    return CharTransformer()


MODELS = {"cnn": make_cnn, "transformer": make_transformer}


def make_batches(model: str) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    if model == "cnn":
        return [(rng.uniform(0, 1, (CNN_BATCH, 1, 8, 8)).astype(np.float32),
                 rng.integers(0, 10, CNN_BATCH)) for _ in range(N_BATCHES)]
    return [(rng.integers(0, VOCAB, (TF_BATCH, SEQ)), rng.integers(0, VOCAB, (TF_BATCH, SEQ)))
            for _ in range(N_BATCHES)]


def make_optimizer(lib: Any, model: str, params: Any) -> Any:
    if model == "cnn":
        return lib.optim.Adam(params, lr=1e-3)
    return lib.optim.AdamW(params, lr=3e-4)


# ------------------------------------------------------------------------------------- steps
def build(lib_name: str, model: str, weights: str) -> tuple[Any, bool, Any]:
    """``(step, is_async, state)``: ``step(b)`` runs one training step on batch ``b`` and returns
    its loss; ``state()`` returns the weights as numpy arrays by name."""
    batches = make_batches(model)
    arrays = dict(np.load(weights))
    if lib_name == "aiograd":
        import aiograd.nn.functional as F

        net = MODELS[model](aiograd).float()  # aiograd's layers are float64 by default
        net.load_state_dict({k: aiograd.tensor(v) for k, v in arrays.items()})
        opt = make_optimizer(aiograd, model, net.parameters())
        data = [(aiograd.tensor(x), aiograd.tensor(y)) for x, y in batches]

        async def ag_step(b: int) -> float:
            x, y = data[b]
            opt.zero_grad()
            out = net(x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
            await loss.backward()
            opt.step()
            return loss.item()

        return ag_step, True, lambda: {k: v.numpy() for k, v in net.state_dict().items()}

    import torch
    import torch.nn.functional as TF

    net = MODELS[model](torch)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in arrays.items()})
    opt = make_optimizer(torch, model, net.parameters())
    tdata = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def torch_step(b: int) -> float:
        x, y = tdata[b]
        opt.zero_grad()
        out = net(x)
        loss = TF.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    return torch_step, False, lambda: {k: v.detach().numpy() for k, v in net.state_dict().items()}


def write_weights(model: str, path: str) -> None:
    aiograd.manual_seed(0)
    net = MODELS[model](aiograd).float()
    np.savez(path, **{k: v.numpy() for k, v in net.state_dict().items()})


def check(model: str, weights: str) -> None:
    """Both libraries' first step from the same weights: the same loss and updated weights."""
    results = {}
    for lib_name in ("aiograd", "torch"):
        step, is_async, state = build(lib_name, model, weights)
        loss = aiograd.run(step(0)) if is_async else step(0)
        results[lib_name] = (loss, state())
    (ag_loss, ag_state), (t_loss, t_state) = results["aiograd"], results["torch"]
    np.testing.assert_allclose(ag_loss, t_loss, rtol=1e-4, err_msg=f"{model}: loss")
    for key, ref in t_state.items():
        np.testing.assert_allclose(ag_state[key], ref, rtol=1e-3, atol=1e-5, err_msg=f"{model}: {key}")


def worker(args: argparse.Namespace) -> None:
    """Time one configuration in this process; print the step times as JSON."""
    if args.worker == "torch":
        import torch

        torch.set_num_threads(args.torch_threads)
    step, is_async, _ = build(args.worker, args.model, args.weights)

    async def run() -> list[float]:
        times = []
        for i in range(args.warmup + args.steps):
            t0 = time.perf_counter()
            if is_async:
                await step(i % N_BATCHES)
            else:
                step(i % N_BATCHES)
            if i >= args.warmup:
                times.append(time.perf_counter() - t0)
        return times

    print(json.dumps(aiograd.run(run())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per worker")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per worker")
    parser.add_argument("--only", choices=sorted(MODELS), action="append")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--torch-threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed (pip install torch), nothing to compare with")
        return

    cpus = os.cpu_count() or 1
    print(f"models: one training step (zero_grad, forward, backward, optimizer step), float32; "
          f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__.split('+')[0]}, {cpus} CPUs")
    print(f"median of {args.rounds} x {args.steps} steps per configuration, each in its own "
          f"process ({args.warmup} warmup steps); first step checked against torch's")
    print()
    header = f"{'model':<14}{'BLAS threads':<14}{'aiograd ms':>12}{'torch ms':>12}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.only or sorted(MODELS):
            weights = os.path.join(tmp, f"{model}.npz")
            write_weights(model, weights)
            check(model, weights)
            for label, n in (("1", 1), (f"all ({cpus})", cpus)):
                env = dict(os.environ)
                if n == 1:
                    env.update({var: "1" for var in THREAD_VARS})
                times: dict[str, list[float]] = {"aiograd": [], "torch": []}
                for _ in range(args.rounds):
                    for lib_name in times:
                        cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib_name,
                               "--model", model, "--weights", weights, "--torch-threads", str(n),
                               "--steps", str(args.steps), "--warmup", str(args.warmup)]
                        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
                        if proc.returncode != 0:
                            sys.exit(f"worker {lib_name} {model} failed:\n{proc.stderr}")
                        times[lib_name] += json.loads(proc.stdout.strip().splitlines()[-1])
                ag, th = statistics.median(times["aiograd"]), statistics.median(times["torch"])
                print(f"{model:<14}{label:<14}{ag * 1e3:>12.2f}{th * 1e3:>12.2f}{ag / th:>8.2f}",
                      flush=True)


if __name__ == "__main__":
    main()
