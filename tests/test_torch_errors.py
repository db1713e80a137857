"""aiograd's exceptions against torch's: the same type, and torch's message where aiograd gives it.

Grouped by kind: broadcasting (numpy's ValueError was leaking), a non-tensor where an op takes a
tensor (an AttributeError was leaking), and single ops whose checks differed. Every case runs in
both libraries; dtypes are always given explicitly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn.functional as AF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the oracle's exception, whatever it is)
        return e
    raise AssertionError("torch raised nothing")


def _same_error(torch_fn, ag_fn, message: bool = True) -> None:
    """torch's exception type (and message) from aiograd."""
    expected = _error(torch_fn)
    with pytest.raises(type(expected), match=re.escape(str(expected)) if message else None):
        ag_fn()


def _pair(shape_a, shape_b):
    rng = np.random.default_rng(0)
    a, b = rng.random(shape_a) + 0.5, rng.random(shape_b) + 0.5
    return (
        (torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)),
        (ag.tensor(a, dtype=ag.float64), ag.tensor(b, dtype=ag.float64)),
    )


# ------------------------------------------------------------------------------ broadcasting
BROADCAST = {
    "add": lambda L, F, a, b: L.add(a, b),
    "add_alpha": lambda L, F, a, b: L.add(a, b, alpha=2),
    "sub": lambda L, F, a, b: L.sub(a, b),
    "mul": lambda L, F, a, b: a * b,
    "div": lambda L, F, a, b: L.div(a, b),
    "pow": lambda L, F, a, b: L.pow(a, b),
    "eq": lambda L, F, a, b: L.eq(a, b),
    "lt": lambda L, F, a, b: a < b,
    "where": lambda L, F, a, b: L.where(a > 0.7, a, b),
    "where_condition": lambda L, F, a, b: L.where(b > 0.7, a, a),
    "maximum": lambda L, F, a, b: L.maximum(a, b),
    "minimum": lambda L, F, a, b: L.minimum(a, b),
    "atan2": lambda L, F, a, b: L.atan2(a, b),
    "hypot": lambda L, F, a, b: L.hypot(a, b),
    "logaddexp": lambda L, F, a, b: L.logaddexp(a, b),
    "xlogy": lambda L, F, a, b: L.xlogy(a, b),
    "fmod": lambda L, F, a, b: L.fmod(a, b),
    "remainder": lambda L, F, a, b: L.remainder(a, b),
    "clamp_min": lambda L, F, a, b: L.clamp(a, min=b),
    "clamp_max": lambda L, F, a, b: L.clamp(a, max=b),
    "lerp": lambda L, F, a, b: L.lerp(a, b, 0.5),
    "lerp_weight": lambda L, F, a, b: L.lerp(a, a, b),
    "addcmul": lambda L, F, a, b: L.addcmul(a, a, b),
    "addcdiv": lambda L, F, a, b: L.addcdiv(a, b, a),
    "masked_fill": lambda L, F, a, b: L.masked_fill(a, b > 0.7, 0.0),
    "mse_loss": lambda L, F, a, b: F.mse_loss(a, b),
    "kl_div": lambda L, F, a, b: F.kl_div(a, b, reduction="sum"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (4, 1, 2))], ids=["1d", "3d"])
@pytest.mark.parametrize("name", list(BROADCAST))
def test_broadcast_error(name, shapes):
    (ta, tb), (aa, ab) = _pair(*shapes)
    fn = BROADCAST[name]
    _same_error(lambda: fn(torch, TF, ta, tb), lambda: fn(ag, AF, aa, ab))


def test_broadcast_error_with_an_array_operand():
    a = ag.ones(2, dtype=ag.float64)
    with pytest.raises(RuntimeError, match=re.escape("The size of tensor a (2) must match the size of tensor b (3)")):
        a + np.ones(3)


