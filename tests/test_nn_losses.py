"""The losses of aiograd/nn/_losses.py (l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy,
binary_cross_entropy_with_logits, kl_div) and cross_entropy's targets: factory rows for each loss
and reduction (gradcheck, gradgradcheck, values and first and second derivatives against torch,
float32, node names), then PyTorch's errors and warnings, word for word."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

REDUCTIONS = ("none", "mean", "sum")
W = np.array([0.5, 2.0, 1.5])  # a weight broadcast along the last dim of a (2, 3) input
W23 = np.array([[0.5, 2.0, 1.5], [1.0, 0.25, 3.0]])  # an elementwise weight of a (2, 3) input


def nn(lib: Any) -> Any:
    return lib.nn.functional


def apart_by(*gaps: float, shape: tuple[int, ...] = (2, 3)) -> Callable[[np.random.Generator], list[Any]]:
    """Input and target whose differences stay 0.1 away from each of ``+-gaps`` (the kinks)."""

    def draw(rng: np.random.Generator) -> list[Any]:
        while True:
            x, y = rng.uniform(-2, 2, size=shape), rng.uniform(-2, 2, size=shape)
            d = np.abs(x - y)
            if all(np.min(np.abs(d - g)) > 0.1 for g in gaps):
                return [x, y]

    return draw


def probabilities(rng: np.random.Generator) -> list[Any]:
    """Probabilities away from 0 and 1 (input) and targets in [0, 1]."""
    return [rng.uniform(0.1, 0.9, size=(2, 3)), rng.uniform(0.0, 1.0, size=(2, 3))]


def log_probabilities(rng: np.random.Generator) -> list[Any]:
    """kl_div's operands: log-probabilities and probabilities (away from 0: xlogy's kink)."""
    return [np.log(rng.uniform(0.1, 1.0, size=(2, 3))), rng.uniform(0.1, 1.0, size=(2, 3))]


def kl_div(lib: Any, x: Any, y: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'mean''s warning: checked in test_kl_div_mean_warns
        return nn(lib).kl_div(x, y, **kwargs)


def _rows() -> list[OpSpec]:
    rows = []
    for r in REDUCTIONS:
        rows += [
            OpSpec(f"l1_loss_{r}", lambda lib, x, y, r=r: nn(lib).l1_loss(x, y, reduction=r), apart_by(0.0),
                   grad_fn={"none": "AbsBackward0", "mean": "MeanBackward0", "sum": "SumBackward0"}[r]),
            OpSpec(f"smooth_l1_loss_{r}", lambda lib, x, y, r=r: nn(lib).smooth_l1_loss(x, y, reduction=r),
                   apart_by(1.0), grad_fn="SmoothL1LossBackward0"),
            OpSpec(f"smooth_l1_loss_beta_{r}",
                   lambda lib, x, y, r=r: nn(lib).smooth_l1_loss(x, y, reduction=r, beta=0.5),
                   apart_by(0.5), grad_fn="SmoothL1LossBackward0"),
            OpSpec(f"huber_loss_{r}", lambda lib, x, y, r=r: nn(lib).huber_loss(x, y, reduction=r, delta=0.7),
                   apart_by(0.7), grad_fn="HuberLossBackward0"),
            OpSpec(f"binary_cross_entropy_{r}",
                   lambda lib, x, y, r=r: nn(lib).binary_cross_entropy(x, y, reduction=r), probabilities,
                   grad_fn="BinaryCrossEntropyBackward0", rtol=1e-6),
            OpSpec(f"binary_cross_entropy_weighted_{r}",
                   lambda lib, x, y, r=r: nn(lib).binary_cross_entropy(x, y, const(lib, W), reduction=r),
                   probabilities, grad_fn="BinaryCrossEntropyBackward0", rtol=1e-6),
            OpSpec(f"binary_cross_entropy_with_logits_{r}",
                   lambda lib, x, y, r=r: nn(lib).binary_cross_entropy_with_logits(x, y, reduction=r),
                   ((2, 3), (2, 3)), grad_fn="BinaryCrossEntropyWithLogitsBackward0"),
            OpSpec(f"binary_cross_entropy_with_logits_weights_{r}",
                   lambda lib, x, y, r=r: nn(lib).binary_cross_entropy_with_logits(
                       x, y, weight=const(lib, W23), reduction=r, pos_weight=const(lib, W)),
                   ((2, 3), (2, 3)), grad_fn="BinaryCrossEntropyWithLogitsBackward0"),
            OpSpec(f"kl_div_{r}", lambda lib, x, y, r=r: kl_div(lib, x, y, reduction=r), log_probabilities,
                   grad_fn={"none": "SubBackward0", "mean": "MeanBackward0", "sum": "SumBackward0"}[r]),
            OpSpec(f"kl_div_log_target_{r}", lambda lib, x, y, r=r: kl_div(lib, x, y, reduction=r, log_target=True),
                   ((2, 3), (2, 3)),
                   grad_fn={"none": "MulBackward0", "mean": "MeanBackward0", "sum": "SumBackward0"}[r]),
        ]
    for r in REDUCTIONS:
        rows += [
            OpSpec(f"l1_loss_weighted_{r}", lambda lib, x, y, r=r: nn(lib).l1_loss(x, y, reduction=r, weight=const(lib, W23)),
                   apart_by(0.0), float32=False),  # (a float64 weight promotes, as in torch)
            OpSpec(f"huber_loss_weighted_{r}",
                   lambda lib, x, y, r=r: nn(lib).huber_loss(x, y, reduction=r, weight=const(lib, W23)), apart_by(1.0),
                   float32=False),
        ]
    rows += [
        OpSpec("l1_loss_broadcast", lambda lib, x, y: quiet(nn(lib).l1_loss, x, y), apart_by(0.0, shape=(3,))),
        OpSpec("smooth_l1_loss_beta_0", lambda lib, x, y: nn(lib).smooth_l1_loss(x, y, beta=0.0), apart_by(0.0),
               grad_fn="MeanBackward0"),
        OpSpec("smooth_l1_loss_broadcast", lambda lib, x, y: quiet(nn(lib).smooth_l1_loss, x, y[0], reduction="sum"),
               apart_by(1.0, shape=(2, 3))),
        OpSpec("kl_div_batchmean", lambda lib, x, y: kl_div(lib, x, y, reduction="batchmean"), log_probabilities,
               grad_fn="DivBackward0"),
        OpSpec("kl_div_batchmean_log_target", lambda lib, x, y: kl_div(lib, x, y, reduction="batchmean", log_target=True),
               ((2, 3), (2, 3)), grad_fn="DivBackward0"),
    ]
    return rows


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the target-size warning: checked in its own test
        return fn(*args, **kwargs)


SPECS = _rows()

#: aiograd/nn/_distance.py.
DISTANCE_SPECS = [
    OpSpec("normalize", lambda lib, x: nn(lib).normalize(x), ((2, 3, 4),), grad_fn="DivBackward0"),
    OpSpec("normalize_p1_dim0", lambda lib, x: nn(lib).normalize(x, p=1, dim=0), ((2, 3),), op="normalize"),
    OpSpec("normalize_p3_last", lambda lib, x: nn(lib).normalize(x, 3.0, -1, 1e-6), ((2, 3),), op="normalize"),
    OpSpec("cosine_similarity", lambda lib, x, y: nn(lib).cosine_similarity(x, y), ((2, 3, 4), (2, 3, 4)),
           grad_fn="SumBackward1"),
    OpSpec("cosine_similarity_broadcast_last", lambda lib, x, y: nn(lib).cosine_similarity(x, y, dim=-1, eps=1e-6),
           ((2, 3, 4), (3, 4)), op="cosine_similarity"),
    OpSpec("cosine_similarity_vectors", lambda lib, x, y: nn(lib).cosine_similarity(x, y, 0), ((5,), (5,)),
           op="cosine_similarity"),
]

globals().update(make_op_tests(SPECS + DISTANCE_SPECS))


# ------------------------------------------------------------------------------ values
@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
async def test_binary_cross_entropy_clamps_its_logs_at_minus_100(reduction: str) -> None:
    """Probabilities of exactly 0 and 1: each log is clamped at -100, as PyTorch's; the gradient
    divides by max(x (1 - x), 1e-12)."""
    x = np.array([0.0, 1.0, 0.0, 1.0, 1e-50, 0.5])
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.5, 0.25])
    ours = F.binary_cross_entropy(a := ag.tensor(x, requires_grad=True), ag.tensor(y), reduction=reduction)
    theirs = torch.nn.functional.binary_cross_entropy(t := torch.tensor(x, requires_grad=True), torch.tensor(y), reduction=reduction)
    np.testing.assert_array_equal(ours.data, theirs.detach().numpy())
    (g,) = await ag.grad(ours.sum(), [a])
    (tg,) = torch.autograd.grad(theirs.sum(), [t])
    np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-15)


@requires_torch
async def test_binary_cross_entropy_with_logits_is_stable_at_large_logits() -> None:
    x = np.array([-800.0, -40.0, 0.0, 40.0, 800.0])
    y = np.array([1.0, 0.0, 0.5, 1.0, 0.0])
    for kwargs in ({}, {"pos_weight": np.array([3.0])}):
        tk = {k: torch.tensor(v) for k, v in kwargs.items()}
        ours = F.binary_cross_entropy_with_logits(a := ag.tensor(x, requires_grad=True), ag.tensor(y), reduction="none",
                                                  **{k: ag.tensor(v) for k, v in kwargs.items()})
        theirs = torch.nn.functional.binary_cross_entropy_with_logits(
            t := torch.tensor(x, requires_grad=True), torch.tensor(y), reduction="none", **tk)
        assert np.isfinite(ours.data).all()
        np.testing.assert_allclose(ours.data, theirs.detach().numpy(), rtol=1e-15)
        (g,) = await ag.grad(ours.sum(), [a])
        (tg,) = torch.autograd.grad(theirs.sum(), [t])
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-15)


def test_reexported_from_nn_functional() -> None:
    from aiograd.nn import _binary_losses, _losses

    for module, names in ((_losses, ("l1_loss", "smooth_l1_loss", "huber_loss")),
                          (_binary_losses, ("binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"))):
        for name in names:
            assert getattr(F, name) is getattr(module, name) and name in F.__all__


# ------------------------------------------------------------------------------ errors, warnings
def _t(lib: Any, data: Any, requires_grad: bool = False) -> Any:
    if lib is ag:
        return ag.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)
    return torch.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


X = np.array([[0.2, 0.7, 0.5], [0.9, 0.1, 0.3]])
ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("bce_input_above_1", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X * 2), _t(lib, X))),
    ("bce_input_below_0", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X - 1), _t(lib, X))),
    ("bce_target_size", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X), _t(lib, X[0]))),
    ("bce_weight_requires_grad", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X), _t(lib, X), _t(lib, W, True))),
    ("bce_weight_shape", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X), _t(lib, X), _t(lib, [1.0, 2.0, 3.0, 4.0]))),
    ("bce_dtypes", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X).float(), _t(lib, X))),
    ("bce_reduction", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X), _t(lib, X), reduction="bad")),
    ("bce_logits_target_size", lambda lib: nn(lib).binary_cross_entropy_with_logits(_t(lib, X), _t(lib, X[0]))),
    ("bce_logits_weight_requires_grad",
     lambda lib: nn(lib).binary_cross_entropy_with_logits(_t(lib, X), _t(lib, X), _t(lib, W, True))),
    ("bce_logits_pos_weight_requires_grad",
     lambda lib: nn(lib).binary_cross_entropy_with_logits(_t(lib, X), _t(lib, X), pos_weight=_t(lib, W, True))),
    ("bce_logits_weight_shape",
     lambda lib: nn(lib).binary_cross_entropy_with_logits(_t(lib, X), _t(lib, X), _t(lib, [1.0, 2.0, 3.0, 4.0]))),
    ("bce_logits_pos_weight_shape",
     lambda lib: nn(lib).binary_cross_entropy_with_logits(_t(lib, X), _t(lib, X), pos_weight=_t(lib, [1.0, 2.0, 3.0, 4.0]))),
    ("smooth_l1_negative_beta", lambda lib: nn(lib).smooth_l1_loss(_t(lib, X), _t(lib, X), beta=-1.0)),
    ("smooth_l1_reduction", lambda lib: nn(lib).smooth_l1_loss(_t(lib, X), _t(lib, X), reduction="bad")),
    ("huber_zero_delta", lambda lib: nn(lib).huber_loss(_t(lib, X), _t(lib, X), delta=0.0)),
    ("huber_negative_delta", lambda lib: nn(lib).huber_loss(_t(lib, X), _t(lib, X), delta=-1.0)),
    ("huber_reduction", lambda lib: nn(lib).huber_loss(_t(lib, X), _t(lib, X), reduction="bad")),
    ("huber_weight_shape", lambda lib: nn(lib).huber_loss(_t(lib, X), _t(lib, X), weight=_t(lib, W))),
    ("huber_weighted_reduction", lambda lib: nn(lib).huber_loss(_t(lib, X), _t(lib, X), reduction="bad", weight=_t(lib, X))),
    ("l1_weight_shape", lambda lib: nn(lib).l1_loss(_t(lib, X), _t(lib, X), weight=_t(lib, W))),
    ("l1_weighted_reduction", lambda lib: nn(lib).l1_loss(_t(lib, X), _t(lib, X), reduction="bad", weight=_t(lib, X))),
    ("l1_reduction", lambda lib: nn(lib).l1_loss(_t(lib, X), _t(lib, X), reduction="bad")),
    ("kl_div_reduction", lambda lib: nn(lib).kl_div(_t(lib, X), _t(lib, X), reduction="bad")),
    ("l1_broadcast", lambda lib: quiet(nn(lib).l1_loss, _t(lib, X), _t(lib, np.ones((4, 3))))),
    ("cosine_similarity_shapes", lambda lib: nn(lib).cosine_similarity(_t(lib, X), _t(lib, np.ones((4, 3))))),
    ("cosine_similarity_integers",
     lambda lib: nn(lib).cosine_similarity(lib.tensor([1, 2]), lib.tensor([2, 3]), dim=0)),
    ("cosine_similarity_dim", lambda lib: nn(lib).cosine_similarity(_t(lib, X), _t(lib, X), dim=2)),
    ("normalize_dim", lambda lib: nn(lib).normalize(_t(lib, X), dim=2)),
    ("normalize_out_requires_grad", lambda lib: nn(lib).normalize(_t(lib, X, True), out=_t(lib, X))),
]


def _torch_words(message: str) -> str:
    return re.sub(r"torch\.Size", "aiograd.Size", message)


@requires_torch
@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(ag)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == _torch_words(str(theirs.value))


def _warnings_of(call: Callable[[], Any]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [f"{w.category.__name__}: {w.message}" for w in caught]


WARNINGS: list[tuple[str, Callable[[Any], Any]]] = [
    ("kl_div_mean", lambda lib: nn(lib).kl_div(_t(lib, X), _t(lib, X))),
    ("kl_div_legacy", lambda lib: nn(lib).kl_div(_t(lib, X), _t(lib, X), size_average=False)),
    ("l1_target_size", lambda lib: nn(lib).l1_loss(_t(lib, X), _t(lib, X[0]))),
    ("l1_legacy", lambda lib: nn(lib).l1_loss(_t(lib, X), _t(lib, X), reduce=False)),
    ("smooth_l1_target_size", lambda lib: nn(lib).smooth_l1_loss(_t(lib, X), _t(lib, X[0]))),
    ("smooth_l1_legacy", lambda lib: nn(lib).smooth_l1_loss(_t(lib, X), _t(lib, X), size_average=True)),
    ("huber_target_size", lambda lib: nn(lib).huber_loss(_t(lib, X), _t(lib, X[0]))),
    ("bce_legacy", lambda lib: nn(lib).binary_cross_entropy(_t(lib, X), _t(lib, X), reduce=True, size_average=False)),
    ("bce_logits_legacy", lambda lib: nn(lib).binary_cross_entropy_with_logits(_t(lib, X), _t(lib, X), size_average=False)),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), WARNINGS, ids=[n for n, _ in WARNINGS])
def test_warnings_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    theirs = [_torch_words(w) for w in _warnings_of(lambda: call(torch))]
    assert theirs and _warnings_of(lambda: call(ag)) == theirs


def test_kl_div_mean_warning_points_at_the_caller() -> None:
    with pytest.warns(UserWarning, match="'mean' divides the total loss") as caught:
        F.kl_div(ag.tensor(X), ag.tensor(X))
    assert caught[0].filename == __file__


# ------------------------------------------------------------------------------ cross_entropy
CE_SHAPES = [(4, 3), (3,), (2, 3, 2)]
CE_CASES = [
    pytest.param(shape, target, weighted, ignore_index, smoothing, reduction,
                 id=f"{len(shape)}d-{target}-{'w' if weighted else 'nw'}-ii{ignore_index}-ls{smoothing}-{reduction}")
    for shape in CE_SHAPES
    for target in ("indices", "probabilities")
    for weighted in (False, True)
    for ignore_index in (-100, 1)
    for smoothing in (0.0, 0.2)
    for reduction in REDUCTIONS
]


def _ce_operands(shape: tuple[int, ...], target: str, weighted: bool) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape)
    n_classes = shape[0] if len(shape) == 1 else shape[1]
    if target == "indices":
        t = rng.integers(0, n_classes, () if len(shape) == 1 else (shape[0], *shape[2:]))
        if len(shape) > 1:
            t.flat[0] = 1  # (one target that ignore_index=1 ignores, one it keeps)
            t.flat[1] = 0
        else:
            t = np.array(1)  # the only target, ignored with ignore_index=1: a NaN mean
    else:
        t = rng.random(shape)
        t /= t.sum(0 if len(shape) == 1 else 1, keepdims=True)
    return x, t, rng.random(n_classes) + 0.5 if weighted else None


@requires_torch
@pytest.mark.parametrize(("shape", "target", "weighted", "ignore_index", "smoothing", "reduction"), CE_CASES)
async def test_cross_entropy_matches_torch(
    shape: tuple[int, ...], target: str, weighted: bool, ignore_index: int, smoothing: float, reduction: str
) -> None:
    """Class indices and probabilities, with weight, ignore_index and label_smoothing as PyTorch
    combines them: the value, the gradient and the second derivative, or the same error."""
    x, t, w = _ce_operands(shape, target, weighted)

    def call(lib: Any, xs: Any) -> Any:
        weight = None if w is None else (ag.tensor(w) if lib is ag else torch.tensor(w))
        tt = ag.tensor(t) if lib is ag else torch.tensor(t)
        return nn(lib).cross_entropy(xs, tt, weight, ignore_index=ignore_index, reduction=reduction,
                                     label_smoothing=smoothing)

    tx = torch.tensor(x, requires_grad=True)
    try:
        tout = call(torch, tx)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as ours:
            call(ag, ag.tensor(x, requires_grad=True))
        assert str(ours.value) == str(e)
        return
    ax = ag.tensor(x, requires_grad=True)
    out = call(ag, ax)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-15)
    u = np.random.default_rng(1).standard_normal(tout.shape)
    (g,) = await ag.grad(out, [ax], ag.tensor(u), create_graph=True)
    (tg,) = torch.autograd.grad(tout, [tx], torch.tensor(u), create_graph=True)
    np.testing.assert_allclose(g.data, tg.detach().numpy(), rtol=1e-10, atol=1e-15)
    v = np.random.default_rng(2).standard_normal(x.shape)
    if np.isnan(g.data).any():
        return
    (gg,) = await ag.grad((g * ag.tensor(v)).sum(), [ax])
    (tgg,) = torch.autograd.grad((tg * torch.tensor(v)).sum(), [tx])
    np.testing.assert_allclose(gg.data, tgg.numpy(), rtol=1e-9, atol=1e-14)


# ------------------------------------------------------------------------------ distances
@requires_torch
async def test_cosine_similarity_clamps_norms_without_recording_as_torch() -> None:
    """A norm below eps is clamped for the value but not for the gradient (ATen clamps a clone
    of it in place under no_grad): the same huge gradient as torch's, and an integer operand
    promoted to the float one's dtype."""
    z = np.zeros((2, 3))
    z[1] = [1e-10, 0.0, 0.0]
    a, t = ag.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    out = F.cosine_similarity(a, ag.tensor(np.ones((2, 3))))
    tout = torch.nn.functional.cosine_similarity(t, torch.ones(2, 3, dtype=torch.float64))
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-15)
    (g,) = await ag.grad(out.sum(), [a])
    np.testing.assert_allclose(g.data, torch.autograd.grad(tout.sum(), [t])[0].numpy(), rtol=1e-14)
    mixed = F.cosine_similarity(ag.tensor([1, 2]), ag.tensor(np.array([2.0, 3.0], dtype=np.float32)), dim=0)
    tmixed = torch.nn.functional.cosine_similarity(torch.tensor([1, 2]), torch.tensor([2.0, 3.0]), dim=0)
    assert mixed.dtype == np.float32 and str(tmixed.dtype) == "torch.float32"
    np.testing.assert_allclose(mixed.data, tmixed.numpy(), rtol=1e-6)


