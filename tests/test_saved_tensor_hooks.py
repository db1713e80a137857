"""Saved-tensor hooks (``aiograd.graph.saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``): every scenario also runs on torch and must log the same hook
calls, give the same values and raise the same errors."""

from __future__ import annotations

import asyncio
import gc
import re
import weakref
from typing import Any

import numpy as np
import pytest
from helpers import torch

import aiograd as ag
import aiograd.graph as ag_graph
from aiograd._core._saved import ERR_BACKWARD_TWICE, ERR_PACK_INPLACE

torch_graph = torch.autograd.graph if torch is not None else None

A = np.array([0.5, 1.5, 2.0])
B = np.array([1.0, -1.0, 3.0])


def libs() -> list[tuple[Any, Any]]:
    """(library, its graph module): aiograd's, and torch's when it is installed."""
    return [(ag, ag_graph)] + ([(torch, torch_graph)] if torch is not None else [])


def run_backward(lib: Any, y: Any, **kwargs: Any) -> None:
    if lib is ag:
        ag.sync.backward(y, **kwargs)
    else:
        y.backward(**kwargs)


def leaf(lib: Any, values: np.ndarray, requires_grad: bool = True) -> Any:
    return lib.tensor(values.copy(), requires_grad=requires_grad)


def key(x: Any) -> tuple[float, tuple[int, ...]]:
    """What a log records of a tensor: enough to tell the saved tensors apart."""
    return round(float(x.detach().sum()), 6), tuple(x.shape)


# ---------------------------------------------------------------------------------------------
# Which hooks run, when, and in what order


def nested_scenario(lib: Any, graph: Any) -> tuple[list[tuple[Any, ...]], Any, Any, Any]:
    log: list[tuple[Any, ...]] = []

    def hooks(name: str) -> Any:
        def pack(x: Any) -> Any:
            log.append(("pack", name, key(x), lib.is_grad_enabled()))
            return x.detach()

        def unpack(x: Any) -> Any:
            log.append(("unpack", name, key(x), lib.is_grad_enabled()))
            return x

        return graph.saved_tensors_hooks(pack, unpack)

    a, b = leaf(lib, A), leaf(lib, B)
    with hooks("outer"):
        c = a * b
        with hooks("inner"):  # the innermost pair applies
            e = c.exp() / b
        f = (e.sin() * a).sum()
    g = (f * f) * 1.0  # saved without hooks
    return log, g, a, b


def test_nested_hooks_pack_and_unpack_as_torch():
    results = []
    for lib, graph in libs():
        log, g, a, b = nested_scenario(lib, graph)
        packs = list(log)
        run_backward(lib, g, retain_graph=True)
        first = log[len(packs):]
        run_backward(lib, g)  # every access unpacks again
        second = log[len(packs) + len(first):]
        results.append((packs, first, second, a.grad.detach().numpy().copy(), b.grad.detach().numpy().copy()))
    packs, first, second, ga, gb = results[0]
    assert [p[1] for p in packs] == ["outer"] * 2 + ["inner"] * 3 + ["outer"] * 3
    assert all(not p[3] for p in packs + first)  # pack under no_grad; unpack in the backward's mode
    assert first == second and len(first) == len(packs)
    if torch is not None:
        t_packs, t_first, t_second, t_ga, t_gb = results[1]
        # Each op saves the same tensors with the same hooks, in the same op order; the order
        # inside one op may differ (torch's mul and div save `other` before `self`).
        assert sorted(packs) == sorted(t_packs)
        assert [p[1] for p in packs] == [p[1] for p in t_packs]
        assert first == t_first and second == t_second  # unpacks: exactly torch's order
        np.testing.assert_allclose(ga, t_ga, rtol=1e-14)
        np.testing.assert_allclose(gb, t_gb, rtol=1e-14)


