"""What every op module uses to record itself: unwrapping, the grad check, attaching a node.

Op pattern (forward and backward side by side, one family per module, both registered in
``_registry``; a unary elementwise op is a single table row instead)::

    @backward(saved=("result",), batched=True)
    def ExpBackward0(self, grads, batch=0):
        return (grads[0] * self.result.unpack(self),)

    @op(ExpBackward0)
    def exp(input: Tensor) -> Tensor:
        out = like(input._device.xp.exp(input.data), input)
        if needs_grad(input):
            node = attach(ExpBackward0((edge_of(input),)), out)
            node.result = save(out, is_output=True)
        return out

Backward formulas use aiograd's own ops, so under ``create_graph=True`` they are recorded too and
higher-order gradients come for free. ``batch`` is the number of leading batch dims of the
gradients (``grad(..., is_grads_batched=True)``; see ``batching``): an elementwise rule
broadcasts them from the right and ignores it, a shape-sensitive one keeps them in front.

Devices: an op's output lives on its inputs' device, and an op mixing devices raises PyTorch's
error. A fresh tensor is on the CPU (a class-level default), so an op places its output only if
its input is elsewhere (``x._device is not CPU``, one identity test); ``like`` and ``on`` do
that, ``common_device`` checks several inputs, and ``casting.place`` is the TensorIterator rule
of the elementwise ops. Numbers and numpy arrays are device-less constants. Backward formulas
keep their gradients on the incoming gradient's device the same way. Math on a tensor's data
goes through its device's array module ``x._device.xp`` (numpy for cpu and sim), so a device
whose arrays are not numpy's works unchanged.

Fast paths: a rule's derivative is written once, with aiograd ops. A few rules also compute it on
arrays when ``first_order()`` (grad mode off: a first-order backward, nothing to record), each
one earned by ``benchmarks/bench_fast_paths.py``; ``tests/test_fast_paths.py`` runs every such
rule both ways (``array_fast_paths(False)`` turns them off) and checks that they agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from .._base._dtypes import type_name
from .._base._grad_mode import grad_enabled
from .._core._node import Node, edge_of, save
from .._core._saved import SavedTensor
from .._core._tensor import Tensor
from .._devices._device import CPU, _default_device, device_type, mixed_devices_error, placement

__all__ = [
    "UNSET",
    "CPU",
    "Node",
    "Tensor",
    "array_fast_paths",
    "attach",
    "batched_shape",
    "broadcast_error",
    "common_device",
    "data_of",
    "edge_of",
    "first_order",
    "infer_size",
    "grad_enabled",
    "like",
    "new_leaf",
    "needs_grad",
    "not_tensor",
    "on",
    "save",
    "saved",
    "to_tensor",
    "wrap",
]

wrap = Tensor._wrap

_fast_paths_on = True


class _Unset:
    """The default of a parameter whose absence PyTorch's argument parser tells from ``None``
    (``sum(x)`` is one overload, ``sum(x, None)`` another; ``keepdim`` needs ``dim``). False as a
    bool (an unset ``keepdim`` reads as False); shown as ``...``, a stub's "has a default" (in
    signatures and in the typed declarations, which read defaults as literals)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "..."

    def __eq__(self, other: object) -> bool:
        return other is Ellipsis or other is self

    def __hash__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


def first_order() -> bool:
    """True when a rule may take its array fast path: grad mode is off (the backward records
    nothing) and fast paths are not switched off by ``array_fast_paths(False)``."""
    return _fast_paths_on and not grad_enabled()


@contextmanager
def array_fast_paths(enabled: bool) -> Iterator[None]:
    """Within the block, rules take their array fast paths only if ``enabled`` (the benchmark
    and the test that compare each fast path with its rule's formula turn them off)."""
    global _fast_paths_on
    previous, _fast_paths_on = _fast_paths_on, enabled
    try:
        yield
    finally:
        _fast_paths_on = previous


