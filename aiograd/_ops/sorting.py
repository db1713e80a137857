"""Sorting and selection along a dim, as PyTorch's: ``sort``, ``argsort``, ``topk``, ``kthvalue``
and ``median``, each returning PyTorch's ``(values, indices)`` named tuple where torch does.

Every order is a stable sort that counts NaN as larger than any number (PyTorch's order): ties
keep their order of appearance, ascending or descending. The gradient goes to the elements the
returned indices name (PyTorch's ``value_selecting_reduction_backward``): for ``sort`` and
``topk`` it is gathered back through the inverse permutation (the positions ``topk`` drops get
zero), for ``kthvalue`` and ``median(dim)`` it lands on the one element per slice. ``median()``
over all elements shares its gradient evenly among the elements equal to the median (PyTorch's
``evenly_distribute_backward``).

Among tied values the returned index (and so the element that gets the gradient) is PyTorch's
CPU choice: for ``sort`` and ``median(dim)`` the stable order's, for ``kthvalue`` and ``topk`` the
pick of PyTorch's selection algorithms, ported in ``torch_selection`` and run (on the host) for
the slices with ties only. ``topk(sorted=False)`` returns its values sorted (PyTorch leaves that
order unspecified).

Backward formulas address the dim from the end (a negative dim), so that the leading batch dims
of ``grad(..., is_grads_batched=True)`` pass through them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ._reduce_util import UNSET, _check_nonempty, expand_reduced, invalid_arguments
from ._registry import backward, op, variant
from ._util import Tensor, attach, edge_of, like, needs_grad, not_tensor
from .batching import per_sample_scalar
from .elementwise import where
from .indexing import gather
from .joining import cat
from .quiet import quietly
from .reduction import _return_type
from .shape import _dim
from .torch_selection import quickselect, topk_order

if TYPE_CHECKING:
    from .._core._types import ValuesIndices

__all__ = ["sort", "argsort", "topk", "kthvalue", "median", "unique", "unique_consecutive"]

SortResult = _return_type("sort")
TopkResult = _return_type("topk")
KthvalueResult = _return_type("kthvalue")
MedianResult = _return_type("median")


def _int_arg(value: Any, fname: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{fname}(): argument '{name}' must be int, not {type(value).__name__}")
    return int(value)


def stable_order(xp: Any, data: Any, axis: int, descending: bool) -> Any:
    """The stable sorting permutation of ``data`` along ``axis`` (NaN counted largest).

    Descending: the ascending stable order of the reversed slice, reversed, and its positions
    mirrored, which puts the largest first and keeps ties in their order of appearance."""
    if not descending:
        return xp.argsort(data, axis=axis, kind="stable")
    n = data.shape[axis]
    return (n - 1) - xp.flip(xp.argsort(xp.flip(data, axis), axis=axis, kind="stable"), axis)


# ------------------------------------------------------------------------------ sort, topk
@backward(batched=True)
def SortBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The gradient gathered back through the inverse permutation; positions the output leaves
    out (``topk``) get zero."""
    g = grads[0]
    if self.inverse is None:  # a 0-d input: its single element
        return (g,)
    d, missing = self.dim, self.size - g.data.shape[self.dim]
    if missing:
        shape = list(g.data.shape)
        shape[d] = missing
        g = cat([g, like(g._device.xp.zeros(tuple(shape), dtype=g.data.dtype), g)], d)
    return (gather(g, d, g._device.xp.broadcast_to(self.inverse, g.data.shape)),)


SortBackward1 = variant("SortBackward1", SortBackward0, "Backward of ``sort`` called with ``stable=``.")
TopkBackward0 = variant("TopkBackward0", SortBackward0, "Backward of ``topk``.")


