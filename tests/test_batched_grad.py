"""``grad(..., is_grads_batched=True)``: one vectorized backward equal to the loop of ``grad()``.

For every differentiable op row of the op factory (tests/op_factory.py, the tables that
tests/test_op_registry.py gathers), a batch of grad_outputs goes through one batched backward,
and the result must equal, bit for bit in float64, the stacked results of one ``grad()`` per
sample, wherever the batched backward runs the loop's kernels on the loop's data (a matrix
product that becomes another BLAS call once batched is compared within helpers.ULPS); it must
also match torch's ``is_grads_batched=True``. Each node that runs per sample
instead of vectorized (``aiograd._engine.batched``) is recorded, and only the nodes without a
batched rule (``aiograd._ops.batching.BATCHED_RULES``) may do so. The argument checks are
compared with torch's, message for message.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

import numpy as np
import pytest
from helpers import assert_matches_torch, requires_torch, torch
from op_factory import OpSpec
from test_op_registry import all_specs

import aiograd as ag
from aiograd._engine import evaluate as evaluate_module
from aiograd._ops import linalg as linalg_module
from aiograd._ops._registry import OPS
from aiograd._ops.batching import BATCHED_RULES, PER_SAMPLE_RULES

BATCH = 3
#: Rows with a matrix-vector product whose vector operand gets a gradient: batched, the vectors
#: form a matrix and one matrix product (BLAS gemm) replaces a matrix-vector product per sample
#: (gemv), which rounds differently in the last bit (docs/functional.md). Compared within
#: helpers.ULPS there. (``batched_vec``, a batch of matrices times a vector, folds into one
#: matrix times the vector.)
MATVEC_SPECS = frozenset({"mv", "vm", "quadratic_form", "mlp", "linear_1d", "batched_vec"})
MATVEC_SPECS |= {"mv_method", "addmv", "addmv_scaled", "addmv_broadcast_input", "addmv_scalar_input_beta_zero"}
GRAD_SPECS = [s for s in all_specs() if s.grad]
once = pytest.mark.aiograd(backends=["asyncio"])  # op math: the loop variant is irrelevant


def _batch_of(spec: OpSpec, shape: tuple[int, ...], salt: int = 7) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(spec.name.encode()) + salt)
    return rng.standard_normal((BATCH, *shape))


@pytest.fixture
def per_sample_nodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the nodes that ran once per sample instead of vectorized."""
    seen: list[str] = []
    original = evaluate_module.apply_per_sample

    def counting(graph_task: Any, node: Any, buffer: Any) -> Any:
        seen.append(node.name())
        return original(graph_task, node, buffer)

    monkeypatch.setattr(evaluate_module, "apply_per_sample", counting)
    return seen


