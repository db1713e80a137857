"""``aiograd.save``/``aiograd.load`` against ``torch.save``/``torch.load``: torch checkpoints
(state dicts, optimizer state dicts, tensors of each dtype, views, parameters) load without
torch's code and with torch's values; a pickle that names any other global is refused before
it runs; aiograd's own files round-trip (safetensors for a flat state dict, the ``.npz``
format with its JSON manifest otherwise); ``Module``/``Optimizer.load_state_dict`` take torch
tensors and numpy arrays."""

from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle
import zipfile
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.optim as optim
from aiograd import sync

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.real_default_dtype  # float32 models, as torch's


def _torch_bytes(obj: Any, **kwargs: Any) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    buf.seek(0)
    return buf


def _same(a: Any, t: Any) -> None:
    """An aiograd tensor equal to a torch one: values, dtype, shape, requires_grad."""
    assert isinstance(a, ag.Tensor)
    expected = t.detach().numpy()
    assert a.detach().numpy().dtype == expected.dtype
    assert tuple(a.shape) == tuple(t.shape)
    np.testing.assert_array_equal(a.detach().numpy(), expected)
    assert a.requires_grad == t.requires_grad


def _torch_model() -> Any:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    model(torch.randn(5, 3))  # (running stats and num_batches_tracked move off their defaults)
    return model


def _ag_model() -> Any:
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


# ------------------------------------------------------------------------- torch checkpoints
def test_torch_state_dict_loads_with_its_keys_values_and_metadata():
    sd = _torch_model().state_dict()
    loaded = ag.load(_torch_bytes(sd))
    assert type(loaded) is collections.OrderedDict
    assert list(loaded) == list(sd)
    for key in sd:
        _same(loaded[key], sd[key])
    assert loaded["1.num_batches_tracked"].numpy().dtype == np.int64 and loaded["1.num_batches_tracked"].ndim == 0
    assert loaded._metadata == sd._metadata  # (BatchNorm's version 2 among them)


def test_torch_state_dict_file_loads_into_the_same_architecture(tmp_path):
    t_model = _torch_model().eval()
    path = tmp_path / "model.pt"
    torch.save(t_model.state_dict(), path)
    model = _ag_model().eval()
    result = model.load_state_dict(ag.load(path))
    assert not result.missing_keys and not result.unexpected_keys
    x = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    np.testing.assert_allclose(model(ag.tensor(x)).detach().numpy(),
                               t_model(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int16", "int8",
                                   "uint8", "bool", "complex64"])
def test_torch_tensor_of_each_dtype_loads(dtype):
    t = (torch.arange(-3, 9).reshape(3, 4) * 7 % 5).to(getattr(torch, dtype))
    _same(ag.load(_torch_bytes(t)), t)


def test_views_offsets_expanded_and_shared_storages_load_with_their_values():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    obj = {
        "t": base.t(),  # non-contiguous
        "slice": base[1:, 2::2],  # an offset and strides
        "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),  # stride 0
        "base": base,  # one storage under the three views of base
        "row": base[2],
        "empty": base[:, :0],
        "scalar": base[3, 5],
    }
    loaded = ag.load(_torch_bytes(obj))
    back = torch.load(_torch_bytes(obj))
    for key, t in back.items():
        _same(loaded[key], t)


def test_parameters_and_requires_grad_load_as_torch_loads_them():
    obj = {"w": torch.nn.Parameter(torch.ones(2, 3)), "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
           "leaf": torch.ones(3, requires_grad=True), "plain": torch.ones(3)}
    obj["nonleaf"] = obj["leaf"] * 2
    loaded = ag.load(_torch_bytes(obj))
    back = torch.load(_torch_bytes(obj))
    for key, t in back.items():
        _same(loaded[key], t)
        assert isinstance(loaded[key], nn.Parameter) == isinstance(t, torch.nn.Parameter)
        assert loaded[key].is_leaf


def test_numbers_strings_dtypes_and_devices_load():
    obj = {"n": 3, "x": 0.5, "s": "hi", "none": None, "flag": True, "tup": (1, 2.5), "list": [1, [2]],
           "dtype": torch.float64, "device": torch.device("cpu"), 7: "int key", "nan": math.inf}
    loaded = ag.load(_torch_bytes(obj))
    assert loaded["dtype"] == ag.float64 and loaded["device"] == ag.device("cpu")
    del loaded["dtype"], loaded["device"], obj["dtype"], obj["device"]
    assert loaded == obj


