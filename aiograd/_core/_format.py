"""``repr`` in PyTorch's style: ``tensor([1., 2.], device='sim:0', requires_grad=True)``.

The layout is torch's (``torch/_tensor_str.py``), character for character: one number format
for the whole tensor (:mod:`._format_numbers`), rows wrapped at ``linewidth`` under their opening
bracket, long tensors summarised to their edges, then the suffixes. ``set_printoptions`` sets the
knobs, for the whole process, as torch's does. ``str(t)`` is ``repr(t)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import default_complex_dtype, get_default_dtype
from ._format_numbers import NumberFormatter, format_complex

if TYPE_CHECKING:
    from .._core._tensor import Tensor


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4  # decimals of fixed and scientific notation
    threshold: float = 1000  # more elements than this: print the edges only
    edgeitems: int = 3  # elements kept at each end of a summarised dimension
    linewidth: int = 80  # characters per line, before a row wraps
    sci_mode: bool | None = None  # None: chosen per tensor


_OPTIONS = _PrintOptions()

#: ``set_printoptions``' profiles: all four numbers at once (``sci_mode`` is apart).
_PROFILES = {
    "default": _PrintOptions(),
    "short": _PrintOptions(precision=2, edgeitems=2),
    "full": _PrintOptions(threshold=math.inf),
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, for the whole process (torch's ``set_printoptions``).

    Args:
        precision: decimals of floating point numbers (default 4).
        threshold: a tensor of more elements than this prints only ``edgeitems`` at each end
            of each dimension, with ``...`` between (default 1000).
        edgeitems: the elements kept at each end when summarising (default 3).
        linewidth: the characters per line before a row wraps (default 80).
        profile: ``"default"``, ``"short"`` (precision 2, edgeitems 2) or ``"full"`` (never
            summarise) sets the four above first; the other arguments then override it.
        sci_mode: True or False forces scientific notation on or off; None (the default, and
            what every call without it restores) lets each tensor choose from its values.

    ```python
    import aiograd

    aiograd.set_printoptions(precision=2)
    print(aiograd.tensor([1.12345]))  # tensor([1.12])
    aiograd.set_printoptions(threshold=5)
    print(aiograd.arange(10))  # tensor([0, 1, 2,  ..., 7, 8, 9])
    aiograd.set_printoptions(profile="default")
    print(aiograd.tensor([1.12345]))  # tensor([1.1235])
    ```
    """
    if profile in _PROFILES:  # as torch: an unknown profile is ignored
        base = _PROFILES[profile]
        _OPTIONS.precision, _OPTIONS.threshold = base.precision, base.threshold
        _OPTIONS.edgeitems, _OPTIONS.linewidth = base.edgeitems, base.linewidth
    if precision is not None:
        _OPTIONS.precision = precision
    if threshold is not None:
        _OPTIONS.threshold = threshold
    if edgeitems is not None:
        _OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTIONS.linewidth = linewidth
    _OPTIONS.sci_mode = sci_mode  # (always: a call without it goes back to automatic)


# Dtypes a reader can infer from the printed values, with the default float dtype and its complex
# one (as torch's repr: float32 goes unsaid, float64 is spelled out unless it is the default);
# any other dtype is spelled out. (Not for an empty tensor, whose dtype shows unless default.)
_IMPLIED = {np.dtype(np.int64), np.dtype(np.bool_)}


def format_tensor(t: Tensor, data: Any = None) -> str:
    """``repr(t)``; ``data`` is ``t``'s data as a numpy array where it is not one (a host copy
    of a CUDA tensor's)."""
    if data is None:
        data = t.data
    prefix = "tensor("
    indent = len(prefix)
    default = get_default_dtype()
    # PyTorch's order: device, size (of an empty tensor), dtype, then grad_fn or requires_grad.
    extras = [] if t._device.type == "cpu" else [f"device='{t._device}'"]
    if data.size == 0:
        if data.ndim != 1:
            extras.append(f"size={tuple(data.shape)}")
        if data.dtype != default:  # no values to tell an int64 by
            extras.append(f"dtype={data.dtype}")
        body = "[]"
    else:
        if not _OPTIONS.edgeitems:  # as torch: with no edges to show, the shape (summarised or not)
            extras.append(f"size={tuple(data.shape)}")
        if data.dtype not in _IMPLIED and data.dtype not in (default, default_complex_dtype()):
            extras.append(f"dtype={data.dtype}")
        body = _body(data, indent)
    try:
        grad_fn = t.grad_fn
    except RuntimeError:  # a view that may no longer be used in autograd (its base changed)
        extras.append("grad_fn=<Invalid>")
    else:
        if grad_fn is not None:
            extras.append(f"grad_fn=<{grad_fn.name()}>")
        elif t._requires_grad:
            extras.append("requires_grad=True")
    return _add_suffixes(prefix + body, extras, indent)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """``text`` and its suffixes, each after ", " or, past ``linewidth``, on a line of its own
    under the first bracket."""
    parts = [text]
    # torch's count, kept for the same breaks: two more than the last line's length (with no
    # line break, rfind's -1 adds one more again).
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"