@pytest.fixture
def folded_products(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The shapes of the batches of matrices that ``matmul`` folded into the rows of one 2-D
    product (PyTorch's ``should_fold``). A batched gradient times a matrix folds: one gemm of
    ``batch * m`` rows where the loop does one of ``m`` rows per sample. The rows' data are the
    same, but the BLAS call is not: which kernel handles a block of rows (and so the order in
    which it sums) may depend on the number of rows (OpenBLAS's Nehalem kernels do, for an inner
    dimension of 4 or 5: the SVD rows), so the last bit may differ from the loop's."""
    seen: list[tuple[int, ...]] = []
    original = linalg_module._folds

    def recording(input: Any, other: Any) -> bool:
        folds = original(input, other)
        if folds:
            seen.append(input.data.shape)
        return folds

    monkeypatch.setattr(linalg_module, "_folds", recording)
    return seen


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and np.array_equal(a, b)


@once
@pytest.mark.parametrize("spec", GRAD_SPECS, ids=[s.name for s in GRAD_SPECS])
async def test_batched_equals_loop_bitwise(spec: OpSpec, per_sample_nodes: list[str],
                                           folded_products: list[tuple[int, ...]]) -> None:
    """Bit for bit where the batched backward runs the loop's kernels on the loop's data; within
    helpers.ULPS where it runs another BLAS call: a gemm for the per-sample gemvs
    (MATVEC_SPECS), or one product of the batch folded into rows (``folded_products``)."""
    xs = spec.tensors()
    out = spec.run(*xs)
    v = _batch_of(spec, out.shape)
    folded_products.clear()  # (the forward's own folds are the loop's too)
    batched = await ag.grad(out, xs, ag.tensor(v), retain_graph=True, allow_unused=True, is_grads_batched=True)
    fell_back, folded = set(per_sample_nodes), bool(folded_products)
    loop = [await ag.grad(out, xs, ag.tensor(v[b]), retain_graph=True, allow_unused=True) for b in range(BATCH)]
    for i, g in enumerate(batched):
        column = [sample[i] for sample in loop]
        if g is None:
            assert all(c is None for c in column)
            continue
        assert g.shape == (BATCH, *xs[i].shape)
        expected = np.stack([c.data if c is not None else np.zeros(xs[i].shape) for c in column])
        if spec.name in MATVEC_SPECS or folded:
            # sums of products in another order: within a few ulps of the largest entry
            scale = float(np.abs(expected[np.isfinite(expected)]).max(initial=0.0))
            assert_matches_torch(g.data, expected, f"input {i}", scale=scale)
        else:
            assert _same(g.data, expected), f"input {i}: max diff {np.max(np.abs(g.data - expected))}"
    assert fell_back <= PER_SAMPLE_RULES, f"ran per sample, not vectorized: {sorted(fell_back - PER_SAMPLE_RULES)}"


@once
@pytest.mark.parametrize("spec", [s for s in GRAD_SPECS if s.gradgrad], ids=[s.name for s in GRAD_SPECS if s.gradgrad])
async def test_batched_create_graph_equals_loop(spec: OpSpec) -> None:
    """The batched backward, recorded: its second derivatives are the loop's (the order of the
    sums differs, so to rounding)."""
    xs = spec.tensors()
    out = spec.run(*xs)
    v = _batch_of(spec, out.shape)
    ws = [_batch_of(spec, x.shape, salt=11 + i) for i, x in enumerate(xs)]

    batched = await ag.grad(out, xs, ag.tensor(v), create_graph=True, retain_graph=True, allow_unused=True, is_grads_batched=True)
    terms = [(g * ag.tensor(w)).sum() for g, w in zip(batched, ws) if g is not None and g.requires_grad]
    if not terms:
        return
    second = await ag.grad(sum(terms[1:], terms[0]), xs, retain_graph=True, allow_unused=True)

    expected = [np.zeros(x.shape) for x in xs]
    for b in range(BATCH):
        gs = await ag.grad(out, xs, ag.tensor(v[b]), create_graph=True, retain_graph=True, allow_unused=True)
        ts = [(g * ag.tensor(w[b])).sum() for g, w in zip(gs, ws) if g is not None and g.requires_grad]
        if ts:
            for i, s in enumerate(await ag.grad(sum(ts[1:], ts[0]), xs, retain_graph=True, allow_unused=True)):
                if s is not None:
                    expected[i] += s.data
    rtol = 1e-12 if spec.rtol <= 1e-7 else spec.rtol  # float32 intermediates: the row's own
    for i, s in enumerate(second):
        np.testing.assert_allclose(s.data if s is not None else 0 * expected[i], expected[i], rtol=rtol, atol=1e-12)


@requires_torch
@once
@pytest.mark.parametrize("spec", [s for s in GRAD_SPECS if s.torch], ids=[s.name for s in GRAD_SPECS if s.torch])
async def test_batched_matches_torch(spec: OpSpec) -> None:
    xs = spec.tensors()
    ts = [torch.tensor(x.data, requires_grad=True) for x in xs]
    out, tout = spec.run(*xs), spec.fn(torch, *ts)
    v = _batch_of(spec, out.shape)
    grads = await ag.grad(out, xs, ag.tensor(v), allow_unused=True, is_grads_batched=True)
    tgrads = torch.autograd.grad(tout, ts, torch.tensor(v), allow_unused=True, is_grads_batched=True)
    for g, tg in zip(grads, tgrads):
        if tg is None:
            assert g is None or not g.data.any()
            continue
        np.testing.assert_allclose(g.data, tg.detach().numpy(force=True), rtol=spec.rtol, atol=1e-10)


def test_every_registered_rule_is_batched() -> None:
    """Every op's node has a vectorized rule: none of them falls back to the per-sample loop."""
    names = {n for rule in OPS.values() for n in rule.node_names}
    missing = sorted(names - BATCHED_RULES - PER_SAMPLE_RULES)
    assert not missing, f"nodes without a batched rule: {missing}"

    assert not BATCHED_RULES & PER_SAMPLE_RULES


# ------------------------------------------------------------------------------ argument checks
def _torch_words(message: str) -> str:
    """aiograd writes shapes as tuples where torch writes ``torch.Size([...])``."""
    return re.sub(
        r"torch\.Size\(\[([0-9, ]*)\]\)",
        lambda m: str(tuple(int(d) for d in m.group(1).split(", ") if d)),
        message,
    )


def _graph(lib: Any) -> tuple[Any, Any, Any]:
    if lib is ag:
        x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    else:
        x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    return x, x * 2.0, (x * x).sum()


def _ones(lib: Any, *shape: int) -> Any:
    return ag.tensor(np.ones(shape)) if lib is ag else torch.ones(shape, dtype=torch.float64)


BATCHED_ERRORS = {
    "rest_of_shape_differs": lambda lib, x, y, s: ((y, x, _ones(lib, 4, 2)), {}),
    "no_batch_dim": lambda lib, x, y, s: ((y, x, _ones(lib, 3)), {}),
    "extra_dim": lambda lib, x, y, s: ((y, x, _ones(lib, 4, 4, 3)), {}),
    "implicit_for_vector": lambda lib, x, y, s: ((y, x, None), {}),
    "implicit_for_scalar": lambda lib, x, y, s: ((s, x, None), {}),
    "batched_mixed_with_none": lambda lib, x, y, s: (([y, s], x, [_ones(lib, 4, 3), None]), {}),
    "batch_sizes_differ": lambda lib, x, y, s: (([y, y], x, [_ones(lib, 4, 3), _ones(lib, 5, 3)]), {}),
    "empty_batch": lambda lib, x, y, s: ((y, x, _ones(lib, 0, 3)), {}),
    "zero_dim_grad": lambda lib, x, y, s: ((s, x, _ones(lib)), {}),
}


@requires_torch
@once
@pytest.mark.parametrize("case", list(BATCHED_ERRORS))
async def test_batched_argument_errors_match_torch(case: str) -> None:
    make = BATCHED_ERRORS[case]
    x, y, s = _graph(torch)
    args, kwargs = make(torch, x, y, s)
    with pytest.raises(Exception) as theirs:
        torch.autograd.grad(*args, is_grads_batched=True, **kwargs)
    x, y, s = _graph(ag)
    args, kwargs = make(ag, x, y, s)
    with pytest.raises(Exception) as mine:
        await ag.grad(*args, is_grads_batched=True, **kwargs)
    assert type(mine.value) is type(theirs.value)
    assert str(mine.value) == _torch_words(str(theirs.value))


@requires_torch
def test_batched_results_match_torch_shapes_and_unused_inputs() -> None:
    """Scalar outputs with a batch of seeds, an unused input (None, or unbatched zeros under
    materialize_grads, as torch returns), and float32 grads for a float64 output (cast)."""
    for lib in (ag, torch):
        x, y, s = _graph(lib)
        w = ag.tensor([1.0, 2.0, 3.0], requires_grad=True) if lib is ag else torch.ones(3, dtype=torch.float64, requires_grad=True)
        seeds = ag.tensor(np.arange(5.0)) if lib is ag else torch.arange(5.0, dtype=torch.float64)
        call = (lambda *a, **k: ag.sync.grad(*a, **k)) if lib is ag else torch.autograd.grad
        g = call(s, x, seeds, retain_graph=True, is_grads_batched=True)[0]
        unused = call(y, [x, w], _ones(lib, 2, 3), retain_graph=True, allow_unused=True, is_grads_batched=True)
        zeros = call(y, [x, w], _ones(lib, 2, 3), retain_graph=True, materialize_grads=True, is_grads_batched=True)
        f32 = _ones(lib, 2, 3).float() if lib is torch else ag.tensor(np.ones((2, 3), np.float32))
        cast = call(y, x, f32, retain_graph=True, is_grads_batched=True)[0]
        if lib is ag:
            mine = (g.data, unused[1], zeros[1].shape, cast.dtype, cast.data)
        else:
            theirs = (g.numpy(), unused[1], tuple(zeros[1].shape), cast.dtype, cast.numpy())
    assert np.array_equal(mine[0], theirs[0])
    assert mine[1] is None and theirs[1] is None
    assert mine[2] == theirs[2] == (3,)
    assert str(mine[3]) == str(theirs[3]).removeprefix("torch.") == "float64"
    assert np.array_equal(mine[4], theirs[4])


@requires_torch
@once
async def test_grad_with_no_inputs_raises_torchs_error() -> None:
    """``grad(y, [])`` and ``backward(inputs=[])``: RuntimeError, PyTorch's words."""
    for call, tcall in [
        (lambda y: ag.grad(y, []), lambda y: torch.autograd.grad(y, [])),
        (lambda y: ag.grad(y, ()), lambda y: torch.autograd.grad(y, ())),
        (lambda y: y.backward(inputs=[]), lambda y: y.backward(inputs=[])),
    ]:
        _, _, s = _graph(torch)
        with pytest.raises(RuntimeError) as theirs:
            tcall(s)
        _, _, s = _graph(ag)
        with pytest.raises(RuntimeError) as mine:
            await call(s)
        assert str(mine.value) == str(theirs.value)


class Doubler(ag.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2.0

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        seen.append(g.shape)
        return g * 2.0


seen: list[tuple[int, ...]] = []


@requires_torch
@once
async def test_custom_function_runs_per_sample_as_torch_shows_it(per_sample_nodes: list[str]) -> None:
    """A custom Function's backward sees one sample's gradient (torch's vmap shows it the same
    logical shape); the rest of the graph stays vectorized."""
    seen.clear()
    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = Doubler.apply(x.tanh()) * 3.0
    v = np.arange(12.0).reshape(4, 3)
    (g,) = await ag.grad(y, x, ag.tensor(v), is_grads_batched=True)
    assert seen == [(3,)] * 4
    assert per_sample_nodes == ["DoublerBackward"]

    class TDoubler(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2.0

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            seen.append(tuple(g.shape))
            return g * 2.0

    seen.clear()
    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(TDoubler.apply(tx.tanh()) * 3.0, tx, torch.tensor(v), is_grads_batched=True)
    assert seen == [(3,)]  # once, on a BatchedTensor whose logical shape is one sample's
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-13)


def _loss_cases() -> dict[str, Any]:
    import aiograd.nn.functional as F

    target = np.array([1, 0, 2, 1])
    weight = np.array([0.5, 2.0, 1.0])
    return {
        "mse_none": lambda x, y: F.mse_loss(x, y, reduction="none"),
        "mse_sum": lambda x, y: F.mse_loss(x, y, reduction="sum"),
        "nll_none": lambda x, y: F.nll_loss(x * y, ag.tensor(target), reduction="none"),
        "nll_sum_weighted": lambda x, y: F.nll_loss(x * y, ag.tensor(target), weight=ag.tensor(weight), reduction="sum"),
        "cross_entropy_none": lambda x, y: F.cross_entropy(x + y, ag.tensor(target), reduction="none"),
        "max_all_ties": lambda x, y: (x * 0.0 + 1.0).max() * y.sum(),
        "norm_all": lambda x, y: (x * y).norm(),
    }


@once
@pytest.mark.parametrize("case", list(_loss_cases()))
async def test_batched_losses_and_extrema_equal_loop(case: str, per_sample_nodes: list[str]) -> None:
    """The reductions of the fused losses and full extrema, each way; all vectorized."""
    fn = _loss_cases()[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    xs = [ag.tensor(rng.standard_normal((4, 3)), requires_grad=True) for _ in range(2)]
    out = fn(*xs)
    v = rng.standard_normal((BATCH, *out.shape))
    batched = await ag.grad(out, xs, ag.tensor(v), retain_graph=True, is_grads_batched=True)
    assert not per_sample_nodes
    for b in range(BATCH):
        for g, s in zip(batched, await ag.grad(out, xs, ag.tensor(v[b]), retain_graph=True)):
            assert np.array_equal(g.data[b], s.data)


INDEX_CASES = {
    "unsqueeze_by_none": (lambda x: x[None, :, 1:], False),
    "ellipsis_and_int": (lambda x: x[..., 1], False),
    "mask": (lambda x: x[x.detach() > 0], False),
    "array_after_slice": (lambda x: x[:, np.array([2, 0, 2])], False),
    "arrays_apart": (lambda x: x[np.array([1, 0]), :, np.array([0, 2])], True),
}


@once
@pytest.mark.parametrize("case", list(INDEX_CASES))
async def test_batched_indexing_equals_loop(case: str, per_sample_nodes: list[str]) -> None:
    """Indexing rules keep the batch dim in front; index arrays that are not adjacent (numpy
    moves their dims first) make that one node run per sample."""
    fn, per_sample = INDEX_CASES[case]
    x = ag.tensor(np.random.default_rng(3).standard_normal((2, 3, 3)), requires_grad=True)
    out = fn(x * 1.0)
    v = np.random.default_rng(4).standard_normal((BATCH, *out.shape))
    (g,) = await ag.grad(out, x, ag.tensor(v), retain_graph=True, is_grads_batched=True)
    assert per_sample_nodes == (["IndexBackward0"] if per_sample else [])
    for b in range(BATCH):
        (s,) = await ag.grad(out, x, ag.tensor(v[b]), retain_graph=True)
        assert np.array_equal(g.data[b], s.data)


def _fill_with_tensor(x: Any, v: Any) -> Any:
    z = x * 1.0
    z.fill_(v.sum())
    return z * x


def _setitem_mask(x: Any, v: Any) -> Any:
    z = x * 1.0
    z[x.detach() > 0] = v.sum()
    return z * 2.0


def _setitem_basic(x: Any, v: Any) -> Any:
    z = x * 1.0
    z[0] = v[0] * 3.0
    return z


@once
@pytest.mark.parametrize("fn", [_fill_with_tensor, _setitem_mask, _setitem_basic], ids=lambda f: f.__name__)
async def test_batched_in_place_writes_equal_loop(fn: Any, per_sample_nodes: list[str]) -> None:
    """The in-place writes whose source gets a gradient run per sample (PER_SAMPLE_RULES), and
    give the loop's results."""
    rng = np.random.default_rng(5)
    xs = [ag.tensor(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(2)]
    out = fn(*xs)
    v = rng.standard_normal((BATCH, *out.shape))
    batched = await ag.grad(out, xs, ag.tensor(v), retain_graph=True, is_grads_batched=True)
    assert per_sample_nodes and set(per_sample_nodes) <= PER_SAMPLE_RULES
    for b in range(BATCH):
        for g, s in zip(batched, await ag.grad(out, xs, ag.tensor(v[b]), retain_graph=True)):
            assert np.array_equal(g.data[b], s.data)


@once
async def test_batched_backward_of_recorded_indexing(per_sample_nodes: list[str]) -> None:
    """hessian(vectorize=True) of a function that indexes: a batched backward through the
    scatters recorded by the first backward (vectorized too), equal to the row-by-row hessian."""
    import aiograd.functional as AF

    def f(x: Any) -> Any:
        return (x[np.array([0, 2, 2])] ** 3).sum() + (x[1:] * x[:-1]).sum()

    x = ag.tensor([0.5, -1.0, 2.0, 1.5])
    rows = await AF.hessian(f, x)
    batched = await AF.hessian(f, x, vectorize=True)
    assert not per_sample_nodes
    assert np.array_equal(rows.data, batched.data)
