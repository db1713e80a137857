"""In-place writes against PyTorch: expanded (stride-0) views, numbers written into tensors
(PyTorch's overflow check), and the checks of the in-place scans."""

from __future__ import annotations

import math

import numpy as np
import pytest

import aiograd as ag

torch = pytest.importorskip("torch")

OVERLAP = "unsupported operation: more than one element of the written-to tensor"


def _expanded(lib, sizes):  # a (1, 1, 1) base expanded to ``sizes``
    base = lib.tensor([[[0.5]]], dtype=lib.float64)
    return base, base.expand(*sizes)


@pytest.mark.parametrize("sizes", [(1, 1, 0), (0, 3, 1), (1, 2, 0)])
@pytest.mark.parametrize(
    "name", ["sin_", "neg_", "exp_", "relu_", "sigmoid_", "square_", "cumsum_", "gt_", "zero_", "tanh_"]
)
def test_in_place_op_on_an_empty_expanded_view_is_allowed(name: str, sizes: tuple[int, ...]) -> None:
    args = (0,) if name in ("cumsum_",) else (0.25,) if name == "gt_" else ()
    tb, tx = _expanded(torch, sizes)
    ab, ax = _expanded(ag, sizes)
    getattr(tx, name)(*args)
    getattr(ax, name)(*args)
    assert ax.shape == tuple(tx.shape)
    np.testing.assert_array_equal(ab.numpy(), tb.numpy())


def test_binary_in_place_ops_on_an_empty_expanded_view() -> None:
    for lib in (torch, ag):
        base = lib.tensor([[1.0], [2.0]], dtype=lib.float64)
        x = base.expand(2, 0)
        x.mul_(2.0)
        x.add_(lib.ones(2, 0, dtype=lib.float64))
        x.atan2_(lib.ones((), dtype=lib.float64))
        x.masked_fill_(lib.tensor(True), 3.0)
        assert base.tolist() == [[1.0], [2.0]]


@pytest.mark.parametrize("name", ["zero_", "fill_"])
def test_zero_and_fill_write_an_expanded_view(name: str) -> None:
    results = []
    for lib in (torch, ag):
        base = lib.tensor([[1.0], [2.0], [3.0]], dtype=lib.float64)
        x = base.expand(3, 2)
        getattr(x, name)(*((5,) if name == "fill_" else ()))
        results.append((base.tolist(), x.tolist()))
        # what PyTorch refuses there still raises its error
        with pytest.raises(RuntimeError, match=OVERLAP):
            x.fill_(lib.tensor(2.0, dtype=lib.float64))
        with pytest.raises(RuntimeError, match=OVERLAP):
            x.sin_()
        with pytest.raises(RuntimeError, match=OVERLAP):
            x.add_(1)
    assert results[0] == results[1]


def test_setitem_on_an_empty_part_of_an_expanded_view() -> None:
    for lib in (torch, ag):
        base = lib.tensor([[[1.0]], [[0.06]], [[0.64]], [[2.0]]], dtype=lib.float32)
        x = base.expand(4, 4, 1)
        x[::3, ::2, 3:] = -0.0
        assert base.flatten().tolist() == pytest.approx([1.0, 0.06, 0.64, 2.0])


def test_setitem_on_a_non_overlapping_slice_of_an_expanded_view() -> None:
    results = []
    for lib in (torch, ag):
        base = lib.tensor([[1.0], [2.0], [3.0]], dtype=lib.float64)
        x = base.expand(3, 4)
        x[:, 0].mul_(10)  # one element per memory location: allowed
        results.append(base.tolist())
    assert results[0] == results[1]


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("int64", math.nan), ("int64", math.inf), ("int64", 1e20), ("int32", 2.0**40),
        ("uint8", 300), ("uint8", -0.5), ("uint8", 255.9), ("int32", -(2**31) - 1), ("float32", 1e39), ("float16", 1e5), ("int64", 3 + 1j),
    ],
)
def test_fill_with_a_number_out_of_range(dtype: str, value: complex) -> None:
    t = torch.zeros(2, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError) as theirs:
        t.fill_(value)
    a = ag.zeros(2, dtype=getattr(ag, "bool_" if dtype == "bool" else dtype))
    with pytest.raises(RuntimeError, match="value cannot be converted to type .* without overflow") as ours:
        a.fill_(value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(("dtype", "value"), [("uint8", -1), ("uint8", -255), ("int64", 3 + 0j)])
def test_fill_with_a_number_that_converts(dtype: str, value: complex) -> None:
    t = torch.zeros(2, dtype=getattr(torch, dtype)).fill_(value)
    a = ag.zeros(2, dtype=getattr(ag, "bool_" if dtype == "bool" else dtype)).fill_(value)
    assert a.tolist() == t.tolist()


def _raise_same(fn) -> None:
    with pytest.raises(RuntimeError) as theirs:
        fn(torch)
    with pytest.raises(RuntimeError) as ours:
        fn(ag)
    assert str(ours.value) == str(theirs.value)


def test_numbers_out_of_range_in_setitem_masked_fill_and_scatter() -> None:
    def setitem(lib):
        x = lib.zeros(2, 1, dtype=lib.int64)
        x[0] = float("nan")

    _raise_same(setitem)
    _raise_same(lambda lib: lib.masked_fill(lib.zeros(2, dtype=lib.int64), lib.tensor(True), math.inf))
    _raise_same(lambda lib: lib.zeros(2, dtype=lib.int64).masked_fill_(lib.tensor(True), math.nan))
    _raise_same(lambda lib: lib.zeros(2, 2, dtype=lib.int64).scatter(1, lib.zeros(2, 1, dtype=lib.int64), value=math.inf))
    _raise_same(lambda lib: lib.zeros(2, 2, dtype=lib.int64).scatter_(1, lib.zeros(2, 1, dtype=lib.int64), value=math.nan))


def test_scatter_of_an_out_of_range_number_with_an_empty_index() -> None:
    t = torch.scatter(torch.zeros(3, 1, 2, dtype=torch.int64), -2, torch.zeros(3, 0, 2, dtype=torch.int64), value=math.inf)
    a = ag.scatter(ag.zeros(3, 1, 2, dtype=ag.int64), -2, ag.zeros(3, 0, 2, dtype=ag.int64), value=math.inf)
    assert a.tolist() == t.tolist()


def test_masked_fill_of_an_integer_tensor_with_a_value_that_requires_grad() -> None:
    _raise_same(
        lambda lib: lib.masked_fill(
            lib.zeros(3, dtype=lib.int64), lib.tensor(True), lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        )
    )
    x = ag.zeros(3, dtype=ag.int64)  # the in-place op computes, as PyTorch's
    x.masked_fill_(ag.tensor([True, False, True]), ag.tensor(2.0, dtype=ag.float64, requires_grad=True))
    assert x.tolist() == [2, 0, 2]


@pytest.mark.parametrize("name", ["cumsum_", "cumprod_"])
def test_in_place_scans_of_bool_and_their_dim_check(name: str) -> None:
    for lib in (torch, ag):
        with pytest.raises(NotImplementedError, match=f'"{name[:-1]}_out_cpu" not implemented for \'Bool\''):
            getattr(lib.zeros(3, dtype=lib.bool if lib is torch else lib.bool_), name)(0)
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 5\)"):
            getattr(lib.zeros(3, dtype=lib.float64), name)(5, dtype=lib.int64)
