"""Activation checkpointing (``aiograd.utils.checkpoint``): gradients equal to the plain graph's
and to ``torch.utils.checkpoint``, for both variants (``use_reentrant=True``, and False built on
saved-tensor hooks), the graph a checkpoint leaves, random state on recomputation, PyTorch's
errors and warnings, nesting and concurrent backward calls, and what stays in memory.

``checkpoint``/``checkpoint_sequential`` here default to the reentrant variant (the tests written
for it); the tests of both pass ``use_reentrant=reentrant``."""

from __future__ import annotations

import asyncio
import functools
import gc
import re
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from helpers import gather, requires_torch, rng, to_torch, torch

import aiograd as ag
import aiograd.graph
import aiograd.nn.functional as F
from aiograd._api import _checkpoint as ckpt_impl
from aiograd._api._checkpoint import (
    ERR_CHECKPOINT_INVALID,
    ERR_NO_OUTPUT_REQUIRES_GRAD,
    WARN_NO_INPUT_REQUIRES_GRAD,
)
from aiograd._api._checkpoint_non_reentrant import DEBUG_TIP
from aiograd._base import _random
from aiograd.utils import checkpoint as ckpt

# Public-API tests: each async test runs on asyncio, uvloop and trio through aiograd's pytest
# plugin, which also fails a test that leaves aiograd work behind (docs/testing.md).
pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "trio"])  # the public API: trio too

checkpoint = functools.partial(ckpt.checkpoint, use_reentrant=True)
checkpoint_sequential = functools.partial(ckpt.checkpoint_sequential, use_reentrant=True)

if torch is not None:
    import torch.utils.checkpoint as torch_checkpoint

INVALID = (
    "When use_reentrant=True, aiograd.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument."
)


# ---------------------------------------------------------------------------------------------
# A small MLP whose parameters live in a closure: written once for either library.


def make_params(seed: int = 0, sizes: Sequence[int] = (5, 8, 8, 3)) -> list[np.ndarray]:
    r = rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append(r.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in))
        params.append(r.standard_normal(fan_out) * 0.1)
    return params


def layers(lib: Any, params: Sequence[Any]) -> list[Callable[[Any], Any]]:
    """One callable per linear layer (tanh after each but the last)."""
    linear = F.linear if lib is ag else torch.nn.functional.linear
    n = len(params) // 2
    out = []
    for i in range(n):
        w, b = params[2 * i], params[2 * i + 1]
        last = i == n - 1

        def layer(h: Any, w: Any = w, b: Any = b, last: bool = last) -> Any:
            z = linear(h, w, b)
            return z if last else z.tanh()

        out.append(layer)
    return out


def mlp(lib: Any, params: Sequence[Any]) -> Callable[[Any], Any]:
    fns = layers(lib, params)

    def run(h: Any) -> Any:
        for fn in fns:
            h = fn(h)
        return h

    return run


def ag_leaves(arrays: Sequence[np.ndarray]) -> list[ag.Tensor]:
    return [ag.tensor(a, requires_grad=True) for a in arrays]


def grads(tensors: Sequence[ag.Tensor]) -> list[np.ndarray]:
    return [t.grad.data for t in tensors]


def assert_grads_equal(got: Sequence[np.ndarray], want: Sequence[np.ndarray], atol: float = 0.0) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if atol == 0.0:
            np.testing.assert_array_equal(g, w, err_msg=f"gradient {i}")
        else:
            np.testing.assert_allclose(g, w, rtol=0, atol=atol, err_msg=f"gradient {i}")


def node_names(y: ag.Tensor) -> list[str]:
    """The names of the nodes reachable from ``y.grad_fn``, each once."""
    names = []
    seen = set()
    stack = [y.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name())
        stack.extend(fn for fn, _ in node.next_functions)
    return names


X = rng(1).standard_normal((4, 5))
G = rng(2).standard_normal((4, 3))


async def plain_mlp_grads() -> list[np.ndarray]:
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    await mlp(ag, params)(x).backward(ag.tensor(G))
    return grads([x, *params])


def torch_checkpointed_grads(run: Callable[[list[Any], Any], Any]) -> list[np.ndarray]:
    """``run(params, x)`` with torch leaves; backward with G; the gradients of x and params."""
    params = [to_torch(p) for p in make_params()]
    x = to_torch(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(params, x).backward(torch.tensor(G))
    return [t.grad.numpy() for t in [x, *params]]


# ---------------------------------------------------------------------------------------------
# Gradients


@pytest.mark.parametrize("reentrant", [True, False])
async def test_checkpointed_mlp_gradients_equal_plain(reentrant):
    want = await plain_mlp_grads()
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(mlp(ag, params), x, use_reentrant=reentrant)
    np.testing.assert_array_equal(y.data, mlp(ag, params)(x).data)
    await y.backward(ag.tensor(G))
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("reentrant", [True, False])
async def test_checkpointed_mlp_matches_torch(reentrant):
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    await checkpoint(mlp(ag, params), x, use_reentrant=reentrant).backward(ag.tensor(G))
    want = torch_checkpointed_grads(
        lambda p, x: torch_checkpoint.checkpoint(mlp(torch, p), x, use_reentrant=reentrant)
    )
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
async def test_checkpoint_of_one_layer_between_plain_layers(reentrant):
    """A checkpoint in the middle of a graph: gradients flow in from above and out below."""
    want = await plain_mlp_grads()
    params = ag_leaves(make_params())
    fns = layers(ag, params)
    x = ag.tensor(X, requires_grad=True)
    h = fns[0](x)
    h = checkpoint(fns[1], h, use_reentrant=reentrant)
    await fns[2](h).backward(ag.tensor(G))
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)


