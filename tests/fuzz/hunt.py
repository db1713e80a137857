"""The collecting mode: run many random programs, keep the smallest repro of each distinct
difference (op, kind), and write them as a Markdown report grouped by kind.

    python3 tests/fuzz/hunt.py --programs 5000 --seed 1 --out /tmp/fuzz_report.md

Unlike the pytest test it does not stop at the first difference, and reports known ones too
(marked as such), so the report is the list of what to fix.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import ``fuzz``, and this checkout's aiograd
    # (after PYTHONPATH's entries, so PYTHONPATH=<elsewhere> fuzzes another copy of aiograd)
    _pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path.insert(1 + len(_pythonpath), str(Path(__file__).resolve().parents[2]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.compare import Difference, Outcome, compare, repro, run  # noqa: E402
from fuzz.known import KNOWN  # noqa: E402
from fuzz.ops import SKIPPED, Target, draw_call, targets  # noqa: E402
from fuzz.programs import Lib, libs  # noqa: E402
from fuzz.source import RngSource  # noqa: E402

GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("Wrong values or gradients on ordinary inputs", ("value", "grad")),
    ("Wrong values or gradients only at non-finite/subnormal/huge inputs", ("value_nonfinite", "grad_nonfinite")),
    ("Result dtype differs", ("dtype",)),
    ("Result shape or number of outputs differs", ("shape", "outputs")),
    ("Missing names or arguments", ("missing",)),
    ("aiograd raises where torch computes", ("aiograd_raises",)),
    ("torch raises where aiograd computes", ("torch_raises",)),
    ("Exception type differs", ("error_type",)),
    ("Node names (grad_fn) or requires_grad differ", ("grad_fn",)),
]


def grads() -> tuple[Any, Any]:
    """(torch's, aiograd's) ``grad(outputs, inputs, grad_outputs)`` with unused inputs allowed."""
    import torch

    import aiograd.sync

    return (lambda o, i, w: torch.autograd.grad(o, i, w, allow_unused=True),
            lambda o, i, w: aiograd.sync.grad(o, i, w, allow_unused=True))


def program_seed(name: str, i: int, seed: int) -> int:
    return zlib.crc32(f"{name}:{i}:{seed}".encode())


def run_program(t: Target, s: int, torch_lib: Lib, ag_lib: Lib) -> tuple[list[Difference], Outcome, Outcome]:
    """Draw program ``s`` of ``t``, run it on both libraries, and compare."""
    tgrad, agrad = grads()
    call = draw_call(RngSource(s), t)
    theirs = run(torch_lib, t, call, s, tgrad)
    ours = run(ag_lib, t, call, s, agrad)
    return compare(t, call, ours, theirs, ag_lib, torch_lib), ours, theirs


@dataclass
class Found:
    diff: Difference
    repro: str
    count: int = 1


def hunt(programs: int, seed: int, only: list[str] | None = None) -> tuple[dict[tuple[str, str], Found], int]:
    torch_lib, ag_lib = libs()
    ts = targets()
    names = only or sorted(ts)
    found: dict[tuple[str, str], Found] = {}
    done = 0
    for i in range(programs):
        name = names[i % len(names)]
        s = program_seed(name, i // len(names), seed)
        try:
            diffs, ours, theirs = run_program(ts[name], s, torch_lib, ag_lib)
        except Exception as e:  # a bug of the fuzzer's own: say so, go on
            print(f"fuzzer error on {name} (program {s}): {type(e).__name__}: {e}", file=sys.stderr)
            continue
        done += 1
        for d in diffs:
            f = found.get(d.key)
            if f is None or d.call.size() < f.diff.call.size():
                found[d.key] = Found(d, repro(d, ours, theirs, ag_lib, torch_lib), (f.count + 1) if f else 1)
            else:
                f.count += 1
    return found, done


def report(found: dict[tuple[str, str], Found], done: int, seconds: float, seed: int) -> str:
    lines = ["# aiograd vs torch: differential fuzz report",
             "",
             f"{done} programs (seed {seed}, `python3 tests/fuzz/hunt.py --programs {done} --seed {seed}`), "
             f"{seconds:.0f} s; {len(found)} distinct differences (op, kind). Each repro below is the "
             "smallest program that showed it; `count` is how many programs did.",
             f"Ops not fuzzed: {', '.join(f'{k} ({v})' for k, v in SKIPPED.items())}.",
             "",
             "| group | distinct |", "|---|---|"]
    for title, kinds in GROUPS:
        lines.append(f"| {title} | {sum(1 for k in found if k[1] in kinds)} |")
    for title, kinds in GROUPS:
        keys = sorted(k for k in found if k[1] in kinds)
        if not keys:
            continue
        lines += ["", f"## {title} ({len(keys)})"]
        for key in keys:
            f = found[key]
            known = " (in known.py)" if key in KNOWN else " (NEW: not in known.py)"
            lines += ["", f"### `{key[0]}`: {key[1]}{known}, count {f.count}", "",
                      "```", f.diff.detail, "```", "", "```python", f.repro, "```"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/fuzz_report.md")
    ap.add_argument("ops", nargs="*", help="only these ops")
    a = ap.parse_args()
    t0 = time.time()
    found, done = hunt(a.programs, a.seed, a.ops or None)
    Path(a.out).write_text(report(found, done, time.time() - t0, a.seed))
    counts = collections.Counter(k[1] for k in found)
    print(f"{done} programs, {len(found)} distinct differences in {time.time() - t0:.0f} s: {dict(counts)}")
    new = sorted(k for k in found if k not in KNOWN)
    print(f"not in known.py ({len(new)}):", *(f"    {k!r}: \"{found[k].diff.detail.splitlines()[0][:100]}\"," for k in new), sep="\n")


if __name__ == "__main__":
    main()