def pack_identity_and_create_graph(lib: Any, graph: Any) -> None:
    a = leaf(lib, A)
    seen: list[Any] = []
    modes: list[bool] = []

    def pack(x: Any) -> Any:
        seen.append(x)
        return x.detach()

    def unpack(x: Any) -> Any:
        modes.append(lib.is_grad_enabled())
        return x

    with graph.saved_tensors_hooks(pack, unpack):
        y = a * a
    assert seen[0] is a and seen[1] is a
    if lib is ag:
        (g,) = ag.sync.grad(y.sum(), a, create_graph=True)
    else:
        (g,) = torch.autograd.grad(y.sum(), a, create_graph=True)
    assert modes == [True, True]
    # The rebuilt tensors keep their place in the graph: second derivatives are right.
    (h,) = ag.sync.grad(g.sum(), a) if lib is ag else torch.autograd.grad(g.sum(), a)
    np.testing.assert_array_equal(h.detach().numpy(), [2.0, 2.0, 2.0])


def test_pack_hook_gets_the_saved_tensor_itself_and_unpack_runs_under_create_graph():
    for lib, graph in libs():
        pack_identity_and_create_graph(lib, graph)


def function_through_hooks(lib: Any, graph: Any) -> tuple[list[Any], np.ndarray]:
    base = ag.Function if lib is ag else torch.autograd.Function

    class Cube(base):  # type: ignore[misc, valid-type]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            out = x * x * x
            ctx.save_for_backward(x, out)
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            x, out = ctx.saved_tensors
            return g * 3 * out / x

    log: list[Any] = []
    with graph.saved_tensors_hooks(
        lambda t: (log.append(("pack", key(t))), t.detach() * 1)[1],
        lambda t: (log.append(("unpack", key(t))), t)[1],
    ):
        a = leaf(lib, A)
        y = Cube.apply(a)
    run_backward(lib, y.sum())
    return log, a.grad.detach().numpy()


def test_custom_function_save_for_backward_goes_through_the_hooks():
    log, grad = function_through_hooks(ag, ag_graph)
    assert [entry[0] for entry in log] == ["pack", "pack", "unpack", "unpack"]  # forward runs under no_grad
    if torch is not None:
        t_log, t_grad = function_through_hooks(torch, torch_graph)
        assert log == t_log
        np.testing.assert_allclose(grad, t_grad, rtol=1e-14)


# ---------------------------------------------------------------------------------------------
# Errors


def failures(lib: Any, graph: Any) -> list[tuple[type[BaseException], str]]:
    """Each failing scenario's exception type and message."""
    out: list[tuple[type[BaseException], str]] = []

    def record(fn: Any) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - recorded and compared
            out.append((type(exc), str(exc)))
        else:
            out.append((type(None), ""))

    def boom(x: Any) -> Any:
        raise KeyError("boom")

    def pack_in_place(x: Any) -> Any:
        x.mul_(2)  # under no_grad: allowed on a leaf, bumps the version
        return x.detach()

    def in_pack() -> None:
        with graph.saved_tensors_hooks(boom, lambda x: x):
            leaf(lib, A) * leaf(lib, B)

    def in_unpack() -> None:
        with graph.saved_tensors_hooks(lambda x: x.detach(), boom):
            y = leaf(lib, A) * leaf(lib, B)
        run_backward(lib, y.sum())

    def not_a_tensor() -> None:
        with graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: 3):
            y = leaf(lib, A) * leaf(lib, B)
        run_backward(lib, y.sum())

    def modifies_input() -> None:
        with graph.saved_tensors_hooks(pack_in_place, lambda x: x):
            leaf(lib, A) * leaf(lib, B)

    calls: list[Any] = []

    def twice() -> None:
        with graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: (calls.append(1), x)[1]):
            y = (leaf(lib, A) * 2) * leaf(lib, B)
        run_backward(lib, y.sum())
        del calls[:]
        run_backward(lib, y.sum())

    for scenario in (in_pack, in_unpack, not_a_tensor, modifies_input, twice):
        record(scenario)
    assert calls == []  # the second backward failed before calling the unpack hook
    return out


