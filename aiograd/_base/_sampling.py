"""torch's CPU sampling algorithms over a generator's 32-bit words, so that a seed gives torch's
numbers: ``rand``/``uniform_``, ``randn``/``normal_``, ``randint``/``random_``, ``randperm``,
``bernoulli``, ``exponential_`` and ``multinomial`` (ATen's ``DistributionTemplates.h``,
``DistributionsHelper.h``, ``TransformationHelper.h`` and ``randperm_cpu``).

An ``aiograd.Generator`` (``_random.Generator``) is torch's Mersenne Twister; each function
here turns its words into samples exactly as torch's CPU kernels do: a float32 uniform from the
low 24 bits of one word, a float64 one from the low 53 bits of two (the first the high half),
Box-Muller in blocks of 16 for ``randn`` of 16 elements or more and one pair at a time (with
the second value cached in the generator) below that, ``randperm`` by torch's forward
Fisher-Yates. Samples are made in the order torch's serial kernels visit the output: memory
order, so ``t.uniform_()`` on a transposed view fills as torch's does.

A plain ``numpy.random.Generator`` (accepted wherever a generator is) samples with numpy's own
algorithms instead: the same distributions, not torch's values.
"""

from __future__ import annotations

import math
from math import prod
from typing import Any

import numpy as np

from . import _random

__all__ = [
    "bernoulli", "bernoulli_scalar", "exponential", "multinomial", "normal", "random_bits", "random_from_to",
    "randperm", "uniform",
]

_Array = np.ndarray[Any, Any]
_SHIFT = np.uint64(32)
#: torch's ``randperm_cpu`` switches from 32-bit to 64-bit draws here (``uint32 max / 20``).
_RANDPERM_64 = 0xFFFFFFFF // 20


def _torch(gen: np.random.Generator) -> bool:
    return isinstance(gen, _random.Generator)


def _words(gen: np.random.Generator, n: int) -> _Array:
    """The next ``n`` 32-bit words of the Mersenne Twister (torch's ``random()``), as uint32:
    ``integers`` over the whole 32-bit range hands out the bit generator's words unchanged, and
    fills in C (``bit_generator.random_raw`` is three times slower)."""
    return gen.integers(0, 1 << 32, n, dtype=np.uint32)


def _words64(gen: np.random.Generator, n: int) -> _Array:
    """torch's ``random64()``, ``n`` times: two words each, the first the high half."""
    w = _words(gen, 2 * n).astype(np.uint64)
    return (w[0::2] << _SHIFT) | w[1::2]


def _digits(dtype: np.dtype[Any]) -> int:
    """The significand bits of a float dtype (``std::numeric_limits<T>::digits``)."""
    if dtype.name == "bfloat16":
        return 8
    return int(np.finfo(dtype).nmant) + 1


def _uniform_digits(dtype: np.dtype[Any]) -> int:
    """The bits of torch's uniform draws for ``dtype``: 53 for float64, else float's 24 (a
    float16 sample is a float one rounded)."""
    return 53 if dtype.itemsize == 8 else 24


def _unit(gen: np.random.Generator, n: int, digits: int) -> _Array:
    """torch's ``uniform_real_distribution(0, 1)``: ``digits`` random bits over ``2**digits``,
    from one word (up to 32 bits) or two (53), in float64 (exact)."""
    if digits > 32:  # the low 53 bits of (high << 32 | low), summed exactly in float64
        w = _words(gen, 2 * n).reshape(n, 2)
        high = (w[:, 0] & np.uint32((1 << (digits - 32)) - 1)).astype(np.float64)
        high *= 2.0 ** (32 - digits)
        high += w[:, 1] * 2.0**-digits
        return high
    return (_words(gen, n) & np.uint32((1 << digits) - 1)) * 2.0**-digits


