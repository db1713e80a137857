"""A Dask worker plugin that makes shipped nodes misbehave on the workers, for
tests/test_dask_executor.py: raise, kill the worker process, or block until released.

Registered with the scheduler, it is set up on every worker, including those a nanny restarts
after a death. It wraps ``aiograd.executors._shipping.rebuild`` (which every shipped node goes
through on the worker) and sabotages the first ``times`` shipped nodes across the whole cluster:
each claims one of ``times`` marker files, created atomically, so a node retried elsewhere after
its worker died is sabotaged only while claims are left.
"""

from __future__ import annotations

import os
from typing import Any

from distributed import Event, WorkerPlugin

RELEASE = "aiograd-sabotage-release"
STARTED = "aiograd-sabotage-started"


class SabotagedOnTheWorker(ValueError):
    """What ``mode="raise"`` raises, a type of the tests' own."""


class Sabotage(WorkerPlugin):
    name = "aiograd-sabotage"

    def __init__(self, mode: str, markers: str, times: int = 1) -> None:
        assert mode in ("raise", "die", "block")
        self.mode, self.markers, self.times = mode, markers, times
        self.original: Any = None

    def claim(self) -> bool:
        for i in range(self.times):
            try:
                os.close(os.open(os.path.join(self.markers, f"claim-{i}"), os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            return True
        return False

    def setup(self, worker: Any) -> None:
        from aiograd.executors import _shipping

        self.original = original = _shipping.rebuild

        def rebuild(shipment: Any, arrays: Any) -> Any:
            if self.claim():
                if self.mode == "raise":
                    raise SabotagedOnTheWorker(f"{shipment.name} sabotaged on the worker")
                if self.mode == "die":
                    os._exit(1)
                Event(STARTED).set()
                # bounded (generously: a loaded machine is slow); the test releases it when done
                Event(RELEASE).wait(timeout=600)
            return original(shipment, arrays)

        _shipping.rebuild = rebuild

    def teardown(self, worker: Any) -> None:
        from aiograd.executors import _shipping

        if self.original is not None:
            _shipping.rebuild = self.original
