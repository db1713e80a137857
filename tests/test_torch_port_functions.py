"""PyTorch's own autograd tests (``test/test_autograd.py``) rewritten for aiograd: custom
Functions, and custom Functions with views.

How the ports are written, and what differs by design: ``tests/torch_port_helpers.py``.
"""

from __future__ import annotations

import math
import warnings
import weakref

import numpy as np
import pytest
from helpers import requires_torch, torch
from torch_port_helpers import (
    SimulateBackwardError,
    close,
    graph_desc,
    raises,
    undefined_grad,
)

import aiograd as ag
from aiograd.function import once_differentiable

# --- custom Functions ---------------------------------------------------------------------------


async def _function_test(cls):
    x = ag.randn(5, 5, requires_grad=True)
    y = ag.randn(5, 5, requires_grad=True)
    result = cls.apply(x, 2, y)
    go = ag.ones((), requires_grad=True)
    await result.sum().backward(go, create_graph=True)
    assert close(x.grad, y + ag.ones(5, 5))
    assert close(y.grad, x + ag.ones(5, 5) * 2)
    assert x.grad.grad_fn is not None
    assert y.grad.grad_fn is not None
    return x, y


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")  # torch warns too
async def test_function():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_tensors
            assert isinstance(var1, ag.Tensor)
            assert isinstance(var2, ag.Tensor)
            assert isinstance(grad_output, ag.Tensor)
            return (grad_output + grad_output * var2, None, grad_output * ctx.pyscalar + grad_output * var1)

    await _function_test(MyFunction)


async def test_once_differentiable():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_output):
            assert not ag.is_grad_enabled()
            t1, t2 = ctx.saved_tensors
            return (grad_output + grad_output * t2, None, grad_output * ctx.pyscalar + grad_output * t1)

    x, y = await _function_test(MyFunction)
    # torch: 'CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))'. torch's
    # AccumulateGrad copies a fresh grad under create_graph with new_empty_strided + copy_
    # (CopyBackwards); aiograd clones it (CloneBackward0, one input): by design.
    assert graph_desc(x.grad.grad_fn) == "CloneBackward0(Error(AccumulateGrad(), None, AccumulateGrad()))"
    assert graph_desc(y.grad.grad_fn) == "CloneBackward0(Error(AccumulateGrad(), None, AccumulateGrad()))"


async def test_function_returns_input():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    for shape in [(1,), ()]:
        v = ag.ones(shape, requires_grad=True)
        await MyFunction.apply(v).backward()
        assert close(v.grad, ag.full(shape, 2.0))
        with ag.no_grad():
            v.grad.zero_()
        await MyFunction.apply(v.clone()).backward()
        assert close(v.grad, ag.full(shape, 2.0))


async def test_function_returns_undefined_tensor():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return None

    x = ag.ones(1, requires_grad=True)
    await MyFunction.apply(x).backward()
    assert x.grad is None
    await MyFunction.apply(x**2).backward()
    assert x.grad is None
    await MyFunction.apply(x).sum().backward()
    assert x.grad is None
    assert (await ag.grad(MyFunction.apply(x), x, allow_unused=True))[0] is None


async def test_materialize_grads():
    seen = []

    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            seen.append(grad)
            return grad

    x = ag.ones(1, requires_grad=True)
    await undefined_grad(MyFunction.apply(x)).backward()
    assert len(seen) == 1 and close(seen[0], ag.zeros(1))


async def test_dont_materialize_grads():
    seen = []

    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x

        @staticmethod
        def backward(ctx, grad):
            seen.append(grad)
            return grad

    x = ag.ones(1, requires_grad=True)
    await undefined_grad(MyFunction.apply(x)).backward()
    assert seen == [None]


