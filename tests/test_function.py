"""Custom Functions (``aiograd.Function``): a table of Functions checked by the op-test factory
against the same Functions written for ``torch.autograd.Function``, then the ctx API, PyTorch's
error messages, ``once_differentiable`` and async backward."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from helpers import gather, requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd._core._saved import ERR_BACKWARD_TWICE
from aiograd.function import Function, FunctionCtx, once_differentiable
from aiograd.testing import gradcheck, gradgradcheck

# Public-API tests: each async test runs on asyncio, uvloop and trio through aiograd's pytest
# plugin, which also fails a test that leaves aiograd work behind (docs/testing.md).
pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "trio"])  # the public API: trio too


@contextlib.contextmanager
def raises_exactly(exc_type: type[BaseException], message: str) -> Iterator[None]:
    """The error's message is exactly ``message`` (the engine may add a note naming the node)."""
    with pytest.raises(exc_type) as info:
        yield
    assert str(info.value) == message


def torch_message(fn: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as info:
        fn()
    return str(info.value)


# ---------------------------------------------------------------------------------------------
# One definition, two libraries: ``build(lib, base, once)`` returns a Function class for aiograd
# (``lib`` = ag) or torch. Class names are what grad_fn names are made of, so they match.


def both(build: Callable[..., type]) -> dict[Any, type]:
    made = {ag: build(ag, Function, once_differentiable)}
    if torch is not None:
        made[torch] = build(torch, torch.autograd.Function, torch.autograd.function.once_differentiable)
    return made


def scale_in_place(lib: Any, x: Any, k: float) -> None:
    """What an in-place forward does to its input (aiograd: on the array, the version is bumped
    by ``mark_dirty``)."""
    if lib is ag:
        x.data *= k
    else:
        x.mul_(k)


def _exp(lib, base, once):
    class Exp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)  # an output: saved without a reference cycle
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    return Exp


def _async_exp(lib, base, once):
    class AsyncExp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        if lib is ag:

            @staticmethod
            async def backward(ctx, grad):
                await asyncio.sleep(0)
                (y,) = ctx.saved_tensors
                return grad * y

        else:

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

    return AsyncExp


def _scale(lib, base, once):
    class Scale(base):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k  # any attribute
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None

    return Scale


def _scale_kw(lib, base, once):
    class ScaleKw(base):
        @staticmethod
        def forward(ctx, x, k=2.0):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None  # k counts as an input, even when passed by keyword

    return ScaleKw


def _mul(lib, base, once):
    class Mul(base):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)  # inputs
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            gx = grad * y if ctx.needs_input_grad[0] else None
            gy = grad * x if ctx.needs_input_grad[1] else None
            return gx, gy

    return Mul


def _matmul(lib, base, once):
    class MatMul(base):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad @ b.t(), a.t() @ grad

    return MatMul


