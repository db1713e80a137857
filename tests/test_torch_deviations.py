"""The documented deviations from torch (docs/torch-parity.md, "Deviations"): one example each.

Each test asserts what aiograd does and, where torch is installed, what torch 2.13 does, so that a
deviation that goes away on either side (aiograd changed, or torch fixed its bug) fails here and
its entry in the docs and in ``tests/fuzz/known.py`` gets revisited.
"""

from __future__ import annotations

import numpy as np
import pytest

import aiograd as ag
import aiograd.nn.functional as F
from aiograd.sync import grad

try:
    import torch
except ImportError:  # pragma: no cover - the oracle extra is not installed
    torch = None  # type: ignore[assignment]

pytestmark = pytest.mark.real_default_dtype  # (dtypes are explicit here)

needs_torch = pytest.mark.skipif(torch is None, reason="torch (the oracle extra) is not installed")


def test_an_integer_tensor_never_requires_grad_after_an_in_place_op() -> None:
    """#integer-tensors-stay-out-of-autograd"""
    y = ag.tensor([1.5, 2.0, 3.0], dtype=ag.float64, requires_grad=True)
    x = ag.tensor([1, 2, 3])
    x.gt_(y)
    assert x.tolist() == [0, 0, 0] and not x.requires_grad and x.grad_fn is None
    z = ag.tensor([1, 2, 3])
    z.fill_(ag.tensor(2.5, dtype=ag.float64, requires_grad=True))
    assert z.tolist() == [2, 2, 2] and not z.requires_grad
    if torch is not None:
        ty = torch.tensor([1.5, 2.0, 3.0], requires_grad=True)
        tx = torch.tensor([1, 2, 3])
        tx.gt_(ty)
        assert tx.requires_grad and type(tx.grad_fn).__name__ == "GtBackward1"
        with pytest.raises(RuntimeError, match="INTERNAL ASSERT FAILED"):
            torch.autograd.grad([tx], [ty], [torch.ones(3, dtype=torch.int64)])


def test_batch_norm_with_a_strided_weight_gets_the_gradient_of_its_contiguous_copy() -> None:
    """#batch_norm-with-non-contiguous-parameters"""
    x = np.array([[2.95, 0.02, 1.76], [3.6, 1.33, -2.62]])
    w = np.array([2.03, -1.04, 0.61, -1.85, -2.02])
    g = np.array([[-0.15, 0.45, -2.14], [1.8, -0.83, 0.19]])

    def ours(contiguous: bool) -> np.ndarray:
        xs = ag.tensor(x, requires_grad=True)
        ws = ag.tensor(w, requires_grad=True)[::2]
        y = F.batch_norm(xs, None, None, ws.contiguous() if contiguous else ws, None, True, eps=0.1)
        return grad(y, [xs], ag.tensor(g))[0].numpy()

    np.testing.assert_allclose(ours(False), ours(True), rtol=1e-12)
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        tw = torch.tensor(w, requires_grad=True)[::2]
        (theirs,) = torch.autograd.grad(
            torch.nn.functional.batch_norm(tx, None, None, tw, None, True, eps=0.1), [tx], torch.tensor(g))
        np.testing.assert_allclose(ours(True), torch.autograd.grad(
            torch.nn.functional.batch_norm(tx, None, None, tw.contiguous(), None, True, eps=0.1), [tx],
            torch.tensor(g))[0].numpy(), rtol=1e-10)
        assert not np.allclose(theirs.numpy(), ours(True))  # torch's reads the wrong elements


def test_batch_norm_refuses_running_stats_whose_elements_share_memory() -> None:
    """#batch_norm-with-non-contiguous-parameters"""
    stats = ag.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        F.batch_norm(ag.ones(4, 3), stats, ag.ones(3), training=True)


