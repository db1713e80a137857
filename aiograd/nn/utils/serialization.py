"""Weights in files: ``save_safetensors``/``load_safetensors`` (the safetensors format, through
the ``safetensors`` package's numpy API, so files written by ``safetensors.torch.save_file`` load
here and the other way round) and ``save_npz``/``load_npz`` (numpy's ``.npz``), each a flat
``{name: Tensor}`` mapping such as ``module.state_dict()``; ``save``/``load`` pick the format by
the file's suffix.

Loading is safe for a file from anywhere: before any array is read, the file's own description of
its arrays (each ``.npy`` header in an ``.npz``, the JSON header of a ``.safetensors`` file) is
checked against the file: plain numeric dtypes only (no pickle, no object or structured dtypes),
declared sizes that match the data, and at most ``max_bytes`` of array data in all (default
``MAX_BYTES``, 4 GiB; ``None``: no bound), so that a small file cannot expand to gigabytes in
memory (a zip bomb). A file that fails raises a one-line ``ValueError`` naming the file and the
problem.

    save_safetensors(model.state_dict(), "model.safetensors")
    model.load_state_dict(load_safetensors("model.safetensors"))
"""

from __future__ import annotations

import json
import os
import struct
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from typing import IO, Any, NamedTuple, cast

import numpy as np
from numpy.lib import format as _npy_format

from ..._core._tensor import Tensor
from ..._devices._device import CPU, device_type, placement

__all__ = ["MAX_BYTES", "load", "load_npz", "load_safetensors", "save", "save_npz", "save_safetensors"]

_INSTALL = "pip install 'aiograd[safetensors]'"

#: The default bound on the bytes of array data one file may load (all its arrays together).
MAX_BYTES = 4 << 30

#: Array dtypes that load: bool, integers, floating point, complex (numpy's kinds), no others.
_NUMERIC_KINDS = frozenset("biufc")
#: safetensors dtypes that load, with their item sizes (those of ``safetensors.numpy``).
_SAFETENSORS_DTYPES = {
    "BOOL": 1, "U8": 1, "I8": 1, "U16": 2, "I16": 2, "F16": 2, "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8, "C64": 8,
}
#: Bytes read at a time from an .npz entry (numpy reads its arrays in 256 KiB pieces).
_CHUNK = 1 << 20
#: The most bytes an .npy header takes: its prefix and numpy's ``max_header_size``.
_MAX_NPY_HEADER = 12 + 10_000
#: safetensors' own bound on its JSON header.
_MAX_SAFETENSORS_HEADER = 100_000_000


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
        # (np.asarray, not np.ascontiguousarray, which makes a 0-d array 1-d: a 0-d buffer
        # such as BatchNorm's num_batches_tracked must load in torch as 0-d)
        arrays[name] = np.asarray(data, order="C")
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


def _display_name(file: Any) -> str:
    """The file's base name for messages (never its directories), on one line."""
    try:
        path = os.fspath(file)
    except TypeError:  # a file object: its name, if it has one
        path = getattr(file, "name", None)
        if not isinstance(path, (str, bytes)):
            return "<file>"
    name = os.path.basename(os.fsdecode(path))
    return name if name.isprintable() else repr(name)


def _bound(max_bytes: int | None) -> int | None:
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
                                  or max_bytes < 0):
        raise ValueError(f"max_bytes must be a non-negative int or None, got {max_bytes!r}")
    return max_bytes


def _over(nbytes: int, max_bytes: int | None) -> bool:
    return max_bytes is not None and nbytes > max_bytes


class _ByteCount:
    """The bytes the arrays of one file declare, refused over ``max_bytes``: each array's, then
    all of them together (``kind``, "tensors" or "arrays", names them in the message)."""

    def __init__(self, name: str, kind: str, max_bytes: int | None) -> None:
        self.name, self.kind, self.max_bytes = name, kind, max_bytes
        self.total = 0

    def of(self, what: str, itemsize: int, shape: Sequence[int], dtype: object) -> int:
        """The bytes of ``what``: ``shape`` of ``itemsize``-byte items of ``dtype``."""
        declared = itemsize
        for n in shape:
            declared *= n
        if _over(declared, self.max_bytes):
            raise ValueError(f"{self.name}: {what} declares {declared} bytes of {dtype} "
                             f"(over max_bytes={self.max_bytes})")
        return declared

    def add(self, declared: int) -> None:
        """Count an array's bytes (checked by ``of``) into the file's total."""
        self.total += declared
        if _over(self.total, self.max_bytes):
            raise ValueError(f"{self.name}: the {self.kind} hold {self.total} bytes or more in all "
                             f"(over max_bytes={self.max_bytes})")