def _sin_and_square(lib, base, once):
    class SinAndSquare(base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin(), x * x

        @staticmethod
        def backward(ctx, grad_sin, grad_square):
            (x,) = ctx.saved_tensors
            return grad_sin * x.cos() + grad_square * 2.0 * x

    return SinAndSquare


def _broadcast_add(lib, base, once):
    class BroadcastAdd(base):
        @staticmethod
        def forward(ctx, x, b):
            return x + b

        @staticmethod
        def backward(ctx, grad):
            return grad, grad  # b's gradient comes back broadcast: summed to b's shape

    return BroadcastAdd


def _cast_grad(lib, base, once):
    class CastGrad(base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return (grad * 2.0 * x).to(lib.float32)  # cast back to the input's dtype

    return CastGrad


def _trailing_nones(lib, base, once):
    class TrailingNones(base):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0, None, None

    return TrailingNones


def _dirty(lib, base, once):
    class Dirty(base):
        @staticmethod
        def forward(ctx, x):
            scale_in_place(lib, x, 3.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3.0

    return Dirty


def _identity(lib, base, once):
    class Identity(base):
        @staticmethod
        def forward(ctx, x):
            return x  # returned as a new tensor sharing the input's data

        @staticmethod
        def backward(ctx, grad):
            return grad

    return Identity


def _non_diff(lib, base, once):
    class NonDiff(base):
        @staticmethod
        def forward(ctx, x):
            a, b = x + 1.0, x * 2.0
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_b * 2.0

    return NonDiff


def _once_exp(lib, base, once):
    class OnceExp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @once
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    return OnceExp


def _async_once_exp(lib, base, once):
    class AsyncOnceExp(base):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        if lib is ag:

            @staticmethod
            @once
            async def backward(ctx, grad):
                await asyncio.sleep(0)
                assert not ag.is_grad_enabled()
                (y,) = ctx.saved_tensors
                return grad * y

        else:

            @staticmethod
            @once
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

    return AsyncOnceExp


EXP = both(_exp)
ASYNC_EXP = both(_async_exp)
SCALE = both(_scale)
SCALE_KW = both(_scale_kw)
MUL = both(_mul)
MATMUL = both(_matmul)
SIN_AND_SQUARE = both(_sin_and_square)
BROADCAST_ADD = both(_broadcast_add)
CAST_GRAD = both(_cast_grad)
TRAILING_NONES = both(_trailing_nones)
DIRTY = both(_dirty)
IDENTITY = both(_identity)
NON_DIFF = both(_non_diff)
ONCE_EXP = both(_once_exp)
ASYNC_ONCE_EXP = both(_async_once_exp)

SPECS = [
    OpSpec("exp", lambda lib, x: EXP[lib].apply(x), grad_fn="ExpBackward"),
    OpSpec("async_exp", lambda lib, x: ASYNC_EXP[lib].apply(x), grad_fn="AsyncExpBackward"),
    OpSpec("scale_constant_arg", lambda lib, x: SCALE[lib].apply(x, 2.5), grad_fn="ScaleBackward"),
    OpSpec("scale_keyword_arg", lambda lib, x: SCALE_KW[lib].apply(x, k=-1.5), grad_fn="ScaleKwBackward"),
    OpSpec("scale_default_arg", lambda lib, x: SCALE_KW[lib].apply(x), grad_fn="ScaleKwBackward"),
    OpSpec("mul_saves_inputs", lambda lib, x, y: MUL[lib].apply(x, y), inputs=((2, 3), (2, 3)), grad_fn="MulBackward"),
    OpSpec("matmul", lambda lib, a, b: MATMUL[lib].apply(a, b), inputs=((2, 3), (3, 4)), grad_fn="MatMulBackward"),
    OpSpec(
        "two_outputs_both_used",
        lambda lib, x: (lambda s, q: s * 3.0 + q)(*SIN_AND_SQUARE[lib].apply(x)),
    ),
    # The unused output's gradient reaches backward as zeros (materialized grads).
    OpSpec("two_outputs_one_used", lambda lib, x: SIN_AND_SQUARE[lib].apply(x)[1], grad_fn="SinAndSquareBackward"),
    OpSpec(
        "broadcast_grad_summed",
        lambda lib, x, b: BROADCAST_ADD[lib].apply(x, b),
        inputs=((2, 3), (3,)),
        grad_fn="BroadcastAddBackward",
    ),
    OpSpec("float32_grad_cast_to_float64", lambda lib, x: CAST_GRAD[lib].apply(x), grad_fn="CastGradBackward", rtol=1e-6, gradgrad=False),
    OpSpec("extra_trailing_nones", lambda lib, x: TRAILING_NONES[lib].apply(x), grad_fn="TrailingNonesBackward"),
    OpSpec("mark_dirty_in_place", lambda lib, x: DIRTY[lib].apply(x * 1.0), grad_fn="DirtyBackward"),
    OpSpec("returns_its_input", lambda lib, x: IDENTITY[lib].apply(x), grad_fn="IdentityBackward"),
    OpSpec("non_differentiable_output", lambda lib, x: NON_DIFF[lib].apply(x)[1], grad_fn="NonDiffBackward"),
    OpSpec("once_differentiable", lambda lib, x: ONCE_EXP[lib].apply(x), grad_fn="OnceExpBackward", gradgrad=False),
    OpSpec(
        "async_once_differentiable",
        lambda lib, x: ASYNC_ONCE_EXP[lib].apply(x),
        grad_fn="AsyncOnceExpBackward",
        gradgrad=False,
    ),
    # A Function inside ordinary ops, its output used twice.
    OpSpec("composed", lambda lib, x: (EXP[lib].apply(x.sin()) * 2.0) * EXP[lib].apply(x.sin())),
]

globals().update(make_op_tests(SPECS))


# ---------------------------------------------------------------------------------------------
# The node: one class per Function, its name, edges and the ctx that it is.


def test_node_class_is_made_once_per_function_and_named_like_torch():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    a, b = EXP[ag].apply(x), EXP[ag].apply(x)
    assert type(a.grad_fn) is type(b.grad_fn) is EXP[ag]._backward_cls
    assert a.grad_fn is not b.grad_fn
    assert a.grad_fn.name() == "ExpBackward"
    assert repr(a.grad_fn).startswith("<ExpBackward object at ")
    assert isinstance(a.grad_fn, ag.Node) and isinstance(a.grad_fn, FunctionCtx)
    assert not a.is_leaf and a.requires_grad and a.output_nr == 0


def test_subclass_of_a_function_gets_its_own_node_class():
    class MyExp(EXP[ag]):
        pass

    x = ag.tensor([1.0], requires_grad=True)
    assert MyExp.apply(x).grad_fn.name() == "MyExpBackward"
    assert MyExp._backward_cls is not EXP[ag]._backward_cls


def _mixed_args(lib, base, once):
    class Mixed(base):
        @staticmethod
        def forward(ctx, x, k, y, z):
            ctx.seen = ctx.needs_input_grad
            return x * k + y + z

        @staticmethod
        def backward(ctx, grad):
            return grad, None, grad, grad

    return Mixed


MIXED = both(_mixed_args)


@requires_torch
async def test_next_functions_have_one_edge_per_tensor_input_like_torch():
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0])  # no grad: no edge
        z = (lib.tensor([1.0, 1.0], requires_grad=True) * 2.0)  # a non-leaf
        out = MIXED[lib].apply(x, 2.0, y, z)
        fns = out.grad_fn.next_functions
        names = [None if f is None else f.name().removeprefix("torch::autograd::") for f, _ in fns]
        return names, [nr for _, nr in fns], out.grad_fn.seen

    assert run(ag) == run(torch) == (["AccumulateGrad", None, "MulBackward0"], [0, 0, 0], (True, False, False, True))


async def test_ctx_is_the_grad_fn_and_keeps_attributes():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = SCALE[ag].apply(x, 4.0)
    assert y.grad_fn.k == 4.0
    assert y.grad_fn.needs_input_grad == (True, False)
    assert y.grad_fn.saved_tensors == ()
    await y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


@requires_torch
async def test_backward_gets_one_gradient_per_output_like_torch():
    """Non-tensor outputs (and None) get None; a tensor output that received nothing gets zeros;
    integer outputs do not require grad and get integer zeros."""

    def build(lib, base, once):
        class Outputs(base):
            @staticmethod
            def forward(ctx, x):
                return x * 2.0, 3, None, x.argmax(), x * 3.0

            @staticmethod
            def backward(ctx, *grads):
                ctx.log = [None if g is None else (tuple(g.shape), str(g.dtype).removeprefix("torch.")) for g in grads]
                return grads[0] * 2.0

        return Outputs

    made = both(build)
    logs = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 5.0, 2.0], dtype=lib.float64, requires_grad=True)
        a, three, none, index, b = made[lib].apply(x)
        assert (three, none) == (3, None)
        assert not index.requires_grad and index.grad_fn is None
        assert b.requires_grad and (b.output_nr, a.output_nr) == (4, 0)
        result = a.sum().backward()
        if lib is ag:
            await result
        logs.append(a.grad_fn.log)
    assert logs[0] == logs[1] == [((3,), "float64"), None, None, ((), "int64"), ((3,), "float64")]


