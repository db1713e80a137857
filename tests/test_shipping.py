"""Shipping nodes to another process (aiograd/executors/_shipping.py), checked in this process.

A loopback executor does what DaskExecutor does, without a cluster: it packs each offloaded node,
pickles the shipment and its arrays, unpickles them and runs the node from them (``run_shipped``)
outside any GraphTask. Every op of the registry (every row of the op tables) is run through it:
its gradients must be bitwise those of the same engine running the nodes themselves. Nodes that
cannot travel must run here, with the errors they raise here.
"""

from __future__ import annotations

import asyncio
import collections
import importlib
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from op_factory import _seed_like

import aiograd as ag
from aiograd.executors import Executor, InlineExecutor, _shipping

# The event loop plays no part in what a node computes: once, on asyncio's.
once = pytest.mark.aiograd(backends=["asyncio"])


class Loopback(InlineExecutor):
    """Offloaded nodes run at once, shipped through pickle (``ship=True``) or as themselves: an
    InlineExecutor's ``submit``, but the engine offloads to it (``inline`` False)."""

    inline = False

    def __init__(self, ship: bool = True) -> None:
        self.ship = ship
        self.shipped: collections.Counter[str] = collections.Counter()
        self.kept: collections.Counter[str] = collections.Counter()

    @property
    def capacity(self) -> int:
        return 4

    def submit_node(self, node: ag.Node, buffer: list[Any], call: Callable[[], Any]) -> asyncio.Future[Any]:
        packed = _shipping.pack(node, buffer) if self.ship else None
        if packed is None:
            self.kept[node.name()] += 1
            return self.submit(call)
        self.shipped[node.name()] += 1
        shipment, arrays = pickle.loads(pickle.dumps((packed.shipment, packed.arrays), protocol=5))
        return self.submit(lambda: _shipping.unpack_result(_shipping.run_shipped(shipment, *arrays)))


def offload_everything(executor: Executor) -> None:
    """Every node with a cost goes to ``executor`` (a cost of 0 means nothing to compute)."""
    engine = ag.get_engine()
    engine.executors["cpu"] = executor
    engine.offload_threshold = engine.stall_threshold = 1e-9


def all_specs() -> list[Any]:
    return importlib.import_module("test_op_registry").all_specs()


async def gradients(spec: Any, executor: Executor) -> list[np.ndarray | None]:
    """``spec``'s gradients for all its inputs and, pruned by ``grad()``, for its first alone."""
    offload_everything(executor)
    xs = spec.tensors()
    (u,) = _seed_like(spec.name, [spec.run(*xs).data], 1)
    every = await ag.grad(spec.run(*xs), xs, ag.tensor(u), allow_unused=True)
    first = await ag.grad(spec.run(*xs), xs[:1], ag.tensor(u), allow_unused=True)
    return [None if g is None else g.numpy().copy() for g in (*every, *first)]


@once
async def test_every_op_node_ships_and_gives_the_same_bits() -> None:
    shipped = Loopback(ship=True)
    here = Loopback(ship=False)
    differ = []
    for spec in all_specs():
        if not spec.grad:
            continue
        got, want = await gradients(spec, shipped), await gradients(spec, here)
        for g, w in zip(got, want, strict=True):
            if (g is None) != (w is None) or (g is not None and not np.array_equal(g, w, equal_nan=True)):
                differ.append(spec.name)
                break
    assert not differ, f"shipped nodes computed other gradients for {differ}"
    # Everything shipped but the nodes that hold another node (an in-place op on a view).
    assert set(shipped.kept) <= {"CopySlices"}
    assert sum(shipped.shipped.values()) > 2000 and len(shipped.shipped) > 150


