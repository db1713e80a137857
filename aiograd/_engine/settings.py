"""Process-wide engine settings: deterministic accumulation and the shuffle debug mode."""

from __future__ import annotations

__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_shuffle_seed",
    "set_shuffle_seed",
    "use_deterministic_algorithms",
]

#: Read by the engine as each backward starts (set with use_deterministic_algorithms).
deterministic = False
_shuffle_seed: int | None = None


def use_deterministic_algorithms(mode: bool) -> None:
    """With ``True``, gradients are bitwise identical to a serial run whatever order offloaded
    nodes finish in (or the shuffle debug mode runs ready nodes in): each InputBuffer slot adds
    its contributions in a fixed order (that of the producing nodes' sequence numbers) once all
    have arrived. Read when a backward starts."""
    global deterministic
    deterministic = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True)``."""
    return deterministic


def set_shuffle_seed(seed: int | None) -> None:
    """The shuffle debug mode (trio's idea): engines created from now on (one per event loop,
    made on the loop's first backward) run ready NodeTasks of equal priority in a random order
    drawn from ``random.Random(seed)`` instead of the order they became ready in. PyTorch's
    engine promises no order among them (leaves ready at once, results of offloaded nodes,
    concurrent backward calls on shared nodes), so code whose results change under shuffling
    depends on an accident; with ``use_deterministic_algorithms(True)`` the gradients must stay
    bitwise equal. None (the default) turns it off. ``Engine(shuffle_seed=...)`` sets it for one
    engine."""
    global _shuffle_seed
    if seed is not None and not isinstance(seed, int):
        raise TypeError(f"shuffle seed must be an int or None, got {type(seed).__name__}")
    _shuffle_seed = seed


def get_shuffle_seed() -> int | None:
    """The seed new engines shuffle with (``set_shuffle_seed``), or None."""
    return _shuffle_seed