def _memory_order(flat: _Array, shape: tuple[int, ...], strides: tuple[int, ...] | None) -> _Array:
    """``flat``, made in the order torch's serial kernels visit an output of these ``strides``
    (memory order: largest stride outermost), laid out in ``shape``'s logical order."""
    if strides is None or len(shape) < 2:
        return flat.reshape(shape)
    axes = sorted(range(len(shape)), key=lambda a: (-abs(strides[a]) if shape[a] > 1 else 0, a))
    if axes == sorted(axes):
        return flat.reshape(shape)
    return flat.reshape([shape[a] for a in axes]).transpose(np.argsort(axes))


def uniform(
    gen: np.random.Generator, shape: tuple[int, ...], dtype: Any, low: float = 0.0, high: float = 1.0,
    strides: tuple[int, ...] | None = None,
) -> _Array:
    """Samples of U[low, high) in ``dtype``, as torch's ``uniform_``: ``x * (to - from) + from``
    with the bounds in ``dtype`` (float32 for float16: torch's accumulator), rounded once for
    float64 (torch's compiled kernel fuses it), in double then rounded to float for float32 and
    float16; a value that rounds to ``to`` becomes ``from``, so the interval stays half-open."""
    dtype = np.dtype(dtype)
    n = prod(shape)
    if not _torch(gen):
        return gen.uniform(low, high, shape).astype(dtype)
    bound = dtype.type if dtype.itemsize >= 4 else np.float32
    lo, hi = bound(low), bound(high)
    x = _unit(gen, n, _uniform_digits(dtype))
    if lo != 0 or hi != 1:
        with np.errstate(over="ignore", invalid="ignore"):
            if dtype.itemsize == 8:
                x = _fused_multiply_add(x, float(hi - lo), float(lo))
            else:  # (the fused rounding cannot show through the rounding to float)
                x *= float(hi - lo)
                x += float(lo)
    values = x.astype(np.float32, copy=False).astype(dtype, copy=False) if dtype.itemsize < 4 else x.astype(dtype, copy=False)
    values[values == dtype.type(hi)] = dtype.type(lo)
    return _memory_order(values, shape, strides)


def _fused_multiply_add(x: _Array, scale: float, shift: float) -> _Array:
    """``x * scale + shift`` rounded once, as an FMA instruction computes it: the product split
    exactly into ``p + e`` (Dekker's two-product, Veltkamp's splitting) and the sum into
    ``s + t`` (Knuth's two-sum), then ``s + (t + e)``; correctly rounded but for ties of the
    last addition, far rarer than the half of all draws that two roundings put an ulp off."""
    split = 134217729.0  # 2**27 + 1
    p = x * scale
    xs = x * split
    x_high = xs - (xs - x)
    x_low = x - x_high
    ss = scale * split
    s_high = ss - (ss - scale)
    s_low = scale - s_high
    e = ((x_high * s_high - p) + x_high * s_low + x_low * s_high) + x_low * s_low
    total = p + shift
    back = total - p
    t = (p - (total - back)) + (shift - back)
    return total + (t + e)


def _box_muller_16(u: _Array) -> _Array:
    """torch's ``normal_fill_16`` on rows of 16 uniforms, in their dtype: the first 8 give the
    radii (``1 - u``, so that the log's argument is in (0, 1]), the last 8 the angles."""
    one = u.dtype.type(1)
    radius = np.sqrt(u.dtype.type(-2) * np.log(one - u[:, :8]))
    theta = u.dtype.type(2 * np.pi) * u[:, 8:]
    return np.concatenate([radius * np.cos(theta), radius * np.sin(theta)], axis=1)


