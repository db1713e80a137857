"""``Engine.statistics()``: a frozen snapshot of what an engine did and is doing."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = ["EngineStatistics", "snapshot"]


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


def snapshot(engine: Engine, driven: set[GraphTask], device_queues: dict[Any, Any]) -> EngineStatistics:
    """``engine``'s statistics now; ``driven`` are its GraphTasks in flight."""
    device_queue_ids = {id(q) for q in device_queues.values()}
    # Each running call's own queue once (reentrant children share their parent's).
    cpu_queues = {id(gt.queue): gt.queue for gt in driven if id(gt.queue) not in device_queue_ids}
    depths = {"cpu": sum(q.depth() for q in cpu_queues.values())}
    for dev, dev_queue in device_queues.items():
        depths[str(dev)] = dev_queue.depth()
    load = engine.load
    return EngineStatistics(
        graph_tasks_in_flight=len(driven),
        nodes_executed=engine.nodes_executed,
        nodes_offloaded=load.nodes_offloaded,
        nodes_in_flight=load.nodes_in_flight,
        max_nodes_in_flight=load.max_nodes_in_flight,
        offload_threshold_ns=engine.offload_threshold,
        executors={"cpu": repr(engine.executor("cpu"))},
        deepest_reentrant_depth=engine.deepest_reentrant_depth,
        reentrant_workers_started=engine.reentrant_workers_started,
        nodes_per_turn=engine.nodes_per_turn,
        queue_depths=depths,
        executor_occupancy={
            kind: (in_flight, executor.capacity)
            for kind, (executor, in_flight) in load.occupancy.items()
        },
        shuffle_seed=engine.shuffle_seed,
    )
