"""Weights in files: ``save_safetensors``/``load_safetensors`` (the safetensors format, through
the ``safetensors`` package's numpy API, so files written by ``safetensors.torch.save_file`` load
here and the other way round) and ``save_npz``/``load_npz`` (numpy's ``.npz``), each a flat
``{name: Tensor}`` mapping such as ``module.state_dict()``; ``save``/``load`` pick the format by
the file's suffix.

    save_safetensors(model.state_dict(), "model.safetensors")
    model.load_state_dict(load_safetensors("model.safetensors"))
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._device import CPU, device_type, placement
from ..._tensor import Tensor

__all__ = ["load", "load_npz", "load_safetensors", "save", "save_npz", "save_safetensors"]

_INSTALL = "pip install 'aiograd[safetensors]'"


def _safetensors_numpy() -> Any:
    try:
        import safetensors.numpy
    except ImportError:
        raise ImportError(
            f"reading and writing .safetensors files needs the safetensors package: {_INSTALL}"
        ) from None
    return safetensors.numpy


def _host_arrays(tensors: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
    """Each tensor's values as a contiguous host array (a copy off the CPU), by name."""
    if not isinstance(tensors, Mapping):
        raise TypeError(f"expected a mapping of names to tensors, got {type(tensors).__name__}")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {type(name).__name__}")
        if not isinstance(value, Tensor):
            raise TypeError(f"{name!r} is a {type(value).__name__}, not a Tensor: only tensors can be saved")
        data = value.data
        if value._device is not CPU:
            data = device_type(value._device.type).to_host(data)
        arrays[name] = np.ascontiguousarray(data)
    return arrays


def _tensors(arrays: Mapping[str, Any], device: Any) -> dict[str, Tensor]:
    dev = placement(device)
    out = {}
    for name, array in arrays.items():
        t = Tensor._wrap(np.asarray(array))
        if dev is not CPU:
            t.data = device_type(dev.type).to_device(t.data, dev.index)
            t._device = dev
        out[name] = t
    return out


def save_safetensors(
    tensors: Mapping[str, Tensor], filename: str | os.PathLike[str], metadata: dict[str, str] | None = None
) -> None:
    """Write ``{name: Tensor}`` (a ``state_dict()``) to a ``.safetensors`` file that
    ``safetensors.torch.load_file`` reads; ``metadata``: extra string pairs for the header."""
    _safetensors_numpy().save_file(_host_arrays(tensors), os.fspath(filename), metadata=metadata)


def load_safetensors(filename: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Tensor]:
    """Read a ``.safetensors`` file (e.g. from ``safetensors.torch.save_file``) as
    ``{name: Tensor}`` on ``device``, ready for ``module.load_state_dict``."""
    return _tensors(_safetensors_numpy().load_file(os.fspath(filename)), device)


def save_npz(tensors: Mapping[str, Tensor], file: Any) -> None:
    """Write ``{name: Tensor}`` to an uncompressed ``.npz`` archive (``numpy.savez``)."""
    np.savez(file, **_host_arrays(tensors))


def load_npz(file: Any, device: Any = "cpu") -> dict[str, Tensor]:
    """Read an ``.npz`` archive (``numpy.savez``) as ``{name: Tensor}`` on ``device``."""
    with np.load(file, allow_pickle=False) as archive:
        return _tensors({name: archive[name] for name in archive.files}, device)


def _format(path: Any) -> str:
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in (".safetensors", ".npz"):
        raise ValueError(f"cannot tell the format of {os.fspath(path)!r}: use a .safetensors or .npz file")
    return suffix


def save(tensors: Mapping[str, Tensor], path: str | os.PathLike[str]) -> None:
    """``save_safetensors`` or ``save_npz``, by the suffix of ``path``."""
    if _format(path) == ".npz":
        save_npz(tensors, path)
    else:
        save_safetensors(tensors, path)


def load(path: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Tensor]:
    """``load_safetensors`` or ``load_npz``, by the suffix of ``path``."""
    if _format(path) == ".npz":
        return load_npz(path, device)
    return load_safetensors(path, device)