@needs_torch
def test_group_norm_differentiates_the_bias_alone() -> None:
    """#group_norm-gradient-of-the-bias-alone"""
    x = np.array([[[1.68], [-1.7]]])
    b = ag.tensor([0.97, 0.26], dtype=ag.float64, requires_grad=True)
    (gb,) = grad(F.group_norm(ag.tensor(x), 1, None, b, 0.1), [b], ag.tensor([[[-0.08], [-0.36]]], dtype=ag.float64))
    np.testing.assert_allclose(gb.numpy(), [-0.08, -0.36])
    tb = torch.tensor([0.97, 0.26], dtype=torch.float64, requires_grad=True)
    y = torch.nn.functional.group_norm(torch.tensor(x), 1, None, tb, 0.1)
    with pytest.raises(RuntimeError, match="tensor does not have a device"):
        torch.autograd.grad(y, [tb], torch.tensor([[[-0.08], [-0.36]]], dtype=torch.float64))


def test_logsumexp_over_no_dims_reduces_every_dim() -> None:
    """#logsumexp-over-no-dims"""
    x = ag.tensor([-3.18, 1.0])
    np.testing.assert_allclose(ag.logsumexp(x, ()).item(), np.logaddexp(-3.18, 1.0))
    if torch is not None:
        with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the broadcast shape \[1\]"):
            torch.logsumexp(torch.tensor([-3.18]), ())


def test_zeroing_an_expanded_view_is_differentiable() -> None:
    """#writing-into-an-expanded-view"""
    leaf = ag.tensor([[0.5]], requires_grad=True)
    base = leaf.clone()
    y = base.expand(3, 4).zero_()
    (g,) = grad([y, base], [leaf], [ag.ones(3, 4), ag.ones(1, 1)])
    assert g.tolist() == [[0.0]]
    if torch is not None:
        tleaf = torch.tensor([[0.5]], requires_grad=True)
        tbase = tleaf.clone()
        ty = tbase.expand(3, 4).zero_()
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            torch.autograd.grad([ty, tbase], [tleaf], [torch.ones(3, 4), torch.ones(1, 1)])


def test_svd_of_a_matrix_with_an_infinity_is_nan() -> None:
    """#svd-of-a-non-finite-matrix"""
    u, s, vh = ag.linalg.svd(ag.tensor([[1.0, float("inf")], [0.0, 1.0]]))
    assert np.isnan(u.numpy()).all() and np.isnan(s.numpy()).all() and np.isnan(vh.numpy()).all()
    with pytest.raises(ag.linalg.LinAlgError):
        ag.linalg.svd(ag.tensor([[1.0, float("nan")], [0.0, 1.0]]))


def test_a_result_torch_leaves_to_the_cpu_is_the_same_at_every_length() -> None:
    """#results-that-depend-on-the-cpu: torch's vector lanes and scalar tail disagree on
    ``fmod`` by a subnormal divisor; aiograd's result does not depend on where an element sits."""
    for n in (1, 3, 10, 33):
        r = ag.fmod(ag.full((n,), 0.11, dtype=ag.float64), 5e-324).numpy()
        np.testing.assert_array_equal(r, np.fmod(np.full(n, 0.11), 5e-324))


def test_every_deviation_here_names_a_section_of_the_docs() -> None:
    import pathlib
    import re

    from fuzz.known import KNOWN

    docs = (pathlib.Path(__file__).parents[1] / "docs" / "torch-parity.md").read_text()
    anchors = {re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-")
               for h in re.findall(r"^### (.+)$", docs, flags=re.M)}
    here = {m for f in globals().values() if callable(f) and getattr(f, "__doc__", None)
            for m in re.findall(r"#([\w-]+)", f.__doc__ or "")}
    assert here <= anchors, here - anchors
    for key, reason in KNOWN.items():
        m = re.match(r"deviation #([\w-]+): ", reason)
        assert m, f"known.py: {key} is not a documented deviation: {reason!r}"
        assert m.group(1) in anchors, f"known.py: {key} cites #{m.group(1)}, not a section of docs/torch-parity.md"


def test_type_strings_name_aiograd() -> None:
    """#type-strings-name-aiograd"""
    x = ag.tensor([1.0], dtype=ag.float32)
    assert x.type() == "aiograd.FloatTensor"
    assert x.type("torch.DoubleTensor").dtype == ag.float64
    if torch is not None:
        assert torch.tensor([1.0]).type() == "torch.FloatTensor"
