"""``torch.backends.mps``: aiograd has no MPS (Apple GPU) device, so both queries say False."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: aiograd has no MPS device."""
    return False


def is_built() -> bool:
    """False: aiograd has no MPS device."""
    return False
