"""PyTorch's own autograd tests (``test/test_autograd.py``) rewritten for aiograd: views and in-
place, anomaly mode, gradcheck, version counters.

How the ports are written, and what differs by design: ``tests/torch_port_helpers.py``.
"""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
from helpers import requires_torch, torch
from torch_port_helpers import (
    close,
    raises,
)

import aiograd as ag

# --- views and in-place, anomaly mode, gradcheck, version counters --------------------------------


def test_inplace_on_view_saved_output():
    # An in-place op on a view, where the op saves its output, made a reference cycle once
    dealloc = [0]

    class IncrementOnDelete:
        def __call__(self, *args):
            return None

        def __del__(self):
            dealloc[0] += 1

    def test():
        root = ag.randn(3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(IncrementOnDelete())
        view = copy.view(9)
        view.relu_()  # torch: F.relu(view, inplace=True); aiograd's F.relu has no inplace=

    test()
    assert dealloc[0] == 1


def test_inplace_on_view_leaf_errors():
    x = ag.zeros(1, requires_grad=True)
    y = x.view_as(x)
    with raises(RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place operation."):
        y.add_(1)


@pytest.mark.aiograd(backends=["asyncio"])  # reference cycles and gc: not the loop's business
async def test_inplace_on_view_weak_grad_fn():
    a = ag.arange(10.0, requires_grad=True)
    b = a[0:2].clone().view(-1)  # torch: a.narrow(0, 0, 2)
    b.relu_()
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    await s.backward()
    assert close(s, ag.tensor(1.0))

    a = ag.rand(10, requires_grad=True)[0:10]
    with pytest.raises(RuntimeError):
        a.relu_()


async def test_anomaly_detect_nan():
    size = 10

    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, gO):
            gI = gO.clone().expand(size).clone()  # torch writes into the expanded clone's copy
            with np.errstate(divide="ignore", invalid="ignore"):
                gI[0] = 0
                gI[0] /= 0  # Generate a nan
            if ctx.fail_0th:
                return gI, None, None
            return None, gI, None

    inp = ag.rand(size, requires_grad=True)
    out = MyFunc.apply(inp, inp, True)
    await out.backward()  # Should not fail

    inp = ag.rand(size, requires_grad=True)
    out = MyFunc.apply(inp, inp, True)
    with raises(RuntimeError, "Function 'MyFuncBackward' returned nan values in its 0th output."):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ag.detect_anomaly():
                await out.backward()
    assert "No forward pass information" in str(w[1].message)  # w[0]: detect_anomaly's own warning

    inp = ag.rand(size, requires_grad=True)
    with raises(RuntimeError, "Function 'MyFuncBackward' returned nan values in its 1th output."):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ag.detect_anomaly():
                out = MyFunc.apply(inp, inp, False)
                await out.backward()
    assert "MyFunc.apply" in str(w[1].message)


async def test_anomaly_grad_warnings():
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified by an inplace operation"):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with ag.detect_anomaly():
                a = ag.randn(5, requires_grad=True)
                d1 = a + 1
                d2 = d1**2
                d1 += 1
                await ag.grad(d2.sum(), a)
    assert len(w) == 2
    assert "Anomaly Detection has been enabled" in str(w[0].message)
    assert "Error detected in PowBackward0" in str(w[1].message)


async def test_anomaly_assign_parent_cleanup():
    async def get_ref():
        x = ag.randn(2, 2, requires_grad=True)
        t = x.exp()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ag.detect_anomaly():
                await ag.grad(t, x, ag.ones_like(t), create_graph=True)

        class Foo:
            pass

        my_obj = Foo()
        meta_dict = t.grad_fn.metadata
        meta_dict[0] = my_obj
        ref = weakref.ref(my_obj)
        return t, ref

    t, ref = await get_ref()
    assert ref() is not None
    del t
    assert ref() is None


async def test_nested_anomaly_printstack_cleanup():
    async def get_ref():
        class MyFunc(ag.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, gO):
                (x,) = ctx.saved_tensors
                return MyFunc2.apply(x)

        class MyFunc2(ag.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, gO):
                return gO + float("NaN")

        inp = ag.rand(1, requires_grad=True)
        out = MyFunc.apply(inp)
        (ginp,) = await ag.grad(out, (inp,), create_graph=True)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with raises(RuntimeError, "Function 'MyFunc2Backward' returned nan values in its 0th output."):
                with ag.detect_anomaly():
                    await ginp.backward()

        class Foo:
            pass

        my_obj = Foo()
        meta_dict = out.grad_fn.metadata
        meta_dict[0] = my_obj
        ref = weakref.ref(my_obj)
        return out, ref

    t, ref = await get_ref()
    assert ref() is not None
    del t
    assert ref() is None


async def test_anomaly_mode_no_check_nan():
    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, gO):
            return ag.tensor(float("nan")).expand(10, 10)

    def run_fn(a):
        out = MyFunc.apply(a)
        return out.sum()

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with ag.detect_anomaly(check_nan=False):
            inp = ag.rand(10, 10, requires_grad=True)
            out = run_fn(inp)
            await out.backward(retain_graph=True)
            with ag.detect_anomaly(check_nan=True):
                with raises(RuntimeError, "Function 'MyFuncBackward' returned nan values in its 0th output."):
                    await out.backward(retain_graph=True)
            await out.backward()


