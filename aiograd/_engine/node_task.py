"""NodeTask: one node ready to run (or one offloaded node's result come back), as queued.

PyTorch's NodeTask is (graph task, node, input buffer). Here it also carries its place in the
ready queue, first, so that the heap compares plain tuples in C: ``(kind, -reentrant_depth,
-sequence_nr, tie)``. The tie is unique, so a comparison never reaches the objects behind it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._core._node import Node
    from .graph_task import GraphTask
    from .input_buffer import InputBuffer

__all__ = ["DONE", "GRAPH_TASK", "RESULT", "RUN", "NodeTask", "make_tie_source"]

#: The kinds of NodeTask, in the order a queue serves them. RUN: run ``node`` on ``buffer``.
#: DONE: ``node`` ran in an executor; ``result`` is the executor's future, to be propagated. A
#: result comes first: it unblocks work and frees the executor slot it held.
DONE, RUN = 0, 1


#: A NodeTask is a plain tuple ``(kind, -reentrant_depth, -sequence_nr, tie, graph_task, node,
#: buffer, result)``; the engine names its fields where it reads them, by unpacking
#: (``Engine.handle``, ``offload.discard``)::
#:
#:     kind, _, _, _, graph_task, node, buffer, result = task
#:
#: or, for one field, by the positions named below (``task[GRAPH_TASK]``).
#: - ``kind``: RUN or DONE (above);
#: - ``-reentrant_depth``: a deeper (reentrant) GraphTask's work runs first;
#: - ``-sequence_nr``: among one depth, the node created last runs first; AccumulateGrad's
#:   sequence number is the largest, so a leaf accumulates as soon as it is ready;
#: - ``tie``: breaks ties between equal keys; nothing may depend on its order (see
#:   ``make_tie_source``);
#: - ``graph_task``, ``node``, ``buffer``: what to run (PyTorch's NodeTask);
#: - ``result``: DONE only, the executor's future of ``node.apply(buffer)``; None for RUN.
#:
#: Why not a NamedTuple: building one through its class costs nine times a tuple literal, and
#: ``tuple.__new__(NodeTask, ...)`` four times (measured with timeit on this project's 2-core
#: machine: 40 ns, 370 ns, 155 ns), and unpacking a tuple subclass takes the generic path (107 ns
#: against 28 ns): 0.2-0.4 us more per node, 5-10% of a small node's whole cost (4.5 us in
#: benchmarks/bench_chain.py).
NodeTask = tuple[int, int, int, float, "GraphTask", "Node", "InputBuffer", Any]

#: Where a NodeTask keeps its GraphTask and, for DONE, the executor's future.
GRAPH_TASK, RESULT = 4, 7


def make_tie_source(shuffle_seed: int | None) -> Callable[[], float]:
    """The tie breaker of an engine's NodeTasks: insertion order (a counter), or, in the shuffle
    debug mode, a seeded random draw, so that NodeTasks of equal priority (leaves ready at once,
    offloaded results, concurrent GraphTasks on shared nodes) run in a random but reproducible
    order. Code that gives other results under shuffling depends on an order the engine does
    not promise."""
    if shuffle_seed is None:
        return itertools.count().__next__  # type: ignore[return-value]
    return random.Random(shuffle_seed).random