def _sorted(input: Tensor, dim: Any, descending: bool, k: int | None, cls: type[Any], fname: str) -> tuple[Tensor, Tensor]:
    """The first ``k`` (all if None) values of ``input`` sorted along ``dim``, and their indices."""
    data, xp = input.data, input._device.xp
    d = _dim(_int_arg(dim, fname, "dim"), data.ndim)
    size = data.shape[d] if data.ndim else 1
    if k is not None and not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if data.ndim == 0:
        order = inverse = None
        values, indices = data.copy(), xp.zeros((), dtype=np.int64)
    else:
        order = stable_order(xp, data, d, descending)
        if k:
            order = _topk_ties(xp, data, d, order, k, descending)
        indices = order if k is None else xp.take(order, xp.arange(k), axis=d)
        values = xp.take_along_axis(data, indices, axis=d)
    out = like(values, input)
    if needs_grad(input):
        node = attach(cls((edge_of(input),)), out)
        if order is not None:
            inverse = xp.argsort(order, axis=d)  # (a permutation's sorting order is its inverse)
        node.inverse, node.dim, node.size = inverse, d - max(data.ndim, 1), size
    return out, like(indices.astype(np.int64), input)


_SORT_FORMS = ("Tensor input, *, bool stable, int dim = -1, bool descending = False, tuple of Tensors out = None",
               "Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = None")
_ARGSORT_FORMS = ("Tensor input, *, bool stable, int dim = -1, bool descending = False",
                  "Tensor input, int dim = -1, bool descending = False")


def _sort_args(fname: str, input: Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool, Any]:
    """``dim``, ``descending`` and ``stable`` (UNSET if not given) of PyTorch's two forms of
    ``sort``/``argsort``: ``dim`` and ``descending`` positional or keyword without ``stable``,
    keywords only with it (given, even as None for ``sort``; argsort's is a bool)."""
    named_descending = "descending" in kwargs
    dim, descending, stable = kwargs.pop("dim", UNSET), kwargs.pop("descending", False), kwargs.pop("stable", UNSET)
    if kwargs:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if args or (stable is None and fname == "argsort"):
        if (stable is not UNSET or len(args) > 2 or dim is not UNSET
                or (len(args) == 2 and named_descending)):
            forms = _SORT_FORMS if fname == "sort" else _ARGSORT_FORMS
            raise invalid_arguments(fname, forms, input, *args, dim=dim, stable=stable)
        dim, descending = args if len(args) == 2 else (args[0], descending)
    return -1 if dim is UNSET else dim, bool(descending), stable


# The forms of ``sort`` and ``argsort``: with ``stable``, ``dim`` and ``descending`` are keywords.
@overload
def sort(input: Tensor, dim: int = -1, descending: bool = False) -> ValuesIndices: ...
@overload
def sort(input: Tensor, *, stable: bool | None, dim: int = -1, descending: bool = False) -> ValuesIndices: ...


@op(SortBackward0, SortBackward1)
def sort(input: Tensor, *args: Any, **kwargs: Any) -> ValuesIndices:
    """The values sorted along ``dim`` and the indices they came from: a ``(values, indices)``
    named tuple, as ``torch.sort``. Always stable (ties keep their order, also descending);
    NaN sorts as the largest value."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("sort", input)
    dim, desc, stable = _sort_args("sort", input, args, kwargs)
    cls = SortBackward0 if stable is UNSET else SortBackward1
    return SortResult(*_sorted(input, dim, desc, None, cls, "sort"))


@overload
def argsort(input: Tensor, dim: int = -1, descending: bool = False) -> Tensor: ...
@overload
def argsort(input: Tensor, *, stable: bool, dim: int = -1, descending: bool = False) -> Tensor: ...


@op()
def argsort(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (int64, not differentiable), as
    ``torch.argsort``; always stable."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("argsort", input)
    dim, desc, _ = _sort_args("argsort", input, args, kwargs)
    data, xp = input.data, input._device.xp
    d = _dim(_int_arg(dim, "argsort", "dim"), data.ndim)
    if data.ndim == 0:
        return like(xp.zeros((), dtype=np.int64), input)
    return like(stable_order(xp, data, d, desc).astype(np.int64), input)


@op(TopkBackward0)
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their indices, a
    ``(values, indices)`` named tuple, as ``torch.topk``. The values always come sorted (PyTorch
    leaves their order unspecified when ``sorted=False``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("topk", input)
    k = _int_arg(k, "topk", "k")
    if input.data.dtype == np.bool_:
        _dim(_int_arg(dim, "topk", "dim"), input.data.ndim)  # (PyTorch checks the dim first)
        raise RuntimeError("topk does not support bool dtypes on CPU")
    return TopkResult(*_sorted(input, dim, bool(largest), k, TopkBackward0, "topk"))


# ------------------------------------------------------------------------------ kthvalue, median
@backward(batched=True)
def KthvalueBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The gradient lands on the element at each returned index."""
    g = expand_reduced(grads[0], self.mask.shape, self.axes, self.keepdim)
    return (g * self.mask.astype(g.data.dtype),)


