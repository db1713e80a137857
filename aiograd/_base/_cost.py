"""How much numpy work a node's backward is, in estimated nanoseconds.

The engine offloads a node to its device's executor when this estimate reaches
``Engine.offload_threshold``. Rough figures are enough: the point is to tell nodes that take a few
microseconds (keep them on the loop: a thread round trip costs more) from those that take
hundreds (send them off, so the loop stays responsive and branches run in parallel). The
constants are measured by ``benchmarks/measure_offload.py``; see docs/executors.md.
"""

from __future__ import annotations

from typing import Any

#: Elementwise numpy work per element of a gradient (a few ufunc passes over it).
NS_PER_ELEMENT = 1.0
#: Matrix products, per multiply-add pair (2 flops), at BLAS speed on one core.
NS_PER_FLOP = 0.015
#: Default offload threshold: twice the ThreadExecutor round trip measured on the reference
#: machine (38.6 us median on uvloop, benchmarks/measure_offload.py), so offloading wins clearly.
DEFAULT_OFFLOAD_THRESHOLD_NS = 80_000.0
#: A node alone (nothing to overlap with) leaves the loop only from here: a millisecond of work
#: is the longest the engine holds the event loop on its own.
DEFAULT_STALL_THRESHOLD_NS = 1_000_000.0


def elementwise_cost(grads: list[Any]) -> float:
    """The default estimate: proportional to the size of the incoming gradients."""
    size = 0
    for g in grads:
        if g is not None:
            size += g.data.size
    return size * NS_PER_ELEMENT


def matmul_cost(m: int, k: int, n: int, products: int) -> float:
    """``products`` matrix products of (m, k) by (k, n)."""
    return 2.0 * m * k * n * products * NS_PER_FLOP
