"""aiograd.functional against torch.autograd.functional: values, the structure of the results
(a Tensor, a tuple, a tuple of tuples), requires_grad under create_graph, the strict-mode and
argument errors (type and message), vectorize both ways, and the blocking versions in
aiograd.sync.functional."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.functional as AF
from aiograd import sync

# Public-API tests: each async test runs on asyncio, uvloop and trio through aiograd's pytest
# plugin, which also fails a test that leaves aiograd work behind (docs/testing.md).
pytestmark = [requires_torch, pytest.mark.aiograd(backends=["asyncio", "uvloop", "trio"])]  # the public API: trio too
if torch is not None:
    import torch.autograd.functional as TF

NAMES = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]
RNG = np.random.default_rng(11)
X, Y, W = RNG.standard_normal(4), RNG.standard_normal(4), RNG.standard_normal((3, 4))


def as_torch_message(message: str) -> str:
    """torch's message in aiograd's names (``aiograd.Size``, ``aiograd.Tensor``)."""
    return message.replace("torch.Size", "aiograd.Size").replace("torch.Tensor", "aiograd.Tensor")


def same_structure_and_values(mine: Any, theirs: Any, rtol: float = 1e-12) -> None:
    if isinstance(theirs, tuple):
        assert isinstance(mine, tuple) and len(mine) == len(theirs), (type(mine), type(theirs))
        for a, b in zip(mine, theirs):
            same_structure_and_values(a, b, rtol)
        return
    assert isinstance(mine, ag.Tensor), type(mine)
    assert mine.shape == tuple(theirs.shape)
    assert mine.requires_grad == theirs.requires_grad
    np.testing.assert_allclose(mine.data, theirs.detach().numpy(), rtol=rtol, atol=1e-13)


# --------------------------------------------------------------------- functions of both libraries
def mlp(lib: Any) -> Any:
    w = ag.tensor(W) if lib is ag else torch.tensor(W)
    return lambda x: (w @ x).tanh() * 2.0


def two_in_two_out(lib: Any) -> Any:
    return lambda x, y: ((x * y).sin(), (x.exp() * y).sum())


def scalar_of_one(lib: Any) -> Any:
    return lambda x: (x**3).sum() + (x * x).sum().sqrt()


def scalar_of_two(lib: Any) -> Any:
    return lambda x, y: (x.exp() * y * y).sum() + (x * y).tanh().sum()


def tensors(lib: Any, *arrays: np.ndarray, requires_grad: bool = False) -> tuple[Any, ...]:
    if lib is ag:
        return tuple(ag.tensor(a, requires_grad=requires_grad) for a in arrays)
    return tuple(torch.tensor(a, requires_grad=requires_grad) for a in arrays)


def run_both(name: str, make: Any, inputs: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``name`` on aiograd (blocking version) and on torch, with the same arguments built for each
    library by ``inputs(lib)`` and ``args`` (callables of lib, or plain values)."""
    def build(lib: Any) -> tuple[Any, ...]:
        return tuple(a(lib) if callable(a) else a for a in args)

    mine = getattr(sync.functional, name)(make(ag), inputs(ag), *build(ag), **kwargs)
    theirs = getattr(TF, name)(make(torch), inputs(torch), *build(torch), **kwargs)
    return mine, theirs


def one(lib: Any) -> Any:
    return tensors(lib, X)[0]


def two(lib: Any) -> Any:
    return tensors(lib, X, Y)


def y_vec(lib: Any) -> Any:
    return tensors(lib, Y)[0]


def w_rows(lib: Any) -> Any:
    return tensors(lib, W[:, 0])[0]


def xy_vecs(lib: Any) -> Any:
    return tensors(lib, Y, X)


def two_out_v(lib: Any) -> Any:
    return (tensors(lib, Y)[0], tensors(lib, np.array(0.5))[0])