MedianBackward1 = variant("MedianBackward1", KthvalueBackward0, "Backward of ``median(input, dim)``.")


def _select(input: Tensor, dim: Any, keepdim: bool, position: Any, cls: type[Any], fname: str) -> tuple[Tensor, Tensor]:
    """The value at sorted ``position(size)`` of each slice along ``dim``, and its index; for
    ``median`` a slice with a NaN gives its first NaN, as PyTorch."""
    data, xp = input.data, input._device.xp
    d = _dim(_int_arg(dim, fname, "dim"), data.ndim)
    axes = (d,) if data.ndim else ()
    _check_nonempty(data, axes, fname)
    size = data.shape[d] if data.ndim else 1
    pos = position(size, d)
    # (PyTorch's kernels for these have no bool case; kthvalue copies a 0-d tensor without one)
    if data.dtype == np.bool_ and (axes or fname == "median"):
        kernel = "median_out" if fname == "median" else f"{fname}_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if not axes:
        idx, values = xp.zeros((), dtype=np.int64), data.copy()
    else:
        order = stable_order(xp, data, d, False)
        idx = xp.take(order, xp.asarray([pos]), axis=d)
        if fname == "median" and data.dtype.kind == "f":
            nan = xp.isnan(data)
            idx = xp.where(nan.any(axis=d, keepdims=True), xp.argmax(nan, axis=d, keepdims=True), idx)
        values = xp.take_along_axis(data, idx, axis=d)
        if fname == "kthvalue":
            idx = _kthvalue_ties(xp, data, d, pos, idx, values)
        if not keepdim:
            idx, values = idx.squeeze(d), values.squeeze(d)
    out = like(values, input)
    if needs_grad(input):
        mask = xp.zeros(data.shape, dtype=bool)
        if axes:
            xp.put_along_axis(mask, idx if keepdim else xp.expand_dims(idx, d), True, axis=d)
        else:
            mask[...] = True
        node = attach(cls((edge_of(input),)), out)
        node.mask, node.axes, node.keepdim = mask, axes, keepdim
    return out, like(idx.astype(np.int64), input)


def _host(a: Any) -> Any:
    """A numpy copy of a device array; numpy arrays and scalars as they are."""
    return a if isinstance(a, (np.ndarray, np.generic)) else a.get()


def _topk_ties(xp: Any, data: Any, d: int, order: Any, k: int, largest: bool) -> Any:
    """The full sorting ``order`` with, in the slices where one of the first ``k`` values is
    tied with a neighbour (equal, or NaN beside NaN), PyTorch's ``topk`` pick in front
    (``torch_selection.topk_order``, on the host) and the other positions after it in stable
    order, so that the indices and the backward's inverse permutation agree with it."""
    ranked = xp.take_along_axis(data, order, axis=d)
    n = data.shape[d]
    head, tail = xp.take(ranked, xp.arange(n - 1), axis=d), xp.take(ranked, xp.arange(1, n), axis=d)
    equal = head == tail
    if data.dtype.kind == "f":
        equal |= xp.isnan(head) & xp.isnan(tail)
    tied = xp.take(equal, xp.arange(min(k, n - 1)), axis=d).any(axis=d)
    if not tied.any():
        return order
    host_order, host_data = _host(order).copy(), np.moveaxis(_host(data), d, -1)
    moved = np.moveaxis(host_order, d, -1)
    for found in np.argwhere(_host(tied)):  # (argwhere: a 0-d mask too)
        slot = tuple(found)
        chosen = topk_order(host_data[slot].tolist(), k, largest, True)
        picked = set(chosen)
        moved[slot] = chosen + [i for i in moved[slot].tolist() if i not in picked]
    return host_order if isinstance(data, np.ndarray) else xp.asarray(host_order)


