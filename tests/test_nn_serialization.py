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


# ----------------------------------------------------------------- files from anywhere: checked
def _npy_bytes(descr: str, shape: tuple[int, ...], data: bytes) -> bytes:
    """An .npy file: a header that declares ``descr`` and ``shape``, then ``data`` (any length)."""
    import io

    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue() + data


def _refusal(info: pytest.ExceptionInfo[ValueError], tmp_path: Any) -> str:
    message = str(info.value)
    assert "\n" not in message and str(tmp_path) not in message, message  # one line, the base name
    return message


def test_an_npz_zip_bomb_is_refused_before_it_expands(tmp_path):
    """A 64 KiB .npz whose entry inflates to 64 MiB (a header and zeros): refused from the zip's
    sizes, over max_bytes, without inflating it."""
    import tracemalloc
    import zipfile

    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("w.npy", "w") as f:
        f.write(_npy_bytes("<f8", (8 << 20,), b""))
        for _ in range(64):
            f.write(bytes(1 << 20))
    assert path.stat().st_size < 1 << 17
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            load(path, max_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert _refusal(info, tmp_path) == (
        "bomb.npz: entry 'w.npy' is 67108992 bytes uncompressed (over max_bytes=1048576)")
    assert peak < 4 << 20, peak
    assert load(path, max_bytes=None)["w"].shape == (8 << 20,)  # no bound: it is a good file


def test_an_npy_header_declaring_more_than_its_data_is_refused_before_allocating(tmp_path):
    import tracemalloc
    import zipfile

    path = tmp_path / "model.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", _npy_bytes("<f8", (1 << 27,), bytes(80)))  # 1 GiB declared
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            load_npz(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert _refusal(info, tmp_path) == (
        "model.npz: 'w.npy' declares 1073741824 bytes of float64 (shape (134217728,)) but holds 80")
    assert peak < 4 << 20, peak
    with pytest.raises(ValueError, match=r"^model\.npz: 'w\.npy' declares 1073741824 bytes of float64 "
                                         r"\(over max_bytes=1048576\)$"):
        load_npz(path, max_bytes=1 << 20)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", _npy_bytes("<f8", (1 << 40,), bytes(80)))  # 8 TiB declared
    with pytest.raises(ValueError, match=r"^model\.npz: 'w\.npy' declares 8796093022208 bytes of "
                                         r"float64 \(over max_bytes=4294967296\)$"):
        load(path)


def test_npz_entries_that_are_not_npy_arrays_are_refused(tmp_path):
    import zipfile

    path = tmp_path / "model.npz"
    np.savez(path, w=np.ones(3))
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("x.txt", b"not an array")
    with pytest.raises(ValueError) as info:
        load(path)
    assert _refusal(info, tmp_path) == "model.npz: entry 'x.txt' is not an .npy array"
    (tmp_path / "text.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"^text\.npz: not an \.npz archive \(not a zip file\)$"):
        load(tmp_path / "text.npz")


@pytest.mark.parametrize(("entry", "dtype"), [
    (_npy_bytes("|O", (2,), bytes(16)), "object"),
    (_npy_bytes("<U2", (1,), bytes(8)), "<U2"),
    (_npy_bytes("|V8", (1,), bytes(8)), "|V8"),
], ids=["object", "unicode", "void"])
def test_npz_entries_of_other_than_numeric_dtypes_are_refused(tmp_path, entry, dtype):
    import zipfile

    path = tmp_path / "model.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", entry)
    with pytest.raises(ValueError) as info:
        load(path)
    assert _refusal(info, tmp_path) == (
        f"model.npz: entry 'w.npy' has dtype {dtype}: only bool, integer, floating point and "
        "complex arrays load")
    np.savez(path, w=np.zeros(2, dtype=[("a", "<f8"), ("b", "<i4")]))  # structured
    with pytest.raises(ValueError, match="has dtype .*: only bool, integer, floating point"):
        load(path)


def _safetensors_file(path: Any, header: Any, data: bytes, length: int | None = None) -> Any:
    import json
    import struct

    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


@pytest.mark.parametrize(("header", "data", "length", "problem"), [
    ({}, b"", 1 << 40, "the header declares 1099511627776 bytes, past the end of the file (10 bytes)"),
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(8), None,
     "tensor 'w' has data offsets [0, 16] past the end of the file's 8 bytes of data"),
    ({"w": {"dtype": "F64", "shape": [3], "data_offsets": [0, 8]}}, bytes(8), None,
     "tensor 'w' declares 24 bytes of F64 (shape (3,)) but its offsets hold 8"),
    ({"w": {"dtype": "F64", "shape": [1 << 40], "data_offsets": [0, 8]}}, bytes(8), None,
     "tensor 'w' declares 8796093022208 bytes of F64 (over max_bytes=4294967296)"),
    ({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}, bytes(8), None,
     "tensor 'w' has dtype 'BF16', not one that loads (BOOL, U8, I8, U16, I16, F16, U32, I32, F32, "
     "U64, I64, F64, C64)"),
    ({"w": {"dtype": "OBJ", "shape": [1], "data_offsets": [0, 8]}}, bytes(8), None,
     "tensor 'w' has dtype 'OBJ', not one that loads (BOOL, U8, I8, U16, I16, F16, U32, I32, F32, "
     "U64, I64, F64, C64)"),
], ids=["header-past-end", "offsets-past-end", "size-mismatch", "over-max-bytes", "bf16", "unknown-dtype"])
def test_safetensors_headers_are_checked_against_the_file(tmp_path, header, data, length, problem):
    path = _safetensors_file(tmp_path / "model.safetensors", header, data, length)
    with pytest.raises(ValueError) as info:
        load(path)
    assert _refusal(info, tmp_path) == f"model.safetensors: {problem}"