# ------------------------------------------------------------------------------ non-tensor input
NOT_TENSOR = {
    "exp": lambda L, F, x: L.exp(x),
    "tanh": lambda L, F, x: L.tanh(x),
    "abs": lambda L, F, x: L.abs(x),
    "relu": lambda L, F, x: F.relu(x),
    "sum": lambda L, F, x: L.sum(x),
    "mean": lambda L, F, x: L.mean(x),
    "argmax": lambda L, F, x: L.argmax(x),
    "max": lambda L, F, x: L.max(x),
    "softmax": lambda L, F, x: L.softmax(x, 0),
    "logsumexp": lambda L, F, x: L.logsumexp(x, 0),
    "cumsum": lambda L, F, x: L.cumsum(x, 0),
    "reshape": lambda L, F, x: L.reshape(x, (1,)),
    "transpose": lambda L, F, x: L.transpose(x, 0, 0),
    "flatten": lambda L, F, x: L.flatten(x),
    "squeeze": lambda L, F, x: L.squeeze(x),
    "sort": lambda L, F, x: L.sort(x),
    "flip": lambda L, F, x: L.flip(x, (0,)),
    "gelu": lambda L, F, x: F.gelu(x),
    "silu": lambda L, F, x: F.silu(x),
    "linear": lambda L, F, x: F.linear(x, L.ones((1, 2), dtype=L.float64)),
    "dot": lambda L, F, x: L.dot(x, L.ones(2, dtype=L.float64)),
    "logaddexp": lambda L, F, x: L.logaddexp(x, L.ones(2, dtype=L.float64)),
    "linalg_det": lambda L, F, x: L.linalg.det(x),
}


@pytest.mark.parametrize("bad", [np.ones(2), 3, 2.5, [1.0, 2.0]], ids=["ndarray", "int", "float", "list"])
@pytest.mark.parametrize("name", list(NOT_TENSOR))
def test_non_tensor_input(name, bad):
    fn = NOT_TENSOR[name]
    _same_error(lambda: fn(torch, TF, bad), lambda: fn(ag, AF, bad))


@pytest.mark.parametrize("fname", ["cat", "stack"])
def test_non_tensor_in_a_tensor_list(fname):
    t, a = torch.ones(2, dtype=torch.float64), ag.ones(2, dtype=ag.float64)
    _same_error(lambda: getattr(torch, fname)([t, np.ones(2)]), lambda: getattr(ag, fname)([a, np.ones(2)]))
    _same_error(lambda: getattr(torch, fname)(3.0), lambda: getattr(ag, fname)(3.0))


def test_non_tensor_einsum_operand():
    t, a = torch.ones(2, dtype=torch.float64), ag.ones(2, dtype=ag.float64)
    _same_error(lambda: torch.einsum("i,i", t, np.ones(2)), lambda: ag.einsum("i,i", a, np.ones(2)))


def test_numbers_stay_allowed_where_torch_allows_them():
    a = ag.ones(2, dtype=ag.float64)
    for fn in (ag.add, ag.sub, ag.mul, ag.div, ag.pow):
        assert fn(2, a).shape == (2,)
        assert fn(a, 2).shape == (2,)


# ------------------------------------------------------------------------------ single ops
@pytest.mark.parametrize("src", ["float64", "int64"])
@pytest.mark.parametrize("index", ["ints", "mask"])
def test_index_put_dtype_mismatch(src, index):
    def put(L):
        x = L.zeros(3, dtype=L.float32)
        idx = L.tensor([0, 1]) if index == "ints" else L.tensor([True, True, False])
        x[idx] = L.ones(2, dtype=getattr(L, src))

    _same_error(lambda: put(torch), lambda: put(ag))


def test_index_put_same_dtype_and_numbers_still_work():
    x = ag.zeros(3, dtype=ag.float32)
    x[ag.tensor([0, 1])] = ag.ones(2, dtype=ag.float32)
    x[ag.tensor([2])] = 5
    assert x.tolist() == [1.0, 1.0, 5.0]
    x[0:2] = ag.zeros(2, dtype=ag.float64)  # a basic index copies across dtypes, as torch
    assert x.tolist() == [0.0, 0.0, 5.0]


def test_view_as_without_a_view():
    t = torch.ones((2, 3), dtype=torch.float64).t()
    a = ag.ones((2, 3), dtype=ag.float64).t()
    _same_error(lambda: t.view_as(torch.ones(6, dtype=torch.float64)), lambda: a.view_as(ag.ones(6, dtype=ag.float64)))
    assert a.reshape_as(ag.ones(6, dtype=ag.float64)).shape == (6,)  # reshape_as copies


def test_gelu_of_a_0dim_tensor():
    for approximate in ("none", "tanh"):
        t = TF.gelu(torch.tensor(0.5, dtype=torch.float64), approximate=approximate)
        x = ag.tensor(0.5, dtype=ag.float64, requires_grad=True)
        a = AF.gelu(x, approximate=approximate)
        assert a.shape == () and a.item() == pytest.approx(t.item(), rel=1e-15)


def test_mT_of_a_0dim_tensor():
    assert torch.tensor(2.0, dtype=torch.float64).mT.shape == ()
    assert ag.tensor(2.0, dtype=ag.float64).mT.item() == 2.0
    _same_error(lambda: torch.ones(3, dtype=torch.float64).mT, lambda: ag.ones(3, dtype=ag.float64).mT)
