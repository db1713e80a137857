"""The channel-wise and alpha dropouts (``dropout1d``/``2d``/``3d``, ``alpha_dropout``,
``feature_alpha_dropout`` and their modules) against torch: after the same seed the same
values, the same gradients, the same nodes, and torch's warnings and errors."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn as nn
import aiograd.nn.functional as F

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.aiograd(backends=["asyncio"]), pytest.mark.real_default_dtype]

CASES = [
    ("dropout1d", (4, 5, 7)), ("dropout1d", (5, 7)), ("dropout2d", (3, 4, 5, 6)), ("dropout2d", (4, 5, 7)),
    ("dropout3d", (2, 3, 4, 2, 3)), ("dropout3d", (3, 4, 2, 3)),
    ("alpha_dropout", (6, 9)), ("feature_alpha_dropout", (3, 4, 5)),
]


def _input(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.linspace(-2, 2, int(np.prod(shape))).reshape(shape).astype(dtype)


@pytest.mark.parametrize("name, shape", CASES, ids=[f"{n}-{len(s)}d" for n, s in CASES])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
async def test_values_gradients_and_nodes_are_torchs(name: str, shape: tuple[int, ...], p: float, dtype: Any) -> None:
    x = _input(shape, dtype)
    ours_in, theirs_in = ag.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (dropout2d's 3-D warning, checked below)
        ag.manual_seed(7)
        ours = getattr(F, name)(ours_in, p, True)
        torch.manual_seed(7)
        theirs = getattr(torch.nn.functional, name)(theirs_in, p, True)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__
    weights = np.cos(np.arange(x.size)).reshape(shape)
    await (ours * ag.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(ours_in.grad.numpy(), theirs_in.grad.numpy())
    if name.startswith("dropout") and len(shape) >= 3 and not (name == "dropout3d" and len(shape) == 4):
        # whole channels: each (sample, channel) is all dropped or all kept and scaled
        rows = ours.detach().numpy().reshape(shape[0] * shape[1], -1)
        kept = x.reshape(shape[0] * shape[1], -1) / dtype(1 - p)
        for row, scaled in zip(rows, kept):
            assert (row == 0).all() or np.allclose(row, scaled, rtol=1e-6)


@pytest.mark.parametrize("name", ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"])
def test_identity_cases_and_p_one(name: str) -> None:
    x = ag.tensor(_input((2, 3, 4, 5), np.float32))
    tx = torch.tensor(_input((2, 3, 4, 5), np.float32))
    shape = {"dropout1d": (2, 3, 20), "dropout3d": (2, 3, 4, 5, 1)}.get(name)
    if shape is not None:
        x, tx = x.reshape(*shape), tx.reshape(*shape)
    fn, tfn = getattr(F, name), getattr(torch.nn.functional, name)
    assert fn(x, 0.3, False) is x  # (eval: the input itself, as torch's)
    assert fn(x, 0.0, True) is x
    np.testing.assert_array_equal(fn(x, 1.0, True).numpy(), tfn(tx, 1.0, True).numpy())
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=re.escape(f"dropout probability has to be between 0 and 1, but got {bad}")):
            fn(x, bad)
        with pytest.raises(ValueError, match=re.escape(f"dropout probability has to be between 0 and 1, but got {bad}")):
            tfn(tx, bad)


def _messages(fn: Callable[[], Any]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
        except RuntimeError as error:
            return [f"RuntimeError: {error}"]
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("name, shape", [("dropout1d", (3,)), ("dropout1d", (2, 3, 4, 5)), ("dropout2d", (4, 5)),
                                         ("dropout2d", (4, 5, 6)), ("dropout2d", (2, 3, 4, 5, 6)), ("dropout3d", (3, 4, 5)),
                                         ("dropout2d", (7,))])
def test_warnings_and_errors_are_torchs(name: str, shape: tuple[int, ...]) -> None:
    x = _input(shape, np.float32)
    ours = _messages(lambda: getattr(F, name)(ag.tensor(x), 0.5))
    theirs = _messages(lambda: getattr(torch.nn.functional, name)(torch.tensor(x), 0.5))
    assert ours == theirs and ours


@pytest.mark.parametrize("module", ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"])
def test_modules_are_torchs(module: str) -> None:
    shape = {"Dropout1d": (3, 4, 5), "Dropout3d": (2, 3, 4, 5, 2)}.get(module, (2, 3, 4, 5))
    x = _input(shape, np.float32)
    ours, theirs = getattr(nn, module)(0.4), getattr(torch.nn, module)(0.4)
    assert repr(ours) == repr(theirs)
    ag.manual_seed(3)
    torch.manual_seed(3)
    np.testing.assert_array_equal(ours(ag.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    ours.eval()
    theirs.eval()
    np.testing.assert_array_equal(ours(ag.tensor(x)).numpy(), x)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 2"):
        getattr(nn, module)(2)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 2"):
        getattr(torch.nn, module)(2)


def test_inplace_forms_are_torchs() -> None:
    x = _input((3, 4, 5, 2), np.float64)
    ours, theirs = ag.tensor(x), torch.tensor(x)
    ag.manual_seed(5)
    torch.manual_seed(5)
    assert F.dropout2d(ours, 0.5, True, inplace=True) is ours
    torch.nn.functional.dropout2d(theirs, 0.5, True, inplace=True)
    ag.manual_seed(6)
    torch.manual_seed(6)
    F.alpha_dropout(ours, 0.3, True, inplace=True)
    torch.nn.functional.alpha_dropout(theirs, 0.3, True, inplace=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
