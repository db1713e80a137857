"""``aiograd.nn.utils.rnn`` against ``torch.nn.utils.rnn``: padding, packing and their inverses
(values, batch sizes, indices, and float64 gradients through ``await loss.backward()``), both
layouts, ``enforce_sorted=False``, ``total_length``, ``padding_side``, ``PackedSequence``'s
conversions, and torch's errors word for word.

Lengths in the unsorted cases are distinct: torch's sort is not stable for ties on long inputs,
aiograd's is."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aiograd as ag
from aiograd.nn.utils import rnn as R

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn

pytestmark = pytest.mark.aiograd(backends=["asyncio"])  # op math: one loop is enough


def leaf_pair(arr: np.ndarray) -> tuple[Any, Any]:
    """The same float64 array as an aiograd leaf and a torch leaf, both requiring grad."""
    return ag.tensor(arr.copy(), requires_grad=True), torch.tensor(arr.copy(), requires_grad=True)


def close(ours: Any, theirs: Any) -> None:
    """Same shape, dtype and values (tight tolerances)."""
    a = np.asarray(ours.detach().cpu().data)
    b = theirs.detach().numpy()
    assert a.shape == b.shape
    assert str(a.dtype) == str(b.dtype).removeprefix("torch.")
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def same_ints(ours: Any, theirs: Any) -> None:
    """Both ``None``, or int64 tensors with the same values."""
    if theirs is None:
        assert ours is None
        return
    assert ours.dtype == np.int64 and ours.device.type == "cpu"
    assert np.asarray(ours.data).tolist() == theirs.tolist()


def weights(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


async def backward_both(out: Any, t_out: Any, seed: int = 9) -> None:
    """Backward of ``sum(out * w)`` (same random ``w``) in both libraries."""
    w = weights(tuple(t_out.shape), seed)
    await (out * ag.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()


def same_error(ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    """``ours()`` raises torch's exception type with torch's message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(expected.type, match=re.escape(str(expected.value))) as got:
        ours()
    assert str(got.value) == str(expected.value)


SEQ_LENGTHS = [3, 5, 1, 4]  # unsorted, distinct


# ------------------------------------------------------------------------------ pad_sequence
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("padding_value", [0.0, -2.5])
async def test_pad_sequence_values_and_grads(
    batch_first: bool, padding_side: str, padding_value: float
) -> None:
    pairs = [leaf_pair(weights((n, 2, 3), i)) for i, n in enumerate(SEQ_LENGTHS)]
    out = R.pad_sequence([a for a, _ in pairs], batch_first, padding_value, padding_side)
    t_out = TR.pad_sequence([t for _, t in pairs], batch_first, padding_value, padding_side)
    close(out, t_out)
    await backward_both(out, t_out)
    for a, t in pairs:
        close(a.grad, t.grad)


async def test_pad_sequence_broadcasts_casts_and_takes_a_tensor() -> None:
    # a later sequence broadcasts to the first's trailing sizes and takes its dtype
    a, ta = leaf_pair(weights((2, 3), 1))
    b, tb = leaf_pair(weights((4, 1), 2))
    c = ag.tensor(weights((1, 3), 3)).to(ag.float32)
    tc = torch.tensor(np.asarray(c.data))
    out = R.pad_sequence([a, b, c])
    t_out = TR.pad_sequence([ta, tb, tc])
    close(out, t_out)
    await backward_both(out, t_out)
    close(a.grad, ta.grad)
    close(b.grad, tb.grad)
    # a tensor is a sequence of its rows; integer data takes the padding value cast to int
    m = np.arange(6).reshape(3, 2)
    close(R.pad_sequence(ag.tensor(m)), TR.pad_sequence(torch.tensor(m)))
    ints = [np.arange(3), np.arange(1)]
    close(
        R.pad_sequence([ag.tensor(v) for v in ints], padding_value=2.7),
        TR.pad_sequence([torch.tensor(v) for v in ints], padding_value=2.7),
    )


