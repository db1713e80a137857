"""The losses of aiograd/nn/_losses_more.py and _ctc.py and ``embedding_bag`` (_embedding_bag.py),
and their modules: values and gradients against torch for every reduction (float64 tight, float32
loose), float64 finite-difference gradchecks (and gradgradchecks of the composites), reprs (of the
unpool and lp_pool layers too: tests/test_nn_unpool_lppool.py has their values), and torch's
errors word for word."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), requires_torch]  # op math: one loop is enough

REDUCTIONS = ("none", "mean", "sum")
RNG = np.random.default_rng(20240607)


def fn_of(lib: Any) -> Any:
    return F if lib is ag else torch.nn.functional


def _signs(shape: Any) -> Any:
    return np.where(RNG.standard_normal(shape) > 0, 1.0, -1.0)


# Each case: name, call(lib, *tensors, reduction), the float arrays, which of them require grad.
X1, X2, X3 = (RNG.standard_normal((4, 5)) for _ in range(3))
TML = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [4, 4, -1, 0, 0]])
TM = np.array([3, 0, 4, 1])
W5 = np.arange(1.0, 6.0)


def _const(lib: Any, a: Any, like: Any) -> Any:
    return lib.tensor(a).to(like.dtype) if np.asarray(a).dtype.kind == "f" else lib.tensor(a)


CASES: list[tuple[str, Callable[..., Any], list[Any], list[bool]]] = [
    ("margin_ranking", lambda lib, a, b, t, r: fn_of(lib).margin_ranking_loss(a, b, t, margin=0.3, reduction=r),
     [X1[:, 0], X2[:, 0], _signs(4)], [True, True, False]),
    ("hinge_embedding", lambda lib, a, t, r: fn_of(lib).hinge_embedding_loss(a, t, margin=0.5, reduction=r),
     [X1, _signs((4, 5))], [True, False]),
    ("soft_margin", lambda lib, a, t, r: fn_of(lib).soft_margin_loss(a, t, reduction=r), [X1, _signs((4, 5))],
     [True, False]),
    ("cosine_embedding", lambda lib, a, b, t, r: fn_of(lib).cosine_embedding_loss(a, b, t, margin=0.2, reduction=r),
     [X1, X2, _signs(4)], [True, True, False]),
    ("cosine_embedding_1d", lambda lib, a, b, t, r: fn_of(lib).cosine_embedding_loss(a, b, t, reduction=r),
     [X1[0], X2[0], np.array(-1.0)], [True, True, False]),
    ("triplet", lambda lib, a, p, n, r: fn_of(lib).triplet_margin_loss(a, p, n, reduction=r), [X1, X2, X3],
     [True, True, True]),
    ("triplet_p1_swap", lambda lib, a, p, n, r: fn_of(lib).triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True,
                                                                               reduction=r),
     [X1, X2, X3], [True, True, True]),
    ("triplet_distance", lambda lib, a, p, n, r: fn_of(lib).triplet_margin_with_distance_loss(a, p, n, reduction=r),
     [X1, X2, X3], [True, True, True]),
    ("triplet_cosine_distance",
     lambda lib, a, p, n, r: fn_of(lib).triplet_margin_with_distance_loss(
         a, p, n, distance_function=lambda x, y: 1.0 - fn_of(lib).cosine_similarity(x, y), swap=True, reduction=r),
     [X1, X2, X3], [True, True, True]),
    ("poisson_nll", lambda lib, a, t, r: fn_of(lib).poisson_nll_loss(a, t, reduction=r), [X1, np.abs(X2) * 3],
     [True, True]),
    ("poisson_nll_full", lambda lib, a, t, r: fn_of(lib).poisson_nll_loss(a, t, log_input=False, full=True, reduction=r),
     [np.abs(X1) + 0.1, np.abs(X2) * 3], [True, False]),
    ("gaussian_nll", lambda lib, a, t, v, r: fn_of(lib).gaussian_nll_loss(a, t, v, reduction=r),
     [X1, X2, np.abs(X3) + 0.1], [True, True, True]),
    ("gaussian_nll_homoscedastic", lambda lib, a, t, v, r: fn_of(lib).gaussian_nll_loss(a, t, v, full=True, reduction=r),
     [X1, X2, np.abs(X3[:, 0]) + 0.1], [True, True, True]),
    ("gaussian_nll_clamped", lambda lib, a, t, v, r: fn_of(lib).gaussian_nll_loss(a, t, v, eps=0.5, reduction=r),
     [X1, X2, np.abs(X3[:, :1]) + 0.01], [True, True, True]),
    ("multilabel_soft_margin", lambda lib, a, t, r: fn_of(lib).multilabel_soft_margin_loss(a, t, reduction=r),
     [X1, (X2 > 0) * 1.0], [True, True]),
    ("multilabel_soft_margin_weight",
     lambda lib, a, t, r: fn_of(lib).multilabel_soft_margin_loss(a, t, weight=_const(lib, W5, a), reduction=r),
     [X1, (X2 > 0) * 1.0], [True, False]),
    ("multilabel_margin", lambda lib, a, r: fn_of(lib).multilabel_margin_loss(a, lib.tensor(TML), reduction=r),
     [X1], [True]),
    ("multilabel_margin_1d", lambda lib, a, r: fn_of(lib).multilabel_margin_loss(a, lib.tensor(TML[0]), reduction=r),
     [X1[0]], [True]),
    ("multi_margin", lambda lib, a, r: fn_of(lib).multi_margin_loss(a, lib.tensor(TM), reduction=r), [X1], [True]),
    ("multi_margin_p2_weight",
     lambda lib, a, r: fn_of(lib).multi_margin_loss(a, lib.tensor(TM), p=2, margin=0.7, weight=_const(lib, W5, a),
                                                    reduction=r),
     [X1], [True]),
    ("multi_margin_1d", lambda lib, a, r: fn_of(lib).multi_margin_loss(a, lib.tensor(2), reduction=r), [X1[0]], [True]),
]
CASE_IDS = [c[0] for c in CASES]


def _tensors(lib: Any, arrays: list[Any], grads: list[bool], dtype: Any) -> list[Any]:
    out = []
    for a, g in zip(arrays, grads, strict=True):
        if lib is ag:
            out.append(ag.tensor(np.asarray(a, dtype=dtype), requires_grad=g))
        else:
            out.append(torch.tensor(np.asarray(a, dtype=dtype), requires_grad=g))
    return out


async def _compare(call: Callable[..., Any], arrays: list[Any], grads: list[bool], dtype: Any, tol: float) -> None:
    ours, theirs = _tensors(ag, arrays, grads, dtype), _tensors(torch, arrays, grads, dtype)
    out, tout = call(ag, *ours), call(torch, *theirs)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == getattr(ag, str(tout.dtype).removeprefix("torch."))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    u = RNG.standard_normal(out.shape).astype(dtype)
    wanted = [t for t, g in zip(ours, grads, strict=True) if g]
    twanted = [t for t, g in zip(theirs, grads, strict=True) if g]
    gs = await ag.grad(out, wanted, ag.tensor(u))
    tgs = torch.autograd.grad(tout, twanted, torch.tensor(u))
    for g, tg in zip(gs, tgs, strict=True):
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
async def test_loss_matches_torch(case: Any, reduction: str) -> None:
    _, call, arrays, grads = case
    await _compare(lambda lib, *t: call(lib, *t, reduction), arrays, grads, np.float64, 1e-12)
    await _compare(lambda lib, *t: call(lib, *t, reduction), arrays, grads, np.float32, 2e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
async def test_loss_gradcheck(case: Any, reduction: str) -> None:
    name, call, arrays, grads = case
    if name == "gaussian_nll_clamped":  # var's gradient is as if unclamped (torch.nn.functional's no_grad clamp)
        grads = [True, True, False]
    tensors = _tensors(ag, arrays, grads, np.float64)
    assert await gradcheck(lambda *t: call(ag, *t, reduction), tensors)
    if reduction == "sum" and not name.startswith("gaussian_nll_clamped"):
        assert await gradgradcheck(lambda *t: call(ag, *t, reduction), tensors)


# ------------------------------------------------------------------------------ modules
def _loss_modules(lib: Any) -> list[Any]:
    n = lib.nn
    return [
        n.MarginRankingLoss(), n.MarginRankingLoss(margin=0.5, reduction="sum"), n.HingeEmbeddingLoss(margin=2.0),
        n.CosineEmbeddingLoss(), n.SoftMarginLoss(), n.MultiLabelSoftMarginLoss(), n.MultiLabelMarginLoss(),
        n.MultiMarginLoss(p=2, margin=0.5), n.TripletMarginLoss(), n.TripletMarginLoss(p=1, swap=True),
        n.TripletMarginWithDistanceLoss(), n.PoissonNLLLoss(log_input=False), n.GaussianNLLLoss(full=True),
        n.CTCLoss(blank=2, zero_infinity=True), n.EmbeddingBag(5, 3, mode="sum", padding_idx=1, max_norm=1.0),
        n.EmbeddingBag(4, 2), n.EmbeddingBag(4, 2, norm_type=1.0, scale_grad_by_freq=True, mode="max"),
        n.MaxUnpool1d(2), n.MaxUnpool2d(2, stride=1), n.MaxUnpool3d((2, 1, 2), padding=1), n.LPPool1d(1.5, 3, stride=2),
        n.LPPool2d(2, (2, 3), ceil_mode=True), n.LPPool3d(3, 2),
    ]


def test_reprs_match_torch() -> None:
    for ours, theirs in zip(_loss_modules(ag), _loss_modules(torch), strict=True):
        assert repr(ours) == repr(theirs)


async def test_modules_match_functional() -> None:
    a, b, c = (ag.tensor(x, requires_grad=True) for x in (X1, X2, X3))
    ta, tb, tc = (torch.tensor(x) for x in (X1, X2, X3))
    pairs = [
        (nn.TripletMarginLoss(margin=0.5, p=1)(a, b, c), torch.nn.TripletMarginLoss(margin=0.5, p=1)(ta, tb, tc)),
        (nn.TripletMarginWithDistanceLoss(swap=True)(a, b, c), torch.nn.TripletMarginWithDistanceLoss(swap=True)(ta, tb, tc)),
        (nn.MultiMarginLoss(weight=ag.tensor(W5))(a, ag.tensor(TM)),
         torch.nn.MultiMarginLoss(weight=torch.tensor(W5))(ta, torch.tensor(TM))),
        (nn.GaussianNLLLoss(reduction="sum")(a, b, 0.5), torch.nn.GaussianNLLLoss(reduction="sum")(ta, tb, 0.5)),
        (nn.PoissonNLLLoss(full=True)(a, b.abs() * 3), torch.nn.PoissonNLLLoss(full=True)(ta, tb.abs() * 3)),
    ]
    for out, tout in pairs:
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        legacy = nn.SoftMarginLoss(size_average=False)
    assert legacy.reduction == "sum"


# ------------------------------------------------------------------------------ errors
def _raises_as_torch(call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    expected = str(theirs.value).replace("torch.", "aiograd.")
    with pytest.raises(type(theirs.value), match=re.escape(expected)):
        call(ag)


def _t(lib: Any, a: Any) -> Any:
    return lib.tensor(np.asarray(a))


ERRORS: list[Callable[[Any], Any]] = [
    lambda lib: fn_of(lib).margin_ranking_loss(_t(lib, X1), _t(lib, X2[0]), _t(lib, X1)),
    lambda lib: fn_of(lib).margin_ranking_loss(_t(lib, X1), _t(lib, X2), _t(lib, X1), reduction="avg"),
    lambda lib: fn_of(lib).cosine_embedding_loss(_t(lib, X1), _t(lib, X2), _t(lib, X1)),
    lambda lib: fn_of(lib).cosine_embedding_loss(_t(lib, X1), _t(lib, X2[0]), _t(lib, X1[:, 0])),
    lambda lib: fn_of(lib).cosine_embedding_loss(_t(lib, X1[0]), _t(lib, X2[0]), _t(lib, X1[:, 0])),
    lambda lib: fn_of(lib).triplet_margin_loss(_t(lib, X1), _t(lib, X2[0]), _t(lib, X3)),
    lambda lib: fn_of(lib).triplet_margin_loss(_t(lib, X1), _t(lib, X2), _t(lib, X3), margin=0),
    lambda lib: fn_of(lib).triplet_margin_with_distance_loss(_t(lib, X1), _t(lib, X2), _t(lib, X3), margin=-1.0),
    lambda lib: fn_of(lib).triplet_margin_with_distance_loss(_t(lib, X1), _t(lib, X2), _t(lib, X3), reduction="x"),
    lambda lib: fn_of(lib).triplet_margin_with_distance_loss(_t(lib, X1), _t(lib, X2[0]), _t(lib, X3)),
    lambda lib: fn_of(lib).gaussian_nll_loss(_t(lib, X1), _t(lib, X2), _t(lib, np.ones((3, 5)))),
    lambda lib: fn_of(lib).gaussian_nll_loss(_t(lib, X1), _t(lib, X2), _t(lib, -np.ones((4, 5)))),
    lambda lib: fn_of(lib).gaussian_nll_loss(_t(lib, X1), _t(lib, X2), -1.0),
    lambda lib: fn_of(lib).gaussian_nll_loss(_t(lib, X1), _t(lib, X2), 1.0, reduction="x"),
    lambda lib: fn_of(lib).multilabel_soft_margin_loss(_t(lib, X1), _t(lib, X2), reduction="x"),
    lambda lib: fn_of(lib).soft_margin_loss(_t(lib, X1), _t(lib, X2), reduction="x"),
    lambda lib: fn_of(lib).poisson_nll_loss(_t(lib, X1), _t(lib, X2), reduction="x"),
    lambda lib: fn_of(lib).hinge_embedding_loss(_t(lib, X1), _t(lib, X2), reduction="x"),
    lambda lib: fn_of(lib).multilabel_margin_loss(_t(lib, X1), _t(lib, TML[:, :2])),
    lambda lib: fn_of(lib).multilabel_margin_loss(_t(lib, X1), _t(lib, np.where(TML == 4, 7, TML))),
    lambda lib: fn_of(lib).multilabel_margin_loss(_t(lib, np.zeros((2, 3, 4))), _t(lib, TML)),
    lambda lib: fn_of(lib).multilabel_margin_loss(_t(lib, X1), _t(lib, TML * 1.0)),
    lambda lib: fn_of(lib).multi_margin_loss(_t(lib, X1), _t(lib, np.array([0, 1, 2]))),
    lambda lib: fn_of(lib).multi_margin_loss(_t(lib, X1), _t(lib, np.array([0, 1, 2, 5]))),
    lambda lib: fn_of(lib).multi_margin_loss(_t(lib, X1), _t(lib, TM), weight=_t(lib, np.ones(4))),
    lambda lib: fn_of(lib).multi_margin_loss(_t(lib, X1), _t(lib, TM), weight=_t(lib, np.ones((1, 5)))),
    lambda lib: fn_of(lib).multi_margin_loss(_t(lib, X1), _t(lib, TM), p=3),
    lambda lib: fn_of(lib).multi_margin_loss(_t(lib, np.zeros((2, 0))), _t(lib, TM[:2])),
    lambda lib: lib.nn.MultiMarginLoss(p=3),
    lambda lib: lib.nn.TripletMarginLoss(margin=0.0),
    lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=0.0),
]


@pytest.mark.parametrize("call", ERRORS, ids=range(len(ERRORS)))
def test_errors_match_torch(call: Callable[[Any], Any]) -> None:
    _raises_as_torch(call)


# ------------------------------------------------------------------------------ ctc_loss
T_, B_, C_ = 7, 4, 5
CTC_TARGETS = np.array([[1, 2, 2, 3], [3, 3, 1, 4], [1, 1, 1, 1], [2, 4, 1, 3]])
CTC_IL, CTC_TL = [7, 6, 7, 3], [3, 4, 0, 4]  # (the last: too short for its target, an infinite loss)


def _log_probs(shape: tuple[int, ...] = (T_, B_, C_)) -> Any:
    x = RNG.standard_normal(shape)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _ctc_targets(concat: bool) -> Any:
    if concat:
        return np.concatenate([CTC_TARGETS[b, : CTC_TL[b]] for b in range(B_)])
    return CTC_TARGETS


# The op factory's row: through log_softmax (the gradient is the logits', as torch's), lengths
# whose losses are all finite, every check but the second derivative (torch has none).
CTC_SPECS = [
    OpSpec("ctc_loss", lambda lib, x: fn_of(lib).ctc_loss(
        x.log_softmax(2), lib.tensor(CTC_TARGETS), lib.tensor([7, 6, 7, 5]), lib.tensor([3, 4, 0, 2])),
        ((T_, B_, C_),), grad_fn="MeanBackward0", gradgrad=False,
        why="torch's CtcLossBackward0 is not differentiable (its derivative is not implemented)"),
]
globals().update(make_op_tests(CTC_SPECS))


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("concat", [False, True], ids=["padded", "concatenated"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
async def test_ctc_loss_matches_torch(reduction: str, concat: bool, zero_infinity: bool) -> None:
    lp, tg = _log_probs(), _ctc_targets(concat)
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-5)):
        def call(lib: Any, x: Any) -> Any:
            return fn_of(lib).ctc_loss(x, lib.tensor(tg), lib.tensor(CTC_IL), lib.tensor(CTC_TL), reduction=reduction,
                                       zero_infinity=zero_infinity)

        ours = ag.tensor(lp.astype(dtype), requires_grad=True)
        theirs = torch.tensor(lp.astype(dtype), requires_grad=True)
        out, tout = call(ag, ours), call(torch, theirs)
        assert out.grad_fn.name() == tout.grad_fn.name()
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
        u = RNG.standard_normal(out.shape).astype(dtype)
        (g,) = await ag.grad(out, [ours], ag.tensor(u))
        (tg_,) = torch.autograd.grad(tout, [theirs], torch.tensor(u))
        np.testing.assert_allclose(g.detach().numpy(), tg_.detach().numpy(), rtol=tol, atol=tol)


async def test_ctc_loss_node_lengths_as_lists_and_unbatched() -> None:
    lp = _log_probs()
    out = F.ctc_loss(ag.tensor(lp, requires_grad=True), ag.tensor(CTC_TARGETS), CTC_IL, CTC_TL, reduction="none")
    assert out.grad_fn.name() == "CtcLossBackward0"
    for r in REDUCTIONS:
        ours = F.ctc_loss(ag.tensor(lp[:, 0]), ag.tensor(CTC_TARGETS[0, :3]), [7], [3], blank=4, reduction=r)
        theirs = torch.nn.functional.ctc_loss(torch.tensor(lp[:, 0]), torch.tensor(CTC_TARGETS[0, :3]), [7], [3],
                                              blank=4, reduction=r)
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    module = nn.CTCLoss(blank=0, reduction="sum")(ag.tensor(lp), ag.tensor(CTC_TARGETS), CTC_IL[:3] + [7], CTC_TL)
    tmod = torch.nn.CTCLoss(blank=0, reduction="sum")(torch.tensor(lp), torch.tensor(CTC_TARGETS), CTC_IL[:3] + [7],
                                                       CTC_TL)
    np.testing.assert_allclose(module.detach().numpy(), tmod.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
async def test_ctc_loss_gradcheck(reduction: str) -> None:
    lp = ag.tensor(_log_probs((5, 2, 4)), requires_grad=True)
    tg, il, tl = ag.tensor(np.array([[1, 2], [3, 3]])), ag.tensor([5, 4]), ag.tensor([2, 2])
    # (through log_softmax: ATen's gradient is the one with respect to the logits, as PyTorch's)
    assert await gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), tg, il, tl, reduction=reduction), [lp])


CTC_ERRORS: list[Callable[[Any], Any]] = [
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, CTC_IL), _t(lib, CTC_TL),
                                    blank=5),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, CTC_IL), _t(lib, CTC_TL),
                                    reduction="avg"),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, [7, 6, 8, 1]), _t(lib, CTC_TL)),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, [7, 6, 1]), _t(lib, CTC_TL)),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, CTC_IL), _t(lib, [3, 5, 0, 1])),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS[:3]), _t(lib, CTC_IL), _t(lib, CTC_TL)),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, [7.0, 6, 7, 3]),
                                    _t(lib, CTC_TL)),
    lambda lib: fn_of(lib).ctc_loss(_t(lib, _log_probs()), _t(lib, CTC_TARGETS), _t(lib, CTC_IL), _t(lib, [3, -1, 0, 1])),
]


@pytest.mark.parametrize("call", CTC_ERRORS, ids=range(len(CTC_ERRORS)))
def test_ctc_errors_match_torch(call: Callable[[Any], Any]) -> None:
    _raises_as_torch(call)


# ------------------------------------------------------------------------------ embedding_bag
BAG_INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 0, 1])
BAG_OFFSETS = np.array([0, 2, 2, 5])
BAG_CASES: list[tuple[str, dict[str, Any]]] = [
    ("offsets", {"offsets": BAG_OFFSETS}),
    ("last_offset", {"offsets": np.array([0, 2, 2, 5, 9]), "include_last_offset": True}),
    ("2d", {"input": BAG_INPUT[:8].reshape(2, 4)}),
    ("padding", {"offsets": BAG_OFFSETS, "padding_idx": 4}),
    ("padding_negative", {"input": BAG_INPUT[:8].reshape(4, 2), "padding_idx": -1}),
]


def _bag(lib: Any, w: Any, mode: str, psw: Any = None, **kw: Any) -> Any:
    kw = dict(kw)
    inp = lib.tensor(kw.pop("input", BAG_INPUT))
    if "offsets" in kw:
        kw["offsets"] = lib.tensor(kw["offsets"])
    return fn_of(lib).embedding_bag(inp, w, mode=mode, per_sample_weights=psw, **kw)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", BAG_CASES, ids=[c[0] for c in BAG_CASES])
async def test_embedding_bag_matches_torch(case: Any, mode: str) -> None:
    _, kw = case
    w = RNG.standard_normal((6, 3))
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        ours, theirs = ag.tensor(w.astype(dtype), requires_grad=True), torch.tensor(w.astype(dtype), requires_grad=True)
        out, tout = _bag(ag, ours, mode, **kw), _bag(torch, theirs, mode, **kw)
        assert out.shape == tuple(tout.shape)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
        u = RNG.standard_normal(out.shape).astype(dtype)
        (g,) = await ag.grad(out, [ours], ag.tensor(u))
        (tg,) = torch.autograd.grad(tout, [theirs], torch.tensor(u))
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=tol, atol=tol)
    ours = ag.tensor(w, requires_grad=True)
    assert await gradcheck(lambda x: _bag(ag, x, mode, **kw), [ours])
    if mode != "max":
        assert await gradgradcheck(lambda x: _bag(ag, x, mode, **kw) * x.sum(), [ours])


async def test_embedding_bag_per_sample_weights_and_freq() -> None:
    w, psw = RNG.standard_normal((6, 3)), RNG.standard_normal(BAG_INPUT.shape)
    ours, opsw = ag.tensor(w, requires_grad=True), ag.tensor(psw, requires_grad=True)
    theirs, tpsw = torch.tensor(w, requires_grad=True), torch.tensor(psw, requires_grad=True)
    out = _bag(ag, ours, "sum", opsw, offsets=BAG_OFFSETS, padding_idx=2)
    tout = _bag(torch, theirs, "sum", tpsw, offsets=BAG_OFFSETS, padding_idx=2)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    u = RNG.standard_normal(out.shape)
    gs = await ag.grad(out, [ours, opsw], ag.tensor(u))
    tgs = torch.autograd.grad(tout, [theirs, tpsw], torch.tensor(u))
    for g, tg in zip(gs, tgs, strict=True):
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert await gradcheck(lambda x, p: _bag(ag, x, "sum", p, offsets=BAG_OFFSETS), [ours, opsw])


async def test_embedding_bag_max_norm_and_module() -> None:
    w = RNG.standard_normal((6, 3)) * 3
    ours, theirs = ag.tensor(w), torch.tensor(w)
    out = _bag(ag, ours, "mean", offsets=BAG_OFFSETS, max_norm=1.5)
    tout = _bag(torch, theirs, "mean", offsets=BAG_OFFSETS, max_norm=1.5)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)  # renormalised in place
    for seed in (0, 5):
        ag.manual_seed(seed)
        torch.manual_seed(seed)
        bag = nn.EmbeddingBag(7, 4, mode="sum", padding_idx=2, dtype=ag.float32)
        tbag = torch.nn.EmbeddingBag(7, 4, mode="sum", padding_idx=2, dtype=torch.float32)
        # (torch's float32 normal_, drawn as aiograd's RNG draws it: equal to an ulp)
        np.testing.assert_allclose(bag.weight.detach().numpy(), tbag.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
        out = bag(ag.tensor(BAG_INPUT), ag.tensor(BAG_OFFSETS))
        tout = tbag(torch.tensor(BAG_INPUT), torch.tensor(BAG_OFFSETS))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
    pre = nn.EmbeddingBag.from_pretrained(ag.tensor(w), mode="max")
    assert not pre.weight.requires_grad and pre.mode == "max"
    assert nn.EmbeddingBag.from_pretrained(ag.tensor(w), freeze=False).weight.requires_grad
    np.testing.assert_allclose(pre(ag.tensor(BAG_INPUT[:8].reshape(2, 4))).detach().numpy(),
                               torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="max")(
                                   torch.tensor(BAG_INPUT[:8].reshape(2, 4))).detach().numpy())


W6 = np.zeros((6, 3))
BAG_ERRORS: list[Callable[[Any], Any]] = [
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [1, 2])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [0, 12])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, np.zeros(0, np.int64)),
                                         include_last_offset=True),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, [1, 2, 7]), _t(lib, W6), _t(lib, [0])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, [1.0, 2.0]), _t(lib, W6), _t(lib, [0])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [0]), mode="x"),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [0]), mode="max",
                                         per_sample_weights=_t(lib, np.ones(9))),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [0]), mode="max",
                                         scale_grad_by_freq=True),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [0]), per_sample_weights=_t(lib, [1.0])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6)),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT[:8].reshape(2, 4)), _t(lib, W6), _t(lib, [0])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, np.zeros(6)), _t(lib, [0])),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, np.zeros((1, 1, 1), np.int64)), _t(lib, W6)),
    lambda lib: fn_of(lib).embedding_bag(_t(lib, BAG_INPUT), _t(lib, W6), _t(lib, [0]), padding_idx=9),
    lambda lib: lib.nn.EmbeddingBag(3, 2, padding_idx=3),
    lambda lib: lib.nn.EmbeddingBag.from_pretrained(_t(lib, np.zeros(3))),
]


@pytest.mark.parametrize("call", BAG_ERRORS, ids=range(len(BAG_ERRORS)))
def test_embedding_bag_errors_match_torch(call: Callable[[Any], Any]) -> None:
    _raises_as_torch(call)
