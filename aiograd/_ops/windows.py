"""Window functions and ``histogram``, as PyTorch's: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window`` (computed in the requested dtype with PyTorch's steps,
so float32 windows round as its do), and ``histogram(input, bins, range=, weight=, density=)``
returning ``(hist, bin_edges)``. None has a gradient.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype, scalar_type_name
from ._registry import op
from ._util import Tensor, not_tensor, wrap

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "histogram"]

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


@op()
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))`` (periodic: of length N + 1, the
    last dropped), as ``torch.hamming_window``."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   lambda x, n, dt: _hamming(x, n, dt, alpha, beta))


@op()
def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                requires_grad: bool = False) -> Tensor:
    """The Hann window (a Hamming window with ``alpha = beta = 0.5``), as ``torch.hann_window``."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   lambda x, n, dt: _hamming(x, n, dt, 0.5, 0.5))


def _blackman(x: Any, n: int, dt: Any) -> Any:
    w = x * dt.type(math.pi / (n - 1))
    return np.cos(w * dt.type(4)) * dt.type(0.08) - np.cos(w * dt.type(2)) * dt.type(0.5) + dt.type(0.42)


@op()
def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The Blackman window, as ``torch.blackman_window``."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, _blackman)


def _bartlett(x: Any, n: int, dt: Any) -> Any:
    w = x * dt.type(2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    w[half:] = w[half:] * dt.type(-1) + dt.type(2)
    return w


@op()
def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window, as ``torch.bartlett_window``."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, _bartlett)


@op()
def histogram(input: Tensor, bins: int | Tensor = 100, *, range: tuple[float, float] | None = None,
              weight: Tensor | None = None, density: bool = False) -> Any:
    """``(hist, bin_edges)`` of ``input``'s elements, as ``torch.histogram``: ``bins`` equal bins
    over ``range`` (the data's by default, widened by 0.5 each way if a point) or the given
    increasing edges; the last bin includes its right edge; ``weight`` sums weights instead of
    counting, ``density`` normalises to unit area. Floating point; no gradient."""
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
    w = None if weight is None else weight.data.reshape(-1)
    keep = (flat >= edges[0]) & (flat <= edges[-1]) if nb > 0 else np.zeros(flat.shape, dtype=bool)
    pos = np.clip(np.searchsorted(edges, flat[keep], side="right") - 1, 0, max(nb - 1, 0))
    hist = np.bincount(pos, weights=None if w is None else w[keep].astype(np.float64), minlength=nb)[:nb]
    hist = hist.astype(x.dtype)
    if density and nb:
        widths = np.diff(edges)
        hist = (hist / (hist.sum() * widths)).astype(x.dtype)
    return HistogramResult(wrap(hist), wrap(np.ascontiguousarray(edges)))


TENSOR_METHODS = {"histogram": histogram}
