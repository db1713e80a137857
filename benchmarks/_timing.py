"""Timing helper shared by the benchmarks (run as ``python benchmarks/NAME.py``, so this folder
is on the import path)."""

from __future__ import annotations

import gc
import time


class Timer:
    """Time a block with the garbage collector collected before and disabled during it, as
    ``timeit`` does: a collection in the middle is not the code's cost."""

    def __enter__(self) -> Timer:
        gc.collect()
        gc.disable()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
        gc.enable()
