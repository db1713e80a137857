"""numpy's floating-point warnings, silenced for aiograd's own math as PyTorch is silent.

PyTorch computes ``log(0)``, ``1 / 0``, ``sqrt(-1)``, ``exp(1000)`` and ``inf - inf`` without a
word; numpy warns ("divide by zero encountered in log"), and under ``-W error`` the warning is an
exception that torch would not raise. numpy's error state (``np.seterr``) is the user's: aiograd
never changes it. Two ways out, by cost:

- ``quietly(fn, *args)`` runs ``fn`` (a numpy function) inside a ``contextvars.Context`` of this
  thread in which numpy's error state ignores everything (numpy keeps that state in a context
  variable). Entering a context costs about 0.2 µs, a fifth of ``np.errstate``'s 1 µs: used by the
  ops that give such values at ordinary inputs (log, sqrt, pow, div, exp, the norms, softmax,
  the losses), so these never warn.
- The hottest ops (add, sub, mul, neg, tanh, relu, sum, matmul and their backward formulas) cannot
  afford even that: they compute as they are and catch ``RuntimeWarning``, which numpy raises only
  where the user's filters made its warning an error, then compute again quietly. Zero cost on
  the common path; where the filters merely show warnings, numpy's may still be shown for these
  (docs/gradients-at-edges.md).

The context holds nothing but numpy's state: only pure numpy calls run inside it (aiograd's own
context variables, grad mode for one, are read outside).
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import numpy as np

__all__ = ["quietly"]


class _Quiet(threading.local):
    """Per thread (a context may be entered by one thread at a time): a context in which numpy
    ignores every floating-point error."""

    def __init__(self) -> None:
        self.context = contextvars.Context()
        self.context.run(np.seterr, all="ignore")  # (sets numpy's context variable in it only)


_QUIET = _Quiet()


def quietly(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with numpy's floating-point warnings off (the user's state kept)."""
    context = _QUIET.context
    try:
        return context.run(fn, *args, **kwargs)
    except RuntimeError as e:
        # Entered already, on this thread (code run from inside ``fn``: a finalizer, say)?
        # Then the slower errstate, which nests.
        if "cannot enter context" not in str(e):
            raise
    with np.errstate(all="ignore"):
        return fn(*args, **kwargs)
