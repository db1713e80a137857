"""Devices. Only the CPU exists for now; the executors issue adds ``sim:N`` and ``cuda:N``."""

from __future__ import annotations

__all__ = ["device"]


class device:
    """A device name such as ``device("cpu")``; compares equal to its string form."""

    __slots__ = ("type", "index")

    def __init__(self, spec: str | device, index: int | None = None) -> None:
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        kind, _, idx = str(spec).partition(":")
        if kind != "cpu":
            raise RuntimeError(f"Expected one of cpu device type at start of device string: {spec}")
        self.type = kind
        self.index = int(idx) if idx else index

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else (
            f"device(type='{self.type}', index={self.index})"
        )

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")
