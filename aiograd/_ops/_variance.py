"""The variance's arguments and formulas, shared by ``var`` (``reduction``) and ``std``
(``convenience``): PyTorch's forms of the arguments (``unbiased`` or ``correction``), the
variance computed, and the gradient's ``2 / dof`` scale and formula (PyTorch's var_backward).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._reduce_util import UNSET, axes_of, expand_reduced, invalid_arguments
from ._util import Tensor
from .quiet import quietly

__all__ = ["grad_scale", "var_grad", "variance"]


def var_grad(node: Any, grad: Tensor) -> Tensor:
    """The variance's gradient (PyTorch's var_backward), shared with std's node: ``2 / dof * g *
    (x - mean)``; over all elements with ``dof <= 0`` it is NaN where x equals its mean, inf
    elsewhere (as PyTorch: inf * 0 and inf * c)."""
    x = node.x.unpack(node)
    g = expand_reduced(grad, node.shape, node.axes, node.keepdim)
    if node.axes is None and node.scale == float("inf") and not node.empty_dim:
        data = x.data
        return g * np.where(data == data.mean(), np.nan, np.inf).astype(data.dtype)
    centered = x - x.mean(node.axes, keepdim=True)
    return g * node.scale * centered  # PyTorch's order: (2 / dof * grad) * (x - mean)


def variance(
    input: Tensor, dim: Any, unbiased: Any, keepdim: Any, correction: Any, fname: str = "var", take_sqrt: bool = False,
    explicit_none: bool = False,
) -> tuple[Any, tuple[int, ...] | None, float]:
    """``var``'s (and ``std``'s) arguments parsed and the variance computed: (array, axes,
    degrees of freedom); warns, as PyTorch, at the caller's line when ``dof <= 0``. Unset
    (``UNSET``) ``dim``, ``keepdim`` and ``correction`` tell PyTorch's forms apart; a
    ``correction`` of None counts as unset unless ``explicit_none`` (the caller's default is
    ``UNSET``: None was given). As in PyTorch's CPU kernels, the sums are taken in float64
    whatever the input's float dtype, and with ``take_sqrt`` (std) the root too, before the
    result is cast back."""
    if correction is UNSET:
        correction = None
    elif correction is None and explicit_none and (unbiased is not UNSET or isinstance(dim, bool)):
        raise _invalid(fname, input, dim, unbiased, keepdim, None, True)
    if isinstance(dim, bool):  # var(input, unbiased): nothing else may be given (keepdim=False let by)
        if unbiased is not UNSET or (keepdim is not UNSET and keepdim is not False) or correction is not None:
            raise _invalid(fname, input, dim, unbiased, keepdim, correction)
        dim, unbiased = None, dim
    elif unbiased is not UNSET:  # var(input, dim, unbiased, keepdim) or var(input, unbiased=b); no correction
        if correction is not None or not isinstance(unbiased, (bool, np.bool_)) or (dim is UNSET and keepdim is not UNSET):
            raise _invalid(fname, input, dim, unbiased, keepdim, correction)
    corr = (1 if unbiased else 0) if unbiased is not UNSET else (1 if correction is None else correction)
    data = input.data
    if data.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    axes = axes_of(None if dim is UNSET else dim, data.ndim)
    count = data.size if axes is None else int(np.prod([data.shape[a] for a in axes]))
    dof = count - corr
    if dof <= 0:
        warnings.warn(
            f"{fname}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
    # (a reduction over nothing is NaN, as PyTorch's, whatever the correction)
    values = quietly(_variance, input._device.xp, data, axes, bool(keepdim), dof if count else 0, take_sqrt)
    return values, axes, dof


def _invalid(fname: str, input: Tensor, dim: Any, unbiased: Any, keepdim: Any, correction: Any,
             none_given: bool = False) -> TypeError:
    """PyTorch's TypeError for ``var``'s (``std``'s) arguments that fit none of its forms."""
    # (keywords in the reverse of the signature's order, as PyTorch's parser lists a call's)
    return invalid_arguments(fname, _var_forms(fname), input, dim,
                             correction=UNSET if correction is None and not none_given else correction,
                             keepdim=keepdim, unbiased=unbiased)


def _var_forms(fname: str) -> tuple[str, ...]:
    """The forms of PyTorch's ``var`` and ``std``, as its argument parser lists them."""
    return ("Tensor input, tuple of ints dim, bool unbiased = True, bool keepdim = False, *, Tensor out = None",
            "Tensor input, tuple of ints dim = None, *, Number correction = None, bool keepdim = False, "
            "Tensor out = None", "Tensor input, bool unbiased = True")


def grad_scale(node: Any, dim: Any, data: Any, dof: float) -> None:
    """Set ``node.scale``, the ``2 / dof`` of PyTorch's var_backward. With ``dim=()`` (of a
    tensor of 1 dim or more) the forward reduces over every element but PyTorch's backward counts
    one (``_safe_size`` of no dims): ``2 / (1 - correction)``, inf * (x - mean) if that is 0."""
    if dim is not None and dim is not UNSET and not isinstance(dim, bool) and data.ndim:
        # dims given: PyTorch's ``2 / (n - correction)`` whatever its sign (inf only at 0)
        if isinstance(dim, (tuple, list)) and not dim:
            dof = 1 - (data.size - dof)
            node.empty_dim = True
        node.scale = 2.0 / dof if dof else float("inf")
        return
    # (a NaN correction: PyTorch's 2 / NaN)
    node.scale = 2.0 / dof if dof > 0 or dof != dof else float("inf")


def _variance(xp: Any, data: Any, axes: Any, keepdim: bool, dof: float, take_sqrt: bool) -> Any:
    dtype = data.dtype
    # (float64 sums: PyTorch's accumulator; a sum over nothing is 0 / 0, NaN, without numpy's
    # "Mean of empty slice" warning)
    total = data.sum(axis=axes, keepdims=True, dtype=np.float64)
    mean = total / ((data.size // total.size) if total.size else 1)
    sq = xp.square(data - mean).sum(axis=axes, keepdims=keepdim)
    out = sq / np.float64(dof if dof > 0 else 0)
    if take_sqrt:
        out = xp.sqrt(out)
    return out if dtype == np.float64 else out.astype(dtype)
