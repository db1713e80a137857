"""Testing helpers: gradient checks against central finite differences (``await gradcheck(fn,
inputs)``), and ``assert_close`` (``torch.testing.assert_close``, with torch's tolerances and
messages; aiograd/_api/_assert_close.py).

``fn`` takes the tensors in ``inputs`` and returns a tensor or a tuple of tensors; it may be an
``async def`` (``gradgradcheck`` builds one). Use float64 inputs: float32 cannot resolve eps=1e-6
(a float32 input that requires grad warns, as in torch).

The checks and their messages follow torch's slow gradcheck (``torch/autograd/gradcheck.py``):
the numerical Jacobian by central differences, the analytical one row by row, computed twice to
catch a backward that is not reentrant (``nondet_tol``), then a backward with zero grad_outputs
(it must give zeros) and, with ``check_undefined_grad``, one with undefined grad_outputs.
Jacobians are ``(input numel, output numel)`` matrices and failures name the output and the input
by their positions among the differentiable ones. Every call of ``fn`` runs with grad mode
enabled, whatever the caller's mode, so a function that registers hooks on its intermediates
works. ``fast_mode`` is accepted and runs the slow check.
"""

from __future__ import annotations

import inspect as _inspect
import warnings as _warnings
from collections.abc import Callable as _Callable
from collections.abc import Sequence as _Sequence
from typing import Any as _Any

import numpy as _np

from ._api._assert_close import assert_close
from ._api._autograd import grad as _grad
from ._base._grad_mode import enable_grad as _enable_grad
from ._core._tensor import Tensor as _Tensor
from .function import Function as _Function

__all__ = ["GradcheckError", "assert_close", "gradcheck", "gradgradcheck"]

_Array = _np.ndarray[_Any, _Any]

#: torch's default: the engine passes undefined (None) gradients through a node that gets only
#: those, and multi-output formulas take a None among their gradients.
_CHECK_UNDEFINED_GRAD_DEFAULT = True

