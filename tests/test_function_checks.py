"""Custom Functions against torch 2.13: the checks PyTorch makes, ``setup_context``, and the rest of
the ``ctx``/``apply`` surface users rely on.

Every scenario is written once as a function of the library (``aiograd`` or ``torch``) and runs on
both: errors must have torch's type and exact words (taken from torch at test time, so that a
drift on either side fails), results must be equal.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.sync

pytestmark = requires_torch

Scenario = Callable[[Any], Any]


def base_class(lib: Any) -> type:
    return ag.Function if lib is ag else torch.autograd.Function


def once_differentiable(lib: Any) -> Any:
    return ag.function.once_differentiable if lib is ag else torch.autograd.function.once_differentiable


def backward(lib: Any, out: Any, **kwargs: Any) -> None:
    if lib is ag:
        aiograd.sync.backward(out, **kwargs)
    else:
        out.backward(**kwargs)


def torch_error(scenario: Scenario) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as info:
        scenario(torch)
    return info.type, str(info.value)


def assert_same_error(scenario: Scenario, fragment: str) -> str:
    """aiograd raises exactly torch's exception, which contains ``fragment``."""
    exc, message = torch_error(scenario)
    assert fragment in message
    with pytest.raises(exc, match=re.escape(message)) as info:
        scenario(ag)
    assert str(info.value) == message  # (the engine may add a note naming the node)
    return message


