"""aiograd.nn.functional: activations, softmax, linear, mse_loss, nll_loss, cross_entropy.

Loss cases are tables of keyword arguments; each is gradchecked, gradgradchecked and, with torch
installed, compared with torch.nn.functional (values, gradients, node names).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, rng, to_torch, torch

import aiograd as ag
import aiograd.nn.functional as F
from aiograd._ops import linalg, unary_math
from aiograd._ops import softmax as S
from aiograd.testing import gradcheck, gradgradcheck

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

TF = torch.nn.functional if torch is not None else None


def _ag(data: np.ndarray, requires_grad: bool = True) -> ag.Tensor:
    return ag.tensor(data, requires_grad=requires_grad)


def _torch(data: np.ndarray, requires_grad: bool = True) -> Any:
    return to_torch(data, requires_grad=requires_grad)


async def _compare_with_torch(
    out: ag.Tensor, tout: Any, inputs: list[ag.Tensor], tinputs: list[Any], seed: int = 1
) -> None:
    """Same value, node name and gradient (for a random grad_output) as torch."""
    assert out.shape == tuple(tout.shape)
    assert out.dtype == np.dtype(str(tout.dtype).removeprefix("torch."))
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert out.grad_fn.name() == type(tout.grad_fn).__name__
    g_out = rng(seed).standard_normal(out.shape)
    grads = await ag.grad(out, inputs, ag.tensor(g_out))
    tgrads = torch.autograd.grad(tout, tinputs, torch.tensor(g_out))
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------ re-exports
def test_reexports() -> None:
    assert F.relu is unary_math.relu
    assert F.sigmoid is unary_math.sigmoid
    assert F.tanh is unary_math.tanh
    assert F.linear is linalg.linear
    assert sorted(F.__all__) == sorted(
        ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "linear", "mse_loss", "nll_loss",
         "cross_entropy"]
        + ["gelu", "silu", "elu", "leaky_relu", "softplus", "hardtanh", "mish", "dropout",
           "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
           "layer_norm", "batch_norm", "group_norm", "embedding"]
        + ["pad", "one_hot"]  # shape and indexing
        + ["l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "normalize", "cosine_similarity",
           "scaled_dot_product_attention", "multi_head_attention_forward"]
        + ["conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]
        + ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid"]
        + ["relu6", "hardswish", "hardsigmoid", "logsigmoid", "glu", "prelu", "selu", "celu", "softsign",
           "tanhshrink", "threshold", "softmin", "pixel_shuffle", "pixel_unshuffle", "unfold", "fold",
           "instance_norm", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "conv_transpose1d"]
        + ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d"]
        + ["hardshrink", "softshrink", "channel_shuffle", "bilinear", "pairwise_distance", "rms_norm",
           "local_response_norm", "gumbel_softmax"]  # aiograd/nn/_functional_more.py
        + ["cosine_embedding_loss", "ctc_loss", "embedding_bag", "gaussian_nll_loss", "hinge_embedding_loss",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss"]  # aiograd/nn/_functional_losses_more.py
        + ["relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "threshold_", "rrelu", "rrelu_",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "pdist"]  # aiograd/nn/_inplace_activations.py
    )
    for name in F.__all__:
        assert getattr(F, name).__doc__, name


ACTIVATIONS = [
    ("relu", lambda f, x: f.relu(x)),
    ("sigmoid", lambda f, x: f.sigmoid(x)),
    ("tanh", lambda f, x: f.tanh(x)),
    ("softmax", lambda f, x: f.softmax(x, dim=1)),
    ("softmax_neg", lambda f, x: f.softmax(x, -1)),
    ("log_softmax", lambda f, x: f.log_softmax(x, dim=0)),
    ("log_softmax_neg", lambda f, x: f.log_softmax(x, -1)),
]


@pytest.mark.parametrize("call", [c for _, c in ACTIVATIONS], ids=[n for n, _ in ACTIVATIONS])
async def test_activation_gradchecks(call: Callable[[Any, Any], Any]) -> None:
    data = rng(0).standard_normal((3, 4))
    assert await gradcheck(lambda x: call(F, x), [_ag(data)])
    assert await gradgradcheck(lambda x: call(F, x), [_ag(data)])


@requires_torch
@pytest.mark.parametrize("call", [c for _, c in ACTIVATIONS], ids=[n for n, _ in ACTIVATIONS])
async def test_activation_matches_torch(call: Callable[[Any, Any], Any]) -> None:
    data = rng(0).standard_normal((3, 4))
    x, tx = _ag(data), _torch(data)
    await _compare_with_torch(call(F, x), call(TF, tx), [x], [tx])


@requires_torch
@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 3, 4)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_implicit_softmax_dim_warns_like_torch(name: str, shape: tuple[int, ...]) -> None:
    data = rng(0).standard_normal(shape)
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
        out = getattr(F, name)(_ag(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tout = getattr(TF, name)(_torch(data, False))
    np.testing.assert_allclose(out.data, tout.numpy(), rtol=1e-12)


def test_softmax_dtype_argument() -> None:
    out = F.softmax(ag.tensor(np.array([1.0, 2.0], dtype=np.float32)), 0, dtype=np.float64)
    assert out.dtype == np.float64
    assert F.log_softmax(ag.tensor([1.0, 2.0]), dim=0).grad_fn is None


@requires_torch
async def test_linear_matches_torch() -> None:
    g = rng(0)
    xd, wd, bd = g.standard_normal((3, 4)), g.standard_normal((2, 4)), g.standard_normal(2)
    x, w, b = _ag(xd), _ag(wd), _ag(bd)
    tx, tw, tb = _torch(xd), _torch(wd), _torch(bd)
    out, tout = F.linear(x, w, b), TF.linear(tx, tw, tb)
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12)
    grads = await ag.grad(out.sum(), [x, w, b])
    tgrads = torch.autograd.grad(tout.sum(), [tx, tw, tb])
    for a, t in zip(grads, tgrads):
        np.testing.assert_allclose(a.data, t.numpy(), rtol=1e-12)


# ------------------------------------------------------------------------------ mse_loss
MSE_CASES = [
    # (id, input shape, target shape, target requires grad, kwargs)
    ("mean", (3, 4), (3, 4), False, {}),
    ("sum", (3, 4), (3, 4), False, {"reduction": "sum"}),
    ("none", (3, 4), (3, 4), False, {"reduction": "none"}),
    ("mean_target_grad", (3, 4), (3, 4), True, {"reduction": "mean"}),
    ("none_target_grad", (2, 3), (2, 3), True, {"reduction": "none"}),
    ("sum_0d", (), (), True, {"reduction": "sum"}),
    ("mean_1d", (5,), (5,), False, {}),
]
MSE_PARAMS = [pytest.param(*c[1:], id=c[0]) for c in MSE_CASES]


def _mse_inputs(in_shape: tuple[int, ...], t_shape: tuple[int, ...], t_grad: bool) -> tuple[np.ndarray, np.ndarray]:
    g = rng(0)
    return g.standard_normal(in_shape), g.standard_normal(t_shape)


@pytest.mark.parametrize(("in_shape", "t_shape", "t_grad", "kwargs"), MSE_PARAMS)
async def test_mse_loss_gradchecks(in_shape: Any, t_shape: Any, t_grad: bool, kwargs: dict) -> None:
    xd, td = _mse_inputs(in_shape, t_shape, t_grad)

    def fn(x: Any, t: Any) -> Any:
        return F.mse_loss(x, t, **kwargs)

    assert await gradcheck(fn, [_ag(xd), _ag(td, t_grad)])
    assert await gradgradcheck(fn, [_ag(xd), _ag(td, t_grad)])


@requires_torch
@pytest.mark.parametrize(("in_shape", "t_shape", "t_grad", "kwargs"), MSE_PARAMS)
async def test_mse_loss_matches_torch(in_shape: Any, t_shape: Any, t_grad: bool, kwargs: dict) -> None:
    xd, td = _mse_inputs(in_shape, t_shape, t_grad)
    x, t, tx, tt = _ag(xd), _ag(td, t_grad), _torch(xd), _torch(td, t_grad)
    out, tout = F.mse_loss(x, t, **kwargs), TF.mse_loss(tx, tt, **kwargs)
    await _compare_with_torch(out, tout, [x, t] if t_grad else [x], [tx, tt] if t_grad else [tx])


@requires_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
async def test_mse_loss_broadcast_warns_and_matches_torch(reduction: str) -> None:
    g = rng(3)
    xd, td = g.standard_normal((3, 4)), g.standard_normal((3, 1))
    x, t, tx, tt = _ag(xd), _ag(td), _torch(xd), _torch(td)
    with pytest.warns(UserWarning, match=re.escape("Using a target size (aiograd.Size([3, 1])) that is different to the input size (aiograd.Size([3, 4]))")):
        out = F.mse_loss(x, t, reduction=reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tout = TF.mse_loss(tx, tt, reduction=reduction)
    await _compare_with_torch(out, tout, [x, t], [tx, tt])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert await gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction), [x, t])


def test_mse_loss_float32_and_errors() -> None:
    x = ag.tensor(np.ones((2, 2), dtype=np.float32), requires_grad=True)
    t = ag.tensor(np.zeros((2, 2), dtype=np.float32))
    for reduction in ("mean", "sum", "none"):
        assert F.mse_loss(x, t, reduction=reduction).dtype == np.float32
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.mse_loss(x, t, reduction="foo")
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert F.mse_loss(x, t, size_average=False).item() == 4.0


# ------------------------------------------------------------------------------ nll / cross entropy
TARGET_N = np.array([0, 3, 1, 3, 2])
IGNORED = np.array([0, -100, 1, 3, -100])
NLL_CASES = [
    # (id, input shape, target, kwargs)
    ("mean", (5, 4), TARGET_N, {}),
    ("sum", (5, 4), TARGET_N, {"reduction": "sum"}),
    ("none", (5, 4), TARGET_N, {"reduction": "none"}),
    ("weight_mean", (5, 4), TARGET_N, {"weight": [0.5, 2.0, 1.0, 3.0]}),
    ("weight_sum", (5, 4), TARGET_N, {"weight": [0.5, 2.0, 1.0, 3.0], "reduction": "sum"}),
    ("weight_none", (5, 4), TARGET_N, {"weight": [0.5, 2.0, 1.0, 3.0], "reduction": "none"}),
    ("ignore_default_mean", (5, 4), IGNORED, {}),
    ("ignore_default_none", (5, 4), IGNORED, {"reduction": "none"}),
    ("ignore_index_mean", (5, 4), TARGET_N, {"ignore_index": 3}),
    ("ignore_index_weight_mean", (5, 4), TARGET_N, {"ignore_index": 3, "weight": [0.5, 2.0, 1.0, 3.0]}),
    ("ignore_index_weight_sum", (5, 4), TARGET_N, {"ignore_index": 0, "weight": [0.5, 2.0, 1.0, 3.0], "reduction": "sum"}),
    ("unbatched_mean", (4,), np.array(2), {}),
    ("unbatched_none_weight", (4,), np.array(1), {"weight": [0.5, 2.0, 1.0, 3.0], "reduction": "none"}),
    ("unbatched_ignored", (4,), np.array(2), {"ignore_index": 2, "reduction": "sum"}),
    ("spatial_mean", (2, 3, 4), np.array([[0, 2, 1, 1], [2, 2, 0, 1]]), {}),
    ("spatial_none_weight", (2, 3, 2, 2), np.array([[[0, 2], [1, 1]], [[2, 2], [0, 1]]]), {"weight": [1.0, 0.25, 2.0], "reduction": "none"}),
]
NLL_PARAMS = [pytest.param(*c[1:], id=c[0]) for c in NLL_CASES]
LOSSES = ["nll_loss", "cross_entropy"]


def _loss_kwargs(kwargs: dict, lib: Any) -> dict:
    kw = dict(kwargs)
    if "weight" in kw:
        kw["weight"] = (ag.tensor if lib is F else torch.tensor)(np.array(kw["weight"]))
    return kw


def _logits(shape: tuple[int, ...], loss: str) -> np.ndarray:
    x = rng(0).standard_normal(shape)
    if loss == "nll_loss":  # log-probabilities, as nll_loss expects
        x = x - np.log(np.exp(x).sum(axis=0 if len(shape) == 1 else 1, keepdims=True))
    return x


def _target(t: np.ndarray, lib: Any) -> Any:
    return ag.tensor(t) if lib is F else torch.tensor(t)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(("shape", "target", "kwargs"), NLL_PARAMS)
async def test_class_losses_gradchecks(loss: str, shape: Any, target: np.ndarray, kwargs: dict) -> None:
    fn = getattr(F, loss)

    def call(x: Any) -> Any:
        return fn(x, _target(target, F), **_loss_kwargs(kwargs, F))

    data = _logits(shape, loss)
    assert await gradcheck(call, [_ag(data)])
    assert await gradgradcheck(call, [_ag(data)])


@requires_torch
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(("shape", "target", "kwargs"), NLL_PARAMS)
async def test_class_losses_match_torch(loss: str, shape: Any, target: np.ndarray, kwargs: dict) -> None:
    data = _logits(shape, loss)
    x, tx = _ag(data), _torch(data)
    out = getattr(F, loss)(x, _target(target, F), **_loss_kwargs(kwargs, F))
    tout = getattr(TF, loss)(tx, _target(target, TF), **_loss_kwargs(kwargs, TF))
    await _compare_with_torch(out, tout, [x], [tx])


@requires_torch
@pytest.mark.parametrize("label_smoothing", [0.1, 0.5, 1.0])
@pytest.mark.parametrize(("shape", "target", "kwargs"), NLL_PARAMS)
async def test_cross_entropy_label_smoothing(label_smoothing: float, shape: Any, target: np.ndarray, kwargs: dict) -> None:
    data = _logits(shape, "cross_entropy")
    x, tx = _ag(data), _torch(data)
    out = F.cross_entropy(x, _target(target, F), label_smoothing=label_smoothing, **_loss_kwargs(kwargs, F))
    tout = TF.cross_entropy(tx, _target(target, TF), label_smoothing=label_smoothing, **_loss_kwargs(kwargs, TF))
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    g_out = rng(1).standard_normal(out.shape)
    (gx,) = await ag.grad(out, [x], ag.tensor(g_out))
    (tgx,) = torch.autograd.grad(tout, [tx], torch.tensor(g_out))
    np.testing.assert_allclose(gx.data, tgx.numpy(), rtol=1e-10, atol=1e-12)


async def test_cross_entropy_label_smoothing_gradchecks() -> None:
    data = _logits((5, 4), "cross_entropy")

    def call(x: Any) -> Any:
        return F.cross_entropy(x, ag.tensor(IGNORED), weight=ag.tensor([0.5, 2.0, 1.0, 3.0]), label_smoothing=0.2)

    assert await gradcheck(call, [_ag(data)])
    assert await gradgradcheck(call, [_ag(data)])


@requires_torch
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_all_targets_ignored_like_torch(loss: str, reduction: str) -> None:
    data = _logits((3, 4), loss)
    target = np.full(3, -100)
    out = getattr(F, loss)(_ag(data), ag.tensor(target), reduction=reduction)
    tout = getattr(TF, loss)(_torch(data), torch.tensor(target), reduction=reduction)
    np.testing.assert_array_equal(out.data, tout.detach().numpy())  # nan for 'mean', as torch


@pytest.mark.parametrize("loss", LOSSES)
async def test_class_losses_float32(loss: str) -> None:
    x = ag.tensor(_logits((5, 4), loss).astype(np.float32), requires_grad=True)
    for reduction in ("mean", "sum", "none"):
        out = getattr(F, loss)(x, ag.tensor(IGNORED), weight=ag.tensor(np.ones(4, np.float32)), reduction=reduction)
        assert out.dtype == np.float32
        (g,) = await ag.grad(out.sum(), [x])
        assert g.dtype == np.float32


def test_cross_entropy_is_nll_of_log_softmax() -> None:
    data = _logits((5, 4), "cross_entropy")
    x = _ag(data)
    ce = F.cross_entropy(x, ag.tensor(TARGET_N))
    nll = F.nll_loss(S.log_softmax(x, 1), ag.tensor(TARGET_N))
    assert ce.item() == nll.item()
    assert ce.grad_fn.name() == "NllLossBackward0"
    assert ce.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"


NLL_ERRORS = [
    ("target_too_big", (3, 4), np.array([0, 4, 1]), {}, IndexError, "Target 4 is out of bounds."),
    ("target_negative", (3, 4), np.array([0, -1, 1]), {}, IndexError, "Target -1 is out of bounds."),
    ("batch_mismatch", (3, 4), np.array([0, 1]), {}, ValueError, "Expected input batch_size (3) to match target batch_size (2)."),
    ("float_target", (3, 4), np.array([0.0, 1.0, 2.0]), {}, RuntimeError, "expected target dtype to be Long or Byte, but got Double"),
    ("int32_target", (3, 4), np.array([0, 1, 2], dtype=np.int32), {}, RuntimeError, "expected target dtype to be Long or Byte, but got Int"),
    ("bad_reduction", (3, 4), np.array([0, 1, 2]), {"reduction": "avg"}, ValueError, "avg is not a valid value for reduction"),
    ("weight_shape", (3, 4), np.array([0, 1, 2]), {"weight": [1.0, 2.0, 3.0]}, RuntimeError, "weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]"),
    ("multi_target", (3, 4), np.array([[0], [1], [2]]), {}, RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    ("scalar_input", (), np.array(0), {}, ValueError, "Expected 1 or more dimensions (got 0)"),
    ("unbatched_target_size", (4,), np.array([1, 2]), {}, ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"),
    ("spatial_target_size", (2, 3, 4), np.array([[0, 1, 2], [0, 1, 2]]), {}, RuntimeError, "Expected target size [2, 4], got [2, 3]"),
]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(
    ("shape", "target", "kwargs", "exc", "message"),
    [pytest.param(*e[1:], id=e[0]) for e in NLL_ERRORS],
)
def test_class_loss_errors(loss: str, shape: Any, target: np.ndarray, kwargs: dict, exc: type, message: str) -> None:
    data = rng(0).standard_normal(shape)
    if loss == "cross_entropy" and shape == ():
        message = "Expected 1 or more dimensions (got 0)"
    with pytest.raises(exc, match=re.escape(message)):
        getattr(F, loss)(_ag(data), ag.tensor(target), **_loss_kwargs(kwargs, F))
    if torch is not None and not (loss == "cross_entropy" and shape == ()):
        with pytest.raises(exc, match=re.escape(message)):
            getattr(TF, loss)(_torch(data), torch.tensor(target), **_loss_kwargs(kwargs, TF))


def test_weight_requiring_grad_and_label_smoothing_range() -> None:
    x = _ag(_logits((3, 4), "nll_loss"))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.nll_loss(x, ag.tensor([0, 1, 2]), weight=ag.ones(4, requires_grad=True))
    with pytest.raises(RuntimeError, match=re.escape("label_smoothing must be between 0.0 and 1.0. Got: 1.5")):
        F.cross_entropy(x, ag.tensor([0, 1, 2]), label_smoothing=1.5)


def test_legacy_reduction_flags() -> None:
    x, t = _ag(_logits((3, 4), "nll_loss")), ag.tensor([0, 1, 2])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        summed = F.nll_loss(x, t, size_average=False)
    with pytest.warns(UserWarning, match="reduction='none'"):
        kept = F.nll_loss(x, t, reduce=False)
    assert kept.shape == (3,)
    np.testing.assert_allclose(summed.data, kept.data.sum())


# ------------------------------------------------------------------------------ soft targets
PROB_CASES = [
    # (id, input shape, kwargs)
    ("mean", (3, 4), {}),
    ("sum", (3, 4), {"reduction": "sum"}),
    ("none", (3, 4), {"reduction": "none"}),
    ("weight_mean", (3, 4), {"weight": [0.5, 2.0, 1.0, 3.0]}),
    ("weight_none_smoothing", (3, 4), {"weight": [0.5, 2.0, 1.0, 3.0], "reduction": "none", "label_smoothing": 0.3}),
    ("smoothing_mean", (3, 4), {"label_smoothing": 0.1}),
    ("unbatched", (4,), {}),
    ("spatial_weight", (2, 3, 2), {"weight": [1.0, 0.25, 2.0], "reduction": "sum"}),
]
PROB_PARAMS = [pytest.param(*c[1:], id=c[0]) for c in PROB_CASES]


def _probs(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    g = rng(5)
    p = g.uniform(0.1, 1.0, shape)
    p = p / p.sum(axis=0 if len(shape) == 1 else 1, keepdims=True)
    return g.standard_normal(shape), p


@pytest.mark.parametrize(("shape", "kwargs"), PROB_PARAMS)
async def test_cross_entropy_prob_targets_gradchecks(shape: Any, kwargs: dict) -> None:
    xd, pd = _probs(shape)

    def call(x: Any, p: Any) -> Any:
        return F.cross_entropy(x, p, **_loss_kwargs(kwargs, F))

    assert await gradcheck(call, [_ag(xd), _ag(pd)])
    assert await gradgradcheck(call, [_ag(xd), _ag(pd)])


@requires_torch
@pytest.mark.parametrize(("shape", "kwargs"), PROB_PARAMS)
async def test_cross_entropy_prob_targets_match_torch(shape: Any, kwargs: dict) -> None:
    xd, pd = _probs(shape)
    x, p, tx, tp = _ag(xd), _ag(pd), _torch(xd), _torch(pd)
    out = F.cross_entropy(x, p, **_loss_kwargs(kwargs, F))
    tout = TF.cross_entropy(tx, tp, **_loss_kwargs(kwargs, TF))
    np.testing.assert_allclose(out.data, tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    g_out = rng(1).standard_normal(out.shape)
    grads = await ag.grad(out, [x, p], ag.tensor(g_out))
    tgrads = torch.autograd.grad(tout, [tx, tp], torch.tensor(g_out))
    for g, tg in zip(grads, tgrads):
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-10, atol=1e-12)


PROB_ERRORS = [
    ("int_target", np.zeros((3, 4), dtype=np.int64), {}, "Expected floating point type for target with class probabilities, got Long"),
    ("ignore_index", np.full((3, 4), 0.25), {"ignore_index": 1}, "ignore_index is not supported for floating point target"),
    ("weight_shape", np.full((3, 4), 0.25), {"weight": [1.0, 2.0, 3.0]}, "cross_entropy: weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [3]"),
    ("smoothing", np.full((3, 4), 0.25), {"label_smoothing": 2.0}, "label_smoothing must be between 0.0 and 1.0. Got: 2"),
]


@pytest.mark.parametrize(
    ("target", "kwargs", "message"), [pytest.param(*e[1:], id=e[0]) for e in PROB_ERRORS]
)
def test_cross_entropy_prob_target_errors(target: np.ndarray, kwargs: dict, message: str) -> None:
    data = rng(0).standard_normal((3, 4))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        F.cross_entropy(_ag(data), ag.tensor(target), **_loss_kwargs(kwargs, F))
    if torch is not None:
        with pytest.raises(RuntimeError, match=re.escape(message)):
            TF.cross_entropy(_torch(data), torch.tensor(target), **_loss_kwargs(kwargs, TF))
