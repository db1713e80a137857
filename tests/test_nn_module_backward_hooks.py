"""Module backward hooks (register_full_backward_hook, register_full_backward_pre_hook, the
deprecated register_backward_hook, the global register_module_*backward*_hook): each scenario
runs on torch and on aiograd with the same weights, and the call orders, the hooks' arguments
(grad_input, grad_output), the gradients and the error messages are compared."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.modules.module as ag_module_mod
from aiograd._core._node import RemovableHandle

pytestmark = requires_torch
tnn: Any = torch.nn if torch is not None else None


# ------------------------------------------------------------------------------ helpers
def _value(x: Any) -> Any:
    """A hook argument as plain data: tensors as rounded lists, tuples item by item."""
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return tuple(_value(v) for v in x)
    if isinstance(x, ag.Tensor):
        return ("T", np.round(np.asarray(x.data, dtype=np.float64), 4).tolist())
    if torch is not None and isinstance(x, torch.Tensor):
        return ("T", np.round(x.detach().numpy().astype(np.float64), 4).tolist())
    return x


def _same_weights(theirs: Any, ours: Any) -> None:
    """Copy torch's parameters into aiograd's (same names, same order)."""
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        p.data[...] = t_params[name].detach().numpy()


def _recorder(log: list[Any]) -> dict[str, Callable[..., Any]]:
    """Hooks that log their tag, module name and arguments."""

    def full(tag: str) -> Callable[..., Any]:
        def hook(module: Any, grad_input: Any, grad_output: Any) -> None:
            log.append((tag, type(module).__name__, _value(grad_input), _value(grad_output)))

        return hook

    def pre(tag: str) -> Callable[..., Any]:
        def hook(module: Any, grad_output: Any) -> None:
            log.append((tag, type(module).__name__, _value(grad_output)))

        return hook

    def tensor(tag: str) -> Callable[..., Any]:
        def hook(grad: Any) -> None:
            log.append((tag, _value(grad)))

        return hook

    return {"full": full, "pre": pre, "tensor": tensor}


def _x(lib: Any, value: Any, requires_grad: bool = True) -> Any:
    return lib.tensor(value, requires_grad=requires_grad)


async def _backward(loss: Any) -> None:
    if isinstance(loss, ag.Tensor):
        await loss.backward()
    else:
        loss.backward()


async def _grad(out: Any, inputs: Any) -> Any:
    if isinstance(out, ag.Tensor):
        return await ag.grad(out, inputs)
    return torch.autograd.grad(out, inputs)


async def _both(case: Callable[..., Any]) -> tuple[Any, Any]:
    """Run ``case(lib, T)`` on torch and on aiograd; their results."""
    theirs = await case(tnn, torch)
    ours = await case(nn, ag)
    return ours, theirs


# ------------------------------------------------------------------------------ call orders and arguments
async def test_linear_full_hook_pre_hook_and_tensor_hooks_order_and_arguments():
    torch.manual_seed(0)
    reference = tnn.Linear(3, 2)

    async def case(lib: Any, T: Any) -> Any:
        log: list[Any] = []
        rec = _recorder(log)
        m = lib.Linear(3, 2)
        if lib is nn:
            _same_weights(reference, m)
        else:
            m.load_state_dict(reference.state_dict())
        m.register_full_backward_hook(rec["full"]("full"))
        m.register_full_backward_pre_hook(rec["pre"]("pre"))
        x = _x(T, [[1.0, -2.0, 0.5], [0.25, 1.0, -1.0]])
        x.register_hook(rec["tensor"]("x"))
        out = m(x)
        out.register_hook(rec["tensor"]("out"))
        await _backward((out * T.tensor([1.0, 3.0])).sum())
        log.append(("x.grad", _value(x.grad)))
        log.append(("w.grad", _value(m.weight.grad)))
        return log

    ours, theirs = await _both(case)
    assert [entry[0] for entry in theirs] == ["out", "pre", "full", "x", "x.grad", "w.grad"]
    assert ours == theirs


async def test_sequential_nested_hook_order_with_grad():
    torch.manual_seed(1)
    reference = tnn.Sequential(tnn.Linear(3, 4), tnn.ReLU(), tnn.Linear(4, 2))

    async def case(lib: Any, T: Any) -> Any:
        log: list[Any] = []
        rec = _recorder(log)
        seq = lib.Sequential(lib.Linear(3, 4), lib.ReLU(), lib.Linear(4, 2))
        if lib is nn:
            _same_weights(reference, seq)
        else:
            seq.load_state_dict(reference.state_dict())
        seq.register_full_backward_hook(rec["full"]("outer"))
        seq.register_full_backward_pre_hook(rec["pre"]("outer-pre"))
        for i, child in enumerate(seq):
            child.register_full_backward_hook(rec["full"](f"full{i}"))
            child.register_full_backward_pre_hook(rec["pre"](f"pre{i}"))
        x = _x(T, [[0.5, -1.0, 2.0]])
        (gx,) = await _grad(seq(x).sum(), x)
        log.append(("gx", _value(gx)))
        return log

    ours, theirs = await _both(case)
    assert [e[0] for e in theirs] == [
        "outer-pre", "pre2", "full2", "pre1", "full1", "pre0", "full0", "outer", "gx",
    ]
    assert ours == theirs


async def test_two_inputs_one_not_requiring_grad_and_a_non_tensor_argument():
    async def case(lib: Any, T: Any) -> Any:
        class M(lib.Module):
            def forward(self, x: Any, y: Any, scale: float) -> Any:
                return x * y * scale

        log: list[Any] = []
        m = M()
        m.register_full_backward_hook(_recorder(log)["full"]("full"))
        m.register_full_backward_pre_hook(_recorder(log)["pre"]("pre"))
        x = _x(T, [1.0, 2.0])
        y = _x(T, [3.0, -1.0], requires_grad=False)
        await _backward(m(x, y, 2.0).sum())
        log.append(("x.grad", _value(x.grad)))
        # an integer tensor input: zeros of its dtype as its grad_input, as torch's
        idx = T.tensor([1, 2])
        m2 = M()
        m2.register_full_backward_hook(_recorder(log)["full"]("int"))
        await _backward(m2(x, idx, 1.0).sum())
        return log

    ours, theirs = await _both(case)
    # torch shows zeros for the input that needs no gradient, None for the non-tensor
    assert theirs[1][2] == (("T", [6.0, -2.0]), ("T", [0.0, 0.0]), None)
    assert ours == theirs


async def test_module_returning_a_tuple_with_a_non_tensor():
    async def case(lib: Any, T: Any) -> Any:
        class M(lib.Module):
            def forward(self, x: Any) -> Any:
                return x * 2, 5, x * 3, x.detach()

        log: list[Any] = []
        m = M()
        m.register_full_backward_hook(_recorder(log)["full"]("full"))
        m.register_full_backward_pre_hook(_recorder(log)["pre"]("pre"))
        x = _x(T, [1.0, 2.0])
        a, five, b, c = m(x)
        log.append(("five", five, c.requires_grad))
        await _backward(a.sum())  # b's gradient is undefined: None in grad_output
        log.append(("x.grad", _value(x.grad)))
        a, five, b, c = m(x)
        await _backward((a * b).sum())
        return log

    ours, theirs = await _both(case)
    assert ours == theirs


async def test_hook_replacing_grad_input_and_pre_hook_replacing_grad_output():
    torch.manual_seed(2)
    reference = tnn.Linear(2, 2)

    async def case(lib: Any, T: Any) -> Any:
        log: list[Any] = []
        m = lib.Linear(2, 2)
        if lib is nn:
            _same_weights(reference, m)
        else:
            m.load_state_dict(reference.state_dict())

        def pre(module: Any, grad_output: Any) -> Any:
            return (grad_output[0] * 2,)

        def full(module: Any, grad_input: Any, grad_output: Any) -> Any:
            log.append(("full", _value(grad_input), _value(grad_output)))
            return (grad_input[0] + 1,)

        def after(module: Any, grad_input: Any, grad_output: Any) -> None:
            log.append(("after", _value(grad_input)))  # sees the replaced grad_input

        m.register_full_backward_pre_hook(pre)
        m.register_full_backward_hook(full)
        m.register_full_backward_hook(after)
        x = _x(T, [[1.0, 2.0]])
        await _backward(m(x).sum())
        log.append(("x.grad", _value(x.grad)))
        log.append(("w.grad", _value(m.weight.grad)))  # follows the doubled grad_output
        log.append(("b.grad", _value(m.bias.grad)))
        return log

    ours, theirs = await _both(case)
    assert ours == theirs


async def test_prepend_removal_and_the_module_called_twice():
    async def case(lib: Any, T: Any) -> Any:
        log: list[Any] = []
        m = lib.Tanh()

        def tag(name: str) -> Callable[..., Any]:
            return lambda module, gi, go: log.append((name, _value(go)))

        def pre_tag(name: str) -> Callable[..., Any]:
            return lambda module, go: log.append((name, _value(go)))

        h1 = m.register_full_backward_hook(tag("a"))
        m.register_full_backward_hook(tag("b"), prepend=True)
        p1 = m.register_full_backward_pre_hook(pre_tag("p"))
        m.register_full_backward_pre_hook(pre_tag("q"), prepend=True)
        x = _x(T, [0.5, -0.25])
        await _backward((m(m(x)) * T.tensor([1.0, 2.0])).sum())
        h1.remove()
        p1.remove()
        h1.remove()  # twice: fine
        log.append("removed")
        await _backward(m(x).sum())
        return log

    ours, theirs = await _both(case)
    assert ours == theirs


async def test_no_input_requires_grad_fires_on_the_outputs_with_a_warning():
    torch.manual_seed(3)
    reference = tnn.Linear(2, 1)

    async def case(lib: Any, T: Any) -> Any:
        log: list[Any] = []
        m = lib.Linear(2, 1)
        if lib is nn:
            _same_weights(reference, m)
        else:
            m.load_state_dict(reference.state_dict())
        m.register_full_backward_hook(_recorder(log)["full"]("full"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await _backward(m(T.tensor([[1.0, 2.0]])).sum())
        log.append([str(w.message) for w in caught])
        # a hook returning gradients there is an error
        m.register_full_backward_hook(lambda module, gi, go: (T.ones(1, 2),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                await _backward(m(T.tensor([[1.0, 2.0]])).sum())
            except RuntimeError as error:
                log.append(str(error))
        return log

    ours, theirs = await _both(case)
    assert ours == theirs
    assert theirs[0][2] == (None,)


async def test_grad_mode_off_or_nothing_requiring_grad_sets_up_nothing():
    async def case(lib: Any, T: Any) -> Any:
        m = lib.Identity()
        m.register_full_backward_hook(lambda *args: None)
        x = _x(T, [1.0])
        with T.no_grad():
            out = m(x)
        plain = m(T.tensor([1.0]))
        return (out is x, out.grad_fn is None, plain.requires_grad, type(m(x).grad_fn).__name__)

    ours, theirs = await _both(case)
    assert ours == theirs == (True, True, False, "BackwardHookFunctionBackward")


async def test_non_tensor_output_warns_and_never_fires():
    async def case(lib: Any, T: Any) -> Any:
        class D(lib.Module):
            def forward(self, x: Any) -> Any:
                return {"a": x * 2}

        log: list[Any] = []
        d = D()
        d.register_full_backward_hook(_recorder(log)["full"]("full"))
        x = _x(T, [1.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = d(x)
        log.append([str(w.message).replace("torch.", "").replace("aiograd.", "") for w in caught])
        await _backward(out["a"].sum())
        log.append(_value(x.grad))
        return log

    ours, theirs = await _both(case)
    assert ours == theirs


# ------------------------------------------------------------------------------ errors
def _message(error: BaseException) -> str:
    return str(error).replace("torch.", "aiograd.")


async def test_errors_match_torch():
    async def case(lib: Any, T: Any) -> Any:
        messages: list[str] = []

        class InPlace(lib.Module):
            def forward(self, x: Any) -> Any:
                x.add_(1)
                return x * 2

        m = InPlace()
        m.register_full_backward_hook(lambda *args: None)
        try:
            m(_x(T, [1.0]).clone())
        except RuntimeError as error:
            messages.append(_message(error))
        ident = lib.Identity()
        ident.register_full_backward_pre_hook(lambda *args: None)
        out = ident(_x(T, [1.0]) * 1)
        try:
            out.mul_(2)
        except RuntimeError as error:
            messages.append(_message(error))

        both = lib.Identity()
        both.register_full_backward_hook(lambda *args: None)
        try:
            both.register_backward_hook(lambda *args: None)
        except RuntimeError as error:
            messages.append(_message(error))
        old = lib.Identity()
        old.register_backward_hook(lambda *args: None)
        try:
            old.register_full_backward_hook(lambda *args: None)
        except RuntimeError as error:
            messages.append(_message(error))

        wrong = lib.Tanh()
        wrong.register_full_backward_hook(lambda module, gi, go: (gi[0], gi[0]))
        try:
            await _backward(wrong(_x(T, [1.0])).sum())
        except RuntimeError as error:
            messages.append(_message(error))
        wrong_pre = lib.Tanh()
        wrong_pre.register_full_backward_pre_hook(lambda module, go: (go[0], go[0]))
        try:
            await _backward(wrong_pre(_x(T, [1.0])).sum())
        except RuntimeError as error:
            messages.append(_message(error))
        bad_size = lib.Tanh()
        bad_size.register_full_backward_hook(lambda module, gi, go: (T.ones(3),))
        try:
            await _backward(bad_size(_x(T, [1.0])).sum())
        except RuntimeError as error:
            messages.append(_message(error))
        return messages

    ours, theirs = await _both(case)
    assert len(theirs) == 7
    assert theirs[0].startswith("Output 0 of BackwardHookFunction is a view and is being modified inplace.")
    assert ours == theirs


# ------------------------------------------------------------------------------ the deprecated hook, global hooks
async def test_deprecated_register_backward_hook_as_torch():
    async def case(lib: Any, T: Any) -> Any:
        class Mul(lib.Module):
            def forward(self, a: Any, b: Any) -> Any:
                return a * b

        log: list[Any] = []
        m = Mul()

        def hook(module: Any, grad_input: Any, grad_output: Any) -> Any:
            log.append(("old", _value(grad_input), _value(grad_output)))
            return (grad_input[0] * 10, grad_input[1])

        handle = m.register_backward_hook(hook)
        a, b = _x(T, [1.0, 2.0]), _x(T, [3.0, -1.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = m(a, b)
        log.append([(w.category.__name__, str(w.message)) for w in caught])
        await _backward(out.sum())
        log.append((_value(a.grad), _value(b.grad)))
        handle.remove()
        await _backward(m(a, b).sum())
        log.append(_value(a.grad))
        return log

    ours, theirs = await _both(case)
    assert ours == theirs


@pytest.fixture
def fresh_global_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The global hooks' full/non-full choice is sticky for the process (as torch's): undo it."""
    from aiograd.nn.modules import _backward_hooks

    monkeypatch.setattr(_backward_hooks, "_global_is_full_backward_hook", None)
    monkeypatch.setattr(torch.nn.modules.module, "_global_is_full_backward_hook", None)


