"""Saved tensors: what a Node keeps from the forward pass, checked against in-place changes.

A saved input is kept as the tensor itself. A saved output is kept as its array and version
counter only (the node *is* its grad_fn, so keeping the tensor would be a reference cycle); on
unpack under create_graph it is rebuilt with the node as grad_fn, as PyTorch's SavedVariable does.

Unpacking checks, in PyTorch's order: freed (ERR_BACKWARD_TWICE), a saved non-leaf input since
detached in place (``detach_()`` marks the tensor; ERR_DETACHED_INPLACE), then the version. The
counter is shared by a tensor, its views and its ``detach()`` results (aiograd/_core/_views.py).

Saved-tensor hooks (PyTorch's ``torch.autograd.graph.saved_tensors_hooks``, the public side is
``aiograd.graph``): while a pair of hooks is in effect, a tensor being saved is handed to
``pack_hook`` (under no_grad) and only what it returns is kept; every unpack calls
``unpack_hook`` on that and rebuilds a tensor with the saved tensor's place in the graph (its
grad_fn and output number, or the leaf's AccumulateGrad), as PyTorch's SavedVariable does. With
hooks no version check is made (the hooks own the data). The hooks in effect are a ContextVar, so
each asyncio task (and thread) has its own; a global count of the hook contexts entered lets the
ordinary save skip even the ContextVar read while nobody uses hooks. A hooked SavedTensor is the
same object with its class switched to a ``HookedSavedTensor`` variant, so the ordinary
``unpack`` carries no test for hooks either.
"""

from __future__ import annotations

import contextvars
import re
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._base._grad_mode import _grad_enabled, grad_enabled
from .._devices._device import CPU
from ._anomaly import is_anomaly_enabled
from ._tensor import Tensor

if TYPE_CHECKING:
    from ._node import Node

ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

ERR_DETACHED_INPLACE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
    "This is not supported, please use out-of-place `.detach()` instead"
)

ERR_PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)

_wrap = Tensor._wrap
_new_tensor = object.__new__

PackHook = Callable[[Tensor], Any]
UnpackHook = Callable[[Any], Tensor]

#: The innermost (pack_hook, unpack_hook) pair in effect in this context, or None.
_default_hooks: contextvars.ContextVar[tuple[PackHook, UnpackHook] | None] = contextvars.ContextVar(
    "aiograd_saved_tensors_hooks", default=None
)
#: While ``disable_saved_tensors_hooks(message)`` is in effect: the message; else None.
_disabled_message: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "aiograd_saved_tensors_hooks_disabled", default=None
)
#: How many hook contexts are entered and not yet left, in any context or thread. While it is 0
#: a save does not even read ``_default_hooks`` (the common case: one global test per save).
_hooks_in_use = 0
_count_lock = threading.Lock()


def push_hooks(pack_hook: PackHook, unpack_hook: UnpackHook) -> tuple[PackHook, UnpackHook] | None:
    """Make (pack_hook, unpack_hook) the pair in effect in this context; returns the previous
    pair, for ``pop_hooks``. Raises the disabling message under ``disable_saved_tensors_hooks``."""
    global _hooks_in_use
    message = _disabled_message.get()
    if message is not None:
        raise RuntimeError(message)
    previous = _default_hooks.get()
    with _count_lock:
        _hooks_in_use += 1
    _default_hooks.set((pack_hook, unpack_hook))
    return previous


def pop_hooks(previous: tuple[PackHook, UnpackHook] | None) -> None:
    """Undo one ``push_hooks``: ``previous`` (what it returned) is in effect again."""
    global _hooks_in_use
    _default_hooks.set(previous)
    with _count_lock:
        _hooks_in_use -= 1


def disable_hooks(message: str) -> str | None:
    """Refuse hooks in this context from now on (``push_hooks`` raises ``message``); returns the
    previous message (None: hooks were allowed), for ``restore_hooks_enabled``. As PyTorch, it
    raises ``message`` at once if hooks are in effect already."""
    if _default_hooks.get() is not None:
        raise RuntimeError(message)
    previous = _disabled_message.get()
    _disabled_message.set(message)
    return previous


def restore_hooks_enabled(previous: str | None) -> None:
    """Undo one ``disable_hooks`` (``previous`` is what it returned)."""
    _disabled_message.set(previous)

_TYPE_NAMES = {"float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor"}