_FAILED_NONDET_MSG = """\n
NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""

_UNDEFINED_NOTES = 'Please look at "Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'


class GradcheckError(RuntimeError):
    """Raised when the analytical and numerical Jacobians disagree (or another check fails)."""


# ------------------------------------------------------------------------------------- calling
async def _call(fn: _Callable[..., _Any], inputs: _Sequence[_Any]) -> tuple[_Any, ...]:
    """``fn(*inputs)`` as a tuple of outputs, run with grad mode enabled (and awaited if async)."""
    with _enable_grad():
        out = fn(*inputs)
        if _inspect.isawaitable(out):
            out = await out
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _differentiable(inputs: _Sequence[_Any]) -> list[int]:
    return [i for i, x in enumerate(inputs) if isinstance(x, _Tensor) and x.requires_grad]


def _differentiable_outputs(outputs: _Sequence[_Any]) -> list[_Tensor]:
    return [o for o in outputs if o.requires_grad]


def _check_inputs(inputs: _Sequence[_Any]) -> None:
    for i in _differentiable(inputs):
        if inputs[i].dtype != _np.float64:
            _warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double precision "
                "floating point or complex. ",
                stacklevel=3,  # the line that awaited gradcheck
            )
        # As torch's _check_inputs: perturbing one element of an input that repeats memory
        # (an expanded tensor) would perturb several, so the numerical Jacobian would be wrong.
        data = inputs[i].data
        # (An empty array has nothing to perturb; numpy may give it zero strides.)
        if data.size and any(st == 0 and sz > 1 for st, sz in zip(data.strides, data.shape)):
            raise RuntimeError(
                f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                "that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck."
            )
    if not _differentiable(inputs):
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "have requires_grad=True."
        )


# ------------------------------------------------------------------------------------ numerical
def _is_floating(output: _Any) -> bool:
    return bool(_np.issubdtype(output.data.dtype, _np.floating))


def _check_same_dtype_and_shape(a: _Array, b: _Array, eps: float, index: tuple[int, ...]) -> None:
    if a.shape != b.shape:
        raise AssertionError(
            "Expected `func` to return outputs with the same shape when inputs are perturbed on "
            f"index {index} by {eps}, but got: shapes {a.shape} and {b.shape}."
        )
    if a.dtype != b.dtype:
        raise AssertionError(
            "Expected `func` to return outputs with the same dtype when inputs are perturbed on "
            f"index {index} by {eps}, but got: dtypes {a.dtype} and {b.dtype}."
        )


def _host_copy(t: _Tensor) -> _Array:
    """A copy of ``t``'s values in host memory (from a CUDA device's too)."""
    data = t.data
    return data.copy() if type(data) is _np.ndarray else t.detach().cpu().data


async def _numerical(
    fn: _Callable[..., _Any], inputs: _Sequence[_Any], outputs: _Sequence[_Any], eps: float
) -> list[list[_Array]]:
    """jac[i][o]: d(output o) / d(differentiable input i), an (input numel, output numel) matrix,
    by central differences; every output counts, differentiable or not."""
    jacobians: list[list[_Array]] = []
    for i in _differentiable(inputs):
        x = inputs[i].data  # perturbed in place element by element (any strides), then restored
        # Only floating outputs are differentiated (torch's too); the others keep zeros.
        jac = [_np.zeros((x.size, o.data.size), dtype=o.data.dtype if _is_floating(o) else _np.float64) for o in outputs]
        for flat, k in enumerate(_np.ndindex(x.shape)):
            orig = x[k]
            if not isinstance(orig, _np.generic):  # CuPy gives a 0-d view, which x[k] = ... changes
                orig = orig.copy()
            x[k] = orig - eps
            before = [_host_copy(o) for o in await _call(fn, inputs)]
            x[k] = orig + eps
            after = [_host_copy(o) for o in await _call(fn, inputs)]
            x[k] = orig
            for o, (a, b) in enumerate(zip(before, after)):
                _check_same_dtype_and_shape(a, b, eps, k)
                if _is_floating(outputs[o]):
                    jac[o][flat] = ((b - a) / (2 * eps)).reshape(-1)
        jacobians.append(jac)
    return jacobians


# ----------------------------------------------------------------------------------- analytical
async def _analytical_rows(output: _Tensor, inputs: list[_Tensor]) -> list[list[_Tensor | None]]:
    """rows[i][r]: the gradient of output element r with respect to differentiable input i."""
    rows: list[list[_Tensor | None]] = [[] for _ in inputs]
    for r in range(output.data.size):
        seed = _np.zeros(output.data.size, dtype=output.data.dtype)
        seed[r] = 1
        grads = await _grad(
            output, inputs, _Tensor(seed.reshape(output.shape)).to(output.device),
            retain_graph=True, allow_unused=True,
        )
        for i, g in enumerate(grads):
            rows[i].append(g)
    return rows


def _stack(rows: list[list[_Tensor | None]], inputs: list[_Tensor], numel: int) -> tuple[list[_Array], bool, bool]:
    jacobians = [_np.zeros((x.data.size, numel), dtype=x.data.dtype) for x in inputs]
    sizes_ok = types_ok = True
    for i, column_grads in enumerate(rows):
        for r, g in enumerate(column_grads):
            if g is None:
                continue
            if g.shape != inputs[i].shape:
                sizes_ok = False
            elif g.dtype != inputs[i].dtype:
                types_ok = False
            jacobians[i][:, r] = g.cpu().data.reshape(-1)
    return jacobians, sizes_ok, types_ok


async def _analytical(
    output: _Tensor, inputs: list[_Tensor], nondet_tol: float, check_grad_dtypes: bool
) -> list[_Array]:
    """The analytical Jacobians of ``output``, computed twice to check that backward is
    reentrant (gives the same values within ``nondet_tol``)."""
    first, sizes_ok, types_ok = _stack(await _analytical_rows(output, inputs), inputs, output.data.size)
    second, _, _ = _stack(await _analytical_rows(output, inputs), inputs, output.data.size)
    reentrant = all(a.size == 0 or _np.abs(a - b).max() <= nondet_tol for a, b in zip(first, second))
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches numerical "
            f"gradient.The tolerance for nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG
        )
    return first


def _mismatch(analytical: _Array, numerical: _Array, output: int, input: int) -> str:
    return (
        f"Jacobian mismatch for output {output:d} with respect to input {input:d},\n"
        f"numerical:{_Tensor(numerical)!r}\nanalytical:{_Tensor(analytical)!r}\n"
    )


# --------------------------------------------------------------------------- the other checks
async def _test_backward_mul_by_grad_output(outputs: list[_Tensor], inputs: list[_Tensor]) -> None:
    zeros = [_Tensor(_np.zeros_like(o.data)).to(o.device) for o in outputs]
    grads = await _grad(outputs, inputs, zeros, allow_unused=True)
    for g, x in zip(grads, inputs):
        if g is None:
            continue
        if (g.cpu().data != 0).any():
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if g.shape != x.shape:
            raise GradcheckError("grad is incorrect size")


class _UndefinedGrad(_Function):
    """Identity whose backward gives an undefined (None) gradient: torch's ``UndefinedGrad``."""

    @staticmethod
    def forward(ctx: _Any, x: _Tensor) -> _Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: _Any, grad: _Any) -> None:
        return None


async def _test_undefined_backward_mode(fn: _Callable[..., _Any], inputs: _Sequence[_Any], n_outputs: int) -> None:
    diff_inputs = [inputs[i] for i in _differentiable(inputs)]

    def warn_bc_breaking() -> None:
        _warnings.warn(
            "Backwards compatibility: New undefined gradient support checking feature is enabled by "
            "default, but it may break existing callers of this function. If this is true for you, "
            'you can call this function with "check_undefined_grad=False" to disable the feature',
            stacklevel=2,
        )

    async def check(outputs: list[_Tensor]) -> None:
        zeros = [_Tensor(_np.zeros_like(o.data)).to(o.device) for o in outputs]
        try:
            grads = await _grad(outputs, diff_inputs, zeros, allow_unused=True)
        except RuntimeError as exc:
            warn_bc_breaking()
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads. {_UNDEFINED_NOTES}"
            ) from exc
        for g in grads:
            if g is not None and (g.cpu().data != 0).any():
                warn_bc_breaking()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are "
                    f"undefined or zero. {_UNDEFINED_NOTES}"
                )

    with _enable_grad():
        all_undefined = [_UndefinedGrad.apply(o) for o in _differentiable_outputs(await _call(fn, inputs))]
        await check(all_undefined)
        if len(all_undefined) > 1:  # one undefined at a time must work too
            for undefined in range(n_outputs):
                outputs = _differentiable_outputs(await _call(fn, inputs))
                await check([_UndefinedGrad.apply(o) if k == undefined else o for k, o in enumerate(outputs)])


