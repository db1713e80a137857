"""Hooks (tensor, retains-grad, node pre/post, post-accumulate-grad), final callbacks and anomaly
mode: call orders as lists, PyTorch's messages, and async hooks interleaving with other backward
calls."""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest
from helpers import gather, requires_torch, torch

import aiograd as ag

# Public-API tests: each async test runs on asyncio, uvloop and trio through aiograd's pytest
# plugin, which also fails a test that leaves aiograd work behind (docs/testing.md).
pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "trio"])  # the public API: trio too


def scalar(value: float = 1.0) -> ag.Tensor:
    return ag.tensor(value, requires_grad=True)


async def test_tensor_hooks_run_in_order_and_replace_the_grad():
    log: list[str] = []
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y.register_hook(lambda g: log.append("first") or g * 10.0)
    y.register_hook(lambda g: log.append(f"second saw {g.tolist()}"))
    x.register_hook(lambda g: log.append(f"leaf saw {g.tolist()}"))
    await y.sum().backward()
    assert log == ["first", "second saw [10.0, 10.0]", "leaf saw [20.0, 20.0]"]
    assert x.grad.tolist() == [20.0, 20.0]


@requires_torch
async def test_prehook_ordering_matches_torch():
    def run(lib, backward):
        log: list[int] = []

        def hook1(g):
            log.append(1)
            return g * 3

        def hook2(gs):
            log.append(2)
            return tuple(g * 2 for g in gs)

        a = lib.tensor(1.0, requires_grad=True)
        b = a.clone()
        b.grad_fn.register_prehook(hook2)
        b.register_hook(hook1)
        b.grad_fn.register_prehook(hook2)
        acc = b.grad_fn.next_functions[0][0]
        a.register_hook(hook1)
        acc.register_prehook(hook2)
        a.register_hook(hook1)
        b.retain_grad()
        return log, a, b, backward(b)

    log_t, a_t, b_t, _ = run(torch, lambda b: b.backward())
    log_a, a_a, b_a, coro = run(ag, lambda b: b.backward())
    await coro
    assert log_a == log_t == [1, 2, 2, 1, 1, 2]
    assert b_a.grad.item() == b_t.grad.item() == 3.0  # retains-grad sees tensor hooks, not pre-hooks
    assert a_a.grad.item() == a_t.grad.item()


@requires_torch
async def test_removing_a_later_hook_from_an_earlier_one_takes_effect_next_time():
    # PyTorch runs a snapshot of a node's hooks (``_call_hooks`` iterates PyDict_Values), so a
    # hook removed by an earlier one still runs this time, and never after
    def run(lib, log):
        x = lib.tensor(1.0, requires_grad=True)
        y = x * 1.0
        handles = {}
        handles["first"] = y.register_hook(lambda g: log.append("first") or handles["second"].remove())
        handles["second"] = y.register_hook(lambda g: log.append("second"))
        return x, y, handles

    log_t: list[str] = []
    x_t, y_t, handles_t = run(torch, log_t)
    y_t.backward()
    log: list[str] = []
    x, y, handles = run(ag, log)
    await y.backward()
    assert log == log_t == ["first", "second"]
    handles["second"].remove()  # removing twice is fine
    handles["first"].remove()
    await (x * 1.0).backward()
    assert log == ["first", "second"]


async def test_node_post_hook_sees_inputs_and_outputs_and_can_replace_them():
    seen = []
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0

    def post(grad_inputs, grad_outputs):
        seen.append((grad_inputs[0].tolist(), grad_outputs[0].tolist()))
        return (grad_inputs[0] + 1.0, grad_inputs[1])

    y.grad_fn.register_hook(post)
    await y.backward(ag.tensor([1.0, 1.0]))
    assert seen == [([3.0, 3.0], [1.0, 1.0])]
    assert x.grad.tolist() == [4.0, 4.0]


async def test_post_accumulate_grad_hook_runs_after_grad_is_updated():
    log: list[object] = []
    x = ag.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: log.append(("tensor hook", x.grad)))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
    await (x * 2.0).backward()
    assert log == [("tensor hook", None), ("post", [2.0])]


async def test_post_accumulate_grad_hook_rules():
    x = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered on non-leaf tensors$"):
        (x * 2.0).register_post_accumulate_grad_hook(lambda t: None)
    x.register_post_accumulate_grad_hook(lambda t: t)
    with pytest.raises(RuntimeError, match="^hooks should return None.\n"):  # then the node note
        await (x * 2.0).backward()