async def test_a_single_output_is_returned_bare_and_a_list_is_not_an_output():
    class AsList(Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2.0]

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = ag.tensor([1.0], requires_grad=True)
    assert isinstance(EXP[ag].apply(x), ag.Tensor)
    out = AsList.apply(x)
    assert isinstance(out, list) and out[0].grad_fn is None  # as in torch: only tuples unpack


async def test_forward_runs_under_no_grad_and_backward_under_create_graph():
    modes: list[tuple[str, bool]] = []

    class Log(Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(("forward", ag.is_grad_enabled()))
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            modes.append(("backward", ag.is_grad_enabled()))
            return grad * 2.0

    x = ag.tensor([1.0], requires_grad=True)
    await Log.apply(x).sum().backward()
    await ag.grad(Log.apply(x).sum(), x, create_graph=True)
    assert modes == [("forward", False), ("backward", False), ("forward", False), ("backward", True)]


async def test_under_no_grad_nothing_is_recorded():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.no_grad():
        y = EXP[ag].apply(x)
        same = IDENTITY[ag].apply(x)
    assert y.grad_fn is None and not y.requires_grad
    assert same is not x and not same.requires_grad and same.data is x.data


async def test_a_returned_input_is_a_new_tensor_sharing_data_and_version():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = IDENTITY[ag].apply(x)
    assert y is not x and y.data is x.data and y._vc is x._vc
    assert y.grad_fn.name() == "IdentityBackward" and x.grad_fn is None


# ---------------------------------------------------------------------------------------------
# Validation of backward's results: PyTorch's messages, checked verbatim and against torch.


def _returns(name: str, result: Callable[[Any, Any], Any], n_inputs: int = 1):
    """A Function ``name`` of ``n_inputs`` inputs whose backward returns ``result(lib, grad)``."""

    def build(lib, base, once):
        def forward(ctx, *args):
            return args[0] * 1.0

        def backward(ctx, grad):
            return result(lib, grad)

        return type(name, (base,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})

    return both(build)


async def _ag_error(fn: Any, *args: Any) -> str:
    with pytest.raises(RuntimeError) as info:
        await fn.apply(*args).sum().backward()
    return str(info.value)


def _torch_error(fn: Any, *args: Any) -> str:
    return torch_message(lambda: fn.apply(*args).sum().backward())


@pytest.mark.parametrize(
    "name, result, args, message",
    [
        (
            "F",
            lambda lib, g: g,
            lambda lib: (lib.tensor([1.0], requires_grad=True), lib.tensor([1.0], requires_grad=True)),
            "function FBackward returned an incorrect number of gradients (expected 2, got 1)",
        ),
        (
            "G",
            lambda lib, g: (g, g),
            lambda lib: (lib.tensor([1.0], requires_grad=True),),
            "function GBackward returned an incorrect number of gradients (expected 1, got 2)",
        ),
        (
            "H",
            lambda lib, g: (g, 1.0),
            lambda lib: (lib.tensor([1.0], requires_grad=True), 2.0),
            "function HBackward returned a gradient different than None at position 2, but the "
            "corresponding forward input was not a Variable",
        ),
        (
            "K",
            lambda lib, g: (g, None, g.sum(0)),
            lambda lib: (lib.zeros(2, 3), 2.0, lib.zeros(2, 3, requires_grad=True)),
            "Function KBackward returned an invalid gradient at index 1 - got [3] but expected "
            "shape compatible with [2, 3]",
        ),
        (
            "L",
            lambda lib, g: g.sum(),
            lambda lib: (lib.zeros(2, 3, requires_grad=True),),
            "Function LBackward returned an invalid gradient at index 0 - got [] but expected "
            "shape compatible with [2, 3]",
        ),
        (
            "M",
            lambda lib, g: 3.0,
            lambda lib: (lib.zeros(2, requires_grad=True),),
            "expected Variable or None (got float)",
        ),
        (
            "N",
            lambda lib, g: [g],
            lambda lib: (lib.zeros(2, requires_grad=True),),
            "expected Variable or None (got list)",
        ),
    ],
    ids=["too_few", "too_many", "grad_for_a_constant", "bad_shape", "bad_shape_scalar", "not_a_tensor", "a_list"],
)
async def test_backward_result_errors(name, result, args, message):
    made = _returns(name, result)
    assert await _ag_error(made[ag], *args(ag)) == message
    if torch is not None:
        assert _torch_error(made[torch], *args(torch)) == message


async def test_errors_also_come_from_async_backward():
    class F(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        async def backward(ctx, grad):
            await asyncio.sleep(0)
            return grad

    x = ag.tensor([1.0], requires_grad=True)
    with raises_exactly(RuntimeError, "function FBackward returned an incorrect number of gradients (expected 2, got 1)"):
        await F.apply(x, x).sum().backward()


@requires_torch
async def test_a_grad_for_an_input_that_needs_none_is_ignored_whatever_its_shape():
    made = _returns("Ignored", lambda lib, g: (g, lib.ones(7)))
    for lib in (ag, torch):
        x, y = lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([3.0, 4.0])
        out = made[lib].apply(x, y).sum().backward()
        if lib is ag:
            await out
        assert x.grad.tolist() == [1.0, 1.0] and y.grad is None


@requires_torch
@pytest.mark.parametrize("grad_dtype", ["float32", "int64"])
async def test_grad_dtype_is_cast_to_the_input_dtype_like_torch(grad_dtype):
    made = _returns("Cast", lambda lib, g: lib.ones(4, 2, dtype=getattr(lib, grad_dtype)))
    grads = []
    for lib in (ag, torch):
        x = lib.zeros(2, dtype=lib.float64, requires_grad=True)
        out = made[lib].apply(x).sum().backward()  # the (4, 2) gradient is also summed to (2,)
        if lib is ag:
            await out
        grads.append((x.grad.tolist(), str(x.grad.dtype).removeprefix("torch.")))
    assert grads[0] == grads[1] == ([4.0, 4.0], "float64")


# ---------------------------------------------------------------------------------------------
# ctx: materialize_grads, mark_non_differentiable, needs_input_grad.


@pytest.mark.parametrize("materialize", [True, False])
async def test_set_materialize_grads(materialize):
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(None if g2 is None else g2.tolist())
            return g1 * 2.0 if g1 is not None else None

    x = ag.tensor([1.0, 2.0], requires_grad=True)
    a, _ = Two.apply(x)
    await a.sum().backward()
    assert seen == ([[0.0, 0.0]] if materialize else [None])
    assert x.grad.tolist() == [2.0, 2.0]


async def test_set_materialize_grads_false_gives_none_for_the_only_output_used():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            assert g1 is None
            return g2 * 3.0

    x = ag.tensor([1.0], requires_grad=True)
    await Two.apply(x)[1].sum().backward()
    assert x.grad.tolist() == [3.0]


@pytest.mark.parametrize("lib", [ag, pytest.param(torch, marks=requires_torch)], ids=["aiograd", "torch"])
async def test_mark_non_differentiable_mixed(lib):
    """torch's test_mark_non_differentiable_mixed, run on both libraries."""
    seen = []

    def build(lib, base, once):
        class MyFunction(base):
            @staticmethod
            def forward(ctx, input):
                a = input + 1
                b = input + 2
                ctx.mark_non_differentiable(a)
                return a, b

            @staticmethod
            def backward(ctx, grad_a, grad_b):
                seen.append(((grad_a.data == 0).all().item(), (grad_b.data == 1).all().item()))
                return grad_b

        return MyFunction

    x = lib.tensor(np.random.default_rng(0).standard_normal((5, 5)), requires_grad=True)
    a, b = build(lib, Function if lib is ag else torch.autograd.Function, None).apply(x)
    assert not a.requires_grad and a.grad_fn is None
    assert b.requires_grad
    out = b.sum().backward()
    if lib is ag:
        await out
    assert seen == [(True, True)]
    assert x.grad.tolist() == np.ones((5, 5)).tolist()


async def test_mark_non_differentiable_output_only_never_runs_backward():
    """torch's test_mark_non_differentiable_none: the node is not reached."""

    class MyFunction(Function):
        @staticmethod
        def forward(ctx, input):
            output = input.clone()
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            raise AssertionError("not reached")

    x = ag.tensor(np.ones((5, 5)), requires_grad=True)
    r = MyFunction.apply(x * x)
    await (r * x).sum().backward()
    assert x.grad.tolist() == (np.ones((5, 5))).tolist()


async def test_mark_non_differentiable_on_a_returned_input_detaches_it():
    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = ag.tensor([1.0], requires_grad=True)
    y = Keep.apply(x)
    assert y is not x and not y.requires_grad and y.data is x.data
    assert x.requires_grad  # the input itself is unchanged


async def test_mark_arguments_must_be_tensors():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x, 3)
            return x * 1.0

    with raises_exactly(TypeError, "mark_non_differentiable can only accept variables, but argument 1 is of type int"):
        Bad.apply(ag.tensor([1.0], requires_grad=True))


async def test_needs_input_grad_in_forward_and_backward():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, k, y):
            seen.append(("forward", ctx.needs_input_grad))
            return x * y * k

        @staticmethod
        def backward(ctx, grad):
            seen.append(("backward", ctx.needs_input_grad))
            return grad if ctx.needs_input_grad[0] else None, None, None

    x, y = ag.tensor([1.0], requires_grad=True), ag.tensor([2.0])
    await Probe.apply(x, 2.0, y).sum().backward()
    with ag.no_grad():
        Probe.apply(x, 2.0, y)  # reflects requires_grad even when nothing is recorded
    assert seen == [
        ("forward", (True, False, False)),
        ("backward", (True, False, False)),
        ("forward", (True, False, False)),
    ]


