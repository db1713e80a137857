"""The aiograd.nn layers that call the new nn.functional ops (convolutions, pooling,
normalisation, embedding, dropout, the new activations and losses, attention, the transformer
encoder): each built as torch's, torch's weights loaded, then outputs, input and parameter
gradients and running statistics compared with torch; models with these layers loaded from
torch's safetensors files."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
from aiograd import sync
from aiograd.nn.utils import load_safetensors, save_safetensors

pytestmark = requires_torch


def _load_from_torch(a_model: Any, t_model: Any) -> None:
    a_model.load_state_dict({k: ag.tensor(v.detach().numpy().copy()) for k, v in t_model.state_dict().items()})


def _check(
    a_model: Any, t_model: Any, shapes: list[tuple[int, ...]], rtol: float = 1e-10, integer_high: int | None = None,
    call: Any = None,
) -> None:
    """Same outputs, input gradients and parameter gradients as torch (float64)."""
    rng = np.random.default_rng(0)
    arrays = [
        rng.integers(0, integer_high, s) if integer_high else rng.standard_normal(s) for s in shapes
    ]
    grad = integer_high is None
    a_in = [ag.tensor(x, requires_grad=grad) for x in arrays]
    t_in = [torch.tensor(x, requires_grad=grad) for x in arrays]
    call = call or (lambda m, xs: m(*xs))
    aout, tout = call(a_model, a_in), call(t_model, t_in)
    if isinstance(tout, tuple):
        aout, tout = aout[0], tout[0]
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=rtol, atol=rtol)
    g = rng.standard_normal(tuple(tout.shape))
    sync.backward(aout, ag.tensor(g))
    tout.backward(torch.tensor(g))
    if grad:
        for a, t in zip(a_in, t_in):
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=rtol)
    for (name, ap), (_, tp) in zip(a_model.named_parameters(), t_model.named_parameters()):
        if tp.grad is not None:
            np.testing.assert_allclose(ap.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=rtol, err_msg=name)


LAYERS = {
    "conv1d": (lambda lib: lib.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), [(2, 4, 9)]),
    "conv2d": (lambda lib: lib.Conv2d(3, 4, 3, padding=1, dilation=1), [(2, 3, 6, 5)]),
    "conv2d_same": (lambda lib: lib.Conv2d(2, 2, 3, padding="same", dilation=2, bias=False), [(1, 2, 7, 7)]),
    "conv2d_reflect": (lambda lib: lib.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [(1, 2, 5, 5)]),
    "conv_transpose2d": (lambda lib: lib.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), [(2, 4, 3, 3)]),
    "max_pool2d": (lambda lib: lib.MaxPool2d(2), [(2, 3, 6, 6)]),
    "max_pool2d_strided": (lambda lib: lib.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), [(1, 2, 7, 7)]),
    "avg_pool2d": (lambda lib: lib.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [(2, 3, 7, 6)]),
    "adaptive_avg_pool2d": (lambda lib: lib.AdaptiveAvgPool2d((2, 3)), [(2, 3, 7, 8)]),
    "layer_norm": (lambda lib: lib.LayerNorm([3, 4]), [(2, 5, 3, 4)]),
    "layer_norm_no_bias": (lambda lib: lib.LayerNorm(4, bias=False, eps=1e-3), [(3, 4)]),
    "group_norm": (lambda lib: lib.GroupNorm(2, 4), [(3, 4, 5)]),
    "batch_norm1d_eval": (lambda lib: lib.BatchNorm1d(3).eval(), [(4, 3)]),
    "gelu": (lambda lib: lib.GELU(), [(3, 4)]),
    "gelu_tanh": (lambda lib: lib.GELU(approximate="tanh"), [(3, 4)]),
    "silu": (lambda lib: lib.SiLU(), [(3, 4)]),
    "elu": (lambda lib: lib.ELU(alpha=0.7), [(3, 4)]),
    "leaky_relu": (lambda lib: lib.LeakyReLU(0.2), [(3, 4)]),
    "softplus": (lambda lib: lib.Softplus(beta=2.0, threshold=1.0), [(3, 4)]),
    "hardtanh": (lambda lib: lib.Hardtanh(-0.5, 0.5), [(3, 4)]),
    "relu6": (lambda lib: lib.ReLU6(), [(3, 4)]),
    "mish": (lambda lib: lib.Mish(), [(3, 4)]),
    "dropout_eval": (lambda lib: lib.Dropout(0.3).eval(), [(3, 4)]),
    "cnn": (
        lambda lib: lib.Sequential(
            lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4).eval(), lib.ReLU(), lib.MaxPool2d(2),
            lib.Conv2d(4, 8, 3), lib.ReLU(), lib.AdaptiveAvgPool2d(1), lib.Flatten(), lib.Linear(8, 10),
        ),
        [(3, 1, 8, 8)],
    ),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_torch(name):
    make, shapes = LAYERS[name]
    t_model = make(torch.nn).double()
    a_model = make(nn)
    for a_sub, t_sub in zip(a_model.modules(), t_model.modules()):
        a_sub.training = t_sub.training
    _load_from_torch(a_model, t_model)
    _check(a_model, t_model, shapes)


def test_conv_transpose2d_output_size_as_torch():
    t_model = torch.nn.ConvTranspose2d(2, 2, 3, stride=2).double()
    a_model = nn.ConvTranspose2d(2, 2, 3, stride=2)
    _load_from_torch(a_model, t_model)
    _check(a_model, t_model, [(1, 2, 4, 4)], call=lambda m, xs: m(xs[0], output_size=[10, 10]))
    with pytest.raises(ValueError) as t_info:
        t_model(torch.zeros(1, 2, 4, 4, dtype=torch.float64), output_size=[12, 12])
    with pytest.raises(ValueError) as a_info:
        a_model(ag.zeros(1, 2, 4, 4), output_size=[12, 12])
    assert str(a_info.value) == str(t_info.value).replace("torch.Size", "aiograd.Size")


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.BatchNorm1d(3),
        lambda lib: lib.BatchNorm1d(3, momentum=None),
        lambda lib: lib.BatchNorm2d(3, affine=False),
        lambda lib: lib.BatchNorm2d(3, track_running_stats=False),
    ],
)
def test_batch_norm_training_updates_running_stats_as_torch(make):
    t_model, a_model = make(torch.nn).double(), make(nn)
    _load_from_torch(a_model, t_model)
    shape = (5, 3) if isinstance(a_model, nn.BatchNorm1d) else (4, 3, 2, 2)
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal(shape) * 2 + 1
        aout, tout = a_model(ag.tensor(x)), t_model(torch.tensor(x))
        np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    for (k, av), (k2, tv) in zip(a_model.state_dict().items(), t_model.state_dict().items()):
        assert k == k2
        np.testing.assert_allclose(av.numpy(), tv.numpy(), rtol=1e-12, err_msg=k)
    a_model.eval()
    t_model.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(
        a_model(ag.tensor(x)).detach().numpy(), t_model(torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-12
    )


def test_batch_norm_checks_the_input_rank_as_torch():
    for a, t, shape in [(nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3), (2, 3, 4, 5)), (nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3), (2, 3))]:
        with pytest.raises(ValueError) as t_info:
            t(torch.zeros(*shape))
        with pytest.raises(ValueError) as a_info:
            a(ag.zeros(*shape))
        assert str(a_info.value) == str(t_info.value)


def test_embedding_with_padding_and_from_pretrained():
    t_model = torch.nn.Embedding(7, 3, padding_idx=2).double()
    a_model = nn.Embedding(7, 3, padding_idx=2)
    assert not a_model.weight.data[2].any()
    _load_from_torch(a_model, t_model)
    idx = np.array([[0, 2, 6], [2, 2, 1]])
    aout, tout = a_model(ag.tensor(idx)), t_model(torch.tensor(idx))
    np.testing.assert_array_equal(aout.detach().numpy(), tout.detach().numpy())
    g = np.random.default_rng(0).standard_normal(tout.shape)
    sync.backward(aout, ag.tensor(g))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(a_model.weight.grad.numpy(), t_model.weight.grad.numpy(), rtol=1e-12)
    weights = np.arange(6.0).reshape(3, 2)
    a = nn.Embedding.from_pretrained(ag.tensor(weights))
    t = torch.nn.Embedding.from_pretrained(torch.tensor(weights))
    assert a.weight.requires_grad == t.weight.requires_grad is False
    assert repr(a) == repr(t)
    np.testing.assert_array_equal(a(ag.tensor([2, 0])).numpy(), t(torch.tensor([2, 0])).numpy())


def test_dropout_trains_with_the_default_generator_and_is_the_identity_in_eval():
    m = nn.Dropout(0.25)
    x = ag.ones(200, 50)
    ag.manual_seed(3)
    first = m(x).numpy()
    ag.manual_seed(3)
    again = m(x).numpy()
    np.testing.assert_array_equal(first, again)
    assert set(np.unique(first)) == {0.0, 1 / 0.75}
    assert abs((first == 0).mean() - 0.25) < 0.02
    m.eval()
    assert m(x) is x or np.array_equal(m(x).numpy(), x.numpy())
    with pytest.raises(ValueError) as t_info:
        torch.nn.Dropout(1.5)
    with pytest.raises(ValueError) as a_info:
        nn.Dropout(1.5)
    assert str(a_info.value) == str(t_info.value)


LOSSES = {
    "l1": (lambda lib: lib.L1Loss(), "real"),
    "smooth_l1": (lambda lib: lib.SmoothL1Loss(beta=0.5, reduction="sum"), "real"),
    "huber": (lambda lib: lib.HuberLoss(delta=0.7, reduction="none"), "real"),
    "bce": (lambda lib: lib.BCELoss(), "prob"),
    "bce_logits": (lambda lib: lib.BCEWithLogitsLoss(), "logit"),
    "kl_div": (lambda lib: lib.KLDivLoss(reduction="batchmean"), "kl"),
    "kl_div_log_target": (lambda lib: lib.KLDivLoss(reduction="sum", log_target=True), "kl_log"),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_module_matches_torch(name):
    make, kind = LOSSES[name]
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    if kind == "prob":
        x, y = 1 / (1 + np.exp(-x)), rng.uniform(size=(4, 3))
    elif kind == "logit":
        y = rng.uniform(size=(4, 3))
    elif kind.startswith("kl"):
        x = x - np.log(np.exp(x).sum(1, keepdims=True))
        y = rng.dirichlet(np.ones(3), 4)
        if kind == "kl_log":
            y = np.log(y)
    a, t = make(nn), make(torch.nn)
    assert repr(a) == repr(t)
    ax, tx = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    aout, tout = a(ax, ag.tensor(y)), t(tx, torch.tensor(y))
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    sync.backward(aout.sum())
    tout.sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_bce_with_logits_weights_are_buffers_as_torch():
    w, pw = np.array([1.0, 2.0, 0.5]), np.array([3.0, 1.0, 2.0])
    a = nn.BCEWithLogitsLoss(weight=ag.tensor(w), pos_weight=ag.tensor(pw))
    t = torch.nn.BCEWithLogitsLoss(weight=torch.tensor(w), pos_weight=torch.tensor(pw))
    assert list(a.state_dict()) == list(t.state_dict()) == ["weight", "pos_weight"]
    x, y = np.random.default_rng(6).standard_normal((4, 3)), np.random.default_rng(7).uniform(size=(4, 3))
    np.testing.assert_allclose(a(ag.tensor(x), ag.tensor(y)).numpy(), t(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"batch_first": True}, {"bias": False}, {"kdim": 3, "vdim": 5}, {"add_bias_kv": True, "add_zero_attn": True}],
)
def test_multihead_attention_matches_torch(kwargs):
    t_model = torch.nn.MultiheadAttention(8, 2, **kwargs).double()
    a_model = nn.MultiheadAttention(8, 2, **kwargs)
    assert [n for n, _ in a_model.named_parameters()] == [n for n, _ in t_model.named_parameters()]
    _load_from_torch(a_model, t_model)
    kdim, vdim = kwargs.get("kdim", 8), kwargs.get("vdim", 8)
    seq_first = not kwargs.get("batch_first", False)

    def shape(length: int, dim: int) -> tuple[int, ...]:
        return (length, 2, dim) if seq_first else (2, length, dim)

    _check(
        a_model, t_model, [shape(4, 8), shape(5, kdim), shape(5, vdim)],
        call=lambda m, xs: m(xs[0], xs[1], xs[2])[0],
    )
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal(s) for s in (shape(4, 8), shape(5, kdim), shape(5, vdim)))
    mask = np.triu(np.ones((4, 5), dtype=bool), 1)
    a_out, a_w = a_model(ag.tensor(q), ag.tensor(k), ag.tensor(v), attn_mask=ag.tensor(mask))
    t_out, t_w = t_model(torch.tensor(q), torch.tensor(k), torch.tensor(v), attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(a_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a_w.detach().numpy(), t_w.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"activation": "gelu", "norm_first": True, "batch_first": True},
        {"bias": False, "layer_norm_eps": 1e-3},
    ],
)
def test_transformer_encoder_layer_matches_torch_in_eval(kwargs):
    t_model = torch.nn.TransformerEncoderLayer(8, 2, 16, **kwargs).double().eval()
    a_model = nn.TransformerEncoderLayer(8, 2, 16, **kwargs).eval()
    assert list(a_model.state_dict()) == list(t_model.state_dict())
    _load_from_torch(a_model, t_model)
    shape = (2, 5, 8) if kwargs.get("batch_first") else (5, 2, 8)
    _check(a_model, t_model, [shape], rtol=1e-9)


def test_transformer_encoder_layer_with_a_module_as_activation_matches_torch():
    t_model = torch.nn.TransformerEncoderLayer(8, 2, 16, activation=torch.nn.Tanh()).double().eval()
    a_model = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.Tanh()).eval()
    assert repr(a_model) == repr(t_model)  # the activation module is a submodule, as in torch
    assert a_model.activation_relu_or_gelu == t_model.activation_relu_or_gelu == 0
    _load_from_torch(a_model, t_model)
    _check(a_model, t_model, [(5, 2, 8)], rtol=1e-9)


def test_transformer_encoder_with_a_final_norm_matches_torch():
    def make(lib: Any) -> Any:
        layer = lib.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        return lib.TransformerEncoder(layer, 2, norm=lib.LayerNorm(8), enable_nested_tensor=False)

    t_model, a_model = make(torch.nn).double(), make(nn)
    assert list(a_model.state_dict()) == list(t_model.state_dict())
    _load_from_torch(a_model, t_model)
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    _check(
        a_model, t_model, [(2, 5, 8)], rtol=1e-9,
        call=lambda m, xs: m(xs[0], mask=ag.tensor(mask) if m is a_model else torch.tensor(mask)),
    )


def _cnn(lib: Any) -> Any:
    return lib.Sequential(
        lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(), lib.MaxPool2d(2), lib.Conv2d(4, 8, 3),
        lib.GELU(), lib.Flatten(), lib.Linear(8 * 2 * 2, 10),
    )


@pytest.mark.parametrize(
    "make, shape",
    [
        (_cnn, (3, 1, 8, 8)),
        (lambda lib: lib.TransformerEncoderLayer(16, 4, 32, batch_first=True), (2, 6, 16)),
    ],
)
def test_torch_safetensors_models_load_and_save(tmp_path, make, shape):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch.manual_seed(0)
    t_model = make(torch.nn)
    t_model.train()
    t_model(torch.randn(*shape))  # running statistics away from their initial values
    t_model.eval()
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file(t_model.state_dict(), str(path))
    a_model = make(nn).float().eval()
    a_model.load_state_dict(load_safetensors(path))
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    ax, tx = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    aout, tout = a_model(ax), t_model(tx)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    sync.backward((aout * aout).sum())
    (tout * tout).sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    back = tmp_path / "back.safetensors"
    save_safetensors(a_model.state_dict(), back)
    t_again = make(torch.nn).eval()
    t_again.load_state_dict(safetensors_torch.load_file(str(back)))
    np.testing.assert_allclose(t_again(tx).detach().numpy(), tout.detach().numpy(), rtol=1e-6)
