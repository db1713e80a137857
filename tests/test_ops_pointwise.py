"""The three-operand pointwise ops of ``aiograd/_ops/pointwise.py`` (lerp, addcmul, addcdiv,
masked_fill): factory rows (gradcheck, gradgradcheck, values and gradients against torch,
float32, grad_fn names, broadcasting), then PyTorch's errors, word for word."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag

MASK = np.array([[True, False, True], [False, False, True]])


def denominators(rng: np.random.Generator) -> list[np.ndarray]:
    x, t1 = rng.uniform(-2, 2, size=(2, 3)), rng.uniform(-2, 2, size=(2, 3))
    t2 = rng.uniform(0.5, 2.0, size=(3,)) * rng.choice([-1.0, 1.0], size=(3,))
    return [x, t1, t2]


SPECS = [
    OpSpec("lerp", lambda lib, a, b: lib.lerp(a, b, 0.3), ((2, 3), (3,)), grad_fn="LerpBackward0"),
    OpSpec("lerp_tensor_weight", lambda lib, a, b, w: a.lerp(b, w), ((2, 3), (2, 3), (3,)),
           grad_fn="LerpBackward1", op="lerp"),
    OpSpec("addcmul", lambda lib, x, a, b: lib.addcmul(x, a, b, value=0.5), ((2, 3), (2, 3), (3,)),
           grad_fn="AddcmulBackward0"),
    OpSpec("addcmul_method", lambda lib, x, a, b: x.addcmul(a, b), ((3,), (2, 3), (2, 3)), op="addcmul"),
    OpSpec("addcdiv", lambda lib, x, a, b: lib.addcdiv(x, a, b, value=-2.0), denominators,
           grad_fn="AddcdivBackward0"),
    OpSpec("masked_fill", lambda lib, x: x.masked_fill(const(lib, MASK), 2.0), ((2, 3),),
           grad_fn="MaskedFillBackward0"),
    OpSpec("masked_fill_tensor_value", lambda lib, x, v: lib.masked_fill(x, const(lib, MASK), v), ((2, 3), ()),
           grad_fn="MaskedFillBackward1", op="masked_fill"),
    OpSpec("masked_fill_broadcast_mask", lambda lib, x: x.masked_fill(const(lib, MASK[0]), -1.0), ((2, 3),),
           op="masked_fill"),
]

globals().update(make_op_tests(SPECS))

ERRORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("lerp_dtypes", lambda lib: lib.lerp(lib.ones(2, dtype=lib.float64), lib.ones(2, dtype=lib.float32), 0.5)),
    ("masked_fill_int_mask", lambda lib: lib.ones(2).masked_fill(lib.tensor([1, 0]), 2.0)),
    ("masked_fill_vector_value", lambda lib: lib.ones(2).masked_fill(lib.tensor([True, False]), lib.ones(2))),
]


@requires_torch
@pytest.mark.parametrize(("name", "call"), ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_are_torchs(name: str, call: Callable[[Any], Any]) -> None:
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(ag)
    assert str(ours.value) == str(theirs.value)
