"""PyTorch's own autograd tests (``test/test_autograd.py``) rewritten for aiograd:
TestNestedCheckpoint, TestMultithreadAutograd, TestAutogradInferenceMode, TestAutogradDeviceType
(CPU).

How the ports are written, and what differs by design: ``tests/torch_port_helpers.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_port_helpers import (
    close,
)

import aiograd as ag

# --- TestNestedCheckpoint, TestMultithreadAutograd, TestAutogradInferenceMode ----------------------


@pytest.mark.parametrize("early_stop", [True, False])
async def test_nested_checkpoint_non_tensor_inputs_and_outputs(early_stop):
    from aiograd.utils.checkpoint import set_checkpoint_early_stop

    def fn(k, a, b, f):
        return f(k * a * b.exp()), 1, "abcd"

    k = 3
    a = ag.tensor(2.0, requires_grad=True)
    b = ag.tensor(3.0, requires_grad=True)

    def f(x):
        return x.sin()

    with set_checkpoint_early_stop(early_stop):
        out, _unused1, _unused2 = ag.checkpoint(fn, k, a, b, f, use_reentrant=False)
    actual_grads = await ag.grad(out, (a, b))
    out, _unused1, _unused2 = fn(k, a, b, f)
    expected_grads = await ag.grad(out, (a, b))
    for actual, expected in zip(actual_grads, expected_grads):
        assert close(actual, expected)


@pytest.mark.parametrize("early_stop", [True, False])
async def test_nested_checkpoint_kwargs(early_stop):
    from aiograd.utils.checkpoint import set_checkpoint_early_stop

    def fn(a, blah=None):
        out = a.sin().exp()
        if blah is not None:
            out = out * blah
        return out.sin().exp()

    a = ag.tensor(2.0, requires_grad=True)
    b = ag.tensor(3.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        out = ag.checkpoint(fn, a, blah=b, use_reentrant=False)
        actual_grads = await ag.grad(out, (a, b))
        out = fn(a, blah=b)
        expected_grads = await ag.grad(out, (a, b))
        for actual, expected in zip(actual_grads, expected_grads):
            assert close(actual, expected)


@pytest.mark.parametrize("early_stop", [True, False])
async def test_nested_checkpoint_same_graph(early_stop):
    from aiograd.utils.checkpoint import set_checkpoint_early_stop

    counter = [0]

    def hook(*_unused_args):
        counter[0] += 1

    def fn(a):
        return a.sin().cos().sin()

    a = ag.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        out = ag.checkpoint(fn, a, use_reentrant=False)
    # The hook is registered on the original graph, and backward is performed on it
    out.grad_fn.next_functions[0][0].register_hook(hook)
    await out.backward()
    assert counter[0] == 1


@pytest.mark.parametrize("early_stop", [True, False])
async def test_nested_checkpoint_reentrant_backwards_does_not_raise(early_stop):
    from aiograd.utils.checkpoint import set_checkpoint_early_stop

    def fn(a):
        x = a.sin().cos()
        out = x.sin()
        return x, out

    async def hook(*_unused_args):
        # do backward again, but skip over the part of the graph where the hook was registered
        await x.backward(retain_graph=True)

    a = ag.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(early_stop):
        x, out = ag.checkpoint(fn, a, use_reentrant=False)
    out.grad_fn.register_hook(hook)
    await out.backward(retain_graph=True)
    # a gets x's gradient from the nested backward and out's from the outer one:
    # dx/da + dout/da = dx/da * (1 + cos(x)), with dx/da = -sin(sin(a)) * cos(a)
    dx_da = -np.sin(np.sin(1.0)) * np.cos(1.0)
    assert close(a.grad, dx_da * (1 + np.cos(np.cos(np.sin(1.0)))))


async def test_nested_checkpoint_set_early_stop():
    from aiograd.utils.checkpoint import set_checkpoint_early_stop

    counter = [0]

    def clone(x):
        counter[0] += 1
        return x.clone()

    def fn(x):
        # Since clone does not save anything, it is not recomputed iff early stop is enabled.
        return clone(x.sin().cos())

    async def run(expected, **kwargs):
        counter[0] = 0
        a = ag.tensor(1.0, requires_grad=True)
        out = ag.checkpoint(fn, a, use_reentrant=False, **kwargs)
        await out.backward()
        assert counter[0] == expected

    # Early stopping is enabled by default
    await run(1)
    # local setting
    await run(2, early_stop=False)
    await run(1, early_stop=True)
    # context manager: applies to the checkpoints run under it, even though it is no longer
    # active when backward/recomputation is performed
    with set_checkpoint_early_stop(False):
        counter[0] = 0
        a = ag.tensor(1.0, requires_grad=True)
        out = ag.checkpoint(fn, a, use_reentrant=False)
    await out.backward()
    assert counter[0] == 2
    with set_checkpoint_early_stop(True):
        counter[0] = 0
        a = ag.tensor(1.0, requires_grad=True)
        out = ag.checkpoint(fn, a, use_reentrant=False)
    await out.backward()
    assert counter[0] == 1
    # nesting and precedence: the context manager wins over the argument
    with set_checkpoint_early_stop(False):
        with set_checkpoint_early_stop(True):
            counter[0] = 0
            a = ag.tensor(1.0, requires_grad=True)
            out = ag.checkpoint(fn, a, use_reentrant=False, early_stop=False)
    await out.backward()
    assert counter[0] == 1
    with set_checkpoint_early_stop(False):
        counter[0] = 0
        a = ag.tensor(1.0, requires_grad=True)
        out = ag.checkpoint(fn, a, use_reentrant=False, early_stop=True)
    await out.backward()
    assert counter[0] == 2


async def test_nested_checkpoint_set_early_stop_no_recompution_needed():
    # Case 2 of torch's test: the forward saves no tensors, so nothing is recomputed
    from aiograd.utils.checkpoint import set_checkpoint_early_stop

    counter = [0]

    def fn2(x):
        counter[0] += 1
        return x.clone()

    a = ag.tensor(1.0, requires_grad=True)
    out = ag.checkpoint(fn2, a, use_reentrant=False)
    await out.backward()
    assert counter[0] == 1
    counter[0] = 0
    a = ag.tensor(1.0, requires_grad=True)
    with set_checkpoint_early_stop(False):
        out = ag.checkpoint(fn2, a, use_reentrant=False)
    await out.backward()
    assert counter[0] == 1


def _run_py_multithread_fn(fn, args=(), num_threads=10):
    import threading

    errors = []

    def target():
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001  (re-raised in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=target) for _ in range(num_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_multithread_simple_backward():
    # TestMultithreadAutograd.test_simple_backward (aiograd.sync from several threads)
    def train_fn():
        x = ag.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        ag.sync.backward(y.sum())
        assert close(x.grad, x + 3.5)

    _run_py_multithread_fn(train_fn)


def test_multithread_simple_backward_same_input():
    def train_fn_backward(x):
        y = (x + 3) * (x + 4) * 0.5
        ag.sync.backward(y.sum())

    x = ag.ones(5, 5, requires_grad=True)
    _run_py_multithread_fn(train_fn_backward, (x,))
    assert close(x.grad, 10 * (x + 3.5))

    def train_fn_grad(x):
        y = (x + 3) * (x + 4) * 0.5
        grads = ag.sync.grad(y.sum(), x)
        assert len(grads) == 1
        assert close(grads[0], x + 3.5)

    _run_py_multithread_fn(train_fn_grad, (x,))


def test_multithread_python_thread_in_middle():
    success_vs_raises = [0, 0]

    def train_fn_no_retain_graph(x):
        y = x + x**2
        try:
            ag.sync.backward(y.sum())
            success_vs_raises[0] += 1
        except RuntimeError as error:
            success_vs_raises[1] += 1
            assert "Specify retain_graph=True" in str(error)

    x_no_retain = ag.ones(5, 5, requires_grad=True)
    y_no_retain = x_no_retain + x_no_retain**2
    _run_py_multithread_fn(train_fn_no_retain_graph, (y_no_retain,), num_threads=5)
    assert success_vs_raises[0] >= 1

    def train_fn_retain_graph(x):
        y = x + x**2
        ag.sync.backward(y.sum(), retain_graph=True)

    x_retain = ag.ones(5, 5, requires_grad=True)
    y_retain = x_retain + x_retain**2
    _run_py_multithread_fn(train_fn_retain_graph, (y_retain,), num_threads=5)
    assert close(x_retain.grad, 5 * (4 * x_retain**3 + 6 * (x_retain**2) + 4 * x_retain + 1))


def test_multithread_multi_grad_all_hooks():
    import threading

    t1, t2, t3, t4 = (ag.rand(2, requires_grad=True) for _ in range(4))
    res = None
    count = [0]
    lock = threading.Lock()
    mismatches = []

    def hook(grads):
        nonlocal res
        with lock:
            count[0] += 1
            grad_is_none = [g is not None for g in grads]
            if res is None:
                res = grad_is_none
            elif res != grad_is_none:
                mismatches.append(grad_is_none)

    handle = ag.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = (t2 * t3).sum()

    def backward_retain_graph(out, t2, t3):
        ag.sync.backward(out, inputs=(t2, t3), retain_graph=True)

    _run_py_multithread_fn(backward_retain_graph, (out, t2, t3), num_threads=5)
    assert count[0] == 5
    assert res == [False, True, True, False]
    assert mismatches == []
    handle.remove()


def test_preserve_backtrace():
    import sys
    import traceback

    class Foo(ag.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        def backward(ctx, *grad):
            raise ValueError("something")

    t = ag.rand(10, requires_grad=True)
    try:
        ag.sync.backward(Foo.apply(t).sum())
    except Exception:
        tb = sys.exc_info()[2]
        tb_str = "\n".join(traceback.format_tb(tb))
        assert 'raise ValueError("something")' in tb_str
    else:
        pytest.fail("backward did not raise")


def test_inference_mode_handle_direct_view_on_rebase():
    # (torch also runs it with transpose_, which aiograd does not have)
    for requires_grad in (True, False):
        s = ag.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with ag.inference_mode():
            view_out = a.view_as(a)
        if requires_grad:
            with pytest.raises(RuntimeError, match="A view was created in inference mode and is being modified inplace"):
                view_out.add_(2)
        else:
            view_out.add_(2)


def test_inference_mode_handle_indirect_view_on_rebase():
    for requires_grad in (True, False):
        s = ag.ones(1, 2, 3, requires_grad=requires_grad)
        a = s.clone()
        with ag.inference_mode():
            view_out = a.view(-1)
        a.add_(2)
        if requires_grad:
            with pytest.raises(RuntimeError, match="A view was created in inference mode and its base or another view "):
                view_out.grad_fn  # noqa: B018
        else:
            view_out.grad_fn  # noqa: B018


# --- TestAutogradDeviceType (CPU) and TestAutogradInferenceMode -----------------------------------
# torch's x.narrow(d, s, n) is written as basic slicing, and x.select(d, i) as indexing.


async def test_inplace_on_view_backprop_base():
    root = ag.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x[0:1]
    v1.mul_(2)
    await x.sum().backward()
    assert root.grad.tolist() == [[2, 2], [1, 1]]


async def test_inplace_on_view_backprop_view_of_view():
    root = ag.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x[0:1]
    v2 = x[0:1]
    v1.mul_(2)
    await v2.sum().backward()
    assert root.grad.tolist() == [[2, 2], [0, 0]]


async def test_inplace_on_view_of_view():
    root = ag.randn(2, 2, requires_grad=True)
    x = root.clone()
    v1 = x[0:1]
    v2 = v1[:, 1:2]
    v2.mul_(2)
    await x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1]]


async def test_inplace_on_view_then_no_grad_does_not_raise():
    a = ag.ones(3, 1, dtype=ag.double, requires_grad=True)
    b = a * 2
    c = b.view_as(b)
    c[0][0] = 3
    # Force a graph update with grad disabled.
    with ag.no_grad():
        c.grad_fn  # noqa: B018
    await c.sum().backward()
    # the overwritten element's gradient stops there; the others' go through b = a * 2
    assert a.grad.tolist() == [[0.0], [2.0], [2.0]]


async def test_inplace_on_view_gradcheck():
    a = ag.randn(4, 4, dtype=ag.double, requires_grad=True)
    b = ag.randn(2, 2, dtype=ag.double, requires_grad=True)

    def func(root, b):
        x = root.clone()
        x[:, 2:4][1:3].mul_(b)
        x[:, 0:2][1:3].mul_(b)
        return x

    assert await ag.testing.gradcheck(func, [a, b], raise_exception=True)
    go = ag.randn(*a.size(), dtype=ag.double, requires_grad=True)
    assert await ag.testing.gradgradcheck(func, (a, b), (go,))


def test_inplace_on_view_multiple_outputs():
    root = ag.arange(9.0, dtype=ag.double).reshape(3, 3).requires_grad_()
    x = root.clone()
    v1 = x.unbind()
    with pytest.raises(RuntimeError):
        v1[0].mul_(2)


def test_inplace_on_view_of_multiple_output_view():
    a = ag.rand(10, dtype=ag.double, requires_grad=True).clone()
    b = a.unbind(0)
    c = b[0].view_as(b[0])
    with pytest.raises(RuntimeError):
        c.mul_(2)


def test_inplace_multiple_output_view_of_view():
    a = ag.rand(10, dtype=ag.double, requires_grad=True).clone()
    b = a.view_as(a)
    c = b.unbind(0)
    with pytest.raises(RuntimeError):
        c[0].mul_(2)


async def test_inplace_on_view_makes_base_require_grad():
    a = ag.randn(4, 4, dtype=ag.double, requires_grad=False)
    b = ag.randn(4, 2, dtype=ag.double, requires_grad=True)
    seen = []

    def func(root, b):
        x = root.clone()
        seen.append(x.requires_grad)
        x[:, 2:4].mul_(b)
        seen.append(x.requires_grad)
        return x

    assert await ag.testing.gradcheck(func, [a, b], raise_exception=True)
    assert seen[:2] == [False, True]
    go = ag.randn(*a.size(), dtype=ag.double, requires_grad=True)
    assert await ag.testing.gradgradcheck(func, (a, b), (go,))


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")  # torch warns too
async def test_inplace_on_view_backprop_view():
    a = ag.tensor([2.0, 5.0], requires_grad=False)
    b = ag.tensor([3.0], requires_grad=True)
    res = a[1:2].mul_(b)
    await res.sum().backward()
    assert b.grad.tolist() == [5]
    assert a.grad is None


async def test_inplace_on_view_modify_base():
    r = ag.ones(1, dtype=ag.double, requires_grad=True)
    seen = []

    def fn(r):
        x = ag.ones(5, dtype=ag.double)
        v = x[1]
        seen.append((v.requires_grad, v.grad_fn is None))
        x.add_(r)  # v is now dependent on r due to the in-place op on x
        seen.append(v.requires_grad)
        return v

    assert await ag.testing.gradcheck(fn, [r])
    assert await ag.testing.gradgradcheck(fn, [r])
    assert seen[:2] == [(False, True), True]


async def test_inplace_on_view_python():
    a = ag.randn(4, 4, dtype=ag.double, requires_grad=True)
    b = ag.randn(2, 2, dtype=ag.double, requires_grad=True)

    class PyAdd(ag.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    def func(root, b):
        x = root.clone()
        PyAdd.apply(x[:, 2:4][1:3], b)
        PyAdd.apply(x[:, 0:2][1:3], b)
        return x

    assert await ag.testing.gradcheck(func, [a, b], raise_exception=True)
    go = ag.randn(*a.size(), dtype=ag.double, requires_grad=True)
    assert await ag.testing.gradgradcheck(func, (a, b), (go,))


async def test_inplace_on_view_non_contig():
    root = ag.ones(2, 3, 2)[:, :, 1].t().requires_grad_(True)
    x = root.clone()
    v1 = x[0:1]
    v2 = v1[:, 1:2]
    v2.mul_(2)
    await x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1], [1, 1]]


def test_inplace_on_view_multi_output_safe():
    for f in [lambda t: t.split(1), lambda t: t.split_with_sizes((1, 1, 1)), lambda t: t.chunk(3)]:
        a = ag.randn(3, 3, requires_grad=True)
        b = a + a
        s1, s2, s3 = f(b)
        with pytest.raises(RuntimeError, match="This view is the output of a function that returns multiple views."):
            s1.mul_(s2)


async def test_inplace_on_view_undefined_grad_output():
    a = ag.tensor([1.0], requires_grad=True)
    c = a.clone()
    v = c[:]
    b = ag.tensor(1.0, requires_grad=True)

    class InplaceFunc(ag.Function):
        @staticmethod
        def forward(ctx, x, other):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    out = InplaceFunc.apply(v, b)
    await out.backward()
    assert b.grad is None
    assert a.grad.item() == 2


async def test_mv_grad_stride_0():
    mat = ag.randn(2, 2, dtype=ag.double)
    vec = ag.randn(1, dtype=ag.double).requires_grad_(True)

    def fn(vec):
        # Expand inside the function so the input to gradcheck does not overlap in memory
        vec = vec.expand(2)
        return (mat @ vec).sum()

    assert await ag.testing.gradcheck(fn, (vec,))
    assert await ag.testing.gradgradcheck(fn, (vec,))


async def test_where_functional():
    x = ag.randn(5, 5, dtype=ag.double, requires_grad=True)
    y = ag.randn(5, 5, dtype=ag.double, requires_grad=True)
    cond = ag.tensor(np.random.default_rng(0).random((5, 5)) > 0.5)

    def where(cond, x, y):
        return ag.where(cond, x, y)

    assert await ag.testing.gradcheck(where, [cond, x, y], raise_exception=True)
    assert await ag.testing.gradgradcheck(where, [cond, x, y], [ag.randn(5, 5)])
    x = ag.randn(5, 1, 5, dtype=ag.double, requires_grad=True)
    y = ag.randn(5, 5, 1, dtype=ag.double, requires_grad=True)
    assert await ag.testing.gradcheck(where, [cond, x, y], raise_exception=True)
    assert await ag.testing.gradgradcheck(where, [cond, x, y], [ag.randn(5, 5, 5)])


async def test_where_scalar():
    x = ag.randn(5, 5, dtype=ag.double, requires_grad=True)
    scalar = 4.0
    cond = ag.tensor(np.random.default_rng(1).random((5, 5)) > 0.5)

    def where_scalar_first(cond, x):
        return ag.where(cond, scalar, x)

    def where_scalar_second(cond, x):
        return ag.where(cond, x, scalar)

    assert await ag.testing.gradcheck(where_scalar_first, (cond, x))
    assert await ag.testing.gradgradcheck(where_scalar_first, (cond, x))
    assert await ag.testing.gradcheck(where_scalar_second, (cond, x))
    assert await ag.testing.gradgradcheck(where_scalar_second, (cond, x))


def test_grad_assignment():
    x = ag.randn(5, 5)
    # the wrong type raises
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = 0
    # the wrong shape raises
    with pytest.raises(RuntimeError):
        x.grad = ag.randn(2, 2)
    # the wrong dtype raises
    with pytest.raises(RuntimeError):
        x.grad = ag.zeros(5, 5, dtype=ag.int64)
    # self-assignment raises
    with pytest.raises(RuntimeError):
        x.grad = x


def test_requires_grad_factory():
    for dtype in (ag.float32, ag.float64):
        x = ag.randn(2, 3, dtype=dtype)
        for fn in (ag.ones_like, ag.randn_like):
            for requires_grad in [True, False]:
                output = fn(x, dtype=dtype, requires_grad=requires_grad)
                assert requires_grad == output.requires_grad
                assert output.dtype == dtype


def test_copy_():
    x = ag.randn(10, requires_grad=True)
    for dt in (ag.float16, ag.float32, ag.float64):
        y = ag.empty(10, dtype=dt)
        y.copy_(x)
        assert y.requires_grad
        z = x.to(ag.float32)
        assert z.requires_grad


def test_inference_mode_context_manager():
    assert not ag.is_inference_mode_enabled()
    with ag.inference_mode():
        assert ag.is_inference_mode_enabled()
        with ag.inference_mode(False):
            assert not ag.is_inference_mode_enabled()
        assert ag.is_inference_mode_enabled()
    assert not ag.is_inference_mode_enabled()


def test_inference_mode_decorator():
    # (aiograd has no inference tensors: torch's torch.is_inference(d) check is left out)
    for mode, use_kwarg in ((True, True), (True, False), (False, True), (False, False), (None, True), (None, False)):

        def func(x, mode=True if mode is None else mode):
            assert ag.is_inference_mode_enabled() == mode
            return x * x

        if mode is None:
            decorated = ag.inference_mode(mode=func) if use_kwarg else ag.inference_mode(func)
            expect = True
        else:
            decorated = ag.inference_mode(mode=mode)(func) if use_kwarg else ag.inference_mode(mode)(func)
            expect = mode
        for requires_grad in (True, False):
            c = ag.ones(1, 2, 3, requires_grad=requires_grad)
            d = decorated(c)
            assert d.requires_grad == (requires_grad and not expect)


async def test_inference_mode_existing_autograd_session():
    s = ag.ones(1, 2, 3, requires_grad=True)
    a = s.clone()
    # `a` gets saved outside of inference mode
    out = a * a
    with ag.inference_mode():
        a.add_(2)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified by an inplace operation"):
        await out.backward(ag.ones_like(out))
