"""``aiograd.serving``'s request helpers: ``concat_requests``/``stack_requests`` and
``RequestBatch.split``, ``per_request_grad`` (one batched forward and backward giving each
request's own gradient: checked against a ``grad()`` per request and against torch), and the
row-independence checks (``batch_coupled_modules``, ``check_rows_independent``).

The math does not depend on the event loop, so these run once, on asyncio's.
"""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd import nn, serving

once = pytest.mark.aiograd(backends=["asyncio"])


def mlp(seed: int = 0, features: int = 6, classes: int = 3) -> nn.Sequential:
    """A served classifier (float64, frozen): rows independent."""
    ag.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(features, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, classes)
    ).requires_grad_(False)


def inputs(sizes, features: int = 6, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, features)) for n in sizes]


async def one_by_one(fn, xs, grad_outputs=None):
    """The reference: a forward and a ``grad()`` per request."""
    out = []
    for i, x in enumerate(xs):
        xt = ag.tensor(x, requires_grad=True)
        y = fn(xt)
        v = ag.ones_like(y) if grad_outputs is None else ag.as_tensor(grad_outputs[i], dtype=y.dtype)
        (g,) = await ag.grad(y, xt, v.expand(y.shape))
        out.append((y.detach().numpy(), g.numpy()))
    return out


# ------------------------------------------------------------------------- joining and splitting
def test_concat_requests_joins_rows_and_splits_back():
    xs = inputs([2, 1, 3])
    joined = serving.concat_requests(xs)
    assert isinstance(joined, serving.RequestBatch)
    assert joined.sizes == (2, 1, 3) and len(joined) == 3 and not joined.stacked
    np.testing.assert_array_equal(joined.tensor.numpy(), np.concatenate(xs))
    assert repr(joined) == "RequestBatch(3 requests concatenated, rows=6, shape=(6, 6))"
    pieces = joined.split(joined.tensor * 2)
    assert len(pieces) == 3 and all(isinstance(p, ag.Tensor) for p in pieces)
    for p, x in zip(pieces, xs):
        np.testing.assert_array_equal(p.numpy(), 2 * x)
    arrays = joined.split(np.arange(6))
    assert [a.tolist() for a in arrays] == [[0, 1], [2], [3, 4, 5]]


def test_stack_requests_adds_the_batch_dimension_and_split_removes_it():
    rng = np.random.default_rng(0)
    samples = [rng.standard_normal((2, 3)) for _ in range(4)]
    joined = serving.stack_requests(samples)
    assert joined.sizes == (1, 1, 1, 1) and joined.stacked
    assert tuple(joined.tensor.shape) == (4, 2, 3)
    pieces = joined.split(joined.tensor + 1)
    assert [tuple(p.shape) for p in pieces] == [(2, 3)] * 4
    np.testing.assert_array_equal(pieces[3].numpy(), samples[3] + 1)
    assert [a.shape for a in joined.split(np.zeros((4, 5)))] == [(5,)] * 4


def test_joining_keeps_dtype_and_promotes_mixed_items_as_cat_does():
    f32 = [np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)]
    assert serving.concat_requests(f32).tensor.dtype == ag.float32
    mixed = [np.ones((2, 3), np.float32), np.zeros((1, 3), np.float64)]
    assert serving.concat_requests(mixed).tensor.dtype == ag.float64
    assert serving.concat_requests(f32, dtype=ag.float64).tensor.dtype == ag.float64
    lists = serving.concat_requests([[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]]])
    assert lists.sizes == (1, 2) and lists.tensor.tolist() == [[1, 2], [3, 4], [5, 6]]


