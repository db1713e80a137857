"""Assignment in place: ``zero_``, ``fill_``, ``copy_`` and ``tensor[index] = value`` (a basic
index copies into the view it selects; an advanced one, masks and integer arrays, is PyTorch's
``index_put_``). The arithmetic in-place ops are in aiograd/_ops/inplace.py, which binds these
as Tensor methods too.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import scalar_type_name
from .._core._views import View
from .._devices._device import CPU
from ._inplace_util import (
    _bump,
    _check_shape,
    _error,
    _operand,
    _overlapping,
    _recording,
    _unlock,
    _write_overlapping,
)
from ._registry import backward, op
from ._scalar_cast import F64, scalar_to
from ._util import Node, Tensor, edge_of, first_order, grad_enabled, like
from .casting import to
from .indexing import (
    IndexBackward0,
    _normalize,
    _take,
    _torch_message,
    check_index_devices,
)
from .rebase import CopySlices, rebase_inplace
from .shape import sum_to_size

if TYPE_CHECKING:
    from .._core._types import Index, TensorLike

__all__ = ["copy_", "fill_", "index_put_", "setitem", "zero_"]


# ------------------------------------------------------------------------------ zero_, fill_, copy_
def _grad_to(g: Tensor, shape: tuple[int, ...], dtype: Any) -> Tensor:
    """A gradient brought back to an operand that was broadcast (and cast) into the output."""
    if g.data.shape != shape:
        if len(shape) > g.data.ndim:
            g = g.reshape((1,) * (len(shape) - g.data.ndim) + g.data.shape)
        g = sum_to_size(g, shape)
    if g.data.dtype != dtype:
        g = g.to(dtype)
    return g


def _zeros_grad(g: Tensor) -> Tensor:
    return like(g._device.xp.zeros(g.data.shape, dtype=g.data.dtype), g)


def _constant(value: Any, device_of: Tensor) -> Tensor:
    """A number or array as a tensor on ``device_of``'s device."""
    return like(device_of._device.xp.asarray(value), device_of)


@backward(batched=True)
def ZeroBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    return (_zeros_grad(grads[0]),)


@backward(batched=True)
def FillBackward2(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``fill_`` with a number."""
    return (_zeros_grad(grads[0]),)


# Not batched (runs once per sample under ``is_grads_batched``): the value's gradient is a sum over
# the sample, which the rule would take over the batch dims too.
@backward()
def FillBackward3(self: Any, grads: list[Any]) -> Any:
    """``fill_`` with a 0-dim tensor: every element's gradient goes to the value."""
    g = grads[0]
    e_self, e_value = self.next_edges
    value_grad = None
    if e_value is not None:
        value_grad = _grad_to(g.sum(), (), self.dtype)
        if value_grad._device is not self.src_device:
            value_grad = to(value_grad, self.src_device)
    return (_zeros_grad(g) if e_self is not None else None, value_grad)


# Not batched (runs once per sample under ``is_grads_batched``): it sums ``src``'s gradient back to
# ``src``'s unbatched shape.
@backward()
def CopyBackwards(self: Any, grads: list[Any]) -> Any:
    """``copy_``: the old values are gone (zero gradient); ``src`` gets the gradient, summed
    over the broadcast, cast to its dtype and moved to its device."""
    g = grads[0]
    e_self, e_src = self.next_edges
    grad_src = None
    if e_src is not None:
        grad_src = _grad_to(g, self.shape, self.dtype)
        if grad_src._device is not self.src_device:
            grad_src = to(grad_src, self.src_device)
    return (_zeros_grad(g) if e_self is not None else None, grad_src)


def _fill(self: Tensor, value: Any) -> None:
    """Fill with ``value``: a number (PyTorch's overflow check first), or a 0-dim array (a
    tensor's, cast as ``copy_`` casts)."""
    data = self.data
    number = type(value) is not np.ndarray
    if number and (type(value) is not float or data.dtype is not F64):
        value = scalar_to(value, data.dtype)
    try:
        data.fill(value)
    except (ValueError, TypeError) as e:
        if _unlock(self, e):
            return _fill(self, value)
        if number and isinstance(e, ValueError) and not data.flags.writeable and _overlapping(data):
            # an expanded tensor: PyTorch's fill_ with a number writes it (one value everywhere)
            _write_overlapping(self, self._device.xp.full(data.shape, value, dtype=data.dtype))
        else:
            raise _error(e, self) from None
    _bump(self)


@op(ZeroBackward0)
def zero_(self: Tensor) -> Tensor:
    """Set every element to 0 in place."""
    if _recording(self):
        node = ZeroBackward0((edge_of(self),))
        _fill(self, 0)
        rebase_inplace(self, node, 0)
        return self
    _fill(self, 0)
    return self


@op(FillBackward2, FillBackward3)
def fill_(self: Tensor, value: TensorLike) -> Tensor:
    """Set every element to ``value`` (a number or a 0-dim tensor) in place."""
    if isinstance(value, Tensor) and value.data.ndim:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.data.ndim} dimensions."
        )
    if _recording(self, value):
        if isinstance(value, Tensor):
            node: Node = FillBackward3((edge_of(self), edge_of(value)))
            node.dtype, node.src_device = value.data.dtype, value._device
        else:
            node = FillBackward2((edge_of(self),))
        _fill(self, value.data if isinstance(value, Tensor) else value)
        rebase_inplace(self, node, 0)
        return self
    _fill(self, value.data if isinstance(value, Tensor) else value)
    return self