def test_errors_have_torchs_types_and_messages():
    got = failures(ag, ag_graph)
    assert got == [
        (KeyError, "'boom'"),
        (KeyError, "'boom'"),
        (TypeError, "Output of saved tensor unpack_hook expected to be a Tensor but got result of type int"),
        (RuntimeError, ERR_PACK_INPLACE),
        (RuntimeError, ERR_BACKWARD_TWICE),
    ]
    if torch is not None:
        assert got == failures(torch, torch_graph)


def test_no_version_check_with_hooks():
    """With hooks the hooks own the data: an in-place change after the save is not detected
    (and the backward uses the new values), in both libraries."""
    results = []
    for lib, graph in libs():
        a, b = leaf(lib, A), leaf(lib, B)
        with graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: x):
            h = b * 1.0
            y = (a * h).sum()
        with lib.no_grad():
            h.mul_(10)
        run_backward(lib, y)
        results.append(a.grad.detach().numpy().copy())
    np.testing.assert_array_equal(results[0], B * 10)
    if torch is not None:
        np.testing.assert_array_equal(results[0], results[1])


def disabled_scenarios(graph: Any) -> list[str]:
    out = []

    def hooks() -> Any:
        return graph.saved_tensors_hooks(lambda x: x, lambda x: x)

    with graph.disable_saved_tensors_hooks("outer message"):
        for make in (hooks, lambda: graph.save_on_cpu()):
            with pytest.raises(RuntimeError) as info:
                with make():
                    pass
            out.append(str(info.value))
        with graph.disable_saved_tensors_hooks("inner message"):
            with pytest.raises(RuntimeError) as info:
                with hooks():
                    pass
            out.append(str(info.value))
        with pytest.raises(RuntimeError) as info:
            with hooks():
                pass
        out.append(str(info.value))
    with hooks():  # allowed again
        with pytest.raises(RuntimeError) as info:
            with graph.disable_saved_tensors_hooks("hooks are active"):
                pass
        out.append(str(info.value))
    return out


def test_disable_saved_tensors_hooks_as_torch():
    got = disabled_scenarios(ag_graph)
    assert got == ["outer message", "outer message", "inner message", "outer message", "hooks are active"]
    if torch is not None:
        assert got == disabled_scenarios(torch_graph)


# ---------------------------------------------------------------------------------------------
# save_on_cpu


def test_save_on_cpu_moves_a_sim_tensor_to_the_host_and_back():
    sim = ag.device("sim:0")
    hooks = ag_graph.save_on_cpu(pin_memory=False, device_type="sim")
    x = ag.tensor(A).to(sim)
    device, packed = hooks.pack_hook(x)
    assert device is sim and packed.device.type == "cpu" and not packed.requires_grad
    back = hooks.unpack_hook((device, packed))
    assert back.device is sim
    np.testing.assert_array_equal(back.cpu().data, A)

    def grads(use_hooks: bool) -> list[np.ndarray]:
        a = ag.tensor(A, requires_grad=True)
        b = ag.tensor(B, requires_grad=True)
        with ag_graph.save_on_cpu() if use_hooks else ag.enable_grad():
            h = a.to(sim) * b.to(sim)
            y = (h.exp() * h).sum()
        ag.sync.backward(y)
        return [a.grad.data, b.grad.data]

    for got, want in zip(grads(True), grads(False)):
        np.testing.assert_array_equal(got, want)


def test_save_on_cpu_on_the_cpu_is_a_no_op_move_and_matches_torch():
    results = []
    for lib, graph in libs():
        a, b = leaf(lib, A), leaf(lib, B)
        with graph.save_on_cpu():
            y = ((a * b).tanh() * a).sum()
        node = weakref.ref(y.grad_fn) if lib is ag else None
        run_backward(lib, y)
        results.append((a.grad.detach().numpy().copy(), b.grad.detach().numpy().copy()))
        if lib is ag:
            hooks = ag_graph.save_on_cpu()
            device, packed = hooks.pack_hook(a)
            assert packed.data is a.data and packed is not a  # no copy, no reference to `a`
            gc.disable()
            try:
                del y
                assert node is not None and node() is None  # no reference cycle through the packed tensors
            finally:
                gc.enable()
    if torch is not None:
        for got, want in zip(results[0], results[1]):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Memory and concurrency


