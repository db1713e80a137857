"""How many of this process's cores other processes keep busy, read from the kernel's counters.

Linux counts, per CPU, the time spent running anything (``/proc/stat``: user, nice, system,
irq, softirq and steal, the time a virtual machine's host ran someone else) in clock ticks. Over
an interval, the busy ticks of the CPUs this process may run on, minus the CPU time this process
itself used (``os.times``: every thread of it, BLAS's included), divided by the interval, is the
number of cores taken by others: a second process spinning on one core reads as about 1.0. The
BLAS thread budget (``_blas``) leaves those cores to them. Elsewhere (macOS, Windows) there are
no such counters and ``others`` is always None: the budget then stays at the cores given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

__all__ = ["CpuLoad", "cores_given"]

_STAT = "/proc/stat"
#: /proc/stat's per-CPU fields: user nice system idle iowait irq softirq steal (guest time is
#: already inside user and nice). Idle and iowait are the two a CPU is free in.
_IDLE_FIELDS = (3, 4)
_COUNTED_FIELDS = 8


def cores_given() -> frozenset[int]:
    """The CPUs this process may run on (its affinity: a container's or ``taskset``'s limit)."""
    if hasattr(os, "sched_getaffinity"):
        return frozenset(os.sched_getaffinity(0))
    return frozenset(range(os.cpu_count() or 1))


def _read_stat() -> str:
    with open(_STAT, encoding="ascii") as f:
        # The per-CPU lines come first; the rest (interrupt counts) is long and not needed.
        return f.read(64 * 1024)


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


class CpuLoad:
    """Samples the busy time of ``cpus`` (default: the CPUs given to this process). ``others()``
    returns the cores other processes used since the previous call (None on the first call, or
    where the kernel's counters cannot be read). The readers are parameters so that tests can
    give scripted counters."""

    def __init__(
        self,
        cpus: frozenset[int] | None = None,
        read_stat: Callable[[], str] = _read_stat,
        own_cpu_seconds: Callable[[], float] = _own_cpu_seconds,
        clock: Callable[[], float] = time.monotonic,
        ticks_per_second: int | None = None,
    ) -> None:
        self.cpus = cores_given() if cpus is None else cpus
        self._names = {f"cpu{i}" for i in self.cpus}
        self._read_stat = read_stat
        self._own = own_cpu_seconds
        self._clock = clock
        if ticks_per_second is None:
            ticks_per_second = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._tick_s = 1.0 / ticks_per_second
        self._last: tuple[float, float, float] | None = None  # (clock, busy seconds, own seconds)
        self.readable = True

    def _busy_seconds(self) -> float | None:
        try:
            text = self._read_stat()
        except OSError:
            self.readable = False
            return None
        busy = 0
        found = 0
        for line in text.splitlines():
            if not line.startswith("cpu"):
                break  # the per-CPU lines are first
            fields = line.split()
            if fields[0] not in self._names:
                continue
            counts = [int(v) for v in fields[1 : 1 + _COUNTED_FIELDS]]
            busy += sum(counts) - sum(counts[i] for i in _IDLE_FIELDS if i < len(counts))
            found += 1
        if found == 0:
            self.readable = False
            return None
        return busy * self._tick_s

    def others(self) -> float | None:
        """Cores kept busy by other processes since the previous call (never below 0, never
        above the CPUs sampled)."""
        if not self.readable:
            return None
        busy = self._busy_seconds()
        if busy is None:
            return None
        now, own = self._clock(), self._own()
        last, self._last = self._last, (now, busy, own)
        if last is None or now <= last[0]:
            return None
        elapsed = now - last[0]
        used = (busy - last[1]) - (own - last[2])
        return min(float(len(self.cpus)), max(0.0, used / elapsed))

    def forget(self) -> None:
        """Start over (a forked child: its own CPU time restarts from zero)."""
        self._last = None
