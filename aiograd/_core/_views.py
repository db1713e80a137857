"""Views: tensors that share their base's array and version counter (PyTorch's view tracking).

The view ops (``view``/``reshape`` when numpy can view, ``transpose``, ``permute``, ``T``, ``mT``,
``squeeze``, ``unsqueeze``, ``expand``, basic indexing) return their numpy view wrapped as a
:class:`View`, a Tensor subclass, with ``_base`` pointing to the root base (the first tensor of
the chain that is not itself a view). A plain Tensor keeps ``grad_fn``, ``_requires_grad`` and
``_vc`` as plain attributes; a View reads them through properties, so that only views pay for
what views need:

- ``_vc`` is the base's version counter, so that an in-place op on the base or on any of its
  views bumps them all (and saved views see it).
- ``grad_fn`` is regenerated lazily, as PyTorch does: the view remembers the base's version at
  which its ``grad_fn`` was set (``_attr_version``); when the base's version has moved since
  (an in-place op on the base or on another view changed the data the view shows), the next read
  makes a fresh ``AsStridedBackward0`` on the base's current ``grad_fn``
  (:func:`regenerate_grad_fn`), so gradients flow through the latest version. Its formula is
  raw array work (zeros of the base's size, the gradient put at the view's elements), recorded
  under create_graph as ``AsStridedScatterBackward0``, whose formula (reading the view's elements
  back) is recorded as ``AsStridedBackward0`` again: differentiable to any order without
  importing an op.

Creating a view costs one store more than a plain op output (``_base``); the base's version is
stored too only when it is not 0. ``detach()`` shares the counter and the array but is not a view
(as in PyTorch). An in-place op on a view rebases the base (``CopySlices``, in
``aiograd/_ops/inplace.py``); ``view_index`` locates the view's elements in the base for it.

Each view remembers how it was made, PyTorch's ``CreationMeta`` (``_creation``): under no_grad,
as one of several outputs of one node (``split``, ``chunk``, ``unbind``, a custom Function with
several differentiable outputs), or by a custom Function. A view of such a view inherits it. Such
a view may not be modified in place while a gradient is involved, and once its base or another
view of it was modified in place its ``grad_fn`` cannot be read: both raise PyTorch's error
(``view_rebase_error``, PyTorch's ``handle_view_on_rebase``), since the rebase would give wrong
gradients.

A view made under no_grad of a tensor that requires grad requires grad too, as in PyTorch, but
its gradient goes nowhere (it has no grad accumulator: ``Tensor._edgeless``); a view of it made
with grad mode on records its op, and modifying that one in place gives PyTorch's "view of a
view" message. Where aiograd differs: ``inference_mode`` is ``no_grad`` here, so its views give
the no_grad message. Views do not follow a ``.data`` reassignment of their base.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._base._grad_mode import grad_enabled
from .._base._grad_mode import is_inference_mode_enabled as inference_enabled
from .._devices._device import CPU
from ._node import Node, edge_of, hooks_of
from ._tensor import Tensor

__all__ = [
    "View", "make_view", "view_index", "regenerate_grad_fn", "move_retains_grad",
    "AsStridedBackward0", "AsStridedScatterBackward0", "view_rebase_error",
    "DEFAULT", "IN_CUSTOM_FUNCTION", "MULTI_OUTPUT_NODE", "NO_GRAD_MODE", "INFERENCE_MODE",
]

# How a view was made (PyTorch's CreationMeta, torch/csrc/autograd/variable.h); all but DEFAULT
# forbid modifying the view in place while a gradient is involved.
DEFAULT, IN_CUSTOM_FUNCTION, MULTI_OUTPUT_NODE, NO_GRAD_MODE, INFERENCE_MODE = 0, 1, 2, 3, 4


class View(Tensor):
    """A tensor that views another one's array (see the module docstring)."""

    _fn: Any = None  # the grad_fn as last set or regenerated
    _rg: bool = False  # requires_grad as set on the view itself
    _attr_version: int = 0  # the base's version when ``_fn`` was set
    _creation: int = DEFAULT  # how the view was made (see the module docstring)

    @property
    def grad_fn(self) -> Any:  # type: ignore[override]
        vc = self._base._vc  # type: ignore[union-attr]
        if vc is None or vc[0] == self._attr_version:
            return self._fn
        return regenerate_grad_fn(self)

    @grad_fn.setter
    def grad_fn(self, fn: Any) -> None:
        self._fn = fn
        vc = self._base._vc  # type: ignore[union-attr]
        if vc is not None and vc[0] != self._attr_version:
            self._attr_version = vc[0]

    @property
    def _requires_grad(self) -> bool:  # type: ignore[override]
        # Without reading grad_fn (which may raise, see view_rebase_error): a regenerated
        # grad_fn exists exactly when the base moved on and requires grad.
        if self._rg or self._fn is not None:
            return True
        base: Tensor = self._base  # type: ignore[assignment]
        if self._creation == NO_GRAD_MODE:
            # PyTorch: a view requires grad when its base does, even one made under no_grad
            # (which gets no gradient: ``_edgeless``).
            return base._requires_grad
        vc = base._vc
        return vc is not None and vc[0] != self._attr_version and base._requires_grad

    @_requires_grad.setter
    def _requires_grad(self, value: bool) -> None:
        self._rg = value

    @property
    def _edgeless(self) -> bool:  # type: ignore[override]
        # Made under no_grad, without a history of its own: its gradient goes nowhere, as
        # PyTorch's grad_accumulator() is null for a view that does not require grad itself.
        return self._creation == NO_GRAD_MODE and not self._rg and self._fn is None

    @property
    def _vc(self) -> list[int]:  # type: ignore[override]
        base = self._base
        vc = base._vc  # type: ignore[union-attr]
        if vc is None:
            vc = base._vc = [0]  # type: ignore[union-attr]
        return vc

    @_vc.setter
    def _vc(self, value: list[int]) -> None:
        self._base._vc = value  # type: ignore[union-attr]


