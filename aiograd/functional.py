"""Higher-level differentiation of whole functions: ``vjp``, ``jvp``, ``jacobian``, ``hessian``,
``hvp``, ``vhp`` (PyTorch's ``torch.autograd.functional``).

Each takes a function of tensors and the point to differentiate it at, and is awaitable like the
rest of the API::

    jac = await aiograd.functional.jacobian(f, x)           # in a coroutine
    jac = aiograd.sync.functional.jacobian(f, x)             # in code with no running loop

The arguments, the structure of the results (a Tensor or a tuple where PyTorch returns one) and
the errors (types and messages, the ``strict`` ones included) are PyTorch's; the code follows
``torch/autograd/functional.py`` step by step, with ``await aiograd.grad(...)`` where it calls
``torch.autograd.grad``. The user's function is an ordinary function of tensors; an ``async def``
one is awaited. ``jacobian(vectorize=True)`` (and ``hessian(vectorize=True)``) run one batched
backward (``grad(..., is_grads_batched=True)``) instead of one backward per output element.
Forward mode does not exist in aiograd: ``strategy="forward-mode"`` raises NotImplementedError.
``jvp`` and ``hvp`` use the double-backward trick, as PyTorch's do.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable as _Callable
from typing import Any as _Any

import numpy as np

from ._api._autograd import grad as _grad
from ._api._factories import zeros_like as _zeros_like
from ._base._grad_mode import enable_grad as _enable_grad
from ._base._grad_mode import is_grad_enabled as _is_grad_enabled
from ._base._grad_mode import set_grad_enabled as _set_grad_enabled
from ._core._tensor import Tensor as _Tensor
from ._ops.joining import stack as _stack

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

#: The function a functional API differentiates: tensors in, a tensor or a tuple of tensors out
#: (or an awaitable of one, for an ``async def`` function).
_Func = _Callable[..., _Any]
_Inputs = _Tensor | tuple[_Tensor, ...]


# ------------------------------------------------------------------------------ helpers
def _as_tuple(inp: _Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[_Any, ...]]:
    """``(was it a tuple, as a tuple)``; only a tuple counts as several tensors, as in PyTorch."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, _Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the {where} has type {type(el)}."
            )
    return is_tuple, items


def _tuple_postprocess(res: _Any, to_unpack: bool | tuple[bool, bool]) -> _Any:
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple[_Tensor, ...], create_graph: bool, need_graph: bool) -> tuple[_Tensor, ...]:
    """Fresh inputs for the user's function: views that keep the graph under ``create_graph``,
    else detached leaves (that require grad when ``need_graph``)."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs: _Any, create_graph: bool) -> _Any:
    if isinstance(inputs[0], _Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple[_Tensor, ...], other: tuple[_Tensor, ...], is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs: tuple[_Any, ...], input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if not inp.requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. You should "
                    "ensure that your function is thrice differentiable and that the hessian "
                    "depends on the inputs."
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided "
                    f"function with respect to input {i} is independent of the input. This is not "
                    "allowed in strict mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example)."
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    f"The gradient with respect to input {i} is independent of the inputs of the "
                    "user-provided function. This is not allowed in strict mode."
                )
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when running "
                "in strict mode."
            )


async def _autograd_grad(
    outputs: tuple[_Any, ...],
    inputs: tuple[_Tensor, ...],
    grad_outputs: tuple[_Any, ...] | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
    is_grads_batched: bool = False,
) -> tuple[_Tensor | None, ...]:
    """``grad()`` over the outputs that require grad (None for every input when none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    return await _grad(
        new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
        retain_graph=retain_graph, is_grads_batched=is_grads_batched,
    )


_STRICT_NONE = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
    "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(
    grads: tuple[_Tensor | None, ...], refs: tuple[_Tensor, ...], strict: bool, create_graph: bool, stage: str
) -> tuple[_Tensor, ...]:
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            grads_i = _zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        res.append(grads_i)
    return tuple(res)


async def _call(func: _Func, inputs: tuple[_Tensor, ...]) -> _Any:
    """The user's function at ``inputs``, awaited if it is a coroutine function."""
    out = func(*inputs)
    if inspect.isawaitable(out):
        out = await out
    return out