def warnings_of(scenario: Scenario, lib: Any) -> list[tuple[type[Warning], str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scenario(lib)
    # torch appends where in its C++ sources the warning was raised.
    return [(w.category, re.sub(r" \(Triggered internally at .*\)$", "", str(w.message))) for w in caught]


# ------------------------------------------------------------------------------ mark_dirty
def _dirty(lib: Any, outputs: int = 1) -> type:
    """Doubles its input in place and marks it dirty; returns it (and a second output)."""

    class Dirty(base_class(lib)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            x.mul_(2.0)
            ctx.mark_dirty(x)
            return x if outputs == 1 else (x, x * 3)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            return grads[0] * 2

    return Dirty


def _dirty_non_input(lib: Any, intermediate_view: bool) -> type:
    class DirtyIntermediate(base_class(lib)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            y = x * 2
            if intermediate_view:
                y = y[:1]
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad

    return DirtyIntermediate


def test_mark_dirty_on_a_tensor_that_is_not_an_input_warns_like_torch() -> None:
    def scenario(lib: Any) -> None:
        out = _dirty_non_input(lib, False).apply(lib.tensor([1.0, 2.0], requires_grad=True))
        assert out.grad_fn is not None

    expected = warnings_of(scenario, torch)
    assert expected == [(UserWarning, "ctx.mark_dirty() received a tensor that was not an input. Only input "
                         "Tensors that have been mutated should be passed to ctx.mark_dirty().")]
    assert warnings_of(scenario, ag) == expected
    # Without a graph PyTorch checks nothing.
    quiet: Scenario = lambda lib: _dirty_non_input(lib, False).apply(lib.tensor([1.0, 2.0]))  # noqa: E731
    assert warnings_of(quiet, ag) == warnings_of(quiet, torch) == []


def test_mark_dirty_on_a_view_that_is_not_an_input_raises() -> None:
    assert_same_error(
        lambda lib: _dirty_non_input(lib, True).apply(lib.tensor([1.0, 2.0], requires_grad=True)),
        "received a tensor that was not an input",
    )


MULTI_OUTPUT = "This view is the output of a function that returns multiple views."


@pytest.mark.parametrize("make", ["split", "unbind", "chunk"])
def test_mark_dirty_on_an_output_of_a_multi_output_view_op_raises(make: str) -> None:
    def scenario(lib: Any) -> Any:
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 1
        pieces = {"split": lambda: x.split(1), "unbind": lambda: x.unbind(0), "chunk": lambda: x.chunk(2, 1)}[make]()
        return _dirty(lib).apply(pieces[1])

    assert_same_error(scenario, MULTI_OUTPUT)


def test_mark_dirty_on_a_view_of_a_leaf_raises_and_leaves_the_leaf_alone() -> None:
    def scenario(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        try:
            return _dirty(lib).apply(x[:2])
        finally:
            assert x.grad_fn is None and x.is_leaf  # before, aiograd gave the leaf a CopySlices

    assert_same_error(scenario, "a view of a leaf Variable that requires grad")


def test_mark_dirty_on_a_no_grad_view_is_the_leaf_error() -> None:
    """A view made under no_grad requires grad in PyTorch (with its base) and is a leaf."""
    def scenario(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
        with lib.no_grad():
            v = x[:2]
        return _dirty(lib).apply(v)

    assert_same_error(scenario, "a leaf Variable that requires grad has been used in an in-place operation.")


def test_mark_dirty_on_a_view_input_with_several_outputs_raises() -> None:
    def scenario(lib: Any) -> Any:
        y = lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
        return _dirty(lib, outputs=2).apply(y[:2])

    assert_same_error(scenario, "your Function modifies inplace an input that is a view of another Tensor")


def test_mark_dirty_on_a_view_input_rebases_its_base_like_torch() -> None:
    results = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        out = _dirty(lib).apply(y[:2])
        backward(lib, (out * lib.tensor([1.0, 10.0])).sum())
        results.append((out.tolist(), type(y.grad_fn).__name__, out.grad_fn.name(), x.grad.tolist(), y._version))
    assert results[0] == results[1] == ([2.0, 4.0], "CopySlices", "AsStridedBackward0", [2.0, 20.0, 0.0], 2)


def test_mark_dirty_on_a_plain_input_with_several_outputs_is_fine() -> None:
    results = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a, b = _dirty(lib, outputs=2).apply(x * 1)
        results.append((a.tolist(), b.tolist(), a.grad_fn.name() == b.grad_fn.name()))
    assert results[0] == results[1]


# ------------------------------------------------------------------------------ views out of a Function
IN_CUSTOM_FUNCTION = "This view was created inside a custom Function (or because an input was returned as-is)"


def _returns(lib: Any, make: Callable[[Any], Any], grad: Callable[[Any], Any] = lambda g: g) -> type:
    class Ret(base_class(lib)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return make(x)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return grad(g)

    return Ret


def _padded(g: Any) -> Any:
    """The gradient of ``x[:2]`` for a 3-vector ``x``."""
    return (torch if isinstance(g, torch.Tensor) else ag).cat([g, g[:1] * 0])


VIEW_OUTPUT_SCENARIOS: dict[str, Scenario] = {
    "view_output": lambda lib: _returns(lib, lambda x: x[:2], _padded).apply(
        lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1).mul_(2),
    "input_returned_as_is": lambda lib: _returns(lib, lambda x: x).apply(
        lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1).mul_(2),
    "view_of_the_output": lambda lib: _returns(lib, lambda x: x[:2], _padded).apply(
        lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1)[:1].mul_(2),
    "view_output_without_grad": lambda lib: _returns(lib, lambda x: x[:2]).apply(
        lib.tensor([1.0, 2.0, 3.0])).mul_(lib.ones(2, requires_grad=True)),
}


@pytest.mark.parametrize("name", VIEW_OUTPUT_SCENARIOS)
def test_in_place_on_a_view_returned_by_a_function_raises(name: str) -> None:
    assert_same_error(VIEW_OUTPUT_SCENARIOS[name], IN_CUSTOM_FUNCTION)


def test_reading_grad_fn_of_a_function_view_after_its_base_moved_raises() -> None:
    def scenario(lib: Any) -> Any:
        x = (lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1)
        v = _returns(lib, lambda t: t[:2], _padded).apply(x)
        x.mul_(2)
        return v.grad_fn

    message = assert_same_error(scenario, IN_CUSTOM_FUNCTION)
    assert message.startswith("Output 0 of Ret is a view and its base or another view of its base has been")


def test_views_out_of_a_function_with_two_outputs_are_multi_output_views() -> None:
    def scenario(lib: Any) -> Any:
        def two(x: Any) -> Any:
            return x[:2], x[1:]

        class Two(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return two(x)

            @staticmethod
            def backward(ctx: Any, g: Any, h: Any) -> Any:
                return None

        a, _ = Two.apply(lib.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1)
        return a.add_(1)

    message = assert_same_error(scenario, MULTI_OUTPUT)
    assert message.startswith("Output 0 of Two is a view and is being modified inplace.")


def test_a_returned_input_is_a_view_of_it_that_shares_the_version() -> None:
    facts = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = _returns(lib, lambda t: t).apply(x)
        name = y.grad_fn.name()
        with lib.no_grad():
            y.mul_(3)  # allowed without a gradient, and seen by x
        plain = lib.tensor([1.0, 2.0])
        z = _returns(lib, lambda t: t).apply(plain)
        facts.append((y is x, y._base is x, y._version == x._version == 1, x.tolist(), z._base is plain,
                      z.requires_grad, name))
    assert facts[0] == facts[1] == (False, True, True, [3.0, 6.0], True, False, "RetBackward")


def test_reading_grad_fn_of_a_returned_input_modified_in_place_raises() -> None:
    def scenario(lib: Any) -> Any:
        y = _returns(lib, lambda t: t).apply(lib.tensor([1.0, 2.0], requires_grad=True))
        with lib.no_grad():
            y.mul_(3)
        return y.grad_fn

    assert_same_error(scenario, IN_CUSTOM_FUNCTION)


# ------------------------------------------------------------------------------ legacy use
def test_instantiating_a_function_warns_like_torch() -> None:
    def scenario(lib: Any) -> None:
        class Instantiated(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x

        Instantiated()

    expected = warnings_of(scenario, torch)
    assert [category for category, _ in expected] == [DeprecationWarning]
    assert warnings_of(scenario, ag) == expected
    with pytest.warns(DeprecationWarning) as caught:
        scenario(ag)
    assert caught[0].filename == __file__  # the user's line, not aiograd's


def test_calling_a_legacy_function_with_a_non_static_forward_raises() -> None:
    def scenario(lib: Any) -> Any:
        class Legacy(base_class(lib)):  # type: ignore[misc]
            def forward(self, x: Any) -> Any:
                return x

            def backward(self, g: Any) -> Any:
                return g

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            legacy = Legacy()
        return legacy(lib.tensor([1.0], requires_grad=True))

    assert_same_error(scenario, "Legacy autograd function with non-static forward method is deprecated.")


# ------------------------------------------------------------------------------ apply's arguments
def _with_defaults(lib: Any) -> type:
    class Defaults(base_class(lib)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any, a: float = 1.0, b: float = 2.0, *rest: Any, c: float = 0.0) -> Any:
            ctx.seen = (a, b, rest)
            return x * b

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return (g * ctx.seen[1],) + (None,) * (2 + len(ctx.seen[2]))

    return Defaults


def test_keywords_bind_to_positional_parameters_like_torch() -> None:
    results = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = _with_defaults(lib).apply(x, 5.0, b=3.0)
        z = _with_defaults(lib).apply(b=4.0, a=1.0, x=x)
        w = _with_defaults(lib).apply(x, a=x)  # a tensor given by keyword is an input
        backward(lib, (y + z + w).sum())
        results.append((y.grad_fn.seen, z.grad_fn.seen, len(w.grad_fn.next_functions), x.grad.tolist()))
    assert results[0] == results[1] == ((5.0, 3.0, ()), (1.0, 4.0, ()), 2, [9.0, 9.0])


@pytest.mark.parametrize(
    "kwargs",
    [{"b": 3.0}, {"c": 1.0}, {"z": 1.0}, {"ctx": 1.0}],
    ids=["missing_earlier_positional", "keyword_only", "unknown", "ctx"],
)
def test_apply_keyword_errors_are_torchs(kwargs: dict[str, Any]) -> None:
    assert_same_error(
        lambda lib: _with_defaults(lib).apply(lib.tensor([1.0], requires_grad=True), **kwargs), "forward()"
    )


def test_apply_with_a_value_given_twice_is_torchs_error() -> None:
    assert_same_error(
        lambda lib: _with_defaults(lib).apply(lib.tensor([1.0], requires_grad=True), 1.0, 2.0, b=3.0),
        "got multiple values for argument 'b'",
    )


# ------------------------------------------------------------------------------ setup_context
def _setup_style(lib: Any, log: list[Any]) -> type:
    class Scaled(base_class(lib)):  # type: ignore[misc]
        @staticmethod
        def forward(x: Any, k: float = 2.0) -> Any:
            log.append(("forward", lib.is_grad_enabled()))
            return x * k, (x * k).sum().detach()

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            x, k = inputs
            out, total = output
            log.append(("setup", lib.is_grad_enabled(), type(inputs).__name__, k, out.requires_grad,
                        ctx.needs_input_grad))
            ctx.save_for_backward(x, out)
            ctx.k = k
            ctx.mark_non_differentiable(total)
            ctx.set_materialize_grads(False)

        @staticmethod
        def backward(ctx: Any, g: Any, g_total: Any) -> Any:
            x, out = ctx.saved_tensors
            log.append(("backward", g_total, out.tolist()))
            return g * ctx.k, None

    return Scaled


def test_setup_context_like_torch() -> None:
    results = []
    for lib in (ag, torch):
        log: list[Any] = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out, total = _setup_style(lib, log).apply(x, k=3.0)
        _, _ = _setup_style(lib, log).apply(x)  # the default is passed to setup_context
        backward(lib, out.sum())
        results.append((log, out.tolist(), total.requires_grad, x.grad.tolist(), out.grad_fn.name()))
    assert results[0] == results[1]
    assert results[0][0][1] == ("setup", False, "tuple", 3.0, False, (True, False))


def test_setup_context_saved_tensors_after_backward_raise() -> None:
    def scenario(lib: Any) -> Any:
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        out, _ = _setup_style(lib, []).apply(x)
        backward(lib, out.sum())
        return out.grad_fn.saved_tensors

    assert_same_error(scenario, "Trying to backward through the graph a second time")


def test_setup_context_may_not_save_an_input_returned_as_is() -> None:
    def scenario(lib: Any) -> Any:
        class Identity(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(x: Any) -> Any:
                return x

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g

        return Identity.apply(lib.tensor([1.0], requires_grad=True))

    assert_same_error(scenario, "An input that has been returned as-is as output is being saved for backward.")


def test_setup_context_marks_dirty_like_forward_does() -> None:
    results = []
    for lib in (ag, torch):

        class DirtyLater(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(x: Any) -> Any:
                x.mul_(2.0)
                return x

            @staticmethod
            def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
                ctx.mark_dirty(inputs[0])

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g * 2

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        out = DirtyLater.apply(y)
        backward(lib, out.sum())
        results.append((out is y, y.grad_fn.name(), y._version, x.grad.tolist()))
    assert results[0] == results[1] == (True, "DirtyLaterBackward", 2, [2.0, 2.0])


def test_setup_context_binding_errors_are_torchs() -> None:
    assert_same_error(lambda lib: _setup_style(lib, []).apply(lib.tensor([1.0]), j=1.0), "unexpected keyword")
    assert_same_error(lambda lib: _setup_style(lib, []).apply(k=1.0), "missing a required argument")


def test_setup_context_with_an_async_backward() -> None:
    class AsyncScaled(ag.Function):
        @staticmethod
        def forward(x: Any) -> Any:
            return x * 2

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(inputs[0])

        @staticmethod
        async def backward(ctx: Any, g: Any) -> Any:
            await asyncio.sleep(0)
            (x,) = ctx.saved_tensors
            return g * 2 + x * 0

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    out = AsyncScaled.apply(x)
    assert out.grad_fn.is_async
    aiograd.sync.backward(out.sum())
    assert x.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------------------ defaults of Function
@pytest.mark.parametrize(
    ("method", "args"),
    [("jvp", (None, None)), ("setup_context", (None, (), None)), ("forward", (None,)), ("backward", (None,)),
     ("vjp", (None,))],
)
def test_unimplemented_methods_raise_torchs_error(method: str, args: tuple[Any, ...]) -> None:
    assert_same_error(lambda lib: getattr(base_class(lib), method)(*args), "")


def test_vjp_is_backward_and_once_differentiable_exists() -> None:
    assert ag.Function.vjp is ag.Function.backward
    results = []
    for lib in (ag, torch):

        class Vjp(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 3

            @staticmethod
            @once_differentiable(lib)
            def vjp(ctx: Any, g: Any) -> Any:
                return g * 3

        x = lib.tensor([1.0], requires_grad=True)
        backward(lib, Vjp.apply(x).sum())
        results.append(x.grad.tolist())
    assert results[0] == results[1] == [3.0]


# ------------------------------------------------------------------------------ the rest of the surface
def test_wrong_number_of_gradients_is_torchs_error() -> None:
    def scenario(lib: Any) -> Any:
        class TooMany(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g, g

        backward(lib, TooMany.apply(lib.tensor([1.0], requires_grad=True)).sum())

    assert_same_error(scenario, "returned an incorrect number of gradients (expected 1, got 2)")


def _mixed(lib: Any, seen: list[Any]) -> type:
    """Outputs: a tensor, a string, a non-differentiable index and float, a tensor left unused."""

    class Mixed(base_class(lib)):  # type: ignore[misc]
        @staticmethod
        def forward(ctx: Any, x: Any, materialize: bool) -> Any:
            ctx.set_materialize_grads(materialize)
            index = x.argmax()
            flag = x * 0
            ctx.mark_non_differentiable(index, flag)
            return x * 2, "label", index, flag, x * 3

        @staticmethod
        def backward(ctx: Any, g: Any, g_label: Any, g_index: Any, g_flag: Any, g3: Any) -> Any:
            seen.append([None if t is None else t.tolist() for t in (g, g_label, g_index, g_flag, g3)])
            return g * 2, None

    return Mixed


def test_non_tensor_outputs_non_differentiable_zeros_and_unmaterialized_nones() -> None:
    results = []
    for lib in (ag, torch):
        seen: list[Any] = []
        for materialize in (True, False):
            x = lib.tensor([1.0, 5.0], requires_grad=True)
            a, label, index, flag, _ = _mixed(lib, seen).apply(x, materialize)
            assert label == "label" and not index.requires_grad and not flag.requires_grad
            backward(lib, a.sum())
        results.append(seen)
    assert results[0] == results[1]
    assert results[0] == [[[1.0, 1.0], None, 0, [0.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], None, None, None, None]]


def test_a_function_used_under_no_grad_records_nothing_and_detaches_a_returned_input() -> None:
    results = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            y = _returns(lib, lambda t: t).apply(x)
        results.append((y.requires_grad, y.grad_fn, y._base is x))
    assert results[0] == results[1] == (False, None, False)


def test_an_input_returned_twice_gives_two_views_and_they_are_multi_output() -> None:
    def build(lib: Any) -> type:
        class Twice(base_class(lib)):  # type: ignore[misc]
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x, x

            @staticmethod
            def backward(ctx: Any, g: Any, h: Any) -> Any:
                return g + h * 10

        return Twice

    results = []
    for lib in (ag, torch):
        leaf = lib.tensor([1.0, 2.0], requires_grad=True)
        x = leaf * 1
        a, b = build(lib).apply(x)
        backward(lib, (a + b).sum())
        results.append((a is b, a._base is x, b._base is x, (a.output_nr, b.output_nr), leaf.grad.tolist()))
    assert results[0] == results[1] == (False, True, True, (0, 1), [11.0, 11.0])

    def scenario(lib: Any) -> Any:
        a, _ = build(lib).apply(lib.tensor([1.0, 2.0], requires_grad=True) * 1)
        return a.mul_(2)

    assert_same_error(scenario, MULTI_OUTPUT)
