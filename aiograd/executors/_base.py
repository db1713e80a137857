"""The executor interface."""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._core._node import Node


class Executor(abc.ABC):
    """Runs the math of offloaded nodes.

    ``submit`` is called on the engine's event loop with a no-argument callable (the node's
    ``apply``, already bound to its inputs and to a copy of the GraphTask's context variables)
    and returns an asyncio future of the loop that completes with its result or its exception.
    ``capacity`` is the number of calls the engine keeps in flight at once.

    The engine calls ``submit_node``, which by default submits the bound call; an executor that
    runs nodes elsewhere than in this process (``DaskExecutor``) overrides it to see the node.
    If the GraphTask fails or is cancelled, the engine cancels the futures it still waits for.
    """

    #: True for an executor that runs on the loop: the engine then calls the node directly.
    inline: bool = False

    @property
    @abc.abstractmethod
    def capacity(self) -> int:
        """How many submitted calls may run at once."""

    @abc.abstractmethod
    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        """Start ``fn()`` and return a future of the running loop for its result."""

    def submit_node(self, node: Node, buffer: list[Any], call: Callable[[], Any]) -> asyncio.Future[Any]:
        """Start ``node``'s math on ``buffer`` (its incoming gradients); ``call()`` does it in
        this process, in the GraphTask's context. Called on the loop in that context."""
        return self.submit(call)

    def close(self) -> None:  # noqa: B027 - optional for executors that own nothing
        """Release what the executor owns (threads, streams). Idempotent."""