@pytest.mark.parametrize("segments", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("reentrant", [True, False])
async def test_checkpoint_sequential_equals_plain(segments, reentrant):
    arrays = make_params(3, sizes=(5, 7, 6, 7, 6, 7, 3))  # 6 layers: uneven splits for 4 and 5
    params = ag_leaves(arrays)
    x = ag.tensor(X, requires_grad=True)
    await mlp(ag, params)(x).backward(ag.tensor(G))
    want = grads([x, *params])

    params = ag_leaves(arrays)
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint_sequential(layers(ag, params), segments, x, use_reentrant=reentrant)
    # Each reentrant checkpointed segment is one node; the last segment is recorded as usual.
    assert node_names(y).count("CheckpointFunctionBackward") == (segments - 1 if reentrant else 0)
    assert y.grad_fn.name() == "AddmmBackward0"  # as torch names F.linear with a bias
    await y.backward(ag.tensor(G))
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)

    if torch is not None:
        tparams = [to_torch(a) for a in arrays]
        tx = to_torch(X)
        ty = torch_checkpoint.checkpoint_sequential(
            layers(torch, tparams), segments, tx, use_reentrant=reentrant
        )
        ty.backward(torch.tensor(G))
        assert_grads_equal(grads([x, *params]), [t.grad.numpy() for t in [tx, *tparams]], atol=1e-12)


async def test_checkpoint_sequential_takes_any_sequence_of_callables():
    params = ag_leaves(make_params(3, sizes=(5, 7, 6, 7, 6, 7, 3)))
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint_sequential(tuple(layers(ag, params)), 3, x)  # sizes 2, 2, then 2 plain
    assert node_names(y).count("CheckpointFunctionBackward") == 2
    names = node_names(checkpoint_sequential(iter(layers(ag, params)), 2, x))
    assert names.count("CheckpointFunctionBackward") == 1


# ---------------------------------------------------------------------------------------------
# Several outputs, non-tensor arguments and outputs


def multi(lib: Any, w: Any) -> Callable[..., Any]:
    def fn(a: Any, b: Any, scale: float, tag: str) -> tuple[Any, ...]:
        h = (a * b * scale).tanh()
        return h @ w, tag + "!", (a.sum() > 0), (a.exp() + b).sum(1)

    return fn


@pytest.mark.parametrize("reentrant", [True, False])
async def test_multiple_outputs_and_non_tensor_arguments(reentrant):
    r = rng(4)
    a0, b0, w0 = r.standard_normal((3, 4)), r.standard_normal((3, 4)), r.standard_normal((4, 2))
    g0, g3 = r.standard_normal((3, 2)), r.standard_normal(3)

    async def run(use_checkpoint: bool) -> tuple[list[np.ndarray], tuple[Any, ...]]:
        a, b, w = ag_leaves([a0, b0, w0])
        fn = multi(ag, w)
        out = checkpoint(fn, a, b, 2.0, "tag", use_reentrant=reentrant) if use_checkpoint else fn(a, b, 2.0, "tag")
        await ag.backward([out[0], out[3]], [ag.tensor(g0), ag.tensor(g3)])
        return grads([a, b, w]), out

    want, plain_out = await run(False)
    got, out = await run(True)
    assert isinstance(out, tuple) and len(out) == 4
    assert out[1] == "tag!"
    assert out[2].dtype == np.bool_ and not out[2].requires_grad
    if reentrant:
        assert out[0].grad_fn is out[3].grad_fn
        assert out[0].grad_fn.name() == "CheckpointFunctionBackward"
    else:  # the ordinary graph
        assert out[0].grad_fn.name() == plain_out[0].grad_fn.name()
    np.testing.assert_array_equal(out[0].data, plain_out[0].data)
    assert_grads_equal(got, want, atol=1e-12)

    if torch is not None:
        a, b, w = (to_torch(v) for v in (a0, b0, w0))
        tout = torch_checkpoint.checkpoint(multi(torch, w), a, b, 2.0, "tag", use_reentrant=reentrant)
        assert tout[1] == "tag!" and not tout[2].requires_grad
        torch.autograd.backward([tout[0], tout[3]], [torch.tensor(g0), torch.tensor(g3)])
        assert_grads_equal(got, [t.grad.numpy() for t in (a, b, w)], atol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
async def test_gradient_of_one_output_only(reentrant):
    """The outputs that get no gradient reach backward as zeros."""
    r = rng(5)
    a0, b0, w0 = r.standard_normal((3, 4)), r.standard_normal((3, 4)), r.standard_normal((4, 2))
    a, b, w = ag_leaves([a0, b0, w0])
    out = checkpoint(multi(ag, w), a, b, 0.5, "", use_reentrant=reentrant)
    await out[3].sum().backward()
    pa, pb, pw = ag_leaves([a0, b0, w0])
    await multi(ag, pw)(pa, pb, 0.5, "")[3].sum().backward()
    assert_grads_equal(grads([a, b]), grads([pa, pb]), atol=1e-12)
    if reentrant:
        np.testing.assert_array_equal(w.grad.data, np.zeros_like(w0))  # as torch: zeros, not None
    else:
        assert w.grad is None  # the ordinary graph: w is not reached
    if torch is not None:
        ta, tb, tw = (to_torch(v) for v in (a0, b0, w0))
        tout = torch_checkpoint.checkpoint(multi(torch, tw), ta, tb, 0.5, "", use_reentrant=reentrant)
        tout[3].sum().backward()
        assert (tw.grad is None) == (w.grad is None)


@pytest.mark.parametrize("reentrant", [True, False])
async def test_input_not_requiring_grad_and_returned_input(reentrant):
    x = ag.tensor(X, requires_grad=True)
    c = ag.tensor(X * 2)  # a tensor input that needs no gradient

    def fn(x: Any, c: Any) -> tuple[Any, Any]:
        return x, x * c

    out = checkpoint(fn, x, c, use_reentrant=reentrant)
    if reentrant:
        assert out[0] is not x and out[0].grad_fn.name() == "CheckpointFunctionBackward"
    else:
        assert out[0] is x  # as torch: the function's own result
    await (out[0].sum() + out[1].sum()).backward()
    np.testing.assert_array_equal(x.grad.data, 1 + X * 2)
    assert c.grad is None


# ---------------------------------------------------------------------------------------------
# What the forward keeps


@pytest.mark.aiograd(backends=["asyncio"])  # reference cycles and gc: not the loop's business
async def test_forward_keeps_no_graph_inside():
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    h = x * 1.0  # a non-leaf input
    intermediates: list[weakref.ref[Any]] = []

    def fn(h: Any) -> Any:
        z = F.linear(h, params[0], params[1])
        intermediates.append(weakref.ref(z))
        return mlp(ag, params[2:])(z.tanh())

    y = checkpoint(fn, h)
    gc.collect()
    assert all(ref() is None for ref in intermediates)  # nothing computed inside survives
    node = y.grad_fn
    assert node.name() == "CheckpointFunctionBackward"
    # Its next functions are the tensor inputs' only: not the parameters in the closure.
    assert node.next_functions == ((h.grad_fn, 0),)
    assert node.next_functions[0][0].next_functions[0][0].variable is x
    (saved,) = node.saved_tensors
    assert saved is h

    await y.backward(ag.tensor(G))
    assert len(intermediates) == 2  # recomputed once, in backward
    want = await plain_mlp_grads()
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)


