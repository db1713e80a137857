"""``backward()`` and ``grad()``: argument checks in PyTorch's words, then the engine."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import numpy as np

from .._core._graph import GradientEdge, edge_metadata
from .._core._node import Edge, edge_of, grad_accumulator
from .._core._tensor import Tensor
from .._devices._device import CPU, device_type
from .._engine import get_engine
from ..executors._blas import budget as blas_budget

__all__ = ["backward", "grad"]

#: What ``backward()`` and ``grad()`` differentiate: tensors, or gradient edges (the gradient
#: flowing into an edge, as PyTorch allows).
TensorOrTensors = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]
#: What ``grad()`` and ``backward(inputs=)`` differentiate with respect to: tensors, or gradient
#: edges (``aiograd.graph.get_gradient_edge``).
InputsLike = Tensor | GradientEdge | Sequence[Tensor | GradientEdge]
#: A gradient given for one output: a tensor, or a number or numpy array (a constant, made on the
#: output's device with its dtype).
GradientLike = Tensor | float | np.ndarray[Any, Any] | np.generic
#: ``grad_tensors`` / ``grad_outputs``: one gradient, or one per output (None for a scalar's).
GradientsLike = GradientLike | Sequence[GradientLike | None]

_warned_create_graph = False


def _on(out: Tensor, host: np.ndarray[Any, Any]) -> Any:
    """``host`` (a gradient made on the host) in the memory of ``out``'s device: itself for a
    numpy device, a copy in device memory for a CUDA one."""
    dev = out._device
    return host if dev.xp is np else device_type(dev.type).to_device(host, dev.index)


def _as_tuple(value: Any) -> tuple[Any, ...]:
    """A tensor (or anything that is not a list or tuple) stands for a sequence of one; so does
    a GradientEdge (a NamedTuple, but one edge)."""
    if isinstance(value, GradientEdge):
        return (value,)
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _nonempty_inputs(inputs: Any, function: str) -> tuple[Any, ...]:
    """``inputs`` as a tuple; ``function`` (backward or grad) refuses an empty one."""
    input_tuple = _as_tuple(inputs)
    if len(input_tuple) == 0:
        raise RuntimeError(f"`inputs` argument to `{function}()` cannot be empty.")
    return input_tuple


def _gradients_for(outputs: tuple[Any, ...], given: Any, is_grads_batched: bool = False) -> list[Tensor | None]:
    """One gradient per output, checked (``_make_grads``): the ``given`` one(s), or, given none,
    the implicit ones."""
    grad_tuple = (None,) * len(outputs) if given is None else _as_tuple(given)
    return _make_grads(outputs, grad_tuple, is_grads_batched)


def _make_grads(
    outputs: tuple[Tensor, ...], grads: tuple[Any, ...], is_grads_batched: bool = False
) -> list[Tensor | None]:
    if len(grads) != len(outputs):
        raise RuntimeError(
            f"got {len(outputs)} tensors and {len(grads)} gradients: pass one gradient per tensor"
        )
    new_grads: list[Tensor | None] = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(out, GradientEdge):
            # An edge stands for the output it receives the gradient of (PyTorch reads the
            # node's input metadata): checked against a stand-in with that shape and dtype.
            shape, dtype, device = edge_metadata(out)
            out = Tensor._wrap(np.broadcast_to(np.zeros((), dtype), shape))
            out._requires_grad = True
            if device is not CPU:
                out._device = device
        elif not isinstance(out, Tensor):
            raise TypeError(f"expected a Tensor as element {i} of tensors, but got {type(out).__name__}")
        if g is None:
            if out._requires_grad:
                if out.data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if out.data.dtype.kind != "f":
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{out.data.dtype}"
                    )
                ones = Tensor._wrap(_on(out, np.ones(out.data.shape, out.data.dtype)))
                if out._device is not CPU:
                    ones._device = out._device
                new_grads.append(ones)
            else:
                new_grads.append(None)
            continue
        if not isinstance(g, Tensor):
            if isinstance(g, (int, float, np.ndarray, np.generic)):
                g = Tensor(np.asarray(g, dtype=out.data.dtype))  # a constant: on out's device
                if out._device is not CPU:
                    g.data = _on(out, g.data)
                    g._device = out._device
            else:
                raise TypeError(
                    f"gradients can be either Tensors or None, but got {type(g).__name__}"
                )
        if is_grads_batched:
            _check_batched(i, g, out)
        elif g.data.shape != out.data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.data.shape} and "
                f"output[{i}] has a shape of {out.data.shape}."
            )
        if g.data.dtype != out.data.dtype and g.data.dtype.kind == "f" and out.data.dtype.kind == "f":
            g = g.to(out.data.dtype)  # PyTorch casts silently (validate_outputs)
        if g._device is not out._device:
            # validate_outputs again: a 0-dim gradient is moved, any other is an error.
            if g.data.ndim:
                raise RuntimeError(
                    f"invalid gradient at index {i} - expected device {out._device} but got "
                    f"{g._device}"
                )
            g = g.to(out._device)
        new_grads.append(g)
    return new_grads


def _check_batched(i: int, g: Tensor, out: Tensor) -> None:
    """PyTorch's checks of one batched grad_output (``_make_grads`` with ``is_grads_batched``):
    ``g[0]`` must have the output's shape. The message names ``g[0]``'s shape without its first
    dim, as PyTorch's does (``_calculate_shape`` drops a dim of the already unbatched grad)."""
    shape = g.data.shape
    if not shape:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    if shape[0] == 0:
        raise IndexError("index 0 is out of bounds for dimension 0 with size 0")
    if shape[1:] != out.data.shape:
        raise RuntimeError(
            "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
            "the batch dimension. The sizes of the remaining dimensions are expected to match the "
            f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has a "
            f"shape of {shape[2:]} and output[{i}] has a shape of {out.data.shape}. If you only "
            "want some tensors in `grad_output` to be considered batched, consider using vmap."
        )


