"""What drawing torch's random numbers costs: aiograd's samplers (torch's Mersenne Twister and
torch's CPU algorithms, on numpy; aiograd/_base/_sampling.py) against torch's own, at a size a
training step draws (a 256 x 1024 activation: dropout's mask, ``randn``, ``rand``) and a
DataLoader's epoch (``randperm`` of 60,000). Both libraries draw the same numbers (see
tests/test_random_torch_stream.py); the figure is aiograd's time over torch's, the median of
paired runs.

    python benchmarks/bench_random.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable

from _timing import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402


def _seconds(fn: Callable[[], object], inner: int) -> float:
    with Timer() as t:
        for _ in range(inner):
            fn()
    return t.seconds / inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # (torch's samplers are serial; one thread for its elementwise parts)
    x, tx = aiograd.ones(256, 1024), torch.ones(256, 1024)
    cases = {
        "dropout(p=0.1), 256x1024": (lambda: F.dropout(x, 0.1), lambda: torch.nn.functional.dropout(tx, 0.1)),
        "randn(256, 1024)": (lambda: aiograd.randn(256, 1024), lambda: torch.randn(256, 1024)),
        "rand(256, 1024)": (lambda: aiograd.rand(256, 1024), lambda: torch.rand(256, 1024)),
        "randint(0, 10, (256, 1024))": (lambda: aiograd.randint(0, 10, (256, 1024)), lambda: torch.randint(0, 10, (256, 1024))),
        "randperm(60000)": (lambda: aiograd.randperm(60000), lambda: torch.randperm(60000)),
    }
    print(f"{'case':32s} {'aiograd ms':>11s} {'torch ms':>9s} {'ratio':>6s}")
    for name, (ours, theirs) in cases.items():
        ours(), theirs()
        pairs = [(_seconds(ours, 5), _seconds(theirs, 5)) for _ in range(args.repeats)]
        a = statistics.median(p[0] for p in pairs)
        t = statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[0] / p[1] for p in pairs)
        print(f"{name:32s} {a * 1e3:11.2f} {t * 1e3:9.2f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