# ``type(view).__name__`` reads "Tensor" in messages, as for every other tensor.
View.__name__ = View.__qualname__ = "Tensor"

_new = object.__new__


def make_view(input: Tensor, data: np.ndarray[Any, Any], creation: int = DEFAULT) -> Tensor:
    """Wrap ``data``, a numpy view of ``input.data``, as a view of ``input``'s root base.

    ``creation``: MULTI_OUTPUT_NODE for the outputs of split and the like. Under no_grad it is
    NO_GRAD_MODE; a view of a view that was not made by default keeps its base view's (PyTorch's
    ``propagate_creation_meta``, where only inference mode wins over the new view's).
    """
    out = _new(View)
    if not grad_enabled():
        # inference_mode() is no_grad() in aiograd, but PyTorch words its errors differently
        creation = INFERENCE_MODE if inference_enabled() else NO_GRAD_MODE
    if type(input) is View and input._creation and (  # type: ignore[attr-defined]
        not creation or input._creation == INFERENCE_MODE  # type: ignore[attr-defined]
    ):
        creation = input._creation  # type: ignore[attr-defined]
    if creation:
        out._creation = creation
    out.data = data
    if input._device is not CPU:
        out._device = input._device
    base = input._base
    if base is None:
        base = input
    out._base = base
    vc = base._vc
    if vc is not None and vc[0]:
        out._attr_version = vc[0]
    return out


# ------------------------------------------------------------------------------ regeneration
def regenerate_grad_fn(view: View) -> Node | None:
    """A view's grad_fn after its base's version moved: ``AsStridedBackward0`` on the base's
    current history (None while neither had any). Also called by the in-place ops for the view
    they just modified."""
    base: Tensor = view._base  # type: ignore[assignment]
    old = view._fn
    if old is None and not base._requires_grad:
        return None
    if view._creation:
        raise RuntimeError(view_rebase_error(view, True))
    node = AsStridedBackward0((edge_of(base),))
    node.shape, node.size = base.data.shape, base.data.size
    node.flat, node.overlap = view_index(view.data, base.data)
    vc = base._vc
    view._fn = node
    view._attr_version = 0 if vc is None else vc[0]
    if view._retains_grad:
        move_retains_grad(old, 0, node, 0)
    return node