async def test_needs_input_grad_lets_backward_skip_work():
    x, y = ag.tensor([1.0, 2.0]), ag.tensor([3.0, 4.0], requires_grad=True)
    await MUL[ag].apply(x, y).sum().backward()
    assert y.grad.tolist() == [1.0, 2.0]


# ---------------------------------------------------------------------------------------------
# Saved tensors: inputs as themselves, outputs rebuilt (no cycle), freed after backward, versions.


async def test_saved_input_is_the_tensor_and_saved_output_is_rebuilt():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = MUL[ag].apply(x, x)
    assert y.grad_fn.saved_tensors[0] is x
    e = EXP[ag].apply(x)
    (saved,) = e.grad_fn.saved_tensors
    assert saved is not e and saved.data is e.data and saved.grad_fn is e.grad_fn


def test_saving_an_output_makes_no_reference_cycle():
    gc.disable()
    try:
        x = ag.tensor([1.0, 2.0], requires_grad=True)
        y = EXP[ag].apply(x)
        node = weakref.ref(y.grad_fn)
        out = weakref.ref(y)
        del y
        assert out() is None and node() is None  # freed by reference counting alone
    finally:
        gc.enable()


async def test_save_for_backward_accepts_none_and_rejects_other_objects():
    class SaveNone(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x)
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            none, x = ctx.saved_tensors
            assert none is None
            return grad * 2.0

    class SaveInt(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2.0

    x = ag.tensor([1.0], requires_grad=True)
    await SaveNone.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0]
    with raises_exactly(TypeError, "save_for_backward can only save variables, but argument 1 is of type int"):
        SaveInt.apply(x)


