"""Samplers, as ``torch.utils.data.sampler``: the order in which a ``DataLoader`` visits a
map-style dataset's keys (:class:`SequentialSampler`, :class:`RandomSampler`,
:class:`SubsetRandomSampler`, :class:`WeightedRandomSampler`) and how it groups them into
batches (:class:`BatchSampler`).

Random orders are torch's: an ``aiograd.Generator`` is torch's Mersenne Twister and the samplers
draw from it as torch's do (``randperm``, ``randint`` in chunks of 32, ``multinomial``; a
``RandomSampler`` without a generator seeds a fresh one from one draw of the default generator),
so the same seed gives torch's order. A ``generator`` argument is an ``aiograd.Generator`` or a
``numpy.random.Generator`` (then the orders are numpy's); None is aiograd's default generator
(``aiograd.manual_seed``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from ..._base import _random, _sampling
from ..._core._tensor import Tensor
from ..._ops.random_ops import multinomial

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _numpy_rng(generator: Any) -> np.random.Generator:
    """The numpy generator behind ``generator`` (duck-typed, so that ``aiograd.Generator`` and
    plain numpy generators both work); None: the default one, read now (``manual_seed``
    replaces it)."""
    if generator is None:
        return _random.generator()
    if isinstance(generator, np.random.Generator):
        return generator
    rng = getattr(generator, "_rng", None)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(f"generator must be an aiograd.Generator or a numpy.random.Generator, but got {type(generator).__name__}")


def _fresh_rng(generator: Any) -> np.random.Generator:
    """torch's rule for a sampler without a generator: a new one per epoch, seeded by one draw
    from the default generator (so that ``manual_seed`` fixes every epoch's order)."""
    if generator is not None:
        return _numpy_rng(generator)
    seed = int(_sampling.random_bits(_random.generator(), (), np.int64))
    return _random.Generator().manual_seed(seed)


class Sampler(Generic[_T_co]):
    """The base class: an iterable over a dataset's keys (or, for a batch sampler, lists of
    them); a ``__len__`` where the count is known."""

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """The keys in random order: a permutation (repeated, then cut, when ``num_samples`` exceeds
    the dataset), or ``num_samples`` draws with ``replacement``."""

    data_source: Sized
    replacement: bool

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many keys an epoch yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # Not a generator function: the generator is read (the default one drawn from) here, on
        # the caller's thread, not when a DataLoader's background thread asks for the first key
        # (so that draws from the default generator stay in a reproducible order).
        rng = _fresh_rng(self.generator)
        return self._keys(rng, len(self.data_source), self.num_samples)

    def _keys(self, rng: np.random.Generator, n: int, num_samples: int) -> Iterator[int]:
        if self.replacement:
            for _ in range(num_samples // 32):
                yield from _sampling.random_from_to(rng, (32,), 0, n).tolist()
            yield from _sampling.random_from_to(rng, (num_samples % 32,), 0, n).tolist()
        else:
            for _ in range(num_samples // n):
                yield from _sampling.randperm(rng, n).tolist()
            yield from _sampling.randperm(rng, n).tolist()[: num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices``, in random order."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        order = _sampling.randperm(_numpy_rng(self.generator), len(self.indices)).tolist()
        return (self.indices[i] for i in order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` keys drawn with probabilities proportional to ``weights``."""

    weights: np.ndarray[Any, Any]
    num_samples: int
    replacement: bool

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_array = np.asarray(getattr(weights, "data", weights), dtype=np.float64)
        if len(weights_array.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights_array.shape)}")
        self.weights = weights_array
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        keys = multinomial(Tensor(self.weights), self.num_samples, self.replacement, generator=_numpy_rng(self.generator))
        return iter(keys.data.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Another sampler's keys in lists of ``batch_size`` (the last one shorter, or dropped with
    ``drop_last``)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        return self._batches(iter(self.sampler))  # the sampler's iterator made here (see RandomSampler)

    def _batches(self, sampler_iter: Iterator[int]) -> Iterator[list[int]]:
        if self.drop_last:
            for full in zip(*[sampler_iter] * self.batch_size):
                yield [*full]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]
