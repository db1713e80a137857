"""``grad(..., is_grads_batched=True)``: one vectorized backward equal to the loop of ``grad()``.

For every differentiable op row of the op factory (tests/op_factory.py, the tables that
tests/test_op_registry.py gathers), a batch of grad_outputs goes through one batched backward,
and the result must equal, bit for bit in float64, the stacked results of one ``grad()`` per
sample; it must also match torch's ``is_grads_batched=True``. Each node that runs per sample
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
from helpers import requires_torch, torch
from op_factory import OpSpec
from test_op_registry import all_specs

import aiograd as ag
from aiograd._engine import evaluate as evaluate_module
from aiograd._ops._registry import OPS
from aiograd._ops.batching import BATCHED_RULES, PER_SAMPLE_RULES

BATCH = 3
GRAD_SPECS = [s for s in all_specs() if s.grad]
once = pytest.mark.asyncio(loop_factories=["asyncio"])  # op math: the loop variant is irrelevant


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


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and np.array_equal(a, b)


@once
@pytest.mark.parametrize("spec", GRAD_SPECS, ids=[s.name for s in GRAD_SPECS])
async def test_batched_equals_loop_bitwise(spec: OpSpec, per_sample_nodes: list[str]) -> None:
    xs = spec.tensors()
    out = spec.run(*xs)
    v = _batch_of(spec, out.shape)
    batched = await ag.grad(out, xs, ag.tensor(v), retain_graph=True, allow_unused=True, is_grads_batched=True)
    fell_back = set(per_sample_nodes)
    loop = [await ag.grad(out, xs, ag.tensor(v[b]), retain_graph=True, allow_unused=True) for b in range(BATCH)]
    for i, g in enumerate(batched):
        column = [sample[i] for sample in loop]
        if g is None:
            assert all(c is None for c in column)
            continue
        assert g.shape == (BATCH, *xs[i].shape)
        expected = np.stack([c.data if c is not None else np.zeros(xs[i].shape) for c in column])
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
    for g, tg, x in zip(grads, tgrads, xs):
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
