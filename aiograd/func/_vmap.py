"""``vmap``: a function of one example mapped over a batch dimension, by calling it once per
slice and stacking the results (correct for any function, transforms included)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core._tensor import Tensor
from .._ops.joining import stack as _stack
from .._ops.random_ops import get_rng_state as _get_rng_state
from .._ops.random_ops import set_rng_state as _set_rng_state
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten

_RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
    "'different' randomness flags on vmap or perform the randomness operation out of vmap"
)


def _get_name(func: Any) -> str:
    if hasattr(func, "__name__"):
        return str(func.__name__)
    if isinstance(func, functools.partial):
        return f"functools.partial({_get_name(func.func)}, ...)"
    return repr(func)


def _check_randomness_arg(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _batch_inputs(func: Any, in_dims: Any, args: tuple[Any, ...]) -> tuple[int, list[Any], list[int | None], Any]:
    """``(batch size, flat args, their in_dims, args' spec)`` with torch's errors."""
    name = _get_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
            f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}."
        )
    if len(args) == 0:
        raise ValueError(
            f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
            "trying to vmap over a function with no inputs. The latter is unsupported."
        )
    flat_args, spec = tree_flatten(args)
    flat_in_dims = broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(
            f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
            f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
            f"structure {spec}."
        )
    dims: list[int | None] = []
    for arg, in_dim in zip(flat_args, flat_in_dims):
        if in_dim is not None and not isinstance(in_dim, int):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                "in_dim must be either an integer dimension or None."
            )
        if isinstance(in_dim, int) and not isinstance(arg, Tensor):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please "
                "use None as the respective in_dim"
            )
        if in_dim is not None and not (-arg.dim() <= in_dim < arg.dim()):
            raise ValueError(
                f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, "
                f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to "
                f"satisfy -{arg.dim()} <= in_dim < {arg.dim()}."
            )
        dims.append(None if in_dim is None else in_dim % arg.dim())
    sizes = [arg.shape[d] for arg, d in zip(flat_args, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
            f"{sizes} for the mapped dimension"
        )
    return sizes[0], flat_args, dims, spec


def _stack_outputs(func: Any, out_dims: Any, outputs: list[Any]) -> Any:
    """The per-slice outputs stacked along ``out_dims`` (a prefix tree of the output)."""
    name = _get_name(func)
    flat0, spec = tree_flatten(outputs[0])
    if not isinstance(out_dims, (int, tuple, list, dict)) and out_dims is not None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
            "collection of ints representing where in the outputs the vmapped dimension should appear."
        )
    flat_out_dims = broadcast_to_and_flatten(out_dims, spec)
    if flat_out_dims is None:
        raise ValueError(
            f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
            f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
            f"has structure {spec}."
        )
    flats = [tree_flatten(o)[0] for o in outputs]
    result = []
    for j, out_dim in enumerate(flat_out_dims):
        if out_dim is None:
            result.append(flat0[j])  # unbatched: the first slice's value
            continue
        column = [f[j] for f in flats]
        for x in column:
            if not isinstance(x, Tensor):
                raise ValueError(
                    f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(x)}. Did you "
                    "mean to set out_dims= to None for output?"
                )
        result.append(_stack(column, dim=out_dim))
    return tree_unflatten(result, spec)


def vmap(
    func: Callable[..., Any],
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """``torch.func.vmap``: ``vmap(f)(x)`` applies ``f`` to each slice of ``x`` along
    ``in_dims`` and stacks the results along ``out_dims``.

    ``in_dims``: an int, or a tuple with one entry per positional argument, each an int, None
    (not mapped: passed whole to every call) or a pytree matching that argument; arguments may be
    tensors or tuples/lists/dicts of them (keyword arguments are never mapped). ``out_dims``: an
    int, or a pytree prefix of the output (None: the output is not mapped and the first slice's
    value is returned). All mapped tensors must have the same size in their mapped dimension.

    aiograd has no batching rules: ``f`` runs once per slice, eagerly, and the results are
    stacked. That gives exactly ``f``'s per-example results for any ``f`` (data-dependent
    control flow, ``.item()``, other transforms), at the cost of a Python loop; gradients flow
    back through the slicing and stacking. If ``f`` is a coroutine function (e.g.
    ``aiograd.func.grad(...)``), the mapped function is one too and must be awaited; a plain
    ``f`` gives a plain function. ``randomness``: ``"error"`` raises RuntimeError when a call
    draws from aiograd's default generator (detected by its state changing; numpy's or an
    explicit ``generator=`` are not detected), ``"same"`` restores the default generator's state
    before every slice so all slices draw the same numbers, ``"different"`` draws anew per slice.
    ``chunk_size`` is validated and otherwise has no effect (slices already run one at a time)."""
    _check_randomness_arg(randomness)
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def setup(args: tuple[Any, ...]) -> tuple[int, Callable[[int], tuple[Any, ...]]]:
        size, flat_args, dims, spec = _batch_inputs(func, in_dims, args)

        def slice_args(i: int) -> tuple[Any, ...]:
            flat = [a if d is None else a.select(d, i) for a, d in zip(flat_args, dims)]
            return tuple(tree_unflatten(flat, spec))

        return size, slice_args

    def rng_state() -> np.ndarray[Any, Any]:
        return np.array(_get_rng_state().numpy(), copy=True)

    class _Rng:
        def __init__(self) -> None:
            self.start = rng_state() if randomness != "different" else None

        def before(self) -> None:
            if randomness == "same" and self.start is not None:
                _set_rng_state(Tensor(self.start.copy()))

        def after(self) -> None:
            if randomness == "error" and self.start is not None and not np.array_equal(rng_state(), self.start):
                _set_rng_state(Tensor(self.start.copy()))
                raise RuntimeError(_RANDOM_ERROR)

    async def finish_async(first: Any, size: int, slice_args: Callable[[int], tuple[Any, ...]], kwargs: dict[str, Any], rng: _Rng) -> Any:
        outputs = [await first]
        rng.after()
        for i in range(1, size):
            rng.before()
            out = func(*slice_args(i), **kwargs)
            outputs.append(await out if inspect.isawaitable(out) else out)
            rng.after()
        return _stack_outputs(func, out_dims, outputs)

    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            size, slice_args = setup(args)
            rng = _Rng()
            rng.before()
            return await finish_async(func(*slice_args(0), **kwargs), size, slice_args, kwargs, rng)

        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        size, slice_args = setup(args)
        rng = _Rng()
        rng.before()
        first = func(*slice_args(0), **kwargs)
        if inspect.isawaitable(first):  # a plain function returning awaitables: await them all
            return finish_async(first, size, slice_args, kwargs, rng)
        outputs = [first]
        rng.after()
        for i in range(1, size):
            rng.before()
            outputs.append(func(*slice_args(i), **kwargs))
            rng.after()
        return _stack_outputs(func, out_dims, outputs)

    return wrapper
