"""Window functions and ``histogram``, as PyTorch's: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window`` (computed in the requested dtype with PyTorch's steps,
so float32 windows round as its do), and ``histogram(input, bins, range=, weight=, density=)``
returning ``(hist, bin_edges)``. None has a gradient.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import get_default_dtype, scalar_type_name
from ._division_util import not_implemented
from ._reduce_util import invalid_arguments
from ._registry import op
from ._util import UNSET, Tensor, attach, edge_of, needs_grad, not_tensor, wrap

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "histogram"]

#: C++'s names of the dtypes, as torch's histogram messages print them.
_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "bool": "bool",
            "float16": "c10::Half", "int16": "short int", "int8": "signed char", "uint8": "unsigned char"}

HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])  # type: ignore[name-match]
HistogramResult.__module__ = "aiograd.return_types"
HistogramResult.__doc__ = "The ``(hist, bin_edges)`` pair returned by ``histogram``."


def _window(fname: str, window_length: int, periodic: bool, dtype: Any, requires_grad: bool, body: Any) -> Tensor:
    dt = np.dtype(get_default_dtype() if dtype is None else dtype)
    if dt.kind != "f":
        raise RuntimeError(f"{fname} expects floating point dtypes, got: TensorOptions(dtype={scalar_type_name(dt)})")
    if window_length < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got window_length={window_length}")
    if window_length == 0:
        data = np.zeros(0, dtype=dt)
    elif window_length == 1:
        data = np.ones(1, dtype=dt)
    else:
        n = window_length + 1 if periodic else window_length
        data = body(np.arange(n, dtype=dt), n, dt)[:window_length]
    out = wrap(np.ascontiguousarray(data))
    if requires_grad:
        out.requires_grad_(True)
    return out


def _hamming(x: Any, n: int, dt: Any, alpha: float, beta: float) -> Any:
    return np.cos(x * dt.type(2 * math.pi / (n - 1))) * dt.type(-beta) + dt.type(alpha)


_HAMMING_FORMS = tuple(
    f"int window_length, {lead}*, torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
    "bool pin_memory = False, bool requires_grad = False"
    for lead in ("", "bool periodic, ", "bool periodic, float alpha, ", "bool periodic, float alpha, float beta, "))


@op()
def hamming_window(window_length: int, periodic: bool = UNSET, alpha: float = UNSET, beta: float = UNSET, *,
                   dtype: DTypeLike | None = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))`` (periodic: of length N + 1, the
    last dropped; ``alpha`` 0.54 and ``beta`` 0.46 by default), as ``torch.hamming_window``:
    ``alpha`` only with ``periodic``, ``beta`` only with ``alpha`` (its four forms)."""
    if (alpha is not UNSET and periodic is UNSET) or (beta is not UNSET and alpha is UNSET):
        given = {"periodic": periodic, "alpha": alpha, "beta": beta, "dtype": dtype if dtype is not None else UNSET}
        raise invalid_arguments("hamming_window", _HAMMING_FORMS, window_length, **given)
    a = 0.54 if alpha is UNSET else alpha
    b = 0.46 if beta is UNSET else beta
    return _window("hamming_window", window_length, True if periodic is UNSET else periodic, dtype, requires_grad,
                   lambda x, n, dt: _hamming(x, n, dt, a, b))


@op()
def hann_window(window_length: int, periodic: bool = True, *, dtype: DTypeLike | None = None,
                requires_grad: bool = False) -> Tensor:
    """The Hann window (a Hamming window with ``alpha = beta = 0.5``), as ``torch.hann_window``."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   lambda x, n, dt: _hamming(x, n, dt, 0.5, 0.5))


def _blackman(x: Any, n: int, dt: Any) -> Any:
    w = x * dt.type(math.pi / (n - 1))
    return np.cos(w * dt.type(4)) * dt.type(0.08) - np.cos(w * dt.type(2)) * dt.type(0.5) + dt.type(0.42)


@op()
def blackman_window(window_length: int, periodic: bool = True, *, dtype: DTypeLike | None = None,
                    requires_grad: bool = False) -> Tensor:
    """The Blackman window, as ``torch.blackman_window``."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, _blackman)


def _bartlett(x: Any, n: int, dt: Any) -> Any:
    w = x * dt.type(2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    w[half:] = w[half:] * dt.type(-1) + dt.type(2)
    return w


@op()
def bartlett_window(window_length: int, periodic: bool = True, *, dtype: DTypeLike | None = None,
                    requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window, as ``torch.bartlett_window``."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, _bartlett)


@op()  # (no derivative: its ``NotImplemented`` node is not a rule)
def histogram(input: Tensor, bins: int | Tensor = 100, *, range: tuple[float, float] | None = None,
              weight: Tensor | None = None, density: bool = False) -> Any:
    """``(hist, bin_edges)`` of ``input``'s elements, as ``torch.histogram``: ``bins`` equal bins
    over ``range`` (the data's by default, widened by 0.5 each way if a point) or the given
    increasing edges; the last bin includes its right edge; ``weight`` sums weights instead of
    counting, ``density`` normalises to unit area. Floating point; no derivative (a backward
    through it raises, as PyTorch's)."""
    if not isinstance(input, Tensor):
        raise not_tensor("histogram", input)
    x = input.data
    if x.dtype.kind != "f":
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, but got "
                           f"input {scalar_type_name(x.dtype).lower()} and bins float") if isinstance(bins, Tensor) \
            else NotImplementedError(f"\"histogram_cpu\" not implemented for '{scalar_type_name(x.dtype)}'")
    flat = x.reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.data.astype(x.dtype)
        if edges.ndim != 1:
            raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension, but got {edges.ndim} "
                               "dimensions")
        if edges.size < 1:
            raise RuntimeError("torch.histogram(): bins tensor should have at least 1 element, but got 0 elements")
    else:
        n = int(bins)
        if n <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif flat.size:
            lo, hi = float(flat.min()), float(flat.max())
        else:
            lo = hi = 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo:g} max {hi:g} for "
                               "dimension 0")
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"torch.histogram(): range of [{lo:g}, {hi:g}] is not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, n + 1).astype(x.dtype)
    nb = edges.size - 1
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"[{flat.size}, 1] and weight with shape {list(weight.shape)}")
        if weight.data.dtype != x.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                               f"have the same dtype, but got input({_C_NAMES.get(x.dtype.name, x.dtype.name)}), and "
                               f"weight({_C_NAMES.get(weight.data.dtype.name, weight.data.dtype.name)})")
    w = None if weight is None else weight.data.reshape(-1)
    keep = (flat >= edges[0]) & (flat <= edges[-1]) if nb > 0 else np.zeros(flat.shape, dtype=bool)
    pos = np.clip(np.searchsorted(edges, flat[keep], side="right") - 1, 0, max(nb - 1, 0))
    hist = np.bincount(pos, weights=None if w is None else w[keep].astype(np.float64), minlength=nb)[:nb]
    hist = hist.astype(x.dtype)
    if density and nb:
        widths = np.diff(edges)
        hist = (hist / (hist.sum() * widths)).astype(x.dtype)
    out = HistogramResult(wrap(hist), wrap(np.ascontiguousarray(edges)))
    operands = [t for t in (input, bins, weight) if isinstance(t, Tensor)]
    if needs_grad(*operands):  # PyTorch's: no derivative, a ``NotImplemented`` node whose backward raises
        node: Any = attach(not_implemented("histogram")(tuple(edge_of(t) for t in operands)), *out)
        node.num_inputs = 2
    return out


TENSOR_METHODS = {"histogram": histogram}
