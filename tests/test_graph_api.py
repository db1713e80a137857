"""``aiograd.graph``: ``register_multi_grad_hook`` (modes "all" and "any", per backward call,
under ``grad()``/``inputs=``, concurrent backward calls), ``GradientEdge`` /
``get_gradient_edge``, ``increment_version`` and ``Node``; each scenario also runs on torch."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import numpy as np
import pytest
from helpers import torch

import aiograd as ag
import aiograd.graph as ag_graph
from aiograd._core import _node as aiograd_node

torch_graph = torch.autograd.graph if torch is not None else None

A = np.array([1.0, 2.0, 3.0])
B = np.array([0.5, -1.0, 2.0])


def libs() -> list[tuple[Any, Any]]:
    return [(ag, ag_graph)] + ([(torch, torch_graph)] if torch is not None else [])


def leaves(lib: Any) -> tuple[Any, Any]:
    return lib.tensor(A.copy(), requires_grad=True), lib.tensor(B.copy(), requires_grad=True)


def backward(lib: Any, y: Any, **kwargs: Any) -> None:
    ag.sync.backward(y, **kwargs) if lib is ag else y.backward(**kwargs)


def grad(lib: Any, y: Any, inputs: Any, **kwargs: Any) -> Any:
    return ag.sync.grad(y, inputs, **kwargs) if lib is ag else torch.autograd.grad(y, inputs, **kwargs)


def as_arrays(grads: Any) -> list[Any]:
    return [None if g is None else g.detach().numpy().copy() for g in grads]


def assert_same_calls(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for g_call, w_call in zip(got, want):
        assert len(g_call) == len(w_call)
        for g, w in zip(g_call, w_call):
            assert (g is None) == (w is None)
            if g is not None:
                np.testing.assert_allclose(g, w, rtol=1e-14)


# ---------------------------------------------------------------------------------------------
# register_multi_grad_hook


def mode_all_calls(lib: Any, graph: Any) -> list[list[Any]]:
    """torch's docstring example, then grad() over non-leaves where one is not reached."""
    calls: list[list[Any]] = []
    a, b = leaves(lib)
    c = a * b
    d = a * b
    handle = graph.register_multi_grad_hook((a, b, c, d), lambda grads: calls.append(as_arrays(grads)))
    backward(lib, c.sum(), retain_graph=True)
    backward(lib, c.sum(), inputs=(a,), retain_graph=True)
    h = a * 2.0
    k = b * 3.0
    m = a * 4.0
    handle2 = graph.register_multi_grad_hook((h, k, m), lambda grads: calls.append(as_arrays(grads)))
    grad(lib, (h * k).sum(), [h])  # k's node is pruned, m is not in the graph: None for both
    grad(lib, (h * k + m).sum(), [h, k, m])  # all three
    handle.remove()
    handle2.remove()
    backward(lib, c.sum() + (h * k + m).sum())  # removed: no call
    return calls


def test_mode_all_as_torch():
    calls = mode_all_calls(ag, ag_graph)
    assert [[g is not None for g in call] for call in calls] == [
        [True, True, True, False],
        [True, False, True, False],
        [True, False, False],
        [True, True, True],
    ]
    if torch is not None:
        assert_same_calls(calls, mode_all_calls(torch, torch_graph))


def mode_any_calls(lib: Any, graph: Any) -> list[Any]:
    calls: list[Any] = []
    a, b = leaves(lib)
    c = (a * 3.0).tanh()
    constant = lib.tensor(A.copy())  # requires no grad: left out, as in torch
    graph.register_multi_grad_hook((a, b, c, constant), lambda g: calls.append(as_arrays([g])[0]), mode="any")
    backward(lib, (c * b).sum(), retain_graph=True)  # c's gradient comes first
    backward(lib, (c * b).sum(), inputs=[b])  # only b's
    return calls


