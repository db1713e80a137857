"""Weights from and to torch: a model saved by torch with ``safetensors.torch.save_file`` loads
into the same aiograd architecture and gives torch's outputs and input gradients; what aiograd
saves, torch loads. Also the ``.npz`` format, suffix dispatch and the missing-package error.
(The CNN and transformer versions need the new functional ops: tests/test_nn_layers_functional.py.)"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
from aiograd import sync
from aiograd.nn.utils import load, load_npz, load_safetensors, save, save_npz, save_safetensors

pytestmark = requires_torch
safetensors_torch = pytest.importorskip("safetensors.torch")


def _mlp(lib: Any) -> Any:
    return lib.Sequential(lib.Linear(6, 16), lib.ReLU(), lib.Linear(16, 16), lib.Tanh(), lib.Linear(16, 3))


def _compare(a_model: Any, t_model: Any, dtype: Any = np.float32, rtol: float = 1e-5) -> None:
    x = np.random.default_rng(0).standard_normal((7, 6)).astype(dtype)
    ax, tx = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    aout, tout = a_model(ax), t_model(tx)
    np.testing.assert_allclose(aout.detach().numpy(), tout.detach().numpy(), rtol=rtol, atol=rtol)
    sync.backward((aout * aout).sum())
    (tout * tout).sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=rtol)


def test_torch_safetensors_file_loads_into_the_same_architecture(tmp_path):
    t_model = _mlp(torch.nn)
    path = tmp_path / "mlp.safetensors"
    safetensors_torch.save_file(t_model.state_dict(), str(path))
    state = load_safetensors(path)
    assert list(state) == sorted(t_model.state_dict())  # safetensors stores keys sorted
    assert all(isinstance(v, ag.Tensor) and v.dtype == np.float32 for v in state.values())
    a_model = _mlp(nn).float()
    assert repr(a_model.load_state_dict(state)) == "<All keys matched successfully>"
    _compare(a_model, t_model)
    # into a float64 model, the values are cast by load_state_dict as torch's copy_ does
    a64 = _mlp(nn)
    a64.load_state_dict(load_safetensors(path))
    _compare(a64, t_model.double(), np.float64, rtol=1e-6)


def test_torch_loads_what_aiograd_saves(tmp_path):
    a_model = _mlp(nn).float()
    path = tmp_path / "ours.safetensors"
    save_safetensors(a_model.state_dict(), path, metadata={"format": "pt"})
    t_model = _mlp(torch.nn)
    t_model.load_state_dict(safetensors_torch.load_file(str(path)))
    _compare(a_model, t_model)


def test_npz_round_trip_and_suffix_dispatch(tmp_path):
    a_model = _mlp(nn)
    for name in ("w.npz", "w.safetensors"):
        save(a_model.state_dict(), tmp_path / name)
        other = _mlp(nn)
        other.load_state_dict(load(tmp_path / name))
        for (k, v), (k2, v2) in zip(sorted(a_model.state_dict().items()), sorted(other.state_dict().items())):
            assert k == k2
            np.testing.assert_array_equal(v.numpy(), v2.numpy())
    t_model = _mlp(torch.nn).double()
    np.savez(tmp_path / "t.npz", **{k: v.numpy() for k, v in t_model.state_dict().items()})
    a_model.load_state_dict(load_npz(tmp_path / "t.npz"))
    _compare(a_model, t_model, np.float64, rtol=1e-12)
    save_npz(a_model.state_dict(), tmp_path / "again.npz")
    with np.load(tmp_path / "again.npz") as archive:
        assert sorted(archive.files) == sorted(t_model.state_dict())
    with pytest.raises(ValueError, match="use a .safetensors or .npz file"):
        load(tmp_path / "w.pt")


def test_buffers_and_integer_tensors_survive_a_torch_round_trip(tmp_path):
    a = nn.BatchNorm1d(4)
    a.running_mean.data[:] = [1.0, 2.0, 3.0, 4.0]
    a.num_batches_tracked.data[...] = 5
    path = tmp_path / "bn.safetensors"
    save_safetensors(a.state_dict(), path)
    t = torch.nn.BatchNorm1d(4).double()
    t.load_state_dict(safetensors_torch.load_file(str(path)))
    assert t.num_batches_tracked.item() == 5 and t.running_mean.tolist() == [1.0, 2.0, 3.0, 4.0]
    safetensors_torch.save_file(t.state_dict(), str(path))
    b = nn.BatchNorm1d(4)
    b.load_state_dict(load_safetensors(path))
    assert int(b.num_batches_tracked) == 5 and b.num_batches_tracked.dtype == np.int64


def test_tensors_on_another_device_are_saved_and_loaded(tmp_path):
    a_model = _mlp(nn).to("sim")
    save_safetensors(a_model.state_dict(), tmp_path / "sim.safetensors")
    state = load_safetensors(tmp_path / "sim.safetensors", device="sim")
    assert all(v.device == ag.device("sim:0") for v in state.values())
    b_model = _mlp(nn).to("sim")
    b_model.load_state_dict(state)
    np.testing.assert_array_equal(b_model[0].weight.detach().cpu().numpy(), a_model[0].weight.detach().cpu().numpy())


def test_only_tensors_can_be_saved(tmp_path):
    with pytest.raises(TypeError, match="not a Tensor"):
        save_safetensors({"a": np.zeros(2)}, tmp_path / "x.safetensors")


def test_a_missing_safetensors_package_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError) as info:
        load_safetensors(tmp_path / "x.safetensors")
    assert "pip install 'aiograd[safetensors]'" in str(info.value)