def _check_safetensors(filename: str, max_bytes: int | None) -> None:
    """Check a ``.safetensors`` file's header against the file, without loading its data: the
    header's length, each tensor's dtype, shape and offsets, and the total against ``max_bytes``."""
    name = _display_name(filename)
    with open(filename, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ValueError(f"{name}: not a safetensors file ({size} bytes, too short for its header)")
        (length,) = struct.unpack("<Q", f.read(8))
        if length > size - 8 or length > _MAX_SAFETENSORS_HEADER:
            raise ValueError(f"{name}: the header declares {length} bytes, past the end of the "
                             f"file ({size} bytes)" if length > size - 8 else
                             f"{name}: the header declares {length} bytes, over safetensors' "
                             f"bound of {_MAX_SAFETENSORS_HEADER}")
        raw = f.read(length)
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise ValueError(f"{name}: the header is not valid JSON") from None
    if not isinstance(header, dict):
        raise ValueError(f"{name}: the header is not a JSON object")
    data_size = size - 8 - length
    count = _ByteCount(name, "tensors", max_bytes)
    for key, info in header.items():
        if key == "__metadata__":
            continue
        if not (isinstance(info, dict) and isinstance(info.get("dtype"), str)
                and _is_int_list(info.get("shape")) and _is_int_list(info.get("data_offsets"))
                and len(info["data_offsets"]) == 2):
            raise ValueError(f"{name}: tensor {key!r} has a malformed entry in the header "
                             "(expected dtype, shape and data_offsets)")
        dtype, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{name}: tensor {key!r} has dtype {dtype[:20]!r}, not one that "
                             f"loads ({', '.join(_SAFETENSORS_DTYPES)})")
        declared = count.of(f"tensor {key!r}", _SAFETENSORS_DTYPES[dtype], shape, dtype)
        if end > data_size:
            raise ValueError(f"{name}: tensor {key!r} has data offsets [{begin}, {end}] past the "
                             f"end of the file's {data_size} bytes of data")
        if begin > end:
            raise ValueError(f"{name}: tensor {key!r} has data offsets [{begin}, {end}] that end "
                             "before they begin")
        if end - begin != declared:
            raise ValueError(f"{name}: tensor {key!r} declares {declared} bytes of {dtype} "
                             f"(shape {tuple(shape)}) but its offsets hold {end - begin}")
        count.add(declared)


def _is_int_list(value: Any) -> bool:
    return isinstance(value, list) and all(type(n) is int and n >= 0 for n in value)


def load_safetensors(
    filename: str | os.PathLike[str], device: Any = "cpu", *, max_bytes: int | None = MAX_BYTES
) -> dict[str, Tensor]:
    """Read a ``.safetensors`` file (e.g. from ``safetensors.torch.save_file``) as
    ``{name: Tensor}`` on ``device``, ready for ``module.load_state_dict``.

    The header is checked first (see the module's docstring): ``ValueError`` for a file whose
    header does not describe its data, a dtype that does not load, or more than ``max_bytes``
    of tensors (``None``: no bound)."""
    st = _safetensors_numpy()
    path = os.fspath(filename)
    _check_safetensors(path, _bound(max_bytes))
    from safetensors import SafetensorError

    try:
        arrays = st.load_file(path)
    except SafetensorError as exc:  # what the header check leaves: overlapping offsets, ...
        message = " ".join(str(exc).split())
        raise ValueError(f"{_display_name(path)}: {message}") from None
    return _tensors(arrays, device)


def save_npz(tensors: Mapping[str, Tensor], file: Any) -> None:
    """Write ``{name: Tensor}`` to an uncompressed ``.npz`` archive (``numpy.savez``)."""
    np.savez(file, **cast("dict[str, Any]", _host_arrays(tensors)))


