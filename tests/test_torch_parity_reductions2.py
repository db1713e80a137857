"""Reductions, permute and padding against torch, second round: ``var``'s (and ``std``'s) argument
parser (``unbiased`` with ``keepdim`` but no ``dim``, an explicit ``correction=None`` beside
``unbiased``) before the dtype check, float64 accumulation of float32 variances, ``dtype=`` sums
and products refused on tensors that require grad, the product's gradient of a 0-d input,
``permute()``/``reshape()`` without sizes, ``tensordot``/``inner`` of 0-d and empty operands, and
the circular pad's ``CopySlices`` node. Each case runs in both libraries, with explicit dtypes.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers import raised

import aiograd as ag
import aiograd.sync

torch = pytest.importorskip("torch")


_error = raised


def _same_error(torch_fn, ag_fn) -> None:
    """torch's exception type and the first line of its message (of an "invalid combination"
    message the part before the arguments it got) from aiograd."""
    expected = _error(torch_fn)
    text = str(expected).splitlines()[0].split(" - got (")[0]
    with pytest.raises(type(expected), match=re.escape(text)):
        ag_fn()


def _lib_grad(lib, y, x, w):
    if lib is torch:
        return torch.autograd.grad([y], [x], [w])[0]
    return aiograd.sync.grad([y], [x], [w])[0]


# ------------------------------------------------------------------------------ var / std parser
VAR_REFUSED = [
    lambda L, x: L.var(x, unbiased=True, keepdim=True),  # keepdim needs dim beside unbiased
    lambda L, x: L.var(x, unbiased=False, keepdim=False),
    lambda L, x: x.var(unbiased=True, keepdim=False),
    lambda L, x: L.var(x, 0, unbiased=True, correction=None),  # no form takes both
    lambda L, x: L.var(x, unbiased=True, correction=None),
    lambda L, x: L.var(x, 0, True, correction=1),
    lambda L, x: L.var(x, True, keepdim=True),  # var(input, unbiased) takes nothing else
    lambda L, x: L.var(x, True, True),
]


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("case", range(len(VAR_REFUSED)))
def test_var_argument_parser_refuses_as_torch_before_the_dtype_check(case: int, dtype: str) -> None:
    v = np.array([[1, 0, 1], [0, 0, 1]]).astype(dtype)
    fn = VAR_REFUSED[case]
    _same_error(lambda: fn(torch, torch.tensor(v)), lambda: fn(ag, ag.tensor(v)))
    if dtype == "float64":  # while the forms torch takes still work
        _var_forms_torch_accepts()


VAR_ACCEPTED = [
    lambda L, x: L.var(x, unbiased=True),
    lambda L, x: L.var(x, unbiased=False),
    lambda L, x: L.var(x, keepdim=True),
    lambda L, x: L.var(x, None, True, True),
    lambda L, x: L.var(x, dim=None, unbiased=False, keepdim=False),
    lambda L, x: L.var(x, 1, False, True),
    lambda L, x: L.var(x, True),
    lambda L, x: L.var(x, correction=None, keepdim=True),
    lambda L, x: L.var(x, (0, 1), correction=2),
]


def _var_forms_torch_accepts() -> None:
    v = np.array([[1.0, 0.5, 3.0], [0.25, -2.0, 1.0]])
    for fn in VAR_ACCEPTED:
        expected, got = fn(torch, torch.tensor(v, requires_grad=True)), fn(ag, ag.tensor(v, requires_grad=True))
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
        assert type(got.grad_fn).__name__ == type(expected.grad_fn).__name__


def test_var_of_float32_accumulates_in_float64_as_torch() -> None:
    # the centred squares overflow float32 (3.9e38) where the variance (4e36) does not
    v = np.zeros(100, dtype=np.float32)
    v[0] = 2e19
    expected = torch.var(torch.tensor(v)).item()
    got = ag.var(ag.tensor(v, dtype=ag.float32))
    assert got.dtype == ag.float32
    assert np.isfinite(expected)
    np.testing.assert_allclose(got.item(), expected, rtol=1e-6)
    # and where the variance itself overflows, inf as torch's cast
    big = np.array([-0.54, -0.52, 1e30, 1e-40, 0.8, -0.0], dtype=np.float32).reshape(2, 3)
    assert np.isinf(torch.var(torch.tensor(big)).item())
    assert np.isinf(ag.var(ag.tensor(big, dtype=ag.float32)).item())


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_std_argument_parser_refuses_as_torch(dtype: str) -> None:
    v = np.array([[1, 0, 1], [0, 0, 1]]).astype(dtype)
    for fn in (lambda L, x: L.std(x, unbiased=True, keepdim=True),
               lambda L, x: x.std(unbiased=False, keepdim=False),
               lambda L, x: L.std(x, unbiased=True, correction=None),
               lambda L, x: L.std(x, 0, True, correction=None)):
        _same_error(lambda f=fn: f(torch, torch.tensor(v)), lambda f=fn: f(ag, ag.tensor(v)))


def test_std_of_float32_takes_the_root_before_the_cast() -> None:
    v = np.array([[-0.54, -0.52, 1e30], [1e-40, 0.8, -0.0]], dtype=np.float32)
    w = np.array([[-0.12]], dtype=np.float32)
    results = []
    for L in (torch, ag):
        x = L.tensor(v, dtype=L.float32, requires_grad=True)
        y = x.std(keepdim=True, correction=None)
        g = _lib_grad(L, y, x, L.tensor(w, dtype=L.float32))
        results.append((y.detach().numpy(), g.numpy()))
    (ey, eg), (gy, gg) = results
    assert np.isfinite(ey).all()
    np.testing.assert_allclose(gy, ey, rtol=1e-6)
    np.testing.assert_allclose(gg, eg, rtol=1e-5)


# ------------------------------------------------------------------------------ sum / prod dtype=
@pytest.mark.parametrize("fname", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
@pytest.mark.parametrize("with_dim", [False, True])
def test_dtype_reduction_to_a_non_float_dtype_is_refused_under_grad(fname: str, dtype: str, with_dim: bool) -> None:
    v = np.ones((2, 3))
    args = (1,) if with_dim else ()

    def run(L):
        return getattr(L, fname)(L.tensor(v, dtype=L.float64, requires_grad=True), *args,
                                 dtype=getattr(L, "bool" if L is torch and dtype == "bool" else
                                               "bool_" if dtype == "bool" else dtype))

    _same_error(lambda: run(torch), lambda: run(ag))
    with ag.no_grad():  # no graph: the cast is allowed, as torch's
        assert str(run(ag).dtype) == ("bool" if dtype == "bool" else dtype)
    x = ag.ones(2, 3, dtype=ag.float64, requires_grad=True)
    with pytest.raises(IndexError, match=re.escape("Dimension out of range")):  # the dim is checked first
        getattr(ag, fname)(x, 5, dtype=ag.int64)
    out = getattr(ag, fname)(x, 1, dtype=ag.float32)  # a float dtype keeps the graph
    assert out.dtype == ag.float32 and type(out.grad_fn).__name__ == f"{fname.capitalize()}Backward1"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_prod_of_a_0d_input_passes_its_gradient_through(value: float) -> None:
    for v, dim in ((value, None), (value, 0), (2.0, None), (2.0, 0)):
        grads = []
        for L in (torch, ag):
            x = L.tensor(v, dtype=L.float64, requires_grad=True)
            y = x.prod(dtype=L.float32) if dim is None else x.prod(dim)
            w = L.tensor(0.59, dtype=y.dtype)
            grads.append(_lib_grad(L, y, x, w).item())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
        assert np.isfinite(grads[1])


# ------------------------------------------------------------------------------ permute / reshape
@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_permute_and_reshape_without_sizes_raise_torchs_type_error(shape: tuple[int, ...]) -> None:
    v = np.zeros(shape)
    for call in (lambda L, x: x.permute(), lambda L, x: L.permute(x), lambda L, x: x.reshape(),
                 lambda L, x: L.reshape(x)):
        _same_error(lambda c=call: c(torch, torch.tensor(v)), lambda c=call: c(ag, ag.tensor(v)))
    assert ag.tensor(v).permute(tuple(range(len(shape)))).shape == shape


def test_tensordot_and_inner_of_0d_and_empty_operands() -> None:
    # the sizes reshaped to are computed, not inferred (-1 is ambiguous beside a 0); 0-d
    # operands permute and reshape by tuples (``permute()`` without dims raises)
    rng = np.random.default_rng(0)
    for sa, sb, dims in [((2, 0), (0, 3), 1), ((), (), 0), ((2, 3), (3, 0), 1), ((0, 2), (2, 4), 1),
                         ((2, 3), (2, 3), ([0, 1], [0, 1])), ((2, 3), (), 0)]:
        va, vb = rng.standard_normal(sa), rng.standard_normal(sb)
        expected = torch.tensordot(torch.tensor(va), torch.tensor(vb), dims)
        got = ag.tensordot(ag.tensor(va, dtype=ag.float64), ag.tensor(vb, dtype=ag.float64), dims)
        assert got.shape == tuple(expected.shape)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    for sa, sb in [((2, 0), (3, 0)), ((0,), (0,)), ((0, 2), (3, 2))]:
        expected = torch.inner(torch.zeros(sa, dtype=torch.float64), torch.zeros(sb, dtype=torch.float64))
        got = ag.inner(ag.zeros(sa, dtype=ag.float64), ag.zeros(sb, dtype=ag.float64))
        assert got.shape == tuple(expected.shape)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


# ------------------------------------------------------------------------------ circular pad
CIRCULAR = [((1, 1), [0, 0]), ((2, 3), [1, 2]), ((2, 3, 4), [2, 1, 3, 0]), ((1, 2, 3, 4), [1, 1, 2, 2]),
            ((2, 3, 4), [-1, 2, 1, -1]), ((1, 2, 3, 2, 4), [3, -1, 0, 2, 1, 2]), ((2, 0, 3), [1, 1])]


@pytest.mark.parametrize(("shape", "widths"), CIRCULAR)
def test_circular_pad_records_torchs_copy_slices(shape, widths) -> None:
    rng = np.random.default_rng(1)
    v = rng.standard_normal(shape)
    results = []
    for L in (torch, ag):
        x = L.tensor(v, dtype=L.float64, requires_grad=True)
        y = L.nn.functional.pad(x, widths, "circular")
        if L is torch:
            wv = rng.standard_normal(tuple(y.shape))
        w = L.tensor(wv, dtype=L.float64, requires_grad=True)
        g = (torch.autograd.grad([y], [x], [w], create_graph=True) if L is torch
             else aiograd.sync.grad([y], [x], [w], create_graph=True))[0]
        gg = (torch.autograd.grad([(g * g).sum()], [w]) if L is torch
              else aiograd.sync.grad([(g * g).sum()], [w]))[0]
        results.append((type(y.grad_fn).__name__, y.detach().numpy(), g.detach().numpy(), gg.numpy()))
    (en, ey, eg, egg), (gn, gy, gg_, ggg) = results
    assert gn == en == "CopySlices"
    np.testing.assert_allclose(gy, ey, rtol=1e-12)
    np.testing.assert_allclose(gg_, eg, rtol=1e-12)
    np.testing.assert_allclose(ggg, egg, rtol=1e-12)


def test_circular_pad_wider_than_the_cropped_dim_wraps_without_reading_unset_memory() -> None:
    # torch's copies read entries not yet written here (or fail on the overlap): aiograd selects
    # the wrapped positions of the cropped input; elsewhere it copies slices, as torch
    x = ag.tensor(np.arange(4.0).reshape(1, 4), dtype=ag.float64, requires_grad=True)
    out = ag.nn.functional.pad(x, [-3, 2], "circular")
    np.testing.assert_array_equal(out.detach().numpy(), [[3.0, 3.0, 3.0]])
    out = ag.nn.functional.pad(x, [-1, 2], "circular")
    np.testing.assert_array_equal(out.detach().numpy(), [[1.0, 2.0, 3.0, 1.0, 2.0]])
    assert type(out.grad_fn).__name__ == "CopySlices"


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.amin(lib.zeros(0, 2, 0), (0, 1, 2, 0)),  # a size-0 dim before a repeated one
        lambda lib: lib.amax(lib.zeros(2, 0), (0, 0)),  # a repeated dim before a later size-0 one
        lambda lib: lib.trace(lib.tensor([False, False])),  # bool before the rank
        lambda lib: lib.tensor(True).hypot_(lib.tensor(0)),  # the cast into self before the kernel
    ],
    ids=["amin_empty_first", "amax_repeat_first", "trace_bool_first", "hypot__cast_first"],
)
def test_errors_come_in_torchs_order(call: Any) -> None:
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=f"^{re.escape(str(theirs.value))}$"):
        call(ag)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.hypot(lib.tensor([-4, 3]), lib.tensor([False, True, False])),  # shapes before dtype
        lambda lib: lib.tensor(-3).hypot_(lib.tensor([True])),  # the output's shape before the kernel
    ],
    ids=["hypot", "hypot_"],
)
def test_hypot_checks_shapes_before_dtypes(call: Any) -> None:
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError, match=f"^{re.escape(str(theirs.value))}$"):
        call(ag)


def test_an_in_place_op_checks_the_cast_of_all_its_operands_first() -> None:
    for lib in (torch, ag):
        bool_ = lib.bool if lib is torch else ag.bool_
        with pytest.raises(RuntimeError, match="^result type Long can't be cast to the desired output type Bool$"):
            lib.tensor(True, dtype=bool_).lerp_(lib.tensor(False, dtype=bool_), lib.tensor(1))