def _v_or_error(v: _Any, refs: tuple[_Tensor, ...], is_refs_tuple: bool, fn_name: str, create_graph: bool, message: str) -> _Any:
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, refs, is_refs_tuple)
        return v
    if len(refs) != 1 or refs[0].numel() != 1:
        raise RuntimeError(message)
    return None


_V_OF_OUTPUT = (
    "The vector v can only be None if the user-provided function returns a single Tensor with a "
    "single element."
)
_V_OF_INPUT = (
    "The vector v can only be None if the input to the user-provided function is a single Tensor "
    "with a single element."
)


def _inputs_to_differentiate(inputs: _Any, fn_name: str, create_graph: bool) -> tuple[bool, tuple[_Tensor, ...]]:
    """``(was it a tuple, the fresh inputs the user's function is called with)``."""
    is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", fn_name)
    return is_inputs_tuple, _grad_preprocess(inputs_t, create_graph=create_graph, need_graph=True)


async def _outputs_of(func: _Func, inputs_t: tuple[_Tensor, ...], fn_name: str, strict: bool) -> tuple[bool, tuple[_Tensor, ...]]:
    """``(was it a tuple, the outputs of the user's function at inputs_t)``; under ``strict``
    each must require grad."""
    outputs = await _call(func, inputs_t)
    is_outputs_tuple, outputs_t = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs_t, "outputs", strict=strict)
    return is_outputs_tuple, outputs_t


async def _product(
    outputs: tuple[_Any, ...], inputs: tuple[_Tensor, ...], v: _Any, refs: tuple[_Tensor, ...],
    stage: str, strict: bool, create_graph: bool,
) -> tuple[_Tensor, ...]:
    """A vector product's last backward, ``v`` against the gradient of ``outputs`` with respect
    to ``inputs``, recorded only under ``create_graph`` (else in the caller's grad mode); a
    missing gradient is zeros shaped as its ``refs`` entry, or strict's error for ``stage``."""
    with _set_grad_enabled(True if create_graph else _is_grad_enabled()):
        grad_res = await _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        return _fill_in_zeros(grad_res, refs, strict, create_graph, stage)


def _pair(
    outputs_t: tuple[_Tensor, ...], is_outputs_tuple: bool, result: tuple[_Tensor, ...], is_result_tuple: bool,
    create_graph: bool,
) -> tuple[_Any, _Any]:
    """``(the function's outputs, the product)``, each detached unless ``create_graph`` and a
    tuple only where the caller's was one."""
    outputs_t = _grad_postprocess(outputs_t, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs_t, is_outputs_tuple), _tuple_postprocess(result, is_result_tuple)


# ------------------------------------------------------------------------------ the API
async def vjp(
    func: _Func, inputs: _Inputs, v: _Inputs | None = None, create_graph: bool = False, strict: bool = False
) -> tuple[_Any, _Any]:
    """``(func(*inputs), v^T J)``: the vector-Jacobian product at ``inputs`` (one backward).

    ``v`` has the outputs' shapes (optional when ``func`` returns a single one-element tensor).
    ``create_graph`` makes both results differentiable; ``strict`` raises when an output does
    not depend on an input instead of returning zeros. PyTorch's ``vjp``."""
    with _enable_grad():
        is_inputs_tuple, inputs_t = _inputs_to_differentiate(inputs, "vjp", create_graph)
        is_outputs_tuple, outputs_t = await _outputs_of(func, inputs_t, "vjp", strict)
        v_t = _v_or_error(v, outputs_t, is_outputs_tuple, "vjp", create_graph, _V_OF_OUTPUT)
    result = await _product(outputs_t, inputs_t, v_t, inputs_t, "back", strict, create_graph)
    return _pair(outputs_t, is_outputs_tuple, result, is_inputs_tuple, create_graph)