@requires_torch
def test_normalize_writes_out_as_torch() -> None:
    o, to_ = ag.zeros(2, 3, dtype=np.float64), torch.zeros(2, 3, dtype=torch.float64)
    assert F.normalize(ag.tensor(X), out=o) is o
    assert torch.nn.functional.normalize(torch.tensor(X), out=to_) is to_
    np.testing.assert_allclose(o.data, to_.numpy(), rtol=1e-15)
    np.testing.assert_array_equal(F.normalize(ag.zeros(2, 3, dtype=np.float64)).data, np.zeros((2, 3)))


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits", "kl_div"])
async def test_empty_inputs_as_torch(name: str, reduction: str) -> None:
    """No elements: a NaN mean, a zero sum, and an empty gradient, as torch."""
    a, t = ag.tensor(np.zeros((0, 3)), requires_grad=True), torch.zeros(0, 3, dtype=torch.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(F, name)(a, ag.tensor(np.zeros((0, 3))), reduction=reduction)
        tout = getattr(torch.nn.functional, name)(t, torch.zeros(0, 3, dtype=torch.float64), reduction=reduction)
    np.testing.assert_array_equal(out.data, tout.detach().numpy())
    (g,) = await ag.grad(out.sum(), [a])
    assert g.shape == tuple(torch.autograd.grad(tout.sum(), [t])[0].shape)
