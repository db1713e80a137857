"""``aiograd.nn.functional.embedding`` (aiograd/nn/_embedding.py): ``OpSpec`` rows through the op
factory (the weight's gradient and its double backward, against torch), ``padding_idx``,
``scale_grad_by_freq`` and ``max_norm`` against torch, and PyTorch's errors word for word."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
import aiograd.nn.functional as F

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

INDICES = np.array([[1, 4, 1], [0, 4, 2]])


def _embed(**kwargs: Any) -> Any:
    def fn(lib: Any, w: Any) -> Any:
        f = F if lib is ag else torch.nn.functional
        return f.embedding(lib.tensor(INDICES).to(w.device), w, **kwargs) * w.sum()

    return fn


def _embed_alone(lib: Any, w: Any) -> Any:
    f = F if lib is ag else torch.nn.functional
    return f.embedding(lib.tensor(INDICES).to(w.device), w)


EMBEDDING_SPECS = [
    OpSpec("embedding", _embed_alone, ((5, 3),), grad_fn="EmbeddingBackward0"),
    # times a function of the weight: a second derivative that goes through the scatter
    OpSpec("embedding_times_weight", _embed(), ((5, 3),), op="embedding"),
]
# (padding_idx and scale_grad_by_freq change the gradient on purpose, so finite differences
# cannot check them: test_gradients_match_torch does, against torch.)

globals().update(make_op_tests(EMBEDDING_SPECS))


@requires_torch
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 1}, {"padding_idx": -1, "scale_grad_by_freq": True}],
                         ids=["plain", "padding", "freq"])
async def test_gradients_match_torch(kwargs: dict[str, Any]) -> None:
    rng = np.random.default_rng(8)
    w = rng.standard_normal((6, 4))
    idx = np.array([[1, 2, 1, 5], [5, 0, 2, 1]])
    ours, theirs = ag.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = F.embedding(ag.tensor(idx), ours, **kwargs)
    tout = torch.nn.functional.embedding(torch.tensor(idx), theirs, **kwargs)
    assert out.shape == tuple(tout.shape) == (2, 4, 4)
    assert out.grad_fn.name() == tout.grad_fn.name()
    u = rng.standard_normal(out.shape)
    (g,) = await ag.grad(out, [ours], ag.tensor(u))
    (tg,) = torch.autograd.grad(tout, [theirs], torch.tensor(u))
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)
    if "padding_idx" in kwargs:
        assert not g.numpy()[kwargs["padding_idx"]].any()


@requires_torch
def test_max_norm_renormalises_the_picked_rows_in_place_as_torch() -> None:
    w = np.random.default_rng(9).standard_normal((5, 3)) * 3
    ours, theirs = ag.tensor(w.copy()), torch.tensor(w.copy())
    out = F.embedding(ag.tensor([0, 2, 2]), ours, max_norm=1.5, norm_type=3.0)
    tout = torch.nn.functional.embedding(torch.tensor([0, 2, 2]), theirs, max_norm=1.5, norm_type=3.0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(ours.numpy()[[1, 3, 4]], w[[1, 3, 4]])  # rows not picked: kept


def _error(fn: Any) -> tuple[type, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is compared
        return type(e), str(e).replace("torch.", "aiograd.")
    raise AssertionError("no error")


ERROR_CASES = {
    "out_of_range": lambda lib, f: f.embedding(lib.tensor([1, 7]), lib.ones(5, 3)),
    "negative": lambda lib, f: f.embedding(lib.tensor([-1, 2]), lib.ones(5, 3)),
    "padding_high": lambda lib, f: f.embedding(lib.tensor([1, 2]), lib.ones(5, 3), padding_idx=5),
    "padding_low": lambda lib, f: f.embedding(lib.tensor([1, 2]), lib.ones(5, 3), padding_idx=-6),
    "float_indices": lambda lib, f: f.embedding(lib.tensor([1.0, 2.0]), lib.ones(5, 3)),
    "weight_1d": lambda lib, f: f.embedding(lib.tensor([1, 2]), lib.ones(5)),
}


@requires_torch
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(case: str) -> None:
    ours = _error(lambda: ERROR_CASES[case](ag, F))
    theirs = _error(lambda: ERROR_CASES[case](torch, torch.nn.functional))
    if case == "float_indices":  # (torch's default float is float32, aiograd's float64)
        theirs = (theirs[0], theirs[1].replace("FloatTensor", "DoubleTensor"))
    assert ours == theirs
