"""``torch.backends.cudnn``'s flags and queries. aiograd uses no cuDNN: the flags are plain
module attributes a script may set and read back, and change nothing; ``is_available()`` is
False and ``version()`` None, as in torch's CPU build."""

from __future__ import annotations

__all__ = ["allow_tf32", "benchmark", "benchmark_limit", "deterministic", "enabled", "is_available", "version"]

#: torch's defaults; setting them changes nothing in aiograd.
enabled: bool = True
benchmark: bool = False
benchmark_limit: int | None = None
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """False: aiograd uses no cuDNN."""
    return False


def version() -> int | None:
    """None: aiograd uses no cuDNN (torch's answer where cuDNN is unavailable)."""
    return None
