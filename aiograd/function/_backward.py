"""The node of one ``Function.apply`` call: it calls the user's ``backward`` and checks what comes
back with PyTorch's rules and messages (``PyNode::apply``, ``validate_outputs``)."""

from __future__ import annotations

import inspect as _inspect
from typing import TYPE_CHECKING
from typing import Any as _Any

from .._core._node import Node as _Node
from .._core._node import mark_async as _mark_async
from .._core._tensor import Tensor as _Tensor
from .._devices._device import CPU as _CPU
from ._ctx import FunctionCtx

if TYPE_CHECKING:
    from . import Function

__all__ = ["_FunctionBackward"]


class _FunctionBackward(_Node, FunctionCtx):
    """The node of one ``Function.apply`` call, and the ``ctx`` of that call.

    Each Function subclass gets its own subclass of this, named ``<Function>Backward``.
    """

    _forward_cls: type[Function]
    _saved = ("saved_tensors",)  # non-empty: the engine calls release_variables after backward
    runs_on_undefined = True  # backward gets zeros (or the Nones) for undefined gradients

    def __init__(self, next_edges: tuple[_Any, ...]) -> None:
        super().__init__(next_edges)
        if self.is_async:  # (a class attribute here: ``async def backward``)
            _mark_async(self)
        #: Per forward argument: is it a tensor (only tensors get gradients)?
        self._is_tensor_input: tuple[bool, ...] = ()
        #: Per tensor input needing a gradient: its (shape, dtype, device), else None.
        self._input_meta: tuple[_Any, ...] = ()
        #: Per forward output: (shape, dtype, device) of a tensor output, else None.
        self._output_meta: tuple[_Any, ...] = ()

    def release_variables(self) -> None:
        """Free the saved tensors; ``saved_tensors`` then raises the backward-twice error."""
        self._saved_variables = ()
        self._freed = True

    # --------------------------------------------------------------------------- backward
    def apply(self, grads: list[_Tensor | None]) -> _Any:
        """Call the user's ``backward`` and check what it returns (a coroutine if it is async)."""
        result = self._forward_cls._backward_fn()(self, *self._grad_outputs(grads))
        if self.is_async:
            return self._finish(result)
        if _inspect.iscoroutine(result):
            result.close()
            raise TypeError(
                f"{self.name()}: backward returned a coroutine; define it with `async def` so "
                "that the engine awaits it"
            )
        return self._validate(result)

    async def _finish(self, pending: _Any) -> list[_Tensor | None]:
        return self._validate(await pending)

    def __call__(self, *grads: _Tensor | None) -> _Any:
        if not self.is_async:
            return super().__call__(*grads)

        async def call() -> _Any:
            out = await self.apply(list(grads))
            return out[0] if len(out) == 1 else tuple(out)

        return call()

    def _grad_outputs(self, grads: list[_Tensor | None]) -> list[_Tensor | None]:
        if not self.materialize_grads:
            return grads
        keep_none = frozenset() if self._materialize_non_diff_grads else self._non_diff_outputs
        return [
            _zeros(meta) if g is None and meta is not None and i not in keep_none else g
            for i, (g, meta) in enumerate(zip(grads, self._output_meta))
        ]

    def _validate(self, result: _Any) -> list[_Tensor | None]:
        """PyTorch's checks of a custom backward's result (PyNode::apply, validate_outputs)."""
        if not isinstance(result, tuple):
            result = (result,)
        is_tensor_input = self._is_tensor_input
        expected = len(is_tensor_input)
        if len(result) > expected and all(r is None for r in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients "
                f"(expected {expected}, got {len(result)})"
            )
        grads: list[_Tensor | None] = []
        for position, (grad, is_tensor) in enumerate(zip(result, is_tensor_input), 1):
            if not is_tensor:
                if grad is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at "
                        f"position {position}, but the corresponding forward input was not a "
                        "Variable"
                    )
                continue
            if grad is not None and not isinstance(grad, _Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(grad).__name__})")
            grads.append(grad)
        for i, meta in enumerate(self._input_meta):
            grad = grads[i]
            if grad is None:
                continue
            if meta is None:  # the input needs no gradient: whatever came back is dropped
                grads[i] = None
                continue
            shape, dtype, device = meta
            if grad.data.shape != shape:
                if not _expandable(shape, grad.data.shape):
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - got "
                        f"{list(grad.data.shape)} but expected shape compatible with {list(shape)}"
                    )
                grad = grad.sum_to_size(shape)
            if grad.data.dtype != dtype:
                grad = grad.to(dtype)
            if grad._device is not device:
                # PyTorch's validate_outputs: a 0-dim gradient is moved, any other is an error.
                if grad.data.ndim:
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - "
                        f"expected device {device} but got {grad._device}"
                    )
                grad = grad.to(device)
            grads[i] = grad
        return grads


def _zeros(meta: tuple[_Any, ...]) -> _Tensor:
    """A materialized zero gradient for an output of shape, dtype and device ``meta``."""
    # On the device's own array module: inside a CUDA node the engine made its device current.
    out = _Tensor._wrap(meta[2].xp.zeros(meta[0], meta[1]))
    if meta[2] is not _CPU:
        out._device = meta[2]
    return out


def _expandable(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True if ``shape`` broadcasts to ``target`` (PyTorch's ``is_expandable_to``)."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))
