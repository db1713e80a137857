"""``aiograd.Size`` against ``torch.Size``: what ``Tensor.shape`` and ``Tensor.size()`` return,
how it prints, compares, slices, concatenates, counts and pickles."""

from __future__ import annotations

import pickle

import pytest

import aiograd as ag

torch = pytest.importorskip("torch")


def test_shape_and_size_are_sizes_as_torchs() -> None:
    t, tt = ag.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    for ours, theirs in [(t.shape, tt.shape), (t.size(), tt.size())]:
        assert isinstance(ours, ag.Size) and isinstance(ours, tuple)
        assert repr(ours) == repr(theirs).replace("torch.", "aiograd.") == "aiograd.Size([2, 3, 4])"
        assert str(ours) == str(theirs).replace("torch.", "aiograd.")
        assert ours == theirs == (2, 3, 4) and hash(ours) == hash((2, 3, 4))
    assert t.size(1) == 3 and type(t.size(1)) is int
    assert repr(ag.tensor(1.0).shape) == repr(torch.tensor(1.0).shape).replace("torch.", "aiograd.")


def test_size_operations_are_torchs() -> None:
    ours, theirs = ag.Size([2, 3, 4]), torch.Size([2, 3, 4])
    assert ours.numel() == theirs.numel() == 24 and ag.Size([]).numel() == torch.Size([]).numel() == 1
    assert repr(ours[1:]) == repr(theirs[1:]).replace("torch.", "aiograd.")
    assert type(ours[1:]) is ag.Size and ours[-1] == theirs[-1] == 4
    assert repr(ours + (5,)) == repr(theirs + (5,)).replace("torch.", "aiograd.")
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert pickle.loads(pickle.dumps(ours)) == ours and type(pickle.loads(pickle.dumps(ours))) is ag.Size
    assert ag.zeros(ours).shape == ours  # (a Size is a shape the factories take)
    assert ag.zeros(2, 3).view(ag.Size([3, 2])).shape == (3, 2)
