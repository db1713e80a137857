"""Activation checkpointing: ``torch.utils.checkpoint``'s reentrant variant, on aiograd.

``checkpoint(function, *args)`` runs ``function(*args)`` without recording a graph and keeps only
its inputs. When the backward reaches its node, the node recomputes ``function`` on detached
copies of the inputs (with grad mode on and, by default, the random state of the forward), then
*awaits a nested backward* through that fresh graph, and hands the inputs' gradients on. Memory
held between forward and backward drops to the checkpoint's inputs, at the price of running
``function`` twice.

This is PyTorch's ``use_reentrant=True`` implementation (``CheckpointFunction``), written as an
:class:`aiograd.Function` whose ``backward`` is ``async def``. aiograd has no saved-tensor hooks,
so the non-reentrant variant (``use_reentrant=False``) does not exist; ``use_reentrant=None`` (the
default) means True, without PyTorch's warning asking to pass it explicitly.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from . import _engine, _factories
from ._autograd import backward as _backward
from ._grad_mode import enable_grad, no_grad
from ._tensor import Tensor
from .function import Function

__all__ = ["checkpoint", "checkpoint_sequential"]

ERR_CHECKPOINT_INVALID = (
    "When use_reentrant=True, aiograd.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, call .backward() without passing "
    "the `inputs` argument."
)
ERR_NO_OUTPUT_REQUIRES_GRAD = (
    "none of output has requires_grad=True, this checkpoint() is not necessary"
)
ERR_NON_REENTRANT = (
    "aiograd.checkpoint implements only the reentrant variant (use_reentrant=True): "
    "use_reentrant=False needs saved-tensor hooks, which aiograd does not have yet. Pass "
    "use_reentrant=True (or leave it out)."
)
WARN_NO_INPUT_REQUIRES_GRAD = "None of the inputs have requires_grad=True. Gradients will be None"


def _check_not_async(function: Any) -> None:
    if inspect.iscoroutinefunction(function):
        raise TypeError(
            f"checkpoint: {getattr(function, '__qualname__', function)!r} is an async function; "
            "the checkpointed function must be a plain one (it is run again, synchronously, "
            "during backward)"
        )


def _check_backward_validity(args: Sequence[Any]) -> None:
    if not any(a.requires_grad for a in args if isinstance(a, Tensor)):
        warnings.warn(WARN_NO_INPUT_REQUIRES_GRAD, UserWarning, stacklevel=3)


def _detach_variable(inputs: Sequence[Any]) -> tuple[Any, ...]:
    """Tensors detached (new leaves sharing data and version counter) with their original
    ``requires_grad``; anything else as it is."""
    out = []
    for inp in inputs:
        if isinstance(inp, Tensor):
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            inp = x
        out.append(inp)
    return tuple(out)


class CheckpointFunction(Function):
    """The node of one ``checkpoint`` call (``CheckpointFunctionBackward`` in the graph).

    ``forward(ctx, run_function, preserve_rng_state, *args)`` is torch's signature. The tensor
    arguments are saved with ``save_for_backward`` (so an in-place change before backward is
    caught); the others are kept on ``ctx``.
    """

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            # The state of the generator behind rand/randn (torch.get_rng_state()).
            ctx.fwd_rng_state = _factories._rng.bit_generator.state
        # Non-tensor inputs stay on ctx, with a None placeholder for each tensor.
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            return run_function(*args)

    @staticmethod
    async def backward(ctx: Any, *grad_outputs: Any) -> tuple[Any, ...]:
        if not _engine.is_checkpoint_valid():
            raise RuntimeError(ERR_CHECKPOINT_INVALID)
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = tensor

        # Recompute from the forward's random state, then give the surrounding state back (torch's
        # fork_rng), also on error and even if ``run_function`` calls ``manual_seed``. This part
        # is synchronous: no other coroutine can draw from the generator meanwhile.
        preserve = ctx.preserve_rng_state
        if preserve:
            outer_rng = _factories._rng
            outer_state = outer_rng.bit_generator.state
            outer_rng.bit_generator.state = ctx.fwd_rng_state
        try:
            detached_inputs = _detach_variable(inputs)
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        finally:
            if preserve:
                _factories._rng = outer_rng
                outer_rng.bit_generator.state = outer_state

        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        # Backward through the recomputed graph from the outputs that require grad only.
        outputs_with_grad = []
        grads_with_grad = []
        for output, grad in zip(outputs, grad_outputs):
            if isinstance(output, Tensor) and output.requires_grad:
                outputs_with_grad.append(output)
                grads_with_grad.append(grad)
        if not outputs_with_grad:
            raise RuntimeError(ERR_NO_OUTPUT_REQUIRES_GRAD)
        await _backward(outputs_with_grad, grads_with_grad)
        grads = tuple(x.grad if isinstance(x, Tensor) else None for x in detached_inputs)
        return (None, None) + grads


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run ``function(*args)`` without keeping its intermediate tensors; recompute them during
    backward (``torch.utils.checkpoint.checkpoint`` with ``use_reentrant=True``).

    The result is what ``function`` returns: a tensor, or a tuple that may also hold non-tensors.
    Its tensors get one node, ``CheckpointFunctionBackward``, whose next functions are those of
    the tensor arguments: nothing that ``function`` computed is kept, only the arguments (tensors
    are saved and version-checked, other values kept as they are). When the backward reaches the
    node, ``function`` runs again on detached copies of the arguments, with grad mode on, and a
    nested ``await aiograd.backward(...)`` through that graph yields the arguments' gradients;
    tensors that ``function`` reads from elsewhere (parameters in a closure) get their ``.grad``
    accumulated by that nested backward.

    Args:
        function: a plain callable (an ``async def`` raises ``TypeError``); it must compute the
            same thing when called again (random ops included: see ``preserve_rng_state``).
        *args: its positional arguments. Keyword arguments for ``function`` are not supported
            with the reentrant variant: pass them through a closure or ``functools.partial``.
        use_reentrant: True, or None (the default), which means True in aiograd. False raises
            ``NotImplementedError``: the non-reentrant variant needs saved-tensor hooks, which
            aiograd does not have.
        preserve_rng_state: save the state of the generator behind ``aiograd.rand``/``randn``
            (``rand_like``, ``randn_like``) at forward time and recompute from that state, so a
            random op (a dropout mask) draws the same values twice; the surrounding state is
            restored afterwards, so the caller's random stream does not notice the
            recomputation. False skips that: the recomputation draws from the current stream.

    Restrictions, as PyTorch's reentrant checkpoint: it works with ``backward()`` only, not with
    ``aiograd.grad()`` nor ``backward(inputs=...)`` (its backward raises "When
    use_reentrant=True, aiograd.checkpoint is incompatible with .grad() ..."); if no tensor
    argument requires grad it warns "None of the inputs have requires_grad=True. Gradients will
    be None" and the result requires no grad, even if ``function`` uses parameters that do. The
    nested backward does not create a graph, so a checkpointed region gives first derivatives
    only.
    """
    if use_reentrant is None:
        use_reentrant = True
    if not use_reentrant:
        raise NotImplementedError(ERR_NON_REENTRANT)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    _check_not_async(function)
    _check_backward_validity(args)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(
    functions: Sequence[Callable[[Any], Any]],
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``functions`` one after the other on ``input``, checkpointing all segments but the
    last (``torch.utils.checkpoint.checkpoint_sequential`` with ``use_reentrant=True``).

    ``functions`` is a list or tuple of one-argument callables (aiograd has no ``nn.Sequential``:
    any sequence of callables works). It is cut into ``segments`` chunks of ``len(functions) //
    segments`` functions, the last chunk taking the remainder; each chunk but the last runs
    under :func:`checkpoint`, so only its input is kept, and the last runs normally (its graph is
    needed at once by the backward anyway). ``input`` should require grad: a first segment whose
    input does not gets no gradients through the reentrant checkpoint (PyTorch's behaviour).

    Keyword arguments: ``preserve_rng_state`` (default True), passed to each :func:`checkpoint`;
    any other raises ``ValueError("Unexpected keyword arguments: ...")``. ``use_reentrant``: as
    for :func:`checkpoint` (None means True; False raises ``NotImplementedError``, whatever
    ``segments`` is). ``segments`` must be between 1 and ``len(functions)`` (PyTorch fails with
    an unhelpful error outside that range; here it is a ``ValueError`` saying so).
    """
    if use_reentrant is None:
        use_reentrant = True
    if not use_reentrant:
        raise NotImplementedError(ERR_NON_REENTRANT)
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    functions = list(functions)
    for fn in functions:
        _check_not_async(fn)
    if not 1 <= segments <= len(functions):
        raise ValueError(
            f"checkpoint_sequential: segments must be between 1 and len(functions) "
            f"({len(functions)}), got {segments}"
        )

    def run_function(start: int, end: int) -> Callable[[Any], Any]:
        def forward(input: Any) -> Any:
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    segment_size = len(functions) // segments
    # The last chunk runs normally: its activations are needed first by the backward.
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run_function(end + 1, len(functions) - 1)(input)