@requires_torch
async def test_graph_shape_matches_torch():
    tx = to_torch(X)
    ty = torch_checkpoint.checkpoint(lambda h: (h * 2).tanh(), tx * 1.0, use_reentrant=True)
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(lambda h: (h * 2).tanh(), x * 1.0)
    assert y.grad_fn.name() == ty.grad_fn.name()
    assert [fn.name() for fn, _ in y.grad_fn.next_functions] == [
        fn.name() for fn, _ in ty.grad_fn.next_functions
    ]


@pytest.mark.parametrize("reentrant", [True, False])
async def test_in_place_change_of_an_input_is_caught(reentrant):
    x = ag.tensor(X, requires_grad=True)
    h = x * 1.0
    y = checkpoint(lambda h: h.tanh(), h, use_reentrant=reentrant)
    with ag.no_grad():
        h.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        await y.sum().backward()


@pytest.mark.parametrize("reentrant", [True, False])
async def test_retain_graph_recomputes_each_time(reentrant):
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(mlp(ag, params), x, use_reentrant=reentrant)
    await y.backward(ag.tensor(G), retain_graph=True)
    await y.backward(ag.tensor(G))
    want = await plain_mlp_grads()
    assert_grads_equal(grads([x, *params]), [2 * w for w in want], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Random state


def dropout_block(w: ag.Tensor) -> Callable[[Any], Any]:
    def fn(h: Any) -> Any:
        z = h @ w
        mask = (ag.rand_like(z) > 0.5).double()
        return (z * mask * 2.0).tanh()

    return fn


@pytest.mark.parametrize("reentrant", [True, False])
async def test_recomputation_replays_the_forward_randomness(reentrant):
    r = rng(6)
    x0, w0 = r.standard_normal((6, 4)), r.standard_normal((4, 5))

    async def run(mode: str) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
        x, w = ag_leaves([x0, w0])
        fn = dropout_block(w)
        ag.manual_seed(0)
        if mode == "plain":
            y = fn(x)
        else:
            y = checkpoint(fn, x, preserve_rng_state=(mode == "preserve"), use_reentrant=reentrant)
        before = ag.rand(8).data  # the caller's stream between forward and backward
        await y.sum().backward()
        after = ag.rand(8).data
        return grads([x, w]), y.data, before, after

    want, y_plain, before_plain, after_plain = await run("plain")
    got, y_ckpt, before, after = await run("preserve")
    np.testing.assert_array_equal(y_ckpt, y_plain)
    assert_grads_equal(got, want)
    # The recomputation drew from a copy of the forward's state: the stream goes on untouched.
    np.testing.assert_array_equal(before, before_plain)
    np.testing.assert_array_equal(after, after_plain)

    # Without preserve_rng_state the recomputation draws fresh numbers from the current stream:
    # another mask (so other gradients), and the caller's stream has moved on.
    got, y_ckpt, before, after = await run("fresh")
    np.testing.assert_array_equal(y_ckpt, y_plain)
    np.testing.assert_array_equal(before, before_plain)
    assert not np.array_equal(got[1], want[1])
    assert not np.array_equal(after, after_plain)


@pytest.mark.parametrize("reentrant", [True, False])
async def test_manual_seed_inside_the_function_leaves_the_outer_stream_alone(reentrant):
    x = ag.tensor(X, requires_grad=True)

    def fn(h: Any) -> Any:
        ag.manual_seed(7)
        return h * ag.rand_like(h)

    ag.manual_seed(0)
    y = checkpoint(fn, x, use_reentrant=reentrant)
    a = ag.rand(4).data
    await y.sum().backward()
    b = ag.rand(4).data
    ag.manual_seed(7)
    mask = ag.rand_like(x).data
    a_ref, b_ref = ag.rand(4).data, ag.rand(4).data
    np.testing.assert_array_equal(x.grad.data, mask)
    np.testing.assert_array_equal(a, a_ref)
    np.testing.assert_array_equal(b, b_ref)


@pytest.mark.parametrize("reentrant", [True, False])
async def test_random_state_restored_when_recomputation_fails(reentrant):
    calls = []

    def fn(h: Any) -> Any:
        calls.append(1)
        noise = ag.rand_like(h)
        if len(calls) == 2:
            raise ValueError("boom in recomputation")
        return h * noise

    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=reentrant)
    state = _random.get_state()
    with pytest.raises(ValueError, match="boom in recomputation"):
        await y.sum().backward()
    np.testing.assert_array_equal(_random.get_state(), state)


# ---------------------------------------------------------------------------------------------
# Errors and warnings, with PyTorch's messages


async def test_grad_is_refused_verbatim():
    assert ERR_CHECKPOINT_INVALID == INVALID
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(lambda h: h.tanh(), x)
    with pytest.raises(RuntimeError, match=re.escape(INVALID)) as info:
        await ag.grad(y.sum(), x)
    assert str(info.value) == INVALID


async def test_backward_with_inputs_is_refused_verbatim():
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(mlp(ag, params), x)
    with pytest.raises(RuntimeError, match=re.escape(INVALID)) as info:
        await y.backward(ag.tensor(G), inputs=[x])
    assert str(info.value) == INVALID


@requires_torch
async def test_invalid_message_is_torchs():
    x = to_torch(X)
    y = torch_checkpoint.checkpoint(lambda h: h.tanh(), x, use_reentrant=True)
    with pytest.raises(RuntimeError) as info:
        torch.autograd.grad(y.sum(), x)
    assert str(info.value).replace("torch.utils.checkpoint", "aiograd.checkpoint") == INVALID


