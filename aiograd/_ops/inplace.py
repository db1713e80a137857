"""In-place ops (being written)."""

from __future__ import annotations

from typing import Any

__all__: list[str] = []

TENSOR_METHODS: dict[str, Any] = {}