async def test_saved_tensors_are_freed_after_backward_unless_retained():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = EXP[ag].apply(x)
    await y.sum().backward(retain_graph=True)
    await y.sum().backward()
    np.testing.assert_allclose(x.grad.data, 2 * np.exp([1.0, 2.0]))
    with raises_exactly(RuntimeError, ERR_BACKWARD_TWICE):
        await y.sum().backward()
    with raises_exactly(RuntimeError, ERR_BACKWARD_TWICE):
        _ = y.grad_fn.saved_tensors


async def test_backward_twice_errors_when_backward_reads_saved_tensors_even_if_none_were_saved():
    """As in torch: reading ``ctx.saved_tensors`` after they were freed is the error; a backward
    that reads nothing can run twice."""

    class ReadsNothingSaved(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            assert ctx.saved_tensors == ()
            return grad * 2.0

    x = ag.tensor([1.0], requires_grad=True)
    y = ReadsNothingSaved.apply(x)
    await y.sum().backward()
    with raises_exactly(RuntimeError, ERR_BACKWARD_TWICE):
        await y.sum().backward()
    z = SCALE[ag].apply(x, 2.0)  # reads ctx.k only
    await z.sum().backward()
    await z.sum().backward()
    assert x.grad.tolist() == [6.0]


def _version_message(kind: str, shape: str, which: str, version: int, expected: int) -> str:
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [aiograd.{kind} [{shape}]]{which} is at version {version}; expected version "
        f"{expected} instead. Hint: enable anomaly detection to find the operation that failed to "
        "compute its gradient, with aiograd.set_detect_anomaly(True, check_nan=False)."
    )


