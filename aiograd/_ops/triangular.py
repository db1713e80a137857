"""Triangular systems, as ``torch.linalg.solve_triangular``: ``A X = B`` (``X A = B`` with
``left=False``) for a batch of upper or lower triangular ``A`` (only that triangle read; with
``unitriangular=True`` not even its diagonal), batch dims broadcast, with PyTorch's node
(``LinalgSolveTriangularBackward0``), checks and messages, and the backward formula of its
FunctionsManual.cpp (``linalg_solve_triangular_backward``), written with aiograd ops so that it
can be differentiated again.

numpy has no trsm, so the solve is a substitution (blocked: the updates between blocks are
matrix products), with the products and divisions of BLAS trsm: a zero or subnormal pivot gives
inf and NaN, as PyTorch's does, never an error."""

from __future__ import annotations

from typing import Any

from .._base._dtypes import scalar_type_name
from .._base._grad_mode import argument_type_name
from ._registry import backward, op
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    infer_size,
    like,
    needs_grad,
    not_tensor,
    save,
)
from .linalg import matmul
from .quiet import quietly
from .rearrange import tril, triu
from .shape import reduce_grad

__all__ = ["solve_triangular", "substitute"]

#: Rows solved one at a time within a block; the rest of the system is updated by one matrix
#: product per block (measured: 64 is near the best for n = 256 on the project's machine).
_BLOCK = 64


def _substitute(xp: Any, a: Any, b: Any, upper: bool, unit: bool) -> Any:
    """``X`` of ``A X = B`` for triangular ``a`` ``(..., n, n)`` and ``b`` ``(..., n, k)``
    (batch dims broadcast): back (``upper``) or forward substitution, each row divided by its
    pivot (not by 1 when ``unit``). Run it quietly."""
    n, k = b.shape[-2:]
    x = xp.empty(xp.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (n, k), dtype=b.dtype)
    x[...] = b
    starts = range(0, n, _BLOCK)
    for s in reversed(starts) if upper else starts:
        e = min(s + _BLOCK, n)
        for j in range(e - 1, s - 1, -1) if upper else range(s, e):
            xj = x[..., j, :]
            if not unit:
                xj /= a[..., j, j, None]
            if upper:
                if j > s:
                    x[..., s:j, :] -= a[..., s:j, j, None] * xj[..., None, :]
            elif j + 1 < e:
                x[..., j + 1 : e, :] -= a[..., j + 1 : e, j, None] * xj[..., None, :]
        if upper and s:
            x[..., :s, :] -= a[..., :s, s:e] @ x[..., s:e, :]
        elif not upper and e < n:
            x[..., e:, :] -= a[..., e:, s:e] @ x[..., s:e, :]
    return x


def substitute(xp: Any, a: Any, b: Any, upper: bool, left: bool = True, unit: bool = False) -> Any:
    """PyTorch's triangular solve on arrays: ``X`` of ``A X = B`` (``X A = B`` when not
    ``left``), ``a`` and ``b`` batches of matrices of one dtype, batch dims broadcast; inf and NaN
    where a pivot is zero, never an error."""
    if left:
        return quietly(_substitute, xp, a, b, upper, unit)
    x = quietly(_substitute, xp, a.swapaxes(-1, -2), b.swapaxes(-1, -2), not upper, unit)
    return xp.ascontiguousarray(x.swapaxes(-1, -2))


@backward(saved=("A", "result"), batched=True)
def LinalgSolveTriangularBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """linalg_solve_triangular_backward: ``gB = A^{-H} gX`` and ``gA = -gB X^H`` (``left=False``:
    ``gB = gX A^{-H}`` and ``gA = -X^H gB``), ``gA`` kept to ``A``'s triangle (its diagonal
    zeroed when unitriangular), each summed back to its input's broadcast shape."""
    gX = grads[0]
    A, X = self.A.unpack(self), self.result.unpack(self)
    upper, left, unit = self.upper, self.left, self.unitriangular
    gB = solve_triangular(A.mT, gX, upper=not upper, left=left, unitriangular=unit)
    ea, eb = self.next_edges
    gA = None
    if ea is not None:
        gA = -(matmul(gB, X.mT) if left else matmul(X.mT, gB))
        gA = reduce_grad(triu(gA, int(unit)) if upper else tril(gA, -int(unit)), self.a_shape, batch)
    return (gA, reduce_grad(gB, self.b_shape, batch) if eb is not None else None)


def _flag(name: str, value: Any) -> None:
    """PyTorch's TypeError for a keyword flag that is not a bool."""
    raise TypeError(f"linalg_solve_triangular(): argument '{name}' must be bool, not {argument_type_name(value)}")


@op(LinalgSolveTriangularBackward0, name="linalg_solve_triangular", top_level=False)
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``:
    its upper (``upper=True``) or lower triangle only, its diagonal taken as ones with
    ``unitriangular=True``; batch dims broadcast. A zero on the diagonal gives inf or NaN."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_solve_triangular", A, 1, "input")
    if not isinstance(B, Tensor):
        raise not_tensor("linalg_solve_triangular", B, 2, "B")
    if upper.__class__ is not bool:
        _flag("upper", upper)
    if left.__class__ is not bool:
        _flag("left", left)
    if unitriangular.__class__ is not bool:
        _flag("unitriangular", unitriangular)
    a, b = A.data, B.data
    fname = "linalg.solve_triangular"
    if a.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor A must have at least 2 dimensions.")
    n = a.shape[-1]
    if a.shape[-2] != n:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they are {a.shape[-2]} by {n} matrices")
    if b.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor B must have at least 2 dimensions.")
    if b.shape[-2 if left else -1] != n:
        raise RuntimeError(
            f"{fname}: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'} = B "
            f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})"
        )
    dev = common_device(A, B)
    xp = dev.xp
    if a.shape[:-2] != b.shape[:-2]:
        infer_size(b.shape[:-2], a.shape[:-2])  # PyTorch's error for batch dims that do not broadcast
    if a.dtype.kind not in "fc" or a.dtype.itemsize < 4:
        raise NotImplementedError(f'"triangular_solve_cpu" not implemented for \'{scalar_type_name(a.dtype)}\'')
    if b.dtype != a.dtype:  # PyTorch solves in A's dtype, B converted (and its gradient back)
        B = B.to(A.dtype)
        b = B.data
    out = like(substitute(xp, a, b, upper, left, unitriangular), A)
    if needs_grad(A, B):
        node: Any = attach(LinalgSolveTriangularBackward0((edge_of(A), edge_of(B))), out)
        node.A, node.result = save(A), save(out, is_output=True)
        node.upper, node.left, node.unitriangular = upper, left, unitriangular
        node.a_shape, node.b_shape = a.shape, b.shape
    return out