async def jvp(
    func: _Func, inputs: _Inputs, v: _Inputs | None = None, create_graph: bool = False, strict: bool = False
) -> tuple[_Any, _Any]:
    """``(func(*inputs), J v)``: the Jacobian-vector product at ``inputs``, by the double-backward
    trick (the vjp is linear in its vector, so differentiating it once more gives J v).

    ``v`` has the inputs' shapes (optional for a single one-element input). PyTorch's ``jvp``."""
    with _enable_grad():
        is_inputs_tuple, inputs_t = _inputs_to_differentiate(inputs, "jvp", create_graph)
        v_t = _v_or_error(v, inputs_t, is_inputs_tuple, "jvp", create_graph, _V_OF_INPUT)
        is_outputs_tuple, outputs_t = await _outputs_of(func, inputs_t, "jvp", strict)
        grad_outputs = tuple(_zeros_like(out, requires_grad=True) for out in outputs_t)
        grad_inputs = await _autograd_grad(outputs_t, inputs_t, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    result = await _product(grad_inputs, grad_outputs, v_t, outputs_t, "back_trick", strict, create_graph)
    return _pair(outputs_t, is_outputs_tuple, result, is_outputs_tuple, create_graph)


def _standard_basis(tensors: tuple[_Tensor, ...], numels: tuple[int, ...]) -> tuple[_Tensor, ...]:
    """The rows of the identity of size ``sum(numels)``, cut into one chunk per tensor (chunk j:
    ``(total, numels[j])``, in tensor j's dtype and on its device): PyTorch's
    ``_construct_standard_basis_for``."""
    total = sum(numels)
    chunks = []
    offset = 0
    for t, n in zip(tensors, numels):
        chunk = _Tensor._wrap(np.eye(total, n, k=-offset, dtype=t.data.dtype))
        chunks.append(chunk.to(t.device))
        offset += n
    return tuple(chunks)


async def jacobian(
    func: _Func,
    inputs: _Inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> _Any:
    """The Jacobian of ``func`` at ``inputs``: for output i and input j, a tensor of shape
    ``output_i.shape + input_j.shape``; a tensor, a tuple, or a tuple of tuples as PyTorch nests
    them (by whether ``inputs`` and the outputs are tuples).

    ``vectorize=True`` computes every row in one batched backward (``grad(...,
    is_grads_batched=True)``) instead of one backward per output element. ``create_graph`` makes
    the result differentiable (``hessian`` uses it); ``strict`` raises for an output independent
    of an input. Only ``strategy="reverse-mode"``: aiograd has no forward mode."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`strict=False` or `strategy="reverse-mode"`.'
            )
        raise NotImplementedError(
            'aiograd has no forward-mode AD: use strategy="reverse-mode" (the default).'
        )
    with _enable_grad():
        is_inputs_tuple, inputs_t = _inputs_to_differentiate(inputs, "jacobian", create_graph)
        is_outputs_tuple, outputs_t = await _outputs_of(func, inputs_t, "jacobian", strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                    "not supported together. Please either set `strict=False` or `vectorize=False`."
                )
            jac = await _jacobian_vectorized(outputs_t, inputs_t, create_graph)
        else:
            jac = await _jacobian_by_rows(outputs_t, inputs_t, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


async def _jacobian_vectorized(
    outputs: tuple[_Tensor, ...], inputs: tuple[_Tensor, ...], create_graph: bool
) -> tuple[tuple[_Tensor, ...], ...]:
    """Every row at once: the identity as a batch of grad_outputs, one batched backward."""
    output_numels = tuple(out.numel() for out in outputs)
    grad_outputs = _standard_basis(outputs, output_numels)
    flat_outputs = tuple(out.reshape(-1) for out in outputs)
    vj = list(await _autograd_grad(flat_outputs, inputs, grad_outputs, create_graph=create_graph, is_grads_batched=True))
    for i, vj_el in enumerate(vj):
        if vj_el is None:
            vj[i] = _zeros_like(inputs[i]).expand((sum(output_numels), *inputs[i].shape))
    per_input = []
    for jac_input_i, input_i in zip(vj, inputs):
        assert jac_input_i is not None
        pieces = jac_input_i.split(output_numels, dim=0)
        per_input.append([jac.reshape(out.shape + input_i.shape) for jac, out in zip(pieces, outputs)])
    return tuple(zip(*per_input))


async def _jacobian_by_rows(
    outputs: tuple[_Tensor, ...], inputs: tuple[_Tensor, ...], create_graph: bool, strict: bool
) -> tuple[tuple[_Tensor, ...], ...]:
    """One backward per output element (PyTorch's loop)."""
    result = []
    for i, out in enumerate(outputs):
        rows: tuple[list[_Tensor], ...] = tuple([] for _ in inputs)
        flat = out.reshape(-1)
        for j in range(out.numel()):
            vj = await _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for el_idx, (rows_el, vj_el, inp_el) in enumerate(zip(rows, vj, inputs)):
                if vj_el is not None:
                    if strict and create_graph and not vj_el.requires_grad:
                        raise RuntimeError(
                            f"The jacobian of the user-provided function is independent of input "
                            f"{i}. This is not allowed in strict mode when create_graph=True."
                        )
                    rows_el.append(vj_el)
                else:
                    if strict:
                        raise RuntimeError(
                            f"Output {i} of the user-provided function is independent of input "
                            f"{el_idx}. This is not allowed in strict mode."
                        )
                    rows_el.append(_zeros_like(inp_el))
        result.append(
            tuple(
                _stack(rows_el, dim=0).view(out.size() + inputs[el_idx].size())
                for el_idx, rows_el in enumerate(rows)
            )
        )
    return tuple(result)


async def hessian(
    func: _Func,
    inputs: _Inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> _Any:
    """The Hessian of a scalar function at ``inputs``: the Jacobian of its gradient (for inputs
    i and j, shape ``input_i.shape + input_j.shape``; a tensor, or a tuple of tuples for a tuple
    of inputs). ``vectorize=True`` computes the outer Jacobian with one batched backward.
    PyTorch's ``hessian``; ``outer_jacobian_strategy`` reverse-mode only."""
    is_inputs_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    async def ensure_single_output_function(*inp: _Tensor) -> _Tensor:
        return (await _scalar_output(func, inp, "hessian", strict)).squeeze()

    async def jac_func(*inp: _Tensor) -> _Any:
        jac = await jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = await jacobian(
        jac_func, inputs_t, create_graph=create_graph, strict=strict, vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


async def _scalar_output(func: _Func, inputs_t: tuple[_Tensor, ...], fn_name: str, strict: bool) -> _Tensor:
    """The one one-element tensor the user's function (of ``hessian``, ``vhp``, ``hvp``) must
    return."""
    is_outputs_tuple, outputs_t = await _outputs_of(func, inputs_t, fn_name, strict)
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    (output,) = outputs_t
    if output.numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return output


async def vhp(
    func: _Func, inputs: _Inputs, v: _Inputs | None = None, create_graph: bool = False, strict: bool = False
) -> tuple[_Any, _Any]:
    """``(func(*inputs), v^T H)``: the vector-Hessian product of a scalar function (two
    backwards). PyTorch's ``vhp``."""
    with _enable_grad():
        is_inputs_tuple, inputs_t = _inputs_to_differentiate(inputs, "vhp", create_graph)
        v_t = _v_or_error(v, inputs_t, is_inputs_tuple, "vhp", create_graph, _V_OF_INPUT)
        outputs_t = (await _scalar_output(func, inputs_t, "vhp", strict),)
        jac = await _autograd_grad(outputs_t, inputs_t, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    result = await _product(jac, inputs_t, v_t, inputs_t, "double_back", strict, create_graph)
    return _pair(outputs_t, False, result, is_inputs_tuple, create_graph)


async def hvp(
    func: _Func, inputs: _Inputs, v: _Inputs | None = None, create_graph: bool = False, strict: bool = False
) -> tuple[_Any, _Any]:
    """``(func(*inputs), H v)``: the Hessian-vector product of a scalar function, by the
    double-backward trick (three backwards). PyTorch's ``hvp``."""
    with _enable_grad():
        is_inputs_tuple, inputs_t = _inputs_to_differentiate(inputs, "hvp", create_graph)
        v_t = _v_or_error(v, inputs_t, is_inputs_tuple, "hvp", create_graph, _V_OF_INPUT)
        outputs_t = (await _scalar_output(func, inputs_t, "hvp", strict),)
        jac = await _autograd_grad(outputs_t, inputs_t, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(_zeros_like(inp, requires_grad=True) for inp in inputs_t)
        double_back = await _autograd_grad(jac, inputs_t, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    result = await _product(double_back, grad_jac, v_t, inputs_t, "double_back_trick", strict, create_graph)
    return _pair(outputs_t, False, result, is_inputs_tuple, create_graph)