async def test_no_grad_copy():
    # torch compares data_ptr()s; here whether the arrays share memory
    seen = {}

    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, inp1, inp2):
            return inp1 + inp2

        @staticmethod
        def backward(ctx, grad):
            seen["grad"] = grad.data
            return grad, grad

    class NonContGradFunc(ag.Function):
        @staticmethod
        def forward(ctx, inp1):
            ctx.size = inp1.size()
            return ag.tensor([1.0])

        @staticmethod
        def backward(ctx, grad):
            return ag.ones(1).expand(*ctx.size)

    a = ag.randn(5, 6, requires_grad=True)
    b = ag.randn(5, 6, requires_grad=True)
    # non-contiguous grad should be copied
    await NonContGradFunc.apply(MyFunc.apply(a, b)).backward()
    assert not np.shares_memory(a.grad.data, seen["grad"])
    assert not np.shares_memory(b.grad.data, seen["grad"])
    # test case that should trigger no copy for one of a,b
    a.grad = b.grad = None
    await MyFunc.apply(a, b)[1][0].backward()
    p_g = seen["grad"]
    # check a, b use different grad buffers
    assert not np.shares_memory(a.grad.data, b.grad.data)
    # (torch also checks that one of them steals the computed buffer: an allocation detail)
    del p_g


async def test_gradcheck_single_input():
    for fast_mode in (True, False):

        def f(inp):
            return inp.mul(5)

        assert await ag.testing.gradcheck(f, ag.rand(10, dtype=ag.float64, requires_grad=True), fast_mode=fast_mode)
        assert await ag.testing.gradgradcheck(f, ag.rand(10, dtype=ag.float64, requires_grad=True), fast_mode=fast_mode)


async def test_gradcheck_nondeterministic():
    class NonDetFunc(ag.Function):
        @staticmethod
        def forward(ctx, x, jitter=0.0):
            ctx._jitter = jitter
            return x

        @staticmethod
        def backward(ctx, grad_out):
            return NonDetFunc.apply(grad_out, ctx._jitter) * (1 + ag.rand_like(grad_out) * ctx._jitter), None

    for fast_mode in (True, False):
        inp = ag.randn(5, 5, dtype=ag.double, requires_grad=True)
        await ag.testing.gradcheck(lambda x: NonDetFunc.apply(x, 0.0), inp, fast_mode=fast_mode)
        with pytest.raises(RuntimeError, match="Backward is not reentrant"):
            await ag.testing.gradcheck(lambda x: NonDetFunc.apply(x, 1e-6), inp, fast_mode=fast_mode)
        with pytest.raises(RuntimeError, match="Backward is not reentrant"):
            await ag.testing.gradgradcheck(lambda x: NonDetFunc.apply(x, 1e-12), inp, fast_mode=fast_mode)
        await ag.testing.gradcheck(lambda x: NonDetFunc.apply(x, 0.0), inp, nondet_tol=1e-5, fast_mode=fast_mode)
        await ag.testing.gradcheck(lambda x: NonDetFunc.apply(x, 1e-6), inp, nondet_tol=1e-5, fast_mode=fast_mode)
        await ag.testing.gradgradcheck(lambda x: NonDetFunc.apply(x, 1e-12), inp, nondet_tol=1e-5, fast_mode=fast_mode)


async def test_gradcheck_validates_inputs():
    # the dense parts of torch's test (sparse inputs are out of scope)
    for fast_mode in (True, False):
        # when none of the inputs require grad (always raises even if raise_exception=False)
        x = ag.rand(10, requires_grad=False)
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            await ag.testing.gradcheck(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)
        # (warning) when inputs are not double precision
        x = ag.ones(1, dtype=ag.float32, requires_grad=True)
        with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
            assert await ag.testing.gradcheck(lambda x: x, (x,), atol=1e-1, fast_mode=fast_mode)
        # when the input has a dimension with stride 0 (always raises)
        x = ag.ones(1, dtype=ag.float64, requires_grad=True)
        x = x.expand(2, 2)
        with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
            await ag.testing.gradcheck(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)


