"""PyTorch's own autograd tests (``test/test_autograd.py``) rewritten for aiograd: backward and
grad, and the behaviours changed for these ports (each run on torch as well).

How the ports are written, and what differs by design: ``tests/torch_port_helpers.py``.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from torch_port_helpers import (
    BACKWARD_TWICE,
    IdentityFunction,
    close,
    graph_desc,
    raises,
)

import aiograd as ag
from aiograd.function import once_differentiable

# --- backward and grad --------------------------------------------------------------------------


async def test_backward():
    v = ag.randn(5, 5, requires_grad=True)
    x = ag.randn(5, 5, requires_grad=True)
    y = (ag.rand(5, 5) + 0.1).requires_grad_(True)
    z = ag.randn(5, 5, requires_grad=True)
    grad_output = ag.randn(5, 5)
    await v.backward(grad_output)
    assert close(v.grad, grad_output)
    a = x + (y * z) + 4 * z**2 * x / y
    await a.backward(grad_output)
    x_grad = 4 * z.pow(2) / y + 1
    y_grad = z - 4 * x * z.pow(2) / y.pow(2)
    z_grad = 8 * x * z / y + y
    assert close(x.grad, x_grad * grad_output)
    assert close(y.grad, y_grad * grad_output)
    assert close(z.grad, z_grad * grad_output)


async def test_multi_backward():
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    q = ag.randn(5, 5, requires_grad=True)
    a = ag.randn(5, 5, requires_grad=True)
    b = ag.randn(5, 5, requires_grad=True)
    q2 = q * 2
    z = x + y + q2
    c = a * b + q2
    grad_z = ag.randn(5, 5)
    grad_c = ag.randn(5, 5)
    await ag.backward([z, c], [grad_z, grad_c])
    assert close(x.grad, grad_z)
    assert close(y.grad, grad_z)
    assert close(a.grad, grad_c * b)
    assert close(b.grad, grad_c * a)
    assert close(q.grad, (grad_c + grad_z) * 2)


async def test_multi_backward_no_grad():
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=False)
    z = x + y
    q = y * 2
    with pytest.raises(RuntimeError):
        await ag.backward([z, q], [ag.ones(5, 5), ag.ones(5, 5)])


async def test_dependent_backward():
    x = ag.randn(10, requires_grad=True)
    y = x**2
    z = y**3
    go_y = ag.randn(10)
    go_z = ag.randn(10)
    await ag.backward([y, z], [go_y, go_z])
    assert close(x.grad, 2 * x * go_y + 6 * x.pow(5) * go_z)


async def test_save_output_nr():
    x = ag.randn(10, requires_grad=True)

    class MultiOutputFn(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:5], x[5:]

        @staticmethod
        def backward(ctx, *grad):
            return ag.cat(grad)

    a, b = MultiOutputFn.apply(x)
    assert b.output_nr == 1
    seen = []

    class TestFn(ag.Function):
        @staticmethod
        def forward(ctx, b):
            ctx.save_for_backward(b)
            return b * 2

        @staticmethod
        def backward(ctx, grad_b):
            (b,) = ctx.saved_tensors
            seen.append(b.output_nr)

    await TestFn.apply(b).sum().backward()
    assert seen == [1]


@contextlib.contextmanager
def nothing_unraisable() -> Iterator[None]:
    """Fails if an exception is raised where nothing can catch it (a ``__del__``, a weakref
    callback, a finalizer) inside the block or in the garbage collection at its end: Python
    hands such an exception to ``sys.unraisablehook``, which pytest turns into a mere warning."""
    gc.collect()  # garbage left by earlier tests is theirs
    seen: list[str] = []

    def record(unraisable: Any) -> None:
        try:
            seen.append(f"{unraisable.err_msg or 'Exception ignored in'} {unraisable.object!r}: "
                        f"{unraisable.exc_type.__name__}: {unraisable.exc_value}")
        except Exception as exc:  # noqa: BLE001 - a repr that fails: still recorded
            seen.append(f"{unraisable.exc_type.__name__} (and {type(exc).__name__} describing it)")

    previous, sys.unraisablehook = sys.unraisablehook, record
    try:
        yield
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert not seen, "raised while freeing:\n" + "\n".join(seen)


def test_the_freeing_check_fails_when_freeing_raises():
    """The check the two tests below rely on fails when freeing a graph raises."""

    class RaisesWhenFreed:
        def __del__(self) -> None:
            raise RuntimeError("freeing failed")

    y = ag.randn(1, requires_grad=True).clone()
    y.grad_fn.metadata["freed with"] = RaisesWhenFreed()
    with pytest.raises(AssertionError, match="RuntimeError: freeing failed"), nothing_unraisable():
        del y


def test_free_deep_graph():
    # torch builds 150000 nodes; aiograd frees its graph without recursion the same way: all of
    # it, and nothing raised on the way (not even where only sys.unraisablehook would see it)
    x = ag.randn(1, requires_grad=True)
    y = x.clone()
    deepest = weakref.ref(y.grad_fn)
    for _ in range(20000):
        y = y + y * 0.000001
    top = weakref.ref(y.grad_fn)
    with nothing_unraisable():
        del y
    assert deepest() is None and top() is None
    assert x.grad is None and x.requires_grad  # the leaf outlives its graph, untouched


# the deep graph's sums overflow to inf, as in torch; numpy says so for add (see docs/gradients-at-edges.md)
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_free_deep_graph_pyfunction():
    class MyOp(ag.Function):
        @staticmethod
        def forward(ctx, tensor1, tensor2):
            return tensor1 + tensor2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    x = ag.randn(1, requires_grad=True)
    y = x.clone()
    deepest = weakref.ref(y.grad_fn)
    for _ in range(20000):
        y = MyOp.apply(y, y)
    top = weakref.ref(y.grad_fn)
    assert type(top()).__name__ == "MyOpBackward"
    with nothing_unraisable():
        del y
    assert deepest() is None and top() is None
    assert x.grad is None and x.requires_grad


async def test_no_unnecessary_save_backward_does_not_raise():
    # x is modified in place after each product: had its product saved x, the backward would
    # raise (a saved tensor modified in place)
    mu = ag.ones(1, requires_grad=True)
    x = ag.empty(1)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)
        ft = ag.tensor([float(i)])
        multiplied = x * ft
        s = multiplied.sum()
        loss += s
    await loss.backward()
    assert mu.grad.tolist() == [0.0 + 1.0 + 2.0]


async def test_duplicate_backward_root():
    a = ag.randn(5, 5, requires_grad=True)
    b = ag.randn(5, 5, requires_grad=True)
    x = a * b
    grad_output = ag.randn_like(x)
    await ag.backward([x, x], [grad_output, grad_output])
    assert close(a.grad, b * grad_output * 2)
    assert close(b.grad, a * grad_output * 2)


async def test_backward_no_grad():
    a = ag.randn(5, 5, requires_grad=True)
    b = a + 2
    with raises(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        await ag.backward([b], [None])


async def test_backward_twice_with_saved_values():
    b = ag.randn(3, requires_grad=True, dtype=ag.double)
    c = ag.zeros(3, dtype=ag.double)
    c[[1, 2]] = b[[1, 1]]
    await c.backward(ag.tensor([1, 1, 1], dtype=ag.double))
    with raises(RuntimeError, BACKWARD_TWICE):
        await c.backward(ag.tensor([1, 1, 1], dtype=ag.double))


async def test_backward_twice_retained_graph_with_saved_values_does_not_raise():
    b = ag.randn(3, requires_grad=True, dtype=ag.double)
    c = ag.zeros(3, dtype=ag.double)
    c[[1, 2]] = b[[1, 1]]
    await c.backward(ag.tensor([1, 1, 1], dtype=ag.double), retain_graph=True)
    await c.backward(ag.tensor([1, 1, 1], dtype=ag.double))
    assert b.grad.tolist() == [0.0, 4.0, 0.0]  # b[1] feeds two elements, in each of two calls


async def test_backward_twice_without_saved_values_does_not_raise():
    b = ag.randn(3, requires_grad=True, dtype=ag.double)
    c = b + 1
    await c.backward(ag.tensor([1, 1, 1], dtype=ag.double))
    await c.backward(ag.tensor([1, 1, 1], dtype=ag.double))
    assert b.grad.tolist() == [2.0, 2.0, 2.0]  # accumulated over the two calls


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")  # its first half
async def test_backward_create_graph_warns():
    b = ag.randn(3, requires_grad=True)
    c = b * b
    # torch's test first checks that backward(create_graph=True) warns, under
    # torch.set_warn_always(True); aiograd warns once per process as torch does by default and
    # has no set_warn_always, so only the second half is ported: grad() never warns
    await c.sum().backward(create_graph=True)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        await ag.grad(c.sum(), b, create_graph=True)
    assert not any("Using backward() with create_graph=True" in str(w.message) for w in ws)


async def test_next_functions():
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    a = x + y
    assert a.grad_fn is not None
    next_functions = a.grad_fn.next_functions
    assert len(next_functions) == 2
    assert type(next_functions[0][0]).__name__ == "AccumulateGrad"
    assert next_functions[0][1] == 0
    assert type(next_functions[1][0]).__name__ == "AccumulateGrad"
    assert next_functions[1][1] == 0
    b = a + 5
    next_functions = b.grad_fn.next_functions
    assert len(next_functions) == 2
    assert next_functions[0][0] is a.grad_fn
    assert next_functions[1][0] is None


async def test_accumulate_grad_posthooks_can_observe_tensor_prehook():
    # Post hooks on accumulate should be able to observe changes to grad made by tensor prehooks
    t = ag.tensor(1.0, requires_grad=True)

    def tensor_prehook(g):
        return g * 2

    seen = []

    def posthook(gO, gI):
        seen.append((gO, gI))
        assert close(gI[0], ag.tensor(2.0))
        assert len(gO) == 0

    def prehook(gI):
        assert close(gI[0], ag.tensor(2.0))
        assert len(gI) == 1

    b = t.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    t.register_hook(tensor_prehook)
    await b.backward()
    assert len(seen) == 1


@pytest.mark.parametrize("use_custom_function", [False, True])
@pytest.mark.parametrize("use_tensor_hook", [False, True])
@pytest.mark.aiograd(backends=["asyncio"])  # reference cycles and gc: not the loop's business
async def test_hook_closure_cycle(use_custom_function, use_tensor_hook):
    # A hook whose closure holds its node forms a cycle; the graph must still be freed
    class Test:
        pass

    count = [0]

    def build():
        # torch's test deletes its locals; here they go out of scope (a ``del`` of a variable a
        # closure captures would empty the closure's cell)
        a = ag.tensor(1.0, requires_grad=True)
        b = IdentityFunction.apply(a) if use_custom_function else a.clone()
        grad_fn_b = b.grad_fn
        obj = Test()

        def hook(*args):
            grad_fn_b  # noqa: B018
            obj  # noqa: B018
            count[0] += 1

        if use_tensor_hook:
            b.register_hook(hook)
        else:
            b.grad_fn.register_hook(hook)
        return b.clone(), weakref.ref(obj)

    c, ref = build()
    gc.collect()
    assert ref() is not None
    await c.backward()
    assert count[0] == 1
    del c
    gc.collect()
    assert ref() is None


async def test_grad_mode_restored_reentrant():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        async def backward(ctx, go):
            original = ag.is_grad_enabled()
            with ag.enable_grad():
                assert ag.is_grad_enabled()
                foo = ag.rand(*go.shape, requires_grad=True)
                (grad,) = await ag.grad(foo**3, foo, grad_outputs=go)
                assert ag.is_grad_enabled()
            assert ag.is_grad_enabled() == original
            return grad

    inp = ag.rand(3, requires_grad=True)
    # Case where original==False
    await MyFunction.apply(inp).sum().backward()
    # Case where original==True
    await MyFunction.apply(inp).sum().backward(create_graph=True)


# --- the behaviours changed for these ports, each run on torch as well -----------------------------


@requires_torch
async def test_oracle_once_differentiable_graph_matches_torch():
    def build(lib, once):
        class MyFunction(lib.autograd.Function if lib is torch else ag.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            @once
            def backward(ctx, g):
                return g * 2, None

        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        y = MyFunction.apply(x, lib.ones(2, dtype=lib.float64))
        return x, y

    # the error node is made only when a grad_output requires grad (as in test_once_differentiable)
    x_t, y_t = build(torch, torch.autograd.function.once_differentiable)
    go_t = torch.ones((), dtype=torch.float64, requires_grad=True)
    (g_t,) = torch.autograd.grad(y_t.sum(), x_t, go_t, create_graph=True)
    x_a, y_a = build(ag, once_differentiable)
    (g_a,) = await ag.grad(y_a.sum(), x_a, ag.ones((), requires_grad=True), create_graph=True)
    assert graph_desc(g_a.grad_fn) == graph_desc(g_t.grad_fn) == "Error(AccumulateGrad(), None)"


@requires_torch
async def test_oracle_post_hook_registered_while_node_runs_matches_torch():
    async def run(lib, graph, backward):
        res = []
        a = lib.tensor(1.0, requires_grad=True)

        def unpack(x):
            y.grad_fn.register_hook(lambda gI, gO: res.append("post"))
            return x

        with graph.saved_tensors_hooks(lambda x: x, unpack):
            y = a.exp()
        y.grad_fn.register_prehook(lambda gO: None)
        await backward(y)
        return res

    async def torch_backward(y):
        y.backward()

    async def ag_backward(y):
        await y.backward()

    assert await run(ag, ag.graph, ag_backward) == await run(torch, torch.autograd.graph, torch_backward) == ["post"]


@requires_torch
async def test_oracle_materialize_non_diff_grads_matches_torch():
    def build(lib, base):
        seen = []

        class Func(base):
            @staticmethod
            def forward(ctx, x):
                out0, out1, out2 = x.clone(), x.clone(), x.clone()
                ctx.mark_non_differentiable(out1)
                ctx._materialize_non_diff_grads = False
                return out0, out1, out2

            @staticmethod
            def backward(ctx, g0, g1, g2):
                seen.append((g1 is None, None if g2 is None else float(g2.sum())))
                return g0

        a = lib.tensor(1.0, requires_grad=True)
        return Func.apply(a)[0], seen

    out_t, seen_t = build(torch, torch.autograd.Function)
    out_t.backward()
    out_a, seen_a = build(ag, ag.Function)
    await out_a.backward()
    # the non-differentiable output's grad stays None; the unused differentiable one is zeros
    assert seen_a == seen_t == [(True, 0.0)]


@requires_torch
async def test_oracle_gradient_edge_as_output_matches_torch():
    def fn(lib, graph, x):
        tmp = x.sin().cos()
        out = tmp.exp().clone().sin().sum()
        return out, tmp, graph.get_gradient_edge(tmp)

    xt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    out_t, tmp_t, edge_t = fn(torch, torch.autograd.graph, xt)
    (gt,) = torch.autograd.grad(out_t, (edge_t,))
    (gxt,) = torch.autograd.grad(edge_t, (xt,), grad_outputs=(gt,))
    xa = ag.tensor([1.0, 2.0], requires_grad=True)
    out_a, tmp_a, edge_a = fn(ag, ag.graph, xa)
    (ga,) = await ag.grad(out_a, (edge_a,))
    (gxa,) = await ag.grad(edge_a, (xa,), grad_outputs=(ga,))
    assert close(gxa, gxt.numpy())
    messages = []
    for call in (lambda: torch.autograd.grad(edge_t, (xt,)),
                 lambda: torch.autograd.grad(edge_t, (xt,), grad_outputs=torch.ones(4, dtype=torch.float64))):
        with pytest.raises(RuntimeError) as info:
            call()
        messages.append(str(info.value).replace("torch.Size([4])", "(4,)").replace("torch.Size([2])", "(2,)"))
    with raises(RuntimeError, messages[0]):
        await ag.grad(edge_a, (xa,))
    with raises(RuntimeError, messages[1]):
        await ag.grad(edge_a, (xa,), grad_outputs=ag.ones(4))


async def test_backward_with_inputs():
    x = ag.randn(2, 2, dtype=ag.double, requires_grad=True)
    y = ag.randn(2, 2, dtype=ag.double, requires_grad=True)

    def fn():
        return x**2 + y * x + y**2

    gradient = ag.ones(2, 2)
    x_grad_expected = 2 * x + y
    y_grad_expected = x + 2 * y

    @ag.no_grad()
    def reset_grad():
        x.grad.zero_()
        y.grad.zero_()

    await ag.backward(fn(), gradient, inputs=[x, y])
    assert close(x.grad, x_grad_expected)
    assert close(y.grad, y_grad_expected)

    reset_grad()
    await ag.backward(fn(), gradient, inputs=[x])
    assert close(x.grad, x_grad_expected)
    assert close(y.grad, ag.zeros(2, 2))

    reset_grad()
    await ag.backward(fn(), gradient, inputs=[y])
    assert close(y.grad, y_grad_expected)
    assert close(x.grad, ag.zeros(2, 2))

    reset_grad()
    await ag.backward(fn(), gradient, inputs=y)
    assert close(y.grad, y_grad_expected)
    assert close(x.grad, ag.zeros(2, 2))

    reset_grad()
    with pytest.raises(RuntimeError, match="cannot be empty"):
        await ag.backward(fn(), gradient, inputs=[])


async def test_backward_with_scalar_input():
    x = ag.randn((), dtype=ag.double, requires_grad=True)
    out = x**2
    await out.backward(inputs=x)
    assert close(x.grad, 2 * x)


async def test_backward_with_nonleaf_inputs():
    x = ag.randn(2, 2, dtype=ag.double, requires_grad=True)
    x_nonleaf = x * 1
    y = ag.randn(2, 2, dtype=ag.double, requires_grad=True)
    z = ag.randn(2, 2, dtype=ag.double, requires_grad=True)
    out = x_nonleaf**2 + y * x_nonleaf + y**2
    await out.backward(ag.ones(2, 2, dtype=ag.double), create_graph=True, inputs=[x, y, x_nonleaf])
    x_grad_expected = 2 * x + y
    y_grad_expected = x + 2 * y
    x_non_leaf_expected = 2 * x_nonleaf + y
    assert close(y.grad, y_grad_expected)
    assert close(x.grad, x_grad_expected)
    assert close(x_nonleaf.grad, x_non_leaf_expected)
    # backward doesn't have an allow_unused flag, so the behavior of backward when variable is
    # not part of the graph is as if allow_used were true; z.grad will simply be None.
    await out.backward(ag.ones(2, 2, dtype=ag.double), create_graph=True, inputs=[z])
    assert z.grad is None


async def test_select_sum():
    x = ag.randn(10, dtype=ag.double, requires_grad=True)

    def func(x):
        return x[1].sum()  # torch: x.select(0, 1).sum()

    assert await ag.testing.gradcheck(func, [x])
    assert await ag.testing.gradgradcheck(func, [x])


async def test_select_expanded_v():
    v_expanded = ag.rand(10).expand(10, 10)
    a = ag.rand(10, 10, 10, requires_grad=True)
    (result,) = await ag.grad(a[0], a, v_expanded)
    expected = np.zeros((10, 10, 10))
    expected[0] = v_expanded.data
    assert close(result, expected)


async def test_slice_expanded_v():
    v_expanded = ag.rand(10, 1).expand(2, 10, 10)
    a = ag.rand(10, 10, 10, requires_grad=True)
    (result,) = await ag.grad(a[3:5], a, v_expanded)
    expected = np.zeros((10, 10, 10))
    expected[3:5] = v_expanded.data
    assert close(result, expected)


async def test_detach_then_inplace_raises_in_autograd():
    x = ag.randn((), requires_grad=True)
    y = x**2  # saves x
    z = x.detach()
    z.zero_()
    with pytest.raises(RuntimeError, match="has been modified by an inplace"):
        await y.backward()


def test_increment_version():
    a = ag.rand(5, requires_grad=True)
    v = a._version
    ag.graph.increment_version(a)
    assert a._version == v + 1

    a = ag.zeros(5, dtype=ag.int32)
    v = a._version
    ag.graph.increment_version(a)
    assert a._version == v + 1

    with ag.inference_mode():
        a = ag.rand(5, requires_grad=True)
        # does not error
        ag.graph.increment_version(a)
    # does not error
    ag.graph.increment_version(a)


def test_pickle():
    import pickle

    x = ag.randn(10, 10, requires_grad=True)
    y = ag.randn(10, 10, requires_grad=False)
    for p in range(3):
        xc, yc = pickle.loads(pickle.dumps([x, y], protocol=p))
        assert close(xc, x) and xc.requires_grad == x.requires_grad
        assert close(yc, y) and yc.requires_grad == y.requires_grad


async def test_saved_variables_deprecated():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, tensor1, tensor2):
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + tensor2

        @staticmethod
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_variables
            return (grad_output, grad_output)

    with warnings.catch_warnings(record=True) as warns:
        warnings.simplefilter("always")
        x = ag.randn(3, 3, requires_grad=True)
        y = ag.randn(3, 3, requires_grad=True)
        await MyFunction.apply(x, y).sum().backward()
    assert any("deprecated" in str(w.message) and "saved_variables" in str(w.message) for w in warns)


def test_naughty_autograd_function_attribute_access():
    class Id(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad_x):
            return grad_x

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Id()
    # After raising warning, should still return an instance
    assert isinstance(f, Id)
    x = ag.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-static forward method is deprecated"):
        f(x)
    t = Id.apply(x)
    assert t.grad_fn.name() == "IdBackward"
    # (the rest of torch's test checks THPFunction accessors on the instance, which aiograd's
    # Function class does not have)


async def test_custom_autograd_ac_early_stop():
    refs = []

    class Test(ag.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.clone()
            ctx.save_for_backward(y)
            refs.append(weakref.ref(y))
            return y

        @staticmethod
        def backward(ctx, *args):
            _ = ctx.saved_tensors
            return None

    def fn(inp):
        return Test.apply(inp)

    inp = ag.randn(5, 5, requires_grad=True)

    async def scope():
        # Early-stop is true by default in non-reentrant checkpoint
        out = ag.checkpoint(fn, inp, use_reentrant=False)
        await out.sum().backward()

    gc.disable()
    try:
        await scope()
        for ref in refs:
            assert ref() is None
    finally:
        gc.enable()


@requires_torch
async def test_oracle_saved_variables_warning_matches_torch():
    def run(base, backward):
        caught = []

        class F(base):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    (saved,) = ctx.saved_variables
                caught.extend((x.category, str(x.message)) for x in w)
                return g * saved

        return F, caught

    F_t, caught_t = run(torch.autograd.Function, None)
    F_t.apply(torch.ones(2, requires_grad=True)).sum().backward()
    F_a, caught_a = run(ag.Function, None)
    await F_a.apply(ag.ones(2, requires_grad=True)).sum().backward()
    assert caught_a == caught_t == [(DeprecationWarning, "'saved_variables' is deprecated; use 'saved_tensors'")]


@requires_torch
async def test_oracle_checkpoint_early_stop_frees_recomputed_outputs_like_torch():
    # with the garbage collector off, nothing saved by the recomputation outlives backward
    async def run(lib, checkpoint, base, backward):
        refs = []

        class Test(base):
            @staticmethod
            def forward(ctx, x):
                y = x.clone()
                ctx.save_for_backward(y)
                refs.append(weakref.ref(y))
                return y

            @staticmethod
            def backward(ctx, *args):
                _ = ctx.saved_tensors
                return None

        inp = lib.randn(5, 5, requires_grad=True)
        await backward(checkpoint(Test.apply, inp, use_reentrant=False).sum())
        return [r() is None for r in refs]

    async def torch_backward(t):
        t.backward()

    async def ag_backward(t):
        await t.backward()

    gc.disable()
    try:
        alive_t = await run(torch, torch.utils.checkpoint.checkpoint, torch.autograd.Function, torch_backward)
        alive_a = await run(ag, ag.checkpoint, ag.Function, ag_backward)
    finally:
        gc.enable()
    assert alive_a == alive_t == [True, True]