def test_mode_any_as_torch():
    calls = mode_any_calls(ag, ag_graph)
    assert len(calls) == 2
    np.testing.assert_array_equal(calls[1], np.tanh(A * 3.0))
    if torch is not None:
        assert_same_calls([calls], [mode_any_calls(torch, torch_graph)])


def test_bad_arguments_as_torch():
    for lib, graph in libs():
        a, _ = leaves(lib)
        with pytest.raises(ValueError, match=re.escape("Expects mode to be one of ('all', 'any') but got x")):
            graph.register_multi_grad_hook([a], print, mode="x")
        with pytest.raises(AssertionError, match="^Expected gradient function to be set$"):
            graph.register_multi_grad_hook([a, lib.tensor(A)], print)


def test_all_under_grad_with_a_leaf_works_where_torch_refuses():
    a, b = leaves(ag)
    calls: list[Any] = []
    ag_graph.register_multi_grad_hook((a, b), lambda grads: calls.append(as_arrays(grads)))
    ag.sync.grad((a * b).sum(), [a])
    assert len(calls) == 1 and calls[0][1] is None
    np.testing.assert_array_equal(calls[0][0], B)
    if torch is not None:
        ta, tb = leaves(torch)
        torch_graph.register_multi_grad_hook((ta, tb), print)
        with pytest.raises(RuntimeError, match="A leaf node was passed to _will_engine_execute_node"):
            torch.autograd.grad((ta * tb).sum(), [ta])


async def test_an_async_hook_is_awaited():
    a, b = leaves(ag)
    seen: list[Any] = []

    async def fn(grads: Any) -> str:
        await asyncio.sleep(0)
        seen.append(as_arrays(grads))
        return "ignored"

    ag_graph.register_multi_grad_hook((a, b), fn)
    await (a * b).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0][0], B)


async def test_concurrent_backward_calls_keep_their_own_state():
    """Backward 1 has a's gradient and is paused before b's when backward 2 runs from start to
    end: each call gets one call of ``fn`` with its own gradients (state shared across calls
    would have mixed them or called ``fn`` early)."""
    a, b = leaves(ag)
    calls: list[tuple[str, list[Any]]] = []
    ag_graph.register_multi_grad_hook((a, b), lambda grads: calls.append(("fn", as_arrays(grads))))
    paused, resume = asyncio.Event(), asyncio.Event()

    async def hold(grad: Any) -> None:
        calls.append(("paused", []))
        paused.set()
        await resume.wait()

    u = b * 3.0  # created first: its node runs after a's side (see the ready queue's order)
    u.register_hook(hold)
    loss1 = (a * 2.0).sum() + u.sum()
    loss2 = (a * b).sum()

    async def second() -> None:
        await paused.wait()
        await loss2.backward()
        resume.set()

    await asyncio.gather(loss1.backward(), second())
    assert [c[0] for c in calls] == ["paused", "fn", "fn"]
    assert_same_calls([c[1] for c in calls[1:]], [[B, A], [2 * np.ones(3), 3 * np.ones(3)]])
    if torch is not None:  # each call's gradients, as torch computes them one by one
        ta, tb = leaves(torch)
        want: list[Any] = []
        torch_graph.register_multi_grad_hook((ta, tb), lambda grads: want.append(as_arrays(grads)))
        (ta * tb).sum().backward()
        ((ta * 2.0).sum() + (tb * 3.0).sum()).backward()
        assert_same_calls([c[1] for c in calls[1:]], want)


# ---------------------------------------------------------------------------------------------
# GradientEdge, increment_version, Node


def edges(lib: Any, graph: Any) -> list[tuple[str, int]]:
    a, _ = leaves(lib)
    parts = (a * 2.0).split(1)
    leaf_edge = graph.get_gradient_edge(a)
    part_edge = graph.get_gradient_edge(parts[2])
    assert leaf_edge.node is (a * 1.0).grad_fn.next_functions[0][0]  # the leaf's one accumulator
    assert part_edge.node is parts[2].grad_fn and leaf_edge.ownership_token is None
    assert isinstance(leaf_edge, tuple) and type(leaf_edge)._fields == ("node", "output_nr", "ownership_token")
    with pytest.raises(RuntimeError) as info:
        graph.get_gradient_edge(lib.tensor(A))
    assert str(info.value) == (
        "It is not possible to get the gradient edge for a Tensor that does not require gradients"
    )
    return [(edge.node.name(), edge.output_nr) for edge in (leaf_edge, part_edge)]


