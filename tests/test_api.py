"""backward()/grad() argument handling: PyTorch's errors, word for word."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import aiograd as ag

# Public-API tests: each async test runs on asyncio, uvloop and trio through aiograd's pytest
# plugin, which also fails a test that leaves aiograd work behind (docs/testing.md).
pytestmark = pytest.mark.aiograd(backends=["asyncio", "uvloop", "trio"])  # the public API: trio too


def leaf(*values: float) -> ag.Tensor:
    return ag.tensor(list(values), requires_grad=True)


async def test_implicit_grad_needs_a_scalar():
    y = leaf(1.0, 2.0) * 2.0
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        await y.backward()


async def test_output_without_grad():
    with pytest.raises(
        RuntimeError, match="^element 0 of tensors does not require grad and does not have a grad_fn$"
    ):
        await ag.tensor(1.0).backward()
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="^element 1 of tensors does not require grad"):
        await ag.backward([x.sum(), ag.tensor(2.0)], [None, ag.tensor(1.0)])


async def test_output_computed_under_no_grad_has_no_grad_fn():
    x = leaf(1.0)
    with ag.no_grad():
        y = (x * 2.0).sum()
    assert y.grad_fn is None and not y.requires_grad
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        await y.backward()


async def test_empty_inputs():
    y = (leaf(1.0) * 2.0).sum()
    with pytest.raises(RuntimeError, match="^`inputs` argument to `backward\\(\\)` cannot be empty.$"):
        await y.backward(inputs=[])
    with pytest.raises(RuntimeError, match="^`inputs` argument to `grad\\(\\)` cannot be empty.$"):
        await ag.grad(y, [])


async def test_input_that_does_not_require_grad():
    x = leaf(1.0)
    c = ag.tensor([1.0])
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require grad$"):
        await ag.grad((x * c).sum(), [x, c])
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require grad$"):
        await (x * c).sum().backward(inputs=[c])


async def test_grad_output_shape_mismatch():
    y = leaf(1.0, 2.0, 3.0, 4.0).reshape(2, 2) * 1.0
    with pytest.raises(RuntimeError) as info:
        await y.backward(ag.tensor([1.0, 1.0]))
    assert str(info.value) == (
        "Mismatch in shape: grad_output[0] has a shape of (2,) and output[0] has a shape of (2, 2)."
    )


async def test_grad_output_dtype_is_cast_like_pytorch():
    x = ag.tensor([1.0, 2.0], dtype=np.float32, requires_grad=True)
    y = x * 2.0
    await y.backward(ag.tensor([1.0, 1.0], dtype=np.float64))
    assert x.grad.dtype == np.float32


async def test_integer_output_implicit_grad():
    x = leaf(1.0)
    y = x.sum()
    y.data = np.array(1, dtype=np.int64)
    with pytest.raises(RuntimeError, match="only for real scalar outputs but got int64"):
        await y.backward()


async def test_materialize_grads_with_allow_unused_false():
    x = leaf(1.0)
    with pytest.raises(ValueError) as info:
        await ag.grad(x * 2.0, x, allow_unused=False, materialize_grads=True)
    assert str(info.value) == (
        "Expected allow_unused to be True or not passed when materialize_grads=True, "
        "but got: allow_unused=False."
    )


async def test_bad_gradient_type():
    y = leaf(1.0) * 1.0
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got str"):
        await y.backward("nope")


async def test_numbers_and_arrays_are_accepted_as_gradients():
    x = leaf(1.0, 2.0)
    await (x * 2.0).backward(np.array([1.0, 3.0]))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])


async def test_retain_graph_defaults_to_create_graph():
    x = leaf(1.0)
    y = x.exp()
    (g,) = await ag.grad(y, x, create_graph=True)
    (g2,) = await ag.grad(y, x)  # the graph was retained by create_graph
    assert g2.item() == pytest.approx(np.e)


async def test_create_graph_backward_warns_once():
    import aiograd._api._autograd as api

    api._warned_create_graph = False
    x = leaf(1.0)
    with pytest.warns(UserWarning, match="Using backward\\(\\) with create_graph=True"):
        await (x * x).backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await (x * x).backward(create_graph=True)
    x.grad = None


async def test_grad_with_create_graph_no_warning(monkeypatch):
    import aiograd._api._autograd as api

    # backward(create_graph=True) would warn here (its once-per-process warning not yet given):
    # grad() does not, and does not use that warning up.
    monkeypatch.setattr(api, "_warned_create_graph", False)
    x = leaf(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = await ag.grad(x * x, x, create_graph=True)
    assert not api._warned_create_graph
    assert g.tolist() == [6.0] and g.requires_grad  # 2x, differentiable
    (gg,) = await ag.grad(g, x)
    assert gg.tolist() == [2.0]


async def test_grad_with_grad_outputs_and_several_outputs():
    x = leaf(1.0, 2.0)
    a, b = x * 2.0, x * x
    (g,) = await ag.grad([a, b], x, [ag.tensor([1.0, 0.0]), ag.tensor([0.0, 1.0])])
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


async def test_leaf_backward_sets_grad():
    x = leaf(1.0, 2.0)
    await x.backward(ag.tensor([3.0, 4.0]))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


def test_run_uses_a_fresh_loop_and_returns_the_result():
    async def main() -> float:
        x = leaf(3.0)
        (g,) = await ag.grad(x * x, x)
        return g.item()

    assert ag.run(main()) == 6.0


def test_run_prefers_uvloop_when_installed():
    uvloop = pytest.importorskip("uvloop")
    import asyncio

    async def loop_type() -> type:
        return type(asyncio.get_running_loop())

    assert ag.run(loop_type()) is uvloop.Loop
