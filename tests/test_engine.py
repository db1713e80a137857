"""The engine: graph shapes, accumulation, pruning, retain_graph, create_graph, errors."""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd._engine.graph_task import compute_dependencies


def leaf(*values: float) -> ag.Tensor:
    return ag.tensor(list(values), requires_grad=True)


async def test_diamond_sums_both_paths():
    x = leaf(1.0, 2.0)
    a = x * 2.0
    b = x.exp()
    await (a + b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 + np.exp([1.0, 2.0]))


async def test_dependencies_count_edges_not_parents():
    x = leaf(3.0)
    y = x * x  # two edges into the same AccumulateGrad
    deps = compute_dependencies(y.grad_fn, 0)
    assert deps[y.grad_fn.next_functions[0][0]] == 2
    await y.backward()
    assert x.grad.item() == 6.0


async def test_several_roots_and_duplicate_roots():
    x = leaf(1.0, 2.0)
    y1 = (x * 3.0).sum()
    y2 = (x * x).sum()
    await ag.backward([y1, y2])
    np.testing.assert_allclose(x.grad.numpy(), 3.0 + 2 * np.array([1.0, 2.0]))
    z = leaf(1.0)
    w = z * 5.0
    await ag.backward([w, w], [ag.tensor([1.0]), ag.tensor([2.0])])
    assert z.grad.item() == 15.0


async def test_shared_leaf_accumulates_over_two_backward_calls_in_place():
    x = leaf(1.0, 2.0)
    await (x * 2.0).sum().backward()
    first = x.grad
    data = first.data
    await (x * 3.0).sum().backward()
    assert x.grad is first and x.grad.data is data  # in place: same object, same array
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


async def test_first_grad_is_stolen_when_unshared_and_copied_otherwise():
    x = leaf(1.0, 2.0)
    g = ag.tensor([1.0, 1.0])
    await x.backward(g)  # a leaf root: the user still holds g, so .grad must be a copy
    assert x.grad is not g and x.grad.data is not g.data
    g.data[:] = 7.0
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


async def test_a_transposed_back_gradient_is_stolen_and_a_shared_view_copied():
    # linear's weight gradient is made transposed and transposed back (TBackward0): a view
    # spanning an array nothing else holds, taken as .grad without a copy
    w = ag.tensor(np.ones((3, 4)), requires_grad=True)
    x = ag.tensor(np.arange(8.0).reshape(2, 4))
    await ag.nn.functional.linear(x, w).sum().backward()
    assert w.grad.data.base is not None and w.grad.data.flags.c_contiguous
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (3, 1)))
    # a gradient that is part of an array the user holds is copied, not taken
    v = leaf(1.0, 2.0)
    held = ag.tensor([[1.0, 1.0], [3.0, 3.0]])
    await v.backward(held[0])
    held.data[0] = 9.0
    np.testing.assert_allclose(v.grad.numpy(), [1.0, 1.0])


async def test_user_grad_tensors_are_never_mutated():
    x = leaf(1.0, 2.0)
    y = x * 1.0
    g = ag.tensor([1.0, 1.0])
    await ag.backward([y, y], [g, g])
    np.testing.assert_allclose(g.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
async def test_create_graph_accumulates_out_of_place():
    x = leaf(2.0)
    await (x * x).backward(create_graph=True)
    first = x.grad
    assert first.requires_grad and first.grad_fn is not None
    await (x * x).backward(create_graph=True)
    assert x.grad is not first
    assert first.item() == 4.0 and x.grad.item() == 8.0


async def test_grad_returns_tuple_and_leaves_dot_grad_alone():
    x, y = leaf(1.0, 2.0), leaf(3.0, 4.0)
    out = (x * y).sum()
    gx, gy = await ag.grad(out, [x, y])
    np.testing.assert_allclose(gx.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(gy.numpy(), [1.0, 2.0])
    assert x.grad is None and y.grad is None


async def test_grad_of_non_leaf_input_does_not_run_below_it():
    x = leaf(1.0, 2.0)
    h = x.exp()
    out = (h * 2.0).sum()
    (gh,) = await ag.grad(out, h)
    np.testing.assert_allclose(gh.numpy(), [2.0, 2.0])
    # ExpBackward0 was not executed, so its saved result was not freed: backward still works.
    await out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))


