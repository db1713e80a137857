"""The gradient service's Prometheus metrics (``GET /metrics``), through prometheus_client.

One ``Metrics`` per served application, each on a registry of its own (tests and embedding
applications may make several). With several worker processes, prometheus_client's multiprocess
mode (``enable_multiprocess``, before any metric is made) has each process write its values to a
shared directory and any worker's ``/metrics`` report the sum over all of them, so a scrape that
reaches one worker still sees the whole service.

Label values come from bounded sets only (the known endpoints or ``other``, HTTP status codes),
so a client requesting random paths cannot grow the metrics without bound.
"""

from __future__ import annotations

import bisect
import glob
import os
import struct
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess, values
from prometheus_client.mmap_dict import MmapedDict

__all__ = ["Metrics", "enable_multiprocess", "mark_process_dead"]


class _LiveFilesCollector:
    """prometheus_client's multiprocess collector, minus the files it cannot read: a worker that
    was just killed has its files removed (``mark_process_dead``) or half written while
    ``/metrics`` reads them, and prometheus_client's own collector then raises, making every
    scrape a 500 until the next one. Each file is read on its own first; one that is gone or
    unreadable is left out of this scrape (its process is dead: its counts are the restart's)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def collect(self) -> Any:
        for _ in range(3):  # (a file removed between the probe and the merge: probe again)
            readable = []
            for path in glob.glob(os.path.join(self.directory, "*.db")):
                try:
                    list(MmapedDict.read_all_values_from_file(path))  # (a generator: read it all)
                except (OSError, ValueError, RuntimeError, struct.error):  # ("file is corrupted")
                    continue
                readable.append(path)
            try:
                return multiprocess.MultiProcessCollector.merge(readable, accumulate=True)
            except FileNotFoundError:
                continue
        return []

PREFIX = "aiograd_serving"
_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: Request durations: from half a millisecond (a lone small request) to the request timeout.
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                    5.0, 10.0, 30.0, 60.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
_ROW_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536)


def enable_multiprocess(directory: str) -> None:
    """Have every metric made from now on, in this process and in the processes it forks, keep
    its value in ``directory`` (an empty directory the service owns), and ``/metrics`` report
    the sum over the processes. prometheus_client picks its value store when it is imported,
    from the environment variable set here; it is picked again for a process that imported it
    before."""
    os.environ[_ENV] = directory
    values.ValueClass = values.get_value_class()


def multiprocess_directory() -> str | None:
    return os.environ.get(_ENV) or None


def mark_process_dead(pid: int) -> None:
    """A worker process ended: drop its live gauges (in-flight requests, queue depth)."""
    directory = multiprocess_directory()
    if directory is not None:
        multiprocess.mark_process_dead(pid, directory)


class Metrics:
    """The service's metrics. ``endpoints``: the label values of known paths."""

    def __init__(self, endpoints: tuple[str, ...]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.endpoints = frozenset(endpoints)
        r = self.registry
        live: dict[str, Any] = {"multiprocess_mode": "livesum"}
        self.requests = Counter(f"{PREFIX}_requests", "Answered HTTP requests, by endpoint and status.",
                                ("endpoint", "status"), registry=r)
        self.latency = Histogram(f"{PREFIX}_request_duration_seconds",
                                 "Seconds from a request's arrival to its answer, by endpoint.",
                                 ("endpoint",), buckets=_LATENCY_BUCKETS, registry=r)
        self.batch_size = Histogram(f"{PREFIX}_batch_size", "Requests per computed batch.",
                                    buckets=_BATCH_BUCKETS, registry=r)
        self.batch_rows = Histogram(f"{PREFIX}_batch_rows",
                                    "Rows per computed batch (steps and samples expanded).",
                                    buckets=_ROW_BUCKETS, registry=r)
        self.queue_depth = Gauge(f"{PREFIX}_queue_depth",
                                 "Requests waiting for a batch (sampled each second and at each scrape).",
                                 registry=r, **live)
        self.in_flight = Gauge(f"{PREFIX}_in_flight",
                               "Requests being handled (sampled each second and at each scrape).",
                               registry=r, **live)
        self.connections = Gauge(f"{PREFIX}_connections", "Open client connections.", registry=r, **live)
        self.refused = Counter(f"{PREFIX}_connections_refused",
                               "Connections refused (503) past the per-worker connection cap.",
                               registry=r)
        self.disconnects = Counter(f"{PREFIX}_client_disconnects",
                                   "Clients that went away before their answer.", registry=r)
        self.timeouts = Counter(f"{PREFIX}_timeouts",
                                "Requests that ran out of time: 'body' (408), 'answer' (504), 'write' (dropped).",
                                ("kind",), registry=r)
        self.restarts = Counter(f"{PREFIX}_worker_restarts",
                                "Worker processes that died and were restarted.", registry=r)
        self._request_children: dict[tuple[str, int], Any] = {}
        self._latency_children = {e: self.latency.labels(e) for e in (*sorted(self.endpoints), "other")}
        # Each request is counted here, in plain Python, and ``flush`` hands the sums to
        # prometheus_client: its updates take a lock each (and in multiprocess mode write a
        # shared file), 3.6 us a request for the counter and the histogram, against 0.5 us.
        self._bounds = (*_LATENCY_BUCKETS, float("inf"))
        self._answered: dict[tuple[str, int], int] = {}
        self._latencies: dict[str, tuple[list[int], list[float]]] = {
            e: ([0] * len(self._bounds), [0.0]) for e in self._latency_children}

    def answered(self, path: str, status: int, seconds: float) -> None:
        """Count an answer (in ``/metrics`` after the next ``flush``)."""
        endpoint = path if path in self.endpoints else "other"
        key = (endpoint, status)
        self._answered[key] = self._answered.get(key, 0) + 1
        counts, total = self._latencies[endpoint]
        counts[bisect.bisect_left(self._bounds, seconds)] += 1
        total[0] += seconds

    def flush(self) -> None:
        """Hand the answers counted since the last flush to prometheus_client (the service does
        it every second, at each scrape and when it stops)."""
        answered, self._answered = self._answered, {}
        for key, n in answered.items():
            child = self._request_children.get(key)
            if child is None:
                child = self._request_children[key] = self.requests.labels(key[0], str(key[1]))
            child.inc(n)
        for endpoint, (counts, total) in self._latencies.items():
            if not any(counts):
                continue
            child = self._latency_children[endpoint]
            buckets, sum_ = getattr(child, "_buckets", None), getattr(child, "_sum", None)
            if buckets is not None and sum_ is not None and len(buckets) == len(counts):
                # prometheus_client's own per-bucket counts (what ``observe`` adds to), in bulk
                for value, n in zip(buckets, counts):
                    if n:
                        value.inc(n)
                sum_.inc(total[0])
            else:  # another prometheus_client: one observation per answer, at its bucket's bound
                for bound, n in zip(self._bounds, counts):
                    for _ in range(n):
                        child.observe(min(bound, total[0]))
            counts[:] = [0] * len(counts)
            total[0] = 0.0

    def render(self) -> tuple[bytes, str]:
        """The text exposition format (all processes' values in multiprocess mode)."""
        directory = multiprocess_directory()
        if directory is not None:
            registry = CollectorRegistry()
            registry.register(_LiveFilesCollector(directory))
            return prometheus_client.generate_latest(registry), prometheus_client.CONTENT_TYPE_LATEST
        return prometheus_client.generate_latest(self.registry), prometheus_client.CONTENT_TYPE_LATEST
