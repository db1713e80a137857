"""``Engine.statistics()``: a frozen snapshot of what an engine did and is doing."""

from __future__ import annotations

import dataclasses

__all__ = ["EngineStatistics"]


@dataclasses.dataclass(frozen=True)
class EngineStatistics:
    """A snapshot of ``Engine.statistics()``.

    Counters since the engine was made: ``nodes_executed``, ``nodes_offloaded`` (run in an
    executor), ``max_nodes_in_flight``, ``deepest_reentrant_depth`` (0: no reentrant backward
    yet), ``reentrant_workers_started`` (reentrant GraphTasks past the nesting limit). State now:
    ``graph_tasks_in_flight`` (reentrant ones included), ``nodes_in_flight`` (in executors),
    ``queue_depths`` (NodeTasks waiting: ``"cpu"`` summed over the running calls' own queues,
    then one entry per device queue, e.g. ``"sim:0"``), ``executor_occupancy`` (device type ->
    (nodes in flight, capacity) of each executor that has run a node). Settings:
    ``offload_threshold_ns``, ``nodes_per_turn``, ``executors`` (device type -> repr),
    ``shuffle_seed`` (the shuffle debug mode's seed, None when off).
    """

    graph_tasks_in_flight: int
    nodes_executed: int
    nodes_offloaded: int
    nodes_in_flight: int
    max_nodes_in_flight: int
    offload_threshold_ns: float | None
    executors: dict[str, str]
    deepest_reentrant_depth: int
    reentrant_workers_started: int
    nodes_per_turn: int | None
    queue_depths: dict[str, int]
    executor_occupancy: dict[str, tuple[int, int]]
    shuffle_seed: int | None = None