async def test_grad_with_two_inputs_on_one_path():
    x = leaf(1.0, 2.0)
    h = x * 3.0
    out = (h * h).sum()
    gh, gx = await ag.grad(out, [h, x])
    np.testing.assert_allclose(gh.numpy(), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(gx.numpy(), 6 * np.array([3.0, 6.0]))


async def test_grad_unused_inputs():
    x, unused = leaf(1.0), leaf(2.0)
    out = x * 2.0
    with pytest.raises(RuntimeError) as info:
        await ag.grad(out, [x, unused])
    assert str(info.value) == (
        "The differentiated Tensor at index 1 appears to not have been used in the graph. "
        "Set allow_unused=True if this is the desired behavior."
    )
    if torch is not None:  # the same words as torch's
        tx, tu = torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
        with pytest.raises(RuntimeError) as theirs:
            torch.autograd.grad(tx * 2.0, [tx, tu], torch.ones(1))
        assert str(info.value) == str(theirs.value)
    gx, gu = await ag.grad(x * 2.0, [x, unused], allow_unused=True)
    assert gx.item() == 2.0 and gu is None
    gx, gu = await ag.grad(x * 2.0, [x, unused], materialize_grads=True)
    assert gu is not None and gu.tolist() == [0.0]


async def test_backward_inputs_prunes_accumulation():
    x, y = leaf(1.0), leaf(2.0)
    out = x * y
    await out.backward(inputs=[x])
    assert x.grad.item() == 2.0 and y.grad is None


async def test_backward_inputs_on_non_leaf_retains_its_grad():
    x = leaf(1.0, 2.0)
    h = x * 2.0
    await (h * h).sum().backward(inputs=[h])
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 8.0])
    assert x.grad is None


async def test_pruning_skips_nodes_created_before_the_inputs():
    a = leaf(1.0)
    early = a.exp()  # created before x: cannot lead to x, so never visited
    x = leaf(2.0)
    out = (early * x).sum()
    gx, = await ag.grad(out, x)
    assert gx.item() == pytest.approx(np.e)


async def test_retain_graph_and_the_backward_twice_error():
    x = leaf(1.0, 2.0)
    y = x.exp().sum()
    await y.backward(retain_graph=True)
    await y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        await y.backward()


async def test_backward_twice_without_saved_values_is_allowed():
    x = leaf(1.0)
    y = x + 1.0
    await y.backward()
    await y.backward()
    assert x.grad.item() == 2.0


async def test_second_derivative_of_cube():
    x = leaf(2.0, -1.0)
    y = (x**3).sum()
    (g,) = await ag.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([4.0, 1.0]))
    (gg,) = await ag.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([2.0, -1.0]))


async def test_nodes_run_with_grad_mode_equal_to_create_graph():
    x = leaf(1.0)
    with ag.no_grad():
        pass
    y = x * x
    with ag.no_grad():
        (g,) = await ag.grad(y, x, create_graph=True)
    assert g.requires_grad
    (g2,) = await ag.grad(x * x, x)
    assert not g2.requires_grad
    assert ag.is_grad_enabled()


# Not under the anyio variant: asyncio's own loop again, at seconds a run.
@pytest.mark.aiograd(backends=["asyncio", "uvloop"])
@pytest.mark.slow
async def test_long_chain_of_100000_nodes():
    x = leaf(0.5)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    await y.backward()
    assert x.grad.item() == 1.0
    del y
    gc.collect()


