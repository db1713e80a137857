"""``aiograd.save`` and ``aiograd.load`` (``torch.save``/``torch.load``): tensors and nested
dicts, lists and tuples of tensors, numbers, strings and None, such as state dicts and optimizer
state dicts, in files that never hold pickled code.

``save`` writes a flat ``{str: Tensor}`` mapping (a ``state_dict()``) as safetensors when the
optional ``safetensors`` package is installed, and anything else (or everything, without it) as
an ``.npz`` archive: one ``.npy`` entry per tensor (``t0``, ``t1``, ...) and ``__aiograd__``, a
JSON manifest (stored as bytes, a uint8 array) that describes the nesting:

    {"format": "aiograd", "version": 1,
     "tensors": [{"requires_grad": false, "parameter": false, "device": "cpu"}, ...],
     "root": NODE}

where a NODE is ``{"tensor": i}``, ``{"dict": [[KEY_NODE, NODE], ...], "ordered": bool}`` (with
``"metadata": NODE`` for a state dict's ``_metadata``), ``{"list": [...]}``,
``{"tuple": [...]}``, ``{"float": repr}``, ``{"dtype": name}``, ``{"device": str}`` or
``{"value": v}`` (int, bool, str, None). A tensor
saved twice in one object is stored once and loads as one tensor, as in torch.

``load`` tells the format from the file's first bytes: this ``.npz`` format, a plain ``.npz``
(as a flat dict), safetensors, or a torch checkpoint (``torch.save``'s zip format), read by
``_torch_pickle`` without torch and without running pickled code. Archives are checked before
any array is read (``nn.utils.serialization``'s checks: numeric dtypes, sizes that match).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import struct
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from typing import IO, Any

import numpy as np

from .._core._tensor import Tensor
from .._devices._device import CPU, device, device_type, placement
from ..nn.parameter import Parameter
from ..nn.utils import serialization as _files
from . import _torch_pickle

__all__ = ["load", "save"]

#: What ``f`` may be: a path or a binary file object.
FileLike = str | os.PathLike[str] | IO[bytes]
#: What ``map_location`` may be: None (where each tensor was saved), a device, or a mapping of
#: saved locations to devices.
MapLocation = str | device | Mapping[str, str | device] | None

_MANIFEST = "__aiograd__"
_VERSION = 1
_SAFETENSORS_KEY = "aiograd"  # the safetensors metadata entry with what the format lacks
_SAFETENSORS_DTYPES = frozenset("bool uint8 int8 uint16 int16 float16 uint32 int32 float32 uint64 int64 float64".split())


# ---------------------------------------------------------------------------------------- save
def _device_name(t: Tensor) -> str:
    return str(t._device) if t._device is not CPU else "cpu"


def _safetensors_available() -> bool:
    try:
        import safetensors.numpy  # noqa: F401
    except ImportError:
        return False
    return True


def _is_flat(obj: Any) -> bool:
    """A non-empty ``{str: Tensor}`` of dtypes safetensors has, no tensor twice: safetensors' case."""
    if not isinstance(obj, dict) or not obj:
        return False
    values = list(obj.values())
    return (all(isinstance(k, str) and k != "__metadata__" for k in obj)
            and all(isinstance(v, Tensor) and str(v.data.dtype) in _SAFETENSORS_DTYPES for v in values)
            and len({id(v) for v in values}) == len(values))