def _assign(self: Tensor, src: Any) -> None:
    data = self.data
    try:
        self._device.xp.copyto(data, src, casting="unsafe")
    except (ValueError, TypeError) as e:
        if _unlock(self, e):
            return _assign(self, src)
        raise _error(e, self, src) from None
    _bump(self)


@op(CopyBackwards)
def copy_(self: Tensor, src: TensorLike, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype, from any device) into this
    tensor in place."""
    s = src.data if isinstance(src, Tensor) else np.asarray(src)
    if _recording(self, src):
        _check_shape(self, s)
        node = CopyBackwards((edge_of(self), edge_of(src)))
        node.shape, node.dtype = s.shape, s.dtype
        node.src_device = src._device if isinstance(src, Tensor) else self._device
        _assign(self, s)
        rebase_inplace(self, node, 0)
        return self
    if s.ndim > self.data.ndim:  # (numpy would drop leading 1s; PyTorch only expands ``src``)
        _check_shape(self, s)
    _assign(self, s)
    return self


# ------------------------------------------------------------------------------ __setitem__
# Not batched (runs once per sample under ``is_grads_batched``): it sums the values' gradient back
# to their unbatched shape and writes at an unbatched index (indexing's scatter of the same name,
# ``indexing.IndexPutBackward0``, is batched).
@backward()
def IndexPutBackward0(self: Any, grads: list[Any]) -> Any:
    """``self[indices] = values``: the overwritten positions get no gradient; ``values`` gets
    the gradient at those positions (summed over its broadcast)."""
    g = grads[0]
    e_self, e_values = self.next_edges
    adv = self.index
    grad_self = grad_values = None
    if e_self is not None:
        if not first_order():
            keep = g._device.xp.ones(g.data.shape, dtype=bool)
            keep[adv] = False
            grad_self = g * keep
        else:
            z = g.data.copy()
            z[adv] = 0
            grad_self = like(z, g)
    if e_values is not None:
        taken = _take(g, (None, adv, self.accumulate), IndexBackward0)
        grad_values = _grad_to(taken, self.values_shape, self.values_dtype)
    return (grad_self, grad_values)


def index_put_(self: Tensor, adv: tuple[Any, ...], values: Any, accumulate: bool = False) -> Tensor:
    """``self[adv] = values`` for a normalised advanced index (see ``indexing._normalize``)."""
    values = _operand(self, values)
    v = values.data if isinstance(values, Tensor) else values
    rec = _recording(self, values)
    if rec:
        node = IndexPutBackward0((edge_of(self), edge_of(values)))
        node.index, node.accumulate = adv, accumulate
        node.values_shape, node.values_dtype = np.shape(v), getattr(v, "dtype", None)
    try:
        self.data[adv] = v
    except IndexError as e:  # (numpy's words for an index out of range)
        raise IndexError(_torch_message(str(e), self.data.ndim, adv)) from None
    except (ValueError, TypeError) as e:
        if isinstance(e, ValueError) and type(self) is View and _overlapping(self.data):
            _put_expanded(self, adv, v)
        elif not _unlock(self, e):
            raise _error(e, self) from None
        else:
            self.data[adv] = v
    _bump(self)
    if rec:
        rebase_inplace(self, node, 0)
    return self


EXPANDED_INDEX_PUT = (
    "Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing "
    "this operation. This also applies to advanced indexing e.g. tensor[indices] = tensor"
)
EXPANDED_MASKED_FILL = (
    "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
    "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar"
)


def _put_expanded(self: View, adv: tuple[Any, ...], v: Any) -> None:
    """``index_put_`` into an expanded view: PyTorch writes it, with its deprecation warnings
    (``masked_fill_``'s too where one value goes to one mask); the elements that change are
    written into the base's memory (``_write_overlapping``)."""
    warnings.warn(EXPANDED_INDEX_PUT, UserWarning, stacklevel=4)
    arrays = [it for it in adv if isinstance(it, np.ndarray)]
    if np.size(v) == 1 and len(arrays) == 1 and arrays[0].dtype.kind == "b" and arrays[0].ndim:
        warnings.warn(EXPANDED_MASKED_FILL, UserWarning, stacklevel=4)
    result = self.data.copy()
    result[adv] = v
    _write_overlapping(self, result)


def _value_message(target: tuple[int, ...], value: tuple[int, ...], basic: bool) -> str | None:
    """PyTorch's message when ``value`` cannot be written at an index whose result has shape
    ``target``; None if it can."""
    trimmed = tuple(value)
    while len(trimmed) > len(target) and trimmed[0] == 1:
        trimmed = trimmed[1:]  # leading 1s are dropped, as in PyTorch
    if not basic:
        try:
            if np.broadcast_shapes(trimmed, target) == target:
                return None
        except ValueError:
            pass
        return (
            f"shape mismatch: value tensor of shape {list(value)} cannot be broadcast to indexing "
            f"result of shape {list(target)}"
        )
    if len(trimmed) > len(target):
        return (
            f"expand(aiograd.Tensor{{{list(value)}}}, size={list(target)}): the number of sizes "
            f"provided ({len(target)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({len(value)})"
        )
    lead = len(target) - len(trimmed)
    for i, size in enumerate(trimmed):
        if size != 1 and size != target[lead + i]:
            return (
                f"The expanded size of the tensor ({target[lead + i]}) must match the existing size "
                f"({size}) at non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(trimmed)}"
            )
    return None


def _check_value(target: np.ndarray[Any, Any], adv: Any, value: Any) -> None:
    try:
        shape = target.shape if adv is None else target[adv].shape
    except IndexError as e:  # (numpy's words for an index out of range)
        raise IndexError(_torch_message(str(e), target.ndim, adv)) from None
    message = _value_message(shape, np.shape(value), adv is None)
    if message is not None:
        raise RuntimeError(message)


def _full(basic: tuple[Any, ...], shape: tuple[int, ...]) -> bool:
    """True if the basic index takes everything (only full slices and Ellipsis) as PyTorch's
    setitem tells it: a slice whose step is 1, whose start is 0 as written (``-n:`` is no full
    slice, and gets a CopySlices) and whose stop is past the end."""
    consumed = sum(1 for it in basic if it is not Ellipsis)
    d = 0
    for it in basic:
        if it is Ellipsis:
            d += len(shape) - consumed
        elif (
            isinstance(it, slice) and d < len(shape) and (it.step is None or it.step == 1)
            and (it.start is None or it.start == 0) and (it.stop is None or it.stop >= shape[d])
        ):
            d += 1
        else:
            return False
    return True


def _in_sequence(self: Tensor, basic: Any, adv: Any, accumulate: bool, cls: Any, value: Any) -> None:
    """``self[index] = value`` in PyTorch's sequence, so that the checks and the graph are
    PyTorch's: the basic part is a view (none for an index of full slices), written with
    ``copy_`` (``fill_`` for one value) or ``index_put_``."""
    v = value.data if isinstance(value, Tensor) else value
    one = np.shape(v) == ()  # (a 0-d value is ``fill_``ed; one of 1s, 0-d once trimmed, is copied)
    if isinstance(value, Tensor) and v.ndim and v.shape[0] == 1:  # PyTorch drops leading 1s (a view)
        lead = next((i for i, n in enumerate(v.shape) if n != 1), v.ndim)
        value = value.reshape(v.shape[lead:])
        v = value.data
    if basic is None or _full(basic, self.data.shape):
        target = self
    else:
        target = _take(self, (basic, None, False), cls)
    _check_value(target.data, adv, v)
    if adv is not None:
        index_put_(target, adv, value, accumulate)
    elif one and target.data.ndim:
        fill_(target, value if isinstance(value, Tensor) else _constant(v, target))
    else:
        copy_(target, value)


def _check_empty_dims(view: Any, adv: tuple[Any, ...]) -> None:
    """PyTorch's first check of an advanced index into an empty tensor (before the dtypes'):
    indices into a dim of size 0."""
    consumed = sum(it.ndim if isinstance(it, np.ndarray) and it.dtype.kind == "b" else it is not Ellipsis for it in adv)
    d = 0
    for it in adv:
        if it is Ellipsis:
            d += view.ndim - consumed
        elif isinstance(it, np.ndarray) and it.dtype.kind == "b":
            d += it.ndim
        else:
            if isinstance(it, np.ndarray) and it.size and d < view.ndim and view.shape[d] == 0:
                raise IndexError("index is out of bounds for dimension with size 0")
            d += 1


def _check_broadcast(adv: tuple[Any, ...]) -> None:
    """PyTorch's IndexError for index tensors whose shapes do not broadcast (a mask counts as
    one index vector per dim)."""
    shapes: list[tuple[int, ...]] = []
    for it in adv:
        if isinstance(it, np.ndarray):
            shapes.extend([(int(it.sum()),)] * it.ndim if it.dtype.kind == "b" else [it.shape])
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        listed = ", ".join(str(list(s)) for s in shapes)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes {listed}") from None


def _masked_fill(adv: tuple[Any, ...], value: Tensor) -> bool:
    """True where PyTorch's ``index_put_`` is a ``masked_fill_`` with the value as a number (so
    cast, unlike a tensor of values): one CPU value and one boolean mask of 1+ dims as the only
    index tensor (``canDispatchToMaskedFill``)."""
    if value.data.size != 1 or value._device is not CPU:
        return False
    arrays = [it for it in adv if isinstance(it, np.ndarray)]
    return len(arrays) == 1 and arrays[0].dtype.kind == "b" and arrays[0].ndim > 0


@op(IndexPutBackward0, CopySlices, name="setitem", top_level=False)
def setitem(self: Tensor, index: Index | tuple[Index, ...], value: TensorLike) -> None:
    """``self[index] = value``: a basic index copies ``value`` into the view ``self[index]``; an
    advanced one (masks, integer arrays) is PyTorch's ``index_put_`` (on the view of its basic
    part, if any). Gradients flow to ``value`` when it requires grad."""
    data = self.data
    check_index_devices(self, index)
    try:
        (basic, adv, accumulate), cls = _normalize(data, index)
    except IndexError as e:
        msg = _torch_message(str(e), data.ndim, index)
        if msg == str(e):
            raise
        raise IndexError(msg) from None
    if adv is not None:
        view = data if basic is None else data[basic]
        if not view.size:  # (nothing is written: PyTorch checks no bounds but those of empty dims)
            _check_empty_dims(view, adv)
            adv = tuple(np.zeros_like(it) if isinstance(it, np.ndarray) and it.dtype.kind != "b" else it for it in adv)
        if isinstance(value, Tensor) and value.data.dtype != data.dtype and not _masked_fill(adv, value):
            _check_broadcast(adv)  # (PyTorch's IndexError first)
            raise RuntimeError(  # PyTorch casts no tensor here
                "Index put requires the source and destination dtypes match, got "
                f"{scalar_type_name(data.dtype)} for the destination and {scalar_type_name(value.data.dtype)} for the source."
            )
        value = _operand(self, value)  # index_put_'s rule; a basic index copies from any device
    if isinstance(value, Tensor):
        v = value.data
    else:
        v = value if type(value) is float and data.dtype is F64 else scalar_to(value, data.dtype)
        value = v
    if grad_enabled() and (
        self._requires_grad
        or (isinstance(value, Tensor) and value._requires_grad)
        or (type(self) is View and self._base._requires_grad)  # type: ignore[union-attr]
    ):
        return _in_sequence(self, basic, adv, accumulate, cls, value)
    try:
        if adv is None:
            data[basic] = v
        else:
            (data if basic is None else data[basic])[adv] = v
    except IndexError as e:  # (numpy's words for an index out of range)
        raise IndexError(_torch_message(str(e), data.ndim, index)) from None
    except (ValueError, TypeError) as e:
        if isinstance(e, ValueError) and not data.flags.writeable and type(self) is View:
            # (a read-only array: an expanded tensor, whose selected part PyTorch may write)
            return _in_sequence(self, basic, adv, accumulate, cls, value)
        if isinstance(e, ValueError) and not (not data.flags.writeable and _overlapping(data)):
            target = data if basic is None else data[basic]
            _check_value(target if type(target) is np.ndarray else np.asarray(target), adv, v)
        raise _error(e, self) from None
    _bump(self)