async def test_unexpected_keyword_arguments():
    x = ag.tensor(X, requires_grad=True)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: alpha,beta$"):
        checkpoint(lambda h: h, x, alpha=1, beta=2)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: alpha$"):
        checkpoint_sequential([lambda h: h], 1, x, alpha=1)
    if torch is not None:
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: alpha,beta$"):
            torch_checkpoint.checkpoint(lambda h: h, to_torch(X), use_reentrant=True, alpha=1, beta=2)


def _warnings_of(call: Callable[[], Any]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call()
    return record


async def test_use_reentrant_left_out_warns_as_torch_at_the_users_line():
    """PyTorch 2.13 warns and takes the reentrant variant; the warning names the caller's line
    (torch's names a line of its own dynamo wrapper for ``checkpoint``)."""
    x = ag.tensor(X, requires_grad=True)
    got = _warnings_of(lambda: ckpt.checkpoint(lambda h: h * 2, x))
    assert [str(w.message) for w in got] == [ckpt_impl.WARN_USE_REENTRANT]
    assert got[0].filename == __file__ and got[0].category is UserWarning
    got = _warnings_of(lambda: ckpt.checkpoint_sequential([lambda h: h * 2] * 2, 2, x))
    assert [str(w.message) for w in got] == [ckpt_impl.WARN_USE_REENTRANT_SEQUENTIAL]
    assert got[0].filename == __file__
    # Passing it explicitly warns nothing, either way.
    for reentrant in (True, False):
        assert _warnings_of(functools.partial(ckpt.checkpoint, lambda h: h * 2, x, use_reentrant=reentrant)) == []
        assert _warnings_of(
            functools.partial(ckpt.checkpoint_sequential, [lambda h: h * 2] * 2, 2, x, use_reentrant=reentrant)
        ) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ckpt.checkpoint(lambda h: h * 2, x).grad_fn.name() == "CheckpointFunctionBackward"
    if torch is not None:
        tx = to_torch(X)
        want = _warnings_of(lambda: torch_checkpoint.checkpoint(lambda h: h * 2, tx))
        assert [str(w.message).replace("torch.utils.checkpoint", "aiograd.checkpoint") for w in want] == [
            ckpt_impl.WARN_USE_REENTRANT
        ]
        want = _warnings_of(lambda: torch_checkpoint.checkpoint_sequential([lambda h: h * 2] * 2, 2, tx))
        assert [str(w.message).replace("torch.utils.checkpoint", "aiograd.checkpoint") for w in want] == [
            ckpt_impl.WARN_USE_REENTRANT_SEQUENTIAL
        ]
        # Left out means the reentrant variant in torch too.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert torch_checkpoint.checkpoint(lambda h: h * 2, tx).grad_fn.name() == "CheckpointFunctionBackward"


async def test_no_input_requires_grad_warns_and_gives_no_gradients():
    params = ag_leaves(make_params())
    x = ag.tensor(X)
    with pytest.warns(UserWarning, match=re.escape(WARN_NO_INPUT_REQUIRES_GRAD)) as record:
        y = checkpoint(mlp(ag, params), x)
    assert record[0].filename == __file__
    # As torch: no node is recorded, so the closure's parameters are cut off.
    assert not y.requires_grad and y.grad_fn is None
    if torch is not None:
        with pytest.warns(UserWarning, match=re.escape(WARN_NO_INPUT_REQUIRES_GRAD)):
            ty = torch_checkpoint.checkpoint(
                mlp(torch, [to_torch(p) for p in make_params()]), to_torch(X, False), use_reentrant=True
            )
        assert not ty.requires_grad


async def test_no_output_requires_grad():
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(lambda h: h.detach() * 2, x)
    assert y.requires_grad  # the forward cannot know
    with pytest.raises(RuntimeError, match=re.escape(ERR_NO_OUTPUT_REQUIRES_GRAD)):
        await y.sum().backward()
    if torch is not None:
        ty = torch_checkpoint.checkpoint(lambda h: h.detach() * 2, to_torch(X), use_reentrant=True)
        with pytest.raises(RuntimeError) as info:
            ty.sum().backward()
        assert str(info.value) == ERR_NO_OUTPUT_REQUIRES_GRAD


async def test_checkpoint_sequential_segments_out_of_range():
    x = ag.tensor(X, requires_grad=True)
    for segments in (0, 3):
        with pytest.raises(ValueError, match="segments must be between 1 and len"):
            checkpoint_sequential([lambda h: h, lambda h: h], segments, x)


async def test_async_function_is_refused():
    async def fn(h: Any) -> Any:
        return h

    x = ag.tensor(X, requires_grad=True)
    with pytest.raises(TypeError, match="is an async function"):
        checkpoint(fn, x)
    with pytest.raises(TypeError, match="is an async function"):
        checkpoint_sequential([lambda h: h, fn], 1, x)


async def test_under_no_grad_it_just_runs_the_function():
    x = ag.tensor(X, requires_grad=True)
    with ag.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        y = checkpoint(lambda h: h.tanh(), x)
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.data, np.tanh(X))


# ---------------------------------------------------------------------------------------------
# Nesting, create_graph, concurrency


async def test_nested_checkpoints():
    """A checkpoint inside a checkpointed function: its recomputation records another
    checkpoint, whose backward nests one level deeper."""
    want = await plain_mlp_grads()
    params = ag_leaves(make_params())
    fns = layers(ag, params)
    grad_mode_seen = []

    def inner(h: Any) -> Any:
        grad_mode_seen.append(ag.is_grad_enabled())
        return fns[1](h)

    def outer(h: Any) -> Any:
        return fns[2](checkpoint(inner, fns[0](h)))

    x = ag.tensor(X, requires_grad=True)
    # As torch: the forward of outer runs under no_grad, so there inner's input requires no
    # grad and inner warns (once; in the recomputation its input does require grad).
    with pytest.warns(UserWarning, match=re.escape(WARN_NO_INPUT_REQUIRES_GRAD)) as record:
        y = checkpoint(outer, x)
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await y.backward(ag.tensor(G))
    # inner: the forward (no grad), outer's recomputation (no grad: inner is checkpointed
    # there too), and inner's own recomputation (grad on).
    assert grad_mode_seen == [False, False, True]
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)

    if torch is not None:

        def run(p: list[Any], x: Any) -> Any:
            tf = layers(torch, p)
            return torch_checkpoint.checkpoint(
                lambda h: tf[2](torch_checkpoint.checkpoint(tf[1], tf[0](h), use_reentrant=True)),
                x,
                use_reentrant=True,
            )

        assert_grads_equal(grads([x, *params]), torch_checkpointed_grads(run), atol=1e-12)


