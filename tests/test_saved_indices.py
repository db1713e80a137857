"""Indexing ops save their indices, as PyTorch's IndexBackward0, IndexSelectBackward0 and
GatherBackward0 do: a second backward through them without ``retain_graph`` raises PyTorch's
backward-twice error, while basic indexing (ints, slices), which saves nothing, runs twice."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag
from aiograd.sync import backward

pytestmark = requires_torch

# (name, aiograd index fn, torch index fn): lib is the module, x the tensor
CASES: list[tuple[str, Any]] = [
    ("list", lambda lib, x: x[[0, 2]]),
    ("int_tensor", lambda lib, x: x[lib.tensor([0, 1])]),
    ("mask", lambda lib, x: x[x > 0]),
    ("int_then_list", lambda lib, x: x[0, [1, 2]]),
    ("none_then_list", lambda lib, x: x[None, [1]]),
    ("bool_scalar", lambda lib, x: x[True]),
    ("index_select", lambda lib, x: x.index_select(0, lib.tensor([0, 2]))),
    ("gather", lambda lib, x: x.gather(1, lib.tensor([[0], [1], [2]]))),
    ("of_a_product", lambda lib, x: (x * 2)[[0]]),
    ("int", lambda lib, x: x[0]),
    ("slice", lambda lib, x: x[:, 1:]),
    ("zero_dim_tensor", lambda lib, x: x[lib.tensor(1)]),
]


def _second_backward(lib: Any, index: Any) -> str | None:
    """The error (type: message) of a second backward, or None if it runs."""
    data = np.random.default_rng(0).standard_normal((3, 4))
    x = lib.tensor(data, requires_grad=True)
    y = index(lib, x).sum()
    run = y.backward if lib is torch else lambda **kw: backward(y, **kw)
    run()
    try:
        run()
    except RuntimeError as e:
        return f"RuntimeError: {e}"
    return None


@pytest.mark.parametrize("name, index", CASES, ids=[c[0] for c in CASES])
def test_second_backward_matches_torch(name: str, index: Any) -> None:
    expected = _second_backward(torch, index)
    assert _second_backward(ag, index) == expected
    # the cases are chosen so that both outcomes are covered
    assert (expected is None) == (name in {"int", "slice", "zero_dim_tensor"})


@pytest.mark.parametrize("name, index", CASES[:8], ids=[c[0] for c in CASES[:8]])
def test_retain_graph_keeps_the_indices(name: str, index: Any) -> None:
    data = np.random.default_rng(1).standard_normal((3, 4))
    x, tx = ag.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ty = index(ag, x).sum(), index(torch, tx).sum()
    backward(y, retain_graph=True)
    backward(y)
    ty.backward(retain_graph=True)
    ty.backward()
    np.testing.assert_array_equal(x.grad.data, tx.grad.numpy())