def test_torch_optimizer_state_dict_continues_training_in_aiograd():
    t_model = _torch_model()
    t_opt = torch.optim.Adam(t_model.parameters(), lr=0.01, betas=(0.8, 0.9))
    x = torch.randn(5, 3)
    for _ in range(2):
        t_opt.zero_grad()
        t_model(x).square().sum().backward()
        t_opt.step()
    checkpoint = ag.load(_torch_bytes({"model": t_model.state_dict(), "optim": t_opt.state_dict()}))
    assert checkpoint["optim"]["param_groups"][0]["betas"] == (0.8, 0.9)
    _same(checkpoint["optim"]["state"][0]["exp_avg"], t_opt.state_dict()["state"][0]["exp_avg"])

    model = _ag_model()
    model.load_state_dict(checkpoint["model"])
    opt = optim.Adam(model.parameters(), lr=0.5)
    opt.load_state_dict(checkpoint["optim"])
    assert opt.param_groups[0]["lr"] == 0.01
    # one more step in each from the same gradients
    t_opt.zero_grad()
    t_model(x).square().sum().backward()
    for p, tp in zip(model.parameters(), t_model.parameters()):
        p.grad = ag.tensor(tp.grad.numpy())
    t_opt.step()
    opt.step()
    for p, tp in zip(model.parameters(), t_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_pickle_naming_another_global_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    with pytest.raises(pickle.UnpicklingError, match=rf"Unsupported global: GLOBAL {os.system.__module__}\.system was not an allowed global"):
        ag.load(_torch_bytes({"w": torch.ones(2), "evil": Evil()}))
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL builtins\.eval"):
        ag.load(_torch_bytes({"e": _Reduce(eval, ("1",))}), weights_only=False)  # (never runs: same rules)
    with pytest.raises(pickle.UnpicklingError, match=r"Weights only load failed"):  # torch refuses both too
        torch.load(_torch_bytes({"e": _Reduce(eval, ("1",))}))


class _Reduce:
    def __init__(self, func: Any, args: tuple[Any, ...]) -> None:
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def test_the_legacy_pickle_format_is_refused():
    buf = _torch_bytes(torch.ones(2), _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match=r"a pickle file .*reads torch's zip checkpoints"):
        ag.load(buf)


def test_map_location():
    buf = _torch_bytes({"w": torch.ones(2)})
    assert ag.load(buf, "cpu")["w"].device == ag.device("cpu")
    buf.seek(0)
    assert ag.load(buf, map_location={"cpu": "cpu"})["w"].device == ag.device("cpu")
    with pytest.raises(TypeError, match="map_location must be None, a device"):
        ag.load(buf, map_location=lambda storage, loc: storage)
    with pytest.raises(TypeError, match="weights_only must be a bool"):
        ag.load(buf, weights_only="yes")


# ------------------------------------------------------------------ load_state_dict of torch's
def test_module_load_state_dict_takes_torch_tensors_and_numpy_arrays():
    t_model = _torch_model()
    model = _ag_model()
    model.load_state_dict(t_model.state_dict())  # torch tensors, as they are
    for (key, value), (t_key, t_value) in zip(model.state_dict().items(), t_model.state_dict().items()):
        assert key == t_key
        np.testing.assert_array_equal(value.numpy(), t_value.numpy())
    arrays = {k: v.numpy() * 2 for k, v in t_model.state_dict().items()}
    model.load_state_dict(arrays)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), arrays["0.weight"])
    arrays["0.weight"][...] = 0  # a copy: the model does not share the caller's array
    assert model[0].weight.detach().numpy().any()
    with pytest.raises(RuntimeError, match=r"size mismatch for 0\.weight"):
        model.load_state_dict({**arrays, "0.weight": np.zeros((2, 2), np.float32)})


def test_optimizer_load_state_dict_takes_a_torch_state_dict_as_it_is():
    t_model = _torch_model()
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.1, momentum=0.9)
    t_model(torch.randn(5, 3)).sum().backward()
    t_opt.step()
    model = _ag_model()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(t_opt.state_dict())
    buf = opt.state[model[0].weight]["momentum_buffer"]
    assert isinstance(buf, ag.Tensor)
    np.testing.assert_array_equal(buf.numpy(), t_opt.state[t_model[0].weight]["momentum_buffer"].numpy())