class _Encoder:
    """Turns an object into a manifest node, collecting its tensors' host arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray[Any, Any]] = {}
        self.infos: list[dict[str, Any]] = []
        self._index: dict[int, int] = {}

    def node(self, obj: Any) -> dict[str, Any]:
        if isinstance(obj, Tensor):
            i = self._index.get(id(obj))
            if i is None:
                i = self._index[id(obj)] = len(self.infos)
                self.arrays[f"t{i}"] = _files._host_arrays({"t": obj.detach()})["t"]
                self.infos.append({"requires_grad": obj.requires_grad, "parameter": isinstance(obj, Parameter),
                                   "device": _device_name(obj)})
            return {"tensor": i}
        if isinstance(obj, dict):
            out: dict[str, Any] = {"dict": [[self.node(k), self.node(v)] for k, v in obj.items()],
                                   "ordered": isinstance(obj, collections.OrderedDict)}
            metadata = getattr(obj, "_metadata", None)
            if metadata is not None:
                out["metadata"] = self.node(metadata)
            return out
        if isinstance(obj, (list, tuple)):
            return {"list" if isinstance(obj, list) else "tuple": [self.node(v) for v in obj]}
        if isinstance(obj, float):
            return {"float": repr(obj)}
        if obj is None or isinstance(obj, (bool, int, str)):
            return {"value": obj}
        if isinstance(obj, np.dtype) and obj.kind in _files._NUMERIC_KINDS:
            return {"dtype": obj.name}
        if isinstance(obj, device):
            return {"device": str(obj)}
        raise TypeError(
            f"aiograd.save cannot save a {type(obj).__name__}: only tensors, dicts, lists, tuples, "
            "numbers, strings, dtypes, devices and None (aiograd never pickles)"
        )


def _save_npz(obj: Any, f: Any) -> None:
    enc = _Encoder()
    root = enc.node(obj)
    manifest = json.dumps({"format": "aiograd", "version": _VERSION, "tensors": enc.infos, "root": root})
    arrays: dict[str, Any] = dict(enc.arrays)
    arrays[_MANIFEST] = np.frombuffer(manifest.encode("utf-8"), np.uint8)
    np.savez(f, **arrays)


def _save_safetensors(obj: dict[str, Tensor], f: Any) -> None:
    import safetensors.numpy

    extra = {
        "order": list(obj),
        "ordered": isinstance(obj, collections.OrderedDict),
        "requires_grad": [k for k, v in obj.items() if v.requires_grad],
        "parameters": [k for k, v in obj.items() if isinstance(v, Parameter)],
        "devices": {k: _device_name(v) for k, v in obj.items() if v._device is not CPU},
    }
    metadata = getattr(obj, "_metadata", None)
    if metadata is not None:
        extra["metadata"] = _Encoder().node(metadata)  # (versions: ints, strings, dicts)
    data = safetensors.numpy.save(_files._host_arrays(obj), metadata={_SAFETENSORS_KEY: json.dumps(extra)})
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    else:
        f.write(data)


def save(obj: Any, f: FileLike) -> None:
    """Save ``obj`` (a tensor, or dicts/lists/tuples of tensors, numbers, strings, dtypes,
    devices and None) to ``f``, a path or a binary file object: safetensors for a flat
    ``{str: Tensor}`` when the ``safetensors`` package is installed, else aiograd's ``.npz``
    format (see the module's docstring). Tensors keep ``requires_grad`` and ``Parameter``-ness, as with ``torch.save``;
    anything else raises ``TypeError`` (nothing is ever pickled)."""
    if isinstance(f, (str, os.PathLike)):
        if _is_flat(obj) and _safetensors_available():
            _save_safetensors(obj, f)
            return
        with open(f, "wb") as out:  # (np.savez would add ".npz" to a path without it)
            _save_npz(obj, out)
        return
    if _is_flat(obj) and _safetensors_available():
        _save_safetensors(obj, f)
    else:
        _save_npz(obj, f)


# ---------------------------------------------------------------------------------------- load
def _placer(map_location: Any) -> Callable[[np.ndarray[Any, Any], str], Tensor]:
    if map_location is not None and not isinstance(map_location, (str, device, Mapping)):
        raise TypeError(
            "map_location must be None, a device, a device string or a dict of locations, "
            f"not {type(map_location).__name__} (aiograd.load takes no functions)"
        )

    def place(array: np.ndarray[Any, Any], location: str) -> Tensor:
        target: Any = location
        if isinstance(map_location, Mapping):
            target = map_location.get(location, location)
        elif map_location is not None:
            target = map_location
        dev = placement(target)
        t = Tensor._wrap(array)
        if dev is not CPU:
            t.data = device_type(dev.type).to_device(t.data, dev.index)
            t._device = dev
        return t

    return place


def _malformed(name: str, why: str) -> ValueError:
    return ValueError(f"{name}: not a valid aiograd file ({why})")


class _Decoder:
    """Turns a manifest node back into the object, its tensors placed once each."""

    def __init__(self, name: str, arrays: dict[str, Tensor], infos: Any, place: Callable[..., Tensor]) -> None:
        if not isinstance(infos, list) or not all(isinstance(i, dict) for i in infos):
            raise _malformed(name, "its tensor list is not a list of objects")
        self.name, self.arrays, self.infos, self.place = name, arrays, infos, place
        self.done: dict[int, Tensor] = {}

    def tensor(self, i: Any) -> Tensor:
        if type(i) is not int or not 0 <= i < len(self.infos) or f"t{i}" not in self.arrays:
            raise _malformed(self.name, f"tensor {i!r:.20} is not in the file")
        if i not in self.done:
            info = self.infos[i]
            t = self.place(self.arrays[f"t{i}"].data, str(info.get("device", "cpu")))
            if info.get("parameter"):
                t = Parameter(t, requires_grad=bool(info.get("requires_grad")))
            elif info.get("requires_grad"):
                t.requires_grad_(True)
            self.done[i] = t
        return self.done[i]

    def node(self, node: Any) -> Any:
        if not isinstance(node, dict) or len(node) < 1:
            raise _malformed(self.name, f"{node!r:.40} is not a node")
        if "tensor" in node:
            return self.tensor(node["tensor"])
        if "dict" in node:
            out: dict[Any, Any] = collections.OrderedDict() if node.get("ordered") else {}
            for pair in node["dict"]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _malformed(self.name, "a dict item is not a key and a value")
                out[self.node(pair[0])] = self.node(pair[1])
            if "metadata" in node:
                out._metadata = self.node(node["metadata"])  # type: ignore[attr-defined]
            return out
        if "list" in node:
            return [self.node(v) for v in node["list"]]
        if "tuple" in node:
            return tuple(self.node(v) for v in node["tuple"])
        if "float" in node:
            try:
                return float(node["float"])
            except (TypeError, ValueError):
                raise _malformed(self.name, f"{node['float']!r:.40} is not a float") from None
        if "dtype" in node:
            try:
                dtype = np.dtype(str(node["dtype"]))
            except TypeError:
                raise _malformed(self.name, f"{node['dtype']!r:.40} is not a dtype") from None
            if dtype.kind not in _files._NUMERIC_KINDS:
                raise _malformed(self.name, f"{node['dtype']!r:.40} is not a numeric dtype")
            return dtype
        if "device" in node:
            return device(str(node["device"]))
        if "value" in node and (node["value"] is None or isinstance(node["value"], (bool, int, str))):
            return node["value"]
        raise _malformed(self.name, f"{node!r:.40} is not a node")


def _load_aiograd_npz(file: Any, name: str, place: Callable[..., Tensor]) -> Any:
    arrays = _files.load_npz(file)  # (checked; on the host: placed per tensor below)
    raw = arrays.pop(_MANIFEST).data
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _malformed(name, "its manifest is not bytes")
    try:
        manifest = json.loads(raw.tobytes().decode("utf-8"))
    except (ValueError, RecursionError):
        raise _malformed(name, "its manifest is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "aiograd":
        raise _malformed(name, "its manifest is not aiograd's")
    if manifest.get("version") != _VERSION:
        raise _malformed(name, f"format version {manifest.get('version')!r:.20}; this aiograd reads {_VERSION}")
    return _Decoder(name, arrays, manifest.get("tensors"), place).node(manifest.get("root"))


def _load_safetensors(path: str, name: str, place: Callable[..., Tensor]) -> Any:
    tensors = _files.load_safetensors(path)  # (checks the header first)
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
    extra: dict[str, Any] = {}
    text = (header.get("__metadata__") or {}).get(_SAFETENSORS_KEY)
    if isinstance(text, str):
        try:
            extra = json.loads(text)
        except ValueError:
            raise _malformed(name, "its aiograd metadata is not JSON") from None
        if not isinstance(extra, dict):
            raise _malformed(name, "its aiograd metadata is not an object")
    order = [k for k in extra.get("order", []) if k in tensors]
    order += [k for k in tensors if k not in order]
    out: dict[str, Any] = collections.OrderedDict() if extra.get("ordered") else {}
    devices = extra.get("devices") or {}
    for key in order:
        t = place(tensors[key].data, str(devices.get(key, "cpu")))
        if key in extra.get("parameters", ()):
            t = Parameter(t, requires_grad=key in extra.get("requires_grad", ()))
        elif key in extra.get("requires_grad", ()):
            t.requires_grad_(True)
        out[key] = t
    if "metadata" in extra:
        out._metadata = _Decoder(name, {}, [], place).node(extra["metadata"])  # type: ignore[attr-defined]
    return out


def _load_file(f: IO[bytes], name: str, path: str | None, place: Callable[..., Tensor]) -> Any:
    start = f.tell()
    magic = f.read(4)
    f.seek(start)
    if magic[:2] == b"PK":
        try:
            archive = zipfile.ZipFile(f)
        except zipfile.BadZipFile:
            raise ValueError(f"{name}: not a valid zip archive") from None
        with archive:
            if _torch_pickle.is_torch_zip(archive):
                return _torch_pickle.read_torch_zip(archive, place)
            aiograd_format = _MANIFEST + ".npy" in archive.namelist()
        f.seek(start)
        if aiograd_format:
            return _load_aiograd_npz(f, name, place)
        arrays = _files.load_npz(f)  # a plain numpy .npz: a flat dict
        return {k: place(v.data, "cpu") for k, v in arrays.items()}
    if magic[:1] == b"\x80":
        raise RuntimeError(
            f"{name}: a pickle file (torch.save's legacy format, or plain pickle): aiograd.load reads "
            "torch's zip checkpoints (torch.save's default since torch 1.6), not pickles"
        )
    if path is not None:
        return _load_safetensors(path, name, place)
    with tempfile.TemporaryDirectory() as tmp:  # (the safetensors checks read a file by name)
        copy = os.path.join(tmp, "file.safetensors")
        with open(copy, "wb") as out:
            shutil.copyfileobj(f, out)
        return _load_safetensors(copy, name, place)


def load(f: FileLike, map_location: MapLocation = None, *, weights_only: bool = True) -> Any:
    """Load what ``save`` (or ``torch.save``, or ``safetensors``, or ``numpy.savez``) wrote to
    ``f``, a path or a seekable binary file object, as ``torch.load`` does: tensors onto the
    device they were saved from, or ``map_location`` (a device, or a dict from saved locations
    to devices). A torch checkpoint is read without torch: only the globals of a weights-only
    checkpoint are allowed (anything else raises ``pickle.UnpicklingError`` naming it), and
    nothing in any file is ever run, so ``weights_only=False`` loads exactly what ``True`` does."""
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be a bool, got {type(weights_only).__name__}")
    place = _placer(map_location)
    name = _files._display_name(f)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as file:
            return _load_file(file, name, path, place)
    return _load_file(f, name, None, place)

