"""glibc's malloc told to keep freed memory (aiograd.executors._malloc): what ``import aiograd``
sets, what the environment overrides, and the effect: a freed 20 MiB array's pages serve the next
one without being faulted in again. Each case in a fresh interpreter (malloc's settings are the
process's)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _glibc() -> bool:
    try:
        return "glibc" in (os.confstr("CS_GNU_LIBC_VERSION") or "")
    except (AttributeError, ValueError, OSError):  # no confstr (Windows), or not that name (macOS)
        return False


pytestmark = pytest.mark.skipif(not _glibc(), reason="glibc's malloc only")

_PROBE = """
import resource
import numpy as np
import aiograd
from aiograd.executors import _malloc

def faults_of_a_fresh_20_mib_array():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(20 << 18, dtype=np.float32)  # 20 MiB, every page written
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    del a
    return after - before

faults_of_a_fresh_20_mib_array()  # the first one is faulted in whatever the settings
print(_malloc.outcome, faults_of_a_fresh_20_mib_array())
"""


def _probe(**env: str) -> tuple[str, int]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "AIOGRAD_MALLOC"))}
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**environ, **env}, capture_output=True,
                         text=True, check=True, timeout=120)
    outcome, faults = out.stdout.rsplit(maxsplit=1)
    return outcome, int(faults)


def test_import_keeps_freed_memory_for_the_next_array() -> None:
    outcome, faults = _probe()
    assert outcome == "True"
    assert faults < 50  # its pages were kept (about 520 faults without: huge pages make it fewer than 5,120)


def test_without_the_tuning_the_pages_are_faulted_in_again() -> None:
    outcome, faults = _probe(AIOGRAD_MALLOC_TUNING="0")
    assert outcome == "AIOGRAD_MALLOC_TUNING=0"
    assert faults > 200  # what the tuning saves


def test_glibcs_own_variables_win() -> None:
    outcome, _ = _probe(MALLOC_TRIM_THRESHOLD_="0")
    assert outcome == "the environment sets MALLOC_TRIM_THRESHOLD_"