def test_register_hook_needs_grad():
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't require gradient$"):
        ag.tensor([1.0]).register_hook(lambda g: g)


async def test_which_hooks_fire_under_grad_and_backward_inputs():
    def setup():
        log: list[str] = []
        x = scalar(2.0)
        y = x * 3.0
        x.register_hook(lambda g: log.append("x tensor hook"))
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda gs: log.append("acc prehook"))
        acc.register_hook(lambda gi, go: log.append("acc posthook"))
        return log, x, y

    log, x, y = setup()
    (g,) = await ag.grad(y, x)
    assert g.item() == 3.0 and x.grad is None
    assert log == ["x tensor hook"]  # reached but not executed: only tensor hooks fire

    log, x, y = setup()
    await y.backward(inputs=[x])
    assert log == ["x tensor hook", "acc prehook", "acc posthook"]


async def test_hooks_of_pruned_nodes_do_not_fire():
    log: list[str] = []
    a, b = scalar(1.0), scalar(2.0)
    ya = a * 2.0
    yb = b * 2.0
    yb.register_hook(lambda g: log.append("b branch"))
    (g,) = await ag.grad(ya + yb, a)
    assert g.item() == 2.0 and log == []


async def test_grad_captures_the_value_the_tensor_hooks_leave():
    x = scalar(1.0)
    y = x * 2.0
    x.register_hook(lambda g: g * 100.0)
    (g,) = await ag.grad(y, x)
    assert g.item() == 200.0


# Not on trio: the order asserted is of one loop's turns, and under trio the "done" entries
# are written by the trio tasks after the bridge hands the results back.
@pytest.mark.aiograd(backends=["asyncio", "uvloop"])
async def test_async_hooks_interleave_with_other_backward_calls():
    order: list[str] = []

    async def slow_hook(g):
        order.append("hook start")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        order.append("hook end")
        return g * 2.0

    async def with_hook():
        x = scalar(1.0)
        y = x * 3.0
        y.register_hook(slow_hook)
        await y.backward()
        order.append("hooked backward done")
        return x.grad.item()

    async def plain():
        x = scalar(1.0)
        await (x * 5.0).backward()
        order.append("plain backward done")
        return x.grad.item()

    results = await gather(with_hook(), plain())
    assert results == [6.0, 5.0]
    assert order.index("plain backward done") < order.index("hook end")


async def test_error_in_a_hook_fails_the_backward_and_names_the_node():
    x = scalar()
    y = x.exp()
    y.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError) as info:
        await y.backward()
    assert "while running ExpBackward0" in info.value.__notes__
    assert x.grad is None


async def test_hook_changing_the_shape_is_an_error():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    y.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        await y.sum().backward()


# ------------------------------------------------------------------------------ final callbacks
def test_queue_callback_outside_backward():
    with pytest.raises(RuntimeError, match="^Final callbacks can only be installed during backward pass.$"):
        ag.queue_callback(lambda: None)


async def test_final_callbacks_run_once_after_all_nodes_in_fifo_order_and_may_queue_more():
    log: list[str] = []
    x = scalar()
    y = x * 2.0

    async def second():
        await asyncio.sleep(0)
        log.append("second")
        ag.queue_callback(lambda: log.append("queued by second"))

    def hook(g):
        log.append("hook")
        ag.queue_callback(lambda: log.append(f"first, grad={x.grad.item()}"))
        ag.queue_callback(second)

    y.register_hook(hook)
    await y.backward()
    assert log == ["hook", "first, grad=2.0", "second", "queued by second"]
    await (x * 1.0).backward()
    assert log.count("second") == 1


async def test_error_in_a_final_callback_fails_the_backward():
    x = scalar()
    y = x * 2.0
    y.register_hook(lambda g: ag.queue_callback(lambda: [][1]))
    with pytest.raises(IndexError):
        await y.backward()