async def test_version_mismatch_error_names_the_output():
    x = leaf(1.0, 2.0)
    y = x.exp()
    z = y.sum()
    y.data += 1  # an in-place change that bumps the version, as in-place ops will
    y._vc[0] += 1
    with pytest.raises(RuntimeError) as info:
        await z.backward()
    assert str(info.value).startswith(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [aiograd.DoubleTensor [2]], which is output 0 of Exp, is at version "
        "1; expected version 0 instead."
    )


async def test_error_in_node_is_raised_with_a_note_and_engine_stays_usable():
    class Boom(ag.Node):
        def apply(self, grads):
            raise ValueError("boom")

    x = leaf(1.0)
    h = x * 2.0
    y = ag.Tensor._wrap(h.data * 1.0)
    y._requires_grad = True
    y.grad_fn = Boom(((h.grad_fn, 0),))
    with pytest.raises(ValueError, match="boom") as info:
        await y.backward(ag.tensor([1.0]))
    assert "while running Boom" in info.value.__notes__
    assert x.grad is None  # nothing below the failing node ran
    await (x * 3.0).backward()
    assert x.grad.item() == 3.0


async def test_failing_graph_task_does_not_disturb_concurrent_ones():
    class Boom(ag.Node):
        def apply(self, grads):
            raise KeyError("bad")

    async def good(i: int) -> float:
        x = leaf(float(i))
        (g,) = await ag.grad((x * x).sum(), x)
        await asyncio.sleep(0)
        return g.item()

    async def bad() -> None:
        y = ag.Tensor._wrap(np.ones(1))
        y._requires_grad = True
        y.grad_fn = Boom(())
        await y.backward(ag.tensor([1.0]))

    results = await asyncio.gather(good(1), bad(), good(2), return_exceptions=True)
    assert results[0] == 2.0 and results[2] == 4.0
    assert isinstance(results[1], KeyError)


async def test_many_concurrent_grad_calls_are_independent():
    async def one(i: int) -> None:
        x = ag.tensor([float(i), 1.0], requires_grad=True)
        y = (x.tanh() * x).sum()
        (g,) = await ag.grad(y, x)
        xd = x.data
        np.testing.assert_allclose(g.numpy(), np.tanh(xd) + xd * (1 - np.tanh(xd) ** 2))

    await asyncio.gather(*(one(i) for i in range(200)))


@pytest.mark.aiograd(backends=["asyncio"])  # reference cycles and gc: not the loop's business
async def test_graph_memory_is_released_after_backward():
    x = leaf(1.0, 2.0)
    y = x.exp()
    node = weakref.ref(y.grad_fn)
    z = y.sum()
    await z.backward()
    del y, z
    gc.collect()
    assert node() is None


@pytest.mark.aiograd(backends=["asyncio"])  # reference cycles and gc: not the loop's business
async def test_accumulate_grad_is_one_per_leaf_and_does_not_keep_it_alive():
    x = leaf(1.0)
    y1, y2 = x * 2.0, x * 3.0
    acc = y1.grad_fn.next_functions[0][0]
    assert acc is y2.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    del y1, y2
    gc.collect()
    assert (x * 4.0).grad_fn.next_functions[0][0] is acc  # the same node for later graphs
    ref = weakref.ref(x)
    y = x * 5.0
    del x, acc
    gc.collect()
    assert ref() is None  # a live graph does not keep a dropped leaf alive: no cycle
    await y.backward(ag.tensor([1.0]))  # accumulating into a leaf that is gone does nothing


def test_node_metadata_and_numbers():
    x = leaf(1.0)
    a = x * 2.0
    b = a.exp()
    assert b.grad_fn.sequence_nr > a.grad_fn.sequence_nr
    assert a.grad_fn.topological_nr == 1 and b.grad_fn.topological_nr == 2
    assert a.grad_fn.next_functions[0][0].topological_nr == 0
    assert a.grad_fn.next_functions[1] == (None, 0)
    b.grad_fn.metadata["tag"] = 1
    assert b.grad_fn.metadata == {"tag": 1}