async def test_saved_output_modified_in_place_is_reported():
    x = ag.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = EXP[ag].apply(x)
    DIRTY[ag].apply(y)  # an in-place change of the saved output (version 1)
    assert y._version == 1 and y.grad_fn.name() == "DirtyBackward"
    with raises_exactly(
        RuntimeError, _version_message("DoubleTensor", "2, 3", ", which is output 0 of Exp,", 1, 0)
    ):
        await y.sum().backward()


async def test_saved_input_modified_in_place_is_reported():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = MUL[ag].apply(h, x)
    DIRTY[ag].apply(h)
    with raises_exactly(
        RuntimeError, _version_message("DoubleTensor", "2", ", which is output 0 of Dirty,", 1, 0)
    ):
        await y.sum().backward()


# ---------------------------------------------------------------------------------------------
# mark_dirty.


@requires_torch
async def test_mark_dirty_rebases_the_input_like_torch():
    results = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2.0
        saved_fn = h.grad_fn
        y = DIRTY[lib].apply(h)
        assert y is h and h.grad_fn is not saved_fn and h.grad_fn.name() == "DirtyBackward"
        out = (y * y).sum().backward()
        if lib is ag:
            await out
        results.append((h.tolist() if lib is ag else h.detach().tolist(), x.grad.tolist()))
    assert results[0] == results[1] == ([6.0, 12.0], [72.0, 144.0])


async def test_mark_dirty_bumps_the_version_even_without_a_graph():
    h = ag.tensor([1.0, 2.0])
    y = DIRTY[ag].apply(h)
    assert y is h and h._version == 1 and h.grad_fn is None and h.tolist() == [3.0, 6.0]


@pytest.mark.parametrize("lib", [ag, pytest.param(torch, marks=requires_torch)], ids=["aiograd", "torch"])
def test_mark_dirty_on_a_leaf_that_requires_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with raises_exactly(RuntimeError, "a leaf Variable that requires grad has been used in an in-place operation."):
        DIRTY[lib].apply(x)
    with ag.no_grad() if lib is ag else torch.no_grad():
        y = DIRTY[lib].apply(x)  # allowed under no_grad: a detached alias comes back
    assert y is not x and not y.requires_grad and x.grad_fn is None


@pytest.mark.parametrize("lib", [ag, pytest.param(torch, marks=requires_torch)], ids=["aiograd", "torch"])
def test_a_dirty_tensor_must_be_returned(lib):
    def build(lib, base, once):
        class NotReturned(base):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x * 1.0

        return NotReturned

    with raises_exactly(
        RuntimeError,
        "Some elements marked as dirty during the forward method were not returned as output. The "
        "inputs that are modified inplace must all be outputs of the Function.",
    ):
        build(lib, Function if lib is ag else torch.autograd.Function, None).apply(lib.ones(2))


