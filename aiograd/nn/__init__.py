"""Neural-network helpers: ``aiograd.nn.functional``."""

from . import functional

__all__ = ["functional"]
