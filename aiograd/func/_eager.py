"""The differentiating transforms: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``,
``jacfwd``, ``hessian``. Each returns (or is) a coroutine function, because aiograd's backward is
awaited; the backwards themselves are ``aiograd.grad`` and ``aiograd.functional``'s ``jvp`` and
``jacobian(vectorize=True)`` (one batched backward, ``grad(..., is_grads_batched=True)``).

Nesting: a transform's result keeps its graph (``create_graph``) when it runs inside another
transform's function, or when an argument already requires grad (so an outer ``backward``
reaches it); otherwise its results are detached, as torch.func's are at the top level."""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .. import functional as _functional
from .._api._autograd import grad as _autograd_grad
from .._api._factories import zeros_like as _zeros_like
from .._base._grad_mode import enable_grad as _enable_grad
from .._base._grad_mode import is_grad_enabled as _is_grad_enabled
from .._core._tensor import Tensor
from ._pytree import tree_flatten, tree_map, tree_unflatten

#: how many transforms' functions are running in this task (0: none, the top level)
_LEVEL: contextvars.ContextVar[int] = contextvars.ContextVar("aiograd_func_level", default=0)


@contextmanager
def _inside() -> Iterator[None]:
    token = _LEVEL.set(_LEVEL.get() + 1)
    try:
        with _enable_grad():
            yield
    finally:
        _LEVEL.reset(token)