def _kthvalue_ties(xp: Any, data: Any, d: int, k: int, idx: Any, values: Any) -> Any:
    """``idx`` with PyTorch's pick for the slices whose k-th value is tied with another element
    (equal, or NaN beside NaN): there the index is the quickselect's, found on the host slice by
    slice; a slice whose k-th value is unique has one possible index, the stable sort's."""
    same = (data == values) | (xp.isnan(data) & xp.isnan(values)) if data.dtype.kind == "f" else data == values
    tied = same.sum(axis=d, keepdims=True) > 1
    if not tied.any():
        return idx
    host, host_idx, host_tied = _host(data), _host(idx).copy(), _host(tied)
    moved_data, moved_idx = np.moveaxis(host, d, -1), np.moveaxis(host_idx, d, -1)
    for found in np.argwhere(np.moveaxis(host_tied, d, -1)[..., 0]):  # (argwhere: 0-d too)
        slot = tuple(found)
        moved_idx[slot] = quickselect(moved_data[slot].tolist(), k)
    return host_idx if isinstance(data, np.ndarray) else xp.asarray(host_idx)


@op(KthvalueBackward0)
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest value (1-based) along ``dim`` and its index, a ``(values, indices)``
    named tuple, as ``torch.kthvalue``; NaN counts as the largest value."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("kthvalue", input)
    k = _int_arg(k, "kthvalue", "k")

    def position(size: int, d: int) -> int:
        if not 1 <= k <= size:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
        return k - 1

    return KthvalueResult(*_select(input, dim, bool(keepdim), position, KthvalueBackward0, "kthvalue"))


@backward(batched=True)
def MedianBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """PyTorch's evenly_distribute_backward: ``grad / count`` on each of the ``count`` elements
    equal to the median (the NaNs, when it is NaN), zero elsewhere."""
    g = per_sample_scalar(grads[0], self.mask.ndim, batch)
    return (where(self.mask, g / self.count, 0.0),)


# The forms of ``median``, for type checkers (``Tensor.median``'s declaration is made from them).
@overload
def median(input: Tensor) -> Tensor: ...
@overload
def median(input: Tensor, dim: int, keepdim: bool = False) -> ValuesIndices: ...


