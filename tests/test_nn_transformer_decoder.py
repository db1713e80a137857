"""aiograd/nn/modules/transformer_decoder.py: ``TransformerDecoderLayer``, ``TransformerDecoder``
and ``Transformer`` against torch's.

Each model built as torch's (state-dict keys compared), torch's weights loaded, then outputs,
input gradients and every parameter's gradient compared with torch's: float64 and float32,
eval and train mode (dropout 0, and dropout > 0 after the same seed: aiograd's default generator
is torch's Mersenne Twister and the dropout masks are drawn in torch's order), both
``batch_first`` and ``norm_first``, with a causal ``tgt_mask`` from
``generate_square_subsequent_mask`` and key padding masks (boolean and float). Then the
same-seed initialisation (torch's ``_reset_parameters``), ``_get_clones``'s deep copies, causal
mask detection, and torch's argument errors word for word.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn

pytestmark = [requires_torch, pytest.mark.aiograd(backends=["asyncio"])]  # module math: one loop is enough

D, H, FF = 8, 2, 16  # d_model, nhead, dim_feedforward
N, S, T = 3, 5, 4  # batch, source length, target length
DTYPES = {"float64": (ag.float64, torch.float64 if torch else None, 1e-9), "float32": (ag.float32, torch.float32 if torch else None, 2e-4)}


def _load_from_torch(a_model: Any, t_model: Any) -> None:
    assert list(a_model.state_dict()) == list(t_model.state_dict())
    a_model.load_state_dict({k: ag.tensor(v.detach().numpy().copy()) for k, v in t_model.state_dict().items()})


def _seq(batch_first: bool, length: int) -> tuple[int, int, int]:
    return (N, length, D) if batch_first else (length, N, D)


def _masks(kind: str) -> dict[str, np.ndarray]:
    """A causal tgt mask and key padding masks (no row fully masked), boolean or float."""
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64).numpy()
    src_pad = np.zeros((N, S), dtype=bool)
    src_pad[0, -2:] = True
    src_pad[2, -1] = True
    tgt_pad = np.zeros((N, T), dtype=bool)
    tgt_pad[1, -1] = True
    mem_mask = np.zeros((T, S), dtype=bool)
    mem_mask[0, -1] = True
    if kind == "bool":
        return {"tgt_mask": np.isinf(causal), "src_key_padding_mask": src_pad, "tgt_key_padding_mask": tgt_pad,
                "memory_key_padding_mask": src_pad, "memory_mask": mem_mask}
    inf = lambda m: np.where(m, -np.inf, 0.0)  # noqa: E731
    return {"tgt_mask": causal, "src_key_padding_mask": inf(src_pad), "tgt_key_padding_mask": inf(tgt_pad),
            "memory_key_padding_mask": inf(src_pad), "memory_mask": inf(mem_mask)}


async def _compare(
    a_model: Any, t_model: Any, inputs: list[np.ndarray], masks: dict[str, np.ndarray], dtype: str,
    seed: int | None = None,
) -> None:
    """Same output, input gradients and gradients of every parameter as torch."""
    a_dtype, t_dtype, tol = DTYPES[dtype]
    rng = np.random.default_rng(0)
    a_in = [ag.tensor(x, dtype=a_dtype, requires_grad=True) for x in inputs]
    t_in = [torch.tensor(x, dtype=t_dtype, requires_grad=True) for x in inputs]
    a_masks = {k: ag.tensor(v if v.dtype == bool else v.astype(dtype)) for k, v in masks.items()}
    t_masks = {k: torch.tensor(v if v.dtype == bool else v.astype(dtype)) for k, v in masks.items()}
    if seed is not None:
        torch.manual_seed(seed)
        ag.manual_seed(seed)
    tout = t_model(*t_in, **t_masks)
    aout = a_model(*a_in, **a_masks)
    assert aout.dtype == a_dtype and tuple(aout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    g = rng.standard_normal(tuple(tout.shape))
    await aout.backward(ag.tensor(g, dtype=a_dtype))
    tout.backward(torch.tensor(g, dtype=t_dtype))
    for a, t in zip(a_in, t_in):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)
    a_params, t_params = dict(a_model.named_parameters()), dict(t_model.named_parameters())
    assert list(a_params) == list(t_params)
    for name, tp in t_params.items():
        assert tp.grad is not None, name
        np.testing.assert_allclose(a_params[name].grad.numpy(), tp.grad.numpy(), rtol=tol, atol=tol, err_msg=name)


def _transformer(lib: Any, dtype: Any, **kwargs: Any) -> Any:
    return lib.Transformer(D, H, 2, 2, FF, dtype=dtype, **kwargs)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
async def test_transformer_matches_torch(dtype, mode, batch_first, norm_first):
    a_dtype, t_dtype, _ = DTYPES[dtype]
    kwargs = {"dropout": 0.0, "batch_first": batch_first, "norm_first": norm_first}
    t_model, a_model = _transformer(torch.nn, t_dtype, **kwargs), _transformer(nn, a_dtype, **kwargs)
    _load_from_torch(a_model, t_model)
    if mode == "eval":
        t_model.eval(), a_model.eval()
    assert a_model.training == t_model.training == (mode == "train")
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(_seq(batch_first, S)), rng.standard_normal(_seq(batch_first, T))]
    await _compare(a_model, t_model, inputs, _masks("float" if norm_first else "bool"), dtype)


@pytest.mark.parametrize("batch_first", [False, True])
async def test_transformer_with_dropout_draws_torch_masks_after_the_same_seed(batch_first):
    kwargs = {"dropout": 0.3, "batch_first": batch_first, "activation": "gelu"}
    t_model, a_model = _transformer(torch.nn, torch.float64, **kwargs), _transformer(nn, ag.float64, **kwargs)
    _load_from_torch(a_model, t_model)
    rng = np.random.default_rng(2)
    inputs = [rng.standard_normal(_seq(batch_first, S)), rng.standard_normal(_seq(batch_first, T))]
    await _compare(a_model, t_model, inputs, _masks("bool"), "float64", seed=17)


@pytest.mark.parametrize("activation", ["relu", "gelu", "tanh_module", "callable"])
async def test_transformer_decoder_with_a_final_norm_matches_torch(activation):
    def make(lib: Any) -> Any:
        act = {"relu": "relu", "gelu": "gelu", "tanh_module": lib.Tanh(), "callable": lib.functional.silu}[activation]
        layer = lib.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation=act, layer_norm_eps=1e-3, bias=True)
        return lib.TransformerDecoder(layer, 3, norm=lib.LayerNorm(D))

    t_model, a_model = make(torch.nn).double(), make(nn)
    assert repr(a_model) == repr(t_model)
    _load_from_torch(a_model, t_model)
    rng = np.random.default_rng(3)
    masks = _masks("float")
    del masks["src_key_padding_mask"]
    await _compare(a_model, t_model, [rng.standard_normal((T, N, D)), rng.standard_normal((S, N, D))], masks, "float64")


async def test_transformer_decoder_layer_unbatched_and_without_bias_matches_torch():
    def make(lib: Any) -> Any:
        return lib.TransformerDecoderLayer(D, H, FF, dropout=0.0, bias=False, norm_first=True)

    t_model, a_model = make(torch.nn).double(), make(nn)
    _load_from_torch(a_model, t_model)
    rng = np.random.default_rng(4)
    masks = {"tgt_mask": _masks("bool")["tgt_mask"], "tgt_is_causal": True}
    inputs = [rng.standard_normal((T, D)), rng.standard_normal((S, D))]
    a_in = [ag.tensor(x) for x in inputs]
    t_in = [torch.tensor(x) for x in inputs]
    np.testing.assert_allclose(
        a_model(*a_in, tgt_mask=ag.tensor(masks["tgt_mask"]), tgt_is_causal=True).detach().numpy(),
        t_model(*t_in, tgt_mask=torch.tensor(masks["tgt_mask"]), tgt_is_causal=True).detach().numpy(),
        rtol=1e-9, atol=1e-9,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True, "norm_first": True, "bias": False}])
def test_same_seed_initialisation_is_torch_exactly(dtype, kwargs):
    a_dtype, t_dtype, _ = DTYPES[dtype]
    torch.manual_seed(123)
    t_model = _transformer(torch.nn, t_dtype, **kwargs)
    ag.manual_seed(123)
    a_model = _transformer(nn, a_dtype, **kwargs)
    t_state, a_state = t_model.state_dict(), a_model.state_dict()
    assert list(a_state) == list(t_state)
    # float32: bit for bit; float64: aiograd's uniform_ is torch's within one ulp
    tol = 0.0 if dtype == "float32" else 2e-16
    for name, tv in t_state.items():
        np.testing.assert_allclose(a_state[name].numpy(), tv.numpy(), rtol=0, atol=tol, err_msg=name)
    # and the generators are left in the same state
    np.testing.assert_array_equal(ag.rand(5, dtype=a_dtype).numpy(), torch.rand(5, dtype=t_dtype).numpy())
    # _reset_parameters re-drew every matrix: the cloned layers no longer share their weights
    w = a_state["decoder.layers.0.linear1.weight"].numpy()
    assert not np.array_equal(w, a_state["decoder.layers.1.linear1.weight"].numpy())


def test_decoder_clones_the_layer_as_torch():
    ag.manual_seed(0)
    layer = nn.TransformerDecoderLayer(D, H, FF)
    decoder = nn.TransformerDecoder(layer, 2)
    assert decoder.num_layers == 2 and decoder.norm is None and len(decoder.layers) == 2
    assert all(m is not layer for m in decoder.layers)
    assert decoder.layers[0] is not decoder.layers[1]
    for a, b in zip(decoder.layers[0].parameters(), layer.parameters()):
        assert a is not b
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with ag.no_grad():
        decoder.layers[0].linear1.weight.add_(1.0)
    assert not np.array_equal(
        decoder.layers[0].linear1.weight.detach().numpy(), decoder.layers[1].linear1.weight.detach().numpy()
    )


def test_cloned_layers_with_a_module_activation_compute_relu_as_torch():
    """torch's ``TransformerDecoderLayer.__setstate__`` puts F.relu in a copy's ``__dict__`` when
    the activation is a module: the clones compute relu though their repr shows the module."""
    for lib in (torch.nn, nn):
        layer = lib.TransformerDecoderLayer(D, H, FF, activation=lib.Tanh())
        clone = lib.TransformerDecoder(layer, 1).layers[0]
        assert isinstance(layer.activation, lib.Tanh)
        assert clone.activation is lib.functional.relu
        assert "(activation): Tanh()" in repr(clone)


def test_custom_encoder_and_decoder_and_attributes_as_torch():
    def make(lib: Any) -> Any:
        enc = lib.TransformerEncoder(lib.TransformerEncoderLayer(D, H, FF), 1, enable_nested_tensor=False, mask_check=False)
        dec = lib.TransformerDecoder(lib.TransformerDecoderLayer(D, H, FF), 1)
        return lib.Transformer(D, H, custom_encoder=enc, custom_decoder=dec, batch_first=True)

    t_model, a_model = make(torch.nn), make(nn)
    assert list(a_model.state_dict()) == list(t_model.state_dict())
    assert repr(a_model) == repr(t_model)
    assert (a_model.d_model, a_model.nhead, a_model.batch_first) == (t_model.d_model, t_model.nhead, True)
    assert a_model.encoder.enable_nested_tensor is False and a_model.encoder.mask_check is False
    assert a_model.encoder.use_nested_tensor is False


@pytest.mark.parametrize("dtype", [None, "float64", "bool"])
def test_generate_square_subsequent_mask_is_torch(dtype):
    a_mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=getattr(ag, dtype) if dtype else None)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=getattr(torch, dtype) if dtype else None)
    np.testing.assert_array_equal(a_mask.numpy(), t_mask.numpy())
    if dtype is None:  # the default dtype: the suite pins aiograd's to float64
        assert a_mask.dtype == ag.get_default_dtype() and t_mask.dtype == torch.get_default_dtype()
    else:
        assert str(a_mask.dtype).split(".")[-1] == str(t_mask.dtype).split(".")[-1] == dtype
    assert _transformer(nn, ag.float64).generate_square_subsequent_mask(2).shape == (2, 2)  # a static method


@pytest.mark.parametrize(
    ("mask", "is_causal", "size", "expected"),
    [
        ("causal", None, None, True), ("causal", None, 3, False), ("bool_causal", None, None, True),
        ("zeros", None, None, False), ("batched", None, None, False), ("zeros", True, None, True),
        ("causal", False, None, False), (None, None, None, False),
    ],
)
def test_causal_mask_detection_is_torch(mask, is_causal, size, expected):
    from torch.nn.modules.transformer import _detect_is_causal_mask as t_detect

    from aiograd.nn.modules.transformer import _detect_is_causal_mask

    arrays = {
        "causal": np.triu(np.full((4, 4), -np.inf), 1), "bool_causal": np.triu(np.ones((4, 4), dtype=bool), 1),
        "zeros": np.zeros((4, 4)), "batched": np.triu(np.full((2, 4, 4), -np.inf), 1), None: None,
    }
    m = arrays[mask]
    assert t_detect(None if m is None else torch.tensor(m), is_causal, size) is expected
    assert _detect_is_causal_mask(None if m is None else ag.tensor(m), is_causal, size) is expected


ERRORS = {
    "batch": (lambda lib: _transformer(lib.nn, lib.float32), ((5, 2, D), (4, 3, D)), {}),
    "batch_first": (lambda lib: _transformer(lib.nn, lib.float32, batch_first=True), ((2, 5, D), (3, 4, D)), {}),
    "src_features": (lambda lib: _transformer(lib.nn, lib.float32), ((5, 2, D + 1), (4, 2, D)), {}),
    "tgt_features": (lambda lib: _transformer(lib.nn, lib.float32, batch_first=True), ((2, 5, D), (2, 4, 2)), {}),
    "causal_without_mask": (lambda lib: _transformer(lib.nn, lib.float32), ((5, 2, D), (4, 2, D)), {"tgt_is_causal": True}),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_as_torch(name):
    make, shapes, kwargs = ERRORS[name]
    t_model, a_model = make(torch), make(ag)
    with pytest.raises(Exception) as t_info:
        t_model(*(torch.zeros(s) for s in shapes), **kwargs)
    with pytest.raises(Exception) as a_info:
        a_model(*(ag.zeros(s, dtype=ag.float32) for s in shapes), **kwargs)
    assert type(a_info.value) is type(t_info.value)
    assert str(a_info.value) == str(t_info.value)


@pytest.mark.parametrize("make", [lambda lib: lib.TransformerDecoderLayer(D, H, activation="tanh"),
                                  lambda lib: lib.Transformer(D, H, 1, 1, activation="swish")])
def test_unknown_activation_string_raises_as_torch(make):
    with pytest.raises(RuntimeError) as t_info:
        make(torch.nn)
    with pytest.raises(RuntimeError) as a_info:
        make(nn)
    assert str(a_info.value) == str(t_info.value)


@pytest.mark.parametrize(("tgt_is_causal", "mask", "expected"), [(None, "causal", True), (None, "zeros", False),
                                                                   (False, "causal", False), (True, "zeros", True)])
def test_decoder_passes_torch_causal_hint_to_its_layers(tgt_is_causal, mask, expected):
    seen = {}
    for name, lib in (("torch", torch), ("aiograd", ag)):
        decoder = lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(D, H, FF, dtype=lib.float64), 2)
        hints = seen[name] = []
        for layer in decoder.layers:
            forward = layer.forward

            def spy(*args: Any, _forward: Any = forward, _hints: list[Any] = hints, **kwargs: Any) -> Any:
                _hints.append(kwargs["tgt_is_causal"])
                return _forward(*args, **kwargs)

            layer.forward = spy
        m = np.triu(np.full((T, T), -np.inf), 1) if mask == "causal" else np.zeros((T, T))
        decoder(lib.zeros(T, N, D, dtype=lib.float64), lib.zeros(S, N, D, dtype=lib.float64),
                tgt_mask=lib.tensor(m), tgt_is_causal=tgt_is_causal)
    assert seen["aiograd"] == seen["torch"] == [expected, expected]