def test_hooked_graph_is_freed_by_reference_counting():
    gc.disable()
    try:
        a = ag.tensor(A, requires_grad=True)
        with ag_graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: x):
            h = a.exp()  # saves its output: the hook's record must not point back at the node
            y = (h * a).sum()
        node, inner = weakref.ref(y.grad_fn), weakref.ref(h.grad_fn)
        del h
        ag.sync.backward(y, retain_graph=True)
        del y
        assert node() is None and inner() is None
    finally:
        gc.enable()


async def test_hooks_belong_to_the_task_that_set_them():
    """Two tasks on one loop, one inside saved_tensors_hooks across an await: the other's
    saves are not packed."""
    packed: list[str] = []
    entered = asyncio.Event()
    other_done = asyncio.Event()

    async def hooked() -> Any:
        with ag_graph.saved_tensors_hooks(lambda x: (packed.append("hooked"), x.detach())[1], lambda x: x):
            entered.set()
            await other_done.wait()
            return (ag.tensor(A, requires_grad=True) * 2.0).exp().sum()

    async def plain() -> Any:
        await entered.wait()
        y = ag.tensor(B, requires_grad=True).exp().sum()
        other_done.set()
        return y

    y1, y2 = await asyncio.gather(hooked(), plain())
    assert packed == ["hooked"]
    await asyncio.gather(y1.backward(), y2.backward())


async def create_graph_saves(lib: Any, graph: Any) -> np.ndarray:
    log: list[str] = []
    a = leaf(lib, A)
    with graph.saved_tensors_hooks(lambda x: (log.append("forward"), x.detach())[1], lambda x: x):
        y = (a.exp() * a).sum()
    forward = len(log)
    with graph.saved_tensors_hooks(lambda x: (log.append("backward"), x.detach())[1], lambda x: x):
        if lib is ag:
            (g,) = await ag.grad(y, a, create_graph=True)
        else:
            (g,) = torch.autograd.grad(y, a, create_graph=True)
    assert log[:forward] == ["forward"] * forward
    assert log[forward:] and set(log[forward:]) == {"backward"}
    (h,) = await ag.grad(g.sum(), a) if lib is ag else torch.autograd.grad(g.sum(), a)
    return h.detach().numpy()


async def test_tensors_saved_by_a_create_graph_backward_use_the_callers_hooks():
    """The backward formulas' saves (create_graph=True) are packed with the hooks in effect
    where the backward is awaited, not with those of the forward (PyTorch's rule)."""
    got = await create_graph_saves(ag, ag_graph)
    if torch is not None:
        np.testing.assert_allclose(got, await create_graph_saves(torch, torch_graph), rtol=1e-14)


def test_the_module_is_torchs():
    assert set(ag_graph.__all__) <= set(torch_graph.__all__ if torch is not None else ag_graph.__all__)
    for name in ag_graph.__all__:
        assert getattr(ag_graph, name).__doc__, name
    assert re.search(r"saved_tensors_hooks", ag_graph.__doc__ or "")


def in_place_on_a_view(lib: Any, graph: Any, hooks: bool) -> np.ndarray:
    a = leaf(lib, A)
    with graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: x) if hooks else lib.enable_grad():
        b = a * 1.0
        v = b[0:2]
        v.exp_()  # exp saves its output, a view modified in place (unpacked with the view's grad_fn)
        y = (v * b[1:3]).sum()
    run_backward(lib, y)
    return a.grad.detach().numpy().copy()


def test_output_of_an_in_place_op_on_a_view_through_the_hooks():
    want = in_place_on_a_view(ag, ag_graph, hooks=False)
    np.testing.assert_array_equal(in_place_on_a_view(ag, ag_graph, hooks=True), want)
    if torch is not None:
        np.testing.assert_allclose(want, in_place_on_a_view(torch, torch_graph, hooks=True), rtol=1e-14)