# ----------------------------------------------------------------------- aiograd's own files
def test_flat_state_dict_round_trips_as_safetensors_that_torch_reads(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    model = _ag_model()
    model.load_state_dict(_torch_model().state_dict())
    sd = model.state_dict()
    path = tmp_path / "model.safetensors"
    ag.save(sd, path)
    torch_side = safetensors_torch.load_file(str(path))  # a real safetensors file
    for key, value in sd.items():
        np.testing.assert_array_equal(torch_side[key].numpy(), value.numpy())
    loaded = ag.load(path)
    assert type(loaded) is collections.OrderedDict and list(loaded) == list(sd)
    assert loaded._metadata == sd._metadata
    for key, value in sd.items():
        assert loaded[key].dtype == value.dtype
        np.testing.assert_array_equal(loaded[key].numpy(), value.numpy())
    _ag_model().load_state_dict(loaded)


def test_nested_objects_round_trip_through_the_npz_format():
    w = ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    obj = {
        "state": {0: {"step": ag.tensor(3.0), "exp_avg": ag.zeros(2, 2)}, 1: {}},
        "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "foreach": None, "name": "g"}],
        "w": w, "again": w, "param": nn.Parameter(ag.ones(2)), "t": ag.arange(6).reshape(2, 3).t(),
        "flags": ag.tensor([True, False]), "inf": -math.inf, "dtype": ag.int64, "device": ag.device("cpu"),
        "od": collections.OrderedDict([("b", 1), ("a", 2)]),
    }
    buf = io.BytesIO()
    ag.save(obj, buf)
    assert "__aiograd__.npy" in zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()
    buf.seek(0)
    loaded = ag.load(buf)
    assert loaded["again"] is loaded["w"]  # one tensor saved once, as torch keeps it
    assert loaded["w"].requires_grad and loaded["w"].is_leaf
    assert isinstance(loaded["param"], nn.Parameter) and loaded["param"].requires_grad
    np.testing.assert_array_equal(loaded["t"].numpy(), obj["t"].numpy())
    assert loaded["flags"].numpy().dtype == np.bool_
    assert loaded["state"][0]["step"].numpy() == 3.0 and loaded["state"][1] == {}
    assert loaded["groups"] == obj["groups"]
    assert loaded["inf"] == -math.inf and loaded["dtype"] == ag.int64 and loaded["device"] == ag.device("cpu")
    assert type(loaded["od"]) is collections.OrderedDict and list(loaded["od"]) == ["b", "a"]


def test_a_tensor_requiring_grad_round_trips_as_torchs_does(tmp_path):
    t = torch.tensor([1.0, 2.0], requires_grad=True) * 3
    a = ag.tensor([1.0, 2.0], requires_grad=True) * 3
    ag.save(a, tmp_path / "a.bin")
    loaded = ag.load(tmp_path / "a.bin")
    _same(loaded, torch.load(_torch_bytes(t)))
    assert loaded.is_leaf and loaded.grad_fn is None
    grad = sync.grad(loaded.sum(), [loaded])[0]  # a leaf of its own graph
    np.testing.assert_array_equal(grad.numpy(), [1.0, 1.0])


def test_plain_npz_loads_as_a_flat_dict(tmp_path):
    path = tmp_path / "plain.npz"
    np.savez(path, a=np.arange(3), b=np.ones((2, 2), np.float32))
    loaded = ag.load(path)
    assert set(loaded) == {"a", "b"} and loaded["b"].numpy().dtype == np.float32


def test_save_refuses_what_it_would_have_to_pickle():
    with pytest.raises(TypeError, match="aiograd.save cannot save a function"):
        ag.save({"f": lambda: 0}, io.BytesIO())
    with pytest.raises(TypeError, match="cannot save a ndarray"):
        ag.save([np.ones(2)], io.BytesIO())


def test_a_manifest_of_another_version_is_refused():
    buf = io.BytesIO()
    manifest = json.dumps({"format": "aiograd", "version": 99, "tensors": [], "root": {"value": 1}})
    np.savez(buf, __aiograd__=np.frombuffer(manifest.encode(), np.uint8))
    buf.seek(0)
    with pytest.raises(ValueError, match="format version 99; this aiograd reads 1"):
        ag.load(buf)
