"""Collation, as ``torch.utils.data._utils.collate``: how a ``DataLoader`` turns a list of
samples into a batch (:func:`default_collate`), or converts one sample when it does not batch
(:func:`default_convert`).

torch's rules, type by type: tensors are stacked along a new first dimension; numpy arrays
become tensors of their dtype and are stacked; numpy scalars become a tensor of their dtype;
Python floats a float64 tensor (float64 whatever the default dtype, as in torch); Python ints an
int64 tensor (bools a bool one); strings and bytes stay a list; mappings, named tuples and
sequences are collated field by field (a plain tuple comes back as a list, as in torch).
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._api._factories import as_tensor, tensor
from ..._base._dtypes import float64
from ..._core._tensor import Tensor
from ..._ops.joining import stack

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")  # numpy dtypes of strings and objects

_default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)

CollateFnMap = dict[type | tuple[type, ...], Callable[..., Any]]


def default_convert(data: Any) -> Any:
    """Each numpy array or scalar in ``data`` (recursing into mappings and sequences) as a
    tensor; anything else unchanged."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and _np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data  # an array of strings or objects
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as torch's (backwards compatibility there)
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _sequence(data, [default_convert(d) for d in data])
    return data


def _mapping(elem: Any, converted: dict[Any, Any]) -> Any:
    """``converted`` in ``elem``'s mapping type where it allows (a copy keeps its extra
    attributes), else a dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(converted)
            return clone
        return type(elem)(converted)
    except TypeError:
        return converted


def _sequence(elem: Any, converted: list[Any]) -> Any:
    """``converted`` in ``elem``'s sequence type where it allows, else a list."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, d in enumerate(converted):
                clone[i] = d
            return clone
        return type(elem)(converted)
    except TypeError:
        return converted


def collate(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Collate ``batch`` (a list of samples) by the first sample's type: a function of
    ``collate_fn_map`` for it (its exact type first, then the first key it is an instance of),
    else field by field for mappings, named tuples and sequences; a TypeError for anything else."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        collated = [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        if isinstance(elem, tuple):
            return collated  # a list, as torch's
        return _sequence(elem, collated)
    raise TypeError(_default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Tensors: stacked along a new first dimension."""
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """numpy arrays: as tensors of their dtype, stacked (arrays of strings or objects refused)."""
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(_default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """numpy scalars: one tensor of their dtype."""
    return as_tensor(batch)


def collate_float_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Python floats: a float64 tensor, as torch's (not the default dtype)."""
    return tensor(batch, dtype=float64)


def collate_int_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Python ints: an int64 tensor (bools: a bool one)."""
    return tensor(batch)


def collate_str_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Strings and bytes: the list as it is."""
    return batch


#: The type -> function table behind :func:`default_collate` (update it to teach the default
#: collation a new type, as torch's ``default_collate_fn_map``).
default_collate_fn_map: CollateFnMap = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Any) -> Any:
    """Collate a list of samples into a batch by torch's rules (the module's docstring):
    ``default_collate([(x0, 0), (x1, 1)])`` is ``[stack([x0, x1]), tensor([0, 1])]``."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
