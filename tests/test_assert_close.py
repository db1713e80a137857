"""``aiograd.testing.assert_close`` against ``torch.testing.assert_close``: the same inputs pass
or fail alike, with torch's exception type and message (torch's names spelled as aiograd's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd.testing import assert_close

torch = pytest.importorskip("torch")


def _ours(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return ag.tensor(x.numpy())
    if isinstance(x, (list, tuple)):
        return type(x)(_ours(v) for v in x)
    if isinstance(x, dict):
        return {k: _ours(v) for k, v in x.items()}
    return x


def _outcome(fn: Callable[[], Any]) -> str:
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the type is part of what is compared
        return f"{type(error).__name__}: {error}"
    return "passed"


T = torch.tensor
CASES: list[tuple[Any, Any, dict[str, Any]]] = [
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0, 3.0]), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.5, 3.0]), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0 + 1e-6, 3.0]), {}),
    (T([1.0, 2.0], dtype=torch.float64), T([1.0, 2.0 + 1e-6], dtype=torch.float64), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0, 3.0], dtype=torch.float64), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0, 3.0], dtype=torch.float64), {"check_dtype": False}),
    (T([[1.0, 2.0], [3.0, 4.0]]), T([[1.0, 2.0], [3.0, 4.5]]), {}),
    (T([1.0, 2.0]), T([1.0, 0.0]), {}),
    (T([1.0, float("nan")]), T([1.0, float("nan")]), {}),
    (T([1.0, float("nan")]), T([1.0, float("nan")]), {"equal_nan": True}),
    (T([float("inf"), -float("inf")]), T([float("inf"), -float("inf")]), {}),
    (T([float("inf")]), T([-float("inf")]), {}),
    (T([1, 2]), T([1, 3]), {}),
    (T([True, False]), T([True, True]), {}),
    (T(1.0), T(1.0001), {"rtol": 0.0, "atol": 1e-5}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"rtol": 0.0, "atol": 1.0}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"rtol": 1e-3}),
    (T([1.0, 2.0]), T([1.0, 2.5]), {"msg": "custom"}),
    ([T(1.0), T(2.0)], [T(1.0), T(2.5)], {}),
    ((T(1.0),), [T(1.0)], {}),
    ({"a": T(1.0)}, {"a": T(1.5)}, {}),
    ({"a": T(1.0)}, {"b": T(1.0)}, {}),
    ([1, 2], [1, 2, 3], {}),
    (1.0, 1.5, {}),
    (1.0, 1.0 + 1e-8, {}),
    (1, 2, {}),
    (1, 1.0, {}),
    (True, False, {}),
    (None, None, {}),
    (T([1.0, 2.0]), 1.0, {}),
    ("a", "a", {}),
]


@pytest.mark.parametrize("actual, expected, kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_the_outcome_is_torchs(actual: Any, expected: Any, kw: dict[str, Any]) -> None:
    theirs = _outcome(lambda: torch.testing.assert_close(actual, expected, **kw))
    ours = _outcome(lambda: assert_close(_ours(actual), _ours(expected), **kw))
    assert ours == theirs.replace("torch.Size", "aiograd.Size").replace("torch.", "aiograd.")


def test_numpy_arrays_and_a_message_function() -> None:
    a, e = np.array([1.0, 2.0]), np.array([1.0, 2.5])
    theirs = _outcome(lambda: torch.testing.assert_close(a, e))
    assert _outcome(lambda: assert_close(a, e)) == theirs
    assert _outcome(lambda: assert_close(ag.tensor([1.0]), ag.tensor([2.0]), msg=lambda m: "X" + m[:12])) == "AssertionError: XTensor-likes"
    assert_close(ag.tensor([1.0, 2.0], requires_grad=True) * 1, ag.tensor([1.0, 2.0]))  # (graph tensors too)