def normal(
    gen: np.random.Generator, shape: tuple[int, ...], dtype: Any, mean: float = 0.0, std: float = 1.0,
    strides: tuple[int, ...] | None = None,
) -> _Array:
    """Samples of N(mean, std**2) in ``dtype``, as torch's ``normal_``: 16 or more contiguous
    elements by ``normal_fill`` (uniforms for all, then Box-Muller in blocks of 16, the last
    block redrawn whole when 16 does not divide the size); fewer, or a strided output, one
    double-precision pair at a time, the pair's second value kept for the next draw."""
    dtype = np.dtype(dtype)
    n = prod(shape)
    if not _torch(gen):
        return gen.normal(mean, std, shape).astype(dtype)
    assert isinstance(gen, _random.Generator)
    contiguous = strides is None or _memory_order(np.arange(n), shape, strides).flags.c_contiguous
    if n >= 16 and contiguous:
        digits = _uniform_digits(dtype)
        # The uniforms are stored in ``dtype`` before the transform, as torch's ``data[i]``, and
        # the transform is computed in float32 below float64 (torch's AVX2 kernel's precision,
        # and numpy's float32 log/sin/cos are five times faster than its float64 ones).
        work = np.dtype(np.float64) if dtype.itemsize == 8 else np.dtype(np.float32)
        data = _unit(gen, n, digits).astype(dtype).astype(work, copy=False)
        blocks = n // 16 * 16
        out = np.empty(n, dtype=work)
        out[:blocks] = _box_muller_16(data[:blocks].reshape(-1, 16)).reshape(-1)
        if n % 16:
            tail = _unit(gen, 16, digits).astype(dtype).astype(work, copy=False)
            out[n - 16 :] = _box_muller_16(tail.reshape(1, 16)).reshape(-1)
        out *= work.type(dtype.type(std))
        out += work.type(dtype.type(mean))
        return out.astype(dtype, copy=False).reshape(shape)
    values = np.empty(n, dtype=np.float64)
    start = 0
    if n and gen._next_double_normal is not None:
        values[0], gen._next_double_normal = gen._next_double_normal, None
        start = 1
    pairs = (n - start + 1) // 2
    if pairs:
        u = _unit(gen, 2 * pairs, 53)
        radius = np.sqrt(-2.0 * np.log1p(-u[1::2]))
        theta = 2.0 * np.pi * u[0::2]
        drawn = np.empty(2 * pairs)
        drawn[0::2], drawn[1::2] = radius * np.cos(theta), radius * np.sin(theta)
        values[start:] = drawn[: n - start]
        if (n - start) % 2:
            gen._next_double_normal = float(drawn[-1])
    return _memory_order((values * std + mean).astype(dtype), shape, strides)


def random_from_to(
    gen: np.random.Generator, shape: tuple[int, ...], low: int, high: int, strides: tuple[int, ...] | None = None
) -> _Array:
    """int64 samples of [low, high), as torch's ``random_(from, to)``/``randint``: one word
    modulo the range below 2**32, a 64-bit draw modulo it from there."""
    if not _torch(gen):
        return gen.integers(low, high, shape, dtype=np.int64)
    n = prod(shape)
    span = (high - low) % (1 << 64)
    bits = _words64(gen, n) if span >= 1 << 32 else _words(gen, n)
    values = (bits % np.uint64(span)).astype(np.int64) + np.int64(low) if n else np.zeros(0, np.int64)
    return _memory_order(values, shape, strides)


def random_bits(gen: np.random.Generator, shape: tuple[int, ...], dtype: Any, strides: tuple[int, ...] | None = None) -> _Array:
    """torch's ``random_()`` without bounds: every value ``dtype`` holds exactly from 0 (int64 and
    float64 from a 64-bit draw, the others from one word; bool the word's low bit)."""
    dtype = np.dtype(dtype)
    n = prod(shape)
    if dtype.kind == "b":
        span = 2
    elif dtype.kind == "f":
        span = (1 << _digits(dtype)) + 1
    else:
        span = int(np.iinfo(dtype).max) + 1
    if not _torch(gen):
        return gen.integers(0, span, shape).astype(dtype)
    bits = _words64(gen, n) if dtype.itemsize == 8 else _words(gen, n)
    return _memory_order((bits % np.uint64(span)).astype(dtype), shape, strides)