def test_every_op_node_class_has_a_unique_name() -> None:
    """The other side finds a node's class by (module, name): no two op classes may share one,
    or nodes of the second would silently run the first's formula."""
    from aiograd._core._node import Node

    classes, stack = [], list(Node.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith(("aiograd._ops.", "aiograd.nn.")):
            classes.append(cls)
    names = collections.Counter((c.__module__, c.__qualname__) for c in set(classes))
    assert [n for n, count in names.items() if count > 1] == []
    unshippable = sorted(c.__name__ for c in classes if _shipping.shippable(c) is None)
    assert unshippable == ["CopySlices"]


@once
async def test_grad_ships_only_the_needed_outputs() -> None:
    """``grad(out, x)`` needs no weight gradient: the shipment says so, and the node on the
    other side computes none (its stand-in edge for the weight is None)."""
    seen: list[tuple[bool, ...]] = []

    class Recording(Loopback):
        def submit_node(self, node: ag.Node, buffer: list[Any], call: Callable[[], Any]) -> asyncio.Future[Any]:
            packed = _shipping.pack(node, buffer)
            if packed is not None and node.name() == "MmBackward0":
                seen.append(packed.shipment.needed)
                (ga, gw) = _shipping.run_shipped(packed.shipment, *packed.arrays)
                assert ga is not None and gw is None
            return super().submit_node(node, buffer, call)

    offload_everything(Recording())
    x = ag.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = ag.tensor(np.ones((3, 4)), requires_grad=True)
    (gx,) = await ag.grad((x.mm(w)).sum(), [x])
    np.testing.assert_array_equal(gx.numpy(), np.full((2, 3), 4.0))
    assert seen == [(True, False)]


class Double(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g * 2


@once
async def test_nodes_that_cannot_travel_run_here() -> None:
    executor = Loopback()
    offload_everything(executor)
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)

    # A custom Function's backward is the user's code: it runs here.
    await Double.apply(x).exp().sum().backward()
    assert executor.kept == {"DoubleBackward": 1} and executor.shipped["ExpBackward0"] == 1

    # A node with a hook: the engine runs it on the loop, around its hooks (never offloaded).
    executor.shipped.clear(), executor.kept.clear()
    y = x.exp()
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append(1))
    await y.sum().backward()
    assert calls == [1] and "ExpBackward0" not in executor.shipped and "ExpBackward0" not in executor.kept

    # create_graph: the gradients are graphs, recorded here.
    executor.shipped.clear(), executor.kept.clear()
    (g,) = await ag.grad(x.exp().sum(), [x], create_graph=True)
    assert g.grad_fn is not None and not executor.shipped and executor.kept["ExpBackward0"] == 1

    # A tensor saved through saved-tensor hooks: its unpack hook runs here, when the node unpacks.
    executor.shipped.clear(), executor.kept.clear()
    unpacked = []
    with ag.graph.saved_tensors_hooks(lambda t: t, lambda t: unpacked.append(1) or t):
        z = x.exp()
    await z.sum().backward()
    assert unpacked == [1] and executor.kept["ExpBackward0"] == 1


@once
async def test_a_saved_tensor_modified_in_place_raises_torchs_error_here() -> None:
    """The version check is made where it always is: the node stays, and unpacking raises."""
    executor = Loopback()
    offload_everything(executor)
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.exp()
    with ag.no_grad():
        z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        await z.sum().backward()
    assert executor.kept["ExpBackward0"] == 1

    # Backward twice: the freed saved tensor raises the backward-twice error, here.
    w = x.exp()
    await w.sum().backward(retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        await w.sum().backward()
    assert executor.kept["ExpBackward0"] == 2


def test_a_shipment_carries_arrays_not_the_graph() -> None:
    """What travels: the class by name, the saved arrays beside the state (the leaves marked,
    for an executor to cache), the gradients; never a node, a tensor or a version counter."""
    a = ag.tensor(np.ones((2, 3)), requires_grad=True)
    h = a * 2
    out = h.mm(ag.tensor(np.ones((3, 4)), requires_grad=True))
    with ag.no_grad():
        packed = _shipping.pack(out.grad_fn, [ag.ones(2, 4)])
    assert packed is not None
    shipment = packed.shipment
    assert shipment.node == ("aiograd._ops.linalg", "MmBackward0")
    assert shipment.grads == (0,)  # the incoming gradient is the first array
    assert shipment.state == {"a": _shipping.ArrayRef(1, True), "b": _shipping.ArrayRef(2, True)}
    assert [x.shape for x in packed.arrays] == [(2, 4), (2, 3), (3, 4)]
    assert packed.leaves[:2] == [None, None] and packed.leaves[2] is not None  # h is not a leaf, b is
    assert shipment.needed == (True, True)

    def walk(obj: Any) -> None:
        assert not isinstance(obj, (ag.Tensor, ag.Node)), obj
        if isinstance(obj, (tuple, list)):
            for o in obj:
                walk(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                walk(o)

    walk(tuple(shipment))
    # Small: the arrays travel beside it (a Dask worker receives them out of band).
    assert len(pickle.dumps(shipment)) < 1000
