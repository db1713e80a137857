"""aiograd raises PyTorch's exception type and message (or computes what PyTorch computes)
where it used to raise numpy's or another type: softmax kernels, mv of a 0-d input, roll without
shifts, integer/bool hardtanh, gelu's keyword-only ``approximate``, bool sign/sigmoid."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import requires_torch, torch

import aiograd as ag


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("raise", type(e).__name__, str(e))
    return ("value", str(r.dtype).replace("torch.", "").replace("bool_", "bool"), np.asarray(r.tolist()).tolist())


def _both(make):
    """``make(lib, F)`` run on torch and on aiograd; lib is the module, F nn.functional."""
    return _outcome(lambda: make(torch, torch.nn.functional)), _outcome(lambda: make(ag, ag.nn.functional))


CASES = {
    "softmax_long_lastdim": lambda m, F: m.tensor([1, 2, 3], dtype=m.int64).softmax(0),
    "softmax_long_dim0": lambda m, F: m.tensor([[1, 2], [3, 4]], dtype=m.int64).softmax(0),
    "log_softmax_long_dim0": lambda m, F: m.tensor([[1, 2], [3, 4]], dtype=m.int64).log_softmax(0),
    "log_softmax_long_0d": lambda m, F: m.tensor(2, dtype=m.int64).log_softmax(-1),
    "softmax_bool": lambda m, F: m.tensor([True, False]).softmax(0),
    "softmax_dtype_long": lambda m, F: m.softmax(m.tensor([1.0, 2.0], dtype=m.float64), -1, m.int64),
    "softmax_dim_first": lambda m, F: m.tensor([1, 2], dtype=m.int64).softmax(5),
    "softmax_long_empty": lambda m, F: m.zeros(0, 3, dtype=m.int64).log_softmax(0),
    "mv_0d": lambda m, F: m.mv(m.tensor(1, dtype=m.int64), m.tensor([1.0, 2.0], dtype=m.float32)),
    "mv_vec_0d": lambda m, F: m.mv(m.tensor([1.0, 2.0], dtype=m.float64), m.tensor(1.0, dtype=m.float64)),
    "roll_no_shifts": lambda m, F: m.roll(m.tensor([1, 2, 3], dtype=m.int64), (), ()),
    "roll_no_shifts_dim": lambda m, F: m.roll(m.tensor([1, 2, 3], dtype=m.int64), (), 0),
    "roll_flat": lambda m, F: m.roll(m.tensor([1, 2, 3], dtype=m.int64), 1, ()),
    "hardtanh_bool": lambda m, F: F.hardtanh(m.tensor([True, False]), max_val=3.0),
    "hardtanh_long": lambda m, F: F.hardtanh(m.tensor([-3, 0, 1, 5], dtype=m.int64), -1.5, 2.5),
    "hardtanh_long_inplace": lambda m, F: F.hardtanh(m.tensor([-3, 0, 1, 5], dtype=m.int64), -2.7, 3.9, inplace=True),
    "hardtanh_uint8_negative": lambda m, F: F.hardtanh(m.tensor([3, 5], dtype=m.uint8), -1.0, 2.0),
    "hardtanh_uint8": lambda m, F: F.hardtanh(m.tensor([3, 5], dtype=m.uint8), 0.0, 2.0),
    "gelu_positional": lambda m, F: F.gelu(m.tensor([1.0], dtype=m.float64), "none"),
    "gelu_bool_positional": lambda m, F: F.gelu(m.tensor([True]), "tanh"),
    "sign_bool": lambda m, F: m.sign(m.tensor([True, False])),
    "sign__bool": lambda m, F: m.tensor([True, False]).sign_(),
    "sigmoid_bool": lambda m, F: m.sigmoid(m.tensor([True, False])),
    "sigmoid__bool": lambda m, F: m.tensor([True, False]).sigmoid_(),
}


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, str(ag.get_default_dtype()).replace("aiograd.", "")))
    try:  # (the suite pins aiograd's default dtype to float64: torch's follows it here)
        want, got = _both(CASES[name])
    finally:
        torch.set_default_dtype(previous)
    if want[0] == "value" and got[0] == "value":
        assert got[1] == want[1]
        np.testing.assert_allclose(np.asarray(got[2], dtype=float), np.asarray(want[2], dtype=float), rtol=1e-6)
    else:
        assert got == want
