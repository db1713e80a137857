"""The products with vectors of ``aiograd/_ops/vector_products.py`` (``mv``, ``addmv``, ``vdot``,
``inner``) and the Tensor methods ``moveaxis`` and ``where``: factory rows (gradcheck,
gradgradcheck, values and gradients against torch, float32, grad_fn names), then torch's checks
and messages. Dtypes are always explicit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, const, make_op_tests

import aiograd as ag

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

MASK = np.array([True, False, True])

SPECS = [
    OpSpec("mv", lambda lib, m, v: lib.mv(m, v), ((2, 3), (3,)), grad_fn="MvBackward0"),
    OpSpec("mv_method", lambda lib, m, v: m.mv(v), ((4, 2), (2,)), grad_fn="MvBackward0", op="mv"),
    OpSpec("addmv", lambda lib, x, m, v: lib.addmv(x, m, v), ((2,), (2, 3), (3,)), grad_fn="AddmvBackward0"),
    OpSpec("addmv_scaled", lambda lib, x, m, v: x.addmv(m, v, beta=0.5, alpha=-2.0), ((2,), (2, 3), (3,)),
           grad_fn="AddmvBackward0", op="addmv"),
    OpSpec("addmv_broadcast_input", lambda lib, x, m, v: lib.addmv(x, m, v, alpha=3), ((1,), (4, 3), (3,)),
           grad_fn="AddmvBackward0", op="addmv"),
    OpSpec("addmv_scalar_input_beta_zero", lambda lib, x, m, v: lib.addmv(x, m, v, beta=0), ((), (2, 3), (3,)),
           grad_fn="AddmvBackward0", op="addmv"),
    OpSpec("vdot", lambda lib, a, b: lib.vdot(a, b), ((4,), (4,)), grad_fn="VdotBackward0"),
    OpSpec("vdot_method", lambda lib, a, b: a.vdot(b), ((3,), (3,)), grad_fn="VdotBackward0", op="vdot"),
    OpSpec("inner", lambda lib, a, b: lib.inner(a, b), ((2, 3), (4, 3)), grad_fn="ViewBackward0"),
    OpSpec("inner_vectors", lambda lib, a, b: a.inner(b), ((3,), (3,)), grad_fn="ViewBackward0", op="inner"),
    OpSpec("inner_batched", lambda lib, a, b: lib.inner(a, b), ((2, 2, 3), (3,)), op="inner"),
    OpSpec("inner_scalar", lambda lib, a, b: lib.inner(a, b), ((2, 3), ()), grad_fn="MulBackward0", op="inner"),
    OpSpec("moveaxis_method", lambda lib, x: x.moveaxis(0, -1), ((2, 3, 4),), grad_fn="PermuteBackward0",
           op="moveaxis"),
    OpSpec("where_method", lambda lib, x, y: x.where(const(lib, MASK), y), ((2, 3), (3,)), grad_fn="WhereBackward0",
           op="where"),
    OpSpec("where_method_number", lambda lib, x: x.where(x > 0, 0.5), ((2, 3),), grad_fn="WhereBackward0", op="where"),
]

globals().update(make_op_tests(SPECS))


def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    out = []
    for lib in (ag, torch):
        try:
            out.append(fn(lib))
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            out.append(e)
    return out[0], out[1]


def T(lib: Any, shape: tuple[int, ...], dtype: str = "float64") -> Any:
    values = np.arange(1, 1 + int(np.prod(shape))).reshape(shape) % 5 - 2
    dt = getattr(torch, dtype) if lib is torch else np.dtype(dtype)
    return lib.tensor(values.tolist(), dtype=dt)


def assert_same(fn: Callable[[Any], Any]) -> None:
    ours, theirs = _both(fn)
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs) and str(ours) == str(theirs), (ours, theirs)
        return
    assert not isinstance(ours, Exception), (ours, theirs)
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


CASES = {
    "mv": lambda lib: lib.mv(T(lib, (2, 3)), T(lib, (3,))),
    "mv inner sizes": lambda lib: lib.mv(T(lib, (2, 3)), T(lib, (2,))),
    "mv of a vector": lambda lib: lib.mv(T(lib, (3,)), T(lib, (3,))),
    "mv of matrices": lambda lib: lib.mv(T(lib, (2, 3)), T(lib, (3, 2))),
    "mv dtypes": lambda lib: lib.mv(T(lib, (2, 3)), T(lib, (3,), "float32")),
    "mv integers": lambda lib: lib.mv(T(lib, (2, 3), "int64"), T(lib, (3,), "int64")),
    "addmv input size": lambda lib: lib.addmv(T(lib, (3,)), T(lib, (2, 3)), T(lib, (3,))),
    "addmv inner sizes": lambda lib: lib.addmv(T(lib, (2,)), T(lib, (2, 3)), T(lib, (2,))),
    "addmv matrix input": lambda lib: lib.addmv(T(lib, (2, 2)), T(lib, (2, 3)), T(lib, (3,))),
    "addmv dtypes": lambda lib: lib.addmv(T(lib, (2,), "float32"), T(lib, (2, 3)), T(lib, (3,))),
    "addmv integers": lambda lib: lib.addmv(T(lib, (2,), "int64"), T(lib, (2, 3), "int64"), T(lib, (3,), "int64"),
                                            beta=2, alpha=3),
    "addmv NaN input, beta 0": lambda lib: lib.addmv(T(lib, (2,)) * float("nan"), T(lib, (2, 3)), T(lib, (3,)), beta=0),
    "vdot sizes": lambda lib: lib.vdot(T(lib, (3,)), T(lib, (2,))),
    "vdot matrices": lambda lib: lib.vdot(T(lib, (2, 3)), T(lib, (2, 3))),
    "vdot dtypes": lambda lib: lib.vdot(T(lib, (3,)), T(lib, (3,), "float32")),
    "inner last dims": lambda lib: lib.inner(T(lib, (2, 3)), T(lib, (3, 2))),
    "inner scalars": lambda lib: lib.inner(T(lib, ()), T(lib, ())),
    "moveaxis": lambda lib: T(lib, (2, 3, 4)).moveaxis((0, 1), (2, 0)),
    "where method, float32 with a number": lambda lib: T(lib, (3,), "float32").where(T(lib, (3,)) > 0, 2.5),
}


@requires_torch
@pytest.mark.parametrize("case", CASES)
def test_matches_torch_values_dtypes_and_errors(case: str) -> None:
    assert_same(CASES[case])


def test_addmv_with_alpha_zero_ignores_the_product() -> None:
    # BLAS's rule, as torch's: alpha = 0 skips mat @ vec, so inf * 0 in it gives no NaN
    x = ag.tensor([1.0, 2.0], dtype=ag.float64)
    m = ag.tensor([[1e300], [0.49]], dtype=ag.float64)
    v = ag.tensor([float("-inf")], dtype=ag.float64)
    assert ag.addmv(x, m, v, alpha=0.0).tolist() == [1.0, 2.0]
    assert ag.addmv(x, m, v, alpha=0.0, beta=0.0).tolist() == [0.0, 0.0]
