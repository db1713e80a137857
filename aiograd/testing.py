"""Gradient checks against central finite differences: ``await gradcheck(fn, inputs)``.

``fn`` takes the tensors in ``inputs`` and returns a tensor or a tuple of tensors; it may be an
``async def`` (``gradgradcheck`` builds one). Use float64 inputs: float32 cannot resolve eps=1e-6.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._autograd import grad
from ._grad_mode import enable_grad, no_grad
from ._tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised when the analytical and numerical Jacobians disagree."""


async def _call(fn: Callable[..., Any], inputs: Sequence[Any]) -> tuple[Tensor, ...]:
    out = fn(*inputs)
    if inspect.isawaitable(out):
        out = await out
    return (out,) if isinstance(out, Tensor) else tuple(out)


def _differentiable(inputs: Sequence[Any]) -> list[int]:
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


async def _numerical(fn: Callable[..., Any], inputs: Sequence[Any], eps: float) -> list[list[np.ndarray[Any, Any]]]:
    """jac[i][o]: d(output o, flattened) / d(input i, flattened), by central differences."""
    jacobians: list[list[np.ndarray[Any, Any]]] = []
    for i in _differentiable(inputs):
        x = inputs[i].data
        flat = x.reshape(-1)  # a view: perturb in place, restore after
        columns: list[list[np.ndarray[Any, Any]]] = []
        for k in range(flat.size):
            orig = flat[k]
            with no_grad():
                flat[k] = orig + eps
                plus = [o.data.astype(np.float64).reshape(-1).copy() for o in await _call(fn, inputs)]
                flat[k] = orig - eps
                minus = [o.data.astype(np.float64).reshape(-1).copy() for o in await _call(fn, inputs)]
            flat[k] = orig
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        n_out = len(columns[0]) if columns else 0
        jacobians.append(
            [np.stack([c[o] for c in columns], axis=1) if columns else np.zeros((0, 0)) for o in range(n_out)]
        )
    return jacobians


async def _analytical(fn: Callable[..., Any], inputs: Sequence[Any]) -> list[list[np.ndarray[Any, Any]]]:
    diff = _differentiable(inputs)
    outputs = await _call(fn, inputs)
    jac = [[np.zeros((o.data.size, inputs[i].data.size)) for o in outputs] for i in diff]
    for o_idx, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for row in range(out.data.size):
            seed = np.zeros(out.data.size, dtype=out.data.dtype)
            seed[row] = 1
            grads = await grad(
                out, [inputs[i] for i in diff], Tensor(seed.reshape(out.data.shape)),
                retain_graph=True, allow_unused=True,
            )
            for j, g in enumerate(grads):
                if g is not None:
                    jac[j][o_idx][row] = g.data.reshape(-1)
    return jac


async def gradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any] | Tensor,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Compare the gradients of ``fn`` at ``inputs`` with central finite differences.

    Returns True when every Jacobian entry satisfies ``|a - n| <= atol + rtol * |n|``; otherwise
    raises GradcheckError showing both Jacobians (or returns False if ``raise_exception=False``).
    """
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    numerical = await _numerical(fn, inputs, eps)
    analytical = await _analytical(fn, inputs)
    for j, i in enumerate(_differentiable(inputs)):
        for o, (a, n) in enumerate(zip(analytical[j], numerical[j])):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {o} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


async def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any] | Tensor,
    grad_outputs: Sequence[Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
) -> bool:
    """Check second derivatives: gradcheck of the vector-Jacobian product of ``fn``."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff = _differentiable(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        outputs = await _call(fn, inputs)
        grad_outputs = [
            Tensor(rng.standard_normal(o.data.shape).astype(o.data.dtype), requires_grad=True)
            for o in outputs
        ]
    n = len(inputs)

    async def vjp(*args: Any) -> tuple[Tensor, ...]:
        # The numerical pass calls this under no_grad; the vjp itself needs a graph.
        with enable_grad():
            outs = await _call(fn, args[:n])
            grads = await grad(
                outs, [args[i] for i in diff], list(args[n:]), create_graph=True, allow_unused=True
            )
        return tuple(g for g in grads if g is not None)

    return await gradcheck(
        vjp, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception
    )
