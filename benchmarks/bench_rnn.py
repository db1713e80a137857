"""What aiograd's recurrent layers cost against torch's: ``nn.LSTM``/``nn.GRU``/``nn.RNN`` (tanh),
1 and 2 layers, one direction and bidirectional, float32 and float64, sequences of 20 and 200
steps, batch 32, input 64, hidden 128, padded (``T x B x F``) input. Two passes are timed:
``fwd``, the forward under ``no_grad`` (inference), and ``fwd+bwd``, the forward with gradients
on followed by ``output.sum().backward()`` (weights and input). aiograd's module is loaded with
torch's weights, so both compute the same thing (the largest output difference is printed as a
check). The figure is aiograd's time over torch's: each repeat times aiograd then torch back to
back (a pair), and the table gives the medians of the times and of the per-pair ratios, plus the
spread (min-max) of the ratios as a noise indicator. Both libraries run with ONE thread by
default (torch's intra-op threads, and numpy's BLAS threads via threadpoolctl), as these small
per-step matmuls gain little from threads and spinning threads make a shared machine noisy;
``--threads N`` sets another count, ``--threads 0`` leaves both libraries' defaults.
``--clock cpu`` times with the process's CPU time instead of the wall clock: with one thread
it is the steadier figure on a loaded machine (it leaves out the time other work takes the core).

    python benchmarks/bench_rnn.py [--repeats 5] [--modes LSTM,GRU,RNN] [--dtypes float32,float64]
                                   [--seqs 20,200] [--layers 1,2] [--dirs uni,bi]
                                   [--passes fwd,fwd+bwd] [--threads 1] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import numpy as np
from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402

BATCH, INPUT, HIDDEN = 32, 64, 128


def _seconds(fn: Callable[[], object], inner: int, cpu: bool = False) -> float:
    if not cpu:
        with Timer() as t:
            for _ in range(inner):
                fn()
        return t.seconds / inner
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(inner):
            fn()
        return (time.process_time() - start) / inner
    finally:
        gc.enable()


def _pair(mode: str, layers: int, bidir: bool, dtype: str, seq: int) -> tuple[Any, Any, Any, Any]:
    """torch's module and input, and aiograd's, with the same weights and data."""
    import torch

    cls = {"LSTM": "LSTM", "GRU": "GRU", "RNN": "RNN"}[mode]
    tdt = getattr(torch, dtype)
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir).to(tdt)
    am = getattr(aiograd.nn, cls)(INPUT, HIDDEN, num_layers=layers, bidirectional=bidir)
    for name, p in tm.named_parameters():
        setattr(am, name, aiograd.nn.Parameter(aiograd.tensor(p.detach().numpy().copy())))
    x = np.random.default_rng(0).standard_normal((seq, BATCH, INPUT)).astype(dtype)
    return tm, torch.tensor(x, requires_grad=True), am, aiograd.tensor(x, requires_grad=True)


def _runner(lib: Any, module: Any, x: Any, backward: bool) -> Callable[[], object]:
    def run() -> object:
        with nullcontext() if backward else lib.no_grad():
            out = module(x)[0]
            if backward:
                if lib is aiograd:
                    aiograd.sync.backward(out.sum())
                else:
                    out.sum().backward()
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", default="LSTM,GRU,RNN")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--seqs", default="20,200")
    parser.add_argument("--layers", default="1,2")
    parser.add_argument("--dirs", default="uni,bi")
    parser.add_argument("--passes", default="fwd,fwd+bwd")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    import torch

    limits: Any = nullcontext()
    if args.threads:
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.threads)
        limits = threadpool_limits(args.threads)
    cpu = args.clock == "cpu"
    print(f"clock {args.clock}, torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}, repeats {args.repeats}")
    head = f"{'mode':5s} {'L':>1s} {'dir':3s} {'dtype':7s} {'T':>4s} {'pass':7s}"
    print(f"{head} {'aiograd ms':>10s} {'torch ms':>9s} {'ratio':>6s} {'ratio range':>13s} {'max|diff|':>9s}")
    with limits:
        for mode in args.modes.split(","):
            for layers in (int(v) for v in args.layers.split(",")):
                for bidir in (d == "bi" for d in args.dirs.split(",")):
                    for dtype in args.dtypes.split(","):
                        for seq in (int(v) for v in args.seqs.split(",")):
                            tm, tx, am, ax = _pair(mode, layers, bidir, dtype, seq)
                            with torch.no_grad(), aiograd.no_grad():
                                diff = float(np.abs(am(ax)[0].numpy() - tm(tx)[0].numpy()).max())
                            for pas in args.passes.split(","):
                                back = pas == "fwd+bwd"
                                ours, theirs = _runner(aiograd, am, ax, back), _runner(torch, tm, tx, back)
                                ours(), theirs()
                                inner = 1 if seq * layers * (2 if bidir else 1) >= 200 else 3
                                pairs = [
                                    (_seconds(ours, inner, cpu), _seconds(theirs, inner, cpu)) for _ in range(args.repeats)
                                ]
                                a = statistics.median(p[0] for p in pairs)
                                t = statistics.median(p[1] for p in pairs)
                                ratios = [p[0] / p[1] for p in pairs]
                                d = "bi" if bidir else "uni"
                                print(
                                    f"{mode:5s} {layers:1d} {d:3s} {dtype:7s} {seq:4d} {pas:7s} {a * 1e3:10.2f} "
                                    f"{t * 1e3:9.2f} {statistics.median(ratios):6.2f} "
                                    f"{min(ratios):6.2f}-{max(ratios):<6.2f} {diff:9.1e}",
                                    flush=True,
                                )


if __name__ == "__main__":
    main()
