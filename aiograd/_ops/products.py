"""Tensor products beyond ``matmul``, as PyTorch's: ``bmm``, ``dot``, ``outer``, ``trace``,
``tensordot`` and ``einsum`` (its equation syntax: ``->`` or the implicit output, ``...``,
subscripts that broadcast), with PyTorch's checks and messages.

``bmm``, ``dot`` and ``trace`` record PyTorch's nodes. ``outer`` and ``tensordot`` are composites
as in PyTorch (``outer`` a broadcast product, ``tensordot`` a permute, reshape and ``mm``), so
they record the same nodes as torch's. PyTorch's ``einsum`` is a composite of permutes, views and
``bmm`` whose nodes depend on the equation; here it is one node, ``EinsumBackward0``, whose
rule is an ``einsum`` per operand (so every order of derivative is one too).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

from .._base._dtypes import scalar_type_name, type_name
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
from .batched_products import BmmBackward0, bmm  # noqa: F401  (bmm is one of this family's)
from .batching import per_sample_scalar
from .linalg import matmul
from .reduction import SumBackward1
from .reduction import sum as _sum
from .shape import PermuteBackward0, ViewBackward0, _view_or_copy, permute

__all__ = ["bmm", "dot", "einsum", "outer", "tensordot", "trace"]


# ------------------------------------------------------------------------------ dot
@backward(saved=("a", "b"), batched=True)
def DotBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """``g * b`` and ``g * a`` (``g`` is 0-d, or a batch of them)."""
    g = per_sample_scalar(grads[0], 1, batch)
    ea, eb = self.next_edges
    ga = g * self.b.unpack(self) if ea is not None else None
    gb = g * self.a.unpack(self) if eb is not None else None
    return (ga, gb)


@op(DotBackward0)
def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """The inner product of two 1-D tensors of the same size and dtype."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("dot", input)
    a, b = input.data, tensor.data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape != b.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
            f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
        )
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found {scalar_type_name(a.dtype)} and {scalar_type_name(b.dtype)}"
        )
    if a.dtype.kind == "b":  # PyTorch's dot has no bool kernel
        raise NotImplementedError('"dot" not implemented for \'Bool\'')
    out = on(wrap(input._device.xp.asarray(a @ b)), common_device(input, tensor))
    if needs_grad(input, tensor):
        node: Any = attach(DotBackward0((edge_of(input), edge_of(tensor))), out)
        ea, eb = node.next_edges
        node.a = save(input) if eb is not None else None
        node.b = save(tensor) if ea is not None else None
    return out


# ------------------------------------------------------------------------------ outer
def _mul_node() -> Any:
    from .elementwise import MulBackward0

    return MulBackward0


@op(_mul_node())
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two 1-D tensors: ``input[:, None] * vec2`` (PyTorch's composite, so
    its node is ``MulBackward0``)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("outer", input)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.data.ndim}-D")
    return input.reshape(-1, 1) * vec2


# ------------------------------------------------------------------------------ trace
@backward(batched=True)
def TraceBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """The gradient on the diagonal: ``g * eye(n, m)``."""
    g = per_sample_scalar(grads[0], 2, batch)
    xp = g._device.xp
    return (g * like(xp.eye(*self.shape, dtype=g.data.dtype), g),)


