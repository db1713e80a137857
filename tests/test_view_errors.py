"""Views that may not be modified in place (PyTorch's ``CreationMeta``), checked against torch.

Each scenario is one function of the library (``aiograd`` or ``torch``); it runs on both, and the
test takes torch's exception (type and words) as the expectation for aiograd's, so that a drift
on either side fails. The views: outputs of split, chunk, unbind (multi-output nodes), views made
under no_grad, views of both, and views whose base or sibling was modified in place (an error
when their ``grad_fn`` is read).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from helpers import requires_torch, torch

import aiograd as ag
import aiograd.sync

pytestmark = requires_torch

Scenario = Callable[[Any], Any]


def _base(lib: Any) -> Any:
    """A 2x3 non-leaf that requires grad."""
    return lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True) * 1


def torch_error(scenario: Scenario) -> tuple[type[BaseException], str]:
    with pytest.raises(Exception) as info:
        scenario(torch)
    return info.type, str(info.value)


def assert_same_error(scenario: Scenario, fragment: str) -> str:
    """aiograd raises exactly torch's exception; ``fragment`` must be in it (what the scenario is
    about, so that a scenario that stopped raising the right thing in torch fails too)."""
    exc, message = torch_error(scenario)
    assert fragment in message
    with pytest.raises(exc, match="^" + re.escape(message) + "$"):
        scenario(ag)
    return message


# ------------------------------------------------------------------------------ multi-output views
MULTI_OUTPUT = "This view is the output of a function that returns multiple views."

MULTI_OUTPUT_SCENARIOS: dict[str, Scenario] = {
    "split": lambda lib: _base(lib).split(1)[1].mul_(2),
    "split_with_sizes": lambda lib: _base(lib).split([1, 2], 1)[1].zero_(),
    "single_piece_split": lambda lib: _base(lib).split(2)[0].mul_(2),
    "chunk": lambda lib: _base(lib).chunk(2)[0].add_(1),
    "chunk_dim1": lambda lib: _base(lib).chunk(3, 1)[2].add_(1),
    "unbind": lambda lib: _base(lib).unbind(1)[2].zero_(),
    "setitem": lambda lib: _base(lib).split(1)[0].__setitem__((0, 0), 5.0),
    "view_of_output": lambda lib: _base(lib).split(1)[1][0].mul_(2),
    "transpose_of_output": lambda lib: _base(lib).split(1)[1].T.mul_(2),
    "reshape_of_output": lambda lib: _base(lib).split(1)[0].view(3).add_(1),
    "base_needs_no_grad": lambda lib: lib.ones(4).split(2)[0].mul_(lib.ones(2, requires_grad=True)),
}


@pytest.mark.parametrize("name", MULTI_OUTPUT_SCENARIOS)
def test_in_place_on_a_multi_output_view_raises_torchs_error(name: str) -> None:
    assert_same_error(MULTI_OUTPUT_SCENARIOS[name], MULTI_OUTPUT)


def test_the_message_names_the_forward_op_not_the_node() -> None:
    message = assert_same_error(MULTI_OUTPUT_SCENARIOS["unbind"], MULTI_OUTPUT)
    assert message.startswith("Output 2 of Unbind is a view and is being modified inplace.")


def _split_then_modify_base(lib: Any) -> Any:
    x = _base(lib)
    p, _ = x.split(1)
    x.mul_(2)
    return p.grad_fn


def _split_then_modify_sibling_view(lib: Any) -> Any:
    x = _base(lib)
    _, q = x.split(1)
    x[0].mul_(2)
    return q.grad_fn


def _split_then_modify_base_under_no_grad(lib: Any) -> Any:
    x = _base(lib)
    p, _ = x.split(1)
    with lib.no_grad():
        x.mul_(2)
    return p.grad_fn


def _view_of_output_then_modify_base(lib: Any) -> Any:
    x = _base(lib)
    r = x.split(1)[0][0]
    x.mul_(2)
    return r.grad_fn


@pytest.mark.parametrize(
    "scenario",
    [_split_then_modify_base, _split_then_modify_sibling_view, _split_then_modify_base_under_no_grad,
     _view_of_output_then_modify_base],
)
def test_reading_grad_fn_after_the_base_moved_raises(scenario: Scenario) -> None:
    message = assert_same_error(scenario, MULTI_OUTPUT)
    assert "its base or another view of its base has been modified inplace." in message


def test_multi_output_views_stay_free_without_a_gradient() -> None:
    """Nothing is checked when no gradient is involved, in both libraries."""
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0])
        p, _ = x.split(2)
        p.mul_(2)
        assert x.tolist() == [2.0, 4.0, 3.0, 4.0]
        x.mul_(2)
        assert p.grad_fn is None and p._version == 2
        y = _base(lib)
        first, _ = y.split(1)
        with lib.no_grad():
            first.mul_(2)
        assert y.tolist() == [[2.0, 4.0, 6.0], [4.0, 5.0, 6.0]]


def test_a_detached_multi_output_view_may_be_modified() -> None:
    for lib in (ag, torch):
        p = _base(lib).split(1)[0]
        assert p.detach().add_(1).tolist() == [[2.0, 3.0, 4.0]]


# ------------------------------------------------------------------------------ no_grad views
NO_GRAD = "Given that this use case is ambiguous and error-prone, it is forbidden."


def _no_grad_view(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        v = x[0]
    return v.mul_(2)


def _no_grad_view_of_a_leaf(lib: Any) -> Any:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with lib.no_grad():
        v = x[:1]
    return v.mul_(2)


def _no_grad_view_then_operand_needs_grad(lib: Any) -> Any:
    x = lib.tensor([1.0, 2.0])  # needs no grad: the view is refused all the same
    with lib.no_grad():
        v = x[:1]
    return v.mul_(lib.tensor([2.0], requires_grad=True))


def _no_grad_split(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        p, _ = x.split(1)
    return p.mul_(2)


def _no_grad_unbind(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        p, _ = x.unbind(0)
    return p.mul_(2)


def _no_grad_reshape(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        v = x.view(6)
    return v.mul_(2)


def _view_made_under_no_grad_of_a_view(lib: Any) -> Any:
    x = _base(lib)
    v = x[0]
    with lib.no_grad():
        w = v[:2]
    return w.mul_(2)


def _both_views_under_no_grad(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        w = x[0][:2]
    return w.mul_(2)


def _no_grad_view_of_a_multi_output_view(lib: Any) -> Any:
    p = _base(lib).split(1)[0]
    with lib.no_grad():
        r = p.view(3)
    return r.add_(1)


@pytest.mark.parametrize(
    "scenario",
    [_no_grad_view, _no_grad_view_of_a_leaf, _no_grad_view_then_operand_needs_grad, _no_grad_split,
     _no_grad_unbind, _no_grad_reshape, _view_made_under_no_grad_of_a_view, _both_views_under_no_grad,
     _no_grad_view_of_a_multi_output_view],
)
def test_in_place_on_a_no_grad_view_raises_torchs_error(scenario: Scenario) -> None:
    message = assert_same_error(scenario, NO_GRAD)
    assert message.startswith("A view was created in no_grad mode and is being modified inplace")


def _no_grad_view_then_base_modified(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        v = x[0]
    x.mul_(2)
    return v.grad_fn


def _no_grad_view_then_base_modified_under_no_grad(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        v = x[0]
        x.mul_(2)
        return v.grad_fn


def _no_grad_view_then_base_joins_the_graph(lib: Any) -> Any:
    x = lib.ones(3)
    with lib.no_grad():
        v = x[:2]
    x.mul_(lib.ones(3, requires_grad=True))
    return v.grad_fn


@pytest.mark.parametrize(
    "scenario",
    [_no_grad_view_then_base_modified, _no_grad_view_then_base_modified_under_no_grad,
     _no_grad_view_then_base_joins_the_graph],
)
def test_reading_a_no_grad_views_grad_fn_after_its_base_moved_raises(scenario: Scenario) -> None:
    message = assert_same_error(scenario, NO_GRAD)
    assert "its base or another view of its base has been modified inplace with grad mode enabled" in message


def test_no_grad_views_are_free_inside_no_grad_and_when_detached() -> None:
    for lib in (ag, torch):
        x = _base(lib)
        with lib.no_grad():
            v = x.T
            v.mul_(2)  # inside the block: not tracked, allowed
        assert v.detach().mul_(2).tolist() == [[4.0, 16.0], [8.0, 20.0], [12.0, 24.0]]
        y = lib.ones(3)
        with lib.no_grad():
            w = y[:2]
        w.mul_(2)  # no gradient involved
        assert y.tolist() == [2.0, 2.0, 1.0]


def test_repr_of_a_view_that_may_no_longer_be_used_says_invalid() -> None:
    reprs = []
    for lib in (ag, torch):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) * 1
        first, _ = x.split(2)
        x.mul_(2)
        reprs.append(repr(first))
    assert reprs[0] == reprs[1] == "tensor([2., 4.], grad_fn=<Invalid>)"


def _view_of_a_no_grad_view(lib: Any) -> Any:
    x = _base(lib)
    with lib.no_grad():
        v = x[0]
    return v[1:].mul_(2)  # made with grad mode on, of a view made under no_grad


def test_in_place_on_a_view_of_a_no_grad_view_has_its_own_message() -> None:
    message = assert_same_error(_view_of_a_no_grad_view, NO_GRAD)
    assert message.startswith("Output 0 of Slice is a view of a view which was created in no_grad mode")


def test_a_no_grad_view_requires_grad_but_gets_no_gradient() -> None:
    seen = []
    for lib in (ag, torch):
        leaf = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = leaf * 1
        with lib.no_grad():
            v = x[:2]
        w = v[:1]
        out = (v * 2).sum() + (w * 3).sum()
        if lib is ag:
            aiograd.sync.backward(out)
        else:
            out.backward()
        seen.append((v.requires_grad, v.is_leaf, v.grad_fn is None, w.requires_grad,
                     type(w.grad_fn).__name__, v.grad, leaf.grad))
    assert seen[0] == seen[1] == (True, True, True, True, "SliceBackward0", None, None)