def _batch_size(grads: list[Tensor | None]) -> int:
    """The common batch size of batched grad_outputs; PyTorch's vmap errors when a gradient is
    0-dim (an implicit scalar gradient) or the sizes differ."""
    sizes = []
    for g in grads:
        if g is None:
            continue
        if not g.data.ndim:
            raise ValueError(
                "vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for some input, but that input "
                "is a Tensor of dimensionality 0 so expected in_dim to satisfy 0 <= in_dim < 0."
            )
        sizes.append(g.data.shape[0])
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
            f"{sizes} for the mapped dimension"
        )
    return sizes[0]


def _input_edges(inputs: tuple[Any, ...]) -> list[Edge]:
    edges: list[Edge] = []
    for t in inputs:
        if isinstance(t, GradientEdge):  # aiograd.graph.get_gradient_edge(tensor), as in PyTorch
            edges.append((t.node, t.output_nr))
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensors as inputs, but got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        fn = t.grad_fn
        edges.append((fn, t.output_nr) if fn is not None else (grad_accumulator(t), 0))
    return edges


#: What runs a backward for a caller in whose thread no asyncio loop runs: ``await
#: runner(make)`` awaits ``make()`` somewhere an asyncio loop runs.
BackwardRunner = Callable[[Callable[[], Coroutine[Any, Any, Any]]], Awaitable[Any]]

_run_without_asyncio: BackwardRunner | None = None


def set_run_without_asyncio(runner: BackwardRunner) -> None:
    """Install what runs a backward for a caller in whose thread no asyncio loop runs (a trio
    task): ``aiograd._api._trio_bridge`` installs its ``run_on_trio`` (which runs the backward on
    ``aiograd.sync``'s background asyncio loop) when it is imported. A hook, so that this module
    need not import that one, which imports it."""
    global _run_without_asyncio
    _run_without_asyncio = runner


async def _run_backward(
    outputs: tuple[Tensor, ...],
    grads: list[Tensor | None],
    keep_graph: bool,
    create_graph: bool,
    inputs: tuple[Any, ...] | None,
    accumulate_grad: bool,
    atomic: bool = False,
    batch_ndim: int = 0,
) -> list[Tensor | None]:
    try:
        engine = get_engine()
    except RuntimeError:  # no asyncio loop in this thread: trio's, or none at all
        if _run_without_asyncio is None:
            raise
        return await _run_without_asyncio(functools.partial(
            _run_backward, outputs, grads, keep_graph, create_graph, inputs, accumulate_grad,
            atomic, batch_ndim,
        ))
    blas_budget.tick()  # BLAS's threads follow the machine's load (aiograd.executors._blas)
    root_edges: list[Edge] = []
    root_grads: list[Tensor] = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        edge = (out.node, out.output_nr) if isinstance(out, GradientEdge) else edge_of(out)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        assert g is not None
        root_edges.append(edge)
        root_grads.append(g)
    output_edges = None
    if inputs is not None:
        output_edges = _input_edges(inputs)
        if accumulate_grad and not atomic:
            for t in inputs:
                if isinstance(t, Tensor):  # (an edge has no tensor to hold a .grad)
                    t.retain_grad()  # how non-leaf inputs get their .grad (PyTorch does the same)
    return await engine.execute(
        root_edges,
        root_grads,
        keep_graph=keep_graph,
        create_graph=create_graph,
        accumulate_grad=accumulate_grad,
        output_edges=output_edges,
        staged_inputs=inputs,
        atomic=atomic,
        batch_ndim=batch_ndim,
    )