_TAILS = {
    MULTI_OUTPUT_NODE: (
        " This view is the output of a function that returns multiple views. Such functions do "
        "not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one."
    ),
    NO_GRAD_MODE: (
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
        "your code by moving both the view and the inplace either both inside the no_grad block "
        "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
        "to be tracked)."
    ),
    INFERENCE_MODE: (
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
        "your code by moving both the view and the inplace either both inside the inference_mode "
        "block (if you don't want the inplace to be tracked) or both outside (if you want the "
        "inplace to be tracked)."
    ),
    IN_CUSTOM_FUNCTION: (
        " This view was created inside a custom Function (or because an input was returned "
        "as-is) and the autograd logic to handle view+inplace would override the custom backward "
        "associated with the custom Function, leading to incorrect gradients. This behavior is "
        "forbidden. You can fix this by cloning the output of the custom Function."
    ),
}


def view_rebase_error(view: View, indirect: bool) -> str:
    """PyTorch's message (``handle_view_on_rebase``) for a view that may not be rebased: it is
    being modified in place, or (``indirect``) its base or another view of it was."""
    modified = "its base or another view of its base has been" if indirect else "is being"
    creation, fn = view._creation, view._fn
    if fn is not None:
        # PyTorch names the forward op: the node's name without "Backward" and its number.
        op = fn.name().rstrip("0123456789").removesuffix("Backward")
        head = f"Output {view.output_nr} of {op} is a view"
    else:
        head = "A view"
    if creation == INFERENCE_MODE:
        if fn is not None:
            head += " of a view which"
        message = f"{head} was created in inference mode and {modified} modified inplace in normal mode."
    elif creation == NO_GRAD_MODE or fn is None:
        if fn is not None:
            head += " of a view which"
        message = f"{head} was created in no_grad mode and {modified} modified inplace with grad mode enabled."
    else:
        message = f"{head} and {modified} modified inplace."
    return message + _TAILS.get(creation, "")


def move_retains_grad(old: Node | None, old_nr: int, new: Node, new_nr: int) -> None:
    """A retained grad follows the tensor to its new grad_fn (the latest version's gradient)."""
    if old is None or old._hooks is None:
        return
    ref = old._hooks.retains_grad.pop(old_nr, None)
    if ref is not None:
        hooks_of(new).retains_grad[new_nr] = ref


class _ViewGeometry(Node):
    """A node that maps between a view and its base: the base's ``shape`` and ``size``, and
    ``flat``, the flat index in the base of each element of the view (``view_index``), with
    ``overlap`` True where several elements of the view share one of the base."""

    shape: tuple[int, ...]
    size: int
    flat: np.ndarray[Any, Any]
    overlap: bool

    def _record(self, out: Tensor, grad: Tensor, adjoint: type[_ViewGeometry]) -> Tensor:
        """Under create_graph, record ``out`` (computed from ``grad``) as ``adjoint``."""
        if grad._device is not CPU:
            out._device = grad._device
        if grad_enabled() and grad._requires_grad:
            node = adjoint((edge_of(grad),))
            node.shape, node.size, node.flat, node.overlap = self.shape, self.size, self.flat, self.overlap
            out._requires_grad = True
            out.grad_fn = node
        return out