async def test_execution_order_follows_sequence_numbers():
    order: list[str] = []

    class Log(ag.Node):
        def __init__(self, name, edges):
            super().__init__(edges)
            self.label = name

        def apply(self, grads):
            order.append(self.label)
            return [grads[0]] * len(self.next_edges)

    x = leaf(1.0)
    first = Log("first", ((ag._core._node.grad_accumulator(x), 0),))
    second = Log("second", ((ag._core._node.grad_accumulator(x), 0),))
    root = Log("root", ((first, 0), (second, 0)))
    y = ag.Tensor._wrap(np.ones(1))
    y._requires_grad, y.grad_fn = True, root
    await y.backward(ag.tensor([1.0]))
    assert order == ["root", "second", "first"]  # created later, run first
    assert x.grad.item() == 2.0


@requires_torch
async def test_random_graph_matches_torch():
    rng = np.random.default_rng(3)
    for _ in range(20):
        xs = [rng.standard_normal(4) for _ in range(3)]
        ours = [ag.tensor(v, requires_grad=True) for v in xs]
        theirs = [torch.tensor(v, requires_grad=True) for v in xs]
        pool_a, pool_t = list(ours), list(theirs)
        for _ in range(12):
            i, j = rng.integers(len(pool_a), size=2)
            op = rng.integers(4)
            a, b = pool_a[i], pool_a[j]
            ta, tb = pool_t[i], pool_t[j]
            if op == 0:
                pool_a.append(a * b), pool_t.append(ta * tb)
            elif op == 1:
                pool_a.append(a + b.tanh()), pool_t.append(ta + tb.tanh())
            elif op == 2:
                pool_a.append(a.sigmoid() - b), pool_t.append(ta.sigmoid() - tb)
            else:
                pool_a.append(a.sin() * 0.5), pool_t.append(ta.sin() * 0.5)
        out_a = sum((p.sum() for p in pool_a[3:]), ag.tensor(0.0))
        out_t = sum(p.sum() for p in pool_t[3:])
        await out_a.backward()
        out_t.backward()
        for a, t in zip(ours, theirs):
            assert (a.grad is None) == (t.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_concurrent_backward_from_threads_with_their_own_loops_adds_up_exactly():
    import threading

    x = ag.tensor(np.arange(4.0), requires_grad=True)
    n_threads, calls = 4, 25
    errors: list[BaseException] = []
    start = threading.Barrier(n_threads)

    def worker() -> None:
        async def main() -> None:
            for _ in range(calls):
                await ((x * x).sum() * 0.5).backward()

        try:
            start.wait()
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(x.grad.numpy(), n_threads * calls * np.arange(4.0))


async def test_grad_wrt_every_output_of_a_multi_output_node():
    x = ag.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)
    go = ag.randn(2, 2)
    ga, gb = await ag.grad(a + 2 * b, [a, b], grad_outputs=go, create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), go.numpy())
    np.testing.assert_allclose(gb.detach().numpy(), 2 * go.numpy())


async def test_grad_skips_the_products_nobody_asked_for():
    """PyTorch's task_should_compute_output: under grad(out, x), matrix-product nodes do not
    compute the weights' gradients (the node's post hook sees None for them); under a plain
    backward they do."""
    import aiograd.nn.functional as F

    x = ag.randn(4, 3, requires_grad=True)
    w1 = ag.randn(5, 3, requires_grad=True)
    w2 = ag.randn(2, 5, requires_grad=True)
    h = F.linear(x, w1).tanh()
    out = (h @ w2.t()).sum()
    seen = []
    h.grad_fn.next_functions[0][0].register_hook(lambda gi, go: seen.append([g is not None for g in gi]))
    out.grad_fn.next_functions[0][0].register_hook(lambda gi, go: seen.append([g is not None for g in gi]))
    (gx,) = await ag.grad(out, x, retain_graph=True)
    # (both nodes are MmBackward0, as in torch: linear without a bias is mm(x, w1.t()))
    assert seen == [[True, False], [True, False]]
    seen.clear()
    await out.backward()
    assert seen == [[True, True], [True, True]]
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), rtol=1e-12)
