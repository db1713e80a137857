"""How deep reentrant backward calls nest on one Python stack before moving to a fresh task.

A backward awaited inside a node (a custom Function's backward, a hook, a callback) is driven by
the awaiting code itself, nested in the drive that runs the node. Each level costs a fixed number
of Python frames (the drive, the node's evaluation, the Function, the user's backward, the
``backward``/``grad`` entry and the engine's ``execute``), counted by
``tests/test_reentrant.py::test_frames_per_level_match_the_default_limit``. The default limit keeps that nesting within
half of Python's default recursion limit (1000), which leaves the other half for the code that
awaits the outermost backward and for user code between the levels. Past the limit, or whenever
the stack is already within ``STACK_RESERVE`` frames of the interpreter's recursion limit
(whatever it was set to), the child GraphTask is driven by a fresh asyncio task, whose stack
starts empty; the parent awaits it without nesting. So no depth raises RecursionError.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .completion import abandon
from .logs import engine_log

if TYPE_CHECKING:
    from .._core._tensor import Tensor
    from .engine import Engine
    from .graph_task import GraphTask

__all__ = ["DEFAULT_MAX_REENTRANT_DEPTH", "run_reentrant", "stack_has_room"]

#: Python frames one nested level adds to the stack (a Function whose backward awaits
#: ``backward()``): 9 measured, one more when the nested drive runs a node of another
#: GraphTask than its own (``context.await_as``). Checked by the test named above.
FRAMES_PER_LEVEL = 10

#: Nested drives allowed on one stack: half the default recursion limit's worth of levels.
DEFAULT_MAX_REENTRANT_DEPTH = 500 // FRAMES_PER_LEVEL

#: Frames that must stay free below the recursion limit to nest one more level: a level, plus
#: room for the user's code inside it.
STACK_RESERVE = 200


def stack_has_room(reserve: int = STACK_RESERVE) -> bool:
    """True when the current stack is more than ``reserve`` frames below the recursion limit.

    ``sys._getframe(n)`` walks ``n`` frames in C (about a microsecond for a few hundred) and
    raises ValueError when the stack is shallower, which is the answer wanted here.
    """
    depth = sys.getrecursionlimit() - reserve
    if depth <= 0:
        return False
    try:
        sys._getframe(depth)
    except ValueError:
        return True
    return False


async def run_reentrant(engine: Engine, parent: GraphTask, child: GraphTask, nesting: int) -> list[Tensor | None]:
    """Drive ``child``, a backward called while ``parent`` runs a node: nested in the current
    drive (``nesting`` drives deep already), or, past the engine's depth limit or near the
    recursion limit, in a fresh worker task that the parent's node awaits. The child is listed
    in ``parent.children`` meanwhile, so that the parent's failure stops it."""
    children = parent.children
    if children is None:
        children = parent.children = []
    children.append(child)
    if child.reentrant_depth > engine.deepest_reentrant_depth:
        engine.deepest_reentrant_depth = child.reentrant_depth
    try:
        if nesting < engine.max_reentrant_depth and stack_has_room():
            return await engine.drive(child, nesting + 1)
        engine.reentrant_workers_started += 1
        engine_log.debug(
            "reentrant backward at depth %d moved to a fresh worker task (%d nested drives on this "
            "stack, max_reentrant_depth %d, or the stack is near the recursion limit)",
            child.reentrant_depth, nesting, engine.max_reentrant_depth,
        )
        # A task starts on an empty stack; awaiting it means cancelling the parent's node
        # cancels the worker, whose drive then cancels the child.
        worker = engine.loop.create_task(
            engine.drive(child, 0), name=f"aiograd reentrant worker (depth {child.reentrant_depth})"
        )
        try:
            return await worker
        except BaseException:
            if not child.future.done():
                # The worker was cancelled before its first step (the parent's node cancelled
                # in the turn that made it): its drive, which ends the child, never ran.
                abandon(child)
                child.future.exception()  # (retrieved: nobody else awaits it)
                if child.watch is not None:
                    child.watch.ended(child)
            raise
    finally:
        children.remove(child)