@once
async def test_tensor_items_that_require_grad_stay_differentiable():
    a = ag.tensor([[1.0, 2.0]], requires_grad=True)
    b = ag.tensor([[3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    joined = serving.concat_requests([a, b])
    assert joined.tensor.grad_fn.name() == "CatBackward0"
    pa, pb = joined.split(joined.tensor * ag.tensor([1.0, 10.0]))
    await (pa.sum() + 2 * pb.sum()).backward()
    assert a.grad.tolist() == [[1.0, 10.0]]
    assert b.grad.tolist() == [[2.0, 20.0], [2.0, 20.0]]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: serving.concat_requests([]), ValueError,
         "concat_requests: no items (a batch needs at least one request)"),
        (lambda: serving.concat_requests(np.zeros((2, 3))), TypeError,
         "concat_requests: expected a sequence of items (one per request), got ndarray"),
        (lambda: serving.concat_requests([np.zeros((2, 3)), np.zeros((1, 4))]), ValueError,
         "concat_requests: request 1's item has shape (1, 4), but request 0's rows have shape "
         "(3,): every row must have the same shape"),
        (lambda: serving.concat_requests([np.zeros(3), 1.0]), ValueError,
         "concat_requests: request 1's item is a 0-d tensor; each item must be a batch of rows "
         "(use stack_requests for one sample per request)"),
        (lambda: serving.stack_requests([np.zeros((2, 3)), np.zeros((3, 2))]), ValueError,
         "stack_requests: request 1's item has shape (3, 2), but request 0's has shape (2, 3): "
         "stacked items must have one shape"),
        (lambda: serving.concat_requests([np.zeros((2, 3))]).split(np.zeros(3)), ValueError,
         "RequestBatch.split: expected a result with 2 rows along dim 0 (one per row of the "
         "batch), got shape (3,)"),
        (lambda: serving.concat_requests([np.zeros((2, 3))]).split(ag.tensor(1.0)), ValueError,
         "RequestBatch.split: expected a result with 2 rows along dim 0 (one per row of the "
         "batch), got shape ()"),
    ],
)
def test_joining_errors_name_the_request(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


# ------------------------------------------------------------------------------ per_request_grad
@once
async def test_per_request_grad_equals_a_grad_per_request():
    model = mlp()
    xs = inputs([1, 4, 2, 7, 3])
    got = await serving.per_request_grad(model, xs)
    want = await one_by_one(model, xs)
    assert len(got) == len(xs)
    for (out, g), (want_out, want_g), x in zip(got, want, xs):
        assert isinstance(out, ag.Tensor) and not out.requires_grad and out.grad_fn is None
        assert tuple(g.shape) == x.shape and g.dtype == ag.float64
        np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-14)


@once
async def test_grad_outputs_per_request_sequence_numbers_and_none():
    model = mlp()
    xs = inputs([2, 3, 1])
    rng = np.random.default_rng(5)
    v0 = rng.standard_normal((2, 3))
    got = await serving.per_request_grad(model, xs, [v0, None, 2.5])
    want = await one_by_one(model, xs, [v0, 1.0, 2.5])
    for (_, g), (_, want_g) in zip(got, want):
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-14)


@once
async def test_grad_outputs_from_the_output_saliency_of_the_predicted_class():
    model = mlp()
    xs = inputs([3, 2])

    def one_hot_of_argmax(y: ag.Tensor) -> np.ndarray:
        assert not y.requires_grad  # the callable sees the detached output
        v = np.zeros(tuple(y.shape))
        v[np.arange(len(v)), y.numpy().argmax(1)] = 1.0
        return v

    got = await serving.per_request_grad(model, xs, one_hot_of_argmax)
    want_v = [one_hot_of_argmax(model(ag.tensor(x)).detach()) for x in xs]
    want = await one_by_one(model, xs, want_v)
    for (_, g), (_, want_g) in zip(got, want):
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-14)
    # Per request: a callable for one, a fixed seed for the other.
    fixed = np.eye(3)[[2, 2]]
    got = await serving.per_request_grad(model, xs, [one_hot_of_argmax, fixed])
    want = await one_by_one(model, xs, [want_v[0], fixed])
    for (_, g), (_, want_g) in zip(got, want):
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-14)


@once
async def test_stacked_samples_through_a_conv_net():
    ag.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(48, 2))
    net.requires_grad_(False)
    rng = np.random.default_rng(2)
    samples = [rng.standard_normal((2, 4, 4)) for _ in range(5)]
    got = await serving.per_request_grad(net, samples, stack=True)
    for (out, g), s in zip(got, samples):
        xt = ag.tensor(s[None], requires_grad=True)
        y = net(xt)
        (want,) = await ag.grad(y.sum(), xt)
        assert tuple(out.shape) == (2,) and tuple(g.shape) == (2, 4, 4)
        np.testing.assert_allclose(out.numpy(), y.detach().numpy()[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g.numpy(), want.numpy()[0], rtol=1e-12, atol=1e-14)


@once
async def test_float32_requests_match_per_request_to_float_tolerance():
    model = mlp().float()
    xs = [x.astype(np.float32) for x in inputs([8] * 16)]
    got = await serving.per_request_grad(model, xs)
    want = await one_by_one(model, xs)
    for (_, g), (_, want_g) in zip(got, want):
        assert g.dtype == ag.float32
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-5, atol=1e-6)


