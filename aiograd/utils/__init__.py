"""Utilities on top of the autograd engine, as ``torch.utils``: :mod:`aiograd.utils.checkpoint`
(activation checkpointing) and :mod:`aiograd.utils.data` (datasets, samplers, ``DataLoader``)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
