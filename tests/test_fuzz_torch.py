"""Differential fuzzing against torch: every registered op, random programs, both libraries.

Each test runs random calls of one op (``aiograd._ops._registry.OPS``; a new op is fuzzed with no
test written for it: see tests/fuzz/ops.py) on torch and on aiograd, over broadcast shapes with
0-size and 0-dim tensors, float32/float64/int64/bool, Python scalars, NaN/inf/-0.0/subnormal
values, transposed, step-sliced and expanded views, in-place writes through views, and invalid
arguments; and compares values, dtypes, shapes, ``grad_fn`` names, the gradients of a random
weighted sum of the outputs, and the exception types. A difference not listed in
tests/fuzz/known.py fails the test, with a copy-pasteable repro of the shrunk program.

Modes:

* CI (the default): Hypothesis, derandomized, ``CI_EXAMPLES`` programs per op (about a thousand
  in all), the same every run::

      python3 -m pytest -q -p no:randomly tests/test_fuzz_torch.py

* long (bug hunting): random seeds, ``AIOGRAD_FUZZ_EXAMPLES`` programs per op (default 50)::

      AIOGRAD_FUZZ=long AIOGRAD_FUZZ_EXAMPLES=200 python3 -m pytest -q tests/test_fuzz_torch.py

  and the collecting hunt, which goes on past the first difference and writes a report of the
  smallest repro of each distinct one (known ones included)::

      python3 tests/fuzz/hunt.py --programs 5000 --seed 1 --out /tmp/fuzz_report.md

  One op only: ``-k 'matches_torch and [add]'`` or ``hunt.py ... add``. With
  ``AIOGRAD_FUZZ_COLLECT=<file>`` the tests append each unknown difference (op, kind) to the file
  instead of failing: what to review when refreshing tests/fuzz/known.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from helpers import torch

pytestmark = [
    pytest.mark.aiograd(backends=["asyncio"]),  # op math: one loop is enough
    pytest.mark.skipif(torch is None, reason="torch not installed (the oracle extra)"),
    # both libraries under their real default dtype (float32), not the suite's float64 pin:
    # a program of integers through a float op gets the default dtype in each
    pytest.mark.real_default_dtype,
]

if torch is not None:
    from fuzz.compare import compare, repro, run
    from fuzz.hunt import grads
    from fuzz.known import KNOWN
    from fuzz.ops import SKIPPED, alias_pairs, draw_call, targets
    from fuzz.programs import libs
    from fuzz.source import HypothesisSource, RngSource
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    TARGETS = targets()
    NAMES = sorted(TARGETS)
else:  # pragma: no cover
    TARGETS, NAMES, KNOWN, SKIPPED = {}, [], {}, {}

LONG = os.environ.get("AIOGRAD_FUZZ", "").lower() == "long"
#: Programs per op in CI: with ~220 ops, under a thousand programs, well under a minute.
CI_EXAMPLES = 4
#: A file to append unknown differences to instead of failing (refreshing known.py).
COLLECT = os.environ.get("AIOGRAD_FUZZ_COLLECT", "")
EXAMPLES = int(os.environ.get("AIOGRAD_FUZZ_EXAMPLES", "50")) if LONG else CI_EXAMPLES


@pytest.fixture(scope="module", autouse=True)
def _stop_sync_loop() -> Iterator[None]:
    """aiograd.sync runs the backwards on a background loop: stopped when the module is done,
    so the fuzzer leaves no thread or task behind."""
    yield
    import aiograd.sync

    aiograd.sync.shutdown()


def _settings() -> settings:
    return settings(
        max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@pytest.mark.parametrize("name", NAMES)
def test_matches_torch(name: str) -> None:
    t = TARGETS[name]
    torch_lib, ag_lib = libs()
    tgrad, agrad = grads()

    @_settings()
    @given(st.data())
    def check(data: st.DataObject) -> None:
        src = HypothesisSource(data)
        call = draw_call(src, t)
        seed = src.seed()
        theirs = run(torch_lib, t, call, seed, tgrad)
        ours = run(ag_lib, t, call, seed, agrad)
        new = [d for d in compare(t, call, ours, theirs, ag_lib, torch_lib) if d.key not in KNOWN]
        if new and COLLECT:
            with open(COLLECT, "a") as f:
                f.writelines(f"{d.key!r}\t{d.detail.splitlines()[0][:160]}\n" for d in new)
            return
        assert not new, (  # (the message is built only on failure)
            f"{len(new)} unknown difference(s) for {name}: {[x.key for x in new]}\n"
            f"{new[0].key}: {new[0].detail}\n--- repro ---\n{repro(new[0], ours, theirs, ag_lib, torch_lib)}\n"
            f"(a known difference is an entry of tests/fuzz/known.py)")

    check()


def test_every_op_is_fuzzed_or_skipped() -> None:
    """Each registered op draws arguments (no parameter lacks a strategy), or is skipped."""
    from aiograd._ops._registry import OPS

    assert set(OPS) == set(TARGETS) | set(SKIPPED)
    for t in TARGETS.values():
        for s in range(5):
            draw_call(RngSource(s), t)


def test_known_entries_name_registered_ops() -> None:
    from fuzz.compare import KINDS

    for (op, kind), reason in KNOWN.items():
        assert op in TARGETS, f"known.py names {op!r}, which is not a fuzzed op"
        assert kind in KINDS, f"known.py: {op!r} has an unknown kind {kind!r}"
        assert reason, f"known.py: {op!r}/{kind!r} needs a reason"


@pytest.mark.parametrize("pair", alias_pairs() if torch is not None else [], ids=str)
def test_aliases_exist_where_torch_has_them(pair: tuple[str, str]) -> None:
    import aiograd

    op, alias = pair
    if hasattr(torch, alias):
        assert hasattr(aiograd, alias), f"torch.{alias} exists, aiograd.{alias} does not"
    if hasattr(torch.Tensor, alias):
        assert hasattr(aiograd.Tensor, alias), f"torch.Tensor.{alias} exists, aiograd.Tensor.{alias} does not"