# --------------------------------------------------------------------- values and structure
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize(
    "name, make, inputs, extra",
    [
        ("vjp", mlp, one, (w_rows,)),
        ("vjp", two_in_two_out, two, (two_out_v,)),
        ("vjp", scalar_of_one, one, ()),
        ("jvp", mlp, one, (y_vec,)),
        ("jvp", two_in_two_out, two, (xy_vecs,)),
        ("hvp", scalar_of_one, one, (y_vec,)),
        ("hvp", scalar_of_two, two, (xy_vecs,)),
        ("vhp", scalar_of_one, one, (y_vec,)),
        ("vhp", scalar_of_two, two, (xy_vecs,)),
    ],
    # names, not reprs: a tuple of functions shows their addresses, which differ between the
    # processes of a parallel run (pytest-xdist requires every worker to collect the same ids)
    ids=lambda v: "-".join(f.__name__ for f in v) if isinstance(v, tuple) else getattr(v, "__name__", str(v)),
)
def test_products_match_torch(name: str, make: Any, inputs: Any, extra: tuple[Any, ...], create_graph: bool) -> None:
    mine, theirs = run_both(name, make, inputs, *extra, create_graph=create_graph)
    same_structure_and_values(mine, theirs)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("make, inputs", [(mlp, one), (two_in_two_out, two), (scalar_of_two, two), (scalar_of_one, one)])
def test_jacobian_matches_torch(make: Any, inputs: Any, create_graph: bool, vectorize: bool) -> None:
    mine, theirs = run_both("jacobian", make, inputs, create_graph=create_graph, vectorize=vectorize)
    same_structure_and_values(mine, theirs)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("make, inputs", [(scalar_of_one, one), (scalar_of_two, two)])
def test_hessian_matches_torch(make: Any, inputs: Any, create_graph: bool, vectorize: bool) -> None:
    mine, theirs = run_both("hessian", make, inputs, create_graph=create_graph, vectorize=vectorize)
    same_structure_and_values(mine, theirs)


async def test_vectorize_both_ways_equal() -> None:
    """The batched backward and the row-by-row loop give the same Jacobian and Hessian, to
    float64 rounding (a matrix-vector product per row against one matrix product: gemv and gemm
    may differ in the last bit)."""
    x = ag.tensor(X)
    f = mlp(ag)
    rows, batched = await AF.jacobian(f, x), await AF.jacobian(f, x, vectorize=True)
    np.testing.assert_allclose(rows.data, batched.data, rtol=1e-14, atol=1e-15)
    big, z = ag.tensor(np.linspace(-1, 1, 64 * 64).reshape(64, 64)), ag.tensor(np.linspace(-2, 2, 64))
    rows = await AF.jacobian(lambda x: big @ (big @ x).tanh(), z)
    batched = await AF.jacobian(lambda x: big @ (big @ x).tanh(), z, vectorize=True)
    np.testing.assert_allclose(rows.data, batched.data, rtol=1e-13, atol=1e-14)
    g = scalar_of_two(ag)
    h_rows = await AF.hessian(g, (x, ag.tensor(Y)))
    h_batched = await AF.hessian(g, (x, ag.tensor(Y)), vectorize=True)
    for r_row, b_row in zip(h_rows, h_batched):
        for r, b in zip(r_row, b_row):
            np.testing.assert_allclose(r.data, b.data, rtol=1e-14, atol=1e-15)


async def test_create_graph_results_are_differentiable() -> None:
    """A jacobian made with create_graph=True differentiates again (the hessian by hand), as
    torch's does."""
    x = ag.tensor(X, requires_grad=True)
    tx = torch.tensor(X, requires_grad=True)
    f, tf = scalar_of_one(ag), scalar_of_one(torch)
    for vectorize in (False, True):
        jac = await AF.jacobian(lambda x: x.tanh() * f(x), x, create_graph=True, vectorize=vectorize)
        tjac = TF.jacobian(lambda x: x.tanh() * tf(x), tx, create_graph=True, vectorize=vectorize)
        (g,) = await ag.grad(jac.sum(), x)
        (tg,) = torch.autograd.grad(tjac.sum(), tx)
        np.testing.assert_allclose(g.data, tg.numpy(), rtol=1e-12)


async def test_async_function_is_awaited() -> None:
    async def f(x: ag.Tensor) -> ag.Tensor:
        return x * x

    jac = await AF.jacobian(f, ag.tensor(X), vectorize=True)
    assert np.array_equal(jac.data, np.diag(2 * X))


def test_signatures_are_torchs() -> None:
    for name in NAMES:
        theirs = inspect.signature(getattr(TF, name)).parameters
        for fn in (getattr(AF, name), getattr(sync.functional, name)):
            mine = inspect.signature(fn).parameters
            assert [(p.name, p.default) for p in mine.values()] == [(p.name, p.default) for p in theirs.values()]
        assert inspect.iscoroutinefunction(getattr(AF, name))
    assert AF.__all__ == ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# --------------------------------------------------------------------- errors