async def backward(
    tensors: TensorOrTensors,
    grad_tensors: GradientsLike | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: InputsLike | None = None,
    *,
    atomic: bool = False,
) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves.

    Awaitable, with ``torch.autograd.backward``'s arguments: ``grad_tensors`` (one per tensor;
    None for scalars), ``retain_graph`` (defaults to ``create_graph``), ``create_graph`` (record the
    backward for higher-order gradients) and ``inputs`` (accumulate only into these).

    ``atomic=True`` (aiograd's own) makes the accumulation all-or-nothing: gradients are staged
    while the backward runs and added into every ``.grad`` at once when it completes, so a call
    that fails or is cancelled leaves every ``.grad`` as it was. Without it, each leaf gets its
    whole gradient when its AccumulateGrad runs, so an interrupted call leaves some leaves updated
    and others not (never a partial sum in one leaf). Post-accumulate-grad hooks run at the
    commit; tensor hooks on leaves run as the gradient reaches them.
    """
    global _warned_create_graph
    outputs = _as_tuple(tensors)
    input_tuple = _nonempty_inputs(inputs, "backward") if inputs is not None else None
    grads = _gradients_for(outputs, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph and not _warned_create_graph:
        _warned_create_graph = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=2,
        )
    await _run_backward(
        outputs, grads, retain_graph, create_graph, input_tuple, accumulate_grad=True, atomic=atomic
    )


async def grad(
    outputs: TensorOrTensors,
    inputs: InputsLike,
    grad_outputs: GradientsLike | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Return the gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is untouched.

    Awaitable, with ``torch.autograd.grad``'s arguments. Unused inputs raise unless
    ``allow_unused=True`` (their result is None) or ``materialize_grads=True`` (zeros).

    ``is_grads_batched=True``: the first dim of every grad_output is a batch dim; one backward
    computes what a loop of ``grad()`` calls over the batch would, stacked (each result then has
    the batch dim first). It is vectorized: the backward formulas run on the whole batch at once
    (a node without a batched rule, such as a custom Function, runs once per sample; see
    docs/functional.md).
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    output_tuple = _as_tuple(outputs)
    input_tuple = _nonempty_inputs(inputs, "grad")
    grads = _gradients_for(output_tuple, grad_outputs, is_grads_batched)
    if is_grads_batched:
        _batch_size(grads)
    if retain_graph is None:
        retain_graph = create_graph
    result = await _run_backward(
        output_tuple, grads, retain_graph, create_graph, input_tuple, accumulate_grad=False,
        batch_ndim=1 if is_grads_batched else 0,
    )
    if not allow_unused and any(r is None for r in result):
        unused = next(i for i, r in enumerate(result) if r is None)
        raise RuntimeError(  # torch 2.13's wording (it names the first unused input)
            f"The differentiated Tensor at index {unused} appears to not have been used in the graph. "
            "Set allow_unused=True if this is the desired behavior."
        )
    if materialize_grads:
        if any(r is None and isinstance(t, GradientEdge) for r, t in zip(result, input_tuple)):
            raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
        from ._factories import zeros_like

        result = [
            r if r is not None else zeros_like(t, requires_grad=create_graph)
            for r, t in zip(result, input_tuple)
        ]
    return tuple(result)


def tensor_backward(
    self: Tensor, gradient: GradientLike | None = None, *args: Any, **kwargs: Any
) -> Coroutine[Any, Any, None]:
    """Awaitable: accumulate the gradient of this tensor into the leaves' ``.grad``.

    ``await loss.backward()`` is ``await aiograd.backward(loss, ...)``; see :func:`backward`
    (``atomic=True``: all-or-nothing accumulation).
    """
    return _BackwardCall(backward(self, gradient, *args, **kwargs))


def _tensor_backward_signature() -> inspect.Signature:
    """``backward``'s parameters as ``Tensor.backward``'s: ``self`` for the tensors, and
    ``gradient`` (one tensor's, PyTorch's name) for their gradients; the rest passes on as is."""
    tensors, gradients, *rest = inspect.signature(backward).parameters.values()
    return inspect.Signature(
        [
            tensors.replace(name="self", annotation="Tensor"),
            gradients.replace(name="gradient", annotation="GradientLike | None"),
            *rest,
        ],
        return_annotation="Coroutine[Any, Any, None]",
    )


# What inspect.signature shows of Tensor.backward (the API reference; tests/test_typing.py holds
# it to the declaration in _core/_tensor_api/): backward's own parameters, not *args/**kwargs.
tensor_backward.__signature__ = _tensor_backward_signature()  # type: ignore[attr-defined]


class _BackwardCall(Coroutine[Any, Any, None]):
    """What ``t.backward()`` returns: its coroutine, which warns with aiograd's own message
    when it is dropped without ever being awaited (``loss.backward()`` written as in PyTorch,
    inside async code or outside any loop), instead of Python's anonymous "coroutine 'backward'
    was never awaited". Awaiting it, or handing it to ``asyncio.create_task``, runs it as is."""

    __slots__ = ("_coro", "_started")

    def __init__(self, coro: Coroutine[Any, Any, None]) -> None:
        self._coro = coro
        self._started = False

    def __await__(self) -> Any:
        self._started = True
        return self._coro.__await__()

    def send(self, value: Any) -> Any:
        self._started = True
        return self._coro.send(value)

    def throw(self, *args: Any) -> Any:
        self._started = True
        return self._coro.throw(*args)

    def close(self) -> None:
        self._started = True
        self._coro.close()

    def __del__(self) -> None:
        if not self._started:
            self._coro.close()  # (no second warning from Python)
            warnings.warn(
                "Tensor.backward() was called but never awaited, so no gradient was computed: "
                "write `await loss.backward()` in async code, or call "
                "`aiograd.sync.backward(loss)` where no event loop runs",
                RuntimeWarning,
                stacklevel=2,
            )
