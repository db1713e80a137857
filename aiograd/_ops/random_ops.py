"""Sampling with torch's names: ``Generator``, ``bernoulli``, ``multinomial``, ``normal``, the
in-place fills (``uniform_``, ``normal_``, ``bernoulli_``, ``random_``, ``exponential_``) and
the default generator's state as a tensor (``get_rng_state``/``set_rng_state``).

Every one draws from its ``generator=`` (an ``aiograd.Generator``, or any numpy Generator) or
the default generator (``aiograd/_base/_random.py``), on the host, and places the result on its
input's device. An ``aiograd.Generator`` is torch's Mersenne Twister, and the samples are made
by torch's CPU algorithms (``aiograd/_base/_sampling.py``): the same seed gives torch's values. Samples carry no gradient (torch's
``NormalBackward``/``BernoulliBackward`` give zeros to their inputs); an in-place fill of a
tensor in a graph copies into it (``copy_``), so the values it held before get a zero gradient,
as in torch, and a leaf that requires grad is refused with torch's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base import _random, _sampling
from .._base._dtypes import get_default_dtype, scalar_type_name
from .._core._tensor import Tensor
from .._devices._device import device_type
from ._util import infer_size, to_tensor

__all__ = [
    "Generator", "TENSOR_METHODS", "bernoulli", "bernoulli_", "exponential_", "get_rng_state", "multinomial",
    "normal", "normal_", "random_", "set_rng_state", "uniform_",
]


class Generator(_random.Generator):
    """torch.Generator (CPU): ``manual_seed``, ``seed``, ``initial_seed``, and its state as a
    uint8 tensor (``get_state``/``set_state``); a stream independent of the default one."""

    def get_state(self) -> Tensor:
        """The state, as a uint8 tensor: torch's 5056 bytes (torch's ``set_state`` takes it too)."""
        return Tensor(_random.state_array(self))


def get_rng_state() -> Tensor:
    """The default generator's state, as a uint8 tensor (``set_rng_state`` takes it back)."""
    return Tensor(_random.state_array(_random.generator()))


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from ``get_rng_state``'s tensor."""
    _random.generator().set_state(new_state)


def _host(t: Tensor) -> np.ndarray[Any, Any]:
    data = t.data
    return data if type(data) is np.ndarray else device_type(t._device.type).to_host(data)


def _num(x: float) -> str:
    """A number as torch's messages print it (C++'s default: ``2``, ``-0.5``, ``1e-07``)."""
    return f"{x:g}"


def _strides(t: Tensor) -> tuple[int, ...]:
    """The tensor's strides, in elements (the order torch's kernels fill it in)."""
    data = t.data
    return tuple(s // data.itemsize for s in data.strides)


def _fill(self: Tensor, values: np.ndarray[Any, Any]) -> Tensor:
    """Copy host ``values`` into ``self`` in place (``copy_``: a tensor in a graph gets a zero
    gradient for what it held; a leaf that requires grad is refused there, with torch's error)."""
    return self.copy_(to_tensor(np.asarray(values, dtype=self.data.dtype), like=self))


def _floating(fname: str, self: Tensor) -> None:
    if self.data.dtype.kind not in "f":
        raise NotImplementedError(f"\"{fname}\" not implemented for '{scalar_type_name(self.data.dtype)}'")


def uniform_(self: Tensor, from_: float = 0, to: float = 1, *, generator: _random.Generator | None = None) -> Tensor:
    """Fill with samples from U[from_, to) (torch's ``from``, a Python keyword here)."""
    _floating("check_uniform_bounds", self)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_num(from_)} > to={_num(to)}")
    gen = _random.resolve(generator)
    return _fill(self, _sampling.uniform(gen, self.data.shape, self.data.dtype, from_, to, _strides(self)))


def normal_(self: Tensor, mean: float = 0, std: float = 1, *, generator: _random.Generator | None = None) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    _floating("normal_kernel_cpu", self)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    gen = _random.resolve(generator)
    return _fill(self, _sampling.normal(gen, self.data.shape, self.data.dtype, mean, std, _strides(self)))


def exponential_(self: Tensor, lambd: float = 1, *, generator: _random.Generator | None = None) -> Tensor:
    """Fill with samples from the exponential distribution of rate ``lambd``."""
    _floating("exponential_cpu", self)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    gen = _random.resolve(generator)
    return _fill(self, _sampling.exponential(gen, self.data.shape, self.data.dtype, lambd, _strides(self)))


def _random_bounds(dtype: np.dtype[Any], from_: int | None, to: int | None) -> tuple[int, int]:
    """``random_``'s [low, high): one bound is ``[0, to)``; none, every integer the dtype holds
    exactly (``[0, 2**24]`` for float32, ``[0, 2**63 - 1]`` for int64, as torch's)."""
    if to is None and from_ is not None:
        from_, to = 0, from_
    low = 0 if from_ is None else int(from_)
    if to is not None:
        high = int(to)
    elif dtype.kind == "b":
        high = 2
    elif dtype.kind == "f":
        high = 2 ** (np.finfo(dtype).nmant + 1) + 1
    else:
        high = int(np.iinfo(dtype).max) + 1
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return low, high