def test_legacy_function_deprecation_exception():
    class MyFunction(ag.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            MyFunction()(ag.randn(3, 4))


async def test_custom_function_exception():
    t1 = ag.rand(3, 3, requires_grad=True)
    t2 = ag.rand(3, 3, requires_grad=True)
    tmp = (t1 + t2) * (t1 + t2)
    t3 = SimulateBackwardError.apply(tmp)
    # torch re-raises the Python exception from the engine as it is (an Exception)
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        await t3.sum().backward()


async def test_invalid_gradients():
    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return ag.randn(10, dtype=ag.float32)

    input = ag.randn(5, 5, dtype=ag.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected shape"):
        await MyFunction.apply(input).sum().backward()


async def test_accumulate_grad():
    grad_output = ag.ones(5, 5)

    async def compute_grad(create_graph):
        x = ag.randn(5, 5, requires_grad=True)
        y = x + 2
        await y.backward(grad_output, retain_graph=True)
        x_grad = x.grad
        x_grad_clone = x.grad.clone()
        await y.backward(grad_output, create_graph=create_graph)
        return x_grad, x_grad_clone

    # Accumulate in-place when create_graph is False
    x_grad, x_grad_clone = await compute_grad(create_graph=False)
    assert close(x_grad, x_grad_clone * 2)
    # Accumulate out-of-place when create_graph is True
    x_grad, x_grad_clone = await compute_grad(create_graph=True)
    assert close(x_grad, x_grad_clone)


async def test_accumulate_grad_tensor_reference():
    # the dense-dense case of torch's test (sparse gradients are out of scope)
    for create_graph in (False, True):
        params = ag.tensor([1.5, 1.5]).requires_grad_()
        params.grad = ag.tensor([1.5, 1.5])
        grad_saved = params.grad
        await params.backward(ag.tensor([1.5, 1.5]), create_graph=create_graph)
        assert (id(grad_saved) == id(params.grad)) == (not create_graph)


async def test_sum_to_with_empty_dim_grad():
    a = ag.rand(4, 0, requires_grad=True)
    b = ag.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    await c.sum().backward()
    assert close(b.grad, ag.zeros(4, 1))
    assert close(a.grad, ag.zeros(4, 0))


async def test_hessian_vector():
    x = ag.randn(2, 2, requires_grad=True)
    y = ag.randn(2, 2, requires_grad=True)
    z = x**2 + y * x + y**2
    await z.backward(ag.ones(2, 2), create_graph=True)
    with ag.no_grad():
        x_grad = 2 * x + y
        y_grad = x + 2 * y
    assert close(x.grad, x_grad)
    assert close(y.grad, y_grad)
    grad_sum = 2 * x.grad + y.grad
    await grad_sum.backward(ag.ones(2, 2))
    assert close(x.grad, x_grad + ag.ones(2, 2) * 5)
    assert close(y.grad, y_grad + ag.ones(2, 2) * 4)


async def test_grad():
    x = ag.randn(2, 2, requires_grad=True)
    y = ag.randn(2, 2, requires_grad=True)
    z = x**2 + y * x + y**2
    await z.backward(ag.ones(2, 2), create_graph=True)
    x_grad = 2 * x + y
    y_grad = x + 2 * y
    assert close(x.grad, x_grad)
    assert close(y.grad, y_grad)
    grad_sum = 2 * x.grad + y.grad
    x_hv = await ag.grad(outputs=[grad_sum], grad_outputs=[ag.ones(2, 2)], inputs=[x], create_graph=True)
    assert close(x_hv[0], ag.ones(2, 2) * 5)
    assert close(x.grad, x_grad)
    assert close(y.grad, y_grad)
    # torch prints torch.Size([2]); aiograd prints the shape as a tuple (aiograd has no Size)
    with raises(RuntimeError, "Mismatch in shape: grad_output[0] has a shape of (2,) and output[0] has a shape of (2, 2)."):
        await ag.grad(outputs=[grad_sum], grad_outputs=[ag.ones(2)], inputs=[x], create_graph=True)


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")  # torch warns too
async def test_grad_nonleaf():
    x_init = ag.randn(2, 2, requires_grad=True)
    x = x_init
    y = ag.randn(2, 2, requires_grad=True)
    grad_output = ag.ones(2, 2)

    def fn(x):
        return x**2 + y * x + y**2

    for _ in range(5):
        (grad_x,) = await ag.grad(fn(x), x, grad_outputs=grad_output, create_graph=True)
        grad_x_expected = 2 * x + y
        assert y.grad is None
        assert x.grad is None
        assert close(grad_x, grad_x_expected)
        x = x + 0.05 * grad_x

    val_init = fn(x_init).sum()
    val_final = fn(x).sum()
    assert val_final.item() > val_init.item()
    await x.backward(grad_output)
    assert y.grad is not None
    assert x_init.grad is not None


async def test_grad_nonleaf_many_outputs():
    x = ag.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)
    hook_called = [False]

    def hook(*grads):
        hook_called[0] = True

    x.register_hook(hook)
    go = ag.randn(2, 2)
    grad_a, grad_b = await ag.grad((a + 2 * b), [a, b], grad_outputs=go, create_graph=True)
    assert close(grad_a, go)
    assert close(grad_b, go * 2)
    assert not hook_called[0]
    assert x.grad is None


async def test_grad_nonleaf_register_hook():
    x = ag.randn(5, requires_grad=True)
    x_list = x.unbind()
    x0 = x_list[0]
    hook_results = [None]

    def hook(grad):
        hook_results[0] = grad

    x0.register_hook(hook)
    await x_list[0].backward()
    assert close(hook_results[0], ag.tensor(1.0))
    expected_grad = np.array([1.0, 0, 0, 0, 0])
    assert close(x.grad, expected_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # .grad of a non-leaf warns, as in torch
        assert x_list[0].grad is None
    for i in range(1, 5, 1):
        await x_list[i].backward()
        assert hook_results[0] is None
        expected_grad[i] = 1.0
        assert close(x.grad, expected_grad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert x_list[i].grad is None


async def test_hook_with_no_name_does_not_raise():
    # Create a hook that does not have a __name__ attribute
    class MyHookClass:
        def __call__(self, grad):
            # (torch's returns grad.clone(); doubling it shows that what the hook returns is used)
            return grad * 2

    hook = MyHookClass()
    assert not hasattr(hook, "__name__")
    leaf = ag.randn(5, requires_grad=True)
    x = leaf.clone()
    x.register_hook(hook)
    await x.sum().backward()
    assert leaf.grad.tolist() == [2.0] * 5


async def test_sharded_grad():
    leaves = [ag.zeros(5, 5, requires_grad=True) for _ in range(10)]
    intermediates = [l * i + l * l for i, l in enumerate(leaves)]  # noqa: E741
    loss = sum(v * i for i, v in enumerate(intermediates)).sum()

    def group(items, group_size):
        return (items[i : i + group_size] for i in range(0, len(items), group_size))

    shard_size = 2
    d_intermediates = [
        d_i for batch in group(intermediates, shard_size) for d_i in await ag.grad(loss, batch, retain_graph=True)
    ]
    # torch's test passes no retain_graph: its grad() frees nothing that the later shards need,
    # since loss's nodes save no tensors (mul by a Python int); aiograd does the same, see below
    await ag.backward(intermediates, d_intermediates)
    for i, leaf in enumerate(leaves):
        assert close(leaf.grad, i * i * (1 + leaf))


async def test_sharded_grad_without_retain_graph():
    # torch's exact code: grad() called several times on one graph without retain_graph
    leaves = [ag.zeros(5, 5, requires_grad=True) for _ in range(10)]
    intermediates = [l * i + l * l for i, l in enumerate(leaves)]  # noqa: E741
    loss = sum(v * i for i, v in enumerate(intermediates)).sum()
    d_intermediates = []
    for start in range(0, len(intermediates), 2):
        d_intermediates += await ag.grad(loss, intermediates[start : start + 2])
    await ag.backward(intermediates, d_intermediates)
    for i, leaf in enumerate(leaves):
        assert close(leaf.grad, i * i * (1 + leaf))


async def test_backward_badcalls():
    x = ag.ones(1)
    with pytest.raises(RuntimeError, match="does not require grad"):
        await x.backward()


async def test_grad_badcalls():
    x = ag.ones(1)
    y = x**2
    with pytest.raises(RuntimeError, match="does not require grad"):
        await ag.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        await ag.grad(y, x)
    x = ag.ones(1, requires_grad=True)
    y = x**2
    await ag.grad(y, x)


def test_grad_fn_badcalls():
    error_regex = "expected .* arguments, got .* instead"
    x = ag.ones(1, requires_grad=True)
    y = x**2
    with pytest.raises(TypeError, match=error_regex):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match=error_regex):
        y.grad_fn()
    y.grad_fn(x.detach())


async def test_grad_unreachable():
    x = ag.ones(1, requires_grad=True)
    y = ag.ones(1, requires_grad=True)
    z = x * 2  # noqa: F841
    w = y * 2  # noqa: F841
    grad_x, grad_y = await ag.grad(x * 2, [x, y], allow_unused=True)
    assert close(grad_x, x * 2)
    assert grad_y is None
    z = ag.ones(1, requires_grad=True)
    grad_x, grad_z = await ag.grad(x * 2, [x, z], allow_unused=True)
    assert close(grad_x, x * 2)
    assert grad_z is None
    with pytest.raises(RuntimeError, match="Set allow_unused=True"):
        await ag.grad(x * 2, [x, y], allow_unused=False)


async def test_grad_unreachable_discovery():
    # torch: a custom Function's backward that cannot reach the requested input never runs
    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            raise AssertionError("This node should not be executed!")

    x = MyFunc.apply(ag.randn(1, requires_grad=True) * 2)
    y = ag.randn(1, requires_grad=True)
    (gY,) = await ag.grad(x, (y,), allow_unused=True)
    assert gY is None

    x = MyFunc.apply(ag.randn(1, requires_grad=True) * 2)
    y = ag.randn(1, requires_grad=True)
    z = ag.randn(1, requires_grad=True)
    (gY, gZ) = await ag.grad(x + z, (y, z), allow_unused=True)
    assert gY is None
    assert gZ is not None

    x = MyFunc.apply(ag.randn(1, requires_grad=True) * 2)
    y = ag.randn(1, requires_grad=True)
    await ag.backward(x, inputs=(y,))
    assert y.grad is None


async def test_grad_batched_grad():
    x = ag.randn(2, 2, requires_grad=True)
    out = x.clone()
    batched_grad = ag.arange(3).expand(2, 2, 3).transpose(0, 2).double()
    (grad,) = await ag.grad(out, (x,), (batched_grad,), is_grads_batched=True)
    assert close(grad, ag.arange(3).expand(2, 2, 3).transpose(0, 2).double())

    # Detect shape mismatch
    grad_out = ag.ones(2, 2)
    with raises(RuntimeError, "If `is_grads_batched=True`, we interpret the first"):
        await ag.grad(outputs=out, grad_outputs=(grad_out,), inputs=(x,), is_grads_batched=True)

    # Scalar outputs
    out = x.sum()
    batched_grad = ag.arange(3).double()
    (grad,) = await ag.grad(out, (x,), (batched_grad,), is_grads_batched=True)
    assert close(grad, ag.arange(3).expand(2, 2, 3).transpose(0, 2).double())

    # We consider scalar and sized-1 to be a mismatch.
    grad_out = ag.ones(2).unsqueeze(1)
    with raises(RuntimeError, "If `is_grads_batched=True`, we interpret the first"):
        await ag.grad(outputs=out, grad_outputs=(grad_out,), inputs=(x,), is_grads_batched=True)


# --- custom Functions and views --------------------------------------------------------------------


async def test_clear_saved_tensors_on_access():
    refs = []

    class MyFn(ag.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            ref = weakref.ref(x)
            del x
            # Local variable should be the only remaining reference
            refs.append(ref() is None)
            return grad_output

    x = ag.randn(3, requires_grad=True)
    y = MyFn.apply(x.clone())
    await y.sum().backward()
    assert refs == [True]


async def test_clear_saved_tensors_on_access_double_access_error():
    class MyFn(ag.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad_output):
            _ = ctx.saved_tensors  # first access
            _ = ctx.saved_tensors  # second access - should raise
            return grad_output

    x = ag.randn(3, requires_grad=True)
    y = MyFn.apply(x)
    with pytest.raises(RuntimeError, match="can only be accessed once"):
        await y.sum().backward()


def test_autograd_node_isinstance():
    Node = ag.graph.Node
    a = ag.rand(3, 3, requires_grad=True)
    b = a.exp()
    assert isinstance(b.grad_fn, Node)
    assert issubclass(type(b.grad_fn), Node)
    assert isinstance(b.grad_fn.next_functions[0][0], Node)
    assert not isinstance(None, Node)
    assert not isinstance(1, Node)
    assert not isinstance(Node, Node)
    assert issubclass(Node, Node)
    seen = []

    class Func(ag.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(isinstance(ctx, Node))
            return x

        @staticmethod
        def backward(ctx, x):
            seen.append(isinstance(ctx, Node))
            return x

    out = Func.apply(a)
    assert isinstance(out.grad_fn, Node)
    assert issubclass(type(out.grad_fn), Node)
    ag.sync.backward(out.sum())
    assert seen == [True, True]
    # (torch's "Node not in type(grad_fn).mro()" is a detail of its C++ classes; aiograd's
    # nodes subclass Node)


def test_autograd_views_codegen():
    def run_test(grad_mode, requires_grad, is_view, should_raise_tuple):
        def maybe_check_raise(fn, should_raise):
            if should_raise is not None:
                with pytest.raises(RuntimeError, match=should_raise):
                    fn()
            else:
                fn()

        inp = ag.rand(2, requires_grad=requires_grad).clone()
        with ag.set_grad_enabled(grad_mode):
            out = inp.view_as(inp)
        assert out._is_view() == is_view
        maybe_check_raise(lambda: out.add_(1), should_raise_tuple[0])

        inp = ag.rand(2, requires_grad=requires_grad).clone()
        with ag.set_grad_enabled(grad_mode):
            out = inp.unbind()
        assert out[0]._is_view() == is_view
        assert out[1]._is_view() == is_view
        maybe_check_raise(lambda: out[0].add_(1), should_raise_tuple[1])
        maybe_check_raise(lambda: out[1].add_(1), should_raise_tuple[2])

    run_test(grad_mode=True, requires_grad=False, is_view=True, should_raise_tuple=(None, None, None))
    # torch's main branch names the node ("UnbindBackward0"); torch 2.13, the oracle, names the
    # op ("Unbind"), and so does aiograd
    inp_change_err = "Output {} of Unbind is a view and is being modified inplace."
    run_test(grad_mode=True, requires_grad=True, is_view=True,
             should_raise_tuple=(None, inp_change_err.format("0"), inp_change_err.format("1")))
    leaf_grad_err = "A view was created in no_grad mode and is being modified inplace"
    run_test(grad_mode=False, requires_grad=True, is_view=True,
             should_raise_tuple=(leaf_grad_err, leaf_grad_err, leaf_grad_err))
    run_test(grad_mode=False, requires_grad=False, is_view=True, should_raise_tuple=(None, None, None))


def test_inplace_not_requires_grad():
    class MyFn(ag.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    # Original Tensor does not require grad
    a = ag.rand(1, 2)
    # Tensor being written does require grad
    b = ag.rand(1, requires_grad=True)
    # Take an invalid view on 'a' that should raise an error (warns during deprecation)
    view_a = MyFn.apply(a)
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        view_a += b

    # Extra test for copy_
    a = ag.rand(1, 2)
    b = ag.rand(1, requires_grad=True)
    view_a = MyFn.apply(a)
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        view_a.copy_(b)

    # Functions that should throw must properly throw
    a = ag.rand(1, 2)
    b = ag.rand(1, requires_grad=True)
    view_a = a.unbind()[0]
    with pytest.raises(RuntimeError, match="This view is the output of a function that returns multiple views."):
        view_a.copy_(b)

    # Sanity check that views that should work still work
    a = ag.rand(1, 2)
    b = ag.rand(1, requires_grad=True)
    a[:, 0].copy_(b)  # torch: a.select(1, 0)


async def test_autograd_simple_views_python():
    # torch runs it in double and cdouble; aiograd has no complex dtype
    bw_called = [0]
    ga_nz = [False]

    class IdOneOutput(ag.Function):
        @staticmethod
        def forward(ctx, a, make_view, pure_view):
            ctx._is_pure_view = pure_view
            a = a[0:2] if make_view else a.clone()  # torch: a.narrow(0, 0, 2)
            return a

        @staticmethod
        def backward(ctx, ga):
            bw_called[0] += 1
            return ga, None, None

    class IdTwoOutput(ag.Function):
        @staticmethod
        def forward(ctx, a, b, make_view, pure_view):
            ctx._is_pure_view = pure_view
            a = a[0:2] if make_view else a.clone()
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            ga_nz[0] = not bool((ga.data == 0).all())
            return ga + gab, gab, None, None

    class ViewOfTemp(ag.Function):
        @staticmethod
        def forward(ctx, a, make_view, pure_view):
            ctx._is_pure_view = pure_view
            ctx.save_for_backward(a)
            a = a[0:2] if make_view else a.clone()
            b = a.clone()
            return b[0]  # torch: b.select(0, 0)

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            (a,) = ctx.saved_tensors
            res = ag.zeros_like(a)
            res[0].copy_(grad)
            return res, None, None

    # (messages as torch 2.13 words them: "Output 0 of IdOneOutput", where torch's main branch
    # says "IdOneOutputBackward")
    fn_id_to_inplace_on_view_err_msg = {
        "one_output": (
            "Output 0 of IdOneOutput is a view and is being "
            "modified inplace. This view was created inside a custom Function"
        ),
        "two_output": (
            "Output 0 of IdTwoOutput is a view and is being modified inplace."
            " This view is the output of a function that returns multiple views.",
            "Pure view custom Function can only have one input Tensor and one output Tensor."
            " Open an issue if you need to support more.",
        ),
        "view_of_temp": (
            "Output 0 of ViewOfTemp is a view and is being "
            "modified inplace. This view was created inside a custom Function",
            "a view of a leaf Variable that requires grad is being used in an in-place operation",
        ),
    }

    for fn_id in ["one_output", "two_output", "view_of_temp"]:
        for inplace in [True, False]:
            for make_view in [True, False]:
                for pure_view in [True, False]:
                    output_is_a_view = make_view or fn_id == "view_of_temp"

                    def fn(a, b, fn_id=fn_id, inplace=inplace, make_view=make_view, pure_view=pure_view):
                        a = a.clone()
                        b = b.clone()
                        if fn_id == "two_output":
                            tmp1, tmp2 = IdTwoOutput.apply(a, b, make_view, pure_view)
                            if inplace:
                                tmp1 += 3
                                tmp2 += 3
                            else:
                                tmp1 = tmp1 + 3
                                tmp2 = tmp2 + 3
                            tmp = tmp1 * tmp2
                        else:
                            if fn_id == "one_output":
                                tmp = IdOneOutput.apply(a, make_view, pure_view)
                            else:
                                tmp = ViewOfTemp.apply(a + b, make_view, pure_view)
                            if inplace:
                                tmp += 3
                            else:
                                tmp = tmp + 3
                        return tmp.sum()

                    a = ag.ones(2, dtype=ag.double, requires_grad=True)
                    b = ag.ones(2, dtype=ag.double, requires_grad=True)
                    messages = fn_id_to_inplace_on_view_err_msg[fn_id]
                    err_msg = messages if isinstance(messages, str) else messages[int(pure_view)]
                    will_raise_error = (
                        (pure_view and fn_id == "two_output")
                        or (pure_view and fn_id == "view_of_temp" and inplace)
                        or (not pure_view and inplace and output_is_a_view)
                    )
                    if will_raise_error:
                        with raises(RuntimeError, err_msg):
                            await ag.testing.gradcheck(fn, (a, b))
                    else:
                        await ag.testing.gradcheck(fn, (a, b))

                    bw_called[0] = 0
                    ga_nz[0] = True
                    expected_called = 1
                    expected_ga_nz = True
                    if will_raise_error:
                        expected_called = 0
                        with raises(RuntimeError, err_msg):
                            fn(a, b)
                    else:
                        await fn(a, b).abs().backward()
                    if fn_id == "one_output" and inplace and output_is_a_view and pure_view:
                        # the op was replayed from the pure view, so the original backward
                        # was not called
                        expected_called = 0
                    assert (fn_id, inplace, make_view, pure_view, bw_called[0]) == (
                        fn_id, inplace, make_view, pure_view, expected_called)
                    assert ga_nz[0] == expected_ga_nz


def test_autograd_print_tensor():
    a = ag.ones(1, requires_grad=True)
    a_clone = a.clone()
    assert repr(a) == "tensor([1.], requires_grad=True)"
    assert repr(a_clone) == "tensor([1.], grad_fn=<CloneBackward0>)"
    with ag.no_grad():
        b = a[:]
        b *= 2
    # Special handling for printing view created in no-grad and modified in-placed in no-grad.
    assert repr(b) == "tensor([2.], grad_fn=<Invalid>)"

    class Func(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            return x

    c = Func.apply(a)
    assert repr(c) == "tensor([2.], grad_fn=<FuncBackward>)"


def test_autograd_inplace_view_of_view():
    x = ag.zeros(2)
    with ag.no_grad():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="a view of a view .* is being .* inside the no_grad block"):
        z /= 2

    x = ag.zeros(2)
    with ag.inference_mode():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    with pytest.raises(RuntimeError, match="a view of a view .* is being .* inside the inference_mode"):
        z /= 2


async def test_autograd_multiple_views_python():
    bw_called = [0]

    class ComplexView(ag.Function):
        @staticmethod
        def forward(ctx, a, idx):
            res = a[idx : idx + 1]  # torch: a.narrow(0, idx, 1)
            res = a[idx]  # torch: a.select(0, idx)
            ctx.save_for_backward(a)
            ctx.idx = idx
            return res

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            (a,) = ctx.saved_tensors
            res = ag.zeros_like(a)
            res[ctx.idx].copy_(grad)
            return res, None

    a = ag.ones(2, requires_grad=True)
    idx = 1
    bw_called[0] = 0
    out = ComplexView.apply(a.clone(), idx)
    await out.sum().backward()
    assert bw_called[0] == 1

    out = ComplexView.apply(a.clone(), idx)
    # torch 2.13 names the op ("ComplexView"); torch's main branch says "ComplexViewBackward"
    with pytest.raises(RuntimeError, match="Output 0 of ComplexView is a view and is being modified inplace"):
        out += 1


async def test_autograd_python_custom_function_inplace():
    bw_called = [0]

    # I) Single output
    class MyAdder(ag.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            return grad, grad

    a = ag.ones(2, requires_grad=True)
    b = ag.ones(2, requires_grad=True)
    # No extra inplace
    c = MyAdder.apply(a.clone(), b)
    await c.sum().backward()
    assert bw_called[0] == 1
    # With extra inplace on the output
    bw_called[0] = 0
    c = MyAdder.apply(a.clone(), b)
    c += 2
    await c.sum().backward()
    assert bw_called[0] == 1
    # The input is a view
    bw_called[0] = 0
    c = MyAdder.apply(a.clone().view_as(a), b)
    await c.sum().backward()
    assert bw_called[0] == 1

    # Should not give non-inputs to mark_dirty
    class MyAdderBad(ag.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = 3 * a
            c.add_(b)
            ctx.mark_dirty(c)
            return c

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            grad = 3 * grad
            return grad, grad

    a = ag.ones(2, requires_grad=True)
    b = ag.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        MyAdderBad.apply(a.clone(), b)
    assert len(w) == 1

    # II) Multiple outputs
    class MyBadAdder(ag.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            return ga + gab, ga + gab

    bw_called[0] = 0
    c, d = MyBadAdder.apply(a.clone(), b)
    await (c * d).sum().backward()
    assert bw_called[0] == 1
    bw_called[0] = 0
    c, d = MyBadAdder.apply(a.clone(), b)
    c += 2
    await (c * d).sum().backward()
    assert bw_called[0] == 1
    inplace_on_view_err = "your Function modifies inplace an input that is a view of another Tensor"
    with pytest.raises(RuntimeError, match=inplace_on_view_err):
        c, d = MyBadAdder.apply(a.clone().view_as(a), b)

    # III) Inplace + other op
    class MyOutPlaceAdder(ag.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a.clone(), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            return ga + gab, ga + 2 * gab

    def fn(a, b):
        orig_a = a.clone().view_as(a)
        c, d = MyOutPlaceAdder.apply(orig_a, b)
        return (c * d).sum()

    bad_mark_dirty_err = "Some elements marked as dirty during the forward method were not returned as output."
    with raises(RuntimeError, bad_mark_dirty_err):
        fn(a, b)


def test_custom_function_mark_output_view_of_intermediate():
    class Func(ag.Function):
        @staticmethod
        def forward(ctx, inp):
            out = inp.clone().view_as(inp)
            ctx.mark_dirty(out)
            return out

        @staticmethod
        def backward(ctx, gO):
            pass

    a = ag.tensor([1.0], requires_grad=True)
    a_clone = a.clone()
    with pytest.raises(RuntimeError, match="received a tensor that was not an input."):
        Func.apply(a_clone)


def test_custom_function_inplace_on_non_default_view():
    class Func(ag.Function):
        @staticmethod
        def forward(ctx, inp):
            inp.add_(1)
            ctx.mark_dirty(inp)
            return inp

        @staticmethod
        def backward(ctx, gO):
            pass

    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b, c = a.split_with_sizes([1, 1], dim=0)
    with pytest.raises(RuntimeError, match="output of a function that returns multiple view"):
        Func.apply(b)


def test_custom_function_inplace_on_view_of_leaf():
    class Func(ag.Function):
        @staticmethod
        def forward(ctx, inp):
            inp.add_(1)
            ctx.mark_dirty(inp)
            return inp

        @staticmethod
        def backward(ctx, gO):
            pass

    a = ag.tensor([1.0, 2.0], requires_grad=True)
    b = a.view_as(a)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        Func.apply(b)


def test_custom_function_saving_mutated_view_no_leak():
    class Test(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            pass

    def scope():
        x = ag.tensor(1.0, requires_grad=True).clone()
        x = x.view_as(x)
        Test.apply(x)
        return weakref.ref(x)

    ref = scope()
    assert ref() is None


def test_custom_function_return_view_in_nograd():
    class Alias(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, gx):
            return gx

    inp = ag.rand(2, requires_grad=True)
    with ag.no_grad():
        output = Alias.apply(inp)
    with ag.no_grad():
        expected_output = inp[:]
    # Calling the custom function should operate as if we called an equivalent op
    assert output.requires_grad == expected_output.requires_grad
    # Check that in-place modification on view throws
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
        output.zero_()


async def test_power_function():
    a = ag.tensor([0.0, 0.0, 0.0])
    b = ag.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    c = ag.sum(a**b)
    await c.backward()
    assert close(b.grad, [-math.inf, 0.0, 0.0])

    s = 0
    b = ag.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    c = ag.sum(s**b)
    await c.backward()
    assert close(b.grad, [-math.inf, 0.0, 0.0])


async def test_custom_function_error():
    class BadFw(ag.Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class BadBw(ag.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    class BadBw2(ag.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

        @staticmethod
        def backward(ctx, foo):
            return foo

        @staticmethod
        def vjp(ctx, foo):
            return foo

    inp = ag.rand(1, requires_grad=True)
    with pytest.raises(NotImplementedError, match="must implement the forward"):
        BadFw.apply(inp)
    with pytest.raises(RuntimeError, match="must implement either the backward"):
        await BadBw.apply(inp).sum().backward()
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'"):
        await BadBw2.apply(inp).sum().backward()


@requires_torch
def test_oracle_inplace_on_inference_mode_views_matches_torch():
    def message(lib, scenario):
        try:
            scenario(lib)
        except RuntimeError as e:
            return str(e)
        return None

    def view_of_view(lib):
        x = lib.zeros(2)
        with lib.inference_mode():
            y = x.view(2)
        y.requires_grad_(True)
        y.view(2).div_(2)

    def view_of_leaf(lib):
        a = lib.rand(2, requires_grad=True)
        with lib.inference_mode():
            v = a.view(2)
        v.add_(1)

    def no_grad_view_of_inference_view(lib):
        b = lib.rand(2, requires_grad=True).clone()
        with lib.inference_mode():
            v = b.view(2)
        with lib.no_grad():
            w = v.view(2)
        w.add_(1)

    for scenario in (view_of_view, view_of_leaf, no_grad_view_of_inference_view):
        expected = message(torch, scenario)
        assert expected is not None and "inference mode" in expected
        assert message(ag, scenario) == expected


@requires_torch
async def test_oracle_pure_view_and_clear_saved_tensors_match_torch():
    async def pure_view(lib, base, backward):
        calls = []

        class IdOneOutput(base):
            @staticmethod
            def forward(ctx, a):
                ctx._is_pure_view = True
                return a[0:2]

            @staticmethod
            def backward(ctx, ga):
                calls.append(1)
                return ga

        a = lib.ones(3, dtype=lib.float64, requires_grad=True)
        tmp = IdOneOutput.apply(a.clone())
        tmp += 3
        await backward((tmp * tmp).sum())
        return len(calls), a.grad.tolist()

    async def double_access(lib, base, backward):
        class MyFn(base):
            clear_saved_tensors_on_access = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                _ = ctx.saved_tensors
                _ = ctx.saved_tensors
                return g

        try:
            await backward(MyFn.apply(lib.ones(2, requires_grad=True)).sum())
        except RuntimeError as e:
            return str(e)
        return None

    async def mutated_view_saved(lib, base, backward):
        seen = []

        class Test(base):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, grad):
                (s,) = ctx.saved_tensors
                seen.append((type(s.grad_fn).__name__, s.tolist()))
                return grad * s

        x = lib.tensor([1.0], dtype=lib.float64, requires_grad=True)
        v = x.clone().view_as(x)
        await backward(Test.apply(v).sum())
        return seen, x.grad.tolist()

    async def torch_backward(t):
        t.backward()

    async def ag_backward(t):
        await t.backward()

    for scenario in (pure_view, double_access, mutated_view_saved):
        expected = await scenario(torch, torch.autograd.Function, torch_backward)
        assert await scenario(ag, ag.Function, ag_backward) == expected, scenario.__name__