@op(MedianBackward0, MedianBackward1)
def median(input: Tensor, dim: int = UNSET, keepdim: bool = UNSET) -> Tensor | ValuesIndices:
    """The median, as ``torch.median``: the lower of the two middle values for an even count.

    ``median(input)``: of all elements (NaN if any is NaN), its gradient shared evenly among the
    elements equal to it. ``median(input, dim, keepdim=False)``: a ``(values, indices)`` named
    tuple per slice (a slice with a NaN gives its first NaN).
    """
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("median", input)
    if dim is not UNSET:
        if dim is None:  # (PyTorch's dim has no None)
            raise TypeError("median(): argument 'dim' (position 2) must be int, not NoneType")
        return MedianResult(*_select(input, dim, bool(keepdim), lambda size, d: (size - 1) // 2, MedianBackward1, "median"))
    if keepdim is not UNSET:
        raise TypeError('median() missing 1 required positional arguments: "dim"')
    data, xp = input.data, input._device.xp
    flat = data.reshape(-1)
    if flat.size == 0:  # NaN in the input's dtype (an integer one's: the C cast's value, as PyTorch)
        value = quietly(lambda: xp.asarray(xp.nan).astype(data.dtype))
    elif data.dtype == np.bool_:
        raise NotImplementedError('"median_cpu" not implemented for \'Bool\'')
    else:
        value = xp.sort(flat)[(flat.size - 1) // 2]  # (NaN sorts last: a NaN anywhere is caught below)
        if data.dtype.kind == "f" and xp.isnan(flat).any():
            value = xp.asarray(xp.nan, dtype=data.dtype)
    out = like(xp.asarray(value), input)
    if needs_grad(input):
        mask = xp.isnan(data) if xp.isnan(value) else data == value
        node = attach(MedianBackward0((edge_of(input),)), out)
        node.mask, node.count = mask, float(mask.sum().item())
    return out


TENSOR_METHODS = {"sort": sort, "argsort": argsort, "topk": topk, "kthvalue": kthvalue, "median": median}


# ------------------------------------------------------------------------------ unique, unique_consecutive
def _no_derivative(name: str, op_name: str) -> Any:
    """PyTorch's node for ``op_name``, which has no derivative formula: its backward raises."""

    def rule(self: Any, grads: list[Any], batch: int = 0) -> Any:
        raise NotImplementedError(f"the derivative for '{op_name}' is not implemented.")

    rule.__name__ = rule.__qualname__ = name
    rule.__doc__ = f"PyTorch's ``{name}``: ``{op_name}`` has no derivative (its backward raises)."
    return backward(name=name, batched=True)(rule)


Unique2Backward0 = _no_derivative("Unique2Backward0", "_unique2")
UniqueDimBackward0 = _no_derivative("UniqueDimBackward0", "unique_dim")
UniqueConsecutiveBackward0 = _no_derivative("UniqueConsecutiveBackward0", "unique_consecutive")


def _unique(input: Tensor, dim: int | None, sort: bool, fname: str) -> tuple[Any, Any, Any]:
    """The distinct values (slices along ``dim``) of ``input``, sorted (``sort``) or of each run
    of equal neighbours; the inverse indices and the counts. NaNs are all distinct, as PyTorch's."""
    if not isinstance(input, Tensor):
        raise not_tensor(fname, input)
    xp, x = input._device.xp, input.data
    if dim is None:
        rows, rest = x.reshape(-1, 1), ()
    else:
        if not x.ndim:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = _dim(dim, x.ndim)
        moved = xp.moveaxis(x, d, 0)
        rest = moved.shape[1:]
        if any(s == 0 for s in rest):
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        rows = moved.reshape(moved.shape[0], int(np.prod(rest, dtype=np.int64)))
    n = rows.shape[0]
    if sort:
        order = xp.lexsort(rows.T[::-1]) if rows.shape[1] > 1 else xp.argsort(rows[:, 0], kind="stable")
    else:
        order = xp.arange(n)
    s = rows[order]
    first = xp.ones(n, dtype=bool)
    if n > 1:
        first[1:] = (s[1:] != s[:-1]).any(axis=1)
    group = xp.cumsum(first) - 1
    inverse = xp.empty(n, dtype=np.int64)
    inverse[order] = group
    starts = xp.flatnonzero(first)
    counts = xp.diff(xp.append(starts, n)).astype(np.int64)
    values = s[first].reshape(-1) if dim is None else xp.moveaxis(s[first].reshape(-1, *rest), 0, d)
    return values, inverse.reshape(x.shape) if dim is None else inverse, counts


def _unique_result(input: Tensor, found: tuple[Any, Any, Any], node: Any, inverse: bool, counts: bool) -> Any:
    values = like(found[0], input)
    if needs_grad(input) and values.data.dtype.kind in "fc":
        attach(node((edge_of(input),)), values)
    if not (inverse or counts):
        return values
    return (values, *(like(a, input) for a, want in zip(found[1:], (inverse, counts)) if want))


@op()
def unique(
    input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """The distinct elements of ``input`` (the distinct slices along ``dim``), in ascending order
    (also with ``sorted=False``, as PyTorch's CPU kernel); with ``return_inverse`` each element's
    index among them, with ``return_counts`` how often each occurs. NaNs are all distinct."""
    found = _unique(input, dim, True, "unique")
    node = Unique2Backward0 if dim is None else UniqueDimBackward0
    return _unique_result(input, found, node, return_inverse, return_counts)


@op()
def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """``input`` with each run of equal neighbours (slices along ``dim``) kept once; with
    ``return_inverse`` each element's run, with ``return_counts`` each run's length."""
    found = _unique(input, dim, False, "unique_consecutive")
    return _unique_result(input, found, UniqueConsecutiveBackward0, return_inverse, return_counts)


TENSOR_METHODS.update({"unique": unique, "unique_consecutive": unique_consecutive})
