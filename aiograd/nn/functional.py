"""``aiograd.nn.functional``: torch.nn.functional's names (being written)."""

from __future__ import annotations

__all__: list[str] = []
