"""Gradient checks against central finite differences: ``await gradcheck(fn, inputs)``.

``fn`` takes the tensors in ``inputs`` and returns a tensor or a tuple of tensors; it may be an
``async def`` (``gradgradcheck`` builds one). Use float64 inputs: float32 cannot resolve eps=1e-6.
"""

from __future__ import annotations

import inspect as _inspect
from collections.abc import Callable as _Callable
from collections.abc import Sequence as _Sequence
from typing import Any as _Any

import numpy as _np

from ._autograd import grad as _grad
from ._grad_mode import enable_grad as _enable_grad
from ._grad_mode import no_grad as _no_grad
from ._tensor import Tensor as _Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised when the analytical and numerical Jacobians disagree."""


async def _call(fn: _Callable[..., _Any], inputs: _Sequence[_Any]) -> tuple[_Tensor, ...]:
    out = fn(*inputs)
    if _inspect.isawaitable(out):
        out = await out
    return (out,) if isinstance(out, _Tensor) else tuple(out)


def _differentiable(inputs: _Sequence[_Any]) -> list[int]:
    return [i for i, x in enumerate(inputs) if isinstance(x, _Tensor) and x.requires_grad]


async def _numerical(fn: _Callable[..., _Any], inputs: _Sequence[_Any], eps: float) -> list[list[_np.ndarray[_Any, _Any]]]:
    """jac[i][o]: d(output o, flattened) / d(input i, flattened), by central differences."""
    jacobians: list[list[_np.ndarray[_Any, _Any]]] = []
    for i in _differentiable(inputs):
        x = inputs[i].data  # perturbed in place element by element (any strides), then restored
        columns: list[list[_np.ndarray[_Any, _Any]]] = []
        for k in _np.ndindex(x.shape):
            orig = x[k]
            with _no_grad():
                x[k] = orig + eps
                plus = [o.data.astype(_np.float64).reshape(-1).copy() for o in await _call(fn, inputs)]
                x[k] = orig - eps
                minus = [o.data.astype(_np.float64).reshape(-1).copy() for o in await _call(fn, inputs)]
            x[k] = orig
            columns.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        n_out = len(columns[0]) if columns else 0
        jacobians.append(
            [_np.stack([c[o] for c in columns], axis=1) if columns else _np.zeros((0, 0)) for o in range(n_out)]
        )
    return jacobians


async def _analytical(fn: _Callable[..., _Any], inputs: _Sequence[_Any]) -> list[list[_np.ndarray[_Any, _Any]]]:
    diff = _differentiable(inputs)
    outputs = await _call(fn, inputs)
    jac = [[_np.zeros((o.data.size, inputs[i].data.size)) for o in outputs] for i in diff]
    for o_idx, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for row in range(out.data.size):
            seed = _np.zeros(out.data.size, dtype=out.data.dtype)
            seed[row] = 1
            grads = await _grad(
                out, [inputs[i] for i in diff], seed.reshape(out.data.shape),  # placed on out's device
                retain_graph=True, allow_unused=True,
            )
            for j, g in enumerate(grads):
                if g is not None:
                    jac[j][o_idx][row] = g.data.reshape(-1)
    return jac


async def gradcheck(
    fn: _Callable[..., _Any],
    inputs: _Sequence[_Any] | _Tensor,
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
    inputs = (inputs,) if isinstance(inputs, _Tensor) else tuple(inputs)
    numerical = await _numerical(fn, inputs, eps)
    analytical = await _analytical(fn, inputs)
    for j, i in enumerate(_differentiable(inputs)):
        for o, (a, n) in enumerate(zip(analytical[j], numerical[j])):
            if not _np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {o} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


async def gradgradcheck(
    fn: _Callable[..., _Any],
    inputs: _Sequence[_Any] | _Tensor,
    grad_outputs: _Sequence[_Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
) -> bool:
    """Check second derivatives: gradcheck of the vector-Jacobian product of ``fn``."""
    inputs = (inputs,) if isinstance(inputs, _Tensor) else tuple(inputs)
    diff = _differentiable(inputs)
    if grad_outputs is None:
        rng = _np.random.default_rng(seed)
        outputs = await _call(fn, inputs)
        grad_outputs = [
            _Tensor(rng.standard_normal(o.data.shape).astype(o.data.dtype), requires_grad=True).to(o.device)
            for o in outputs
        ]
    n = len(inputs)

    async def vjp(*args: _Any) -> tuple[_Tensor, ...]:
        # The numerical pass calls this under _no_grad; the vjp itself needs a graph.
        with _enable_grad():
            outs = await _call(fn, args[:n])
            grads = await _grad(
                outs, [args[i] for i in diff], list(args[n:]), create_graph=True, allow_unused=True
            )
        return tuple(g for g in grads if g is not None)

    return await gradcheck(
        vjp, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception
    )
