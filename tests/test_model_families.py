"""One model per architecture family, written once (tests/_model_families.py) and run by torch
and by aiograd under torch's name: a GPT-2-style decoder (Hugging Face's Conv1D, a causal-mask
buffer, gelu_new, tied lm head), a U-Net (BatchNorm, MaxPool, bilinear upsampling, skips; train
and eval mode), a 2-layer bidirectional LSTM classifier over packed sequences, an
encoder-decoder ``nn.Transformer`` with causal and key-padding masks, and a VAE drawing
``Normal.rsample`` after the same seed in both. torch's weights go through a ``.safetensors``
file into aiograd's model; the outputs, every parameter's gradient, the float inputs' gradients
and (U-Net) BatchNorm's running statistics must match torch's, in float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest
from _model_families import FAMILIES

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

import aiograd  # noqa: E402

pytestmark = [
    pytest.mark.slow,  # about 12 s in all on two busy cores
    # the model math is the same on every loop: one backend is enough
    pytest.mark.aiograd(backends=["asyncio"]),
    # the Transformer's float causal mask beside bool key-padding masks, as torch's tutorials
    # write it: torch and aiograd both warn that mixing the two is deprecated
    pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask and attn_mask"),
]

DTYPES = {"float32": (torch.float32, aiograd.float32), "float64": (torch.float64, aiograd.float64)}
# float64: the same math in another order; float32: the same, on any CPU kernel (AVX2, AVX-512,
# NEON reductions, matmul blockings) through a few layers
# (measured on x86-64 AVX2: float64 differs from torch by at most 5e-15, float32 by at most
# 2e-6, under a tenth of these bounds)
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-4, atol=2e-5)}


def _inputs(family: str, dtype: str) -> dict:
    """Inputs as numpy arrays (ints stay int64) or plain Python values."""
    rng = np.random.default_rng(1234)
    if family == "gpt2":
        return {"ids": rng.integers(0, 11, size=(2, 8))}
    if family.startswith("unet"):
        return {"x": rng.standard_normal((2, 3, 16, 16)).astype(dtype),
                "target": rng.integers(0, 2, size=(2, 16, 16))}
    if family == "bilstm":
        lengths = np.array([5, 7, 2, 4])  # unsorted, the longest not first
        ids = rng.integers(1, 13, size=(4, 7))
        ids[np.arange(7)[None, :] >= lengths[:, None]] = 0  # padding
        return {"ids": ids, "lengths": lengths, "target": np.array([0, 2, 1, 2])}
    if family == "transformer":
        src = rng.integers(1, 10, size=(3, 6))
        src[0, 4:] = 0
        src[2, 5:] = 0
        tgt = rng.integers(1, 10, size=(3, 5))
        tgt[1, 3:] = 0
        return {"src": src, "tgt": tgt}
    assert family == "vae"
    return {"x": rng.standard_normal((5, 12)).astype(dtype),
            "target": (rng.random((5, 12)) < 0.4).astype(dtype), "seed": 7}


def _to(lib, inputs: dict, float_grads: bool) -> dict:
    out = {}
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            t = lib.tensor(value)
            if float_grads and value.dtype.kind == "f" and name == "x":
                t.requires_grad_(True)
            out[name] = t
        else:
            out[name] = value
    return out


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


@pytest.fixture
def default_dtype(request: pytest.FixtureRequest):
    """Both libraries' default dtype set to the test's (the models are built and the scalars
    made under it, as a user running a model in float64 does); torch's float32 restored after."""
    name = request.node.callspec.params["dtype"]
    tdt, adt = DTYPES[name]
    torch.set_default_dtype(tdt)
    aiograd.set_default_dtype(adt)
    try:
        yield name
    finally:
        torch.set_default_dtype(torch.float32)
        aiograd.set_default_dtype(aiograd.float64)  # the suite's (tests/conftest.py)


CASES = ["gpt2", "unet-train", "unet-eval", "bilstm", "transformer", "vae"]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES)
async def test_family_loads_torch_weights_and_matches_torch(case: str, dtype: str, default_dtype: str, tmp_path) -> None:
    family = case.split("-")[0]
    build = FAMILIES[family]
    tol = TOL[dtype]
    raw = _inputs(case, dtype)

    torch.manual_seed(0)
    t_model, t_step = build(torch)
    if case == "unet-eval":
        with torch.no_grad():  # running statistics that are not 0 and 1, to load
            t_model(torch.tensor(np.random.default_rng(5).standard_normal((2, 3, 16, 16)).astype(dtype)) * 2 + 1)
    path = tmp_path / f"{case}.safetensors"
    safetensors_torch.save_file({k: v.contiguous() for k, v in t_model.state_dict().items()}, str(path))

    a_model, a_step = build(aiograd)
    state = aiograd.nn.utils.load_safetensors(path)
    assert set(state) == set(a_model.state_dict())
    a_model.load_state_dict(state)
    for name, p in a_model.named_parameters():
        assert p.dtype == DTYPES[dtype][1], name

    if case == "unet-eval":
        t_model.eval()
        a_model.eval()
    t_in, a_in = _to(torch, raw, True), _to(aiograd, raw, True)

    t_loss, t_out = t_step(t_model, t_in)
    a_loss, a_out = a_step(a_model, a_in)
    assert set(a_out) == set(t_out)
    for name in t_out:
        np.testing.assert_allclose(_np(a_out[name]), _np(t_out[name]), **tol, err_msg=name)
    np.testing.assert_allclose(float(a_loss.item()), float(t_loss.item()), **tol)

    t_loss.backward()
    await a_loss.backward()

    t_params = dict(t_model.named_parameters())
    a_params = dict(a_model.named_parameters())
    assert set(a_params) == set(t_params)
    for name, tp in t_params.items():
        assert tp.grad is not None, name
        assert a_params[name].grad is not None, name
        np.testing.assert_allclose(_np(a_params[name].grad), _np(tp.grad), **tol, err_msg=name)
    for name, t in t_in.items():
        if getattr(t, "requires_grad", False):
            np.testing.assert_allclose(_np(a_in[name].grad), _np(t.grad), **tol, err_msg=f"d/d{name}")

    if case == "unet-train":  # BatchNorm's running statistics, updated by the step
        t_bufs = dict(t_model.named_buffers())
        a_bufs = dict(a_model.named_buffers())
        assert set(a_bufs) == set(t_bufs)
        for name, tb in t_bufs.items():
            np.testing.assert_allclose(_np(a_bufs[name]), _np(tb), **tol, err_msg=name)
