"""Linear systems, as ``torch.linalg``'s: ``inv`` and ``solve`` (batched over leading dims, the
right-hand side a vector or a matrix, batch dims broadcast), with PyTorch's nodes, checks,
messages and ``LinAlgError`` for singular matrices, and the backward formulas of PyTorch
(derivatives.yaml's ``linalg_inv_ex``, FunctionsManual.cpp's ``linalg_solve_backward``), written
with aiograd ops so that they can be differentiated again."""

from __future__ import annotations

from typing import Any

from .._base._dtypes import scalar_type_name
from ._linalg_util import (
    LinAlgError,
    batch_prefix,
    check_float,
    check_square,
    first_zero_pivot,
    linalg_error_type,
)
from ._registry import backward, op
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    like,
    needs_grad,
    not_tensor,
    on,
    save,
    wrap,
)
from .linalg import matmul
from .shape import reduce_grad

__all__ = ["inv", "solve"]


# ------------------------------------------------------------------------------ inv
@backward(saved=("result",), batched=True)
def LinalgInvExBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``-A^{-H} g A^{-H}`` (derivatives.yaml's linalg_inv_ex)."""
    inv_h = self.result.unpack(self).mT
    return (-matmul(inv_h, matmul(grads[0], inv_h)),)


@op(LinalgInvExBackward0, name="linalg_inv", top_level=False)
def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (of each in a batch); ``LinAlgError`` if one is singular."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_inv", A, 1, "A")
    check_square(A, "linalg.inv")
    check_float(A, "linalg.inv")
    xp = A._device.xp
    try:
        data = xp.linalg.inv(A.data)
    except linalg_error_type(xp):
        batch, info = first_zero_pivot(xp, A.data)
        raise LinAlgError(
            f"linalg.inv: {batch_prefix(A.data, batch)}The diagonal element {info} is zero, the inversion could "
            "not be completed because the input matrix is singular."
        ) from None
    out = like(data, A)
    if needs_grad(A):
        node: Any = attach(LinalgInvExBackward0((edge_of(A),)), out)
        node.result = save(out, is_output=True)
    return out


# ------------------------------------------------------------------------------ solve
def _is_vector_rhs(A: Any, B: Any) -> bool:
    """PyTorch's linalg_solve_is_vector_rhs: ``B`` is a vector, or a batch of vectors with
    ``A``'s batch shape."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


@backward(saved=("A", "result"), batched=True)
def LinalgSolveExBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``gB = A^{-H} gX`` and ``gA = -gB X^H`` (linalg_solve_backward), each summed back to its
    input's broadcast shape."""
    gX = grads[0]
    A, X = self.A.unpack(self), self.result.unpack(self)
    if self.vector:
        gX, X = gX.unsqueeze(-1), X.unsqueeze(-1)
    gB = solve(A.mT, gX)
    ea, eb = self.next_edges
    gA = reduce_grad(-matmul(gB, X.mT), self.a_shape, batch) if ea is not None else None
    if eb is None:
        return (gA, None)
    gB = gB.squeeze(-1) if self.vector else gB
    return (gA, reduce_grad(gB, self.b_shape, batch))


@op(LinalgSolveExBackward0, name="linalg_solve", top_level=False)
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``), batch dims
    broadcast; ``B`` a vector or a matrix. ``LinAlgError`` if ``A`` is singular."""
    if not isinstance(A, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linalg_solve", A, 1, "A")
    check_square(A, "linalg.solve")
    a, b = A.data, B.data
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type {scalar_type_name(a.dtype)} "
            f"and B of type {scalar_type_name(b.dtype)} instead"
        )
    vector = left and _is_vector_rhs(a, b)
    if not left:  # X A = B is A^T X^T = B^T
        bm = b.reshape(*b.shape, 1) if b.ndim == 1 else b
        n = a.shape[-1]
        if bm.shape[-1] != n:
            raise RuntimeError(
                f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and {bm.shape[-2]}x{bm.shape[-1]})"
            )
        return solve(A.mT, B.reshape(*bm.shape).mT).mT
    bm = b[..., None] if vector else b
    n = a.shape[-1]
    if bm.shape[-2] != n:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and {bm.shape[-2]}x{bm.shape[-1]})"
        )
    dev = common_device(A, B)
    xp = dev.xp
    try:
        data = xp.linalg.solve(a, bm)
    except linalg_error_type(xp):
        batch, _ = first_zero_pivot(xp, xp.broadcast_to(a, bm.shape[:-2] + a.shape[-2:]) if bm.ndim > a.ndim else a)
        prefix = batch_prefix(a if a.ndim >= bm.ndim else bm, batch)
        raise LinAlgError(f"torch.linalg.solve: {prefix}The solver failed because the input matrix is singular.") from None
    out = on(wrap(data[..., 0] if vector else data), dev)
    if needs_grad(A, B):
        node: Any = attach(LinalgSolveExBackward0((edge_of(A), edge_of(B))), out)
        node.A, node.result = save(A), save(out, is_output=True)
        node.vector, node.a_shape, node.b_shape = vector, a.shape, b.shape
    return out