# ------------------------------------------------------------------------------ pack / pad packed
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("total_length", [None, 8])
@pytest.mark.parametrize("lengths_as_tensor", [False, True])
async def test_pack_padded_then_pad_packed(
    batch_first: bool,
    enforce_sorted: bool,
    total_length: int | None,
    lengths_as_tensor: bool,
) -> None:
    lengths = sorted(SEQ_LENGTHS, reverse=True) if enforce_sorted else SEQ_LENGTHS
    shape = (4, 5, 2) if batch_first else (5, 4, 2)
    x, tx = leaf_pair(weights(shape, 0))
    lens = ag.tensor(lengths) if lengths_as_tensor else lengths
    packed = R.pack_padded_sequence(x, lens, batch_first, enforce_sorted)
    t_packed = TR.pack_padded_sequence(tx, lengths, batch_first, enforce_sorted)
    assert isinstance(packed, R.PackedSequence) and isinstance(packed, tuple)
    close(packed.data, t_packed.data)
    for field in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        same_ints(getattr(packed, field), getattr(t_packed, field))
    out, out_lengths = R.pad_packed_sequence(packed, batch_first, -1.5, total_length)
    t_out, t_lengths = TR.pad_packed_sequence(t_packed, batch_first, -1.5, total_length)
    close(out, t_out)
    same_ints(out_lengths, t_lengths)
    # the padded positions get no gradient; the packed data and the padded output both feed it
    await backward_both(out + packed.data.sum(), t_out + t_packed.data.sum())
    close(x.grad, tx.grad)


async def test_pad_packed_sequence_of_integers() -> None:
    seqs = [np.array([5, 6, 7]), np.array([1])]
    packed = R.pack_sequence([ag.tensor(v) for v in seqs])
    t_packed = TR.pack_sequence([torch.tensor(v) for v in seqs])
    out, lengths = R.pad_packed_sequence(packed, batch_first=True, padding_value=9.8)
    t_out, t_lengths = TR.pad_packed_sequence(t_packed, batch_first=True, padding_value=9.8)
    close(out, t_out)
    same_ints(lengths, t_lengths)


# ------------------------------------------------------------------------------ pack / unpack sequence
@pytest.mark.parametrize("enforce_sorted", [True, False])
async def test_pack_sequence_and_unpack_sequence(enforce_sorted: bool) -> None:
    lengths = sorted(SEQ_LENGTHS, reverse=True) if enforce_sorted else SEQ_LENGTHS
    pairs = [leaf_pair(weights((n, 3), 10 + i)) for i, n in enumerate(lengths)]
    packed = R.pack_sequence([a for a, _ in pairs], enforce_sorted)
    t_packed = TR.pack_sequence([t for _, t in pairs], enforce_sorted)
    close(packed.data, t_packed.data)
    for field in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        same_ints(getattr(packed, field), getattr(t_packed, field))
    seqs = R.unpack_sequence(packed)
    t_seqs = TR.unpack_sequence(t_packed)
    assert len(seqs) == len(t_seqs) == len(pairs)
    for s, ts in zip(seqs, t_seqs, strict=True):
        close(s, ts)
    await backward_both(ag.cat(seqs), torch.cat(t_seqs))
    for a, t in pairs:
        close(a.grad, t.grad)


@pytest.mark.parametrize("batch_first", [False, True])
async def test_unpad_sequence(batch_first: bool) -> None:
    shape = (3, 4, 2) if batch_first else (4, 3, 2)
    x, tx = leaf_pair(weights(shape, 5))
    lengths = [2, 4, 1]
    seqs = R.unpad_sequence(x, ag.tensor(lengths), batch_first)
    t_seqs = TR.unpad_sequence(tx.clone(), torch.tensor(lengths), batch_first)
    assert tuple(x.shape) == shape  # not transposed in place
    assert [tuple(s.shape) for s in seqs] == [tuple(t.shape) for t in t_seqs]
    for s, ts in zip(seqs, t_seqs, strict=True):
        close(s, ts)
    total = sum((s * (k + 2)).sum() for k, s in enumerate(seqs))
    t_total = sum((s * (k + 2)).sum() for k, s in enumerate(t_seqs))
    await total.backward()
    t_total.backward()
    close(x.grad, tx.grad)


def test_invert_permutation() -> None:
    perm = [3, 0, 4, 1, 2]
    same_ints(R.invert_permutation(ag.tensor(perm)), TR.invert_permutation(torch.tensor(perm)))
    assert R.invert_permutation(None) is None


# ------------------------------------------------------------------------------ PackedSequence
def test_packed_sequence_conversions() -> None:
    seqs = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])]
    packed = R.pack_sequence([ag.tensor(v) for v in seqs[::-1]], enforce_sorted=False)
    t_packed = TR.pack_sequence([torch.tensor(v) for v in seqs[::-1]], enforce_sorted=False)
    assert packed.to(ag.float64) is packed and packed.double() is packed
    for name in ("float", "long", "int", "short", "char", "byte", "half"):
        ours, theirs = getattr(packed, name)(), getattr(t_packed, name)()
        assert str(ours.data.dtype) == str(theirs.data.dtype).removeprefix("torch.")
        assert ours.batch_sizes is packed.batch_sizes
        same_ints(ours.sorted_indices, theirs.sorted_indices)
    assert packed.is_cuda is False and packed.is_pinned() is False
    assert packed.cpu() is packed
    moved = packed.to("sim:0")
    assert moved.data.device.type == "sim" and moved.sorted_indices.device.type == "sim"
    assert moved.unsorted_indices.device.type == "sim" and moved.batch_sizes.device.type == "cpu"
    assert moved.cpu().data.device.type == "cpu"
    # the tuple form; unsorted_indices computed from sorted_indices
    again = R.PackedSequence((packed.data, packed.batch_sizes), sorted_indices=ag.tensor([1, 0]))
    same_ints(again.unsorted_indices, torch.tensor([1, 0]))
    assert again.data is packed.data and again._fields == t_packed._fields
    assert repr(R.PackedSequence(ag.tensor([1.0]), ag.tensor([1]))).startswith(
        "PackedSequence(data=tensor([1.]), batch_sizes=tensor([1]), sorted_indices=None"
    )