@requires_torch
@once
async def test_per_request_grad_equals_torchs_per_request_gradients():
    model = mlp()
    tmodel = torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.GELU(),
        torch.nn.Linear(16, 3),
    ).double()
    tmodel.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in model.state_dict().items()})
    xs = inputs([3, 1, 5])
    targets = [0, 2, 1]
    seeds = [np.eye(3)[[t] * len(x)] for t, x in zip(targets, xs)]
    got = await serving.per_request_grad(model, xs, seeds)
    for (out, g), x, v in zip(got, xs, seeds):
        xt = torch.tensor(x, requires_grad=True)
        y = tmodel(xt)
        (want,) = torch.autograd.grad(y, xt, torch.from_numpy(v))
        np.testing.assert_allclose(out.numpy(), y.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


@once
async def test_parameters_grads_are_untouched_and_no_grad_does_not_stop_it():
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 2))  # parameters require grad
    xs = inputs([2, 2])
    with ag.no_grad():
        got = await serving.per_request_grad(model, xs)
    want = await one_by_one(model, xs)
    assert all(p.grad is None for p in model.parameters())
    for (_, g), (_, want_g) in zip(got, want):
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    ("fn", "grad_outputs", "error", "message"),
    [
        (lambda x: x.sum(), None, ValueError,
         "per_request_grad: fn's output has shape () for a batch of 3 rows; it must have one row "
         "per input row (dim 0), each depending on its own row only"),
        (lambda x: x[:2], None, ValueError,
         "per_request_grad: fn's output has shape (2, 6) for a batch of 3 rows; it must have one "
         "row per input row (dim 0), each depending on its own row only"),
        (lambda x: x.detach().numpy(), None, TypeError,
         "per_request_grad: fn must return a Tensor, got ndarray"),
        (lambda x: x * 2, [None], ValueError,
         "per_request_grad: 1 grad_outputs for 2 requests: give one per request (None for ones)"),
        (lambda x: x * 2, [None, np.ones((2, 6))], ValueError,
         "per_request_grad: grad_output of request 1 has shape (2, 6), but its output has shape "
         "(1, 6)"),
        (lambda x: x * 2, np.ones((3, 6)), TypeError,
         "per_request_grad: grad_outputs must be None, a sequence with one entry per request, or "
         "a callable of a request's output; got ndarray"),
    ],
)
@once
async def test_per_request_grad_errors(fn, grad_outputs, error, message):
    with pytest.raises(error) as info:
        await serving.per_request_grad(fn, inputs([2, 1]), grad_outputs)
    assert str(info.value) == message


# ------------------------------------------------------------------------------ rows independent
def test_batch_coupled_modules_finds_batch_statistics():
    net = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(),
                        nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8, track_running_stats=False)))
    assert serving.batch_coupled_modules(net) == [
        "BatchNorm1d '1' in training mode",
        "BatchNorm1d '3.1' in training mode",
    ]
    net.eval()
    assert serving.batch_coupled_modules(net) == [
        "BatchNorm1d '3.1' without running statistics (track_running_stats=False)",
    ]
    assert serving.batch_coupled_modules(nn.BatchNorm1d(3)) == [
        "BatchNorm1d (the model itself) in training mode"
    ]
    assert serving.batch_coupled_modules(mlp()) == []
    assert serving.batch_coupled_modules(nn.LayerNorm(4)) == []


@once
async def test_per_request_grad_refuses_batch_statistics_and_the_check_is_needed():
    ag.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 2))
    xs = inputs([3, 4])
    message = (
        "per_request_grad: BatchNorm1d '1' in training mode normalises with the statistics of "
        "the whole batch, so one request's gradient would depend on the other requests: call the "
        "model's .eval() (with running statistics), or compute each request on its own"
    )
    for fn in (net, net.forward):
        with pytest.raises(ValueError) as info:
            await serving.per_request_grad(fn, xs)
        assert str(info.value) == message
    # Without the check the numbers are wrong: each request's gradient depends on the others.
    coupled = await serving.per_request_grad(net, xs, check=False)
    alone = await one_by_one(net, xs)
    assert not np.allclose(coupled[0].grad.numpy(), alone[0][1], atol=1e-3)
    # In eval mode (running statistics) the rows are independent again.
    net.eval()
    got = await serving.per_request_grad(net, xs)
    want = await one_by_one(net, xs)
    for (_, g), (_, want_g) in zip(got, want):
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-14)


