"""``poisson(rates, generator=None)``, as ``torch.poisson``: a Poisson sample per rate, drawn
with torch's CPU algorithm (ATen's ``sample_poisson`` in ``Distributions.cpp``, adapted from
numpy's legacy ``distributions.c``) from torch's double uniforms (``standard_uniform``: the low
53 bits of two Mersenne Twister words), one element after the other in the output's order, so
that after ``aiograd.manual_seed(s)`` the samples are torch's after ``torch.manual_seed(s)``:

- rate >= 10: Hörmann's transformed rejection (PTRS, 1993), two uniforms per try;
- 0 < rate < 10: the product of uniforms until it falls to ``exp(-rate)`` or below;
- rate 0: 0, no draw; a negative or NaN rate: torch's error (the elements before it drawn).

The gradient is zero (derivatives.yaml's ``poisson: zeros_like(self)``, node
``PoissonBackward0``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Any

import numpy as np

from .._base import _random, _sampling
from .._base._dtypes import scalar_type_name
from .._devices._device import device_type
from ._registry import backward, op
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor

__all__ = ["poisson"]

_INT64_MIN = -(1 << 63)


class _Uniforms:
    """torch's ``standard_uniform`` draws, one at a time, made in blocks: a block drawn ahead is
    given back at the end (the generator restored, then advanced by what was used), so the
    generator ends where torch's does."""

    def __init__(self, gen: np.random.Generator, expected: int) -> None:
        self.gen, self.block = gen, max(64, expected)
        self.buf: Any = np.empty(0)
        self.pos = 0
        self.state: Any = None

    def next(self) -> float:
        if self.pos == self.buf.size:
            self.state = self.gen.bit_generator.state
            self.buf, self.pos = _sampling._unit(self.gen, self.block, 53), 0
        self.pos += 1
        return float(self.buf[self.pos - 1])

    def close(self) -> None:
        if self.state is not None and self.pos < self.buf.size:
            self.gen.bit_generator.state = self.state
            _sampling._words(self.gen, 2 * self.pos)


def _as_int64(x: float) -> int:
    """C's ``(int64_t)x`` as an x86 CPU computes it: out of range or NaN is INT64_MIN."""
    if x != x or not -9.223372036854775808e18 <= x < 9.223372036854775808e18:
        return _INT64_MIN
    return int(x)


def _libm_lgamma() -> Any:
    """The C library's ``lgamma`` (torch's ``std::lgamma``); Python's own where there is none."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        fn = libm.lgamma
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
        return fn
    except (OSError, AttributeError):  # pragma: no cover - no C math library
        return math.lgamma


_lgamma = _libm_lgamma()


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _sample(lam: float, uniform: Any) -> int:
    """ATen's ``sample_poisson`` of one rate, in doubles (Python's floats are C's)."""
    if not lam >= 0:
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam >= 10:  # transformed rejection (Hoermann, 1993)
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            if us == 0:  # (C: k = floor(-inf) < 0, and us < 0.07: the next try)
                continue
            t = (2 * a / us + b) * u + lam + 0.43
            k = _as_int64(math.floor(t)) if math.isfinite(t) else _INT64_MIN
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            if _log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - _lgamma(float(k) + 1):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x, prod = 0, 1.0
    while True:
        prod *= uniform()
        if prod > enlam:
            x += 1
        else:
            return x


def sample(gen: np.random.Generator, rates: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Poisson samples of the float64 ``rates`` (C order), as float64."""
    flat = rates.reshape(-1)
    out = np.zeros(flat.size, dtype=np.float64)
    if not isinstance(gen, _random.Generator):  # (a numpy Generator: numpy's own sampler)
        if not bool(np.all(flat >= 0)):
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
        return gen.poisson(flat).astype(np.float64).reshape(rates.shape)
    finite = flat[np.isfinite(flat) & (flat >= 0)]
    uniforms = _Uniforms(gen, int(np.sum(np.where(finite < 10, finite + 1, 3))) + 16)
    try:
        for i, lam in enumerate(flat.tolist()):
            out[i] = _sample(lam, uniforms.next)
    finally:
        uniforms.close()
    return out.reshape(rates.shape)


@backward(batched=True)
def PoissonBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Zero (derivatives.yaml's ``zeros_like(self)``)."""
    g = grads[0]
    return (like(g._device.xp.zeros(g.shape, dtype=self.dtype), g),)


@op(PoissonBackward0)
def poisson(input: Tensor, generator: _random.Generator | None = None) -> Tensor:
    """A sample of the Poisson distribution of rate ``input`` per element, as ``torch.poisson``
    (floating ``input``; the same numbers as torch's for the same seed); zero gradient."""
    if not isinstance(input, Tensor):
        raise not_tensor("poisson", input)
    data = input.data
    if data.dtype.kind != "f":
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{scalar_type_name(data.dtype)}'")
    host = data if type(data) is np.ndarray else device_type(input._device.type).to_host(data)
    values = sample(_random.resolve(generator), np.array(host, dtype=np.float64, order="C"))  # (0-d stays 0-d)
    out = like(input._device.xp.asarray(values.astype(data.dtype)), input)
    if needs_grad(input):
        node: Any = attach(PoissonBackward0((edge_of(input),)), out)
        node.dtype = data.dtype
    return out
