"""Matrix products and attention against torch: the node each rank case of ``matmul`` ends in
(PyTorch's ``_matmul_impl`` composites), ``linear``'s fold, ``einsum``'s last node, ``bmm`` with
operands of two dtypes, and ``scaled_dot_product_attention``'s keyword-only arguments."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")


def _pair(shape, rng, grad=True):
    a = rng.standard_normal(shape)
    return ag.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _check(y, ty, xs, txs):
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__
    np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    gs = aiograd.sync.grad([y], xs, [ag.tensor(w)])
    tgs = torch.autograd.grad([ty], txs, [torch.tensor(w)])
    for g, tg in zip(gs, tgs):
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    ("left", "right", "grads"),
    [((3,), (4, 3, 5), (1, 1)), ((3,), (4, 3, 5), (0, 1)), ((2, 3), (4, 3, 5), (1, 1)),
     ((1, 3), (4, 3, 1), (1, 0)), ((2, 3), (2, 1, 3, 5), (0, 1)), ((4, 2, 3), (4, 3, 5), (1, 1)),
     ((4, 2, 3), (2, 1, 3, 5), (1, 0)), ((1, 2, 3), (4, 3, 5), (1, 1)), ((4, 2, 3), (1, 3, 5), (0, 1)),
     ((4, 2, 3), (3,), (1, 1)), ((3, 1, 0), (0,), (1, 0))],
)
def test_matmul_nodes_match_torch(left, right, grads) -> None:
    rng = np.random.default_rng(0)
    (a, ta), (b, tb) = _pair(left, rng, bool(grads[0])), _pair(right, rng, bool(grads[1]))
    xs = [x for x, g in zip((a, b), grads) if g]
    txs = [x for x, g in zip((ta, tb), grads) if g]
    _check(a @ b, ta @ tb, xs, txs)


@pytest.mark.parametrize("shape", [(3,), (2, 2, 3), (2, 2, 2, 3)])
@pytest.mark.parametrize("bias_kind", ["plain", "expanded", "row"])
def test_linear_nodes_match_torch(shape, bias_kind) -> None:
    rng = np.random.default_rng(0)
    (x, tx), (w, tw) = _pair(shape, rng), _pair((4, 3), rng)
    bv = rng.standard_normal((1,) if bias_kind == "expanded" else (1, 4) if bias_kind == "row" else (4,))
    b, tb = ag.tensor(bv, requires_grad=True), torch.tensor(bv, requires_grad=True)
    bb, tbb = (b.expand(4), tb.expand(4)) if bias_kind == "expanded" else (b, tb)
    y = ag.nn.functional.linear(x, w, bb)
    ty = torch.nn.functional.linear(tx, tw, tbb)
    _check(y, ty, [x, w, b], [tx, tw, tb])


@pytest.mark.parametrize(
    ("eq", "shapes"),
    [("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]), ("i,j->ij", [(2,), (3,)]),
     ("...ij->...ji", [(2, 1, 3)]), ("ij,ij->i", [(2, 3), (1, 3)]), ("ii,j->ji", [(3, 3), (2,)]),
     ("i,j,k->kji", [(2,), (3,), (2,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)])],
)
def test_einsum_last_node_matches_torch(eq, shapes) -> None:
    rng = np.random.default_rng(0)
    pairs = [_pair(s, rng) for s in shapes]
    xs, txs = [p[0] for p in pairs], [p[1] for p in pairs]
    _check(ag.einsum(eq, *xs), torch.einsum(eq, *txs), xs, txs)


def test_einsum_empty_operand() -> None:
    x = ag.tensor(np.zeros(0), requires_grad=True)
    assert ag.einsum("i->", x).data.shape == ()


@pytest.mark.parametrize(("sa", "sb"), [((2, 2, 0), (2, 0, 4)), ((2, 1, 2), (2, 2, 0))])
def test_bmm_two_dtypes_when_empty(sa, sb) -> None:
    a = ag.tensor(np.zeros(sa), dtype=ag.float64, requires_grad=True)
    b = ag.tensor(np.zeros(sb), dtype=ag.float32, requires_grad=True)
    ta = torch.zeros(sa, dtype=torch.float64, requires_grad=True)
    tb = torch.zeros(sb, dtype=torch.float32, requires_grad=True)
    y, ty = ag.bmm(a, b), torch.bmm(ta, tb)
    assert y.dtype == ag.float32 and y.shape == tuple(ty.shape)
    w = np.ones(tuple(ty.shape), dtype=np.float32)
    ga, gb = aiograd.sync.grad([y], [a, b], [ag.tensor(w)])
    tga, tgb = torch.autograd.grad([ty], [ta, tb], [torch.tensor(w)])
    assert ga.dtype == ag.float64 and gb.dtype == ag.float32
    np.testing.assert_array_equal(ga.data, tga.numpy())
    np.testing.assert_array_equal(gb.data, tgb.numpy())


def test_bmm_errors_match_torch() -> None:
    with pytest.raises(RuntimeError, match="^expected scalar type Double but found Float$"):
        ag.bmm(ag.zeros(2, 2, 3, dtype=ag.float64), ag.zeros(2, 3, 4, dtype=ag.float32))
    with pytest.raises(NotImplementedError, match="\"bmm\" not implemented for 'Bool'"):
        ag.bmm(ag.zeros(2, 2, 3, dtype=ag.bool_), ag.zeros(2, 3, 4, dtype=ag.bool_))
    with pytest.raises(RuntimeError, match="^Autograd not support dtype: Long$"):
        ag.bmm(ag.zeros(2, 2, 0, requires_grad=True), ag.zeros(2, 0, 4, dtype=ag.int64))


def test_sdpa_node_and_keyword_only() -> None:
    rng = np.random.default_rng(0)
    (q, tq), (k, tk), (v, tv) = _pair((2, 3, 4), rng), _pair((2, 5, 4), rng), _pair((2, 5, 3), rng)
    f, tf = ag.nn.functional.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention
    _check(f(q, k, v), tf(tq, tk, tv), [q, k, v], [tq, tk, tv])
    with pytest.raises(TypeError):
        f(q, k, v, None, 0.0, False, 2.0)
    with pytest.raises(TypeError):
        tf(tq, tk, tv, None, 0.0, False, 2.0)


@pytest.mark.parametrize(
    ("a", "b"),
    [((3, 2), (2,)), ((3, 2), (2, 4)), ((2,), (2,)), ((2,), (2, 3)), ((3, 0), (0,)), ((0,), (0,)),
     ((0,), (0, 3)), ((2, 0), (0, 3)), ((0, 2), (2, 3)), ((0, 2), (2,))],
)
def test_bool_matrix_products_raise_as_torchs_blas_kernels(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    def run(lib: Any) -> Any:
        bool_ = lib.bool if lib is torch else ag.bool_
        return lib.matmul(lib.ones(a, dtype=bool_), lib.ones(b, dtype=bool_))

    try:
        expected = run(torch)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=f"^{re.escape(str(e))}$"):
            run(ag)
        return
    assert run(ag).tolist() == expected.tolist()
