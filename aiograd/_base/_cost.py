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
#: Matrix products, per multiply-add pair (2 flops), at BLAS speed on one core, in float64;
#: float32 products take about half as long (0.0119 and 0.0061 ns a flop on the reference
#: machine, benchmarks/measure_offload.py).
NS_PER_FLOP = 0.015
_FLOP_SCALE_BY_ITEMSIZE = {4: 0.5}  # (float16 has no BLAS in numpy: not faster, left at 1)
#: Default offload threshold: twice the ThreadExecutor round trip measured on the reference
#: machine (38.6 us median on uvloop, benchmarks/measure_offload.py), so offloading wins clearly.
DEFAULT_OFFLOAD_THRESHOLD_NS = 80_000.0
#: A node with nothing to overlap leaves the loop from here: five milliseconds of estimated work
#: is the longest the engine holds the event loop by itself. Five, not one: a thread round trip
#: costs 0.1-0.4 ms on a virtual machine (waking the idle thread, then the loop), which on the
#: 1-5 ms products of a training step came to 6-13% of the step (docs/executors.md, "When a
#: node leaves the loop"); and any other Python thread may hold the loop for the GIL's switch
#: interval, 5 ms, already.
DEFAULT_STALL_THRESHOLD_NS = 5_000_000.0


def elementwise_cost(grads: list[Any]) -> float:
    """The default estimate: proportional to the size of the incoming gradients."""
    size = 0
    for g in grads:
        if g is not None:
            size += g.data.size
    return size * NS_PER_ELEMENT


def matmul_cost(m: int, k: int, n: int, products: int, itemsize: int = 8) -> float:
    """``products`` matrix products of (m, k) by (k, n), of elements of ``itemsize`` bytes."""
    return 2.0 * m * k * n * products * NS_PER_FLOP * _FLOP_SCALE_BY_ITEMSIZE.get(itemsize, 1.0)


def saved_shape(saved: Any) -> tuple[int, ...]:
    """The shape of a node's saved operand (empty once freed: the cost no longer matters then)."""
    tensor = getattr(saved, "tensor", None)
    data = tensor.data if tensor is not None else getattr(saved, "data", None)
    return data.shape if data is not None else ()