class saved_tensors_hooks:
    """Context manager setting a pair of pack / unpack hooks for saved tensors
    (``torch.autograd.graph.saved_tensors_hooks``).

    Inside it, every tensor an operation saves for backward (the ops' own saves and a custom
    Function's ``save_for_backward`` alike) is passed to ``pack_hook(tensor)``, under no_grad,
    and only what that returns is kept in the graph. When backward (or ``ctx.saved_tensors``)
    needs the tensor, ``unpack_hook(packed)`` is called, each time, and must return a tensor with
    the original's content; autograd gives it the original's place in the graph. Hooks apply to
    tensors *saved* inside the block, wherever the backward runs later.

    Rules, as PyTorch's: only the innermost pair applies when blocks nest; an exception in a hook
    propagates as it is; a pack hook may not modify its input in place ("A saved tensor pack hook
    is modifying its input in place. ..."); with hooks no in-place version check is made on
    unpack; after the graph was freed, unpacking raises the "backward through the graph a second
    time" error without calling the hook. To avoid a reference cycle, what ``pack_hook`` returns
    must not hold the tensor itself (return ``x.detach()``, not ``x``).

    The hooks in effect are a context variable: an asyncio task (or thread) sees only the hooks
    it set, or those of the task that created it.

    A note on backward with ``create_graph=True``: the tensors saved by the backward formulas
    are packed with the hooks in effect where ``backward()``/``grad()`` was awaited (nodes run
    in the awaiting task's context, and an offloaded node in a copy of it), which is PyTorch's
    rule (the caller's hooks are restored on the engine's threads). Nodes of a non-CPU device run
    in that device's worker task, whose context was copied when the worker started.
    """

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._previous: list[Any] = []  # one entry per active ``with`` (an instance may nest)

    def __enter__(self) -> None:
        self._previous.append(push_hooks(self.pack_hook, self.unpack_hook))

    def __exit__(self, *exc: object) -> None:
        pop_hooks(self._previous.pop())


class SavedTensor:
    """One tensor saved for backward, with the version it had when saved."""

    __slots__ = (
        "tensor", "data", "version_counter", "version", "output_nr", "requires_grad", "device",
        "hooked",
    )
    hooked: _Packed  # a HookedSavedTensor's record (unset otherwise)

    def __init__(self, tensor: Tensor, is_output: bool) -> None:
        counter = tensor._vc
        if counter is None:
            counter = tensor._vc = [0]
        self.version_counter = counter
        self.version = counter[0]
        if _hooks_in_use:
            hooks = _default_hooks.get()
            if hooks is not None:
                _pack(self, tensor, is_output, hooks)
                return
        if is_output:
            self.tensor = None
            self.data = tensor.data
            self.output_nr = tensor.output_nr
            self.requires_grad = tensor._requires_grad
            self.device = tensor._device
        else:
            self.tensor = tensor

    def unpack(self, node: Node) -> Tensor:
        """Return the saved tensor, raising PyTorch's errors if it was freed or modified."""
        tensor = self.tensor
        if tensor is not None:
            if tensor._detached_inplace and tensor.grad_fn is None:
                raise RuntimeError(ERR_DETACHED_INPLACE)
            if self.version_counter[0] != self.version:
                raise RuntimeError(self._version_message(node))
            return tensor
        counter = self.version_counter
        if counter[0] != self.version:
            raise RuntimeError(self._version_message(node))
        # ``_wrap(self.data)``, inlined: the output's array, already an array
        out = _new_tensor(Tensor)
        out.data = self.data
        out._vc = counter
        device = self.device
        if device is not out._device:  # a non-CPU output (the wrap made a CPU tensor)
            out._device = device
        if self.requires_grad and grad_enabled():
            # Differentiating the formula again must flow through the node that made this output.
            out._requires_grad = True
            out.grad_fn = node
            out.output_nr = self.output_nr
        return out

    def unpack_data(self, node: Node) -> Any:
        """``unpack(node).data`` (the same errors), without building a tensor for a saved
        output: what the first-order array fast paths read."""
        if self.__class__ is SavedTensor and self.tensor is None:
            if self.version_counter[0] != self.version:
                raise RuntimeError(self._version_message(node))
            return self.data
        return self.unpack(node).data

    def _version_message(self, node: Node) -> str:
        data = self.data if self.tensor is None else self.tensor.data
        kind = _TYPE_NAMES.get(str(data.dtype), f"{data.dtype}Tensor")
        shape = ", ".join(str(s) for s in data.shape)
        if self.tensor is None:
            which = f", which is output {self.output_nr} of {_op_name(node.name())},"
        elif self.tensor.grad_fn is not None:
            which = f", which is output {self.tensor.output_nr} of {_op_name(self.tensor.grad_fn.name())},"
        else:
            which = ""
        return (
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [aiograd.{kind} [{shape}]]{which} is at version {self.version_counter[0]}; "
            f"expected version {self.version} instead. {_hint()}"
        )


def _op_name(node_name: str) -> str:
    """The op a node belongs to, as PyTorch 2.13's message names it: ``Exp`` for
    ``ExpBackward0``; a node that is not an op's backward (``CopySlices``) keeps its name."""
    return re.sub(r"Backward\d*$", "", node_name) or node_name