def test_packed_sequence_errors() -> None:
    same_error(lambda: R.PackedSequence(ag.ones(3)), lambda: TR.PackedSequence(torch.ones(3)))
    with pytest.raises(ValueError, match=re.escape("batch_sizes should always be on CPU. ")):
        R.PackedSequence(ag.ones(3), ag.tensor([2, 1]).to("sim:0"))


# ------------------------------------------------------------------------------ errors
X = weights((4, 3, 2), 7)
ERROR_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "unsorted": lambda lib, m: m.pack_padded_sequence(lib.tensor(X), [2, 3, 1]),
    "zero_length": lambda lib, m: m.pack_padded_sequence(lib.tensor(X), [3, 2, 0]),
    "negative_unsorted": lambda lib, m: m.pack_padded_sequence(
        lib.tensor(X), [-1, 2, 3], enforce_sorted=False
    ),
    "unsorted_before_zero": lambda lib, m: m.pack_padded_sequence(lib.tensor(X), [0, 2, 3]),
    "lengths_2d": lambda lib, m: m.pack_padded_sequence(lib.tensor(X), lib.tensor([[3, 2, 1]])),
    "batch_mismatch": lambda lib, m: m.pack_padded_sequence(lib.tensor(X), [3, 2]),
    "empty_batch": lambda lib, m: m.pack_padded_sequence(lib.zeros(4, 0, 2), []),
    "input_1d": lambda lib, m: m.pack_padded_sequence(lib.tensor(X[:, 0, 0]), [1]),
    "input_0d": lambda lib, m: m.pack_padded_sequence(lib.tensor(1.0), [1]),
    "input_0d_batch_first": lambda lib, m: m.pack_padded_sequence(lib.tensor(1.0), [1], True),
    "total_length": lambda lib, m: m.pad_packed_sequence(
        m.pack_padded_sequence(lib.tensor(X), [3, 2, 1]), total_length=2
    ),
    "pad_empty": lambda lib, m: m.pad_sequence([]),
    "pack_empty": lambda lib, m: m.pack_sequence([]),
    "pack_sequence_unsorted": lambda lib, m: m.pack_sequence([lib.ones(1), lib.ones(2)]),
    "pad_not_iterable": lambda lib, m: m.pad_sequence(3),
    "padding_side": lambda lib, m: m.pad_sequence([lib.ones(2)], padding_side="up"),
    "trailing_mismatch": lambda lib, m: m.pad_sequence([lib.ones(2, 3), lib.ones(2, 4)]),
    "fewer_dims_mismatch": lambda lib, m: m.pad_sequence([lib.ones(2, 3), lib.ones(2)]),
    "more_dims_mismatch": lambda lib, m: m.pad_sequence([lib.ones(2, 3), lib.ones(2, 3, 4)]),
    "more_dims_broadcast": lambda lib, m: m.pad_sequence([lib.ones(2, 3), lib.ones(1, 2, 3)]),
    "first_0d": lambda lib, m: m.pad_sequence([lib.tensor(1.0)]),
    "later_0d": lambda lib, m: m.pad_sequence([lib.ones(2, 3), lib.tensor(1.0)]),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(case: str) -> None:
    fn = ERROR_CASES[case]
    same_error(lambda: fn(ag, R), lambda: fn(torch, TR))


def test_lengths_off_the_cpu() -> None:
    lengths = ag.tensor([3, 2, 1]).to("sim:0")
    msg = "'lengths' argument should be a 1D CPU int64 tensor, but got 1D sim:0 Long tensor"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        R.pack_padded_sequence(ag.tensor(X), lengths)


def test_lengths_past_the_input() -> None:
    # torch reads past the input's memory here; aiograd refuses
    msg = (
        "Expected every length to be at most the input's number of steps (4), but got a length of 5"
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        R.pack_padded_sequence(ag.tensor(X), [5, 2, 1])
