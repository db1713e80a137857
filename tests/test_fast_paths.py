"""The array fast paths agree with their rules' formulas.

A backward rule writes its derivative once with aiograd ops; a few also compute it on arrays when
grad mode is off (``first_order()``), where ``benchmarks/bench_fast_paths.py`` shows that it pays.
Each such rule runs here both ways, fast paths on and off (``array_fast_paths(False)``), on inputs
that reach its fast path: broadcast operands, dims kept or not, optional parameters absent, and a
batch of gradients (``is_grads_batched``) where the rule batches. The two must agree to rounding;
NaN and inf where they are must match too. A scan of the package checks that every rule that
consults ``first_order()`` is covered here, so a new fast path comes with its comparison.
"""

from __future__ import annotations

import ast
import pathlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn.functional as F
from aiograd._ops._util import array_fast_paths

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # rule math: one loop is enough

rng = np.random.default_rng(7)


def t(*shape: int, low: float = -2.0, high: float = 2.0) -> ag.Tensor:
    return ag.tensor(rng.uniform(low, high, shape), requires_grad=True)


def _prod_with_zeros() -> tuple[ag.Tensor, list[ag.Tensor]]:
    data = rng.uniform(0.5, 1.5, (4, 5))
    data[0, 1] = data[2, 1] = data[2, 3] = data[3, 0] = 0.0  # one zero, two in a row, none
    x = ag.tensor(data, requires_grad=True)
    return x.prod(1), [x]


def _index_put() -> tuple[ag.Tensor, list[ag.Tensor]]:
    a, v = t(6, 4), t(2, 4)
    z = a * 1.0
    z[ag.tensor([1, 4])] = v
    return z, [a, v]


def _copy_slices() -> tuple[ag.Tensor, list[ag.Tensor]]:
    a, b = t(5, 6), t(5, 2)
    z = a * 1.0
    z[:, 1:3].mul_(b)
    return z, [a, b]


def one(build: Callable[..., ag.Tensor], *shapes: tuple[int, ...], **kw: Any) -> Callable[[], Any]:
    """A case: ``build(*inputs)`` on fresh float64 leaves of the given shapes."""

    def make() -> tuple[ag.Tensor, list[ag.Tensor]]:
        inputs = [t(*s, **kw) for s in shapes]
        return build(*inputs), inputs

    return make


# the rule (its function or Class.method, as the scan below names it) -> its cases
CASES: dict[str, dict[str, Callable[[], Any]]] = {
    "_unary_node": {  # the Unary rows with fast=
        "tanh": one(ag.tanh, (3, 4)),
        "sigmoid": one(ag.sigmoid, (3, 4), low=-40, high=40),
        "relu": one(F.relu, (3, 4)),
    },
    "SumBackward0": {
        "all": one(lambda x: x.sum(), (3, 4)),
        "dim": one(lambda x: x.sum(1), (3, 4)),
        "dims keepdim": one(lambda x: x.sum((0, 2), keepdim=True), (2, 3, 4)),
    },
    "MeanBackward0": {
        "all": one(lambda x: x.mean(), (3, 4)),
        "dim": one(lambda x: x.mean(0), (3, 4)),
        "empty dim": one(lambda x: x.mean(1), (3, 0)),
    },
    "_prod_others": {"zeros": _prod_with_zeros},
    "LinalgVectorNormBackward0": {
        "dim": one(lambda x: ag.linalg.vector_norm(x, dim=1), (3, 4)),
        "keepdim": one(lambda x: ag.linalg.vector_norm(x, dim=0, keepdim=True), (3, 4)),
        "all": one(lambda x: ag.linalg.vector_norm(x), (3, 4)),
    },
    "LogSoftmaxBackward0": {"dim 1": one(lambda x: F.log_softmax(x, 1), (3, 5)),
                            "dim 0": one(lambda x: F.log_softmax(x, 0), (3, 5))},
    "_NllLossBackward0": {
        "mean": one(lambda x: F.nll_loss(x, ag.tensor([0, 2, 1])), (3, 4)),
        "sum, weight": one(lambda x: F.nll_loss(x, ag.tensor([0, 2, 1]), weight=ag.tensor([1.0, 2.0, 0.5, 3.0]),
                                                reduction="sum"), (3, 4)),
        "ignore_index": one(lambda x: F.nll_loss(x, ag.tensor([0, -100, 1])), (3, 4)),
    },
    "_GeluBackward0": {"exact": one(F.gelu, (3, 4), low=-5, high=5),
                       "tanh": one(lambda x: F.gelu(x, approximate="tanh"), (3, 4), low=-5, high=5)},
    "LinalgDetBackward0": {"batch": one(ag.linalg.det, (3, 4, 4))},
    "LinalgSlogdetBackward0": {"batch": one(lambda a: ag.linalg.slogdet(a)[1], (3, 4, 4))},
    "CumprodBackward0": {"dim": one(lambda x: x.cumprod(1), (3, 5))},
    "MulBackward0": {"tensor * number": one(lambda x: x * 0.9, (3, 4)), "int * tensor": one(lambda x: 3 * x, (3, 4)),
                     "by zero, inf": one(lambda x: (x * float("inf")) * 0.0, (3, 4))},
    "BmmBackward0": {"bmm": one(ag.bmm, (2, 3, 4), (2, 4, 5)),
                    "stacked mT": one(lambda a, b: ag.bmm(a, b.mT), (2, 3, 4), (2, 5, 4))},
    "SoftmaxBackward0": {"dim 1": one(lambda x: F.softmax(x, 1), (3, 5)),
                         "dim 0": one(lambda x: F.softmax(x, 0), (3, 5)),
                         "attention's": one(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                            (2, 4, 3), (2, 4, 3), (2, 4, 3))},
    "_EmbeddingBackward0": {
        "repeated rows": one(lambda w: F.embedding(ag.tensor([[0, 2, 2], [3, 0, 2]]), w), (5, 3)),
        "padding_idx": one(lambda w: F.embedding(ag.tensor([1, 0, 1]), w, padding_idx=1), (4, 2)),
    },
    "MmBackward0": {"mm": one(ag.mm, (3, 4), (4, 2)), "mT": one(lambda a, b: a @ b.mT, (3, 4), (2, 4))},
    "AddmmBackward0": {"bias": one(F.linear, (3, 4), (2, 4), (2,)), "no bias": one(F.linear, (3, 4), (2, 4))},
    "ConvolutionBackward0": {
        "conv2d": one(lambda x, w, b: F.conv2d(x, w, b, padding=1, stride=2), (2, 3, 6, 6), (4, 3, 3, 3), (4,)),
        "groups, dilation": one(lambda x, w: F.conv2d(x, w, groups=2, dilation=2), (2, 4, 7, 7), (4, 2, 2, 2)),
        "conv1d": one(lambda x, w: F.conv1d(x, w), (2, 3, 8), (5, 3, 3)),
        "transposed": one(lambda x, w: F.conv_transpose2d(x, w, stride=2), (2, 3, 4, 4), (3, 2, 3, 3)),
    },
    "MaxPool2DWithIndicesBackward0": {
        "tiles": one(lambda x: F.max_pool2d(x, 2), (2, 3, 6, 6)),
        "overlapping, padded": one(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), (2, 3, 7, 7)),
    },
    "AdaptiveAvgPool2DBackward0": {"uneven bins": one(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), (2, 3, 7, 5))},
    "_NativeLayerNormBackward0": {
        "affine": one(lambda x, w, b: F.layer_norm(x, (4,), w, b), (2, 3, 4), (4,), (4,)),
        "plain, 2 dims": one(lambda x: F.layer_norm(x, (3, 4)), (2, 3, 4)),
    },
    "_NativeBatchNormBackward0": {
        "affine": one(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (4, 3, 2, 2), (3,), (3,)),
        "plain": one(lambda x: F.batch_norm(x, None, None, training=True), (5, 3)),
    },
    "TransposeBackward0": {"t": one(lambda a: a.t(), (3, 4)), "transpose": one(lambda a: a.transpose(0, 2), (2, 3, 4)),
                           "linear's weight": one(F.linear, (3, 4), (2, 4))},
    "IndexPutBackward0": {"index_put": _index_put},
    "CopySlices.apply": {"in-place on a view": _copy_slices},
}