def _hint() -> str:
    if is_anomaly_enabled():
        return (
            "Hint: the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good luck!"
        )
    return (
        "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with aiograd.set_detect_anomaly(True, check_nan=False)."
    )


class _Packed:
    """What a hooked SavedTensor keeps instead of the tensor: what ``pack_hook`` returned, the
    ``unpack_hook`` to call on it, and the tensor's place in the graph (PyTorch's SavedVariable
    ``save_metadata``): the grad_fn of a saved non-leaf input (an older node: no cycle), or the
    AccumulateGrad of a leaf that requires grad (which holds its leaf weakly). A saved output
    gets the node that unpacks it as grad_fn, so nothing refers to that node here."""

    __slots__ = ("packed", "unpack_hook", "is_output", "grad_fn", "accumulator")

    def __init__(self, packed: Any, unpack_hook: UnpackHook, is_output: bool, grad_fn: Any, accumulator: Any) -> None:
        self.packed = packed
        self.unpack_hook = unpack_hook
        self.is_output = is_output
        self.grad_fn = grad_fn
        self.accumulator = accumulator


def _pack(saved: SavedTensor, tensor: Tensor, is_output: bool, hooks: tuple[PackHook, UnpackHook]) -> None:
    """Save ``tensor`` through the hooks in effect (PyTorch's ``set_hooks_and_pack_data``)."""
    pack_hook, unpack_hook = hooks
    saved.tensor = None
    saved.output_nr = tensor.output_nr
    saved.requires_grad = tensor._requires_grad
    grad_fn = None if is_output else tensor.grad_fn
    accumulator = None
    if tensor.grad_fn is None and tensor._requires_grad:
        # The op saving a leaf made its edge first, so the AccumulateGrad exists; if not (a
        # direct save), the leaf is kept weakly and its accumulator looked up at unpack.
        accumulator = tensor._accumulator
        if accumulator is None:
            accumulator = weakref.ref(tensor)
    counter = saved.version_counter
    version = counter[0]
    token = _grad_enabled.set(False)  # the hook runs under no_grad, as in PyTorch
    try:
        packed = pack_hook(tensor)
    finally:
        _grad_enabled.reset(token)
    if counter[0] != version:
        raise RuntimeError(ERR_PACK_INPLACE)
    saved.hooked = _Packed(packed, unpack_hook, is_output, grad_fn, accumulator)
    saved.__class__ = _hooked_variant(type(saved))


class HookedSavedTensor(SavedTensor):
    """A SavedTensor packed by saved-tensor hooks: each unpack calls the unpack hook (PyTorch's
    ``SavedVariable::unpack`` with hooks). No version check: the hooks own the data."""

    __slots__ = ()

    def unpack(self, node: Node) -> Tensor:
        record = self.hooked
        value = record.unpack_hook(record.packed)
        if not isinstance(value, Tensor):
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(value).__name__}"
            )
        grad_fn = node if record.is_output else record.grad_fn
        if grad_fn is None and not self.requires_grad and not value._requires_grad:
            # PyTorch's SavedVariable::unpack: "Avoid detaching if we don't need to": a tensor
            # that needs no graph comes back as the hook returned it, the very object
            # (test_checkpointing_without_reentrant_saved_object_identity).
            return value
        out = _wrap(value.data)
        if value._vc is None:
            value._vc = [0]
        out._vc = value._vc
        if value._device is not CPU:
            out._device = value._device
        if grad_fn is not None:
            out._requires_grad = True
            out.grad_fn = grad_fn
            out.output_nr = self.output_nr
        elif self.requires_grad:
            # A leaf: the rebuilt tensor sends its gradient to the original's AccumulateGrad.
            out._requires_grad = True
            accumulator = record.accumulator
            if type(accumulator) is weakref.ref:
                leaf = accumulator()
                accumulator = None if leaf is None else leaf._accumulator
            out._accumulator = accumulator
        return out


_hooked_variants: dict[type, type] = {SavedTensor: HookedSavedTensor}


def _hooked_variant(cls: type) -> type:
    """The class a hooked instance of ``cls`` becomes: HookedSavedTensor, or for a subclass
    (one whose ``unpack`` picks another node, then calls ``super().unpack``) a class between it
    and HookedSavedTensor, with the same instance layout."""
    variant = _hooked_variants.get(cls)
    if variant is None:
        variant = type(f"Hooked{cls.__name__}", (cls, HookedSavedTensor), {"__slots__": ()})
        _hooked_variants[cls] = variant
    return variant


class _Freed(SavedTensor):
    """Stands in for every saved tensor after ``release_variables``."""

    __slots__ = ()

    def __init__(self) -> None:  # noqa: D107 - one shared instance
        pass

    def unpack(self, node: Node) -> Tensor:
        raise RuntimeError(ERR_BACKWARD_TWICE)


FREED = _Freed()
