"""glibc's malloc, told to keep the memory a training step or a batch frees for the next one.

numpy allocates every result afresh. glibc serves a block above its mmap threshold (128 KiB at
start, raised as such blocks are freed) with a fresh mapping, and gives the free top of its heap
back to the kernel past its trim threshold; either way the next step's arrays of the same sizes
are page-faulted in anew, one 4 KiB page at a time (about 4 µs each on a virtual machine, a
fraction of that on bare metal). On the models of ``benchmarks/bench_models.py`` that was 4,100
faults per U-Net step (15% of its CPU time) and 1,500 per transformer step (9%).

At ``import aiograd`` on glibc, unless the environment already sets one of glibc's own variables
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``) or
``AIOGRAD_MALLOC_TUNING=0`` asks not to, ``mallopt`` fixes the mmap threshold at 32 MiB (the
most glibc's own adjustment reaches on 64-bit) and the trim threshold at 128 MiB: blocks below
32 MiB come from the heap and are reused, and up to 128 MiB of free heap stays in the process.
The cost: a process's resident memory stays near its peak instead of shrinking after it, as
with jemalloc or tcmalloc (which many PyTorch deployments preload for the same reason).
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
_GLIBC_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")

#: What ``tune`` did: None before it ran, else True (set) or the reason it left malloc alone.
outcome: bool | str | None = None


def tune() -> bool | str:
    """Set the two thresholds (once); True if set, else why not."""
    global outcome
    if outcome is None:
        outcome = _tune()
    return outcome


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return False


def _tune() -> bool | str:
    if os.environ.get("AIOGRAD_MALLOC_TUNING", "1") == "0":
        return "AIOGRAD_MALLOC_TUNING=0"
    chosen = [v for v in _GLIBC_VARIABLES if v in os.environ]
    if chosen:
        return f"the environment sets {chosen[0]}"
    if not _glibc():
        return "not glibc"
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return "no mallopt"
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # (setting either turns glibc's own adjustment of both off: both are set)
    if not (mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return "mallopt refused"
    return True