# ------------------------------------------------------------------------------------ the API
async def gradcheck(
    fn: _Callable[..., _Any],
    inputs: _Sequence[_Any] | _Tensor,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = _CHECK_UNDEFINED_GRAD_DEFAULT,
    check_grad_dtypes: bool = False,
    fast_mode: bool = False,
) -> bool:
    """Compare the gradients of ``fn`` at ``inputs`` with central finite differences, as torch's
    ``gradcheck`` does.

    Returns True when every Jacobian entry satisfies ``|a - n| <= atol + rtol * |n|``, backward
    is reentrant within ``nondet_tol`` and zero grad_outputs give zero gradients (and, with
    ``check_undefined_grad``, undefined ones are handled). Otherwise raises GradcheckError with
    torch's message ("Jacobian mismatch for output i with respect to input j," then both
    Jacobians), or returns False if ``raise_exception=False``. ``fn`` always runs with grad mode
    enabled. ``fast_mode=True`` is accepted and runs this full check.
    """
    del fast_mode  # the full (slow) check is always run
    inputs = (inputs,) if isinstance(inputs, _Tensor) else tuple(inputs)
    try:
        _check_inputs(inputs)
        func_out = await _call(fn, inputs)
        outputs = _differentiable_outputs(func_out)
        numerical = await _numerical(fn, inputs, func_out, eps)
        if not outputs:
            if any((n != 0).any() for per_input in numerical for n in per_input):
                raise GradcheckError("Numerical gradient for function expected to be zero")
            return True
        numerical = [[n for o, n in zip(func_out, per_input) if o.requires_grad] for per_input in numerical]
        diff_inputs = [inputs[i] for i in _differentiable(inputs)]
        for o, output in enumerate(outputs):
            analytical = await _analytical(output, diff_inputs, nondet_tol, check_grad_dtypes)
            for i, a in enumerate(analytical):
                n = numerical[i][o]
                if not _np.allclose(a, n, rtol=rtol, atol=atol):
                    raise GradcheckError(_mismatch(a, n, o, i))
        await _test_backward_mul_by_grad_output(outputs, diff_inputs)
        if check_undefined_grad:
            await _test_undefined_backward_mode(fn, inputs, len(outputs))
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


async def gradgradcheck(
    fn: _Callable[..., _Any],
    inputs: _Sequence[_Any] | _Tensor,
    grad_outputs: _Sequence[_Tensor] | _Tensor | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = _CHECK_UNDEFINED_GRAD_DEFAULT,
    check_grad_dtypes: bool = False,
    fast_mode: bool = False,
    seed: int = 0,
) -> bool:
    """Check second derivatives: gradcheck of the vector-Jacobian product of ``fn``, as torch's
    ``gradgradcheck`` does.

    Without ``grad_outputs``, random ones in [-1, 1) are drawn (from ``seed``: aiograd's
    addition, for reproducibility), non-contiguous with ``gen_non_contig_grad_outputs``.
    """
    inputs = (inputs,) if isinstance(inputs, _Tensor) else tuple(inputs)
    if grad_outputs is None:
        rng = _np.random.default_rng(seed)
        grad_outputs = tuple(
            _random_grad_output(rng, o, gen_non_contig_grad_outputs)
            for o in _differentiable_outputs(await _call(fn, inputs))
        )
    else:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, _Tensor) else tuple(grad_outputs)
    n = len(inputs)
    diff = _differentiable(inputs)

    async def vjp(*args: _Any) -> tuple[_Tensor, ...]:
        outs = _differentiable_outputs(await _call(fn, args[:n]))
        grads = await _grad(outs, [args[i] for i in diff], list(args[n:]), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return await gradcheck(
        vjp, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
        nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode,
    )


def _random_grad_output(rng: _np.random.Generator, output: _Tensor, non_contiguous: bool) -> _Tensor:
    dtype = output.dtype if _np.issubdtype(output.dtype, _np.floating) else _np.float64
    values = rng.uniform(-1.0, 1.0, output.shape).astype(dtype)
    if non_contiguous:  # every other element of a buffer twice as long in the last dimension
        buffer = _np.empty((*output.shape[:-1], 2 * output.shape[-1]) if output.shape else (2,), dtype=dtype)
        spaced = buffer[..., ::2] if output.shape else buffer[:1].reshape(())
        spaced[...] = values
        values = spaced
    return _Tensor(values, requires_grad=True).to(output.device)
