"""The ops ``addmm``, ``baddbmm``, ``addbmm`` (aiograd/_ops/vector_products.py), ``meshgrid``,
``cartesian_prod``, ``repeat_interleave`` (joining.py), the comparison aliases ``greater``...
(elementwise.py), ``isnan``, ``isinf``, ``isfinite``, ``isposinf``, ``isneginf``, ``nan_to_num``
(unary_math.py; ``nan_to_num_``, inplace_variants.py), ``unique``, ``unique_consecutive``
(sorting.py), ``histc`` and ``bincount`` (reduction_extra.py): factory rows (gradcheck,
gradgradcheck, values and gradients against torch, float32, grad_fn names), then the variants,
torch's checks and messages. Dtypes are always explicit."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import requires_torch, torch
from op_factory import OpSpec, make_op_tests

import aiograd as ag
from aiograd._ops._registry import OPS

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough

NAN, INF = float("nan"), float("inf")


def F(lib: Any, name: str) -> Any:
    """``torch.<name>``, or aiograd's op of that name (its registered forward, or an alias's)."""
    if lib is not ag:
        return getattr(lib, name)
    if name in OPS:
        return OPS[name].forward
    return next(rule.forward for rule in OPS.values() if name in rule.aliases)


def I(lib: Any, values: Any) -> Any:  # noqa: E743 - an integer constant tensor
    return lib.tensor(values, dtype=lib.int64)


def _rounded(lib: Any, x: Any) -> Any:
    """``x`` with repeated values and no graph (the counting ops' rows)."""
    return (x.detach() * 2).round()


SPECS = [
    # ---------------------------------------------------------------- addmm, baddbmm, addbmm
    OpSpec("addmm", lambda lib, x, a, b: F(lib, "addmm")(x, a, b), ((2, 4), (2, 3), (3, 4)), grad_fn="AddmmBackward0"),
    OpSpec("addmm_method_scaled", lambda lib, x, a, b: x.addmm(a, b, beta=0.5, alpha=-2.0), ((2, 4), (2, 3), (3, 4)),
           grad_fn="AddmmBackward0", op="addmm"),
    OpSpec("addmm_broadcast_input", lambda lib, x, a, b: F(lib, "addmm")(x, a, b, alpha=3), ((4,), (2, 3), (3, 4)),
           op="addmm"),
    OpSpec("addmm_beta_zero", lambda lib, x, a, b: F(lib, "addmm")(x, a, b, beta=0), ((1, 1), (2, 3), (3, 2)),
           op="addmm"),
    OpSpec("baddbmm", lambda lib, x, a, b: F(lib, "baddbmm")(x, a, b), ((2, 2, 4), (2, 2, 3), (2, 3, 4)),
           grad_fn="BaddbmmBackward0"),
    OpSpec("baddbmm_method_scaled", lambda lib, x, a, b: x.baddbmm(a, b, beta=-1.5, alpha=0.5),
           ((3, 2, 2), (3, 2, 3), (3, 3, 2)), grad_fn="BaddbmmBackward0", op="baddbmm"),
    OpSpec("baddbmm_broadcast_input", lambda lib, x, a, b: F(lib, "baddbmm")(x, a, b), ((2, 1), (3, 2, 3), (3, 3, 2)),
           op="baddbmm"),
    OpSpec("addbmm", lambda lib, x, a, b: F(lib, "addbmm")(x, a, b), ((2, 4), (3, 2, 3), (3, 3, 4)),
           grad_fn="AddbmmBackward0"),
    OpSpec("addbmm_method_scaled", lambda lib, x, a, b: x.addbmm(a, b, beta=2.0, alpha=-0.5),
           ((2, 2), (4, 2, 3), (4, 3, 2)), grad_fn="AddbmmBackward0", op="addbmm"),
    OpSpec("addbmm_broadcast_input", lambda lib, x, a, b: F(lib, "addbmm")(x, a, b, beta=0), ((), (3, 2, 3), (3, 3, 2)),
           op="addbmm"),
    # ---------------------------------------------------------------- repeat_interleave, meshgrid, cartesian_prod
    OpSpec("repeat_interleave", lambda lib, x: F(lib, "repeat_interleave")(x, 2), ((2, 3),), grad_fn="ViewBackward0"),
    OpSpec("repeat_interleave_dim", lambda lib, x: x.repeat_interleave(3, dim=1), ((2, 3),), grad_fn="ViewBackward0",
           op="repeat_interleave"),
    OpSpec("repeat_interleave_tensor", lambda lib, x: x.repeat_interleave(I(lib, [2, 0, 1]), dim=-1), ((2, 3),),
           grad_fn="IndexSelectBackward0", op="repeat_interleave"),
    OpSpec("repeat_interleave_tensor_flat", lambda lib, x: x.repeat_interleave(I(lib, 2), output_size=12), ((2, 3),),
           grad_fn="IndexSelectBackward0", op="repeat_interleave"),
    OpSpec("meshgrid", lambda lib, a, b: F(lib, "meshgrid")(a, b, indexing="ij")[1], ((2,), (3,)),
           grad_fn="ExpandBackward0"),
    OpSpec("meshgrid_xy_three", lambda lib, a, b, c: (lambda g: g[0] * g[1] + g[2])(
        F(lib, "meshgrid")([a, b, c], indexing="xy")), ((2,), (3,), (4,)), op="meshgrid"),
    OpSpec("cartesian_prod", lambda lib, a, b: F(lib, "cartesian_prod")(a, b), ((2,), (3,)), grad_fn="StackBackward0"),
    OpSpec("cartesian_prod_three", lambda lib, a, b, c: F(lib, "cartesian_prod")(a, b, c) ** 2, ((2,), (1,), (3,)),
           op="cartesian_prod"),
    # ---------------------------------------------------------------- comparison aliases
    *(
        OpSpec(alias, (lambda n: lambda lib, x, y: getattr(x, n)(y) if lib is ag else getattr(x, n)(y))(alias),
               lambda r: [r.integers(0, 3, (2, 3)), r.integers(0, 3, (3,))], grad=False, why="a bool result", op=op)
        for alias, op in (("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
                          ("not_equal", "ne"))
    ),
    *(
        OpSpec(f"{alias}_function", (lambda n: lambda lib, x, y: F(lib, n)(x, y))(alias), ((2, 3), (2, 3)),
               grad=False, why="a bool result", op=op)
        for alias, op in (("greater", "gt"), ("less_equal", "le"), ("not_equal", "ne"))
    ),
    # ---------------------------------------------------------------- NaN and infinities
    *(
        OpSpec(name, (lambda n: lambda lib, x: F(lib, n)(x / (x - x.detach())))(name), ((2, 3),), grad=False,
               why="a bool result")
        for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf")
    ),
    OpSpec("nan_to_num", lambda lib, x: F(lib, "nan_to_num")(x), ((2, 3),), grad_fn="NanToNumBackward0"),
    OpSpec("nan_to_num_method", lambda lib, x: x.nan_to_num(1.0, 2.0, -3.0), ((2, 3),), op="nan_to_num"),
    OpSpec("nan_to_num_", lambda lib, x: x.clone().nan_to_num_(nan=0.5), ((2, 3),), grad_fn="NanToNumBackward0"),
    # ---------------------------------------------------------------- counting (no gradient)
    OpSpec("unique", lambda lib, x: F(lib, "unique")(_rounded(lib, x)), ((4, 3),), grad=False, why="no derivative"),
    OpSpec("unique_dim", lambda lib, x: _rounded(lib, x).unique(dim=0, return_counts=True)[1], ((4, 3),),
           grad=False, why="no derivative", op="unique"),
    OpSpec("unique_consecutive", lambda lib, x: F(lib, "unique_consecutive")(_rounded(lib, x).sort().values),
           ((5,),), grad=False, why="no derivative"),
    OpSpec("histc", lambda lib, x: F(lib, "histc")(x, bins=5), ((4, 3),), grad=False, why="no derivative"),
    OpSpec("bincount", lambda lib, w: F(lib, "bincount")(I(lib, [0, 3, 1, 3]), w.detach(), minlength=5), ((4,),),
           grad=False, why="no derivative (weights that need a gradient get a NotImplemented node)"),
]

globals().update(make_op_tests(SPECS))


def _both(fn: Callable[[Any], Any]) -> tuple[Any, Any]:
    out = []
    for lib in (ag, torch):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                out.append(fn(lib))
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            out.append(e)
    return out[0], out[1]


def T(lib: Any, values: Any, dtype: str = "float64") -> Any:
    """A constant tensor of ``values`` (a shape: small integers) in ``dtype``."""
    if isinstance(values, tuple):
        values = (np.arange(1, 1 + int(np.prod(values))).reshape(values) % 5 - 2).tolist()
    dt = getattr(torch, dtype) if lib is torch else np.dtype(dtype)
    return lib.tensor(values, dtype=dt)


def _same(ours: Any, theirs: Any) -> None:
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
        return
    assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch.")), (ours.dtype, theirs.dtype)
    assert ours.shape == tuple(theirs.shape), (ours.shape, theirs.shape)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def assert_same(fn: Callable[[Any], Any]) -> None:
    ours, theirs = _both(fn)
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs) and str(ours) == str(theirs), (ours, theirs)
        return
    assert not isinstance(ours, Exception), (ours, theirs)
    _same(ours, theirs)


def _f(name: str, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """``lib.<name>(*args)``, each callable argument called with ``lib`` first."""
    return lambda lib: F(lib, name)(*(a(lib) if callable(a) else a for a in args), **kwargs)


def _t(values: Any, dtype: str = "float64") -> Callable[[Any], Any]:
    return lambda lib: T(lib, values, dtype)


EDGES = [NAN, INF, -INF, 0.0, -0.0, 1.5, -2.0]

CASES = {
    # addmm, baddbmm, addbmm: values, integers, torch's checks in torch's order
    "addmm": _f("addmm", _t((2, 2)), _t((2, 3)), _t((3, 2)), beta=2, alpha=3),
    "addmm integers": _f("addmm", _t((2, 2), "int64"), _t((2, 3), "int64"), _t((3, 2), "int64")),
    "addmm float32": _f("addmm", _t((1,), "float32"), _t((2, 3), "float32"), _t((3, 2), "float32")),
    "addmm NaN input, beta 0, inf product, alpha 0": _f(
        "addmm", _t([[NAN, NAN]]), _t([[INF, 1.0]]), _t([[0.0, 1.0], [2.0, 3.0]]), beta=0, alpha=0),
    "addmm vector mat1": _f("addmm", _t((2, 2)), _t((3,)), _t((3, 2))),
    "addmm vector mat2": _f("addmm", _t((2, 2)), _t((2, 3)), _t((3,))),
    "addmm inner sizes": _f("addmm", _t((2, 2)), _t((2, 3)), _t((4, 2))),
    "addmm input size": _f("addmm", _t((3, 2)), _t((2, 3)), _t((3, 2))),
    "addmm input dtype": _f("addmm", _t((2, 2)), _t((2, 3), "float32"), _t((3, 2), "float32")),
    "addmm mat1 dtype": _f("addmm", _t((2, 2), "float32"), _t((2, 3)), _t((3, 2), "float32")),
    "addmm mat2 dtype": _f("addmm", _t((2, 2), "float32"), _t((2, 3), "float32"), _t((3, 2))),
    "addmm bool": _f("addmm", _t((2, 2), "bool"), _t((2, 3), "bool"), _t((3, 2), "bool")),
    "baddbmm": _f("baddbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 3, 2)), beta=-1, alpha=2),
    "baddbmm integers": _f("baddbmm", _t((2,), "int64"), _t((4, 2, 3), "int64"), _t((4, 3, 2), "int64")),
    "baddbmm NaN input, beta 0": _f("baddbmm", _t([NAN]), _t((1, 2, 3)), _t((1, 3, 2)), beta=0),
    "baddbmm 2-D batch1": _f("baddbmm", _t((2, 2)), _t((2, 3)), _t((4, 3, 2))),
    "baddbmm 2-D batch2": _f("baddbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 3))),
    "baddbmm 4-D batch1": _f("baddbmm", _t((2, 2)), _t((4, 2, 3, 1)), _t((4, 3, 2))),
    "baddbmm batches": _f("baddbmm", _t((2, 2)), _t((4, 2, 3)), _t((5, 3, 2))),
    "baddbmm inner sizes": _f("baddbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 4, 2))),
    "baddbmm input size": _f("baddbmm", _t((3, 2)), _t((4, 2, 3)), _t((4, 3, 2))),
    "baddbmm input dtype": _f("baddbmm", _t((2, 2)), _t((4, 2, 3), "float32"), _t((4, 3, 2), "float32")),
    "baddbmm batch1 dtype": _f("baddbmm", _t((2, 2), "float32"), _t((4, 2, 3)), _t((4, 3, 2), "float32")),
    "baddbmm batch2 dtype": _f("baddbmm", _t((2, 2), "float32"), _t((4, 2, 3), "float32"), _t((4, 3, 2))),
    "baddbmm bool": _f("baddbmm", _t((2, 2), "bool"), _t((4, 2, 3), "bool"), _t((4, 3, 2), "bool")),
    "addbmm": _f("addbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 3, 2)), beta=0.5, alpha=-1),
    "addbmm integers": _f("addbmm", _t((2,), "int64"), _t((4, 2, 3), "int64"), _t((4, 3, 2), "int64")),
    "addbmm no batches": _f("addbmm", _t((2, 2)), lambda lib: lib.zeros(0, 2, 3, dtype=lib.float64),
                            lambda lib: lib.zeros(0, 3, 2, dtype=lib.float64)),
    "addbmm inf product, alpha 0": _f("addbmm", _t([[1.0]]), _t([[[INF, 1.0]]]), _t([[[0.0], [1.0]]]), alpha=0),
    "addbmm 2-D batch1": _f("addbmm", _t((2, 2)), _t((2, 3)), _t((4, 3, 2))),
    "addbmm 2-D batch2": _f("addbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 3))),
    "addbmm 4-D batch2": _f("addbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 3, 2, 1))),
    "addbmm batches": _f("addbmm", _t((2, 2)), _t((4, 2, 3)), _t((5, 3, 2))),
    "addbmm inner sizes": _f("addbmm", _t((2, 2)), _t((4, 2, 3)), _t((4, 4, 2))),
    "addbmm input size": _f("addbmm", _t((3, 2)), _t((4, 2, 3)), _t((4, 3, 2))),
    "addbmm input dtype": _f("addbmm", _t((2, 2)), _t((4, 2, 3), "float32"), _t((4, 3, 2), "float32")),
    "addbmm batch1 dtype": _f("addbmm", _t((2, 2), "float32"), _t((4, 2, 3)), _t((4, 3, 2), "float32")),
    "addbmm bool": _f("addbmm", _t((2, 2), "bool"), _t((4, 2, 3), "bool"), _t((4, 3, 2), "bool")),
    # repeat_interleave
    **{
        f"repeat_interleave {i}": (lambda a, k: _f("repeat_interleave", _t((2, 3)), *a, **k))(args, kwargs)
        for i, (args, kwargs) in enumerate([
            ((2,), {}), ((0,), {}), ((2, 1), {}), ((2, -2), {}), ((_t([2], "int64"),), {}),
            ((_t(2, "int64"), 0), {}), ((_t([2, 0], "int64"), 0), {}), ((_t([1, 2, 0], "int64"), 1), {"output_size": 3}),
            ((_t([1, 2, 0], "int32"), 1), {}), ((_t([2, 1], "int64"), 0), {"output_size": 4}),
            ((_t([2, 1, 3], "int64"), 0), {}), ((_t([2, -1], "int64"), 0), {}), ((-1,), {}), ((2, 2), {}),
            ((_t([[2, 1]], "int64"), 0), {}), ((_t([2.0, 1.0]), 0), {}), ((_t([1] * 6, "int64"),), {}),
        ])
    },
    "repeat_interleave of counts": _f("repeat_interleave", _t([1, 2, 0, 3], "int64")),
    "repeat_interleave of int32 counts": _f("repeat_interleave", _t([1, 2], "int32")),
    "repeat_interleave of counts, output_size": _f("repeat_interleave", _t([1, 2, 3], "int64"), output_size=6),
    "repeat_interleave of counts, wrong output_size": _f("repeat_interleave", _t([1, 2], "int64"), output_size=4),
    "repeat_interleave of a 0-d count": _f("repeat_interleave", _t(3, "int64")),
    "repeat_interleave of float counts": _f("repeat_interleave", _t([1.0, 2.0])),
    "repeat_interleave of negative counts": _f("repeat_interleave", _t([1, -2], "int64")),
    "repeat_interleave of a 0-d tensor": _f("repeat_interleave", _t(1.5), 3),
    # meshgrid and cartesian_prod
    "meshgrid ij": _f("meshgrid", _t([1.0, 2.0]), _t([3.0, 4.0, 5.0]), _t([6.0]), indexing="ij"),
    "meshgrid xy": _f("meshgrid", _t([1.0, 2.0]), _t([3.0, 4.0, 5.0]), _t([6.0, 7.0]), indexing="xy"),
    "meshgrid xy, one tensor": _f("meshgrid", _t([1.0, 2.0]), indexing="xy"),
    "meshgrid of a list": lambda lib: F(lib, "meshgrid")([T(lib, [1, 2], "int64"), T(lib, [3], "int64")], indexing="ij"),
    "meshgrid default indexing": _f("meshgrid", _t([1.0, 2.0]), _t([3.0, 4.0, 5.0])),
    "meshgrid 0-d": _f("meshgrid", _t([1.0, 2.0]), _t(3.0), indexing="ij"),
    "meshgrid indexing": _f("meshgrid", _t([1.0, 2.0]), _t([3.0]), indexing="foo"),
    "meshgrid nothing": _f("meshgrid", indexing="ij"),
    "meshgrid dtypes": _f("meshgrid", _t([1.0, 2.0]), _t([3.0], "float32"), indexing="ij"),
    "cartesian_prod": _f("cartesian_prod", _t([1, 2], "int64"), _t([3, 4, 5], "int64"), _t([6, 7], "int64")),
    "cartesian_prod of one": _f("cartesian_prod", _t([1.0, 2.0])),
    "cartesian_prod of a matrix": _f("cartesian_prod", _t([1.0, 2.0]), _t((2, 2))),
    "cartesian_prod of a 0-d": _f("cartesian_prod", _t(1.0)),
    "cartesian_prod dtypes": _f("cartesian_prod", _t([1.0, 2.0]), _t([3.0], "float32")),
    "cartesian_prod of nothing": _f("cartesian_prod"),
    # the comparison aliases
    **{f"{n} broadcast": _f(n, _t((2, 3)), _t([0.0, 1.0, -1.0])) for n in
       ("greater", "greater_equal", "less", "less_equal", "not_equal")},
    "greater shapes": _f("greater", _t((2, 3)), _t((2,))),
    # NaN and infinities
    **{f"{n} {dt}": _f(n, _t(EDGES if dt[0] == "f" else [1, 0, 1], dt)) for n in
       ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num")
       for dt in ("float64", "float32", "float16", "int64", "bool")},
    "isnan of a list": _f("isnan", [1.0]),
    "nan_to_num replacements": _f("nan_to_num", _t(EDGES), 1.0, 2, -3.5),
    "nan_to_num keywords": _f("nan_to_num", _t(EDGES, "float32"), posinf=1e300, neginf=-1e300),
    "nan_to_num nan=None": _f("nan_to_num", _t(EDGES), None),
    "nan_to_num a string": _f("nan_to_num", _t(EDGES), nan="a"),
    "nan_to_num_": lambda lib: T(lib, EDGES).nan_to_num_(2.0),
    # unique and unique_consecutive
    **{
        f"{fn} {i} {dim}": (lambda f, v, d: lambda lib, v=v: F(lib, f)(
            T(lib, v, "float32" if isinstance(v, list) and isinstance(np.ravel(v)[0], float) else "int64"),
            return_inverse=True, return_counts=True, dim=d))(fn, v, dim)
        for fn in ("unique", "unique_consecutive")
        for i, v in enumerate([[3.0, 1.0, 2.0, 3.0, 1.0, 5.0], [[1, 2], [1, 2], [0, 5]], [1.0, NAN, NAN, 1.0],
                               [[1, 1, 2], [2, 1, 1], [1, 1, 2]], [1, 1, 2, 2, 1, 3], 2])
        for dim in (None, 0, 1, -1)
        if not (dim in (0, -1) and i == 2)  # (torch's unique_dim sorts NaN rows its own way: see the report)
    },
    "unique of bools": lambda lib: F(lib, "unique")(T(lib, [True, False, True], "bool")),
    "unique, inverse only": lambda lib: F(lib, "unique")(T(lib, (3, 2), "int64"), return_inverse=True),
    "unique, counts only": lambda lib: T(lib, (3, 2), "int64").unique(sorted=False, return_counts=True),
    "unique of a 0-sized dim": lambda lib: F(lib, "unique")(T(lib, np.zeros((0, 3)).tolist()), dim=0, return_counts=True),
    "unique over a 0-sized dim": lambda lib: F(lib, "unique")(T(lib, np.zeros((0, 3)).tolist()), dim=1),
    # histc and bincount
    **{
        f"histc {i}": (lambda v, k: lambda lib, v=v, k=k: F(lib, "histc")(T(lib, v, "float32"), **k))(v, k)
        for i, (v, k) in enumerate([
            ([3.0, 1.0, 2.0, 3.0, 1.0, 5.0], {"bins": 4}), ([3.0, 1.0, 2.0, 3.0, 1.0, 5.0], {"bins": 4, "min": 2, "max": 3}),
            ([1.0, 1.0], {"bins": 4}), ([3.0, 1.0], {"bins": 0}), ([3.0, 1.0], {"bins": 4, "min": 3, "max": 1}),
            ([1.0, NAN], {"bins": 4}), ([1.0, INF], {"bins": 4}), ([0.0, 1.0, 2.0, 2.999999, 3.0], {"bins": 3, "max": 3}),
            ([], {}), (np.random.default_rng(0).standard_normal(1000).tolist(), {"bins": 7}),
        ])
    },
    "histc of integers": lambda lib: F(lib, "histc")(T(lib, [1, 2], "int64")),
    "histc method, float64": lambda lib: T(lib, [0.5, 1.5, 1.5, 7.0]).histc(3, 0, 6),
    "bincount": lambda lib: F(lib, "bincount")(I(lib, [0, 1, 1, 3])),
    "bincount method": lambda lib: I(lib, [0, 1, 1, 3]).bincount(minlength=6),
    "bincount weights": lambda lib: F(lib, "bincount")(I(lib, [0, 1, 1, 3]), T(lib, [0.5, 1, 1, 2], "float32")),
    "bincount int weights": lambda lib: F(lib, "bincount")(I(lib, [0, 1, 1, 3]), I(lib, [1, 1, 1, 2])),
    "bincount int32": lambda lib: F(lib, "bincount")(T(lib, [0, 2], "int32")),
    "bincount empty": lambda lib: F(lib, "bincount")(I(lib, [])),
    "bincount negative": lambda lib: F(lib, "bincount")(I(lib, [-1, 2])),
    "bincount 2-D": lambda lib: F(lib, "bincount")(I(lib, [[1, 2]])),
    "bincount floats": lambda lib: F(lib, "bincount")(T(lib, [1.0, 2.0])),
    "bincount bools": lambda lib: F(lib, "bincount")(T(lib, [True, False], "bool")),
    "bincount weights size": lambda lib: F(lib, "bincount")(I(lib, [0, 1]), T(lib, [1.0])),
    "bincount minlength": lambda lib: F(lib, "bincount")(I(lib, [0, 1]), minlength=-1),
}


@requires_torch
@pytest.mark.parametrize("case", CASES)
def test_matches_torch_values_dtypes_and_errors(case: str) -> None:
    assert_same(CASES[case])


def test_meshgrid_warns_without_indexing_as_torch() -> None:
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        F(ag, "meshgrid")(ag.tensor([1.0]), ag.tensor([2.0]))


async def test_nan_to_num_gradient_is_zero_at_replaced_values() -> None:
    x = ag.tensor(EDGES, dtype=ag.float64, requires_grad=True)
    (g,) = await ag.grad(F(ag, "nan_to_num")(x).sum(), [x])
    assert g.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


@requires_torch
@pytest.mark.parametrize("name, kwargs, node", [
    ("unique", {}, "Unique2Backward0"),
    ("unique", {"dim": 0, "return_counts": True}, "UniqueDimBackward0"),
    ("unique_consecutive", {"return_inverse": True}, "UniqueConsecutiveBackward0"),
])
async def test_unique_records_torch_node_whose_backward_raises(name: str, kwargs: dict[str, Any], node: str) -> None:
    x = ag.tensor([1.0, 1.0, 2.0], dtype=ag.float64, requires_grad=True)
    tx = torch.tensor([1.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    out, tout = F(ag, name)(x, **kwargs), F(torch, name)(tx, **kwargs)
    values, tvalues = (out[0], tout[0]) if kwargs.get("return_counts") or kwargs.get("return_inverse") else (out, tout)
    assert values.grad_fn.name() == tvalues.grad_fn.name() == node
    with pytest.raises(NotImplementedError) as theirs:
        tvalues.sum().backward()
    with pytest.raises(NotImplementedError, match=None) as ours:
        await values.sum().backward()
    assert str(ours.value) == str(theirs.value)


@requires_torch
async def test_bincount_weights_that_need_a_gradient_get_torch_not_implemented_node() -> None:
    w = ag.tensor([0.5, 1.0], dtype=ag.float64, requires_grad=True)
    tw = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    out, tout = F(ag, "bincount")(I(ag, [1, 1]), w), torch.bincount(I(torch, [1, 1]), tw)
    assert out.grad_fn.name() == "NotImplemented" and type(tout.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        await out.sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::_bincount is not implemented|bincount"):
        tout.sum().backward()