# rules that batch, run with a batch of gradients too (the others run once per sample)
BATCHED = {"_unary_node", "SumBackward0", "MeanBackward0", "LinalgVectorNormBackward0", "LogSoftmaxBackward0",
           "MmBackward0", "AddmmBackward0", "ConvolutionBackward0", "MaxPool2DWithIndicesBackward0",
           "AdaptiveAvgPool2DBackward0", "_GeluBackward0", "TransposeBackward0", "BmmBackward0", "SoftmaxBackward0", "MulBackward0"}


async def gradients(make: Callable[[], Any], fast: bool, batched: bool, seed: int) -> list[np.ndarray]:
    global rng
    rng = np.random.default_rng(seed)  # the same inputs both ways
    y, inputs = make()
    shape = (2, *y.shape) if batched else tuple(y.shape)
    g = ag.tensor(np.random.default_rng(seed + 1).uniform(-1, 1, shape))
    with array_fast_paths(fast):
        grads = await ag.grad(y, inputs, g, is_grads_batched=batched, allow_unused=True)
    return [np.zeros(0) if x is None else x.numpy() for x in grads]


CASE_IDS = [(rule, name) for rule, cases in CASES.items() for name in cases]


@pytest.mark.parametrize(("rule", "name"), CASE_IDS, ids=[f"{r}-{n}" for r, n in CASE_IDS])
@pytest.mark.parametrize("batched", [False, True], ids=["one", "batched"])
async def test_fast_path_agrees_with_the_formula(rule: str, name: str, batched: bool) -> None:
    if batched and rule not in BATCHED:
        pytest.skip("the rule is not batched: it runs once per sample, through the unbatched path")
    seed = len(rule) * 100 + len(name)
    fast = await gradients(CASES[rule][name], True, batched, seed)
    formula = await gradients(CASES[rule][name], False, batched, seed)
    assert len(fast) == len(formula)
    for i, (a, b) in enumerate(zip(fast, formula)):
        assert a.shape == b.shape and a.dtype == b.dtype, f"gradient {i}"
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=f"gradient {i}")


def _rules_with_fast_paths() -> set[str]:
    """Every function (or ``Class.method``) in the package that calls ``first_order()``."""
    found = set()
    root = pathlib.Path(ag.__file__).parent
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        scopes: list[tuple[str, ast.AST]] = []
        for top in tree.body:
            if isinstance(top, ast.FunctionDef):
                scopes.append((top.name, top))
            elif isinstance(top, ast.ClassDef):
                scopes += [(f"{top.name}.{m.name}", m) for m in top.body if isinstance(m, ast.FunctionDef)]
        for name, scope in scopes:
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.lstrip("_") == "first_order"
                   for n in ast.walk(scope)):
                found.add(name)
    return found - {"first_order"}


def test_every_fast_path_is_compared_with_its_formula() -> None:
    from aiograd._ops.unary_math import UNARY

    assert _rules_with_fast_paths() == set(CASES)
    assert {row.name for row in UNARY if row.fast is not None} == set(CASES["_unary_node"])


def test_the_mean_of_nothing_is_nan_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(ag.zeros(0).mean().item())