# ------------------------------------------------------------------------------ anomaly mode
def test_detect_anomaly_warns_on_enter_and_is_scoped():
    assert not ag.is_anomaly_enabled()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with ag.detect_anomaly():
            assert ag.is_anomaly_enabled() and ag.is_anomaly_check_nan_enabled()
            with ag.detect_anomaly(check_nan=False):
                assert not ag.is_anomaly_check_nan_enabled()
            assert ag.is_anomaly_check_nan_enabled()
    assert not ag.is_anomaly_enabled()
    with ag.set_detect_anomaly(True):
        assert ag.is_anomaly_enabled()
    assert not ag.is_anomaly_enabled()


async def test_nan_in_a_backward_output_is_reported():
    x = ag.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ag.detect_anomaly():
            y = x.sqrt() * 0.0  # sqrt'(0) * 0 = inf * 0 = nan
            with pytest.raises(RuntimeError, match="^Function 'SqrtBackward0' returned nan values in its 0th output.\nwhile running SqrtBackward0$"):
                with np.errstate(all="ignore"):
                    await y.sum().backward()
        with ag.detect_anomaly(check_nan=False):
            with np.errstate(all="ignore"):
                await (x.sqrt() * 0.0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


async def test_error_in_backward_warns_with_the_forward_traceback():
    class Broken(ag.Node):
        def apply(self, grads):
            raise ValueError("broken formula")

    def make_broken_op(t):
        out = ag.Tensor._wrap(t.data * 1.0)
        out._requires_grad, out.grad_fn = True, Broken(((t.grad_fn, 0),))
        return out

    x = scalar()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ag.detect_anomaly():
            y = make_broken_op(x * 1.0)
    with ag.set_detect_anomaly(True):
        with pytest.warns(UserWarning, match="Error detected in Broken. Traceback of forward call that caused the error:") as record:
            with pytest.raises(ValueError, match="broken formula"):
                await y.backward()
    assert any("make_broken_op" in str(w.message) for w in record)

    z = make_broken_op(x * 1.0)  # created outside anomaly mode
    with ag.set_detect_anomaly(True):
        with pytest.warns(UserWarning, match="Error detected in Broken. No forward pass information available"):
            with pytest.raises(ValueError):
                await z.backward()


async def test_double_backward_error_names_the_node_that_induced_it():
    x = scalar(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ag.detect_anomaly():
            y = x.sqrt()  # first derivative 1/(2 sqrt x): inf at 0
            (g,) = await ag.grad(y, x, create_graph=True)
            with np.errstate(all="ignore"):
                with pytest.warns(UserWarning) as record, pytest.raises(RuntimeError, match="returned nan values"):
                    await ag.grad(g * 0.0, x)
    messages = [str(w.message) for w in record if "Error detected" in str(w.message)]
    assert messages and "Previous calculation was induced by SqrtBackward0" in messages[0]


async def test_version_hint_depends_on_anomaly_mode():
    x = ag.tensor([1.0], requires_grad=True)
    y = x.exp()
    y._vc[0] += 1
    with pytest.raises(RuntimeError, match="Hint: enable anomaly detection"):
        await y.sum().backward(retain_graph=True)
    with ag.set_detect_anomaly(True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="Good luck!"):
                await y.sum().backward()


async def test_hook_changing_the_dtype_is_an_error():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    y.register_hook(lambda g: g.float())
    with pytest.raises(RuntimeError, match="has changed the type of value \\(was aiograd.DoubleTensor got aiograd.FloatTensor\\)"):
        await y.sum().backward()


async def test_hook_registered_before_an_inplace_op_stays_with_the_old_grad_fn():
    seen: list[tuple[str, list[float]]] = []
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    old_fn = y.grad_fn
    y.register_hook(lambda g: seen.append(("before", g.tolist())))
    y.mul_(3.0)
    assert y.grad_fn is not old_fn and y.grad_fn.next_functions[0][0] is old_fn
    y.register_hook(lambda g: seen.append(("after", g.tolist())))
    y.retain_grad()
    await y.sum().backward()
    # The later hook sees the grad of the new version; the earlier one, of the old (times 3).
    assert seen == [("after", [1.0, 1.0]), ("before", [3.0, 3.0])]
    assert y.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [3.0, 3.0]


@requires_torch
async def test_retain_grad_follows_inplace_ops_like_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2.0
        y.retain_grad()
        y.mul_(3.0)
        return x, y

    xa, ya = run(ag)
    xt, yt = run(torch)
    await ya.sum().backward()
    yt.sum().backward()
    assert ya.grad.tolist() == yt.grad.tolist() and xa.grad.tolist() == xt.grad.tolist()
