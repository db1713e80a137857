"""The default dtype: float32 as torch's, ``set_default_dtype``/``get_default_dtype``, and what
follows it (factories, ``tensor()`` of Python numbers, Python-scalar type promotion, integer
tensors through float ops, nn layers' parameters, optimizer state), each compared with torch
under both float32 and float64 defaults; and ``tensor()`` of a torch tensor.

These tests run under the real default (``real_default_dtype``); the rest of the suite runs
under the float64 that tests/conftest.py pins (checked here too)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F
from aiograd import optim

real_default = pytest.mark.real_default_dtype


def _name(dtype: Any) -> str:
    """A dtype's name, torch's or aiograd's (numpy's), spelled the same: "float32", "bool"."""
    return str(dtype).removeprefix("torch.")


@pytest.fixture(params=["float32", "float64"])
def default(request: pytest.FixtureRequest) -> Iterator[str]:
    """Both libraries under the same default dtype, torch's restored afterwards (aiograd's by
    tests/conftest.py)."""
    name = request.param
    before = torch.get_default_dtype() if torch is not None else None
    ag.set_default_dtype(getattr(ag, name))
    if torch is not None:
        torch.set_default_dtype(getattr(torch, name))
    try:
        yield name
    finally:
        if torch is not None:
            torch.set_default_dtype(before)


# ------------------------------------------------------------------------------ the setting
@real_default
def test_the_default_is_float32_as_torch() -> None:
    d = ag.get_default_dtype()
    assert d == ag.float32 and d is ag.float32
    assert isinstance(d, np.dtype)


def test_the_suite_runs_under_float64_unless_marked() -> None:
    # (tests/conftest.py: the suite was written for a float64 default)
    assert ag.get_default_dtype() == ag.float64
    assert ag.tensor([1.0]).dtype == ag.float64


@real_default
async def test_async_tests_see_the_real_default_too() -> None:
    assert ag.get_default_dtype() == ag.float32
    assert ag.tensor([1.0]).dtype == ag.float32


@real_default
@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_set_default_dtype_takes_the_floating_dtypes(name: str) -> None:
    ag.set_default_dtype(getattr(ag, name))
    assert ag.get_default_dtype() == getattr(ag, name)
    assert ag.zeros(1).dtype == getattr(ag, name)


@real_default
def test_set_default_dtype_takes_a_numpy_scalar_type() -> None:
    # (aiograd's dtypes are numpy's: ``np.float64`` names one, as ``aiograd.float64`` does)
    ag.set_default_dtype(np.float64)
    assert ag.get_default_dtype() is ag.float64


@requires_torch
@real_default
@pytest.mark.parametrize("name", ["int64", "int32", "uint8", "bool"])
def test_set_default_dtype_refuses_other_dtypes_with_torchs_error(name: str) -> None:
    with pytest.raises(TypeError) as theirs:
        torch.set_default_dtype(getattr(torch, name))
    with pytest.raises(TypeError) as ours:
        ag.set_default_dtype(getattr(ag, name if name != "bool" else "bool_"))
    assert str(ours.value) == str(theirs.value) == "only floating-point types are supported as the default type"
    assert ag.get_default_dtype() is ag.float32  # unchanged


@requires_torch
@real_default
@pytest.mark.parametrize("value", ["float64", float, None, 1.0], ids=repr)
def test_set_default_dtype_refuses_what_is_not_a_dtype_with_torchs_error(value: Any) -> None:
    with pytest.raises(TypeError) as theirs:
        torch.set_default_dtype(value)
    with pytest.raises(TypeError) as ours:
        ag.set_default_dtype(value)
    assert str(ours.value) == str(theirs.value)


@real_default
def test_set_default_dtype_of_complex_is_refused() -> None:
    with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
        ag.set_default_dtype(np.dtype(np.complex64))


# ------------------------------------------------------------------------------ dtypes as torch's
#: Calls written once for both libraries (``lib`` is aiograd or torch): their result's dtype.
CALLS: dict[str, Callable[[Any], Any]] = {
    # tensor() of Python numbers, numpy data and mixtures
    "tensor([1.0])": lambda lib: lib.tensor([1.0]),
    "tensor(3.0)": lambda lib: lib.tensor(3.0),
    "tensor([1, 2.0])": lambda lib: lib.tensor([1, 2.0]),
    "tensor([True, 2.5])": lambda lib: lib.tensor([True, 2.5]),
    "tensor([[1], [2.5]])": lambda lib: lib.tensor([[1], [2.5]]),
    "tensor([1, 2])": lambda lib: lib.tensor([1, 2]),
    "tensor([True])": lambda lib: lib.tensor([True]),
    "tensor([])": lambda lib: lib.tensor([]),
    "tensor(np float64 array)": lambda lib: lib.tensor(np.array([1.0, 2.0])),
    "tensor(np float32 array)": lambda lib: lib.tensor(np.array([1.0], dtype=np.float32)),
    "tensor(np.float64(1))": lambda lib: lib.tensor(np.float64(1.0)),
    "tensor([np.float64(1), 2.0])": lambda lib: lib.tensor([np.float64(1.0), 2.0]),
    "tensor([np.float32(1), 2.0])": lambda lib: lib.tensor([np.float32(1.0), 2.0]),
    "tensor([1j])": lambda lib: lib.tensor([1j]),
    # factories
    "zeros(2)": lambda lib: lib.zeros(2),
    "ones(2, 3)": lambda lib: lib.ones(2, 3),
    "empty(2)": lambda lib: lib.empty(2),
    "eye(2)": lambda lib: lib.eye(2),
    "rand(2)": lambda lib: lib.rand(2),
    "randn(2)": lambda lib: lib.randn(2),
    "full((2,), 1.5)": lambda lib: lib.full((2,), 1.5),
    "full((2,), 1)": lambda lib: lib.full((2,), 1),
    "full((2,), True)": lambda lib: lib.full((2,), True),
    "arange(3)": lambda lib: lib.arange(3),
    "arange(3.0)": lambda lib: lib.arange(3.0),
    "arange(0, 1, 0.25)": lambda lib: lib.arange(0, 1, 0.25),
    "linspace(0, 1, 5)": lambda lib: lib.linspace(0, 1, 5),
    "zeros(2, dtype=float16)": lambda lib: lib.zeros(2, dtype=lib.float16),
    # the _like factories follow their input, not the default
    "zeros_like(int)": lambda lib: lib.zeros_like(lib.tensor([1, 2])),
    "ones_like(float64)": lambda lib: lib.ones_like(lib.tensor([1.0], dtype=lib.float64)),
    "rand_like(float64)": lambda lib: lib.rand_like(lib.tensor([1.0], dtype=lib.float64)),
    "full_like(float16, 2.5)": lambda lib: lib.full_like(lib.tensor([1.0], dtype=lib.float16), 2.5),
    # Python scalars in type promotion
    "int * 2.5": lambda lib: lib.tensor([1, 2]) * 2.5,
    "2.5 * int": lambda lib: 2.5 * lib.tensor([1, 2]),
    "int + 2.5": lambda lib: lib.tensor([1, 2]) + 2.5,
    "2.5 + int": lambda lib: 2.5 + lib.tensor([1, 2]),
    "int - 2.5": lambda lib: lib.tensor([1, 2]) - 2.5,
    "2.5 - int": lambda lib: 2.5 - lib.tensor([1, 2]),
    "bool + 1.5": lambda lib: lib.tensor([True, False]) + 1.5,
    "int32 * 2.5": lambda lib: lib.tensor([1, 2], dtype=lib.int32) * 2.5,
    "int * np.float64(2.5)": lambda lib: lib.tensor([1, 2]) * np.float64(2.5),
    "int ** 0.5": lambda lib: lib.tensor([1, 2]) ** 0.5,
    "2.0 ** int": lambda lib: 2.0 ** lib.tensor([1, 2]),
    "int * 2": lambda lib: lib.tensor([1, 2]) * 2,
    "float16 * 2.5": lambda lib: lib.tensor([1.0], dtype=lib.float16) * 2.5,
    "float64 * 2.5": lambda lib: lib.tensor([1.0], dtype=lib.float64) * 2.5,
    "int * 0-d float64": lambda lib: lib.tensor([1, 2]) * lib.tensor(2.5, dtype=lib.float64),
    "maximum(int, 2.5)": lambda lib: lib.clamp(lib.tensor([1, 2]), min=1.5),
    "where(cond, 1.0, 0.0)": lambda lib: lib.where(lib.tensor([True, False]), 1.0, 0.0),
    "where(cond, 1, 0)": lambda lib: lib.where(lib.tensor([True, False]), 1, 0),
    # true division and float ops of integer and bool tensors
    "int / 2": lambda lib: lib.tensor([1, 2]) / 2,
    "int / int": lambda lib: lib.tensor([1, 2]) / lib.tensor([2, 4]),
    "bool / bool": lambda lib: lib.tensor([True]) / lib.tensor([True]),
    "2 / int": lambda lib: 2 / lib.tensor([1, 2]),
    "sqrt(int)": lambda lib: lib.sqrt(lib.tensor([1, 4])),
    "sin(bool)": lambda lib: lib.sin(lib.tensor([True, False])),
    "exp(bool)": lambda lib: lib.exp(lib.tensor([True])),
    "log2(int)": lambda lib: lib.log2(lib.tensor([1, 4])),
    "sigmoid(int)": lambda lib: lib.sigmoid(lib.tensor([1, 4])),
    "reciprocal(int)": lambda lib: lib.reciprocal(lib.tensor([1, 4])),
    "atan2(int, int)": lambda lib: lib.atan2(lib.tensor([1]), lib.tensor([2])),
    "xlogy(int, 2)": lambda lib: lib.xlogy(lib.tensor([1, 2]), 2),
    "abs(int)": lambda lib: lib.abs(lib.tensor([-1, 2])),
    "floor(int)": lambda lib: lib.floor(lib.tensor([1, 2])),
    "sqrt(float16)": lambda lib: lib.sqrt(lib.tensor([4.0], dtype=lib.float16)),
}


@requires_torch
@real_default
@pytest.mark.parametrize("call", list(CALLS), ids=list(CALLS))
def test_dtypes_are_torchs(call: str, default: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's about complex32 under a float16 default)
        theirs = CALLS[call](torch)
    ours = CALLS[call](ag)
    assert _name(ours.dtype) == _name(theirs.dtype)
    assert ours.shape == tuple(theirs.shape)


@requires_torch
@real_default
@pytest.mark.parametrize("call", ["sqrt(int)", "reciprocal(int)", "int * 2.5", "int / int", "arange(0, 1, 0.25)", "linspace(0, 1, 5)"])
def test_values_are_torchs(call: str, default: str) -> None:
    # (computed in the default dtype, not in float64 and rounded)
    np.testing.assert_array_equal(CALLS[call](ag).data, CALLS[call](torch).numpy())


@real_default
def test_the_repr_leaves_the_default_unsaid() -> None:
    assert repr(ag.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ag.tensor([1.0, 2.0], dtype=ag.float64)) == "tensor([1., 2.], dtype=float64)"
    ag.set_default_dtype(ag.float64)
    assert repr(ag.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ag.tensor([1.0], dtype=ag.float32)) == "tensor([1.], dtype=float32)"


# ------------------------------------------------------------------------------ nn and optim
def _layers() -> dict[str, Any]:
    return {
        "Linear": nn.Linear(3, 2),
        "Conv2d": nn.Conv2d(1, 2, 3),
        "LayerNorm": nn.LayerNorm(4),
        "Embedding": nn.Embedding(5, 3),
        "BatchNorm2d": nn.BatchNorm2d(2),
    }


@real_default
@pytest.mark.parametrize("name", ["float32", "float64"])
def test_layers_are_made_in_the_default_dtype(name: str) -> None:
    ag.set_default_dtype(getattr(ag, name))
    for layer_name, layer in _layers().items():
        for key, value in layer.state_dict().items():
            expected = ag.int64 if key.endswith("num_batches_tracked") else getattr(ag, name)
            assert value.dtype == expected, (layer_name, key)


@real_default
@pytest.mark.parametrize("make", [optim.SGD, optim.Adam], ids=["SGD", "Adam"])
@pytest.mark.parametrize("name", ["float32", "float64"])
async def test_a_training_step_runs_in_the_default_dtype(make: Any, name: str) -> None:
    dtype = getattr(ag, name)
    ag.set_default_dtype(dtype)
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8), nn.Linear(8, 3))
    opt = make(model.parameters(), lr=0.05)  # (0.1 overshoots for this seed, in torch too)
    x, y = ag.randn(16, 4), ag.tensor([0, 1, 2, 0] * 4)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(x * 0.5 + 1.0), y)  # (Python floats keep the dtype)
        await loss.backward()
        opt.step()
        losses.append(loss.item())
        assert loss.dtype == dtype
    assert losses[-1] < losses[0]
    for p in model.parameters():
        assert p.dtype == p.grad.dtype == dtype
        for value in opt.state[p].values():
            assert value.dtype == dtype  # (Adam's step counter too: float32 unless float64)


@requires_torch
@real_default
def test_clip_grad_norm_of_no_gradients_is_torchs() -> None:
    theirs = torch.nn.utils.clip_grad_norm_([], 1.0)
    ours = nn.utils.clip_grad_norm_([], 1.0)
    assert _name(ours.dtype) == _name(theirs.dtype) == "float32"


@real_default
async def test_gradcheck_warns_of_a_float32_input_as_torch() -> None:
    x = ag.tensor([1.0, 2.0], requires_grad=True)  # float32: the default
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        with pytest.raises(Exception):  # noqa: B017 (float32 cannot resolve eps=1e-6, as torch's)
            await ag.testing.gradcheck(lambda t: t * t, (x,))
    assert await ag.testing.gradcheck(lambda t: t * t, (x.double().detach().requires_grad_(),))


# ------------------------------------------------------------------------------ tensor(torch)
@requires_torch
@real_default
@pytest.mark.parametrize("name", ["float64", "float32", "float16", "int64", "int32", "bool"])
def test_tensor_of_a_torch_tensor_keeps_its_dtype_and_copies(name: str) -> None:
    t = torch.arange(6).reshape(2, 3).to(getattr(torch, name))
    ours = ag.tensor(t)
    assert _name(ours.dtype) == name
    np.testing.assert_array_equal(ours.data, t.numpy())
    t.zero_() if name != "bool" else t.logical_not_()
    assert not np.array_equal(ours.data, t.numpy())  # a copy


@requires_torch
@real_default
def test_tensor_of_a_torch_tensor_that_requires_grad_or_is_a_view() -> None:
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    ours = ag.tensor(t.T, requires_grad=True)
    assert ours.dtype == ag.float64 and ours.requires_grad and ours.grad_fn is None
    np.testing.assert_array_equal(ours.data, [[1.0, 3.0], [2.0, 4.0]])
    shared = torch.tensor([1.0, 2.0])
    assert ag.as_tensor(shared).dtype == ag.float32
    assert ag.tensor([torch.tensor(1.0), torch.tensor(2.0)]).dtype == ag.float32