async def test_global_hooks_run_before_the_modules_own(fresh_global_hooks: None):
    async def case(lib: Any, T: Any) -> Any:
        mod = ag_module_mod if lib is nn else torch.nn.modules.module
        log: list[Any] = []
        m = lib.Tanh()
        m.register_full_backward_hook(lambda module, gi, go: log.append("own"))
        m.register_full_backward_pre_hook(lambda module, go: log.append("own-pre"))
        handles = [
            mod.register_module_full_backward_hook(lambda module, gi, go: log.append(("global", _value(gi)))),
            mod.register_module_full_backward_pre_hook(lambda module, go: log.append("global-pre")),
        ]
        other = lib.Sigmoid()  # no hooks of its own: the global ones still run
        x = _x(T, [0.5])
        try:
            await _backward(other(m(x)).sum())
            try:
                mod.register_module_backward_hook(lambda *args: None)
            except RuntimeError as error:
                log.append(_message(error))
        finally:
            for handle in handles:
                handle.remove()
        await _backward(other(m(x)).sum())
        return log

    ours, theirs = await _both(case)
    assert ours == theirs


async def test_async_hooks_are_awaited():
    log: list[Any] = []
    m = nn.Tanh()

    async def pre(module: Any, grad_output: Any) -> Any:
        log.append("pre")
        return (grad_output[0] * 2,)

    async def full(module: Any, grad_input: Any, grad_output: Any) -> None:
        log.append(("full", _value(grad_output)))

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(full)
    x = ag.tensor([0.0], requires_grad=True)
    await m(x).sum().backward()
    assert log == ["pre", ("full", (("T", [2.0]),))]
    assert x.grad is not None and x.grad.tolist() == [2.0]


def test_hook_handles_are_removable_handles():
    m = nn.Linear(1, 1)
    handle = m.register_full_backward_hook(lambda *args: None)
    assert isinstance(handle, RemovableHandle)
    with handle:
        assert len(m._backward_hooks) == 1
    assert len(m._backward_hooks) == 0
