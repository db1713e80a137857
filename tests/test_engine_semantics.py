"""The engine's remaining differences from PyTorch, closed: the hook order at a leaf and across a
graph, undefined (None) gradients, pruning of a root that reaches no input, calling a node,
validation of what node hooks return, loops not kept alive, and a failed backward freed without
the garbage collector.

Each scenario runs on torch too (where torch is installed) and the test compares the two, so it
fails if either drifts.
"""

from __future__ import annotations

import asyncio
import gc
import re
import tracemalloc
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.sync

LIBS = [pytest.param("aiograd", id="aiograd"), pytest.param("torch", id="torch", marks=requires_torch)]


def lib_of(name: str) -> Any:
    return ag if name == "aiograd" else torch


def function_base(name: str) -> Any:
    return ag.Function if name == "aiograd" else torch.autograd.Function


def backward(name: str, tensor: Any, **kwargs: Any) -> None:
    if name == "aiograd":
        aiograd.sync.backward(tensor, **kwargs)
    else:
        torch.autograd.backward(tensor, **kwargs)


def grad(name: str, *args: Any, **kwargs: Any) -> Any:
    return aiograd.sync.grad(*args, **kwargs) if name == "aiograd" else torch.autograd.grad(*args, **kwargs)


def outcome(fn: Callable[[], Any]) -> tuple[str, str]:
    """What ``fn()`` raised (type name and message, with torch's type names as aiograd's)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test compares what was raised
        message = str(exc).split("\nwhile running")[0]  # aiograd's note naming the node
        return type(exc).__name__, message.replace("torch.", "aiograd.")
    return "ok", ""


# ------------------------------------------------------------------------------ hook order
def hook_log(name: str) -> list[str]:
    """Every kind of hook on two leaves and two interior nodes of one graph, logged."""
    lib = lib_of(name)
    log: list[str] = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    for leaf, tag in ((x, "x"), (w, "w")):
        leaf.register_hook(lambda g, tag=tag: log.append(f"{tag} tensor"))
        leaf.register_post_accumulate_grad_hook(lambda t, tag=tag: log.append(f"{tag} post-accumulate"))
    h = x * w
    for index, tag in enumerate(("x", "w")):
        acc = h.grad_fn.next_functions[index][0]
        acc.register_prehook(lambda g, tag=tag: log.append(f"{tag} node pre"))
        acc.register_hook(lambda gi, go, tag=tag: log.append(f"{tag} node post"))
    h.register_hook(lambda g: log.append("h tensor"))
    h.retain_grad()
    h.grad_fn.register_prehook(lambda g: log.append("h pre"))
    h.grad_fn.register_hook(lambda gi, go: log.append("h post"))
    k = h.exp() + x
    k.grad_fn.register_prehook(lambda g: log.append("k pre"))
    k.grad_fn.register_hook(lambda gi, go: log.append("k post"))
    backward(name, k.sum())
    return log


@requires_torch
def test_hook_order_at_leaves_and_across_the_graph_is_torchs():
    log = hook_log("aiograd")
    assert log == hook_log("torch")
    # PyTorch's order at a leaf: tensor hooks, node pre-hooks, accumulation and its
    # post-accumulate-grad hooks, node post-hooks.
    at_x = [entry for entry in log if entry.startswith("x ")]
    assert at_x == ["x tensor", "x node pre", "x post-accumulate", "x node post"]


@requires_torch
async def test_post_accumulate_hooks_see_the_new_grad_before_node_post_hooks():
    seen: dict[str, list[Any]] = {"aiograd": [], "torch": []}

    def run(lib: Any, log: list[Any]) -> Any:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        acc = y.grad_fn.next_functions[0][0]
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post-accumulate", t.grad.tolist())))
        acc.register_hook(lambda gi, go: log.append(("node post", x.grad.tolist())))
        return y.sum().backward()

    run(torch, seen["torch"])
    await run(ag, seen["aiograd"])
    assert seen["aiograd"] == seen["torch"] == [("post-accumulate", [3.0, 3.0]), ("node post", [3.0, 3.0])]


# -------------------------------------------------------------------------- undefined grads
def none_function(name: str) -> Any:
    class ReturnsNone(function_base(name)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return None

    return ReturnsNone


@pytest.mark.parametrize("name", LIBS)
def test_a_function_returning_none_leaves_the_leaf_without_grad(name: str):
    lib = lib_of(name)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x**2  # PowBackward0 receives only an undefined gradient
    z = none_function(name).apply(y.exp())
    backward(name, z.sum())
    assert x.grad is None
    (result,) = grad(name, none_function(name).apply(x**2).sum(), x, allow_unused=True)
    assert result is None


@pytest.mark.parametrize("name", LIBS)
def test_undefined_gradient_beside_a_defined_one_sums_to_the_defined(name: str):
    lib = lib_of(name)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    out = none_function(name).apply(y) + y * 3
    backward(name, out.sum())
    np.testing.assert_array_equal(np.asarray(x.grad.tolist()), [6.0, 12.0])


@pytest.mark.parametrize("name", LIBS)
def test_hooks_of_a_node_that_gets_only_undefined_gradients(name: str):
    lib = lib_of(name)
    log: list[Any] = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    y.register_hook(lambda g: log.append(("tensor", g)))  # called with the undefined gradient
    y.grad_fn.register_prehook(lambda g: log.append(("pre", g)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
    x.register_hook(lambda g: log.append(("leaf", g)))
    backward(name, none_function(name).apply(y).sum())
    assert log == [("tensor", None), ("pre", (None,)), ("post", (None,), (None,)), ("leaf", None)]


@pytest.mark.parametrize("name", LIBS)
def test_a_hook_may_not_replace_an_undefined_gradient(name: str):
    lib = lib_of(name)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x**2
    y.register_hook(lambda g: lib.ones(2))
    result = outcome(lambda: backward(name, none_function(name).apply(y).sum()))
    assert result == ("RuntimeError", "can't replace a None gradient with a non-None value")
    assert x.grad is None


@pytest.mark.parametrize("name", LIBS)
def test_a_tensor_hook_on_an_unused_output_sees_none(name: str):
    lib = lib_of(name)
    log: list[Any] = []
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    first, second = x.unbind(0)
    second.register_hook(lambda g: log.append(g))
    backward(name, first.sum())
    assert log == [None]
    assert x.grad.tolist() == [[1.0, 1.0], [0.0, 0.0]]


# --------------------------------------------------------------------------------- pruning
def logging_function(name: str, log: list[str]) -> Any:
    class Logged(function_base(name)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            log.append("backward")
            return grad * 2

    return Logged


def pruning_runs(name: str) -> list[Any]:
    lib = lib_of(name)
    results: list[Any] = []
    a = lib.tensor([1.0], requires_grad=True)
    b = lib.tensor([2.0], requires_grad=True)
    for call in range(4):
        log: list[str] = []
        out = logging_function(name, log).apply(a)  # the root: it cannot reach b
        out.register_hook(lambda g, log=log: log.append("root tensor hook"))
        if call == 0:
            results.append(grad(name, out, [b], lib.ones(1), allow_unused=True))
        elif call == 1:
            backward(name, out, grad_tensors=lib.ones(1), inputs=[b])
        elif call == 2:
            c = b * 1
            results.append(grad(name, (out + c).sum(), [c]))
        else:
            results.append(grad(name, out * out, [b], lib.ones(1), allow_unused=True))
        results.append(log)
    results.append(b.grad)
    return [r if isinstance(r, list) or r is None else [None if t is None else t.tolist() for t in r] for r in results]


@requires_torch
def test_a_root_that_reaches_no_input_never_runs():
    runs = pruning_runs("aiograd")
    assert runs == pruning_runs("torch")
    assert runs[1] == ["root tensor hook"]  # reached (its tensor hooks see the gradient), not run
    assert not any("backward" in r for r in runs if isinstance(r, list) and r and isinstance(r[0], str))


# ------------------------------------------------------------------------------ node calls
def node_calls(name: str) -> list[Any]:
    lib = lib_of(name)
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = x * 2
    z = x.exp()
    u = lib.stack([x, x]).unbind(0)
    results: list[Any] = [
        outcome(lambda: y.grad_fn()),
        outcome(lambda: y.grad_fn(lib.ones(2), lib.ones(2))),
        outcome(lambda: u[0].grad_fn(lib.ones(2))),
        y.grad_fn(None),
        z.grad_fn(lib.ones(2, dtype=lib.float64)).tolist(),
        u[0].grad_fn(lib.ones(2, dtype=lib.float64), None).tolist(),
    ]
    return results


@requires_torch
def test_calling_a_node_checks_its_argument_count():
    results = node_calls("aiograd")
    assert results == node_calls("torch")
    assert results[0] == ("TypeError", "expected 1 arguments, got 0 instead")


# ----------------------------------------------------------------------- hook validation
def ones(lib: Any, *size: Any, dtype: Any = None) -> Any:
    """``lib.ones`` in float64 unless told otherwise (torch's default dtype is float32)."""
    return lib.ones(*size, dtype=lib.float64 if dtype is None else dtype)


HOOK_RESULTS: dict[str, Callable[[Any], Any]] = {
    "pre size": lambda lib: lambda g: (ones(lib, 3),),
    "pre dtype": lambda lib: lambda g: (ones(lib, 2, dtype=lib.float32),),
    "pre count": lambda lib: lambda g: (ones(lib, 2), ones(lib, 2)),
    "pre str": lambda lib: lambda g: ("a",),
    "pre tensor": lambda lib: lambda g: ones(lib, 2),
    "pre list": lambda lib: lambda g: [ones(lib, 2)],
    "pre none": lambda lib: lambda g: (None,),
    "pre ok": lambda lib: lambda g: (g[0] * 10,),
    "post size": lambda lib: lambda gi, go: (ones(lib, 3), None),
    "post dtype": lambda lib: lambda gi, go: (ones(lib, 2, dtype=lib.float32), None),
    "post count": lambda lib: lambda gi, go: (ones(lib, 2),),
    "post str": lambda lib: lambda gi, go: ("a", None),
    "post none": lambda lib: lambda gi, go: (None, None),
    "post tensor": lambda lib: lambda gi, go: ones(lib, 2),
    "post replaces none": lambda lib: lambda gi, go: (gi[0], ones(lib, ())),
    "tensor size": lambda lib: lambda g: ones(lib, 3),
    "tensor dtype": lambda lib: lambda g: ones(lib, 2, dtype=lib.float32),
    "tensor str": lambda lib: lambda g: "a",
    "tensor tuple": lambda lib: lambda g: (g,),
}


def hook_validation(name: str, case: str) -> Any:
    lib = lib_of(name)
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = x * 2  # MulBackward0: the scalar 2 gets an undefined gradient slot
    hook = HOOK_RESULTS[case](lib)
    kind = case.split()[0]
    if kind == "pre":
        y.grad_fn.register_prehook(hook)
    elif kind == "post":
        y.grad_fn.register_hook(hook)
    else:
        y.register_hook(hook)

    def run() -> None:
        backward(name, y.sum())

    result = outcome(run)
    return result, None if x.grad is None else x.grad.tolist()


@requires_torch
@pytest.mark.parametrize("case", list(HOOK_RESULTS))
def test_what_a_hook_returns_is_validated_as_torch_does(case: str):
    result = hook_validation("aiograd", case)
    assert result == hook_validation("torch", case)
    if case.endswith(("size", "dtype", "count", "str", "tensor", "list", "tuple")):
        assert result[0][0] != "ok" and result[1] is None  # never a wrong gradient in .grad


async def test_a_hook_that_changes_the_size_names_itself_and_leaves_the_engine_usable():
    def doubling_hook(g: ag.Tensor) -> ag.Tensor:
        return ag.cat([g, g])

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(doubling_hook)
    with pytest.raises(RuntimeError, match=re.escape("hook 'doubling_hook' has changed the size of value")):
        await y.sum().backward()
    assert x.grad is None
    await (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------------------------ loops
async def _one_backward(device: str) -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    await (x.to(device) * x.to(device)).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


@pytest.mark.slow  # a subprocess per device
@pytest.mark.parametrize("device", ["cpu", "sim:0"])
def test_no_event_loop_or_engine_is_kept_alive(device: str):
    def alive() -> set[int]:
        """The ids of the loops and engines alive now (an earlier test's may be freed meanwhile,
        so what is checked is that none of the loops made here, or their engines, survives)."""
        gc.collect()
        return {id(o) for o in gc.get_objects()
                if issubclass(type(o), asyncio.AbstractEventLoop) or type(o) is ag.Engine}

    for _ in range(3):
        asyncio.run(_one_backward(device))
    before = alive()
    loops = []
    tracemalloc.start()
    try:
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            loop = asyncio.new_event_loop()
            loops.append(weakref.ref(loop))
            loop.run_until_complete(_one_backward(device))
            loop.close()
            del loop
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert alive() <= before
    assert all(ref() is None for ref in loops)
    # a loop and its engine kept alive cost about 3.5 KiB each; the 200 weakrefs ~20 KiB
    assert growth < 200 * 512, f"{growth / 200:.0f} bytes per loop"


# ------------------------------------------------------------------------------- memory
class Marker:
    """An object put in a node's metadata: freed with the node."""


def failed_double_backward(name: str, run_grad: Callable[..., Any]) -> tuple[Any, weakref.ref[Marker]]:
    """PyTorch's test_nested_anomaly_printstack_cleanup: a double backward that fails under
    detect_anomaly, then an object in the first node's metadata."""
    lib = lib_of(name)
    base = function_base(name)

    class MyFunc(base):  # type: ignore[misc,valid-type]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            (x,) = ctx.saved_tensors
            return MyFunc2.apply(x)

    class MyFunc2(base):  # type: ignore[misc,valid-type]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad + float("nan")

    x = lib.randn(1, requires_grad=True)
    out = MyFunc.apply(x)
    detect = lib.autograd.detect_anomaly if name == "torch" else ag.detect_anomaly
    # plain try/except: pytest.raises keeps the exception (and its frames) alive
    message = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode's own warnings
        try:
            with detect():
                (first,) = run_grad(out, (x,), create_graph=True)
                run_grad(first, x)
        except RuntimeError as exc:
            message = str(exc)
    assert message.startswith("Function 'MyFunc2Backward' returned nan values in its 0th output.")
    marker = Marker()
    out.grad_fn.metadata[0] = marker
    return out, weakref.ref(marker)


# aiograd only: in this environment torch 2.13 itself keeps the first node until gc.collect()
# (its test, test_nested_anomaly_printstack_cleanup, is what this ports).
@pytest.mark.parametrize("name", ["aiograd"])
def test_a_failed_double_backward_under_anomaly_mode_leaves_no_cycle(name: str):
    gc.collect()
    gc.disable()
    try:
        out, ref = failed_double_backward(name, lambda *a, **k: grad(name, *a, **k))
        assert ref() is not None
        del out
        assert ref() is None  # freed by reference counting alone
    finally:
        gc.enable()


def test_a_failed_double_backward_awaited_on_a_loop_leaves_no_cycle():
    async def run() -> Any:
        x = ag.randn(1, requires_grad=True)
        y = x.exp()
        (g,) = await ag.grad(y, x, create_graph=True)
        bad = g * float("nan")
        marker = Marker()
        y.grad_fn.metadata[0] = marker
        with pytest.warns(UserWarning), ag.detect_anomaly():
            with pytest.raises(RuntimeError, match="returned nan values"):
                await ag.grad(bad, x)
        return y, weakref.ref(marker)

    loop = asyncio.new_event_loop()
    gc.collect()
    gc.disable()
    try:
        y, ref = loop.run_until_complete(run())
        assert ref() is not None
        del y
        assert ref() is None
    finally:
        gc.enable()
        loop.close()


# ------------------------------------------------------------------ order across random graphs
@requires_torch
@pytest.mark.parametrize("seed", range(20))
def test_tensor_hooks_fire_in_torchs_order_on_random_graphs(seed: int):
    """Every intermediate result and leaf of a random program gets a tensor hook; the order in
    which they fire (the order the engine runs their nodes) is torch's."""
    from test_random_graphs import MENU, build, leaves_for, random_plan

    rng = np.random.default_rng(300 + seed)
    plan = random_plan(rng, 3, 10, smooth_only=False)
    ours, theirs = leaves_for(rng, 3)
    logs: list[list[int]] = []
    for name, leaves in (("aiograd", ours), ("torch", theirs)):
        lib = lib_of(name)
        pool = build(lib, leaves, plan)
        log: list[int] = []
        for i, t in enumerate(pool):
            if t.requires_grad:
                t.register_hook(lambda g, i=i, log=log: log.append(i))
        roots = [pool[-1].sum(), pool[-2].sum()] if len(pool) > 4 else [pool[-1].sum()]
        backward(name, roots)
        logs.append(log)
    assert logs[0] == logs[1], [MENU[op][0] for op, _ in plan]
