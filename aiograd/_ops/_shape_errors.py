"""PyTorch's argument errors of the shape ops (aiograd/_ops/shape.py, rearrange.py): a method
called without its sizes (``x.flip()``), ``squeeze`` with a ``dim`` of no accepted type."""

from __future__ import annotations

from typing import Any

from .._base._dtypes import type_name

#: ``x.view()``: PyTorch's argument parser finds no signature without arguments.
NO_VIEW_SIZE = (
    "view() received an invalid combination of arguments - got (), but expected one of:\n"
    " * (torch.dtype dtype)\n * (tuple of ints size)\n"
)


def missing(fname: str, arg: str) -> TypeError:
    """PyTorch's TypeError for a method called without its one required argument (``x.flip()``)."""
    return TypeError(f'{fname}() missing 1 required positional arguments: "{arg}"')


def squeeze_types(dim: Any) -> str:
    """PyTorch's message for a ``dim`` of no accepted type (``squeeze(x, None)``)."""
    given = type_name(dim)
    why = f"      didn't match because some of the arguments have invalid types: (Tensor, !{given}!)\n"
    return (
        f"squeeze() received an invalid combination of arguments - got (Tensor, {given}), but "
        f"expected one of:\n * (Tensor input)\n * (Tensor input, int dim)\n{why}"
        f" * (Tensor input, tuple of ints dim)\n{why}"
    )