# ------------------------------------------------------------------------------------ the body
def _summarised(data: np.ndarray, edgeitems: int) -> np.ndarray:
    """The elements a summarised ``data`` prints: ``edgeitems`` at each end of each dimension
    longer than twice that. (As torch's: with ``edgeitems`` 0, a 1-d tensor keeps all of its
    elements, as ``a[-0:]`` is all of ``a``, and a deeper one none.)"""
    if data.ndim >= 2 and not edgeitems:
        return data[(slice(0, 0),) * data.ndim]
    if data.ndim == 1 and not edgeitems:
        return data
    for axis, n in enumerate(data.shape):
        if n > 2 * edgeitems:
            kept = np.r_[0:edgeitems, n - edgeitems : n]
            data = np.take(data, kept, axis=axis)
    return data


def _body(data: np.ndarray, indent: int) -> str:
    """The bracketed values of a non-empty tensor, its first line starting at column ``indent``."""
    opts = _OPTIONS
    summarise = data.size > opts.threshold
    shown = _summarised(data, opts.edgeitems) if summarise else data
    if data.dtype.kind == "c":
        real = NumberFormatter(np.real(shown), opts.precision, opts.sci_mode)
        imag: NumberFormatter | None = NumberFormatter(np.imag(shown), opts.precision, opts.sci_mode)
    else:
        real, imag = NumberFormatter(shown, opts.precision, opts.sci_mode), None

    def number(value: Any) -> str:
        return real.format(value) if imag is None else format_complex(value, real, imag)

    # Each element's width with its ", "; a complex one adds the imaginary part and its "j".
    element = real.width + 2 + (0 if imag is None else imag.width + 1)
    edge = opts.edgeitems

    def nested(a: np.ndarray, indent: int) -> str:
        if a.ndim == 0:
            return number(a.item())
        n = len(a)
        cut = summarise and n > 2 * edge  # n > 0 here, so always cut with edgeitems 0
        if a.ndim == 1:
            if summarise and not edge:
                items = ["..."]
            elif cut:  # " ...": joined by ", ", the gap reads ",  ...,"
                items = [*map(number, a[:edge].tolist()), " ...", *map(number, a[n - edge :].tolist())]
            else:
                items = [number(v) for v in a.tolist()]
            per_line = max(1, (opts.linewidth - indent) // element)
            lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
        rows = [*range(edge), -1, *range(n - edge, n)] if cut else range(n)
        slices = ["..." if i < 0 else nested(a[i], indent + 1) for i in rows]
        # Rows of a matrix on consecutive lines, matrices of a 3-d tensor a blank line apart, ...
        return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"

    return nested(data, indent)


#: PyTorch's legacy tensor type names by dtype (``torch.FloatTensor``), as its error messages
#: print them; aiograd prints ``aiograd.FloatTensor``.
_LEGACY_NAMES = {
    "float16": "HalfTensor", "bfloat16": "BFloat16Tensor", "float32": "FloatTensor",
    "float64": "DoubleTensor", "int8": "CharTensor", "uint8": "ByteTensor", "int16": "ShortTensor",
    "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}


def legacy_type_name(t: Tensor) -> str:
    """``aiograd.FloatTensor`` (``aiograd.sim.FloatTensor`` off the CPU): the name PyTorch's
    messages give a tensor's type (``Tensor.type()``)."""
    kind = _LEGACY_NAMES.get(str(t.data.dtype), f"{t.data.dtype}Tensor")
    device = t._device.type
    return f"aiograd.{kind}" if device == "cpu" else f"aiograd.{device}.{kind}"

