"""Random graphs built from many ops, run through aiograd and torch side by side.

Each program draws ops from a menu that both libraries spell the same way, reusing intermediate
results (so nodes have several consumers), then checks: backward from several roots into the
leaves, ``grad()`` with respect to intermediate tensors, and second derivatives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag

# Every graph also runs with the engine's shuffle debug mode on (two seeds): the order among
# equal-priority ready nodes must not change any result beyond float rounding.
pytestmark = [
    requires_torch,
    pytest.mark.usefixtures("aiograd_shuffle_seed"),
    pytest.mark.parametrize("aiograd_shuffle_seed", [None, 1, 2], indirect=True, ids=["ordered", "shuffle1", "shuffle2"]),
]

SHAPE = (3, 4)

# (name, arity, fn(lib, *xs)); every op maps (3, 4) tensors to a (3, 4) tensor.
MENU: list[tuple[str, int, Callable[..., Any]]] = [
    ("add", 2, lambda lib, a, b: a + b),
    ("sub_bcast", 2, lambda lib, a, b: a - b.sum(0, keepdim=True)),
    ("mul", 2, lambda lib, a, b: a * b),
    ("div", 2, lambda lib, a, b: a / (b * b + 1.0)),
    ("tanh", 1, lambda lib, a: a.tanh()),
    ("sigmoid", 1, lambda lib, a: a.sigmoid()),
    ("sin", 1, lambda lib, a: a.sin()),
    ("exp_small", 1, lambda lib, a: (a * 0.3).exp()),
    ("log_pos", 1, lambda lib, a: (a * a + 1.0).log()),
    ("sqrt_pos", 1, lambda lib, a: (a * a + 0.5).sqrt()),
    ("pow3", 1, lambda lib, a: a**3 * 0.1),
    ("mean_bcast", 1, lambda lib, a: a - a.mean(1, keepdim=True)),
    ("softmax", 1, lambda lib, a: a.softmax(1)),
    ("log_softmax", 1, lambda lib, a: a.log_softmax(0)),
    ("logsumexp", 1, lambda lib, a: a * a.logsumexp(1, keepdim=True)),
    ("var_scale", 1, lambda lib, a: a * a.var(0, keepdim=True)),
    ("matmul", 2, lambda lib, a, b: (a @ b.transpose(0, 1)) @ b * 0.2),
    ("transpose_roundtrip", 1, lambda lib, a: a.transpose(0, 1).reshape(4, 3).reshape(3, 4)),
    ("permute_flip", 1, lambda lib, a: a.unsqueeze(0).permute(0, 2, 1).squeeze(0).transpose(0, 1)),
    ("index_rows", 1, lambda lib, a: a[lib.tensor([2, 0, 0])] if lib is torch else a[ag.tensor([2, 0, 0])]),
    ("slice_cat", 1, lambda lib, a: lib.cat([a[:, 2:], a[:, :2]], 1)),
    ("stack_sum", 2, lambda lib, a, b: lib.stack([a, b], 0).sum(0)),
    ("split_mul", 1, lambda lib, a: lib.cat([p * (i + 1.0) for i, p in enumerate(a.split(1, 0))], 0)),
    ("where", 2, lambda lib, a, b: lib.where(a > b, a, b * 0.5)),
    ("maximum", 2, lambda lib, a, b: lib.maximum(a, b + 0.05)),
    ("clamp", 1, lambda lib, a: a.clamp(-0.9, 0.8)),
    ("relu", 1, lambda lib, a: a.relu()),
    ("expand", 1, lambda lib, a: a[:, :1].expand(3, 4) + a),
]

SMOOTH = {name for name, *_ in MENU} - {"where", "maximum", "clamp", "relu"}


def build(lib: Any, leaves: list[Any], plan: list[tuple[int, list[int]]]) -> list[Any]:
    pool = list(leaves)
    for op_index, args in plan:
        _, _, fn = MENU[op_index]
        pool.append(fn(lib, *(pool[i] for i in args)))
    return pool


def random_plan(rng: np.random.Generator, n_leaves: int, n_ops: int, smooth_only: bool) -> list[tuple[int, list[int]]]:
    choices = [i for i, (name, _, _) in enumerate(MENU) if not smooth_only or name in SMOOTH]
    plan = []
    for step in range(n_ops):
        op = int(rng.choice(choices))
        arity = MENU[op][1]
        # Favour recent results so the graph gets deep, but keep reusing older ones too.
        available = n_leaves + step
        args = [int(min(available - 1, rng.integers(max(0, available - 4), available) if rng.random() < 0.7 else rng.integers(available))) for _ in range(arity)]
        plan.append((op, args))
    return plan


def leaves_for(rng: np.random.Generator, n: int) -> tuple[list[ag.Tensor], list[Any]]:
    data = [rng.uniform(-1.0, 1.0, SHAPE) for _ in range(n)]
    return (
        [ag.tensor(d, requires_grad=True) for d in data],
        [torch.tensor(d, requires_grad=True) for d in data],
    )


def assert_same(ours: Any, theirs: Any, what: str) -> None:
    if theirs is None:
        assert ours is None, what
        return
    assert ours is not None, what
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-11, err_msg=what)


@pytest.mark.parametrize("seed", range(25))
async def test_backward_from_several_roots_matches_torch(seed: int) -> None:
    rng = np.random.default_rng(seed)
    plan = random_plan(rng, 3, 10, smooth_only=False)
    ours, theirs = leaves_for(rng, 3)
    pool_a, pool_t = build(ag, ours, plan), build(torch, theirs, plan)
    roots = sorted({int(i) for i in rng.choice(np.arange(3, len(pool_a)), size=3)})
    weights = [rng.standard_normal(SHAPE) for _ in roots]
    await ag.backward([pool_a[i] for i in roots], [ag.tensor(w) for w in weights])
    torch.autograd.backward([pool_t[i] for i in roots], [torch.tensor(w) for w in weights])
    for i, (a, t) in enumerate(zip(ours, theirs)):
        assert_same(a.grad, t.grad, f"seed {seed} leaf {i}")


@pytest.mark.parametrize("seed", range(25))
async def test_grad_wrt_intermediates_matches_torch(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    plan = random_plan(rng, 2, 9, smooth_only=False)
    ours, theirs = leaves_for(rng, 2)
    pool_a, pool_t = build(ag, ours, plan), build(torch, theirs, plan)
    picks = sorted({int(i) for i in rng.choice(len(pool_a) - 1, size=3, replace=False)})
    out_a, out_t = pool_a[-1].sum(), pool_t[-1].sum()
    got = await ag.grad(out_a, [pool_a[i] for i in picks], allow_unused=True)
    want = torch.autograd.grad(out_t, [pool_t[i] for i in picks], allow_unused=True)
    for i, g, w in zip(picks, got, want):
        assert_same(g, w, f"seed {seed} tensor {i}")
    assert all(a.grad is None for a in ours)


@pytest.mark.parametrize("seed", range(12))
async def test_second_derivatives_match_torch(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    plan = random_plan(rng, 2, 6, smooth_only=True)
    ours, theirs = leaves_for(rng, 2)
    out_a, out_t = build(ag, ours, plan)[-1].sum(), build(torch, theirs, plan)[-1].sum()
    first_a = await ag.grad(out_a, ours, create_graph=True, allow_unused=True)
    first_t = torch.autograd.grad(out_t, theirs, create_graph=True, allow_unused=True)
    for g, w in zip(first_a, first_t):
        assert_same(g, w, f"seed {seed} first")
    used = [i for i, w in enumerate(first_t) if w is not None and w.requires_grad]
    if not used:
        return
    v = rng.standard_normal(SHAPE)
    hv_a = sum(((first_a[i] * ag.tensor(v)).sum() for i in used), ag.tensor(0.0))
    hv_t = sum((first_t[i] * torch.tensor(v)).sum() for i in used)
    second_a = await ag.grad(hv_a, ours, allow_unused=True)
    second_t = torch.autograd.grad(hv_t, theirs, allow_unused=True)
    for g, w in zip(second_a, second_t):
        if w is None:  # torch prunes structurally-zero branches; aiograd may return zeros there
            assert g is None or not np.any(g.numpy())
        else:
            assert_same(g, w, f"seed {seed} second")