@op(TraceBackward0)
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D tensor (rectangular too)."""
    if not isinstance(input, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("trace", input)
    data = input.data
    if data.dtype.kind == "b":  # PyTorch's trace has no bool kernel (checked before the rank)
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    if data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {data.ndim}")
    out = like(input._device.xp.asarray(data.trace()), input)
    if needs_grad(input):
        node: Any = attach(TraceBackward0((edge_of(input),)), out)
        node.shape = data.shape
    return out


# ------------------------------------------------------------------------------ tensordot
def _dims_lists(dims: Any, ndim_a: int) -> tuple[list[int], list[int]]:
    if hasattr(dims, "data") and getattr(dims.data, "ndim", 1) == 0:  # a 0-d tensor: an int
        dims = int(dims.data)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    dims_a, dims_b = dims
    dims_a = [int(d) for d in (dims_a.data.tolist() if hasattr(dims_a, "data") else ([dims_a] if isinstance(dims_a, int) else dims_a))]
    dims_b = [int(d) for d in (dims_b.data.tolist() if hasattr(dims_b, "data") else ([dims_b] if isinstance(dims_b, int) else dims_b))]
    return dims_a, dims_b


@op(ViewBackward0)
def tensordot(a: Tensor, b: Tensor, dims: int | tuple[Sequence[int], Sequence[int]] | list[Any] = 2) -> Tensor:
    """Contract ``a``'s ``dims[0]`` with ``b``'s ``dims[1]`` (an int ``d``: ``a``'s last ``d``
    dims with ``b``'s first ``d``); PyTorch's composite: permute, reshape, ``mm``, reshape."""
    if not isinstance(a, Tensor):  # PyTorch's TypeError, not an AttributeError
        raise not_tensor("tensordot", a, 1, "a")
    dims_a, dims_b = _dims_lists(dims, a.data.ndim)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    sa, sb = a.data.shape, b.data.shape
    ca = [d % max(len(sa), 1) for d in dims_a]
    cb = [d % max(len(sb), 1) for d in dims_b]
    for da, db, ia, ib in zip(dims_a, dims_b, ca, cb):
        if sa[ia] != sb[ib]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {sa[ia]} in dim {da} and "
                f"second has size {sb[ib]} in dim {db}"
            )
    free_a = [d for d in range(len(sa)) if d not in ca]
    free_b = [d for d in range(len(sb)) if d not in cb]
    out_shape = tuple(sa[d] for d in free_a) + tuple(sb[d] for d in free_b)
    m, k, n = _numel(sa, free_a), _numel(sa, ca), _numel(sb, free_b)  # (explicit: -1 is ambiguous at 0)
    left = a.permute(tuple(free_a + ca)).reshape((m, k))
    right = b.permute(tuple(cb + free_b)).reshape((k, n))
    return matmul(left, right).reshape(out_shape)


def _numel(shape: tuple[int, ...], dims: list[int]) -> int:
    size = 1
    for d in dims:
        size *= shape[d]
    return size


# ------------------------------------------------------------------------------ einsum
_LETTERS = frozenset(string.ascii_letters)


def _parse(equation: str, operands: Sequence[Tensor]) -> tuple[list[str], str]:
    """The equation with every ``...`` spelled out as letters: one subscript string per operand
    and the output's (implicit output: the letters used once, in ASCII order, after the
    ellipsis dims). PyTorch's checks and messages."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for pos, ch in enumerate(eq):
        if ch not in _LETTERS and ch not in ".,->":
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {pos} in the equation string, subscripts must be in [a-zA-Z]"
            )
    spare = [c for c in string.ascii_letters if c not in eq]
    ell_ndim = 0
    for i, (term, x) in enumerate(zip(terms, operands)):
        n_letters = len(term.replace("...", ""))
        if "..." in term:
            ell_ndim = max(ell_ndim, x.data.ndim - n_letters)
        elif n_letters != x.data.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({n_letters}) does not match the number "
                f"of dimensions ({x.data.ndim}) for operand {i} and no ellipsis was given"
            )
    ell = "".join(spare[:ell_ndim])
    subs = []
    for term, x in zip(terms, operands):
        if "..." in term:
            k = x.data.ndim - len(term.replace("...", ""))
            term = term.replace("...", ell[ell_ndim - k :] if k else "")
        subs.append(term)
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if not any(c in s for s in subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    else:
        joined = "".join(s for s in subs)
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ell))
    return subs, out


def _broadcast_sizes(subs: list[str], operands: Sequence[Tensor]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for i, (s, x) in enumerate(zip(subs, operands)):
        for c, n in zip(s, x.data.shape):
            seen = sizes.get(c, 1)
            if seen != 1 and n != 1 and n != seen:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {n} for operand {i} which does not broadcast with "
                    f"previously seen size {seen}"
                )
            sizes[c] = n if n != 1 else seen
    return sizes


# Not batched: its rule does take a batch (``batch``, subscripts of its own), but an equation of
# three or more operands follows numpy's contraction path, which sums in another order once the
# batch is there (not bit for bit the loop of ``grad()``), so it runs once per sample.
@backward(saved=())
def EinsumBackward0(self: Any, grads: list[Any], batch: int = 0) -> Any:
    """Each operand's gradient is an ``einsum`` of the output's gradient and the other operands
    into that operand's subscripts: a subscript only that operand has is broadcast (a ones
    vector), a repeated one (a diagonal) is put back on the diagonal (an identity matrix)."""
    g = grads[0]
    xp, dtype = g._device.xp, g.data.dtype
    operands = [getattr(self, name).unpack(self) for name in self._saved]
    subs, out_subs, sizes = self.subs, self.out_subs, self.sizes
    spare = iter(c for c in string.ascii_letters if c not in "".join(subs) + out_subs)
    # a batch of gradients: subscripts of their own, kept in front
    lead = "".join(next(spare) for _ in range(batch))
    result: list[Tensor | None] = []
    for i, edge in enumerate(self.next_edges):
        if edge is None:
            result.append(None)
            continue
        terms, args = [lead + out_subs], [g]
        for j, (s, x) in enumerate(zip(subs, operands)):
            if j != i:
                terms.append(s)
                args.append(x)
        present = set("".join(terms))
        target = lead
        for c in subs[i]:
            if c in target[len(lead) :]:  # a repeated subscript: a fresh one, tied to it by an identity
                fresh = next(spare)
                terms.append(c + fresh)
                args.append(like(xp.eye(sizes[c], dtype=dtype), g))
                target += fresh
                continue
            if c not in present:  # summed over in the forward: the gradient is broadcast
                terms.append(c)
                args.append(like(xp.ones(sizes[c], dtype=dtype), g))
                present.add(c)
            target += c
        result.append(einsum(",".join(terms) + "->" + target, *args))
    return tuple(result)


