"""Activation checkpointing, as ``torch.utils.checkpoint``.

Trade compute for memory: a checkpointed part of the model keeps only its inputs during the
forward pass and recomputes its intermediate tensors when the backward needs them::

    import aiograd
    from aiograd.utils.checkpoint import checkpoint, checkpoint_sequential

    def block(h):
        return aiograd.nn.functional.linear(h, w).relu()   # w: a parameter in the closure

    y = checkpoint(block, x, use_reentrant=False)                # any backward, grad() too
    z = checkpoint_sequential([block] * 8, 4, x, use_reentrant=False)
    await z.sum().backward()

- :func:`checkpoint`: ``checkpoint(function, *args, use_reentrant=None, context_fn=...,
  determinism_check="default", debug=False, early_stop=True, preserve_rng_state=True,
  **kwargs)``.
- :func:`checkpoint_sequential`: ``checkpoint_sequential(functions, segments, input,
  use_reentrant=None, preserve_rng_state=True)``, ``functions`` being any sequence of
  one-argument callables.
- :class:`CheckpointError`, raised when a non-reentrant recomputation does not match the
  forward; :func:`set_checkpoint_debug_enabled`, :func:`set_checkpoint_early_stop`,
  :func:`noop_context_fn` (the default ``context_fn``) and :class:`CheckpointFunction` (the
  reentrant variant's Function).

``use_reentrant=False`` is built on saved-tensor hooks (``aiograd.graph``) and works with
``grad()`` and ``backward(inputs=...)``; ``use_reentrant=True`` runs a nested backward and works
with a plain ``backward()`` only. Leaving ``use_reentrant`` out warns and means True, as in
PyTorch 2.13.
"""

# The names, and the one list of them, are _api/_checkpoint.py's.
from .._api._checkpoint import *  # noqa: F403
from .._api._checkpoint import __all__ as __all__
