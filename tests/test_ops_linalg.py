"""Matrix products: matmul in every rank combination (dot, mv, vm, mm, batched with broadcast batch
dims), ``@`` and its reflected form with numpy arrays, mm, and linear (2-D and 3-D input, with and
without bias).

The per-op tests come from the ``OpSpec`` table and the factory in tests/test_ops_elementwise.py
(gradcheck, gradgradcheck, forward/first/second derivatives vs torch, float32, grad_fn names).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import torch
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag
from aiograd._ops.linalg import linear as ag_linear

pytestmark = [pytest.mark.filterwarnings("error"), pytest.mark.aiograd(backends=["asyncio"])]  # op math: one loop is enough


def linear(lib: Any, *args: Any) -> Any:
    """``linear`` of either library (aiograd's lives in its linalg ops)."""
    return ag_linear(*args) if lib is ag else torch.nn.functional.linear(*args)


M34 = np.array([[1.0, -0.5, 2.0, 0.0], [0.5, 1.5, -1.0, 2.0], [-2.0, 0.25, 1.0, -1.0]])

SPECS = [
    # ---------------------------------------------------------------- every rank combination
    OpSpec("dot", lambda lib, x, y: x @ y, ((3,), (3,)), op="matmul", grad_fn="DotBackward0"),
    OpSpec("mv", lambda lib, x, y: x @ y, ((2, 3), (3,)), op="matmul", grad_fn="MvBackward0"),
    OpSpec("vm", lambda lib, x, y: x @ y, ((3,), (3, 4)), op="matmul"),
    OpSpec("mm", lambda lib, x, y: x @ y, ((2, 3), (3, 4)), grad_fn="MmBackward0"),
    OpSpec("batched", lambda lib, x, y: x @ y, ((2, 3, 4), (2, 4, 2)), op="matmul"),
    OpSpec("batched_broadcast", lambda lib, x, y: x @ y, ((2, 1, 3, 4), (5, 4, 2)), op="matmul"),
    OpSpec("batched_mat", lambda lib, x, y: x @ y, ((2, 3, 4), (4, 2)), op="matmul"),
    OpSpec("mat_batched", lambda lib, x, y: x @ y, ((3, 4), (2, 4, 5)), op="matmul"),
    OpSpec("vec_batched", lambda lib, x, y: x @ y, ((4,), (2, 4, 3)), op="matmul"),
    OpSpec("batched_vec", lambda lib, x, y: x @ y, ((2, 3, 4), (4,)), op="matmul"),
    OpSpec("batched_1_by_1", lambda lib, x, y: x @ y, ((1, 1, 1), (3, 1, 2)), op="matmul"),
    # ---------------------------------------------------------------- spellings
    OpSpec("matmul_fn", lambda lib, x, y: lib.matmul(x, y), ((2, 3), (3, 4)), grad_fn="MmBackward0"),
    OpSpec("matmul_method", lambda lib, x, y: x.matmul(y), ((3,), (2, 3, 1))),
    OpSpec("mm_fn", lambda lib, x, y: lib.mm(x, y), ((2, 3), (3, 3)), grad_fn="MmBackward0"),
    OpSpec("mm_method", lambda lib, x, y: x.mm(y), ((1, 3), (3, 2)), grad_fn="MmBackward0"),
    OpSpec("rmatmul", lambda lib, x, y: y.__rmatmul__(x), ((2, 3), (3, 4)), grad_fn="MmBackward0", op="matmul"),
    # a numpy array on either side: a constant (float64, so float32 inputs promote)
    OpSpec("matmul_array", lambda lib, x: x @ const(lib, M34.T), ((2, 4),), float32=False),
    OpSpec("matmul_array_vec", lambda lib, x: x @ const(lib, M34[0]), ((2, 3, 4),), float32=False),
    OpSpec("rmatmul_array", lambda lib, x: const(lib, M34) @ x, ((4, 2),), float32=False, op="matmul"),
    OpSpec("rmatmul_array_batched", lambda lib, x: const(lib, M34) @ x, ((2, 4, 2),),
           float32=False, op="matmul"),
    OpSpec("rmatmul_array_vec", lambda lib, x: const(lib, M34[:, 0]) @ x, ((3, 2),), float32=False, op="matmul"),
    # ---------------------------------------------------------------- second derivatives in x
    OpSpec("gram", lambda lib, x: x @ x.mT, ((2, 3, 4),), op=None),
    OpSpec("quadratic_form", lambda lib, x, a: x @ a @ x, ((3,), (3, 3)), op=None),
    OpSpec("mlp", lambda lib, x, w1, w2: (x @ w1).tanh() @ w2, ((2, 3), (3, 4), (4,)), op=None),
    # ---------------------------------------------------------------- linear
    OpSpec("linear", lambda lib, x, w, b: linear(lib, x, w, b), ((2, 3), (4, 3), (4,)), grad_fn="AddmmBackward0"),
    OpSpec("linear_no_bias", lambda lib, x, w: linear(lib, x, w), ((2, 3), (4, 3)), grad_fn="MmBackward0"),
    # batch dims fold into rows (one 2-D product) and the result is viewed back, as in PyTorch
    OpSpec("linear_3d", lambda lib, x, w, b: linear(lib, x, w, b), ((2, 2, 3), (4, 3), (4,)),
           grad_fn="ViewBackward0"),
    OpSpec("linear_4d_transposed_input", lambda lib, x, w, b: linear(lib, x.transpose(0, 2), w, b),
           ((3, 2, 2, 3), (4, 3), (4,)), grad_fn="AddBackward0", op="linear"),
    OpSpec("linear_3d_no_bias", lambda lib, x, w: linear(lib, x, w), ((2, 2, 3), (4, 3))),
    OpSpec("linear_1d", lambda lib, x, w, b: linear(lib, x, w, b), ((3,), (4, 3), (4,))),
    OpSpec("linear_row_bias", lambda lib, x, w, b: linear(lib, x, w, b), ((2, 3), (4, 3), (1, 4))),
    OpSpec("linear_squared", lambda lib, x, w, b: linear(lib, x, w, b) ** 2, ((2, 3), (4, 3), (4,))),
]

globals().update(make_op_tests(SPECS))


# ================================================================================ errors
ERRORS = [
    ("mm", (2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("dot", (3,), (4,),
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively"),
    ("mv", (3, 4), (3,), "size mismatch, got input (3), mat (3x4), vec (3)"),
    ("vm", (3,), (4, 3), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x3)"),
    ("batch_mat", (2, 3, 4), (5, 6), "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)"),  # folded
    ("batch_vec", (2, 3, 4), (5,), "size mismatch, got input (6), mat (6x4), vec (5)"),  # folded
    # batches (torch's bmm path): the batch dims broadcast, then bmm checks the inner sizes
    ("batch_batch", (2, 3, 4), (2, 5, 6), "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    ("broadcast_batch", (4, 2, 3, 4), (2, 5, 6), "Expected size for first two dimensions of batch2 tensor to be: [8, 4] but got: [8, 5]."),
    ("vec_batch", (3,), (2, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    ("mat_batch", (3, 4), (2, 5, 6), "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    ("batch_dims", (7, 2, 3, 4), (3, 4, 5), "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"),
    ("0d_left", (), (3,), "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ("0d_right", (2, 3), (), "both arguments to matmul need to be at least 1D, but they are 2D and 0D"),
]


@pytest.mark.parametrize(("a", "b", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_matmul_shape_errors(a: Any, b: Any, message: str) -> None:
    x, y = ag.tensor(np.zeros(a)), ag.tensor(np.zeros(b))
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        x @ y
    if torch is not None:
        with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
            torch.zeros(a) @ torch.zeros(b)
        # torch folds a batch into one product where the left operand requires grad, so the
        # error then comes from another kernel: aiograd follows the same path
        with pytest.raises(RuntimeError) as theirs:
            torch.zeros(a, requires_grad=True) @ torch.zeros(b)
        with pytest.raises(RuntimeError, match=f"^{re.escape(str(theirs.value))}$"):
            ag.tensor(np.zeros(a), requires_grad=True) @ y


def test_batched_shape_mismatch_raises() -> None:
    with pytest.raises(RuntimeError):
        ag.zeros(2, 3, 4) @ ag.zeros(2, 5, 6)
    with pytest.raises(RuntimeError):  # batch dims that do not broadcast
        ag.zeros(2, 3, 4) @ ag.zeros(3, 4, 6)


def test_mm_needs_matrices() -> None:
    with pytest.raises(RuntimeError, match="^self must be a matrix$"):
        ag.mm(ag.zeros(3), ag.zeros(3, 3))
    with pytest.raises(RuntimeError, match="^mat2 must be a matrix$"):
        ag.mm(ag.zeros(3, 3), ag.zeros(3))
    with pytest.raises(RuntimeError, match="^self must be a matrix$"):
        ag.zeros(2, 3, 3).mm(ag.zeros(3, 3))


def test_linear_shape_error() -> None:
    message = "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        ag_linear(ag.zeros(2, 3), ag.zeros(5, 4))
    if torch is not None:
        with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
            torch.nn.functional.linear(torch.zeros(2, 3), torch.zeros(5, 4))


# ================================================================================ behaviour
@pytest.mark.parametrize(
    ("a", "b", "out"),
    [((3,), (3,), ()), ((2, 3), (3,), (2,)), ((3,), (3, 4), (4,)), ((2, 3), (3, 4), (2, 4)),
     ((2, 1, 3, 4), (5, 4, 2), (2, 5, 3, 2)), ((4,), (2, 4, 3), (2, 3)), ((2, 3, 4), (4,), (2, 3))],
)
async def test_output_and_gradient_shapes(a: Any, b: Any, out: Any) -> None:
    x, y = ag.ones(*a, requires_grad=True), ag.ones(*b, requires_grad=True)
    z = x @ y
    assert z.shape == out
    gx, gy = await ag.grad(z.sum(), [x, y])
    assert gx.shape == a and gy.shape == b
    np.testing.assert_array_equal(z.data, np.matmul(x.data, y.data))


async def test_only_the_operand_that_requires_grad_gets_one() -> None:
    x = ag.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = ag.tensor(np.arange(12.0).reshape(3, 4))
    out = x @ w
    assert out.grad_fn.next_functions[1] == (None, 0)
    (gx,) = await ag.grad(out.sum(), x)
    np.testing.assert_array_equal(gx.data, np.ones((2, 4)) @ w.data.T)
    out = w.mT @ x.mT  # now the right operand needs it (batched path too)
    (gx,) = await ag.grad(out.sum(), x)
    np.testing.assert_array_equal(gx.data, (w.data @ np.ones((4, 2))).T)
    v = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (gv,) = await ag.grad((w.mT @ v).sum(), v)
    np.testing.assert_array_equal(gv.data, w.data.sum(1))


async def test_numpy_operands_give_graph_tensors() -> None:
    x = ag.tensor(np.ones((3, 2)), requires_grad=True)
    for out in (x @ np.ones((2, 4)), np.ones((4, 3)) @ x, np.ones(3) @ x, x @ np.ones(2)):
        assert isinstance(out, ag.Tensor) and out.requires_grad
        (g,) = await ag.grad(out.sum(), x)
        assert g.shape == (3, 2)


async def test_linear_gradients_by_hand() -> None:
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    w = ag.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], requires_grad=True)
    b = ag.tensor([0.5, -0.5, 1.0], requires_grad=True)
    y = ag_linear(x, w, b)
    np.testing.assert_array_equal(y.data, x.data @ w.data.T + b.data)
    gx, gw, gb = await ag.grad(y.sum(), [x, w, b])
    np.testing.assert_array_equal(gx.data, np.ones((3, 3)) @ w.data)
    np.testing.assert_array_equal(gw.data, np.ones((3, 3)).T @ x.data)
    np.testing.assert_array_equal(gb.data, [3.0, 3.0, 3.0])


async def test_linear_bias_only_requires_grad() -> None:
    x, w = ag.ones(2, 3), ag.ones(4, 3)
    b = ag.zeros(1, 4, requires_grad=True)
    (gb,) = await ag.grad(ag_linear(x, w, b).sum(), b)
    assert gb.shape == (1, 4) and gb.tolist() == [[2.0] * 4]


def test_no_graph_without_requires_grad() -> None:
    assert (ag.ones(2, 3) @ ag.ones(3)).grad_fn is None
    assert ag_linear(ag.ones(2, 3), ag.ones(4, 3), ag.ones(4)).grad_fn is None
    with ag.no_grad():
        assert (ag.ones(2, 3, requires_grad=True) @ ag.ones(3, 2)).grad_fn is None


@pytest.mark.parametrize(
    "op",
    [lambda x, w: x @ w.mT, lambda x, w: ag.mm(x, w.mT), lambda x, w: ag_linear(x, w),
     lambda x, w: ag_linear(x.unsqueeze(0), w, w.sum(1) * 0.5),
     lambda x, w: x.sum(0) @ w.mT, lambda x, w: (x @ w.mT) @ np.ones(4, dtype=np.float32)],
    ids=["matmul", "mm", "linear", "linear_3d_bias", "vec_mat", "float32_array"],
)
async def test_float32_second_order(op: Any) -> None:
    x = ag.tensor(np.ones((2, 3)), dtype=np.float32, requires_grad=True)
    w = ag.tensor(np.full((4, 3), 0.5), dtype=np.float32, requires_grad=True)
    out = op(x, w)
    assert out.dtype == np.float32
    gx, gw = await ag.grad((out * out).sum(), [x, w], create_graph=True)
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    ggx, ggw = await ag.grad(gx.sum() + gw.sum(), [x, w])
    assert ggx.dtype == np.float32 and ggw.dtype == np.float32


def test_linear_records_torchs_nodes_in_torchs_order() -> None:
    """``linear`` with a bias records AddmmBackward0 whose edges go to the bias, the input and
    the weight's TBackward0, as torch's ``addmm(bias, input, weight.t())``; without one,
    MmBackward0 over the weight's TBackward0. The weight's gradient comes out contiguous (no
    copy in .grad)."""
    x = ag.tensor(np.ones((2, 3)), requires_grad=True)
    w = ag.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    b = ag.tensor(np.zeros(4), requires_grad=True)
    out = ag.nn.functional.linear(x, w, b)
    edges = out.grad_fn.next_functions
    assert len(edges) == 3 and all(fn.variable is t for (fn, _), t in zip(edges[:2], (b, x), strict=True))
    assert edges[2][0].name() == "TBackward0" and edges[2][0].next_functions[0][0].variable is w
    ag.sync.backward(out.sum())
    assert w.grad.data.flags.c_contiguous and w.grad.tolist() == [[2.0] * 3] * 4
    w.grad = None
    bare = ag.nn.functional.linear(x, w)
    (mm_x, mm_w) = bare.grad_fn.next_functions
    assert bare.grad_fn.name() == "MmBackward0" and mm_w[0].name() == "TBackward0"
    assert mm_w[0].next_functions[0][0].variable is w
    ag.sync.backward(bare.sum())
    assert w.grad.data.flags.c_contiguous and w.grad.tolist() == [[2.0] * 3] * 4


def _structure(fn: Any, depth: int = 3) -> Any:
    """A node's name and its next nodes' structure, ``depth`` levels (torch's AccumulateGrad is
    spelled with its C++ namespace)."""
    if fn is None:
        return None
    name = fn.name().removeprefix("torch::autograd::")
    if depth == 1:
        return name
    return (name, [_structure(n, depth - 1) for n, _ in fn.next_functions])


STRUCTURES = [
    ("batch_at_matrix", lambda lib, a, b: a @ b, (2, 3, 4), (4, 5), True, True),
    ("batch_at_constant_matrix", lambda lib, a, b: a @ b, (2, 3, 4), (4, 5), True, False),
    ("batch_at_matrix_of_constants", lambda lib, a, b: a @ b, (2, 3, 4), (4, 5), False, True),
    ("strided_batch_at_matrix", lambda lib, a, b: a.transpose(0, 1) @ b, (3, 2, 4), (4, 5), True, True),
    ("linear_3d_no_bias", lambda lib, a, b: lib.nn.functional.linear(a, b), (2, 3, 4), (5, 4), True, True),
    ("linear_2d_no_bias", lambda lib, a, b: lib.nn.functional.linear(a, b), (3, 4), (5, 4), True, True),
    ("mat_at_vec", lambda lib, a, b: a @ b, (3, 4), (4,), True, True),
    ("vec_at_mat", lambda lib, a, b: a @ b, (4,), (4, 5), True, True),
    ("vec_at_constant_mat", lambda lib, a, b: a @ b, (4,), (4, 5), True, False),
    ("batch_at_vec", lambda lib, a, b: a @ b, (2, 3, 4), (4,), True, True),
    ("constant_batch_at_vec", lambda lib, a, b: a @ b, (2, 3, 4), (4,), False, True),
    # (torch records a CloneBackward0 under the UnsafeViewBackward0 of a copying reshape; aiograd
    # one node: compared two levels down)
    ("copying_reshape", lambda lib, a, b: (a.transpose(0, 1).reshape(-1) * b.sum()), (3, 4), (2,), True, True),
]
DEPTHS = {"copying_reshape": 2}


@pytest.mark.skipif(torch is None, reason="torch not installed (the oracle extra)")
@pytest.mark.parametrize(("name", "fn", "sa", "sb", "ga", "gb"), STRUCTURES, ids=[s[0] for s in STRUCTURES])
def test_products_record_torchs_graph(name: str, fn: Any, sa: Any, sb: Any, ga: bool, gb: bool) -> None:
    """The nodes a product records, three levels down, are torch's: the batch dims of a batch
    of matrices times a matrix fold into rows (UnsafeViewBackward0 over MmBackward0 over the
    rows' view), as torch's ``matmul`` folds them; the values agree."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    out = fn(ag, ag.tensor(a, requires_grad=ga), ag.tensor(b, requires_grad=gb))
    want = fn(torch, torch.tensor(a, requires_grad=ga), torch.tensor(b, requires_grad=gb))
    depth = DEPTHS.get(name, 3)
    assert _structure(out.grad_fn, depth) == _structure(want.grad_fn, depth)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