async def _call(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``func(*args, **kwargs)`` one level in, under grad mode, awaited when it is awaitable."""
    with _inside():
        out = func(*args, **kwargs)
        if inspect.isawaitable(out):
            out = await out
        return out


def _keep_graph(*trees: Any) -> bool:
    """Whether results must stay differentiable: inside another transform, or an input tensor
    already requires grad (and grad mode is on)."""
    if not _is_grad_enabled():
        return False
    if _LEVEL.get() > 0:
        return True
    return any(isinstance(x, Tensor) and x.requires_grad for t in trees for x in tree_flatten(t)[0])


def _fresh(x: Any, create_graph: bool) -> Tensor:
    """A tensor to differentiate with respect to: a view keeping an outer graph, else a leaf."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    if create_graph and x.requires_grad:
        return x.view_as(x)
    return x.detach().requires_grad_(True)


def _detach(tree: Any, create_graph: bool) -> Any:
    if create_graph:
        return tree
    return tree_map(lambda x: x.detach() if isinstance(x, Tensor) else x, tree)


def _wrap_argnum(argnum: Any, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if 0 <= argnum < num_args:
        return argnum
    if -num_args <= argnum < 0:
        return argnum + num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _check_argnums(argnums: Any) -> None:
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if isinstance(argnums, tuple):
        if len(argnums) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")


def _slot(args: tuple[Any, ...], argnums: int | tuple[int, ...]) -> tuple[list[int], Any]:
    """``(the wrapped argument positions, the arguments differentiated: one or a tuple)``."""
    if isinstance(argnums, int):
        pos = [_wrap_argnum(argnums, len(args))]
        return pos, args[pos[0]]
    pos = [_wrap_argnum(a, len(args)) for a in argnums]
    return pos, tuple(args[p] for p in pos)


def _replace(args: tuple[Any, ...], pos: list[int], new: Any, single: bool) -> tuple[Any, ...]:
    new_t = (new,) if single else tuple(new)
    out = list(args)
    for p, v in zip(pos, new_t):
        out[p] = v
    return tuple(out)


def _zeros_for_none(grads: Any, refs: list[Tensor]) -> list[Tensor]:
    return [g if g is not None else _zeros_like(r) for g, r in zip(grads, refs)]


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``torch.func.grad_and_value``, as a coroutine function: ``await grad_and_value(f)(*args)``
    is ``(the gradient, f(*args))`` (``(gradient, (value, aux))`` with ``has_aux``).

    ``f`` returns a 0-dim tensor (or ``(tensor, aux)`` with ``has_aux``); ``argnums`` (an int or
    a tuple of ints) picks the positional arguments to differentiate, each a tensor or a pytree
    (tuple, list, dict) of them; the gradient has the same structure (a tuple of them for a
    tuple ``argnums``). An input the output does not depend on gets zeros. ``f`` may be a
    coroutine function (another transform), so transforms nest."""
    _check_argnums(argnums)

    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        create_graph = _keep_graph(args, kwargs)
        pos, diff = _slot(args, argnums)
        flat, spec = tree_flatten(diff)
        fresh = [_fresh(x, create_graph) for x in flat]
        new_args = _replace(args, pos, tree_unflatten(fresh, spec), isinstance(argnums, int))
        output = await _call(func, new_args, kwargs)
        aux = None
        if has_aux:
            if not (isinstance(output, tuple) and len(output) == 2):
                raise RuntimeError(
                    "grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) "
                    "if has_aux is True"
                )
            output, aux = output
        if not isinstance(output, Tensor):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(
                "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
            )
        if output.requires_grad:
            with _enable_grad() if create_graph else _no_change():
                grads = await _autograd_grad(
                    [output], fresh, allow_unused=True, create_graph=create_graph,
                    retain_graph=True if create_graph else None,
                )
        else:
            grads = [None] * len(fresh)
        grads_tree = tree_unflatten(_detach(_zeros_for_none(grads, fresh), create_graph), spec)
        value = _detach(output, create_graph)
        if has_aux:
            return grads_tree, (value, _detach(aux, create_graph))
        return grads_tree, value

    return wrapper


@contextmanager
def _no_change() -> Iterator[None]:
    yield


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``torch.func.grad``, as a coroutine function: ``dx = await grad(f)(x)`` is the gradient of
    the scalar ``f(x)`` with respect to ``x`` (``(gradient, aux)`` with ``has_aux``). See
    ``grad_and_value`` for ``argnums`` and the structure of the result."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = await inner(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


async def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``torch.func.vjp``, awaited: ``out, vjp_fn = await vjp(f, *primals)``; then
    ``await vjp_fn(cotangents)`` is a tuple with one gradient per primal (each the primal's
    pytree structure). ``cotangents`` has the structure of ``f``'s output. ``vjp_fn`` may be
    awaited several times. With ``has_aux``: ``(out, vjp_fn, aux)``."""
    create_graph = _keep_graph(primals)
    flat, spec = tree_flatten(primals)
    fresh = [_fresh(x, create_graph) for x in flat]
    output = await _call(func, tree_unflatten(fresh, spec), {})
    aux = None
    if has_aux:
        if not (isinstance(output, tuple) and len(output) == 2):
            raise RuntimeError(
                "vjp(f, *primals): output of function f should be a tuple: (output, aux) if has_aux is True"
            )
        output, aux = output
    flat_out, out_spec = tree_flatten(output)
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type {type(o)}")
        if not o.is_floating_point():
            raise RuntimeError(
                "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                f"with dtype {o.dtype}"
            )

    async def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple[Any, ...]:
        """The gradient of ``f``'s output against ``cotangents``, one per primal."""
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                f"to the function. cotangents: {ct_spec}, primal output: {out_spec}"
            )
        cg = create_graph if create_graph is not None else (create_graph_outer or _keep_graph(cotangents))
        pairs = [(o, c) for o, c in zip(flat_out, flat_ct) if o.requires_grad]
        if pairs:
            with _enable_grad() if cg else _no_change():
                grads = await _autograd_grad(
                    [o for o, _ in pairs], fresh, [c for _, c in pairs], allow_unused=True,
                    retain_graph=retain_graph, create_graph=cg,
                )
        else:
            grads = [None] * len(fresh)
        return tuple(tree_unflatten(_detach(_zeros_for_none(grads, fresh), cg), spec))

    create_graph_outer = create_graph
    out = _detach(output, create_graph)
    if has_aux:
        return out, vjp_fn, _detach(aux, create_graph)
    return out, vjp_fn


async def jvp(
    func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False
) -> Any:
    """``torch.func.jvp``, awaited: ``out, jvp_out = await jvp(f, primals, tangents)``, the
    Jacobian-vector product of ``f`` at ``primals`` (a tuple of tensors or pytrees; ``tangents``
    the same structure). aiograd has no forward mode: this is ``aiograd.functional.jvp``'s
    double-backward trick (two backwards), so ``f`` runs once and is differentiated twice.
    With ``has_aux``: ``(out, jvp_out, aux)``."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_p, p_spec = tree_flatten(primals)
    flat_t, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            f"{api}: Expected primals and tangents to have the same python structure. For example, if "
            f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure {p_spec} "
            f"and tangents with structure {t_spec}"
        )
    for argname, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"{api}: Expected {argname} to be a non-empty tuple of Tensors.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(x)}")
    create_graph = _keep_graph(primals, tangents)
    box: dict[str, Any] = {}

    async def flat_func(*leaves: Tensor) -> tuple[Tensor, ...]:
        out = await _call(func, tree_unflatten(list(leaves), p_spec), {})
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
            out, box["aux"] = out
        flat_out, box["spec"] = tree_flatten(out)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{api}: expected f(*args) to return only tensors, got unsupported type {type(o)}")
        return tuple(flat_out)

    outs, jvps = await _functional.jvp(flat_func, tuple(flat_p), tuple(flat_t), create_graph=create_graph, strict=strict)
    out = tree_unflatten(list(outs), box["spec"])
    jvp_out = tree_unflatten(list(jvps), box["spec"])
    if has_aux:
        return out, jvp_out, _detach(box["aux"], create_graph)
    return out, jvp_out


def jacrev(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
    chunk_size: int | None = None, _preallocate_and_copy: bool = False,
) -> Callable[..., Any]:
    """``torch.func.jacrev``, as a coroutine function: ``jac = await jacrev(f)(x)``. For each
    output leaf, a tensor of shape ``output.shape + input.shape`` (a tuple of them, or the
    argument's pytree, per ``argnums``), in the output's pytree structure; ``(jac, aux)`` with
    ``has_aux``. All rows come from one batched backward
    (``aiograd.functional.jacobian(vectorize=True)``); ``chunk_size`` is checked and otherwise
    not used."""
    _check_argnums(argnums)
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        create_graph = _keep_graph(args, kwargs)
        pos, diff = _slot(args, argnums)
        flat, spec = tree_flatten(diff)
        for x in flat:
            if not isinstance(x, Tensor):
                raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        box: dict[str, Any] = {}

        async def flat_func(*leaves: Tensor) -> tuple[Tensor, ...]:
            new_args = _replace(args, pos, tree_unflatten(list(leaves), spec), isinstance(argnums, int))
            out = await _call(func, new_args, kwargs)
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(
                        "jacrev(f, ...)(*args): output of function f should be a tuple: (output, aux) "
                        "if has_aux is True"
                    )
                out, box["aux"] = out
            flat_out, box["spec"] = tree_flatten(out)
            for o in flat_out:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jacrev(f, ...)(*args): expected f(*args) to return only tensors, got unsupported type {type(o)}")
            return tuple(flat_out)

        jac = await _functional.jacobian(flat_func, tuple(flat), create_graph=create_graph, vectorize=True)
        per_output = [tree_unflatten(list(row), spec) for row in jac]
        result = tree_unflatten(per_output, box["spec"])
        if has_aux:
            return result, _detach(box["aux"], create_graph)
        return result

    return wrapper


def jacfwd(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *, randomness: str = "error"
) -> Callable[..., Any]:
    """``torch.func.jacfwd``, as a coroutine function. aiograd has no forward mode, so this is
    ``jacrev`` (the same values and structure; reverse mode costs one backward per batch of
    output elements rather than a forward per input element). ``randomness`` is checked only."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """``torch.func.hessian``, as a coroutine function: ``jacfwd(jacrev(func, argnums),
    argnums)``, each Jacobian one batched backward (the inner one recorded for the outer)."""
    return jacfwd(jacrev(func, argnums), argnums)