@once
async def test_check_rows_independent_passes_row_wise_models():
    rng = np.random.default_rng(3)
    await serving.check_rows_independent(mlp(), rng.standard_normal((5, 6)))
    ag.manual_seed(0)
    normed = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    await serving.check_rows_independent(normed, rng.standard_normal((4, 6)), probes=4)
    attention = nn.MultiheadAttention(4, 2, batch_first=True)
    await serving.check_rows_independent(lambda x: attention(x, x, x)[0],
                                         rng.standard_normal((3, 5, 4)))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: (lambda x: x.softmax(0)),
         "check_rows_independent: output row 0 depends on input row [1-4] "),
        (lambda: (lambda x: x - x.mean(0)),
         "check_rows_independent: output row 0 depends on input row [1-4] "),
        (lambda: nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)),
         "check_rows_independent: output row 0 depends on input row [1-4] "),
        (lambda: (lambda x: x * x[-1:]),  # every row scaled by the last one
         "check_rows_independent: output row 0 depends on input row 4 "),
        (lambda: (lambda x: x.roll(1, 0)),  # row r is input row r-1
         "check_rows_independent: output row 0 depends on input row 4 "),
    ],
)
@once
async def test_check_rows_independent_names_the_coupled_rows(make, message):
    ag.manual_seed(0)
    x = np.random.default_rng(4).standard_normal((5, 6))
    with pytest.raises(ValueError) as info:
        await serving.check_rows_independent(make(), x)
    assert re.match(message + r"\(a gradient of [0-9.e-]+ there\)", str(info.value))
    assert str(info.value).endswith(
        "the rows of fn are not independent, so batching requests would mix them"
    )


@once
async def test_check_rows_independent_bad_examples():
    with pytest.raises(ValueError, match="needs at least 2 rows, got 1"):
        await serving.check_rows_independent(mlp(), np.zeros((1, 6)))
    with pytest.raises(TypeError, match="the example must be floating point, got int64"):
        await serving.check_rows_independent(mlp(), np.zeros((3, 6), dtype=np.int64))
    with pytest.raises(ValueError, match=r"fn's output has shape \(\) for a batch of 3 rows"):
        await serving.check_rows_independent(lambda x: x.sum(), np.zeros((3, 6)))


# ----------------------------------------------------------------------- with the batcher
@once
async def test_batched_saliency_service_gives_each_caller_its_own_gradient():
    """The pattern the docs show: ``@serving.batch`` around ``per_request_grad``."""
    model = mlp()

    @serving.batch(max_batch_size=16)
    async def saliency(xs: list[np.ndarray]) -> list[np.ndarray]:
        return [g.numpy() for _, g in await serving.per_request_grad(model, xs)]

    xs = inputs([1 + i % 5 for i in range(40)])
    got = await asyncio.gather(*(saliency(x) for x in xs))
    want = await one_by_one(model, xs)
    for g, (_, want_g) in zip(got, want):
        np.testing.assert_allclose(g, want_g, rtol=1e-12, atol=1e-14)
    stats = saliency.statistics()
    assert stats.items == 40 and stats.batches == 3 and stats.max_batch_size == 16


@once
async def test_on_another_device_the_answers_stay_there_and_equal_the_cpus():
    model = mlp()
    xs = inputs([2, 1, 3])
    seeds = [np.ones((2, 3)), 2.0, None]
    on_cpu = await serving.per_request_grad(model, xs, seeds)
    on_sim = await serving.per_request_grad(model.to("sim:0"), xs, seeds, device="sim:0")
    for (out, g), (want_out, want_g) in zip(on_sim, on_cpu):
        assert out.device == g.device == ag.device("sim:0")
        np.testing.assert_allclose(g.cpu().numpy(), want_g.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out.cpu().numpy(), want_out.numpy(), rtol=1e-12, atol=1e-14)
