"""The tensor products of ``aiograd/_ops/products.py`` (bmm, dot, outer, trace, tensordot, einsum):
factory rows (gradcheck, gradgradcheck, values, first and second derivatives against torch,
float32, grad_fn names), einsum's equation syntax (implicit output, ``...``, repeated and
broadcast subscripts), then PyTorch's errors, word for word."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag

SPECS = [
    OpSpec("bmm", lambda lib, a, b: lib.bmm(a, b), ((2, 3, 4), (2, 4, 5)), grad_fn="BmmBackward0"),
    OpSpec("bmm_method", lambda lib, a, b: a.bmm(b), ((3, 1, 2), (3, 2, 2)), grad_fn="BmmBackward0"),
    OpSpec("bmm_squared", lambda lib, a: lib.bmm(a, a.mT), ((2, 3, 2),), op="bmm"),
    OpSpec("dot_fn", lambda lib, a, b: lib.dot(a, b), ((4,), (4,)), grad_fn="DotBackward0"),
    OpSpec("dot_method_self", lambda lib, a: a.dot(a), ((3,),), grad_fn="DotBackward0", op="dot"),
    OpSpec("outer", lambda lib, a, b: lib.outer(a, b), ((3,), (4,)), grad_fn="MulBackward0"),
    OpSpec("outer_method", lambda lib, a: a.outer(a), ((3,),), op="outer"),
    OpSpec("trace", lambda lib, a: lib.trace(a), ((3, 3),), grad_fn="TraceBackward0"),
    OpSpec("trace_rectangular", lambda lib, a: a.trace(), ((2, 4),), grad_fn="TraceBackward0"),
    OpSpec("trace_of_square", lambda lib, a: (a @ a).trace(), ((3, 3),), op="trace"),
    OpSpec("tensordot", lambda lib, a, b: lib.tensordot(a, b), ((2, 3, 4), (3, 4, 2)), grad_fn="ViewBackward0"),
    OpSpec("tensordot_int", lambda lib, a, b: lib.tensordot(a, b, 1), ((2, 3), (3, 4))),
    OpSpec("tensordot_lists", lambda lib, a, b: lib.tensordot(a, b, ([0, 2], [2, 0])), ((2, 3, 4), (4, 5, 2))),
    OpSpec("tensordot_zero", lambda lib, a, b: lib.tensordot(a, b, 0), ((2,), (3,))),
    OpSpec("tensordot_all", lambda lib, a, b: lib.tensordot(a, b, dims=([1, 0], [0, 1])), ((2, 3), (3, 2))),
]

#: einsum equations: (name, equation, operand shapes). PyTorch records a composite's nodes here,
#: so there is no grad_fn name to compare.
EINSUMS = [
    ("matmul", "ij,jk->ik", ((2, 3), (3, 4))),
    ("implicit", "ij,jk", ((2, 3), (3, 4))),
    ("implicit_order", "ba", ((2, 3),)),
    ("implicit_upper_first", "bA", ((2, 3),)),
    ("transpose", "ijk->kji", ((2, 3, 4),)),
    ("sum_all", "ij->", ((2, 3),)),
    ("diagonal", "ii->i", ((3, 3),)),
    ("trace", "ii", ((3, 3),)),
    ("diagonal_batched", "bii->bi", ((2, 3, 3),)),
    ("repeated_twice", "iji->j", ((3, 2, 3),)),
    ("outer", "i,j->ij", ((3,), (4,))),
    ("inner", "i,i", ((4,), (4,))),
    ("batched", "bij,bjk->bik", ((2, 2, 3), (2, 3, 2))),
    ("ellipsis", "...ij,...jk->...ik", ((2, 2, 3), (3, 2))),
    ("ellipsis_implicit", "...ij,jk", ((2, 2, 3), (3, 2))),
    ("ellipsis_back", "ij...->ji...", ((2, 3, 2),)),
    ("broadcast_subscript", "ij,ij->ij", ((1, 3), (2, 3))),
    ("three_operands", "ij,jk,kl->il", ((2, 3), (3, 2), (2, 2))),
    ("summed_only_here", "ij,k->i", ((2, 3), (4,))),
    ("bilinear", "i,ij,j->", ((3,), (3, 4), (4,))),
    ("spaces", "i j , j k -> i k", ((2, 3), (3, 2))),
    ("diagonal_shared", "ii,i->", ((3, 3), (3,))),
    ("diagonal_second", "ij,jj->i", ((2, 3), (3, 3))),
    ("scalar_operand", ",i->i", ((), (3,))),
    ("ellipsis_broadcast", "...i,...i->...", ((2, 1, 3), (4, 3))),
]
EINSUM_SPECS = [
    OpSpec(f"einsum_{name}", lambda lib, *xs, eq=eq: lib.einsum(eq, *xs), shapes, op="einsum") for name, eq, shapes in EINSUMS
] + [
    OpSpec("einsum_list_operands", lambda lib, a, b: lib.einsum("ij,jk", [a, b]), ((2, 3), (3, 2)), op="einsum"),
    OpSpec("einsum_squared", lambda lib, a: lib.einsum("ij,kj->ik", a, a), ((2, 3),), op="einsum"),
]

globals().update(make_op_tests(SPECS + EINSUM_SPECS))


def test_einsum_records_one_product_under_torchs_last_node() -> None:
    # torch lowers einsum to bmm and ends with a view; aiograd computes it as one node and
    # records torch's last op on top of it, so grad_fn reads as torch's
    a = ag.ones(2, 3, requires_grad=True)
    y = ag.einsum("ij,jk", a, ag.ones(3, 2))
    assert y.grad_fn.name() == "ViewBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "EinsumBackward0"


# ================================================================================ errors
def z(lib: Any, *shape: int, dtype: Any = None) -> Any:
    return lib.zeros(*shape, dtype=dtype if dtype is not None else lib.float32)


ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("bmm_2d_first", lambda lib: lib.bmm(z(lib, 2, 3), z(lib, 2, 3, 4))),
    ("bmm_2d_second", lambda lib: lib.bmm(z(lib, 2, 2, 3), z(lib, 2, 3))),
    ("bmm_batch", lambda lib: lib.bmm(z(lib, 2, 2, 3), z(lib, 3, 3, 4))),
    ("bmm_inner", lambda lib: lib.bmm(z(lib, 2, 2, 3), z(lib, 2, 4, 4))),
    ("bmm_dtype", lambda lib: lib.bmm(z(lib, 2, 2, 3), z(lib, 2, 3, 4, dtype=lib.float64))),
    ("dot_2d", lambda lib: lib.dot(z(lib, 2, 3), z(lib, 3))),
    ("dot_sizes", lambda lib: lib.dot(z(lib, 3), z(lib, 4))),
    ("dot_dtype", lambda lib: lib.dot(z(lib, 3), z(lib, 3, dtype=lib.float64))),
    ("outer_self", lambda lib: lib.outer(z(lib, 2, 3), z(lib, 3))),
    ("outer_vec2", lambda lib: lib.outer(z(lib, 3), z(lib, 2, 3))),
    ("trace_1d", lambda lib: lib.trace(z(lib, 3))),
    ("trace_3d", lambda lib: lib.trace(z(lib, 2, 3, 3))),
    ("tensordot_sizes", lambda lib: lib.tensordot(z(lib, 2, 3), z(lib, 4, 5), 1)),
    ("tensordot_lengths", lambda lib: lib.tensordot(z(lib, 2, 3), z(lib, 3, 5), ([1, 0], [0]))),
    ("tensordot_negative", lambda lib: lib.tensordot(z(lib, 2, 3), z(lib, 3, 5), -1)),
    ("einsum_sizes", lambda lib: lib.einsum("ij,jk", z(lib, 2, 3), z(lib, 4, 5))),
    ("einsum_few_operands", lambda lib: lib.einsum("ij,jk->ik", z(lib, 2, 3))),
    ("einsum_unknown_output", lambda lib: lib.einsum("ij->ik", z(lib, 2, 3))),
    ("einsum_ndim", lambda lib: lib.einsum("ijk->ij", z(lib, 2, 3))),
    ("einsum_repeated_output", lambda lib: lib.einsum("ij->ii", z(lib, 2, 2))),
    ("einsum_bad_subscript", lambda lib: lib.einsum("i1->i", z(lib, 2, 2))),
    ("einsum_dtype", lambda lib: lib.einsum("i,i->", z(lib, 2), z(lib, 2, dtype=lib.float64))),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)


@requires_torch
def test_tensordot_accepts_a_tensor_dims() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    ours = ag.tensordot(ag.tensor(a), ag.tensor(b), dims=ag.tensor(1))
    theirs = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=torch.tensor(1))
    np.testing.assert_array_equal(ours.data, theirs.numpy())


@requires_torch
def test_einsum_frees_its_operands_after_backward() -> None:
    """Every operand it saved is released: a second backward raises torch's error."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
    x, y = ag.tensor(a, requires_grad=True), ag.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, tout = ag.einsum("ij,jk", x, y), torch.einsum("ij,jk", tx, ty)
    ag.sync.backward(out, ag.ones(2, 2))
    tout.backward(torch.ones(2, 2, dtype=tout.dtype))
    with pytest.raises(RuntimeError) as theirs:
        tout.backward(torch.ones(2, 2, dtype=tout.dtype))
    with pytest.raises(RuntimeError) as ours:
        ag.sync.backward(out, ag.ones(2, 2))
    assert str(ours.value) == str(theirs.value)