def _npy_header(entry: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    version = _npy_format.read_magic(entry)
    if version == (1, 0):
        return _npy_format.read_array_header_1_0(entry)
    if version == (2, 0):
        return _npy_format.read_array_header_2_0(entry)
    raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")


class _Entry(NamedTuple):
    """An ``.npz`` entry that passed the checks: where its data starts, and its array."""

    info: zipfile.ZipInfo
    header_size: int
    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype[Any]
    nbytes: int


def _check_npz(archive: zipfile.ZipFile, name: str, max_bytes: int | None) -> list[_Entry]:
    """Check each entry of an ``.npz`` before any array is read: its name, its compression, its
    ``.npy`` header (a plain numeric dtype, a shape whose bytes are the entry's data), and the
    bytes of all arrays against ``max_bytes``."""
    entries = []
    seen: set[str] = set()
    count = _ByteCount(name, "arrays", max_bytes)
    for info in archive.infolist():
        entry = info.filename
        if not entry.endswith(".npy"):
            raise ValueError(f"{name}: entry {entry!r} is not an .npy array")
        if entry in seen:
            raise ValueError(f"{name}: entry {entry!r} appears twice")
        seen.add(entry)
        if info.flag_bits & 0x1:
            raise ValueError(f"{name}: entry {entry!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # bzip2 and lzma decompress a read's worth without an output bound: not these.
            raise ValueError(f"{name}: entry {entry!r} uses zip compression method "
                             f"{info.compress_type}: only stored and deflated entries load")
        if _over(info.file_size - _MAX_NPY_HEADER, max_bytes):  # over even with the largest header
            raise ValueError(f"{name}: entry {entry!r} is {info.file_size} bytes uncompressed "
                             f"(over max_bytes={max_bytes})")
        try:
            with archive.open(info) as f:
                shape, fortran_order, dtype = _npy_header(f)
                header_size = f.tell()
        except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
            raise ValueError(f"{name}: entry {entry!r} has no valid .npy header "
                             f"({' '.join(str(exc).split())[:200]})") from None
        if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
            raise ValueError(f"{name}: entry {entry!r} has dtype {str(dtype)[:60]}: only bool, "
                             "integer, floating point and complex arrays load")
        if any(n < 0 for n in shape):
            raise ValueError(f"{name}: entry {entry!r} declares a negative shape {shape}")
        declared = count.of(repr(entry), dtype.itemsize, shape, dtype)
        held = info.file_size - header_size
        if declared != held:
            raise ValueError(f"{name}: {entry!r} declares {declared} bytes of {dtype} "
                             f"(shape {shape}) but holds {held}")
        count.add(declared)
        entries.append(_Entry(info, header_size, shape, fortran_order, dtype, declared))
    return entries


def _read_npy_data(f: IO[bytes], entry: _Entry) -> np.ndarray[Any, Any]:
    """The array of a checked entry: its header skipped (already read), its data read as raw
    bytes into a new array of the declared dtype and shape (so no pickle can run: numpy's
    ``read_array(allow_pickle=False)`` without parsing the header again)."""
    if len(f.read(entry.header_size)) != entry.header_size:
        raise EOFError("the header ends early")
    raw = np.empty(entry.nbytes, np.uint8)
    view = raw.data
    pos = 0
    while pos < entry.nbytes:
        n = f.readinto(view[pos:pos + _CHUNK])  # type: ignore[attr-defined]
        if not n:
            raise EOFError(f"expected {entry.nbytes} bytes of data, got {pos}")
        pos += n
    array: np.ndarray[Any, Any] = raw.view(entry.dtype)
    return array.reshape(list(entry.shape), order="F" if entry.fortran_order else "C")


def load_npz(file: Any, device: Any = "cpu", *, max_bytes: int | None = MAX_BYTES) -> dict[str, Tensor]:
    """Read an ``.npz`` archive (``numpy.savez`` or ``savez_compressed``) as ``{name: Tensor}``
    on ``device``.

    Every entry is checked before any array is read (see the module's docstring):
    ``ValueError`` for an entry that is not an ``.npy`` array, a dtype that is not plain
    numeric, a header that does not describe the entry's data, or more than ``max_bytes`` of
    arrays (``None``: no bound). As ``numpy.load(allow_pickle=False)``: no pickle ever runs."""
    name = _display_name(file)
    max_bytes = _bound(max_bytes)
    try:
        archive = zipfile.ZipFile(file)
    except zipfile.BadZipFile:
        raise ValueError(f"{name}: not an .npz archive (not a zip file)") from None
    with archive:
        entries = _check_npz(archive, name, max_bytes)
        arrays = {}
        for entry in entries:
            try:
                with archive.open(entry.info) as f:
                    arrays[entry.info.filename[:-4]] = _read_npy_data(f, entry)
            except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error) as exc:
                raise ValueError(f"{name}: entry {entry.info.filename!r} is corrupt "
                                 f"({' '.join(str(exc).split())[:200]})") from None
    return _tensors(arrays, device)


def _format(path: Any) -> str:
    suffix: str = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in (".safetensors", ".npz"):
        raise ValueError(f"cannot tell the format of {os.fspath(path)!r}: use a .safetensors or .npz file")
    return suffix


def save(tensors: Mapping[str, Tensor], path: str | os.PathLike[str]) -> None:
    """``save_safetensors`` or ``save_npz``, by the suffix of ``path``."""
    if _format(path) == ".npz":
        save_npz(tensors, path)
    else:
        save_safetensors(tensors, path)


def load(
    path: str | os.PathLike[str], device: Any = "cpu", *, max_bytes: int | None = MAX_BYTES
) -> dict[str, Tensor]:
    """``load_safetensors`` or ``load_npz``, by the suffix of ``path``: each checks the file
    before reading its arrays, and refuses more than ``max_bytes`` of them (``None``: no
    bound) with a one-line ``ValueError`` naming the file."""
    if _format(path) == ".npz":
        return load_npz(path, device, max_bytes=max_bytes)
    return load_safetensors(path, device, max_bytes=max_bytes)