def infer_size(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of two shapes, or PyTorch's ``infer_size`` error naming the first
    mismatching dim from the right (its index in the broadcast shape)."""
    n = max(len(a), len(b))
    for i in range(1, min(len(a), len(b)) + 1):
        x, y = a[-i], b[-i]
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {n - i}"
            )
    return tuple(np.broadcast_shapes(a, b))


def broadcast_error(error: ValueError, *operands: Any) -> Exception:
    """PyTorch's error for operands that do not broadcast, in place of numpy's ``ValueError``
    ("operands could not be broadcast together"), for an op to raise from its ``except
    ValueError`` (free while nothing is raised): ``infer_size``'s RuntimeError folded over the
    operands' shapes from the left, as PyTorch's TensorIterator does (tensors, arrays, shapes;
    numbers and None count as 0-dim). Without ``operands``, the shapes in numpy's message, in its
    order. Any other error is returned as it is."""
    message = str(error)
    if "broadcast" not in message:
        return error
    if operands:
        shapes = [x if type(x) is tuple else getattr(data_of(x), "shape", ()) for x in operands]
    else:
        # ("with shapes (2,) (3,)", or "with remapped shapes [original->remapped]: (2,)->(2,) ...")
        found = re.findall(r"\(([\d, ]*)\)(->)?", message)
        remapped = "->" in message
        shapes = [tuple(int(n) for n in s.split(",") if n.strip()) for s, arrow in found if arrow or not remapped]
    shape: tuple[int, ...] = ()
    try:
        for s in shapes:
            shape = infer_size(shape, s)
    except RuntimeError as e:
        return e
    return error


def not_tensor(fname: str, x: Any, position: int = 1, arg: str = "input") -> TypeError:
    """PyTorch's TypeError for a non-tensor passed where an op takes a tensor."""
    return TypeError(f"{fname}(): argument '{arg}' (position {position}) must be Tensor, not {type_name(x)}")


def data_of(x: Any) -> Any:
    """The array behind a tensor; numbers and arrays pass through (numbers stay weakly typed)."""
    return x.data if isinstance(x, Tensor) else x


def to_tensor(x: Any, like: Any = None) -> Tensor:
    """``x`` as a tensor: a number or array becomes a constant on ``like``'s device (a tensor's;
    the CPU if ``like`` is not one)."""
    if isinstance(x, Tensor):
        return x
    out = Tensor._wrap(x)  # (a numpy array kept, a number as a 0-d one, a CuPy array kept)
    if isinstance(like, Tensor) and like._device is not CPU:
        dev = out._device = like._device
        if dev.xp is not np and type(out.data) is np.ndarray:  # into the device's memory (CUDA)
            out.data = device_type(dev.type).to_device(out.data, dev.index)
    return out


def like(data: Any, tensor: Tensor) -> Tensor:
    """Wrap an op's (or a backward formula's) result array on ``tensor``'s device."""
    out = wrap(data)
    if tensor._device is not CPU:
        out._device = tensor._device
    return out


def new_leaf(data: Any, device: Any, requires_grad: bool = False) -> Tensor:
    """A factory's result: a leaf of ``data`` (a host array) on ``device``, the default device
    (``set_default_device``) when None; moved into the device's memory where its array module
    is not numpy's (a CUDA device)."""
    out = Tensor(data, requires_grad=requires_grad)
    if device is None:
        device = _default_device.get()
    if device is not None:
        dev = placement(device)
        if dev is not CPU:
            if dev.xp is not np:
                out.data = device_type(dev.type).to_device(out.data, dev.index)
            out._device = dev
    return out


def on(out: Tensor, device: Any) -> Tensor:
    """Place ``out`` (a fresh op output) on ``device``; returns it."""
    if device is not CPU:
        out._device = device
    return out


def common_device(*xs: Any) -> Any:
    """The device of the tensors among ``xs`` (the CPU if there is none); PyTorch's error if they
    are not all on one. Numbers and arrays are constants, allowed with any device."""
    dev = None
    for x in xs:
        if isinstance(x, Tensor):
            d = x._device
            if dev is None:
                dev = d
            elif d is not dev:
                raise mixed_devices_error(y._device for y in xs if isinstance(y, Tensor))
    return CPU if dev is None else dev


def needs_grad(*inputs: Any) -> bool:
    """True if grad mode is on and any input is a tensor that requires grad."""
    if not grad_enabled():
        return False
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            return True
    return False


def attach(node: Node, *outputs: Tensor) -> Node:
    """Make ``node`` the grad_fn of the (floating point) outputs, numbered in order."""
    for nr, out in enumerate(outputs):
        if out.data.dtype.kind == "f":
            out._requires_grad = True
            out.grad_fn = node
            if nr:
                out.output_nr = nr
    return node


def saved(node: Node, value: Any) -> Any:
    """Unpack a saved field that may hold a SavedTensor or a plain number."""
    return value.unpack(node) if isinstance(value, SavedTensor) else value


def batched_shape(grad: Tensor, shape: tuple[int, ...], batch: int) -> tuple[int, ...]:
    """``shape`` with the ``batch`` leading dims of ``grad`` in front (``shape`` itself when
    ``batch`` is 0)."""
    return grad.data.shape[:batch] + shape if batch else shape