@op(EinsumBackward0, ViewBackward0, PermuteBackward0, SumBackward1, _mul_node())
def einsum(equation: str, *operands: Any) -> Tensor:
    """Sum of products of the operands' elements over the subscripts ``equation`` names, as
    ``torch.einsum``: ``"ij,jk->ik"``, an implicit output (``"ij,jk"``), ``...`` for leading
    or trailing dims, operands also given as one list."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):  # PyTorch's TypeError, not an AttributeError
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type_name(x)}")
    subs, out_subs = _parse(equation, operands)
    sizes = _broadcast_sizes(subs, operands)
    dtype = operands[0].data.dtype
    for x in operands[1:]:
        if x.data.dtype != dtype:
            raise RuntimeError(
                f"expected scalar type {scalar_type_name(dtype)} but found {scalar_type_name(x.data.dtype)}"
            )
    # a subscript of size 1 that broadcasts: the operand is expanded first (its gradient is summed
    # back by ExpandBackward0), so the einsum itself sees one size per subscript
    inputs = []
    for s, x in zip(subs, operands):
        full = tuple(sizes[c] for c in s)
        inputs.append(x.expand(*full) if full != x.data.shape else x)
    grad = needs_grad(*inputs)
    if not grad:
        return _einsum_node(subs, out_subs, sizes, inputs)
    # PyTorch's einsum is a composite whose last node depends on the equation: one operand is
    # permuted to the output's order, or summed over the subscripts not in the output; several
    # are multiplied (MulBackward0), or contracted and viewed to the output's shape. Here the
    # product is one EinsumBackward0 with that last op on top.
    contracted = "".join(c for c in dict.fromkeys("".join(subs)) if c not in out_subs)
    if len(inputs) == 1:
        if contracted:
            full = _einsum_node(subs, out_subs + contracted, sizes, inputs)
            return _sum(full, tuple(range(len(out_subs), full.data.ndim)))
        return permute(_einsum_node(subs, out_subs, sizes, inputs), tuple(range(len(out_subs))))
    if contracted:
        out = _einsum_node(subs, out_subs, sizes, inputs)
        return _view_or_copy(out, out.data.shape, True)
    result = None
    for s, x in zip(subs, inputs):
        if len(set(s)) != len(s):  # a repeated subscript: its diagonal first
            unique = "".join(dict.fromkeys(s))
            x, s = _einsum_node([s], unique, sizes, [x]), unique
        order = sorted(range(len(s)), key=lambda i: out_subs.index(s[i]))
        x = _view_or_copy(
            permute(x, tuple(order)), tuple(sizes[c] if c in s else 1 for c in out_subs), False
        )
        result = x if result is None else result * x
    return result  # type: ignore[return-value]


def _einsum_node(subs: list[str], out_subs: str, sizes: dict[str, int], inputs: list[Tensor]) -> Tensor:
    """The einsum of ``inputs`` (one size per subscript) into ``out_subs``, one EinsumBackward0."""
    dev = common_device(*inputs)
    eq = ",".join(subs) + "->" + out_subs
    data = dev.xp.einsum(eq, *[x.data for x in inputs], optimize=len(inputs) > 2)
    out = on(wrap(dev.xp.asarray(data)), dev)
    if needs_grad(*inputs):
        node: Any = attach(EinsumBackward0(tuple(edge_of(x) for x in inputs)), out)
        # every operand is saved (each one's gradient needs all the others), as fields x0, x1, ...
        # that ``release_variables`` frees (the node's own ``_saved``: their number varies)
        node._saved = tuple(f"x{i}" for i in range(len(inputs)))
        for name, x in zip(node._saved, inputs):
            setattr(node, name, save(x))
        node.subs, node.out_subs, node.sizes = list(subs), out_subs, sizes
    return out


#: Tensor methods (bound by ``aiograd._api._tensor_methods``), as PyTorch's.
TENSOR_METHODS = {"bmm": bmm, "dot": dot, "outer": outer, "trace": trace}