def random_(self: Tensor, from_: int | None = None, to: int | None = None, *, generator: _random.Generator | None = None) -> Tensor:
    """Fill with integers drawn uniformly from ``[from_, to)`` (``random_(to)``: from 0; no bound:
    every integer the dtype holds exactly)."""
    gen = _random.resolve(generator)
    if from_ is None and to is None:
        return _fill(self, _sampling.random_bits(gen, self.data.shape, self.data.dtype, _strides(self)))
    low, high = _random_bounds(self.data.dtype, from_, to)
    return _fill(self, _sampling.random_from_to(gen, self.data.shape, low, high, _strides(self)))


def _check_probabilities(p: np.ndarray[Any, Any]) -> None:
    if not bool(np.all((p >= 0) & (p <= 1))):  # (NaN fails both)
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
            "If so, please report an enhancement request to PyTorch.)"
        )


def bernoulli_(self: Tensor, p: float | Tensor = 0.5, *, generator: _random.Generator | None = None) -> Tensor:
    """Fill with 1 where a uniform sample falls below ``p`` (a number, or a tensor that
    broadcasts to this shape), else 0."""
    probs: Any
    if isinstance(p, Tensor):
        probs = _host(p)
        _check_probabilities(probs)
        probs = np.broadcast_to(probs, self.data.shape)
        return _fill(self, _sampling.bernoulli(_random.resolve(generator), probs, _strides(self)))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
    return _fill(self, _sampling.bernoulli_scalar(_random.resolve(generator), self.data.shape, p, _strides(self)))


def bernoulli(input: Tensor, p: float | None = None, *, generator: _random.Generator | None = None) -> Tensor:
    """1 with probability ``input`` (elementwise), else 0, in ``input``'s dtype; with ``p``, with
    probability ``p`` everywhere. No gradient (torch's is zero)."""
    data = _host(input)
    if p is None:
        if data.dtype.kind != "f":
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{scalar_type_name(data.dtype)}'")
        _check_probabilities(data)
        # (torch: ``empty_like(input).bernoulli_(input)``, contiguous)
        out = _sampling.bernoulli(_random.resolve(generator), np.ascontiguousarray(data))
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
        out = _sampling.bernoulli_scalar(_random.resolve(generator), data.shape, p)
    return to_tensor(out.astype(data.dtype), like=input)


def multinomial(
    input: Tensor, num_samples: int, replacement: bool = False, *, generator: _random.Generator | None = None
) -> Tensor:
    """``num_samples`` indices drawn from each row of ``input`` (1-D or 2-D: weights, not
    necessarily normalised), with or without ``replacement``; int64."""
    data = _host(input)
    if data.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if data.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {scalar_type_name(data.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > data.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = data.reshape(-1, data.shape[-1])
    if not bool(np.all(np.isfinite(rows) & (rows >= 0))):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not bool(np.all(rows.sum(axis=1) > 0)):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    out = _sampling.multinomial(_random.resolve(generator), rows, num_samples, replacement)
    out = out.astype(np.int64).reshape(*data.shape[:-1], num_samples)
    return to_tensor(out, like=input)


def _size(size: Any) -> tuple[int, ...]:
    if isinstance(size, Sequence) and len(size) == 1 and isinstance(size[0], Sequence):
        size = size[0]
    return tuple(int(s) for s in size)


def normal(
    mean: Tensor | float,
    std: Tensor | float = 1.0,
    size: Sequence[int] | None = None,
    *,
    generator: _random.Generator | None = None,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Samples from N(mean, std**2): ``mean`` and ``std`` tensors (broadcast together) or numbers
    (with ``size``, then ``dtype``, ``device``, ``requires_grad``). No gradient reaches ``mean``
    or ``std`` (torch's is zero)."""
    rng = _random.resolve(generator)
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), "
                            "but expected one of: (Tensor mean, Tensor std) (Tensor mean, float std) "
                            "(float mean, Tensor std) (float mean, float std, tuple of ints size)")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        values = _sampling.normal(rng, _size(size), dtype or get_default_dtype(), mean, std)
        out = Tensor(values, requires_grad=requires_grad)
        return out if device is None else out.to(device)
    like = mean if isinstance(mean, Tensor) else std
    assert isinstance(like, Tensor)
    m = _host(mean) if isinstance(mean, Tensor) else np.float64(mean)
    s = _host(std) if isinstance(std, Tensor) else np.float64(std)
    if isinstance(std, Tensor):
        if not bool(np.all(s >= 0)):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    shape = infer_size(np.shape(m), np.shape(s))
    out_dtype = np.result_type(*(x.data.dtype for x in (mean, std) if isinstance(x, Tensor)))
    # torch: ``normal_(0, std)`` then ``add_(mean)`` for a number ``std``, else ``normal_(0, 1)``
    # then ``mul_(std).add_(mean)``, in the output's dtype
    if isinstance(std, Tensor):
        values = _sampling.normal(rng, shape, out_dtype) * s.astype(out_dtype) + np.asarray(m).astype(out_dtype)
    else:
        values = _sampling.normal(rng, shape, out_dtype, 0.0, std) + np.asarray(m).astype(out_dtype)
    return to_tensor(np.asarray(values, dtype=out_dtype), like=like)


TENSOR_METHODS = {
    "uniform_": uniform_, "normal_": normal_, "exponential_": exponential_, "random_": random_,
    "bernoulli_": bernoulli_, "bernoulli": bernoulli, "multinomial": multinomial,
}