@pytest.mark.parametrize("depth", [2, 10])
@pytest.mark.parametrize("reentrant", [True, False])
async def test_deeply_nested_checkpoints(depth, reentrant):
    """Each level checkpoints the next: the backward of level k awaits that of level k + 1."""
    x0 = rng(9).standard_normal((3, 4))

    def level(k: int) -> Callable[[Any], Any]:
        def fn(h: Any) -> Any:
            h = (h * 1.1).tanh()
            return h if k == depth else checkpoint(level(k + 1), h, use_reentrant=reentrant)

        return fn

    def plain(h: Any) -> Any:
        for _ in range(depth):
            h = (h * 1.1).tanh()
        return h

    x = ag.tensor(x0, requires_grad=True)
    with warnings.catch_warnings():
        # As torch: in a level's forward (no grad) the next level's input needs no grad, so
        # that checkpoint warns; recomputing level k runs level k + 1's forward again.
        warnings.simplefilter("ignore")
        y = checkpoint(level(1), x, use_reentrant=reentrant)
        np.testing.assert_array_equal(y.data, plain(ag.tensor(x0)).data)
        await y.sum().backward()
    ref = ag.tensor(x0, requires_grad=True)
    await plain(ref).sum().backward()
    np.testing.assert_allclose(x.grad.data, ref.grad.data, rtol=0, atol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
async def test_checkpoint_sequential_inside_checkpoint(reentrant):
    arrays = make_params(3, sizes=(5, 7, 6, 7, 6, 7, 3))
    params = ag_leaves(arrays)
    x = ag.tensor(X, requires_grad=True)
    await mlp(ag, params)(x).backward(ag.tensor(G))
    want = grads([x, *params])

    params = ag_leaves(arrays)
    fns = layers(ag, params)
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint_sequential(
        [lambda h: checkpoint_sequential(fns[:4], 2, h, use_reentrant=reentrant), fns[4], fns[5]], 2, x,
        use_reentrant=reentrant,
    )
    await y.backward(ag.tensor(G))
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)