def randperm(gen: np.random.Generator, n: int) -> _Array:
    """A random permutation of ``range(n)``, int64, by torch's ``randperm_cpu``: for each ``i``,
    swap ``i`` with ``i + word % (n - i)``."""
    if not _torch(gen):
        return gen.permutation(n).astype(np.int64)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    bits = _words(gen, n - 1) if n < _RANDPERM_64 else _words64(gen, n - 1)
    offsets = (bits % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
    targets = (offsets + np.arange(n - 1)).tolist()
    perm = list(range(n))
    for i, j in enumerate(targets):  # (sequential by nature: each swap sees the ones before)
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


def bernoulli_scalar(gen: np.random.Generator, shape: tuple[int, ...], p: float, strides: tuple[int, ...] | None = None) -> _Array:
    """Booleans true with probability ``p``: torch's ``bernoulli_(float)``, a double uniform below ``p``."""
    if not _torch(gen):
        return gen.random(shape) < p
    # u < p for the 53-bit u = x / 2**53 is x < ceil(p * 2**53), compared on the two words
    # (the high one's low 21 bits first) without making u: dropout's mask, on every step
    n = prod(shape)
    bound = math.ceil(p * 2.0**53)
    w = _words(gen, 2 * n).reshape(n, 2)
    high = w[:, 0] & np.uint32((1 << 21) - 1)
    bound_high, bound_low = np.uint32(bound >> 32), np.uint32(bound & 0xFFFFFFFF)
    keep = high < bound_high
    keep |= (high == bound_high) & (w[:, 1] < bound_low)
    return _memory_order(keep, shape, strides)


def bernoulli(gen: np.random.Generator, probs: _Array, strides: tuple[int, ...] | None = None) -> _Array:
    """Booleans true with probability ``probs`` (elementwise; broadcast to the output already):
    torch's ``bernoulli_(Tensor)``, a double uniform for float64 probabilities, a float one
    (24 bits) for the others."""
    if not _torch(gen):
        return gen.random(probs.shape) < probs
    digits = 53 if probs.dtype == np.float64 else 24
    ordered = _memory_order(np.arange(probs.size), probs.shape, strides)
    u = np.empty(probs.size)
    u[ordered.reshape(-1)] = _unit(gen, probs.size, digits)
    return u.reshape(probs.shape) < probs.astype(np.float64)


def exponential(
    gen: np.random.Generator, shape: tuple[int, ...], dtype: Any, lambd: float = 1.0, strides: tuple[int, ...] | None = None
) -> _Array:
    """Samples of Exp(lambd) in ``dtype``: torch's ``-1 / lambd * log1p(-u)`` of a double uniform."""
    dtype = np.dtype(dtype)
    if not _torch(gen):
        return gen.exponential(1 / lambd, shape).astype(dtype)
    u = _unit(gen, prod(shape), 53)
    return _memory_order((-1.0 / lambd * np.log1p(-u)).astype(dtype), shape, strides)


def multinomial(gen: np.random.Generator, rows: _Array, num_samples: int, replacement: bool) -> _Array:
    """``num_samples`` category indices per row of ``rows`` (weights, checked by the caller), as
    torch's CPU ``multinomial``: without replacement, or for a single sample, the largest of
    ``p / q`` with ``q ~ Exp(1)`` (``argmax``, or ``topk``); with replacement, a double uniform
    per sample searched in the row's normalised cumulative sum (in the weights' dtype)."""
    if not replacement or num_samples == 1:
        if _torch(gen):
            q = exponential(gen, rows.shape, rows.dtype)
        else:
            q = gen.exponential(1.0, rows.shape).astype(rows.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / q
        if num_samples == 1:
            return np.argmax(keys, axis=1).reshape(-1, 1).astype(np.int64)
        return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)
    out = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for r, row in enumerate(rows):
        cdf = np.cumsum(row, dtype=row.dtype)
        total = cdf[-1]
        if total > 0:
            cdf = cdf / total
        cdf[-1] = 1
        u = _unit(gen, num_samples, 53) if _torch(gen) else gen.random(num_samples)
        out[r] = np.searchsorted(cdf.astype(np.float64), u, side="left")
    return out
