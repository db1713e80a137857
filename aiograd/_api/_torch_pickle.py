"""Reading a torch checkpoint (``torch.save``'s zip format) without torch and without running
pickled code: ``read_torch_zip``.

The archive holds ``<prefix>/data.pkl`` (the object, pickled), ``<prefix>/data/<key>`` (each
storage's raw bytes), ``<prefix>/byteorder`` and ``<prefix>/version``. The pickle is read by an
``Unpickler`` whose ``find_class`` returns stand-ins for the few globals a weights-only
checkpoint names (the tensor and parameter rebuild functions, ``OrderedDict``, the storage
types, the dtypes, ``torch.device``, ``torch.Size``) and refuses every other one with
``pickle.UnpicklingError`` naming it, as ``torch.load(weights_only=True)`` does: nothing in the
file is ever imported or called.
"""

from __future__ import annotations

import _compat_pickle
import collections
import pickle
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core._tensor import Tensor
from .._devices._device import device
from ..nn.parameter import Parameter

__all__ = ["read_torch_zip"]

#: torch's storage classes (``torch.FloatStorage``, ...) by name, as numpy dtypes.
_STORAGE_DTYPES: dict[str, Any] = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128,
    "UntypedStorage": np.uint8,
}
#: torch's dtype objects (``torch.float32``, pickled by name), as numpy dtypes.
_DTYPES: dict[str, Any] = {
    "float64": np.float64, "double": np.float64, "float32": np.float32, "float": np.float32,
    "float16": np.float16, "half": np.float16, "int64": np.int64, "long": np.int64,
    "int32": np.int32, "int": np.int32, "int16": np.int16, "short": np.int16, "int8": np.int8,
    "uint8": np.uint8, "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
}

#: How ``place`` moves a rebuilt host array onto a device: ``place(array, saved_location)``.
Placer = Callable[[np.ndarray[Any, Any], str], Tensor]