def linear(lib: Any) -> Any:
    return lambda x: x * 2.0


def constant(lib: Any) -> Any:
    return lambda x: (x.detach() * 2.0).sum()


def ignores_second(lib: Any) -> Any:
    return lambda x, y: (x * x).sum()


def returns_two(lib: Any) -> Any:
    return lambda x: (x.sum(), x.sum())


def returns_vector(lib: Any) -> Any:
    return lambda x: x * x


def returns_number(lib: Any) -> Any:
    return lambda x: 3.0


def bad_list(lib: Any) -> Any:
    return [tensors(lib, X)[0]]


def v_wrong_size(lib: Any) -> Any:
    return tensors(lib, np.ones(3))[0]


def v_tuple_wrong_len(lib: Any) -> Any:
    return tensors(lib, X, X, X)


ERRORS = {
    "vjp_v_none_vector": ("vjp", returns_vector, one, (), {}),
    "vjp_v_size": ("vjp", linear, one, (v_wrong_size,), {}),
    "vjp_v_tuple_len": ("vjp", two_in_two_out, two, (v_tuple_wrong_len,), {}),
    "vjp_inputs_list": ("vjp", linear, bad_list, (), {}),
    "vjp_output_number": ("vjp", returns_number, one, (), {}),
    "vjp_strict_constant": ("vjp", constant, one, (), {"strict": True}),
    "vjp_strict_unused": ("vjp", ignores_second, two, (), {"strict": True}),
    "jvp_v_none_vector": ("jvp", linear, one, (), {}),
    "jvp_v_size": ("jvp", linear, one, (v_wrong_size,), {}),
    "jvp_strict_linear_create": ("jvp", linear, one, (y_vec,), {"strict": True, "create_graph": True}),
    "jacobian_strict_unused": ("jacobian", ignores_second, two, (), {"strict": True}),
    "jacobian_strict_vectorize": ("jacobian", linear, one, (), {"strict": True, "vectorize": True}),
    "jacobian_strategy": ("jacobian", linear, one, (), {"strategy": "sideways"}),
    "jacobian_forward_create_graph": ("jacobian", linear, one, (), {"strategy": "forward-mode", "create_graph": True}),
    "jacobian_forward_strict": ("jacobian", linear, one, (), {"strategy": "forward-mode", "strict": True}),
    "jacobian_strict_linear_create": ("jacobian", linear, one, (), {"strict": True, "create_graph": True}),
    "hessian_two_outputs": ("hessian", returns_two, one, (), {}),
    "hessian_vector_output": ("hessian", returns_vector, one, (), {}),
    "hessian_strict_linear": ("hessian", lambda lib: lambda x: (x * 2.0).sum(), one, (), {"strict": True}),
    "hessian_strategy": ("hessian", scalar_of_one, one, (), {"outer_jacobian_strategy": "x"}),
    "hvp_vector_output": ("hvp", returns_vector, one, (y_vec,), {}),
    "hvp_two_outputs": ("hvp", returns_two, one, (y_vec,), {}),
    "hvp_v_none": ("hvp", scalar_of_one, one, (), {}),
    "hvp_strict_linear": ("hvp", lambda lib: lambda x: (x * 2.0).sum(), one, (y_vec,), {"strict": True}),
    "vhp_vector_output": ("vhp", returns_vector, one, (y_vec,), {}),
    "vhp_strict_quadratic_create": ("vhp", lambda lib: lambda x: (x * x).sum(), one, (y_vec,), {"strict": True, "create_graph": True}),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case: str) -> None:
    name, make, inputs, extra, kwargs = ERRORS[case]
    with pytest.raises(Exception) as theirs:
        getattr(TF, name)(make(torch), inputs(torch), *(e(torch) for e in extra), **kwargs)
    with pytest.raises(Exception) as mine:
        getattr(sync.functional, name)(make(ag), inputs(ag), *(e(ag) for e in extra), **kwargs)
    assert type(mine.value) is type(theirs.value)
    assert str(mine.value) == as_torch_message(str(theirs.value))


def test_forward_mode_is_not_available() -> None:
    with pytest.raises(NotImplementedError, match="aiograd has no forward-mode AD"):
        sync.functional.jacobian(linear(ag), one(ag), strategy="forward-mode")
