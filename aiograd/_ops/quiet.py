"""numpy's floating-point warnings, silenced for aiograd's own math as PyTorch is silent.

PyTorch computes ``log(0)``, ``1 / 0``, ``sqrt(-1)``, ``exp(1000)`` and ``inf - inf`` without a
word; numpy warns ("divide by zero encountered in log"), and under ``-W error`` the warning is an
exception that torch would not raise. numpy's error state (``np.seterr``) is the user's: aiograd
never changes it. Two ways out, by cost:

- ``quietly(fn, *args)`` runs ``fn`` (a numpy function) inside a ``contextvars.Context`` in
  which numpy's error state ignores everything (numpy keeps that state in a context variable).
  Entering a context costs about 0.05 µs, against ``np.errstate``'s 1 µs: used by the
  ops that give such values at ordinary inputs (log, sqrt, pow, div, exp, the norms, softmax,
  the losses), so these never warn.
- The hottest ops (add, sub, mul, neg, tanh, relu, sum, matmul and their backward formulas) cannot
  afford even that: they compute as they are and catch ``RuntimeWarning``, which numpy raises only
  where the user's filters made its warning an error, then compute again quietly. Zero cost on
  the common path; where the filters merely show warnings, numpy's may still be shown for these
  (docs/gradients-at-edges.md).

The context holds nothing but numpy's state: only pure numpy calls run inside it (aiograd's own
context variables, grad mode for one, are read outside: an op run inside it would see grad mode
on during a first-order backward and record a graph). A backward formula written with aiograd
ops that meets such values goes through ``quietly_ops`` (``np.errstate``, in the caller's context).
"""

from __future__ import annotations

import contextvars
from typing import Any

import numpy as np

__all__ = ["quietly", "quietly1", "quietly2", "quietly_ops"]


def _quiet_context() -> contextvars.Context:
    context = contextvars.Context()
    context.run(np.seterr, all="ignore")  # (sets numpy's context variable in it only)
    return context


#: The context in which numpy ignores every floating-point error. One for the process: a
#: context is entered by one thread at a time, so a thread that finds it entered (by another
#: thread, whose ufunc released the GIL, or by code run from inside ``fn``: a finalizer, say)
#: takes the slower ``np.errstate``, which nests and is per thread.
_QUIET = _quiet_context()


def _elsewhere(error: RuntimeError, fn: Any, args: tuple[Any, ...]) -> Any:
    """``fn(*args)`` quietly when ``_QUIET`` is entered already (by another thread, or by code
    run from inside ``fn``): ``np.errstate``, which nests and is per thread. Any other
    RuntimeError is ``fn``'s own and is raised again."""
    if "cannot enter context" not in str(error):
        raise error
    with np.errstate(all="ignore"):
        return fn(*args)


def quietly(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with numpy's floating-point warnings off (the user's state kept)."""
    try:
        return _QUIET.run(fn, *args)
    except RuntimeError as e:
        return _elsewhere(e, fn, args)


# ``quietly`` for one and two arguments, called by the ops on the hot path: a ``*args``
# signature costs more than entering the context (measured with timeit on the project's 2-core
# machine: 534 ns a call through ``quietly`` against 364 ns through ``quietly1``, numpy's ``log``
# of 16 floats taking 303 ns alone).
def quietly1(fn: Any, x: Any) -> Any:
    """``fn(x)`` with numpy's floating-point warnings off (the user's state kept)."""
    try:
        return _QUIET.run(fn, x)
    except RuntimeError as e:
        return _elsewhere(e, fn, (x,))


def quietly2(fn: Any, x: Any, y: Any) -> Any:
    """``fn(x, y)`` with numpy's floating-point warnings off (the user's state kept)."""
    try:
        return _QUIET.run(fn, x, y)
    except RuntimeError as e:
        return _elsewhere(e, fn, (x, y))


def quietly_ops(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, which may call aiograd ops, with numpy's floating-point warnings off: in the
    caller's own context (grad mode and the running GraphTask hold inside), through
    ``np.errstate`` (about 1 µs), not ``quietly``'s numpy-only context."""
    with np.errstate(all="ignore"):
        return fn(*args)
