"""Saved tensors: what a Node keeps from the forward pass, checked against in-place changes.

A saved input is kept as the tensor itself. A saved output is kept as its array and version
counter only (the node *is* its grad_fn, so keeping the tensor would be a reference cycle); on
unpack under create_graph it is rebuilt with the node as grad_fn, as PyTorch's SavedVariable does.

Unpacking checks, in PyTorch's order: freed (ERR_BACKWARD_TWICE), a saved non-leaf input since
detached in place (``detach_()`` marks the tensor; ERR_DETACHED_INPLACE), then the version. The
counter is shared by a tensor, its views and its ``detach()`` results (aiograd/_views.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._anomaly import is_anomaly_enabled
from ._grad_mode import grad_enabled
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

_wrap = Tensor._wrap

_TYPE_NAMES = {"float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor"}


class SavedTensor:
    """One tensor saved for backward, with the version it had when saved."""

    __slots__ = ("tensor", "data", "version_counter", "version", "output_nr", "requires_grad", "device")

    def __init__(self, tensor: Tensor, is_output: bool) -> None:
        counter = tensor._vc
        if counter is None:
            counter = tensor._vc = [0]
        self.version_counter = counter
        self.version = counter[0]
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
        if tensor is not None and tensor._detached_inplace and tensor.grad_fn is None:
            raise RuntimeError(ERR_DETACHED_INPLACE)
        if self.version_counter[0] != self.version:
            raise RuntimeError(self._version_message(node))
        if tensor is not None:
            return tensor
        out = _wrap(self.data)
        out._vc = self.version_counter
        device = self.device
        if device is not out._device:  # a non-CPU output (the wrap made a CPU tensor)
            out._device = device
        if self.requires_grad and grad_enabled():
            # Differentiating the formula again must flow through the node that made this output.
            out._requires_grad = True
            out.grad_fn = node
            out.output_nr = self.output_nr
        return out

    def _version_message(self, node: Node) -> str:
        data = self.data if self.tensor is None else self.tensor.data
        kind = _TYPE_NAMES.get(str(data.dtype), f"{data.dtype}Tensor")
        shape = ", ".join(str(s) for s in data.shape)
        if self.tensor is None:
            which = f", which is output {self.output_nr} of {node.name()},"
        elif self.tensor.grad_fn is not None:
            which = f", which is output {self.tensor.output_nr} of {self.tensor.grad_fn.name()},"
        else:
            which = ""
        return (
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [aiograd.{kind} [{shape}]]{which} is at version {self.version_counter[0]}; "
            f"expected version {self.version} instead. {_hint()}"
        )


def _hint() -> str:
    if is_anomaly_enabled():
        return (
            "Hint: the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good luck!"
        )
    return (
        "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with aiograd.set_detect_anomaly(True)."
    )


class _Freed(SavedTensor):
    """Stands in for every saved tensor after ``release_variables``."""

    __slots__ = ()

    def __init__(self) -> None:  # noqa: D107 - one shared instance
        pass

    def unpack(self, node: Node) -> Tensor:
        raise RuntimeError(ERR_BACKWARD_TWICE)


FREED = _Freed()
