"""Differences from torch 2.13 a differential fuzzer found: each case compared with torch
(values, gradients, result dtypes, grad_fn names), dtypes always explicit."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import assert_matches_torch, requires_torch, torch

import aiograd as ag
import aiograd.nn.functional as F
import aiograd.sync

pytestmark = requires_torch

if torch is not None:
    import torch.nn.functional as TF


def pair(a: Any, dtype: str = "float64", requires_grad: bool = True) -> tuple[Any, Any]:
    """The same leaf in aiograd and torch."""
    a = np.asarray(a, dtype=dtype)
    return (
        ag.tensor(a.copy(), dtype=getattr(ag, dtype), requires_grad=requires_grad),
        torch.tensor(a.copy(), dtype=getattr(torch, dtype), requires_grad=requires_grad),
    )


def backward(out: Any) -> None:
    if isinstance(out, torch.Tensor):
        out.backward()
    else:
        aiograd.sync.backward(out)


def names(fn: Any, depth: int = 6) -> list[str]:
    """``fn`` and the nodes below it, depth first, as ``"  " * level + name``."""
    out: list[str] = []

    def walk(node: Any, level: int) -> None:
        if node is None or level > depth:
            return
        out.append("  " * level + type(node).__name__)
        for nxt, _ in node.next_functions:
            walk(nxt, level + 1)

    walk(fn, 0)
    return out


def same_graph(ours: Any, theirs: Any, depth: int = 6) -> None:
    assert names(ours.grad_fn, depth) == names(theirs.grad_fn, depth)


def arange(shape: tuple[int, ...], dtype: str = "float64") -> np.ndarray:
    return (np.arange(1, int(np.prod(shape)) + 1, dtype=dtype) / 7).reshape(shape)


# ------------------------------------------------------------------ 1. clone keeps the layout
LAYOUTS = {
    "transpose": lambda t: t.reshape(2, 3, 4).permute(2, 0, 1),
    "slice": lambda t: t.reshape(2, 3, 4)[:, ::2],
    "slice_transposed": lambda t: t.reshape(2, 3, 4)[:, ::2].transpose(0, 2),
    "expanded": lambda t: t.reshape(2, 3, 4)[:, :1].expand(2, 5, 4),
    "expanded_transposed": lambda t: t.reshape(24)[:4].expand(3, 4).t(),
    "contiguous": lambda t: t.reshape(4, 6),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_clone_preserves_strides_like_torch(layout: str) -> None:
    f = LAYOUTS[layout]
    ours, theirs = f(ag.arange(24, dtype=ag.float64)).clone(), f(torch.arange(24, dtype=torch.float64)).clone()
    assert ours.is_contiguous() == theirs.is_contiguous()
    strides = tuple(s // ours.data.itemsize for s in ours.data.strides)
    assert [s for s, n in zip(strides, ours.shape) if n > 1] == [
        s for s, n in zip(theirs.stride(), theirs.shape) if n > 1
    ]
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("how", ["flatten", "reshape", "view_as_flat"])
def test_flatten_of_a_transposed_clone_copies(how: str) -> None:
    """``t.t().clone()`` is not contiguous, so ``flatten`` copies: an in-place op on the result
    leaves the clone alone (aiograd zeroed it)."""
    results = []
    for lib in (ag, torch):
        y = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64).t().clone()
        flat = y.flatten() if how == "flatten" else y.reshape(-1) if how == "reshape" else y.reshape(6)
        flat.mul_(0)
        results.append((y.tolist(), y.is_contiguous(), flat.tolist()))
    assert results[0] == results[1]
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        ag.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ag.float64).t().clone().view(4)


def test_contiguous_of_a_transposed_clone() -> None:
    for lib in (ag, torch):
        y = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64).t().clone()
        c = y.contiguous()
        assert c is not y and c.is_contiguous() and c.tolist() == y.tolist()
        c.view(-1).mul_(0)  # a view of the contiguous copy, not of y
        assert y.tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]


def test_gradients_through_a_transposed_clone_match_torch() -> None:
    grads = []
    for lib in (ag, torch):
        x = lib.tensor(arange((2, 3)), dtype=lib.float64, requires_grad=True)
        y = (x * 1).t().clone()
        flat = y.flatten()
        flat.mul_(3)
        loss = (y * y).sum() + (flat * flat).sum() + y.reshape(6)[1:].sum()
        backward(loss)
        grads.append((loss.item(), x.grad.tolist(), type(flat.grad_fn).__name__,
                      [type(n).__name__ for n, _ in flat.grad_fn.next_functions]))
    assert grads[0] == grads[1]


def test_reshape_that_copies_records_a_clone_like_torch() -> None:
    a, t = pair(arange((2, 3)))
    same_graph(a.t().reshape(-1), t.t().reshape(-1))
    same_graph(a.t().flatten(), t.t().flatten())


# ------------------------------------------------------------------ 2. cross_entropy's weight
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_probability_targets_differentiate_the_weight(reduction: str, label_smoothing: float) -> None:
    r = np.random.default_rng(0)
    x, tx = pair(r.standard_normal((3, 4)))
    p = np.exp(r.standard_normal((3, 4)))
    p /= p.sum(1, keepdims=True)
    w, tw = pair(r.random(4))
    ours = F.cross_entropy(x, ag.tensor(p, dtype=ag.float64), weight=w, reduction=reduction, label_smoothing=label_smoothing)
    theirs = TF.cross_entropy(tx, torch.tensor(p), weight=tw, reduction=reduction, label_smoothing=label_smoothing)
    backward(ours.sum())
    backward(theirs.sum())
    assert_matches_torch(ours.detach().numpy(), theirs.detach().numpy())
    assert_matches_torch(w.grad.numpy(), tw.grad.numpy())
    assert_matches_torch(x.grad.numpy(), tx.grad.numpy(), scale=1.0)  # (softmax minus target)


def test_cross_entropy_class_targets_still_refuse_a_weight_that_requires_grad() -> None:
    x, _ = pair(np.zeros((2, 3)))
    w, _ = pair(np.ones(3))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.cross_entropy(x, ag.tensor([0, 2]), weight=w)


# ------------------------------------------------------------------ 3. result dtypes
LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits", "kl_div"]
OPERANDS = {
    "float32,int64": (("float32", [0.2, 0.7]), ("int64", [0, 1])),
    "int64,float32": (("int64", [0, 1]), ("float32", [0.2, 0.7])),
    "float32,bool": (("float32", [0.2, 0.7]), ("bool", [False, True])),
    "bool,float32": (("bool", [False, True]), ("float32", [0.2, 0.7])),
    "int64,int64": (("int64", [0, 1]), ("int64", [1, 1])),
    "float64,float32": (("float64", [0.2, 0.7]), ("float32", [0.3, 0.6])),
    "float32,float64": (("float32", [0.2, 0.7]), ("float64", [0.3, 0.6])),
}


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("operands", sorted(OPERANDS))
@pytest.mark.parametrize("loss", LOSSES)
def test_loss_dtypes_and_errors_match_torch(loss: str, operands: str) -> None:
    (da, a), (db, b) = OPERANDS[operands]
    results = []
    for lib, fn in ((ag, getattr(F, loss)), (torch, getattr(TF, loss))):
        grad = da.startswith("float")
        x = lib.tensor(a, dtype=getattr(torch, da) if lib is torch else np.dtype(da), requires_grad=grad)
        try:
            out = fn(x, lib.tensor(b, dtype=getattr(torch, db) if lib is torch else np.dtype(db)))
        except (RuntimeError, NotImplementedError) as e:
            results.append((type(e).__name__, str(e).split(" (Triggered")[0]))
            continue
        dtype = str(out.dtype).removeprefix("torch.")
        grad_dtype = None
        if grad:
            try:
                backward(out)
                grad_dtype = str(x.grad.dtype).removeprefix("torch.")
            except RuntimeError:
                grad_dtype = "error"  # torch's huber backward with an integer target
        results.append((dtype, grad_dtype))
    if results[1][-1] == "error":
        results = [r[:1] for r in results]
    assert results[0] == results[1]


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize(("src", "dst"), [("float64", "float32"), ("float32", "float64"), ("float64", "float16")])
def test_reduction_dtype_gradients_are_cast_back_like_torch(op: str, src: str, dst: str) -> None:
    """``sum(dtype=)``/``mean(dtype=)``: the input's gradient is in its own dtype (torch's engine
    casts it back), so what comes before the reduction computes in that dtype."""
    grads = []
    for lib in (ag, torch):
        x = lib.tensor([0.1, 0.2, 0.3], dtype=getattr(lib, src), requires_grad=True)
        backward(getattr(x * 0.1, op)(dtype=getattr(lib, dst)))
        grads.append(x.grad.numpy())
    assert grads[0].dtype == grads[1].dtype
    assert grads[0].tobytes() == grads[1].tobytes()


# ------------------------------------------------------------------ 4. non-finite and subnormal
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("bad", [-np.inf, np.inf, np.nan])
@pytest.mark.parametrize("where", ["weight", "input"])
def test_conv_gradients_with_non_finite_values_match_torch(dims: int, padding: int, bad: float, where: str) -> None:
    r = np.random.default_rng(dims * 10 + padding)
    xs, ws = r.standard_normal((2, 2) + (5,) * dims), r.standard_normal((3, 2) + (3,) * dims)
    (ws if where == "weight" else xs).reshape(-1)[1] = bad
    x, tx = pair(xs)
    w, tw = pair(ws)
    conv = (F.conv1d, TF.conv1d) if dims == 1 else (F.conv2d, TF.conv2d)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch is silent: so is aiograd's convolution
        y = conv[0](x, w, padding=padding)
    ty = conv[1](tx, tw, padding=padding)
    g = r.standard_normal(tuple(ty.shape))
    backward((y * ag.tensor(g, dtype=ag.float64)).sum())
    backward((ty * torch.tensor(g)).sum())
    # (sums of products of normal samples: rounding is in units of their terms)
    assert_matches_torch(y.detach().numpy(), ty.detach().numpy(), scale=10.0)
    assert_matches_torch(x.grad.numpy(), tx.grad.numpy(), scale=10.0)
    assert_matches_torch(w.grad.numpy(), tw.grad.numpy(), scale=10.0)


@pytest.mark.parametrize("values", [[0.0, 5e-324], [5e-324, 1.0], [1e-310, 0.0, -1e-160], [1.0, 2.0]])
@pytest.mark.parametrize("number", [0.0, 2.0, -1.5])
def test_number_over_tensor_is_reciprocal_times_number(values: list[float], number: float) -> None:
    """torch's ``number / x`` is ``x.reciprocal() * number``: NaN for ``0 / subnormal`` (the
    reciprocal overflows), with ``MulBackward0`` over ``ReciprocalBackward0``."""
    x, tx = pair(values)
    ours, theirs = number / x, number / tx
    same_graph(ours, theirs)
    backward(ours.sum())
    backward(theirs.sum())
    assert_matches_torch(ours.detach().numpy(), theirs.detach().numpy())
    assert_matches_torch(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize(
    "fn",
    ["std", "norm", "norm3", "vector_norm"],
)
@pytest.mark.parametrize("values", [[0.0, 5e-324], [5e-324], [5e-324, 5e-324], [1e-200, 1e-200], [1e-310, 0.0, 1e-320]])
def test_reductions_at_subnormals_match_torch(fn: str, values: list[float]) -> None:
    def run(lib: Any, x: Any) -> Any:
        if fn == "std":
            return x.std()
        if fn == "norm":
            return x.norm()
        if fn == "norm3":
            return x.norm(p=3)
        return lib.linalg.vector_norm(x)

    x, tx = pair(values)
    ours, theirs = run(ag, x), run(torch, tx)
    backward(ours)
    backward(theirs)
    assert_matches_torch(ours.detach().numpy(), theirs.detach().numpy())
    assert_matches_torch(x.grad.numpy(), tx.grad.numpy())


# ------------------------------------------------------------------ 5. grad_fn names
def _graph(lib: Any, case: str) -> Any:
    def t(*shape: int) -> Any:
        return lib.tensor(arange(shape), dtype=lib.float64, requires_grad=True)

    fl = F if lib is ag else TF
    index = (lambda *s: lib.tensor(np.zeros(s, dtype=np.int64)))
    return {
        "2/x": lambda: 2 / t(3),
        "flatten 1-D": lambda: t(3).flatten(),
        "flatten(1, 1)": lambda: t(2, 3).flatten(1, 1),
        "linear 2-D bias": lambda: fl.linear(t(2, 3), t(5, 3), t(5)),
        "linear 1-D bias": lambda: fl.linear(t(3), t(5, 3), t(5)),
        "linear 1-D": lambda: fl.linear(t(3), t(5, 3)),
        "linear 3-D bias": lambda: fl.linear(t(4, 2, 3), t(5, 3), t(5)),
        "linear 4-D bias": lambda: fl.linear(t(2, 4, 2, 3), t(5, 3), t(5)),
        "linear 3-D transposed bias": lambda: fl.linear(t(2, 4, 3).transpose(0, 1), t(5, 3), t(5)),
        "nll_loss 3-D": lambda: fl.nll_loss(t(2, 3, 4), index(2, 4)),
        "nll_loss 4-D": lambda: fl.nll_loss(t(2, 3, 4, 2), index(2, 4, 2)),
        "nll_loss 5-D none": lambda: fl.nll_loss(t(2, 3, 4, 2, 2), index(2, 4, 2, 2), reduction="none"),
        "cross_entropy 3-D": lambda: fl.cross_entropy(t(2, 3, 4), index(2, 4)),
        "reshape copy": lambda: t(2, 3).t().reshape(-1),
    }[case]()


@pytest.mark.parametrize("case", [
    "2/x", "flatten 1-D", "flatten(1, 1)", "linear 2-D bias", "linear 1-D bias", "linear 1-D", "linear 3-D bias",
    "linear 4-D bias", "linear 3-D transposed bias", "nll_loss 3-D", "nll_loss 4-D", "nll_loss 5-D none",
    "cross_entropy 3-D", "reshape copy",
])
def test_grad_fn_names_match_torch(case: str) -> None:
    ours, theirs = _graph(ag, case), _graph(torch, case)
    if theirs.grad_fn is None:  # torch returned the leaf itself
        assert ours.grad_fn is None and ours.is_leaf
        return
    same_graph(ours, theirs)
    backward(ours.sum())
    backward(theirs.sum())
    assert_matches_torch(ours.detach().numpy(), theirs.detach().numpy())


# ------------------------------------------------------------------------------ svd at the edges
@requires_torch
def test_svd_of_entries_near_the_top_of_the_float_range_returns_torchs_values() -> None:
    # numpy's LAPACK never returned for these (a fuzzer's hang); the matrix is scaled first
    a = np.random.default_rng(0).standard_normal((2, 3, 3))
    a[0, 0, 0] = -1.7e308
    ours, theirs = ag.linalg.svd(ag.tensor(a)), torch.linalg.svd(torch.tensor(a))
    np.testing.assert_allclose(ours.S.numpy(), theirs.S.numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.abs(ours.U.numpy()), np.abs(theirs.U.numpy()), rtol=1e-8, atol=1e-12)


@requires_torch
def test_svd_of_nan_raises_torchs_error() -> None:
    a = np.ones((2, 3, 3))
    a[1, 0, 1] = np.nan
    message = ("linalg.svd: (Batch element 1): The algorithm failed to converge because the input matrix "
               "contained non-finite values.")
    with pytest.raises(torch.linalg.LinAlgError, match=re.escape(message)):
        torch.linalg.svd(torch.tensor(a))
    with pytest.raises(ag.linalg.LinAlgError, match=re.escape(message)):
        ag.linalg.svd(ag.tensor(a))