def test_good_files_load_up_to_max_bytes_and_not_past_it(tmp_path):
    """The bound counts the arrays' bytes (all together), in both formats; a good file's arrays
    come back as saved (dtypes, Fortran order, big-endian, compressed)."""
    arrays = {"a": np.asfortranarray(np.arange(12.0).reshape(3, 4)), "b": np.arange(5, dtype=">i4"),
              "c": np.array([True, False]), "d": np.zeros((0, 3), np.float32), "e": np.float64(2.5)}
    total = sum(np.asarray(v).nbytes for v in arrays.values())
    np.savez_compressed(tmp_path / "c.npz", **arrays)
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    safetensors_numpy.save_file({k: np.array(v, order="C") for k, v in arrays.items()},
                                str(tmp_path / "s.safetensors"))
    for name in ("c.npz", "s.safetensors"):
        state = load(tmp_path / name, max_bytes=total)
        for k, v in arrays.items():
            np.testing.assert_array_equal(state[k].numpy(), v)
            assert state[k].shape == np.shape(v)
        with pytest.raises(ValueError, match=rf"in all \(over max_bytes={total - 1}\)$"):
            load(tmp_path / name, max_bytes=total - 1)
    with open(tmp_path / "c.npz", "rb") as f:  # a file object too
        assert sorted(load_npz(f)) == sorted(arrays)


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_a_0d_tensor_is_saved_0d_and_torch_loads_it_so(tmp_path, suffix):
    """BatchNorm's num_batches_tracked is 0-d in torch's state dicts: saved as 1-d it would not
    load back into torch's module (a shape mismatch)."""
    bn = nn.BatchNorm1d(3)
    path = tmp_path / f"bn{suffix}"
    save(bn.state_dict(), path)
    assert load(path)["num_batches_tracked"].shape == ()
    if suffix == ".safetensors":
        loaded = safetensors_torch.load_file(str(path))
    else:
        with np.load(path) as archive:
            loaded = {k: torch.from_numpy(archive[k]) for k in archive.files}
    assert loaded["num_batches_tracked"].shape == torch.Size([])
    torch.nn.BatchNorm1d(3).load_state_dict(loaded)
