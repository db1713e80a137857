"""``functional_call``: a module run with some of its parameters and buffers swapped for the
given tensors, and put back afterwards (on an error too), as ``torch.func.functional_call``
(``torch.nn.utils.stateless``) does it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._core._tensor import Tensor
from ..nn.modules.module import Module

_MISSING: Any = object()


def _swap_tensor(module: Module, name: str, tensor: Any) -> Any:
    """Put ``tensor`` at ``module.<name>`` (``_MISSING``: remove it); return what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of aiograd.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for store in (module._parameters, module._buffers):
        if name in store:
            orig = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return orig
    orig = getattr(module, name) if hasattr(module, name) else _MISSING
    if orig is not _MISSING and orig is not None and not isinstance(orig, Tensor):
        raise TypeError(f"attribute `{name}`: {orig} is not an instance of aiograd.Tensor")
    if tensor is not _MISSING:
        object.__setattr__(module, name, tensor)
    elif orig is not _MISSING:
        object.__delattr__(module, name)
    return orig


def _swap_all(module: Module, named: Mapping[str, Any]) -> dict[str, Any]:
    """Swap every dotted name; return the originals (``_MISSING`` where there was none)."""
    orig: dict[str, Any] = {}
    for name, tensor in named.items():
        path, _, attr = name.rpartition(".")
        orig[name] = _swap_tensor(module.get_submodule(path), attr, tensor)
    return orig


def _named_tensors(module: Module) -> dict[str, Tensor]:
    named: dict[str, Tensor] = {}
    named.update(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    return named


def _untie(module: Module, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` with a value for every name tied to a given one (torch's
    ``_untie_named_tensors_map``), or ValueError for different values of one tied tensor."""
    by_tensor: dict[int, set[str]] = {}
    for name, tensor in _named_tensors(module).items():
        by_tensor.setdefault(id(tensor), set()).add(name)
    tied: dict[str, set[str]] = {n: names for names in by_tensor.values() if len(names) > 1 for n in names}
    given_tied = {n for n in given if n in tied}
    for name in given_tied:
        names = tied[name]
        if len(names & given_tied) > 1 and len({id(given[n]) for n in names if n in given}) != 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                "Consider using tie_weights=False"
            )
    untied = dict(given)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = given[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(
    module: Module, parameters_and_buffers: dict[str, Any], tie_weights: bool = False, strict: bool = False
) -> Iterator[None]:
    untied = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        valid = set(_named_tensors(module))
        missing, unexpected = sorted(valid - set(untied)), sorted(set(untied) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(
                "Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(), "\n\t".join(msgs))
            )
    orig: dict[str, Any] = {}
    try:
        for name, tensor in untied.items():  # one at a time: a failing name leaves the rest restorable
            orig.update(_swap_all(module, {name: tensor}))
        yield
    finally:
        new = _swap_all(module, dict(reversed(orig.items())))
        # a forward that reassigned a swapped tensor: its new value goes back into the caller's dict
        parameters_and_buffers.update(
            {k: new[k] for k in parameters_and_buffers if k in new and new[k] is not _MISSING}
        )


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors in
    ``parameter_and_buffer_dicts`` (a dict of dotted names, or a list/tuple of such dicts with
    no key in two): ``torch.func.functional_call``. Synchronous, like a module's forward.

    The module's own tensors are swapped out only for the call and put back afterwards, also
    when the forward raises; names not given keep the module's tensors. A forward that updates a
    given buffer in place (BatchNorm's running statistics while training) updates the given
    tensor, as in torch. ``tie_weights``: a value given for one of several names sharing a
    tensor is used for all of them (different values for tied names raise ValueError).
    ``strict``: the names must be exactly the module's parameters and buffers, else
    RuntimeError listing the unexpected and missing keys. ``args``: a tuple of positional
    arguments, or one argument."""
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(
                f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous"
            )
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
