"""Matrix products: ``matmul`` (1-D, 2-D and batched, with broadcasting) and ``linear``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._cost import matmul_cost, saved_shape
from .._base._dtypes import cpp_type_name, scalar_type_name
from .._base._graph_context import should_compute
from .._devices._device import CPU
from ._registry import backward, op, variant
from ._util import (
    Tensor,
    attach,
    common_device,
    edge_of,
    first_order,
    infer_size,
    needs_grad,
    not_tensor,
    on,
    save,
    to_tensor,
    wrap,
)
from .batched_products import BmmBackward0, broadcast_bmm
from .batched_products import should_fold as _folds
from .batching import reduce_grad_array as _sum_to
from .convenience import contiguous
from .shape import (
    SqueezeBackward4,
    TBackward0,
    TransposeBackward0,
    UnsafeViewBackward0,
    ViewBackward0,
    reduce_grad,
    reshape,
    swapped,
    unsafe_view,
    unsqueeze,
)
from .unary_math import CloneBackward0

if TYPE_CHECKING:
    from .._core._types import TensorLike

__all__ = ["matmul", "mm", "linear"]


def _mm_cost(self: Any, grads: list[Any]) -> float:
    g = grads[0]
    if g is None:
        return 0.0
    m, n = g.data.shape
    inner = saved_shape(self.b if self.b is not None else self.a)
    k = inner[0] if self.b is not None and inner else (inner[1] if inner else 0)
    products = sum(e is not None for e in self.next_edges)
    return matmul_cost(m, k, n, products, g.data.dtype.itemsize)


def _mm_grads(g: Any, a: Any, b: Any, b_transposed: bool, swap: Any) -> tuple[Any, Any]:
    """``mm``'s derivative, written once for both carriers: arrays (the first-order fast path,
    ``swap`` swapping their last two axes) and tensors (differentiable, ``swap`` = ``.mT``).
    ``a`` is None where its gradient is not wanted, as is ``b``. A transposed ``b`` (``linear``'s
    ``weight.t()``, which TBackward0 transposes back) gets its gradient made transposed too, so
    that the weight's is contiguous and AccumulateGrad takes it without a copy (PyTorch's
    ``mm_mat2_backward`` does the same)."""
    ga = g @ swap(b) if b is not None else None
    gb = None
    if a is not None:
        gb = swap(swap(g) @ a) if b_transposed else swap(a) @ g
    return ga, gb


def _swap_arrays(x: Any) -> Any:
    return x.swapaxes(-1, -2)


def _swap_tensors(x: Tensor) -> Tensor:
    return x.mT


def _array(t: Tensor | None) -> Any:
    return None if t is None else t.data


@backward(saved=("a", "b"), cost=_mm_cost, b_transposed=False, batched=True)
def MmBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Backward of a product of two 2-D matrices."""
    g = grads[0]
    ea, eb = self.next_edges
    # (each gradient needs the other operand: a's needs b, b's needs a)
    b = self.b.unpack(self) if should_compute(ea) else None
    a = self.a.unpack(self) if should_compute(eb) else None
    if not first_order():
        return _mm_grads(g, a, b, self.b_transposed, _swap_tensors)
    out = _mm_grads(g.data, _array(a), _array(b), self.b_transposed, _swap_arrays)
    return tuple(None if r is None else on(wrap(r), g._device) for r in out)


def _matmul_cost(self: Any, grads: list[Any]) -> float:
    g = grads[0]
    b_shape = saved_shape(self.b)
    if g is None or not b_shape:
        return 0.0
    k = b_shape[-2] if len(b_shape) > 1 else b_shape[0]
    return matmul_cost(max(g.data.size, 1), k, 1, sum(e is not None for e in self.next_edges), g.data.dtype.itemsize)


