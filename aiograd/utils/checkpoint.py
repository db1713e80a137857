"""Activation checkpointing, as ``torch.utils.checkpoint`` (its reentrant variant).

Trade compute for memory: a checkpointed part of the model keeps only its inputs during the
forward pass and recomputes its intermediate tensors when the backward reaches it::

    import aiograd
    from aiograd.utils.checkpoint import checkpoint, checkpoint_sequential

    def block(h):
        return aiograd.nn.functional.linear(h, w).relu()   # w: a parameter in the closure

    y = checkpoint(block, x)                        # x requires grad
    z = checkpoint_sequential([block] * 8, 4, x)    # 3 checkpointed segments, then 2 layers
    await z.sum().backward()                        # recomputes each segment, nested backward

- :func:`checkpoint`: ``checkpoint(function, *args, use_reentrant=None,
  preserve_rng_state=True)``.
- :func:`checkpoint_sequential`: ``checkpoint_sequential(functions, segments, input,
  use_reentrant=None, preserve_rng_state=True)``, ``functions`` being any sequence of
  one-argument callables.

Only ``use_reentrant=True`` exists (None, the default, means True); ``use_reentrant=False``
raises ``NotImplementedError``. As with PyTorch's reentrant checkpoint, the backward through a
checkpoint must be a plain ``backward()``: ``aiograd.grad()`` and ``backward(inputs=...)`` raise.
"""

from .._checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