async def test_gradcheck_check_no_differentiable_outputs():
    for fast_mode in (True, False):
        x = ag.ones((1,), requires_grad=True)
        with pytest.raises(RuntimeError, match="Numerical gradient for function expected to be zero"):
            await ag.testing.gradcheck(lambda x: ag.tensor([x.item()]), x)
        assert not await ag.testing.gradcheck(lambda x: ag.tensor([x.item()]), x, raise_exception=False, fast_mode=fast_mode)
        # succeed when no outputs at all
        assert await ag.testing.gradcheck(lambda x: (), (x,), fast_mode=fast_mode)


async def test_gradcheck_backward_mul_by_grad_output():
    # the dense case of torch's test: backward not multiplied by grad_output
    for fast_mode in (True, False):

        def fn2(x):
            y = x.clone()
            y.register_hook(lambda x: x + 1e-2)
            return y

        x = ag.ones(1, dtype=ag.double, requires_grad=True)
        with pytest.raises(RuntimeError, match="backward not multiplied by grad_output"):
            await ag.testing.gradcheck(fn2, (x,), atol=1e-1, fast_mode=fast_mode)
        assert not await ag.testing.gradcheck(fn2, (x,), atol=1e-1, raise_exception=False, fast_mode=fast_mode)


async def test_gradcheck_undefined_grad():
    for fast_mode in (True, False):

        def fn(x):
            def hook(x):
                if x is None:
                    raise RuntimeError("x is undefined")

            y = x.clone()
            y.register_hook(hook)
            return y

        x = ag.ones(1, dtype=ag.double, requires_grad=True)
        with pytest.warns(UserWarning, match="Backwards compatibility: New undefined gradient support checking feature"):
            with pytest.raises(RuntimeError, match="Expected backward function to handle undefined output grads"):
                await ag.testing.gradcheck(fn, (x,), fast_mode=fast_mode)
            assert not await ag.testing.gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode)


async def test_gradcheck_jacobian_mismatch():
    # the real-valued part of torch's test
    for fast_mode in (True, False):

        def fn(x):
            y = x.clone()
            y.register_hook(lambda x: x + 1e-2)
            return y

        x = ag.ones(2, 2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
            await ag.testing.gradcheck(fn, (x,), fast_mode=fast_mode)
        assert not await ag.testing.gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode)


async def test_gradcheck_output_shape_or_dtype_depend_on_values():
    for fast_mode in (True, False):

        def fn(x):
            if (x.data >= 1).all():
                return ag.cat([x, x])
            return x

        a = ag.ones(1, dtype=ag.double, requires_grad=True)
        with pytest.raises(AssertionError, match="return outputs with the same shape when inputs are perturbed"):
            assert await ag.testing.gradcheck(fn, (a,), fast_mode=fast_mode)

        def fn2(x):
            if (x.data >= 1).all():
                return x.to(ag.float32)
            return x

        with pytest.raises(AssertionError, match="return outputs with the same dtype when inputs are perturbed"):
            assert await ag.testing.gradcheck(fn2, (a,), fast_mode=fast_mode)


async def test_gradcheck_custom_error():
    from aiograd.testing import GradcheckError

    for fast_mode in (True, False):

        def fn(x):
            y = x.clone()
            y.register_hook(lambda x: x + 1e-2)
            return y

        x = ag.ones(2, 2, requires_grad=True)
        with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
            await ag.testing.gradcheck(fn, (x,), fast_mode=fast_mode)
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
            await ag.testing.gradcheck(fn, (x,), fast_mode=fast_mode)
        assert not await ag.testing.gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode)

        def fn2(x):
            raise RuntimeError("Not a GradcheckError!")

        # Checks that when raise_exception=False, non-GradcheckErrors are not caught by gradcheck
        with pytest.raises(RuntimeError, match="Not a GradcheckError!"):
            await ag.testing.gradcheck(fn2, (x,), fast_mode=fast_mode, raise_exception=False)


def test_version_counter():
    x = ag.randn(1, 2)
    # In-place op bumps version
    x_saved_version = x._version
    x.add_(1).add_(1)
    assert x._version > x_saved_version
    # Differentiable view shares version counter
    xz = x[:]
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version
    # (torch then checks that `x.data = y` keeps x's counter: aiograd's .data is the array)
    xz.add_(1)
    assert x._version == xz._version



@requires_torch
async def test_oracle_gradcheck_stride_zero_input_matches_torch():
    def message(lib, check):
        y = lib.ones(2, 2, dtype=lib.float64, requires_grad=True)
        x = lib.ones(1, dtype=lib.float64, requires_grad=True).expand(2, 2)
        return check(lambda a, b: a * b, (y, x), raise_exception=False)

    with pytest.raises(RuntimeError) as info:
        message(torch, torch.autograd.gradcheck)
    with raises(RuntimeError, str(info.value)):
        await message(ag, ag.testing.gradcheck)