def test_mark_dirty_on_a_non_input_warns():
    class NotAnInput(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2.0
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0

    # PyTorch 2.13's words (tests/test_function_checks.py compares them with torch's warning).
    with pytest.warns(UserWarning, match=r"^ctx.mark_dirty\(\) received a tensor that was not an input"):
        y = NotAnInput.apply(ag.tensor([1.0], requires_grad=True))
    assert y.grad_fn.name() == "NotAnInputBackward"


# ---------------------------------------------------------------------------------------------
# Higher order: differentiable backward, once_differentiable.


@requires_torch
async def test_differentiable_backward_gives_second_derivatives_like_torch():
    x = ag.tensor([0.5, -1.0, 2.0], requires_grad=True)
    tx = torch.tensor(x.data, requires_grad=True)
    (g,) = await ag.grad(SIN_AND_SQUARE[ag].apply(x)[0].sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(SIN_AND_SQUARE[torch].apply(tx)[0].sum(), tx, create_graph=True)
    (gg,) = await ag.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gg.data, tgg.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.data, -np.sin(x.data), rtol=1e-12)


async def test_gradgradcheck_through_a_saved_output():
    assert await gradgradcheck(lambda x: EXP[ag].apply(x) * 2.0, [ag.tensor([0.1, -0.3], requires_grad=True)])


ONCE_ERROR = "trying to differentiate twice a function that was marked with @once_differentiable"


@pytest.mark.parametrize("fn", [ONCE_EXP, ASYNC_ONCE_EXP], ids=["sync", "async"])
async def test_once_differentiable_raises_when_differentiated_twice(fn):
    x = ag.tensor([0.5, 1.0], requires_grad=True)
    u = ag.ones(2, requires_grad=True)  # a grad_output that requires grad: the result must too
    (g,) = await ag.grad(fn[ag].apply(x), x, u, create_graph=True)
    np.testing.assert_allclose(g.data, np.exp(x.data))
    assert g.requires_grad and g.grad_fn.name() == "Error"
    with raises_exactly(RuntimeError, ONCE_ERROR):
        await g.sum().backward()
    # As in torch, the error node leads nowhere: grad() with respect to the inputs finds no path.
    assert await ag.grad(g.sum(), [x, u], allow_unused=True) == (None, None)


@requires_torch
async def test_once_differentiable_matches_torch_when_grad_outputs_need_no_grad():
    """torch gives the results an error node only if some grad_output requires grad."""
    x = ag.tensor([0.5, 1.0], requires_grad=True)
    tx = torch.tensor(x.data, requires_grad=True)
    (g,) = await ag.grad(ONCE_EXP[ag].apply(x).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(ONCE_EXP[torch].apply(tx).sum(), tx, create_graph=True)
    assert g.requires_grad == tg.requires_grad is False
    tu = torch.ones(2, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(ONCE_EXP[torch].apply(tx), tx, tu, create_graph=True)
    assert torch_message(lambda: tg.sum().backward()) == ONCE_ERROR


async def test_once_differentiable_backward_runs_without_grad_and_may_use_numpy():
    modes = []

    class NumpyExp(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return ag.tensor(np.exp(x.data))

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            modes.append(ag.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return ag.tensor(grad.data * np.exp(x.data))

    x = ag.tensor([0.1, 0.2], requires_grad=True)
    assert await gradcheck(NumpyExp.apply, [x])
    await ag.grad(NumpyExp.apply(x), x, ag.ones(2, requires_grad=True), create_graph=True)
    assert set(modes) == {False}
    assert NumpyExp.backward.__name__ == "backward"  # functools.wraps


# ---------------------------------------------------------------------------------------------
# Async backward.


async def test_async_backward_node_is_async_and_sync_is_not():
    x = ag.tensor([1.0], requires_grad=True)
    assert ASYNC_EXP[ag].apply(x).grad_fn.is_async is True
    assert ASYNC_ONCE_EXP[ag].apply(x).grad_fn.is_async is True
    assert EXP[ag].apply(x).grad_fn.is_async is False


# Not on trio: the order asserted is of one loop's turns, and under trio the log's
# "plain done" is written by the trio task after the bridge hands the result back.
@pytest.mark.aiograd(backends=["asyncio", "uvloop"])
async def test_async_backward_interleaves_with_other_backward_calls():
    log: list[str] = []

    class Slow(Function):
        @staticmethod
        def forward(ctx, x, tag):
            ctx.tag = tag
            return x * 2.0

        @staticmethod
        async def backward(ctx, grad):
            log.append(f"start {ctx.tag}")
            await asyncio.sleep(0)
            log.append(f"end {ctx.tag}")
            return grad * 2.0, None

    shared = ag.tensor([1.0, 2.0], requires_grad=True)
    own = [ag.tensor([1.0, 2.0], requires_grad=True) for _ in range(3)]
    losses = [(Slow.apply(x, i) + shared * float(i)).sum() for i, x in enumerate(own)]
    plain = ag.tensor([1.0], requires_grad=True)

    async def sync_backward() -> None:
        await (plain * 5.0).sum().backward()
        log.append("plain done")

    await gather(*(loss.backward() for loss in losses), sync_backward())
    # Every async backward is suspended in its await while the others (and a plain one) run.
    assert log[:4] == ["start 0", "start 1", "start 2", "plain done"]
    assert sorted(log[4:]) == ["end 0", "end 1", "end 2"]
    assert all(x.grad.tolist() == [2.0, 2.0] for x in own)
    assert shared.grad.tolist() == [3.0, 3.0] and plain.grad.tolist() == [5.0]


async def test_concurrent_async_backward_keeps_each_calls_grad_mode():
    modes: dict[str, list[bool]] = {"plain": [], "create_graph": []}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, tag):
            ctx.tag = tag
            return x * 2.0

        @staticmethod
        async def backward(ctx, grad):
            modes[ctx.tag].append(ag.is_grad_enabled())
            await asyncio.sleep(0)
            modes[ctx.tag].append(ag.is_grad_enabled())
            return grad * 2.0, None

    x = ag.tensor([1.0], requires_grad=True)
    a = Probe.apply(x, "plain").sum()
    b = Probe.apply(x, "create_graph").sum()
    await gather(ag.grad(a, x), ag.grad(b, x, create_graph=True))
    assert modes == {"plain": [False, False], "create_graph": [True, True]}


async def test_async_backward_is_differentiable_under_create_graph():
    x = ag.tensor([0.3, -0.7], requires_grad=True)
    (g,) = await ag.grad(ASYNC_EXP[ag].apply(x).sum(), x, create_graph=True)
    (gg,) = await ag.grad(g.sum(), x)
    np.testing.assert_allclose(gg.data, np.exp(x.data))


async def test_error_in_async_backward_fails_only_its_own_backward():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        async def backward(ctx, grad):
            await asyncio.sleep(0)
            raise ValueError("boom")

    x = ag.tensor([1.0], requires_grad=True)
    ok = ASYNC_EXP[ag].apply(x).sum()
    results = await gather(Boom.apply(x).sum().backward(), ok.backward(), return_exceptions=True)
    assert isinstance(results[0], ValueError) and str(results[0]) == "boom"
    assert results[1] is None
    np.testing.assert_allclose(x.grad.data, np.exp([1.0]))


# Not on trio: the node is called outside the engine, so its asyncio coroutine runs in the
# test's own task.
@pytest.mark.aiograd(backends=["asyncio", "uvloop"])
async def test_calling_an_async_node_directly_returns_an_awaitable():
    x = ag.tensor([0.0, 1.0], requires_grad=True)
    y = ASYNC_EXP[ag].apply(x)
    grad = await y.grad_fn(ag.ones(2))
    np.testing.assert_allclose(grad.data, np.exp(x.data))
    z = EXP[ag].apply(x)
    np.testing.assert_allclose(z.grad_fn(ag.ones(2)).data, np.exp(x.data))


async def test_sync_backward_returning_a_coroutine_is_an_error():
    async def late(ctx, grad):
        return grad

    class Late(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return late(ctx, grad)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the coroutine is closed, never left un-awaited
        with pytest.raises(TypeError, match="define it with `async def`"):
            await Late.apply(ag.tensor([1.0], requires_grad=True)).sum().backward()


async def test_hooks_on_function_outputs_and_nodes():
    log = []
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = ASYNC_EXP[ag].apply(x)
    y.register_hook(lambda g: log.append("tensor hook") or g * 2.0)
    y.grad_fn.register_prehook(lambda gs: log.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    await y.sum().backward()
    assert log == ["tensor hook", "pre", "post"]
    np.testing.assert_allclose(x.grad.data, 2 * np.exp([1.0, 2.0]))


# ---------------------------------------------------------------------------------------------
# The rest of the class API.


def test_vjp_is_another_name_for_backward_and_both_is_an_error():
    class ByVjp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def vjp(ctx, grad):
            return grad * 2.0

    class Both(ByVjp):
        @staticmethod
        def backward(ctx, grad):
            return grad

    x = ag.tensor([1.0], requires_grad=True)
    assert ByVjp.apply(x).grad_fn(ag.ones(1)).tolist() == [2.0]
    with raises_exactly(
        RuntimeError,
        "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
        "only implement one of them.",
    ):
        Both.apply(x).grad_fn(ag.ones(1))


async def test_missing_forward_or_backward():
    class NoForward(Function):
        pass

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

    x = ag.tensor([1.0], requires_grad=True)
    with raises_exactly(NotImplementedError, "You must implement the forward function for custom autograd.Function."):
        NoForward.apply(x)
    with raises_exactly(
        NotImplementedError,
        "You must implement either the backward or vjp method for your custom autograd.Function "
        "to use it with backward mode AD.",
    ):
        await NoBackward.apply(x).sum().backward()


def test_keyword_only_arguments_are_refused_like_torch():
    """``apply`` binds keywords to ``forward``'s positional parameters only, as PyTorch does (it
    used to pass keyword-only ones through as constants, which torch refuses)."""

    def build(lib, base, once):
        class KwOnly(base):
            @staticmethod
            def forward(ctx, x, *, k):
                return x * k

            @staticmethod
            def backward(ctx, grad):
                return grad * 3.0

        return KwOnly

    made = both(build)
    messages = []
    for lib in made:
        with pytest.raises(TypeError) as info:
            made[lib].apply(lib.tensor([1.0], requires_grad=True), k=3.0)
        messages.append(str(info.value))
    assert messages[0] == "forward() got an unexpected keyword argument 'k'"
    assert len(set(messages)) == 1


def test_public_exports():
    assert ag.Function is Function
    assert ag.function.__all__ == ["Function", "FunctionCtx", "once_differentiable"]


async def test_async_backward_may_run_a_nested_backward():
    """An async backward can await ``grad()`` of a graph it builds itself (reentrant backward)."""

    class ViaInnerGraph(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        async def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            with ag.enable_grad():
                inner = x.detach().requires_grad_()
                (local,) = await ag.grad(inner.sin().sum(), inner)
            assert not ag.is_grad_enabled()  # the outer backward's mode is back
            return grad * local

    x = ag.tensor([0.2, 1.1], requires_grad=True)
    assert await gradcheck(ViaInnerGraph.apply, [x])
    await ViaInnerGraph.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.data, np.cos(x.data))
