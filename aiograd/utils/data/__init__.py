"""Datasets and data loading, as ``torch.utils.data``.

- Datasets: :class:`Dataset` (map-style), :class:`IterableDataset`, :class:`TensorDataset`,
  :class:`ConcatDataset`, :class:`ChainDataset`, :class:`Subset`, :func:`random_split`.
- Samplers: :class:`Sampler`, :class:`SequentialSampler`, :class:`RandomSampler`,
  :class:`SubsetRandomSampler`, :class:`WeightedRandomSampler`, :class:`BatchSampler`.
- Collation: :func:`default_collate`, :func:`default_convert`, :func:`collate` and
  :data:`default_collate_fn_map`.
- :class:`DataLoader`: ``for batch in loader`` as torch's, and ``async for batch in loader``,
  which prepares the next batch in a thread while the caller awaits its backward.

Random orders (``shuffle``, ``RandomSampler``, ``random_split``) are reproducible under
``aiograd.manual_seed`` or a given generator, but not torch's orders: the generators differ.
There are no worker processes (``num_workers > 0`` raises NotImplementedError).
"""

from ._collate import collate, default_collate, default_collate_fn_map, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "collate",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
    "random_split",
]