class AsStridedBackward0(_ViewGeometry):
    """A view's grad_fn once its base changed (PyTorch's, after an in-place op on the base or a
    view): the gradient lands on the view's region of zeros shaped like the base (summed where
    a broadcast view repeats an element)."""

    def apply(self, grads: list[Tensor | None]) -> Sequence[Tensor | None]:
        g = grads[0]
        if g is None:
            return (None,)
        xp = g._device.xp
        z = xp.zeros(self.size, dtype=g.data.dtype)
        flat = self.flat if xp is np else xp.asarray(self.flat)  # (index arrays on the device)
        if self.overlap:
            xp.add.at(z, flat, g.data)
        else:
            z[flat] = g.data
        return (self._record(_wrap(z.reshape(self.shape)), g, AsStridedScatterBackward0),)


class AsStridedScatterBackward0(_ViewGeometry):
    """The backward of ``AsStridedBackward0``'s formula (recorded under create_graph): the view's
    region of the gradient, read back out (whose own backward is ``AsStridedBackward0``)."""

    def apply(self, grads: list[Tensor | None]) -> Sequence[Tensor | None]:
        g = grads[0]
        if g is None:
            return (None,)
        flat = self.flat if g._device.xp is np else g._device.xp.asarray(self.flat)
        return (self._record(_wrap(g.data.reshape(-1)[flat]), g, AsStridedBackward0),)


_wrap = Tensor._wrap


def _address(a: Any) -> int:
    """The address of ``a``'s first element: a numpy array's, or a CuPy array's in device memory
    (the geometry below needs only differences of addresses, shapes and strides)."""
    if type(a) is np.ndarray:
        return int(a.__array_interface__["data"][0])
    return int(a.data.ptr)


def view_index(view: np.ndarray[Any, Any], base: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], bool]:
    """Where each element of ``view`` lies in ``base``: flat (C order) indices into ``base``, in
    ``view``'s shape (a numpy array, also for CuPy arrays), and whether two elements of
    ``view`` share one (a broadcast view).

    Works from the arrays' memory layout alone, like PyTorch's ``as_strided`` geometry, so any
    chain of numpy views (slices with any step, transposes, reshapes, broadcasts) is handled.
    """
    overlap = any(s == 0 and n > 1 for n, s in zip(view.shape, view.strides))
    if view.size == 0 or base.size == 0:
        return np.zeros(view.shape, dtype=np.intp), overlap
    item = base.itemsize
    if view.itemsize != item:
        raise RuntimeError("a view must have its base's dtype")

    def extent(a: np.ndarray[Any, Any]) -> tuple[int, int]:
        lo = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
        hi = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0)
        return lo, hi

    base_ptr, view_ptr = _address(base), _address(view)
    if base.flags.c_contiguous:
        # The common case: an element's flat index is its byte offset over the itemsize.
        offset, rem = divmod(view_ptr - base_ptr, item)
        flat = np.full(view.shape, offset, dtype=np.intp)
        for d, (n, s) in enumerate(zip(view.shape, view.strides)):
            step = np.arange(n, dtype=np.intp) * (s // item)
            flat += step.reshape((n,) + (1,) * (view.ndim - d - 1))
        if rem or any(s % item for s in view.strides) or flat.min() < 0 or flat.max() >= base.size:
            raise RuntimeError("a view's memory must lie inside its base's (was .data reassigned?)")
        return flat, overlap
    b_lo, b_hi = extent(base)
    v_lo, v_hi = extent(view)
    start = base_ptr + b_lo
    if view_ptr + v_lo < start or view_ptr + v_hi > base_ptr + b_hi or (view_ptr - start) % item:
        raise RuntimeError("a view's memory must lie inside its base's (was .data reassigned?)")
    marks = np.full((b_hi - b_lo) // item + 1, -1, dtype=np.intp)
    scale = marks.itemsize

    def strided(offset: int, a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        strides = tuple(s // item * scale for s in a.strides)
        return np.lib.stride_tricks.as_strided(marks[offset:], a.shape, strides)

    strided((base_ptr - start) // item, base)[...] = np.arange(base.size).reshape(base.shape)
    flat = strided((view_ptr - start) // item, view).copy()
    if flat.size and flat.min() < 0:
        raise RuntimeError("a view's memory must lie inside its base's (was .data reassigned?)")
    return flat, overlap
