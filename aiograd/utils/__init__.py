"""Utilities on top of the autograd engine, as ``torch.utils``: :mod:`aiograd.utils.checkpoint`
(activation checkpointing)."""

from . import checkpoint

__all__ = ["checkpoint"]