class _StorageType:
    """Stands for ``torch.FloatStorage`` etc. in a persistent id: only its dtype matters."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = np.dtype(_STORAGE_DTYPES[name])


class _Storage:
    """A storage read from ``data/<key>``: its elements (host array) and saved location."""

    def __init__(self, array: np.ndarray[Any, Any], location: str) -> None:
        self.array = array
        self.location = location


def _refuse(module: str, name: str, why: str = "was not an allowed global by default") -> pickle.UnpicklingError:
    return pickle.UnpicklingError(
        f"Weights only load failed. Unsupported global: GLOBAL {module}.{name} {why} "
        "(aiograd.load reads tensors, containers and numbers only, and never runs pickled code)."
    )


class _Unpickler(pickle.Unpickler):
    """An unpickler for weights only: see the module's docstring."""

    def __init__(self, file: Any, archive: zipfile.ZipFile, prefix: str, byteorder: str, place: Placer) -> None:
        super().__init__(file)
        self._archive, self._prefix, self._byteorder, self._place = archive, prefix, byteorder, place
        self._storages: dict[str, _Storage] = {}  # by key: views of one storage share it

    def find_class(self, module: str, name: str) -> Any:
        # Python 2's names, which protocol 2 (torch's) writes for builtins: as pickle maps them
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return self._rebuild_tensor_v2
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _rebuild_parameter
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _rebuild_from_type_v2
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module in ("torch", "torch.storage") and name in _STORAGE_DTYPES:
            return _StorageType(name)
        if module == "torch" and name in _DTYPES:
            return np.dtype(_DTYPES[name])
        if module == "torch" and name == "device":
            return _device
        if module == "torch" and name == "Size":
            return tuple
        if module in ("torch", "torch._tensor") and name == "Tensor":
            return Tensor
        if module == "torch.nn.parameter" and name == "Parameter":
            return Parameter
        if module == "torch" and name.endswith("Storage"):  # torch.BFloat16Storage, ...
            raise _refuse(module, name, "is a storage type numpy has no dtype for")
        raise _refuse(module, name)

    def persistent_load(self, pid: Any) -> Any:
        # torch's ('storage', storage_type, key, location, numel)
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str) and isinstance(pid[3], str)):
            raise pickle.UnpicklingError(f"Weights only load failed. Unsupported persistent id {pid!r:.80}")
        _, storage_type, key, location, _numel = pid
        if key not in self._storages:
            try:
                info = self._archive.getinfo(f"{self._prefix}data/{key}")
            except KeyError:
                raise pickle.UnpicklingError(f"the checkpoint has no storage data/{key}") from None
            if info.compress_type != zipfile.ZIP_STORED:  # (torch stores them: no zip bombs here)
                raise pickle.UnpicklingError(f"storage data/{key} is compressed, which torch.save never does")
            raw = self._archive.read(info)
            dtype = storage_type.dtype.newbyteorder("<" if self._byteorder == "little" else ">")
            if len(raw) % dtype.itemsize:
                raise pickle.UnpicklingError(
                    f"storage data/{key} holds {len(raw)} bytes, not a whole number of {storage_type.name} items"
                )
            array = np.frombuffer(raw, dtype).astype(storage_type.dtype)  # (native order, writable)
            self._storages[key] = _Storage(array, location)
        return self._storages[key]

    def _rebuild_tensor_v2(
        self, storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
        backward_hooks: Any, metadata: Any = None,
    ) -> Tensor:
        """torch._utils._rebuild_tensor_v2: a strided view of ``storage``, copied out."""
        if not isinstance(storage, _Storage):
            raise pickle.UnpicklingError("Weights only load failed: a tensor's storage is not a storage")
        shape, strides = tuple(int(n) for n in size), tuple(int(s) for s in stride)
        offset = int(storage_offset)
        if len(shape) != len(strides) or offset < 0 or any(n < 0 for n in shape) or any(s < 0 for s in strides):
            raise pickle.UnpicklingError(f"a tensor of size {shape}, stride {strides}, offset {offset} is malformed")
        if 0 in shape:
            array = np.empty(shape, storage.array.dtype)
        else:
            last = offset + sum((n - 1) * s for n, s in zip(shape, strides))
            if last >= storage.array.size:
                raise pickle.UnpicklingError(
                    f"a tensor of size {shape}, stride {strides}, offset {offset} reaches past its "
                    f"storage of {storage.array.size} elements"
                )
            item = storage.array.itemsize
            view = np.lib.stride_tricks.as_strided(
                storage.array[offset:], shape, tuple(s * item for s in strides), writeable=False
            )
            array = np.array(view, order="C")  # (a tensor of its own: aiograd has no shared storages)
        tensor = self._place(array, storage.location)
        if requires_grad:
            tensor.requires_grad_(True)
        return tensor


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any, state: Any = None) -> Parameter:
    """torch._utils._rebuild_parameter(_with_state): the tensor as a ``Parameter``."""
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError("Weights only load failed: a parameter's data is not a tensor")
    return Parameter(data, requires_grad=bool(requires_grad))


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    """torch._tensor._rebuild_from_type_v2, for ``torch.Tensor``/``Parameter`` only."""
    if new_type not in (Tensor, Parameter):
        raise pickle.UnpicklingError(f"Weights only load failed: cannot rebuild a tensor as {new_type!r:.80}")
    out = func(*args)  # (only what find_class returned can be here)
    if not isinstance(out, Tensor):
        raise pickle.UnpicklingError("Weights only load failed: a rebuilt tensor is not a tensor")
    if new_type is Parameter and not isinstance(out, Parameter):
        out = Parameter(out, requires_grad=out.requires_grad)
    return out


def _device(*args: Any) -> Any:
    """torch.device(...) in a checkpoint, as an aiograd device (its string if none matches)."""
    try:
        return device(*args)
    except Exception:  # a device type aiograd does not know: keep its name
        return ":".join(str(a) for a in args)


def is_torch_zip(archive: zipfile.ZipFile) -> bool:
    """True for an archive ``torch.save`` wrote (one ``<prefix>/data.pkl``)."""
    return _data_pkl(archive) is not None


def _data_pkl(archive: zipfile.ZipFile) -> str | None:
    for name in archive.namelist():
        if name == "data.pkl" or (name.endswith("/data.pkl") and name.count("/") == 1):
            return name
    return None


def read_torch_zip(archive: zipfile.ZipFile, place: Placer) -> Any:
    """The object a torch checkpoint holds, its tensors as aiograd tensors: each rebuilt on the
    host and handed to ``place(array, saved_location)``; ``pickle.UnpicklingError`` for any
    global outside the weights-only set (see the module's docstring)."""
    pkl = _data_pkl(archive)
    if pkl is None:
        raise pickle.UnpicklingError("not a torch checkpoint: the archive has no data.pkl")
    prefix = pkl[: -len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in archive.namelist():
        byteorder = archive.read(prefix + "byteorder").decode("ascii", "replace").strip()
        if byteorder not in ("little", "big"):
            raise pickle.UnpicklingError(f"the checkpoint's byteorder is {byteorder[:20]!r}, not little or big")
    with archive.open(pkl) as f:
        return _Unpickler(f, archive, prefix, byteorder, place).load()