async def test_backward_with_create_graph_gives_first_order_gradients():
    """As torch: the nested backward records no graph, so the gradients are right but cannot be
    differentiated again."""
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint(mlp(ag, params), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # backward(create_graph=True)'s reference-cycle warning
        await y.backward(ag.tensor(G), create_graph=True)
    assert_grads_equal(grads([x, *params]), await plain_mlp_grads(), atol=1e-12)
    assert not x.grad.requires_grad and not params[0].grad.requires_grad

    if torch is not None:
        tparams = [to_torch(p) for p in make_params()]
        tx = to_torch(X)
        ty = torch_checkpoint.checkpoint(mlp(torch, tparams), tx, use_reentrant=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ty.backward(torch.tensor(G), create_graph=True)
        assert not tx.grad.requires_grad and not tparams[0].grad.requires_grad


@pytest.mark.parametrize("reentrant", [True, False])
async def test_concurrent_backward_calls_through_checkpoints(reentrant):
    """Two backward calls in flight on one loop, each recomputing random ops: each gets its own
    forward's randomness and the gradients of a sequential run."""
    r = rng(8)
    x0, w0, v0 = r.standard_normal((6, 4)), r.standard_normal((4, 5)), r.standard_normal((4, 5))

    def build() -> tuple[list[ag.Tensor], ag.Tensor, ag.Tensor, ag.Tensor, ag.Tensor]:
        x, w, v = ag_leaves([x0, w0, v0])
        ag.manual_seed(1)
        y1 = checkpoint(dropout_block(w), x, use_reentrant=reentrant)
        y2 = checkpoint(dropout_block(v), x * 1.0, use_reentrant=reentrant)
        return [x, w, v], y1, y2, y1.sum(), y2.sum()

    leaves, _, _, l1, l2 = build()
    await l1.backward()
    await l2.backward()
    want = grads(leaves)

    # Each call's hook on its checkpoint's output (which runs before that checkpoint's
    # recomputation) waits until the other call has reached its own: both calls are in flight
    # at once, each about to recompute its forward, whatever the order the loop runs them in.
    # The hooks run on the loop that runs the backward (aiograd.sync's under trio), where the
    # events are made (an asyncio.Event binds to the loop it is first awaited on).
    log: list[str] = []
    arrived: list[asyncio.Event] = []

    def meet(i: int) -> Callable[[Any], Any]:
        async def hook(grad: Any) -> None:
            if not arrived:
                arrived.extend((asyncio.Event(), asyncio.Event()))
            log.append(f"in {i}")
            arrived[i].set()
            # bounds a hang: one call at a time would never get the other here
            await asyncio.wait_for(arrived[1 - i].wait(), 60)
            log.append(f"out {i}")

        return hook

    leaves, y1, y2, l1, l2 = build()
    y1.register_hook(meet(0))
    y2.register_hook(meet(1))
    await gather(l1.backward(), l2.backward())
    assert sorted(log[:2]) == ["in 0", "in 1"] and sorted(log[2:]) == ["out 0", "out 1"], log
    assert_grads_equal(grads(leaves), want, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The non-reentrant variant: what only it can do, and its errors


def checkpoint_nr(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return ckpt.checkpoint(function, *args, use_reentrant=False, **kwargs)


def torch_nr(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return torch_checkpoint.checkpoint(function, *args, use_reentrant=False, **kwargs)


async def test_non_reentrant_under_grad_and_backward_inputs_equals_plain_and_torch():
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    want = await ag.grad(mlp(ag, params)(x), [x, params[0], params[3]], ag.tensor(G))
    y = checkpoint_nr(mlp(ag, params), x)
    got = await ag.grad(y, [x, params[0], params[3]], ag.tensor(G), retain_graph=True)
    assert_grads_equal([g.data for g in got], [w.data for w in want])
    await y.backward(ag.tensor(G), inputs=[params[1]])
    assert x.grad is None and params[0].grad is None
    (b_want,) = await ag.grad(mlp(ag, params)(x), [params[1]], ag.tensor(G))
    np.testing.assert_array_equal(params[1].grad.data, b_want.data)
    if torch is not None:
        tparams = [to_torch(p) for p in make_params()]
        tx = to_torch(X)
        ty = torch_nr(mlp(torch, tparams), tx)
        tgot = torch.autograd.grad(ty, [tx, tparams[0], tparams[3]], torch.tensor(G))
        assert_grads_equal([g.data for g in got], [t.numpy() for t in tgot], atol=1e-12)


async def test_non_reentrant_with_keyword_arguments_and_inputs_without_grad():
    """Parameters in a closure get their gradients although no input requires grad (the
    reentrant variant gives none), and keyword arguments reach the function both times."""
    params = ag_leaves(make_params())
    seen_scales = []

    def fn(h: Any, *, scale: float) -> Any:
        seen_scales.append(scale)
        return mlp(ag, params)(h) * scale

    x = ag.tensor(X)  # requires no grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no "None of the inputs" warning
        y = checkpoint_nr(fn, x, scale=3.0)
    await y.backward(ag.tensor(G))
    assert seen_scales == [3.0, 3.0]
    plain = ag_leaves(make_params())
    await (mlp(ag, plain)(ag.tensor(X)) * 3.0).backward(ag.tensor(G))
    assert_grads_equal(grads(params), grads(plain))
    if torch is not None:
        tparams = [to_torch(p) for p in make_params()]
        torch_nr(lambda h, *, scale: mlp(torch, tparams)(h) * scale, to_torch(X, False), scale=3.0).backward(
            torch.tensor(G)
        )
        assert_grads_equal(grads(params), [t.grad.numpy() for t in tparams], atol=1e-12)


async def test_non_reentrant_recomputes_once_per_backward_call_and_stops_early():
    """One recomputation per backward call (each unpack takes its tensor from it), stopped as
    soon as the last saved tensor is recovered; the same log as torch's."""

    def run(lib: Any, x: Any, log: list[str], early_stop: bool = True) -> Any:
        def fn(h: Any) -> Any:
            log.append("start")
            z = (h * h).sin()  # saves h, h, then h * h
            log.append("saved all")
            out = z + 1.0  # saves nothing
            log.append("end")
            return out

        ck = torch_nr if lib is torch else checkpoint_nr
        return ck(fn, x, early_stop=early_stop)

    for early_stop in (True, False):
        log: list[str] = []
        x = ag.tensor(X, requires_grad=True)
        y = run(ag, x, log, early_stop)
        await y.sum().backward(retain_graph=True)
        await y.sum().backward()
        np.testing.assert_allclose(x.grad.data, 2 * 2 * X * np.cos(X * X), rtol=1e-14)
        if torch is not None:
            tlog: list[str] = []
            ty = run(torch, to_torch(X), tlog, early_stop)
            ty.sum().backward(retain_graph=True)
            ty.sum().backward()
            assert log == tlog
        forward = ["start", "saved all", "end"]
        again = ["start"] if early_stop else forward
        assert log == forward + again + again
    # set_checkpoint_early_stop(False) around the forward overrides the argument.
    log = []
    with ckpt.set_checkpoint_early_stop(False):
        y = run(ag, ag.tensor(X, requires_grad=True), log)
    await y.sum().backward()
    assert log == ["start", "saved all", "end"] * 2


async def test_non_reentrant_create_graph_gives_second_derivatives():
    x = ag.tensor(X[0], requires_grad=True)
    y = checkpoint_nr(lambda h: (h.tanh() * h).sum(), x)
    (g,) = await ag.grad(y, x, create_graph=True)
    (h,) = await ag.grad(g.sum(), x)
    xp = ag.tensor(X[0], requires_grad=True)
    (gp,) = await ag.grad((xp.tanh() * xp).sum(), xp, create_graph=True)
    (hp,) = await ag.grad(gp.sum(), xp)
    np.testing.assert_array_equal(g.data, gp.data)
    np.testing.assert_allclose(h.data, hp.data, rtol=1e-14)
    if torch is not None:
        tx = to_torch(X[0])
        (tg,) = torch.autograd.grad(torch_nr(lambda h: (h.tanh() * h).sum(), tx), tx, create_graph=True)
        (th,) = torch.autograd.grad(tg.sum(), tx)
        np.testing.assert_allclose(h.data, th.numpy(), rtol=1e-12)


async def test_non_reentrant_nested_checkpoints_equal_plain_and_torch():
    want = await plain_mlp_grads()
    params = ag_leaves(make_params())
    fns = layers(ag, params)
    x = ag.tensor(X, requires_grad=True)
    y = checkpoint_nr(lambda h: fns[2](checkpoint_nr(lambda g: fns[1](checkpoint_nr(fns[0], g)), h)), x)
    await y.backward(ag.tensor(G))
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)
    if torch is not None:

        def run(p: list[Any], x: Any) -> Any:
            tf = layers(torch, p)
            return torch_nr(lambda h: tf[2](torch_nr(lambda g: tf[1](torch_nr(tf[0], g)), h)), x)

        assert_grads_equal(grads([x, *params]), torch_checkpointed_grads(run), atol=1e-12)


@pytest.mark.parametrize(("outer", "inner"), [(True, False), (False, True)])
async def test_mixed_variants_nest(outer, inner):
    """A checkpoint of one variant inside one of the other (the reentrant one's saved inputs
    are then placeholders of the non-reentrant one, or the reverse)."""
    want = await plain_mlp_grads()
    params = ag_leaves(make_params())
    fns = layers(ag, params)
    x = ag.tensor(X, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reentrant variant's "None of the inputs" warning
        y = ckpt.checkpoint(
            lambda h: fns[2](ckpt.checkpoint(fns[1], fns[0](h), use_reentrant=inner)), x, use_reentrant=outer
        )
        await y.backward(ag.tensor(G))
    assert_grads_equal(grads([x, *params]), want, atol=1e-12)
    if torch is not None:

        def run(p: list[Any], x: Any) -> Any:
            tf = layers(torch, p)
            return torch_checkpoint.checkpoint(
                lambda h: tf[2](torch_checkpoint.checkpoint(tf[1], tf[0](h), use_reentrant=inner)),
                x,
                use_reentrant=outer,
            )

        assert_grads_equal(grads([x, *params]), torch_checkpointed_grads(run), atol=1e-12)


TARGET = ag.tensor(np.array([0, 2, 1]))
#: One op per family whose backward reads saved tensors, applied to (x, w).
SAVING_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "exp": lambda x, w: x.exp(), "log": lambda x, w: x.log(), "tanh": lambda x, w: x.tanh(),
    "sigmoid": lambda x, w: x.sigmoid(), "relu": lambda x, w: F.relu(x - 1), "pow": lambda x, w: x**2.5,
    "pow_tensor": lambda x, w: x**x, "div": lambda x, w: x / (x + 1), "mul": lambda x, w: x * x,
    "matmul": lambda x, w: x @ w.mT, "linear": lambda x, w: F.linear(x, w), "softmax": lambda x, w: x.softmax(1),
    "log_softmax": lambda x, w: x.log_softmax(1), "logsumexp": lambda x, w: x.logsumexp(1),
    "var": lambda x, w: x.var(1), "std": lambda x, w: x.std(0), "max": lambda x, w: x.max(1).values,
    "prod": lambda x, w: x.prod(1), "index": lambda x, w: x[[0, 2, 2]], "cat": lambda x, w: ag.cat([x, x * 2]),
    "clamp": lambda x, w: x.clamp(0.7, 1.2), "abs": lambda x, w: (x - 1).abs(), "sqrt": lambda x, w: x.sqrt(),
    "mse_loss": lambda x, w: F.mse_loss(x, x.detach() * 2), "cross_entropy": lambda x, w: F.cross_entropy(x, TARGET),
    "norm": lambda x, w: x.norm(), "where": lambda x, w: ag.where(x > 1, x, x * x),
    "minimum": lambda x, w: ag.minimum(x, x.detach() * 0 + 1),
}


@pytest.mark.parametrize("name", sorted(SAVING_OPS))
def test_non_reentrant_over_each_op_family_equals_plain(name):
    """Every backward formula unpacks each saved tensor once per backward, in the order the
    recomputation saves them: the gradients are the plain graph's, bit for bit."""
    x0, w0 = rng(11).uniform(0.5, 1.5, (3, 4)), rng(12).standard_normal((5, 4))
    results = []
    for use_checkpoint in (False, True):
        x, w = ag_leaves([x0, w0])

        def fn(x: Any, w: Any) -> Any:
            return (SAVING_OPS[name](x, w) * 1.0).sum()

        ag.sync.backward(checkpoint_nr(fn, x, w) if use_checkpoint else fn(x, w))
        results.append([None if t.grad is None else t.grad.data for t in (x, w)])
    for got, want in zip(results[1], results[0]):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_array_equal(got, want)


async def test_non_reentrant_keeps_only_placeholders_and_frees_the_graph_without_gc():
    params = ag_leaves(make_params())
    x = ag.tensor(X, requires_grad=True)
    inside: list[weakref.ref[Any]] = []

    def fn(h: Any) -> Any:
        z = F.linear(h, params[0], params[1])
        t = z.tanh()
        inside.extend([weakref.ref(z), weakref.ref(t)])
        return mlp(ag, params[2:])(t)

    gc.disable()
    try:
        y = checkpoint_nr(fn, x * 1.0)
        # tanh saved its output: in the forward only its placeholder is kept.
        assert [r() for r in inside] == [None, None]
        node = weakref.ref(y.grad_fn)
        await y.backward(ag.tensor(G))
        assert [r() for r in inside[2:]] == [None, None]  # the recomputed ones are gone too
        del y
        assert node() is None  # the whole graph, freed by reference counting alone
    finally:
        gc.enable()
    assert_grads_equal(grads([x, *params]), await plain_mlp_grads(), atol=1e-12)


def _torch_meta_to_aiograd(message: str) -> str:
    """torch's metadata reprs as aiograd's (``aiograd.Size``, numpy's dtype repr)."""
    message = message.replace("torch.Size", "aiograd.Size")
    return re.sub(r"torch\.(float\d+)", r"dtype('\1')", message).replace("torch.utils.checkpoint", "aiograd.checkpoint")


def _changing(lib: Any) -> Callable[[Any], Any]:
    """A function that saves tensors of another shape when called again."""
    calls = []

    def fn(h: Any) -> Any:
        calls.append(1)
        h = h if len(calls) == 1 else h[:1]
        return (h * h).sum()

    return fn


async def test_determinism_check_raises_torchs_checkpoint_error():
    x = ag.tensor(X[0], requires_grad=True)
    y = checkpoint_nr(_changing(ag), x)
    with pytest.raises(ckpt.CheckpointError) as info:
        await y.backward()
    message = str(info.value)
    assert message.startswith(
        "aiograd.checkpoint: Recomputed values for the following tensors have different metadata "
        "than during the forward pass.\ntensor at position 0:\nsaved metadata: {'shape': aiograd.Size([5]), "
    )
    assert message.endswith(DEBUG_TIP)
    # "none" skips the check (the gradient is then wrong, as in torch).
    y = checkpoint_nr(_changing(ag), ag.tensor(X[0], requires_grad=True), determinism_check="none")
    await y.backward()
    if torch is not None:
        ty = torch_nr(_changing(torch), to_torch(X[0]))
        with pytest.raises(torch_checkpoint.CheckpointError) as tinfo:
            ty.backward()
        want = _torch_meta_to_aiograd(str(tinfo.value)).split("\nTip:")[0]
        assert message.split("\nTip:")[0] == want


async def test_a_different_number_of_saved_tensors_and_unpacking_twice():
    def fewer(lib: Any) -> Callable[[Any], Any]:
        calls = []

        def fn(h: Any) -> Any:
            calls.append(1)
            return (h * h).sum() if len(calls) == 1 else (h * 2).sum()  # mul by a number: saves none

        return fn

    class Twice(ag.Function):
        @staticmethod
        def forward(ctx: Any, h: Any) -> Any:
            ctx.save_for_backward(h)
            return h * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            ctx.saved_tensors  # noqa: B018 - the first unpack
            return ctx.saved_tensors[0] * 0 + g * 2

    errors = []
    for run in (
        lambda: checkpoint_nr(fewer(ag), ag.tensor(X[0], requires_grad=True)),
        lambda: checkpoint_nr(lambda h: Twice.apply(h * 1.0).sum(), ag.tensor(X[0], requires_grad=True)),
    ):
        with pytest.raises(ckpt.CheckpointError) as info:
            await run().backward()
        errors.append(str(info.value))
    assert errors[0].startswith(
        "aiograd.checkpoint: A different number of tensors was saved during the original forward and "
        "recomputation.\nNumber of tensors saved during forward: 2\nNumber of tensors saved during "
        "recomputation: 0.\n"
    )
    assert errors[1] == (
        "aiograd.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. "
        "If you are calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise "
        "please open an issue with details on your use case."
    )
    if torch is not None:

        class TorchTwice(torch.autograd.Function):
            forward = Twice.forward

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                ctx.saved_tensors  # noqa: B018
                return ctx.saved_tensors[0] * 0 + g * 2

        want = []
        for run in (
            lambda: torch_nr(fewer(torch), to_torch(X[0])),
            lambda: torch_nr(lambda h: TorchTwice.apply(h * 1.0).sum(), to_torch(X[0])),
        ):
            with pytest.raises(torch_checkpoint.CheckpointError) as tinfo:
                run().backward()
            want.append(str(tinfo.value).replace("torch.utils.checkpoint", "aiograd.checkpoint"))
        assert errors[0].split("\nTip:")[0] == want[0].split("\nTip:")[0]
        assert errors[1] == want[1]


async def test_debug_reports_where_each_tensor_was_saved():
    with pytest.raises(ckpt.CheckpointError) as info:
        await checkpoint_nr(_changing(ag), ag.tensor(X[0], requires_grad=True), debug=True).backward()
    message = str(info.value)
    assert "because you passed `debug=True` to `aiograd.checkpoint()`" in message
    assert message.count(__file__) >= 4  # the line of h * h, twice in each run
    assert "Recomputed values for the following tensors have different metadata" in message
    with ckpt.set_checkpoint_debug_enabled(True), pytest.raises(ckpt.CheckpointError, match="debug=True"):
        await checkpoint_nr(_changing(ag), ag.tensor(X[0], requires_grad=True)).backward()


async def test_context_fn_and_argument_errors_as_torch():
    log = []

    class Note:
        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self) -> None:
            log.append(f"enter {self.name}")

        def __exit__(self, *exc: object) -> None:
            log.append(f"exit {self.name}")

    def fn(h: Any) -> Any:
        log.append("fn")
        return (h * h).sum()

    x = ag.tensor(X[0], requires_grad=True)
    y = checkpoint_nr(fn, x, context_fn=lambda: (Note("forward"), Note("recompute")))
    await y.backward()
    assert log == ["enter forward", "fn", "exit forward", "enter recompute", "fn", "exit recompute"]

    class Swallow:
        def __enter__(self) -> None:
            pass

        def __exit__(self, *exc: object) -> bool:
            return True

    def boom(h: Any) -> Any:
        raise KeyError("boom")

    cases: list[tuple[type[BaseException], Callable[[Any], Any]]] = [
        (RuntimeError, lambda ck: ck(boom, x, use_reentrant=False, context_fn=lambda: (Swallow(), Swallow()))),
        (ValueError, lambda ck: ck(fn, x, use_reentrant=False, determinism_check="shapes")),
        (ValueError, lambda ck: ck(fn, x, use_reentrant=False, debug=True, context_fn=lambda: (Swallow(), Swallow()))),
        (ValueError, lambda ck: ck(fn, x, use_reentrant=True, context_fn=lambda: (Swallow(), Swallow()))),
        (ValueError, lambda ck: ck(fn, x, use_reentrant=True, debug=True)),
        (ValueError, lambda ck: ck(fn, x, use_reentrant=True, scale=2)),
        (KeyError, lambda ck: ck(boom, x, use_reentrant=False)),
    ]
    messages = []
    for kind, call in cases:
        with pytest.raises(kind) as info:
            call(ckpt.checkpoint)
        messages.append(str(info.value))
    if torch is not None:
        x = to_torch(X[0])  # noqa: F841 - read by the lambdas
        for (kind, call), message in zip(cases, messages):
            with pytest.raises(kind) as info:
                call(torch_checkpoint.checkpoint)
            assert str(info.value).replace("torch.utils.checkpoint", "aiograd.checkpoint") == message


async def test_non_reentrant_refused_where_saved_tensor_hooks_are_disabled():
    x = ag.tensor(X[0], requires_grad=True)
    with ag.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            checkpoint_nr(lambda h: h * h, x)
    if torch is not None:
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="^no hooks here$"):
                torch_nr(lambda h: h * h, to_torch(X[0]))


# ---------------------------------------------------------------------------------------------
# The public module


def test_public_module():
    import aiograd._api._checkpoint as impl
    import aiograd.utils
    import aiograd.utils.checkpoint as mod

    assert aiograd.utils.__all__ == ["checkpoint", "data"]
    assert aiograd.utils.checkpoint is mod
    assert mod.__all__ == [
        "CheckpointError", "CheckpointFunction", "checkpoint", "checkpoint_sequential",
        "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop",
    ]
    for name in mod.__all__:
        assert getattr(mod, name) is getattr(impl, name)
        if torch is not None:
            assert hasattr(torch_checkpoint, name)  # each is a name of torch.utils.checkpoint
    assert issubclass(mod.CheckpointError, RuntimeError)
    for name in mod.__all__:
        assert getattr(mod, name).__doc__
    assert mod.__doc__ and aiograd.utils.__doc__
