"""Datasets, as ``torch.utils.data.dataset``: the map-style :class:`Dataset` (``__getitem__`` and
``__len__``), the iterable-style :class:`IterableDataset` (``__iter__``), and the ways to combine
them (:class:`TensorDataset`, :class:`ConcatDataset`, :class:`ChainDataset`, :class:`Subset`,
:func:`random_split`)."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ..._base import _sampling
from ..._core._tensor import Tensor
from .sampler import _numpy_rng

__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "Subset", "TensorDataset", "random_split"]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map-style dataset: samples by key (``__getitem__``), usually with a ``__len__``, which
    the default samplers need. ``a + b`` is their :class:`ConcatDataset`."""

    def __getitem__(self, index: Any) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset[_T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """An iterable-style dataset: a stream of samples (``__iter__``), for data read in order
    (files, generators). ``a + b`` is their :class:`ChainDataset`."""

    def __iter__(self) -> Iterator[_T_co]:
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset[_T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Tensors of the same first size, sample ``i`` being the tuple of their ``i``-th rows."""

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].size(0))


class ConcatDataset(Dataset[_T_co]):
    """Map-style datasets one after the other."""

    datasets: list[Dataset[_T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        """The running totals of the lengths."""
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets: Iterable[Dataset[_T_co]]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> _T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset[Any]):
    """Iterable-style datasets one after the other, chained lazily."""

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    dataset: Dataset[_T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        # the DataLoader fetches through __getitems__, which would bypass an overridden __getitem__
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override __getitems__ "
                "to ensure DataLoader works correctly with your custom logic. A simple implementation:\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[_T_co]:
        # a batch at once where the dataset can (the DataLoader asks for one)
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[idx] for idx in indices])  # type: ignore[no-any-return]
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[_T], lengths: Sequence[int | float], generator: Any = None) -> list[Subset[_T]]:
    """Split ``dataset`` at random into non-overlapping :class:`Subset` s of the given
    ``lengths``, or of the given fractions of its length (which sum to 1; the items left over by
    rounding down go one each to the first splits, as in torch).

    ``generator``: an ``aiograd.Generator`` or a ``numpy.random.Generator``; None (where torch's
    default is its ``default_generator``) is aiograd's default generator (``aiograd.manual_seed``).
    The split is torch's for the same seed (one ``randperm`` of the whole length).
    """
    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(n * frac))
        remainder = n - sum(subset_lengths)
        for i in range(remainder):  # add 1 to all the lengths in round-robin fashion until the remainder is 0
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _sampling.randperm(_numpy_rng(generator), int(sum(lengths))).tolist()
    int_lengths = [int(length) for length in lengths]
    return [Subset(dataset, indices[offset - length : offset]) for offset, length in zip(itertools.accumulate(int_lengths), int_lengths)]
