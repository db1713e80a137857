"""aiograd.distributed: gradients past one machine, on a Dask cluster.

- :class:`DataParallel`: a batch's gradients computed in shards on the cluster's workers (the
  model shipped once, its parameters again only when they change, the shards' gradients summed
  by a tree reduction on the cluster), equal to one process's up to float rounding;
- :class:`ScatteredBatch`: a batch placed on the workers once (``DataParallel.scatter``), for
  several calls that then send no data.

It takes a ``distributed.Client`` made with ``asynchronous=True`` on the caller's event loop
(``pip install aiograd[distributed]``): a ``LocalCluster`` of worker processes on one machine,
or any cluster Dask deploys. The guide is docs/distributed.md.
"""

from ._data_parallel import DataParallel, ScatteredBatch

__all__ = ["DataParallel", "ScatteredBatch"]
