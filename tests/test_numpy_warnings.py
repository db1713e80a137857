"""No numpy floating-point warnings: PyTorch computes log(0), 1 / 0, sqrt(-1), exp(1000), inf - inf
silently, so aiograd does too; a user running with ``-W error`` meets no exception that torch
would not raise. Every op of the edge-value tables (tests/test_edge_values.py) runs forward and
backward, at every edge value, under ``warnings.simplefilter("error")`` on both libraries, and
the user's own numpy error state is left as it was."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from helpers import ULPS, assert_matches_torch, requires_torch, torch
from test_edge_values import BINARY, EDGES, REDUCTIONS, UNARY, _vectors

import aiograd as ag

pytestmark = requires_torch


def _run_strictly(lib: Any, fn: Any, arrays: list[np.ndarray[Any, Any]]) -> None:
    """Forward, backward and a double backward of ``fn`` with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # (a warning both libraries give on purpose: var/std of one element)
        warnings.filterwarnings("ignore", "[a-z]+\\(\\): degrees of freedom is <= 0", UserWarning)
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, xs[0] if len(xs) == 1 else xs)
        if isinstance(out, tuple):
            out = out[0]
        if lib is torch:
            grads = torch.autograd.grad(out.sum(), xs, allow_unused=True, create_graph=True)
            grads = [g for g in grads if g is not None and g.requires_grad]
            if grads:
                try:
                    torch.autograd.grad(sum(g.sum() for g in grads), xs, allow_unused=True)
                except RuntimeError as error:  # (hardsigmoid's: torch has no second derivative)
                    if "is not implemented" not in str(error):
                        raise
        else:
            grads = ag.sync.grad(out.sum(), xs, allow_unused=True, create_graph=True)
            grads = [g for g in grads if g is not None and g.requires_grad]
            if grads:
                ag.sync.grad(sum(g.sum() for g in grads), xs, allow_unused=True)


def _check(fn: Any, arrays: list[np.ndarray[Any, Any]]) -> None:
    _run_strictly(torch, fn, arrays)  # torch is silent (the test is wrong if not)
    before = np.geterr()
    with np.errstate(all="warn"):  # the user's numpy state, whatever it is, is not aiograd's
        _run_strictly(ag, fn, arrays)
    assert np.geterr() == before


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_at_edges_warn_no_more_than_torch(name: str, dtype: Any) -> None:
    _check(UNARY[name], [np.array(EDGES[dtype], dtype=dtype)])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_at_edges_warn_no_more_than_torch(name: str) -> None:
    values = np.array(EDGES[np.float64])
    _check(BINARY[name], [np.repeat(values, len(values)), np.tile(values, len(values))])


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_at_edges_warn_no_more_than_torch(name: str, dtype: Any) -> None:
    for vector in _vectors(dtype):
        _check(REDUCTIONS[name], [np.array(vector, dtype=dtype)])


IN_PLACE = {
    "add_": lambda x: x.add_(x.neg()),  # inf + -inf
    "sub_": lambda x: x.sub_(x),
    "mul_": lambda x: x.mul_(0.0),  # inf * 0
    "div_": lambda x: x.div_(0.0),
    "pow_": lambda x: x.pow_(-1.0),
    "exp_": lambda x: x.mul_(1000.0).exp_(),  # overflow
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_ops_without_a_graph_warn_no_more_than_torch(name: str) -> None:
    """The in-place ops' own path (no gradient recorded): numpy writes the result in place,
    quietly, the same values as torch."""
    results = []
    for lib in (torch, ag):
        x = lib.tensor(np.array(EDGES[np.float64]))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            IN_PLACE[name](x)
        results.append(np.asarray(x.numpy() if lib is torch else x.data))
    # IEEE arithmetic (pow_'s exponent -1 is a reciprocal) is correctly rounded on every CPU:
    # equal, zeros' signs too; exp is a libm's
    assert_matches_torch(results[1], results[0], name, ulps=ULPS if name == "exp_" else 0)


def test_quiet_in_threads_and_when_nested() -> None:
    """Each thread has its own quiet context (a context is entered by one thread at a time), and
    a quiet computation started from inside another still runs."""
    from concurrent.futures import ThreadPoolExecutor

    from aiograd._ops.quiet import quietly

    def log_of_zero(_: int) -> float:
        return float(ag.tensor([0.0]).log().item())

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(log_of_zero, range(16))) == [-np.inf] * 16
        nested = quietly(lambda: quietly(np.log, np.array([0.0, -1.0])))
    np.testing.assert_array_equal(nested, [-np.inf, np.nan])
