"""Reductions and sorting against torch: PyTorch's argument parser (what it refuses: ``keepdim``
without ``dim``, ``dim=None`` where no form takes it, ``dim`` positional beside ``stable``), its
exception types where checks meet in a different order, node names of the overloads, and values
at the edges (empty medians, NaN corrections). Each case runs in both libraries, with explicit
dtypes.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from helpers import raised

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")


_error = raised


def _same_error(torch_fn, ag_fn, first_line: bool = True) -> None:
    """torch's exception type and (the first line of) its message from aiograd; of the argument
    parser's "invalid combination" message the part before the arguments it got (aiograd cannot
    always tell a positional argument from a keyword one)."""
    expected = _error(torch_fn)
    text = str(expected).splitlines()[0] if first_line else str(expected)
    text = text.split(" - got (")[0]
    with pytest.raises(type(expected), match=re.escape(text)):
        ag_fn()


X = np.array([[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]])


def _both(values=X, dtype="float64", grad=False):
    t = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=grad)
    a = ag.tensor(values, dtype=np.dtype(dtype), requires_grad=grad)
    return t, a


# ------------------------------------------------------------------------------ argument parser
@pytest.mark.parametrize("call", [
    "torch.sum(x, keepdim=True)", "torch.sum(x, keepdim=False)", "torch.mean(x, keepdim=True)",
    "torch.prod(x, None)", "torch.prod(x, keepdim=True)", "torch.max(x, None)", "torch.max(x, keepdim=False)",
    "torch.min(x, None)", "torch.min(x, keepdim=True)", "torch.var(x, 0, None)", "torch.var(x, unbiased=None)",
    "torch.std(x, 0, unbiased=None)", "torch.sort(x, 0, stable=False)", "torch.argsort(x, -1, stable=True)",
    "torch.argsort(x, stable=None)", "torch.median(x, None)", "torch.median(x, keepdim=True)",
])
def test_forms_torch_refuses(call: str) -> None:
    t, a = _both()
    _same_error(lambda: eval(call, {"torch": torch, "x": t}), lambda: eval(call.replace("torch.", "ag."), {"ag": ag, "x": a}))


@pytest.mark.parametrize("call", [
    "x.max(None)", "x.min(None)", "x.sum(keepdim=True)", "x.median(None)", "x.argsort(0, stable=False)",
])
def test_method_forms_torch_refuses(call: str) -> None:
    t, a = _both()
    expected = _error(lambda: eval(call, {"x": t}))
    with pytest.raises(type(expected)):
        eval(call, {"x": a})


def test_norm_takes_out_fifth_and_the_method_dtype_fourth() -> None:
    t, a = _both(dtype="float32")
    _same_error(lambda: torch.norm(t, 2, None, False, torch.float64), lambda: ag.norm(a, 2, None, False, ag.float64))
    np.testing.assert_allclose(a.norm(2, None, False, ag.float64).numpy(), t.norm(2, None, False, torch.float64).numpy())
    assert a.norm(2, None, False, ag.float64).dtype == ag.float64


@pytest.mark.parametrize("call", [
    "torch.sum(x, None)", "torch.sum(x, None, True)", "torch.var(x, None)", "torch.var(x, keepdim=True)",
    "torch.var(x, 0, True)", "torch.var(x, correction=0)", "torch.sort(x, stable=None)",
    "torch.sort(x, dim=0, stable=True, descending=True)", "torch.argsort(x, dim=0, stable=True)", "torch.sort(x, 0, True)",
])
def test_forms_torch_accepts(call: str) -> None:
    t, a = _both()
    want = eval(call, {"torch": torch, "x": t})
    got = eval(call.replace("torch.", "ag."), {"ag": ag, "x": a})
    want, got = (want[0], got[0]) if isinstance(want, tuple) else (want, got)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


# ------------------------------------------------------------------------------ node names
@pytest.mark.parametrize("call", [
    "x.sum()", "x.sum(None)", "x.sum(0)", "x.mean()", "x.mean(None)", "x.mean(None, True)", "x.sort()",
    "x.sort(stable=None)", "x.sort(stable=True)", "x.sort(0)",
])
def test_grad_fn_names(call: str) -> None:
    t, a = _both(grad=True)
    want = eval(call, {"x": t})
    got = eval(call, {"x": a})
    want, got = (want[0], got[0]) if isinstance(want, tuple) else (want, got)
    assert type(got.grad_fn).__name__ == want.grad_fn.name()


# ------------------------------------------------------------------------------ error types
@pytest.mark.parametrize("call", [
    "torch.mean(x, keepdim=True)", "torch.var(x, 0, None)", "torch.std(x, 0, None, correction=1.0)",
])
def test_integer_input_refused_by_the_parser_first(call: str) -> None:
    t, a = _both(np.zeros((2, 3)), dtype="int64")
    _same_error(lambda: eval(call, {"torch": torch, "x": t}), lambda: eval(call.replace("torch.", "ag."), {"ag": ag, "x": a}))


def test_max_of_empty_with_keepdim_refused_by_the_parser_first() -> None:
    t, a = _both(np.zeros((0,)))
    _same_error(lambda: torch.max(t, keepdim=False), lambda: ag.max(a, keepdim=False))


def test_sort_with_stable_and_a_positional_dim_out_of_range() -> None:
    t, a = _both(np.array(0.0))
    _same_error(lambda: torch.sort(t, -2, stable=True), lambda: ag.sort(a, -2, stable=True))
    _same_error(lambda: t.argsort(1, stable=True), lambda: a.argsort(1, stable=True))
    _same_error(lambda: t.argsort(dim=1, stable=True), lambda: a.argsort(dim=1, stable=True))


@pytest.mark.parametrize(("values", "args"), [
    (np.array(True), (1, 0)), (np.zeros((2, 0), dtype=bool), (1, 1)), (np.array([True, False]), (1, 0)),
])
def test_kthvalue_of_bool(values, args) -> None:
    t, a = _both(values, dtype="bool")
    try:
        want = torch.kthvalue(t, *args)
    except Exception:  # noqa: BLE001
        _same_error(lambda: torch.kthvalue(t, *args), lambda: ag.kthvalue(a, *args))
        return
    got = ag.kthvalue(a, *args)
    assert got.values.item() == want.values.item() and got.indices.item() == want.indices.item()


@pytest.mark.parametrize(("values", "call"), [
    (np.array([True]), "torch.median(x, None)"), (np.zeros((0, 2), dtype=bool), "torch.median(x, 0)"),
    (np.array([True]), "torch.median(x)"), (np.array(True), "torch.median(x, 1)"),
])
def test_median_of_bool_error_order(values, call) -> None:
    t, a = _both(values, dtype="bool")
    _same_error(lambda: eval(call, {"torch": torch, "x": t}), lambda: eval(call.replace("torch.", "ag."), {"ag": ag, "x": a}))


def test_topk_of_bool_checks_the_dim_first() -> None:
    t, a = _both(np.array([True]), dtype="bool")
    _same_error(lambda: torch.topk(t, 1, 1), lambda: ag.topk(a, 1, 1))


@pytest.mark.parametrize(("shape", "p", "dim"), [
    ((4, 0, 4), float("inf"), None), ((2, 0, 3), float("-inf"), (0, 1)), ((2, 0, 3), float("inf"), -2),
    ((2, 0, 3), -1.0, None), ((2, 0, 3), float("inf"), ()),
])
def test_norm_without_identity_over_nothing(shape, p, dim) -> None:
    t, a = _both(np.zeros(shape))
    _same_error(lambda: torch.norm(t, p, dim), lambda: ag.norm(a, p, dim), first_line=False)


# ------------------------------------------------------------------------------ values
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "bool"])
def test_median_of_nothing_is_nan_in_the_dtype(dtype) -> None:
    t, a = _both(np.zeros((3, 0, 1)), dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.median(t)
    got = ag.median(a)
    assert got.item() == want.item() and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]


def test_var_grad_with_a_nan_correction() -> None:
    values = np.array([-0.69, 3.14])
    t, a = _both(values, dtype="float64", grad=True)
    w = np.array(0.34)
    want = torch.autograd.grad(torch.var(t, correction=float("nan")), t, torch.tensor(w))[0]
    got = aiograd.sync.grad(ag.var(a, correction=float("nan")), a, ag.tensor(w, dtype=ag.float64))[0]
    np.testing.assert_array_equal(np.isnan(got.numpy()), np.isnan(want.numpy()))


def test_var_over_nothing_with_a_negative_correction_is_nan() -> None:
    t, a = _both(np.zeros((1, 0)))
    want = torch.var(t, correction=-1.5)
    assert np.isnan(want.item()) and np.isnan(ag.var(a, correction=-1.5).item())


def test_mean_refuses_an_integer_dtype() -> None:
    t, a = _both()
    _same_error(lambda: torch.mean(t, dtype=torch.int64), lambda: ag.mean(a, dtype=np.dtype("int64")))


def test_kthvalue_of_bool_checks_k_first() -> None:
    t, a = _both(np.zeros((2, 1)), dtype="bool")
    _same_error(lambda: torch.kthvalue(t, 2, 1), lambda: ag.kthvalue(a, 2, 1))
