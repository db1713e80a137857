"""PyTorch's own autograd tests (``test/test_autograd.py``) rewritten for aiograd: reentrant
backward, callbacks, checkpointing, saved tensors and their hooks, multi-grad hooks.

How the ports are written, and what differs by design: ``tests/torch_port_helpers.py``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import warnings
import weakref
from collections.abc import Iterator

import numpy as np
import pytest
from helpers import requires_torch, torch
from torch_port_helpers import (
    close,
    undefined_grad,
)

import aiograd as ag
from aiograd.function import once_differentiable

# --- reentrant backward, callbacks, checkpointing, saved tensors ----------------------------------


class _DeepReentrant(ag.Function):
    @staticmethod
    def forward(ctx, x):
        with ag.enable_grad():
            ctx.x = x.detach().requires_grad_()
            ctx.x = ctx.x - 1
        return ctx.x.detach()

    @staticmethod
    async def backward(ctx, x):
        if ctx.x.item() < 0:
            return x
        with ag.enable_grad():
            await _DeepReentrant.apply(ctx.x).sum().backward()
        return x


@pytest.mark.aiograd(backends=["asyncio"])  # deep: once is enough
async def test_deep_reentrant_does_not_raise():
    # Test stack overflow escape mechanism (torch: 2000 levels): no RecursionError
    v = ag.tensor(2000.0, requires_grad=True)
    await _DeepReentrant.apply(v).sum().backward()
    # ... multiple times, to ensure reusing workers works fine
    v2 = ag.tensor(200.0, requires_grad=True)
    await _DeepReentrant.apply(v2).sum().backward()
    # each level passes its incoming gradient through; the nested calls' leaves are their own
    assert v.grad.item() == 1.0 and v2.grad.item() == 1.0


async def test_reentrant_priority():
    order = []

    class MyFunction(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            order.append("MyFunction")
            return x

    class Reentrant(ag.Function):
        @staticmethod
        def forward(ctx, x):
            with ag.enable_grad():
                ctx.x = x.detach().requires_grad_()
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        async def backward(ctx, x):
            order.append("Reentrant")
            if ctx.x.item() < 0:
                return x
            with ag.enable_grad():
                await Reentrant.apply(ctx.x).backward()
            return x

    a = MyFunction.apply(ag.tensor(6.0, requires_grad=True))
    b = Reentrant.apply(ag.tensor(9.0, requires_grad=True))
    v = a * b
    await v.backward()
    # all the reentrant tasks are prioritized over the MyFunction backward task
    assert len(order) == 11
    assert order.count("Reentrant") == 10
    assert order[-1] == "MyFunction"


async def test_callback_adds_callback():
    called = [0]

    def callback_final():
        called[0] += 1

    def callback_adds_callback():
        called[0] += 1
        ag.queue_callback(callback_final)

    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            ag.queue_callback(callback_adds_callback)
            return grad

    a = ag.rand(3, 3, requires_grad=True)
    b = MyFunc.apply(a)
    await b.sum().backward()
    assert called[0] == 2


async def _test_reentrant_with_callbacks(install_callbacks_in_depths):
    counter = {"inner": 0, "outer": 0}

    def inc_inner_counter():
        counter["inner"] += 1

    def inc_outer_counter():
        counter["outer"] += 1

    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @once_differentiable
        def backward(ctx, input):
            if 1 in install_callbacks_in_depths:
                ag.queue_callback(inc_inner_counter)
            return input

    class MyReentrantFunc(ag.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        @once_differentiable
        async def backward(ctx, input):
            if 0 in install_callbacks_in_depths:
                ag.queue_callback(inc_outer_counter)
            tmp_inp = input.detach().requires_grad_()
            with ag.enable_grad():
                tmp_out = (MyFunc.apply(tmp_inp)).sum()
            await tmp_out.backward()
            return input

    t1 = ag.rand(3, 3, requires_grad=True)
    t2 = MyReentrantFunc.apply(t1)
    t3 = t2.sum()
    await ag.backward([t3])
    return counter


async def test_reentrant_with_callbacks_depth_0():
    ret = await _test_reentrant_with_callbacks([0])
    assert ret == {"outer": 1, "inner": 0}


async def test_reentrant_with_callbacks_depth_1():
    ret = await _test_reentrant_with_callbacks([1])
    assert ret == {"outer": 0, "inner": 1}


async def test_reentrant_with_callbacks_both_depths():
    ret = await _test_reentrant_with_callbacks([0, 1])
    assert ret == {"outer": 1, "inner": 1}


async def test_reentrant_with_leaf_variable_hook_does_not_raise():
    handle = None
    param = ag.rand(10, requires_grad=True)

    async def add_gradient_penalty_to_grad(grad):
        handle.remove()
        old_param_grad = grad
        param.grad = None
        with ag.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            out = ((g * 2) + new_param).sum()
            await out.backward()
        res = g.grad + grad
        param.grad = old_param_grad
        return res

    handle = param.register_hook(add_gradient_penalty_to_grad)
    tmp = param * param
    loss = tmp.sum()
    await loss.backward()
    # the hook left .grad at the incoming 2 * param, to which its result 2 + 2 * param then
    # accumulated (as in torch)
    assert close(param.grad, 4 * param + 2)


async def test_reentrant_with_non_leaf_variable_hook():
    handle = None
    param = ag.rand(10, requires_grad=True)

    async def manual_increase_gradient(grad):
        handle.remove()
        with ag.enable_grad():
            g = grad.detach().requires_grad_()
            out = ((g * 2) + 5).sum()
            await out.backward()
        res = g.grad + grad
        return res

    tmp = param * param
    handle = tmp.register_hook(manual_increase_gradient)
    loss = tmp.sum()
    await loss.backward()
    assert close(param.grad, 6 * param)


async def test_checkpointing_does_not_raise():
    # torch's test runs 2000 inputs through an nn.Sequential; a smaller version of it, whose
    # gradients are also compared with the graph's without checkpoints
    rng = np.random.default_rng(0)
    w1 = ag.tensor(rng.standard_normal((10, 100)), requires_grad=True)
    w2 = ag.tensor(rng.standard_normal((100, 10)), requires_grad=True)

    def module(x):
        return ag.relu(x @ w1) @ w2

    feat_combined, inputs = [], []
    for _ in range(20):
        data_r = ag.rand(1, 10)
        data_r.requires_grad = True
        feat_r = ag.checkpoint(module, data_r, use_reentrant=True)
        feat_combined.append(feat_r)
        inputs.append(data_r)
    mean_combined = ag.stack(feat_combined).mean()
    await mean_combined.backward()
    plain = ag.stack([module(data_r) for data_r in inputs]).mean()
    want = await ag.grad(plain, [w1, w2, *inputs])
    for leaf, g in zip([w1, w2, *inputs], want, strict=True):
        assert close(leaf.grad, g)


async def test_checkpointing_without_reentrant_custom_function_works():
    msg = "Unpack is being triggered for a tensor that was already unpacked once"
    seen = []

    class MyFunc(ag.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            w = x * y * z
            out = w + w
            ctx.save_for_backward(x, y, z, w, out)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            x, y, z, w, out = ctx.saved_tensors
            # Accessing the saved Tensors a second time will raise because recomputed tensors
            # get cleared as soon as they are unpacked.
            with pytest.raises(RuntimeError, match=msg):
                ctx.saved_tensors  # noqa: B018
            seen.append(True)
            return x, y, z

    x = ag.tensor(1.0, requires_grad=True)
    y = ag.tensor(2.0, requires_grad=True)
    z = ag.tensor(3.0, requires_grad=True)

    def foo(x, y, z):
        x = x * y * z
        y = y * y * z
        z = z * z
        return MyFunc.apply(x, y, z)

    out = ag.checkpoint(foo, x, y, z, use_reentrant=False)
    await out.sum().backward()
    assert seen == [True]


def test_checkpoint_warns_if_use_reentrant_not_passed_explcitly():
    a = ag.randn(1, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ag.checkpoint(lambda x: x, a, use_reentrant=False)
    with pytest.warns(UserWarning, match=".*the use_reentrant parameter should be passed explicitly.*"):
        ag.checkpoint(lambda x: x, a)


async def test_checkpoint_detects_non_determinism():
    def save_3_tensors(x):
        out = x.sin().exp()
        out = out.sin()
        return out

    def save_2_tensors(x):
        return x.sin().exp()

    def save_2_tensors_alt(x):
        return x.sin() * ag.tensor([1.0, 2.0])

    def get_non_det_fn(orig_fn, recompute_fn):
        counter = [0]

        def fn(x):
            if counter[0] == 0:
                counter[0] += 1
                return orig_fn(x)
            return recompute_fn(x)

        return fn

    from aiograd.utils.checkpoint import set_checkpoint_debug_enabled, set_checkpoint_early_stop

    a = ag.randn(1, requires_grad=True)
    # Save fewer tensors during recompute
    fn = get_non_det_fn(orig_fn=save_3_tensors, recompute_fn=save_2_tensors)
    with pytest.raises(RuntimeError, match="A different number of tensors was saved"):
        out = ag.checkpoint(fn, a, use_reentrant=False)
        await out.backward()

    # Save more tensors during recompute
    fn = get_non_det_fn(orig_fn=save_2_tensors, recompute_fn=save_3_tensors)
    with set_checkpoint_early_stop(False):
        with pytest.raises(RuntimeError, match="trying to save more tensors during recomputation"):
            out = ag.checkpoint(fn, a, use_reentrant=False)
            await out.backward()

    fn = get_non_det_fn(orig_fn=save_2_tensors, recompute_fn=save_3_tensors)
    # If early stopping is enabled, we would not raise (the results would be correct anyway)
    out = ag.checkpoint(fn, a, use_reentrant=False)
    await out.backward()

    # Save the same number of tensors but the shape is different
    fn = get_non_det_fn(orig_fn=save_2_tensors, recompute_fn=save_2_tensors_alt)
    with pytest.raises(RuntimeError, match="tensors have different metadata"):
        out = ag.checkpoint(fn, a, use_reentrant=False)
        await out.backward()

    # Get the debug message if debug=True
    fn = get_non_det_fn(orig_fn=save_2_tensors, recompute_fn=save_2_tensors_alt)
    with pytest.raises(RuntimeError, match="You are seeing this error because you passed `debug=True` to checkpoint"):
        out = ag.checkpoint(fn, a, use_reentrant=False, debug=True)
        await out.backward()

    fn = get_non_det_fn(orig_fn=save_2_tensors, recompute_fn=save_2_tensors_alt)
    with pytest.raises(RuntimeError, match="You are seeing this error because you passed `debug=True` to checkpoint"):
        with set_checkpoint_debug_enabled(True):
            out = ag.checkpoint(fn, a, use_reentrant=False, debug=False)
            await out.backward()

    fn = get_non_det_fn(orig_fn=save_2_tensors, recompute_fn=save_2_tensors_alt)
    with pytest.raises(RuntimeError, match="Recomputed values for the following tensors have different"):
        with set_checkpoint_debug_enabled(False):
            out = ag.checkpoint(fn, a, use_reentrant=False, debug=True)
            await out.backward()


async def test_checkpoint_valid_reset_on_error():
    a = ag.randn(2, 2, requires_grad=True)
    with pytest.raises(Exception, match="checkpoint is incompatible"):  # torch: "torch.utils.checkpoint ..."
        b = ag.checkpoint(ag.exp, a, use_reentrant=True).sum()
        await ag.grad(b, (a,))
    c = ag.checkpoint(ag.exp, a, use_reentrant=True).sum()
    await c.backward()


@pytest.mark.parametrize("use_reentrant", [True, False])
async def test_checkpointing_without_reentrant_detached_tensor(use_reentrant):
    w1 = ag.randn(2, 2)
    w2 = ag.randn(2, 2)

    def module(x):
        with ag.no_grad():
            return (x @ w1) @ w2

    a = ag.randn(2, 2, requires_grad=True)
    for _ in range(3):
        if use_reentrant:
            with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
                out = ag.checkpoint(module, a, use_reentrant=use_reentrant)
                out += a
                await out.sum().backward()
        else:
            out = ag.checkpoint(module, a, use_reentrant=use_reentrant)
            out += a
            await out.sum().backward()


async def test_checkpointing_without_reentrant_saved_object_identity():
    x_backward = None

    class Test(ag.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x

        @staticmethod
        def backward(ctx, x):
            nonlocal x_backward
            (x_backward,) = ctx.saved_tensors
            return x, None

    a = ag.tensor(1.0, requires_grad=True)
    b = ag.tensor(1.0, requires_grad=False)
    await Test.apply(a, b).backward()
    assert b is x_backward
    x_backward = None
    await ag.checkpoint(Test.apply, a, b, use_reentrant=False).backward()
    assert b is x_backward


async def test_checkpointing_without_reentrant_correct_grad():
    a = ag.randn(2, 2, requires_grad=True)
    b = ag.exp(a).sum()
    await b.backward()
    b_grad = a.grad
    a.grad = None
    c = ag.checkpoint(ag.exp, a, use_reentrant=False).sum()
    await c.backward()
    c_grad = a.grad
    a.grad = None
    d = ag.checkpoint(ag.exp, a, use_reentrant=False).sum()
    (d_grad,) = await ag.grad(d, (a,))
    assert close(b_grad, c_grad)
    assert close(b_grad, d_grad)


async def test_checkpointing_without_reentrant_parameter_used_in_an_out():
    w = ag.randn(10, 10, requires_grad=True)
    count = 0

    def hook(grad):
        nonlocal count
        count += 1

    w.register_hook(hook)
    x = ag.rand(10, 10, requires_grad=True)
    h = w * x  # Using w outside the checkpoint
    out = ag.checkpoint(lambda x: w * x, h, use_reentrant=False)  # Using w inside the checkpoint
    await out.sum().backward()
    # should only call hook once
    assert count == 1


async def test_checkpointing_without_reentrant_arbitrary_input_output():
    weight = ag.randn(5, 5, requires_grad=True)
    weight_copy = weight.detach().clone().requires_grad_()

    def model(w):
        def forward(dict_input):
            tensor = dict_input["tensor"]
            return {"result": tensor @ w.T}

        return forward

    inp = {"tensor": ag.randn(5, 5)}
    out_no_checkpoint = model(weight)(inp)["result"].sum()
    out_checkpoint = ag.checkpoint(model(weight_copy), inp, use_reentrant=False)["result"].sum()
    assert close(out_checkpoint, out_no_checkpoint)
    await out_no_checkpoint.backward()
    await out_checkpoint.backward()
    assert close(weight.grad, weight_copy.grad)


async def test_custom_function_saved_tensors():
    # the public half of torch's test (_raw_saved_tensors is private to torch)
    def getFn(save=True):
        class MyFn(ag.Function):
            @staticmethod
            def forward(ctx, x):
                if save:
                    ctx.save_for_backward(x, None)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        return MyFn

    a = ag.randn(5, requires_grad=True)
    y = getFn(True).apply(a)
    saved = y.grad_fn.saved_tensors
    assert saved[0] is a and saved[1] is None
    await y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors  # noqa: B018
    y = getFn(False).apply(a)
    assert y.grad_fn.saved_tensors == ()


@requires_torch
async def test_oracle_unpacked_tensor_without_graph_is_the_hooks_object_like_torch():
    async def run(lib, base, graph, backward):
        seen = {}

        class Test(base):
            @staticmethod
            def forward(ctx, x, y, z):
                ctx.save_for_backward(y, z)
                return x * 1

            @staticmethod
            def backward(ctx, g):
                seen["y"], seen["z"] = ctx.saved_tensors
                return g, None, None

        a = lib.tensor(1.0, requires_grad=True)
        b = lib.tensor(1.0)  # needs no graph: comes back as the very object the hook returned
        c = lib.tensor(1.0, requires_grad=True)  # a leaf that requires grad: rebuilt
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            out = Test.apply(a, b, c)
        await backward(out)
        return seen["y"] is b, seen["z"] is c

    async def torch_backward(t):
        t.backward()

    async def ag_backward(t):
        await t.backward()

    expected = await run(torch, torch.autograd.Function, torch.autograd.graph, torch_backward)
    assert await run(ag, ag.Function, ag.graph, ag_backward) == expected == (True, False)


@contextlib.contextmanager
def torch_logging_tensor_isolated() -> Iterator[None]:
    """torch's ``checkpoint(debug=True)`` records each op it runs through the ``LoggingTensor``
    logger, as ``info(op_name, args, kwargs, result)``: a record only torch's own capture handler
    can read. Any other handler that gets one fails to format it (``op_name % (args, ...)``) and
    pytest's log capture re-raises that TypeError, from inside the op. torch keeps them apart by
    switching the logger's propagation off when its capture starts, and leaves the logger so,
    with one more filter each time. Here, while the oracle runs, the logger (the one the ops log
    to, whatever state earlier code left it in) has no handler or filter but those torch's
    capture adds, and propagates nothing; afterwards it is put back as it was."""
    log = logging.getLogger("LoggingTensor")
    saved = log.propagate, log.level, log.disabled, list(log.handlers), list(log.filters)
    log.propagate, log.disabled, log.handlers[:], log.filters[:] = False, False, [], []
    try:
        yield
    finally:
        log.propagate, level, log.disabled, log.handlers[:], log.filters[:] = saved
        log.setLevel(level)


@requires_torch
async def test_oracle_checkpoint_debug_report_ends_like_torch():
    phrase = "You are seeing this error because you passed `debug=True` to checkpoint"

    async def message(lib, checkpoint, backward):
        counter = [0]

        def fn(x):
            if counter[0] == 0:
                counter[0] += 1
                return x.sin().exp()
            return x.sin() * lib.tensor([1.0, 2.0], dtype=lib.float64)

        a = lib.randn(1, dtype=lib.float64, requires_grad=True)
        try:
            await backward(checkpoint(fn, a, use_reentrant=False, debug=True))
        except RuntimeError as e:
            return type(e).__name__, phrase in str(e)
        return None

    async def torch_backward(t):
        t.backward()

    async def ag_backward(t):
        await t.backward()

    with torch_logging_tensor_isolated():
        expected = await message(torch, torch.utils.checkpoint.checkpoint, torch_backward)
    assert await message(ag, ag.checkpoint, ag_backward) == expected == ("CheckpointError", True)


# --- saved tensors and their hooks, multi-grad hooks ----------------------------------------------


def test_custom_function_local_inplace():
    class MyFn(ag.Function):
        @staticmethod
        def forward(ctx, inp, inplace):
            view = inp.clone()[:3]
            if inplace:
                view += 2
            return view

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    base = ag.rand(10, requires_grad=True)
    foo = MyFn.apply(base, False)
    assert type(foo.grad_fn).__name__ == "MyFnBackward"
    foo = MyFn.apply(base, True)
    assert type(foo.grad_fn).__name__ == "MyFnBackward"


def test_integer_outputs():
    # argmax/argmin (aiograd has no argsort, searchsorted, bucketize, unique)
    inp = ag.rand(4, requires_grad=True)
    out = inp.argmax()
    assert not np.issubdtype(out.dtype, np.floating)
    assert not out.requires_grad
    out = inp.argmin()
    assert not np.issubdtype(out.dtype, np.floating)
    assert not out.requires_grad


@pytest.mark.aiograd(backends=["asyncio"])  # reference cycles and gc: not the loop's business
async def test_custom_function_cycle():
    class MyFn(ag.Function):
        @staticmethod
        def forward(ctx, x, metadata):
            x = x.clone()
            ctx.meta = metadata
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            assert close(x, ag.tensor(3.14))
            assert close(ctx.meta["foo"], ag.tensor(3.14))
            return gO * x, None

    async def get_refs(with_backward):
        a = ag.tensor(3.14, requires_grad=True)
        metadata = {}
        out = MyFn.apply(a, metadata)
        metadata["foo"] = out
        if with_backward:
            await out.sum().backward()
            assert close(a.grad, a)
        return weakref.ref(out)

    gc.disable()
    try:
        ref = await get_refs(False)
        assert ref() is not None
    finally:
        gc.enable()
    gc.collect()
    assert ref() is None
    # The backward clears the saved_variables but not the __dict__
    gc.disable()
    try:
        ref = await get_refs(True)
        assert ref() is not None
    finally:
        gc.enable()
    gc.collect()
    assert ref() is None


async def test_saved_variable_saved_original_inplace_detach():
    # Detaching a tensor that is saved input raises
    a = ag.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached"):
        await b.backward()
    # Detaching a tensor that is saved as output is OK
    a = ag.tensor(1.0, requires_grad=True).clone()
    b = a.exp()
    a.detach_()
    await b.backward()


async def test_saved_variable_packing_unpacking_saved_original_with_default_hooks():
    # (torch also reads y.grad_fn._saved_self / _saved_other, private to torch)
    def pack(x):
        warnings.warn("pack", stacklevel=2)
        return x

    with ag.graph.saved_tensors_hooks(pack, lambda x: x):
        a = ag.ones(5, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = a * a
            # should raise two warnings from a being saved twice
            assert len(w) == 2

    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a * a
        await y.sum().backward()
        assert close(2 * a, a.grad)

    with ag.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x / 2):
        a = ag.randn(5, requires_grad=True)
        y = a * a
        await y.sum().backward()
        assert close(2 * a, a.grad)

    with ag.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a * a
        await y.sum().backward()
        assert close(4 * a, a.grad)

    # Exited hooks correctly
    a = ag.randn(5, requires_grad=True)
    y = a * a
    await y.sum().backward()
    assert close(2 * a, a.grad)


async def test_saved_variable_packing_unpacking_did_not_save_original_with_default_hooks():
    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = ag.exp(a)
        await y.sum().backward()
        assert close(a.grad, y)


def test_setting_default_saved_variable_hooks_twice_does_not_raise():
    packed = []

    def pack(name):
        def hook(x):
            packed.append(name)
            return x

        return hook

    a = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.graph.saved_tensors_hooks(pack("outer"), lambda x: x):
        with ag.graph.saved_tensors_hooks(pack("inner"), lambda x: x):
            pass
        y = a * a  # the outer hooks are back in force
    assert packed and set(packed) == {"outer"}
    saved = len(packed)
    z = a * a  # and none after
    assert len(packed) == saved
    assert (y + z).tolist() == [2.0, 8.0]


async def test_setting_default_saved_variable_hooks_twice_should_use_inner():
    with ag.graph.saved_tensors_hooks(lambda x: 3 * x, lambda x: 3 * x):
        b = ag.randn(5, requires_grad=True)
        with ag.graph.saved_tensors_hooks(lambda x: 5 * x, lambda x: 5 * x):
            a = ag.randn(5, requires_grad=True)
            y = a * a
        z = b * b
    await y.sum().backward()
    await z.sum().backward()
    assert close(2 * 5 * 5 * a, a.grad)
    assert close(2 * 3 * 3 * b, b.grad)


def test_disabling_saved_tensor_hooks():
    with ag.graph.disable_saved_tensors_hooks("error message"):
        with pytest.raises(RuntimeError, match="error message"):
            with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        with pytest.raises(RuntimeError, match="error message"):
            with ag.graph.disable_saved_tensors_hooks("error message"):
                pass
    # hooks are enabled again
    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass


def test_disabling_saved_tensor_hooks_nested():
    with ag.graph.disable_saved_tensors_hooks("outer"):
        with ag.graph.disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                    pass
        with pytest.raises(RuntimeError, match="outer"):
            with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        pass


async def test_saved_tensor_hooks_custom_error_propagation():
    class CustomError(Exception):
        pass

    class error_on_pack_hook(ag.graph.saved_tensors_hooks):
        def __init__(self) -> None:
            def pack_hook(x):
                raise CustomError("pack")

            super().__init__(pack_hook, lambda x: x)

    class error_on_unpack_hook(ag.graph.saved_tensors_hooks):
        def __init__(self) -> None:
            def unpack_hook(x):
                raise CustomError("unpack")

            super().__init__(lambda x: x, unpack_hook)

    a = ag.tensor(1.0, requires_grad=True)
    with error_on_pack_hook():
        with pytest.raises(CustomError, match="pack"):
            ag.sin(a)
    with error_on_unpack_hook():
        out = ag.sin(a)
        with pytest.raises(CustomError, match="unpack"):
            await out.backward()


async def test_saved_tensor_hooks_custom_function_intermediates_do_not_raise():
    class Func(ag.Function):
        @staticmethod
        def forward(ctx, x):
            intermediate = x.exp()
            ctx.save_for_backward(intermediate.clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, grad_out):
            (intermediate,) = ctx.saved_tensors
            return grad_out * intermediate

    a = ag.tensor(1.0, requires_grad=True)
    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        out = Func.apply(a)
    await out.backward()
    assert close(a.grad, np.exp(1.0))


async def test_unpack_hooks_exec_count():
    def f(x, y):
        return x * y

    pack_count = 0
    unpack_count = 0

    def pack_hook(x):
        nonlocal pack_count
        pack_count += 1
        return x

    def unpack_hook(x):
        nonlocal unpack_count
        unpack_count += 1
        return x

    x = ag.ones(4, requires_grad=True)
    y = ag.ones(4, requires_grad=False)
    with ag.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        out_test = f(x, y)
        assert pack_count == 1
        assert unpack_count == 0
        await out_test.sum().backward()
        assert pack_count == 1
        assert unpack_count == 1


async def test_saved_tensors_hook_version_counter_not_shared():
    seen = []

    class Test(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            before = a._version
            x.add_(1)
            seen.append(a._version == before)
            return grad_output

    a = ag.tensor(1.0, requires_grad=True)
    a_replacement = a.clone()

    def pack_hook(x):
        return a_replacement

    def unpack_hook(x):
        return x

    with ag.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        b = Test.apply(a)
    await b.backward()
    assert seen == [True]


async def test_save_on_cpu_and_checkpoint():
    a = ag.randn(2, 2, requires_grad=True)
    b = a.pow(2).pow(2).pow(2).pow(2)
    await b.sum().backward()
    b_grad = a.grad.clone()
    a.grad.zero_()

    with ag.graph.save_on_cpu():
        h = a.pow(2)
        h = ag.checkpoint(lambda x: x.pow(2).pow(2), h, use_reentrant=False)
        c = h.pow(2)
    await c.sum().backward()
    c_grad = a.grad.clone()
    a.grad.zero_()

    def f(a):
        h = a.pow(2)
        with ag.graph.save_on_cpu():
            h = h.pow(2).pow(2)
        return h.pow(2)

    d = ag.checkpoint(f, a, use_reentrant=False)
    await d.sum().backward()
    d_grad = a.grad.clone()
    assert close(b_grad, c_grad)
    assert close(b_grad, d_grad)


def test_pack_hook_with_inplace_modification_should_fail():
    a = ag.randn(5, requires_grad=True)

    def inc(x):
        x += 1
        return x

    with ag.graph.saved_tensors_hooks(inc, lambda x: x):
        with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input in place."):
            ag.exp(a)


async def test_default_saved_tensors_hooks_double_backward():
    with ag.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a**3
        s = ag.sum(y)
        (g,) = await ag.grad(s, (a,), create_graph=True)
        await g.sum().backward()
        assert close(6 * a, a.grad)

    with ag.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a**3
        s = ag.sum(y)
    (g,) = await ag.grad(s, (a,), create_graph=True)
    await g.sum().backward()
    # factor 2 because only a is saved once
    assert close(6 * 2 * a, a.grad)

    a = ag.randn(5, requires_grad=True)
    y = a**3
    s = ag.sum(y)
    with ag.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        (g,) = await ag.grad(s, (a,), create_graph=True)
        await g.sum().backward()
        # factor 4 because pow_backward is grad * (exp * self.pow(exp - 1)), so grad is saved
        # and self (i.e. a) is saved
        assert close(6 * 4 * a, a.grad)

    with ag.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
        a = ag.randn(5, requires_grad=True)
        y = a**3
        s = ag.sum(y)
        (g,) = await ag.grad(s, (a,), create_graph=True)
        await g.sum().backward()
        # combining the two above blocks: 2 * 4 = 8
        assert close(6 * 8 * a, a.grad)


async def test_wrapped_number_saved_tensors_hooks_does_not_raise():
    def err_hook(x):
        raise RuntimeError("this hook should not be called")

    with ag.graph.saved_tensors_hooks(err_hook, err_hook):
        a = ag.randn(5, requires_grad=True)
        out = (a * 3).sum()
        # 3 is a wrapped number: never passed to saved-tensor hooks
        (g,) = await ag.grad(out, (a,))
    assert g.tolist() == [3.0] * 5


async def test_multi_grad_all_hooks():
    t1 = ag.rand(2, requires_grad=True)
    t2 = ag.rand(2, requires_grad=True)
    t3 = ag.rand(2, requires_grad=True)
    t4 = ag.rand(2, requires_grad=True)
    # an op node
    t1 = t1.mul(2)

    class Foo(ag.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, gO):
            return gO

    # a custom Function
    t2 = Foo.apply(t2)
    # torch._C._functions.UndefinedGrad()
    t3 = undefined_grad(t3)
    # (torch's fourth is a C++ custom op; a second custom Function stands in)
    t4 = Foo.apply(t4)

    res = [None] * 4
    count = [0]

    def hook(grads):
        nonlocal res
        count[0] += 1
        res = [g is not None for g in grads]

    handle = ag.graph.register_multi_grad_hook((t1, t2, t3, t4), hook)
    out = t2 * t3
    await out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert count[0] == 1
    assert res == [False, True, True, False]

    await out.sum().backward(inputs=(t1, t4), retain_graph=True)
    assert count[0] == 1

    await out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert count[0] == 2
    assert res == [False, False, True, False]

    class Func(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, gO):
            raise RuntimeError("error message")

    out = Func.apply(t2) * t3
    with pytest.raises(RuntimeError, match="error message"):
        await out.sum().backward(inputs=(t2, t3), retain_graph=True)
    assert count[0] == 2

    handle.remove()
    await out.sum().backward(inputs=(t1, t3), retain_graph=True)
    assert count[0] == 2


async def test_multi_grad_any_hooks():
    # torch's modules become two functions with their own weights
    rng = np.random.default_rng(0)
    hook_id = 0
    any_hook_handles = []
    hook_order = []

    def hook(hook_id, *unused):
        hook_order.append(hook_id)

    def make_module():
        w = ag.tensor(rng.standard_normal((3, 3)), requires_grad=True)
        bias = ag.tensor(rng.standard_normal(3), requires_grad=True)

        def forward(x):
            nonlocal hook_id
            z = x @ w.T + bias
            out = ag.sin(z), ag.cos(z)
            z.register_hook(lambda g, i=hook_id: hook(i, g))
            hook_id += 1
            any_hook_handles.append(
                ag.graph.register_multi_grad_hook(out, lambda g, i=hook_id: hook(i, g), mode="any")
            )
            hook_id += 1
            return out

        return forward

    mod1, mod2 = make_module(), make_module()

    def model(x):
        y = mod1(x)
        z = y[0] + y[1]
        return mod2(z)

    inp = ag.randn(2, 3)
    out = model(inp)
    await (out[0] + out[1]).sum().backward()
    # the any-hook runs only once and before the regular hook for each module
    assert len(any_hook_handles) == 2
    assert hook_order == [3, 2, 1, 0]

    hook_id = 0
    hook_order.clear()
    any_hook_handles.clear()
    out = model(inp)
    for handle in any_hook_handles:
        handle.remove()
    await (out[0] + out[1]).sum().backward()
    # the any-hook does not run if removed
    assert hook_order == [2, 0]


def test_multi_grad_hooks_invalid_mode():
    t1 = ag.rand(2, requires_grad=True)
    t2 = ag.rand(2, requires_grad=True)
    regex = r"Expects mode to be one of \('all', 'any'\) but got foo"
    with pytest.raises(ValueError, match=regex):
        ag.graph.register_multi_grad_hook((t1, t2), lambda _: None, mode="foo")


async def test_setup_context_when_forward_has_default_args():
    class PowFunction(ag.Function):
        @staticmethod
        def forward(x, y=3):
            return ag.pow(x, y)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            y = ctx.y
            return gO * y * ag.pow(x, y - 1), None

    class PowFunctionWithClassmethod(ag.Function):
        @classmethod
        def forward(cls, x, y=3):
            return ag.pow(x, y)

        @classmethod
        def setup_context(cls, ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @classmethod
        def backward(cls, ctx, gO):
            (x,) = ctx.saved_tensors
            y = ctx.y
            return gO * y * ag.pow(x, y - 1), None

    x = ag.tensor(2.0, requires_grad=True)
    y = ag.tensor(8.0)
    y_expected = ag.tensor(12.0)
    y1 = PowFunction.apply(x)
    (y1_expected,) = await ag.grad(y1, x)
    y2 = PowFunctionWithClassmethod.apply(x)
    (y2_expected,) = await ag.grad(y2, x)
    assert close(y, y1)
    assert close(y_expected, y1_expected)
    assert close(y, y2)
    assert close(y_expected, y2_expected)


def test_grad_thread_safety():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    def access_grad(tensor, barrier):
        barrier.wait()
        return weakref.ref(tensor.grad)

    for _ in range(10):
        tensor = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
        ag.sync.backward((tensor**2).sum())
        barrier = threading.Barrier(4)
        with ThreadPoolExecutor(max_workers=4) as executor:
            futures = [executor.submit(access_grad, tensor, barrier) for _ in range(4)]
            # all the grad tensors returned are the same
            for future in futures:
                assert future.result()() is tensor.grad
            assert tensor.grad is not None