@backward(saved=("a", "b"), cost=_matmul_cost, batched=True)
def MatmulBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Backward of the general case: 1-D operands are promoted, batch dims broadcast."""
    g = grads[0]
    a, b = self.a.unpack(self), self.b.unpack(self)
    a_vec, b_vec = a.data.ndim == 1, b.data.ndim == 1
    a2 = a.unsqueeze(0) if a_vec else a
    b2 = b.unsqueeze(-1) if b_vec else b
    # Column first: for a dot product the gradient is 0-d, and () -> (1,) -> (1, 1).
    if b_vec:
        g = g.unsqueeze(-1)
    if a_vec:
        g = g.unsqueeze(-2)
    ea, eb = self.next_edges
    ga = gb = None
    # Batched gradients (is_grads_batched) of a vector-matrix product: the batch of vectors is a
    # matrix, and one matrix product (BLAS gemm) replaces a matrix-vector product per sample
    # (gemv); the two round differently in the last bit (docs/functional.md).
    batched_matvec = a_vec != b_vec and (b if a_vec else a).data.ndim == 2 and batch > 0
    if should_compute(ea):
        if batched_matvec and a_vec:
            ga = matmul(grads[0], b.mT)
        else:
            ga = reduce_grad(matmul(g, b2.mT), a2.data.shape, batch)
            ga = ga.squeeze(-2) if a_vec else ga  # -2, not 0: batched gradients lead with the batch
    if should_compute(eb):
        if batched_matvec and b_vec:
            gb = matmul(grads[0], a)
        else:
            gb = reduce_grad(matmul(a2.mT, g), b2.data.shape, batch)
            gb = gb.squeeze(-1) if b_vec else gb
    return (ga, gb)


#: PyTorch's names for two cases of the general product (its kernels: ``mv``, ``dot``); same rule.
MvBackward0 = variant("MvBackward0", MatmulBackward0, doc="Backward of a matrix-vector product.")
DotBackward0 = variant("DotBackward0", MatmulBackward0, doc="Backward of a dot product of two vectors.")


def _dtype_mismatch(a: Any, b: Any) -> str:
    """PyTorch's message for operands of different dtypes, from the kernel its matmul picks
    (at::matmul: dot, mv, mm on folded batches, or bmm)."""
    da, db, na, nb = a.dtype, b.dtype, a.ndim, b.ndim
    if na == 1 and nb == 1:
        return f"dot : expected both vectors to have same dtype, but found {scalar_type_name(da)} and {scalar_type_name(db)}"
    if nb == 1:  # mv (a batch of matrices folds into one)
        return f"addmv input tensors must have the same dtype, but got {scalar_type_name(db)}, {scalar_type_name(da)}, and {scalar_type_name(db)}"
    if nb == 2:  # mm (a vector is a 1-row matrix, a batch folds into rows)
        return f"expected m1 and m2 to have the same dtype, but got: {cpp_type_name(da)} != {cpp_type_name(db)}"
    return f"expected scalar type {scalar_type_name(da)} but found {scalar_type_name(db)}"  # bmm


def _mismatch(a: tuple[int, ...], b: tuple[int, ...]) -> str:
    """PyTorch's message for operands whose inner sizes differ (dot, mv, mm; else mm's)."""
    if len(a) == 1 and len(b) == 1:
        return (
            f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same "
            f"number of elements, but got {a[0]} and {b[0]} elements respectively"
        )
    if len(a) == 2 and len(b) == 1:
        return f"size mismatch, got input ({a[0]}), mat ({a[0]}x{a[1]}), vec ({b[0]})"
    if len(b) >= 3:
        # PyTorch's batched path: the batch dims broadcast (infer_size's words), then bmm over
        # their product checks the inner sizes (a vector on the left is a 1-row matrix).
        a = (1, *a) if len(a) == 1 else a
        try:
            batch = int(np.prod(infer_size(a[:-2], b[:-2]), dtype=np.int64))
        except RuntimeError as exc:
            return str(exc)
        return (
            f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {a[-1]}] "
            f"but got: [{batch}, {b[-2]}]."
        )
    a = (1, *a) if len(a) == 1 else a  # a vector multiplies as a 1-row matrix
    return f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a))} and {'x'.join(map(str, b))})"


@op(
    MmBackward0, MvBackward0, DotBackward0, UnsafeViewBackward0, SqueezeBackward4, TransposeBackward0,
    CloneBackward0, BmmBackward0,
)
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with numpy's ``matmul`` rules (dot, mv, mm, batched mm), recording
    PyTorch's nodes (``at::native::_matmul_impl``): ``DotBackward0``, ``MvBackward0``,
    ``MmBackward0``; a vector times a matrix squeezed (``SqueezeBackward4``); batch dims folded
    into rows (``UnsafeViewBackward0``, or for a matrix times a batch the transpose back and its
    copy: ``TransposeBackward0``, ``CloneBackward0``); else ``bmm`` (``UnsafeViewBackward0``)."""
    # An array operand (``x @ array``) is a constant: a tensor that needs no grad, so it can be saved.
    input, other = to_tensor(input, other), to_tensor(other, input)
    a, b = input.data, other.data
    if a.ndim > 2 or b.ndim > 2:
        return _matmul_nd(input, other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    if a.dtype != b.dtype:  # PyTorch does not promote in matrix products
        raise RuntimeError(_dtype_mismatch(a, b))
    if a.dtype.kind == "b":
        _refuse_bool(a, b)
    if a.ndim == 1 and b.ndim == 2:
        # As PyTorch: the vector as a 1-row matrix, mm, the row squeezed away in place
        # (SqueezeBackward4 over MmBackward0 over UnsqueezeBackward0).
        row = matmul(unsqueeze(input, 0), other)
        return unsafe_view(row, b.shape[1:], SqueezeBackward4)
    try:
        out = wrap(a @ b)  # the arrays' own matmul: any array module
    except ValueError:
        raise RuntimeError(_mismatch(a.shape, b.shape)) from None
    if input._device is not CPU or other._device is not CPU:
        on(out, common_device(input, other))
    if needs_grad(input, other):
        if b.ndim == 2:
            cls = MmBackward0
        else:
            cls = MvBackward0 if a.ndim == 2 else DotBackward0
        node = attach(cls((edge_of(input), edge_of(other))), out)
        ea, eb = node.next_edges
        # Each operand is needed only for the other's gradient (mv and dot need both shapes).
        general = cls is not MmBackward0
        node.a = save(input) if eb is not None or general else None
        node.b = save(other) if ea is not None or general else None
        if not general and eb is not None:
            flags = b.flags  # (a CuPy array's too)
            if flags.f_contiguous and not flags.c_contiguous:  # a transposed matrix (see MmBackward0)
                node.b_transposed = True
    return out


def _refuse_bool(a: Any, b: Any) -> None:
    """PyTorch's BLAS kernels have no bool type; they are not reached for an empty result or a
    sum over nothing (filled in), but ``dot`` always is."""
    if a.ndim == 1 and b.ndim == 1:
        raise NotImplementedError('"dot" not implemented for \'Bool\'')
    if a.shape[-1] and (a.shape[0] if a.ndim == 2 else 1) and (b.shape[-1] if b.ndim == 2 else 1):
        kernel = "addmv_impl_cpu" if b.ndim == 1 else "addmm_impl_cpu_"
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _matmul_nd(input: Tensor, other: Tensor) -> Tensor:
    """``matmul`` with an operand of 3 or more dims: PyTorch's composites (folded, or ``bmm``),
    or, with no graph to record, one product of the arrays (numpy's batched matmul)."""
    a, b = input.data, other.data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    if _folds(input, other):  # (PyTorch's should_fold)
        return _folded(input, other)
    if a.dtype == b.dtype and not needs_grad(input, other):
        try:
            return on(wrap(a @ b), common_device(input, other))
        except ValueError:
            pass  # (the composite raises PyTorch's error)
    return broadcast_bmm(input, other, matmul)


def _folded(input: Tensor, other: Tensor) -> Tensor:
    """PyTorch's folded product: the batch dims of the larger operand (``t1``; the right one
    transposed, and then the left one too) fold into the rows of one ``mm`` or ``mv``, viewed
    back (a transposed result transposed back, and made contiguous)."""
    transpose = other.data.ndim > input.data.ndim
    if transpose:
        t1 = swapped(other, -2, -1, TransposeBackward0)  # other.mT
        t2 = swapped(input, 0, 1, TBackward0) if input.data.ndim == 2 else input
    else:
        t1, t2 = input, other
    sizes = t1.data.shape
    out_shape = sizes[:-1]
    # (the rows counted, not -1: a last dim of 0 would leave -1 ambiguous)
    rows = reshape(t1, int(np.prod(out_shape, dtype=np.int64)), sizes[-1])
    if t2.data.ndim == 1:
        return unsafe_view(matmul(rows, t2), out_shape)
    out = unsafe_view(matmul(rows, t2), out_shape + t2.data.shape[1:])
    if not transpose:
        return out
    out = swapped(out, -2, -1, TransposeBackward0)  # .mT
    return out if out.data.flags.c_contiguous else contiguous(out)


@op(MmBackward0)
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two 2-D matrices."""
    if input.data.ndim != 2 or mat2.data.ndim != 2:
        raise RuntimeError("self must be a matrix" if input.data.ndim != 2 else "mat2 must be a matrix")
    return matmul(input, mat2)


def _linear_cost(self: Any, grads: list[Any]) -> float:
    g = grads[0]
    if g is None:
        return 0.0
    batch, out = g.data.shape
    fan_in = (saved_shape(self.weight) or saved_shape(self.x) or (0, 0))[-1]
    products = sum(e is not None for e in self.next_edges[1:])
    return matmul_cost(batch, fan_in, out, products, g.data.dtype.itemsize)


@backward(saved=("x", "weight"), cost=_linear_cost, batched=True)
def AddmmBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``linear(x, W, b)`` for 2-D ``x``, ``b + x @ W.T``: PyTorch records ``addmm(b, x, W.t())``,
    and so its edges go to the bias, the input and the weight's ``TBackward0``, in that order
    (the gradient for ``W.t()`` is made transposed, so that ``W``'s comes out contiguous)."""
    g = grads[0]
    eb, ex, ew = self.next_edges
    # (each gradient needs the other operand: x's needs the weight, the weight's needs x)
    w = self.weight.unpack(self) if should_compute(ex) else None
    x = self.x.unpack(self) if should_compute(ew) else None
    bias_shape = self.bias_shape if eb is not None else None
    if not first_order():
        return _addmm_grads(g, x, w, bias_shape, batch, _swap_tensors, reduce_grad)
    out = _addmm_grads(g.data, _array(x), _array(w), bias_shape, batch, _swap_arrays, _sum_to)
    return tuple(None if r is None else on(wrap(r), g._device) for r in out)


def _addmm_grads(
    g: Any, x: Any, w: Any, bias_shape: tuple[int, ...] | None, batch: int, swap: Any, sum_to: Any
) -> tuple[Any, Any, Any]:
    """``linear``'s derivative (bias, input, weight), written once for arrays or tensors as
    ``_mm_grads`` is (``sum_to`` sums the bias's gradient back to its shape, behind ``batch``
    batch dims); None where a gradient is not wanted (its operand, or ``bias_shape``, None)."""
    gx = g @ w if w is not None else None
    gw = swap(swap(g) @ x) if x is not None else None  # (for W.t(): TBackward0 swaps it back)
    gb = sum_to(g, bias_shape, batch) if bias_shape is not None else None
    return gb, gx, gw


@op(AddmmBackward0, MmBackward0, TBackward0, ViewBackward0, UnsafeViewBackward0, SqueezeBackward4, top_level=False)
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``, as ``torch.nn.functional.linear``."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("linear", input)
    if bias is not None and bias.data.dtype != weight.data.dtype:  # addmm's check, made first
        raise RuntimeError(
            "self and mat2 must have the same dtype, but got "
            f"{scalar_type_name(bias.data.dtype)} and {scalar_type_name(weight.data.dtype)}"
        )
    if input.data.dtype != weight.data.dtype:  # addmm's words with a bias, mm's without
        x_dt, w_dt = input.data.dtype, weight.data.dtype
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {scalar_type_name(x_dt)} and {scalar_type_name(w_dt)}"
            if bias is not None
            else f"expected m1 and m2 to have the same dtype, but got: {cpp_type_name(x_dt)} != {cpp_type_name(w_dt)}"
        )
    if input.data.ndim != 2:  # (the 2-D case, a training step's, tests one comparison)
        wt = swapped(weight, 0, 1 if weight.data.ndim == 2 else 0, TBackward0)  # weight.t()
        if (
            bias is not None and weight.data.ndim == 2 and input.data.ndim and input.is_contiguous()
            and bias.is_contiguous() and (bias.data.ndim == 1 or bias.data.shape[:-1] == (1,))
        ):
            # As PyTorch's at::linear (_flatten_nd_linear): a contiguous input's leading dims
            # fold into rows (ViewBackward0), one addmm with a contiguous bias, viewed back
            # (ViewBackward0); else matmul's, the bias added after (AddBackward0)
            *batch, fan_in = input.data.shape
            folded = linear(reshape(input, int(np.prod(batch, dtype=np.int64)), fan_in), weight, bias)
            return reshape(folded, *batch, folded.data.shape[-1])
        # else matmul(input, weight.t()) (which folds the batch dims into rows), the bias added
        out = matmul(input, wt)
        return out if bias is None else out + bias
    if bias is None:  # as PyTorch: mm(input, weight.t()), recorded as MmBackward0 and TBackward0
        return matmul(input, swapped(weight, 0, 1, TBackward0))
    x, w = input.data, weight.data
    if x.shape[1] != w.shape[-1]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({x.shape[0]}x{x.shape[1]} and "
            f"{w.shape[-1]}x{w.shape[0]})"
        )
    data = x @ w.T
    data += bias.data
    out = wrap(data)
    if input._device is not CPU or weight._device is not CPU or bias._device is not CPU:
        on(out, common_device(input, weight, bias))
    if needs_grad(input, weight, bias):
        # (the weight's edge through weight.t()'s TBackward0, as torch's; no view without a grad)
        wt = swapped(weight, 0, 1, TBackward0) if needs_grad(weight) else weight
        node = attach(AddmmBackward0((edge_of(bias), edge_of(input), edge_of(wt))), out)
        _, ex, ew = node.next_edges
        node.x = save(input) if ew is not None else None
        node.weight = save(weight) if ex is not None else None
        node.bias_shape = bias.data.shape
    return out


TENSOR_METHODS = {"matmul": matmul, "mm": mm, "__matmul__": matmul}


def _rmatmul(self: Tensor, other: TensorLike) -> Tensor:
    """``other @ self``, ``other`` made a tensor first (an array, say)."""
    return matmul(to_tensor(other, self), self)


TENSOR_METHODS["__rmatmul__"] = _rmatmul