def test_gradient_edge_of_a_leaf_and_a_non_leaf_as_torch():
    got = edges(ag, ag_graph)
    assert got == [("AccumulateGrad", 0), ("SplitBackward0", 2)]
    if torch is not None:
        # torch names its C++ accumulator with its namespace
        assert got == [(name.replace("torch::autograd::", ""), nr) for name, nr in edges(torch, torch_graph)]


def version_errors(lib: Any, graph: Any) -> list[str]:
    out = []
    for bump in ("output", "input list"):
        a, b = leaves(lib)
        c = a * b
        d = c * c if bump == "output" else a * a
        graph.increment_version(c if bump == "output" else [a, b])
        with pytest.raises(RuntimeError) as info:
            backward(lib, d.sum())
        out.append(str(info.value))
    return out


def test_increment_version_makes_the_saved_tensor_check_fail_as_torch():
    got = version_errors(ag, ag_graph)
    assert got[0].startswith(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [aiograd.DoubleTensor [3]], which is output 0 of Mul, is at version 1; "
        "expected version 0 instead."
    )
    assert "[aiograd.DoubleTensor [3]] is at version 1; expected version 0 instead." in got[1]
    if torch is not None:
        # Up to the library's names (torch 2.13 writes a node's name without "Backward0" here).
        def normalize(message: str) -> str:
            message = re.sub(r"of (\w+?)(Backward\d*)?,", r"of \1,", message.replace("torch.", "aiograd."))
            return message.split(" Hint:")[0]

        assert [normalize(m) for m in got] == [normalize(m) for m in version_errors(torch, torch_graph)]


def test_node_is_the_class_of_every_grad_fn():
    for lib, graph in libs():
        a, b = leaves(lib)
        y = (a * b).sum()
        assert isinstance(y.grad_fn, graph.Node)
        assert isinstance(y.grad_fn.next_functions[0][0].next_functions[0][0], graph.Node)  # AccumulateGrad
    assert ag_graph.Node is aiograd_node.Node  # the base class of every node, re-exported


async def test_a_gradient_edge_is_where_grad_differentiates():
    """``grad(y, get_gradient_edge(h))`` is ``grad(y, h)``, and ``backward(inputs=edge)`` runs
    to it, as in torch."""
    a, b = leaves(ag)
    h = (a * b).split(1)[1]
    y = (h.exp() * a[1]).sum()
    edge = ag_graph.get_gradient_edge(h)
    (got,) = await ag.grad(y, edge, retain_graph=True)
    (want,) = await ag.grad(y, h, retain_graph=True)
    np.testing.assert_array_equal(got.data, want.data)
    (by_list,) = await ag.grad(y, [edge, ag_graph.get_gradient_edge(a)][:1], retain_graph=True)
    np.testing.assert_array_equal(by_list.data, want.data)
    await y.backward(inputs=ag_graph.get_gradient_edge(a))
    assert b.grad is None and a.grad is not None
    if torch is not None:
        ta, tb = leaves(torch)
        th = (ta * tb).split(1)[1]
        ty = (th.exp() * ta[1]).sum()
        (t_got,) = torch.autograd.grad(ty, torch_graph.get_gradient_edge(th), retain_graph=True)
        ty.backward(inputs=torch_graph.get_gradient_edge(ta))
        np.testing.assert_allclose(a.grad.data, ta.grad.numpy(), rtol=1e-14)
        assert tb.grad is None
        np.testing.assert_allclose(got.data, t_got.numpy(), rtol=1e-14)
