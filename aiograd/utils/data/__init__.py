"""Datasets and data loading, as ``torch.utils.data``.

- Datasets: :class:`Dataset` (map-style), :class:`IterableDataset`, :class:`TensorDataset`,
  :class:`ConcatDataset`, :class:`ChainDataset`, :class:`Subset`, :func:`random_split`.
- Samplers: :class:`Sampler`, :class:`SequentialSampler`, :class:`RandomSampler`,
  :class:`SubsetRandomSampler`, :class:`WeightedRandomSampler`, :class:`BatchSampler`.
- Collation: :func:`default_collate`, :func:`default_convert`, :func:`collate` and
  :data:`default_collate_fn_map`.
- :class:`DataLoader`: ``for batch in loader`` as torch's, and ``async for batch in loader``,
  which prepares the next batch in a thread while the caller awaits its backward;
  ``num_workers > 0`` loads in worker processes, as torch's, and :func:`get_worker_info`
  (a :class:`WorkerInfo`) tells a dataset which worker it runs in.

Random orders (``shuffle``, ``RandomSampler``, ``random_split``) are torch's for the same seed
(``aiograd.manual_seed`` or a given ``aiograd.Generator``): the same generator, the same draws.
Worker processes start by ``forkserver`` (``spawn`` where there is none), not torch's ``fork``:
datasets, ``collate_fn`` and ``worker_init_fn`` must be picklable (defined at a module's top level).
"""

from ._collate import collate, default_collate, default_collate_fn_map, default_convert
from ._worker import WorkerInfo, get_worker_info
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
    "WorkerInfo",
    "collate",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
    "get_worker_info",
    "random_split",
]
