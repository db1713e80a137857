"""Simulated CUDA streams and events for the ``simcuda`` device type: CUDA's ordering rules on a
CPU, so the engine's stream logic is tested where there is no GPU.

A :class:`Stream` is a queue of work served in launch order by a background thread of its own
(started when work is queued, gone when the queue is empty). What the host launches on it:

- work (a node's backward, an accumulation): the arrays it writes are *stamped* with the stream
  and the work's position on it; the position completes when the thread reaches it;
- an event (:meth:`Stream.record`): completes when the thread reaches it, later, and then runs
  the callbacks waiting for it (``call_when_done``);
- a wait for another stream's event (:meth:`Stream.wait`): the thread blocks there until the
  event completes, and the stream has *seen* everything the event marks;
- a pause (:meth:`Stream.pause`): the thread blocks until the test releases it, so a test can
  keep GPU work pending for as long as it needs, without sleeping.

The numbers themselves are computed on the host when the work is launched (numpy has no
deferred arrays): what the double simulates is *when work counts as done and who may see it*.
A read that CUDA would race on is caught deterministically instead of by a wrong number: work
on stream C that reads an array stamped by stream P at position p raises :class:`StreamRaceError`
unless C is P or C waited for an event of P recorded at p or later (directly or through other
streams' events), as PyTorch's CUDA sanitizer (``TORCH_CUDA_SANITIZER``) reports unsynchronized
accesses. A host read (``to_host``) waits for the stamped work, as ``cupy.asnumpy`` synchronizes.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = [
    "Event", "Pause", "Stream", "StreamRaceError", "check_and_stamp", "current_stream",
    "default_stream", "scope", "stamp_of", "synchronize", "wait_until_written",
]


class StreamRaceError(RuntimeError):
    """Work on one simulated stream read an array that another stream wrote, without waiting
    for that write: on a GPU, a data race."""


_names = itertools.count()
#: How long an idle stream's thread waits for more work before it ends.
_LINGER_S = 0.05


class Event:
    """A point in a stream's work: done once the stream's thread has run everything queued
    before it (``cupy.cuda.Event`` recorded on that stream)."""

    def __init__(self, stream: Stream, position: int, clock: dict[Stream, int]) -> None:
        self.stream = stream
        #: Work items launched on ``stream`` before the event.
        self.position = position
        #: What the stream had seen when the event was recorded: whoever waits for the event
        #: has seen it too.
        self.clock = clock
        self._done = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        """Whether the work the event marks has completed (``cupy.cuda.Event.done``)."""
        return self._done.is_set()

    def synchronize(self) -> None:
        """Block until the event is done."""
        self._done.wait()

    def call_when_done(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` once the event is done: at once if it is, else on the stream's
        thread when it completes."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def _complete(self) -> None:
        with self._lock:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


class Pause:
    """A hold on a stream's thread (``Stream.pause``): the work queued after it waits until
    ``release()``. A context manager that releases on exit."""

    def __init__(self) -> None:
        self._gate = threading.Event()

    def release(self) -> None:
        self._gate.set()

    def __enter__(self) -> Pause:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Stream:
    """A simulated CUDA stream of device ``simcuda:<device_index>``: work runs in launch order on
    a background thread; hashable, equal only to itself."""

    def __init__(self, device_index: int = 0, *, name: str | None = None) -> None:
        self.device_index = device_index
        self.name = name or f"stream{next(_names)}"
        #: Work items launched so far (the host's view); positions count from 1.
        self.launched = 0
        #: For each other stream, the latest position of it this stream has waited for.
        self.seen: dict[Stream, int] = {}
        self._completed = 0
        self._items: deque[tuple[str, Any]] = deque()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<simcuda Stream {self.name} on simcuda:{self.device_index}>"

    # ------------------------------------------------------------------- what the host launches
    def launch(self) -> int:
        """Queue one work item; returns its position (done when the thread reaches it)."""
        self.launched += 1
        self._push(("work", self.launched))
        return self.launched

    def record(self) -> Event:
        """An event after the work queued so far."""
        event = Event(self, self.launched, {**self.seen, self: self.launched})
        self._push(("event", event))
        return event

    def wait(self, event: Event) -> None:
        """Work queued from now on starts after ``event`` is done; the host does not wait."""
        for stream, position in event.clock.items():
            if stream is not self and self.seen.get(stream, 0) < position:
                self.seen[stream] = position
        self._push(("wait", event))

    def pause(self) -> Pause:
        """Hold this stream's thread here until the returned Pause is released."""
        pause = Pause()
        self._push(("pause", pause))
        return pause

    def synchronize(self) -> None:
        """Block until everything queued so far has run."""
        self.record().synchronize()

    def has_seen(self, other: Stream, position: int) -> bool:
        """Whether work queued on this stream now runs after ``other``'s work up to
        ``position`` (same stream, or waited for)."""
        return other is self or self.seen.get(other, 0) >= position

    def completed(self, position: int) -> bool:
        """Whether the work item at ``position`` has run."""
        return self._completed >= position

    # ------------------------------------------------------------------- the stream's thread
    def _push(self, item: tuple[str, Any]) -> None:
        with self._lock:
            self._items.append(item)
            self._lock.notify_all()  # (a lingering thread)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=f"simcuda {self.name}", daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        while True:
            with self._lock:
                if not self._items:
                    # Idle: linger briefly (starting a thread costs more than a small node),
                    # then end; the next push starts another.
                    self._lock.wait(_LINGER_S)
                    if not self._items:
                        self._thread = None
                        return
                kind, value = self._items.popleft()
            if kind == "work":
                with self._lock:
                    self._completed = value
                    self._lock.notify_all()
            elif kind == "event":
                value._complete()
            elif kind == "wait":
                value.synchronize()
            else:  # a pause
                value._gate.wait()


# ----------------------------------------------------------------------- current streams
_default: dict[int, Stream] = {}
_default_lock = threading.Lock()


def default_stream(index: int) -> Stream:
    """Device ``index``'s default stream (made on first use)."""
    stream = _default.get(index)
    if stream is None:
        with _default_lock:
            stream = _default.setdefault(index, Stream(index, name=f"default{index}"))
    return stream


class _Current(threading.local):
    streams: dict[int, Stream] | None = None


_current = _Current()


def current_stream(index: int) -> Stream:
    """The stream current on this thread for device ``index`` (its default stream unless a
    ``scope`` says otherwise), as ``cupy.cuda.get_current_stream``."""
    streams = _current.streams
    stream = streams.get(index) if streams else None
    return stream if stream is not None else default_stream(index)


@contextlib.contextmanager
def scope(stream: Stream) -> Iterator[Stream]:
    """``stream`` is current on this thread for its device inside the block."""
    before = _current.streams
    _current.streams = {**before, stream.device_index: stream} if before else {stream.device_index: stream}
    try:
        yield stream
    finally:
        _current.streams = before


def synchronize(index: int) -> None:
    """Block until the work of every stream of device ``index`` that has been stamped, and the
    default stream's, is done."""
    streams = {default_stream(index), *(s for s, _ in _stamps.values() if s.device_index == index)}
    for stream in streams:
        stream.synchronize()


# ----------------------------------------------------------------------- the race checker
#: id(array) -> (stream, position) of the work that wrote it last; entries go with their array.
_stamps: dict[int, tuple[Stream, int]] = {}


_refs: dict[int, weakref.ref[Any]] = {}


def stamp_of(array: Any) -> tuple[Stream, int] | None:
    """The (stream, position) that wrote ``array`` last, or None (written by the host)."""
    return _stamps.get(id(array))


def check_and_stamp(stream: Stream, reads: Iterable[Any], writes: Iterable[Any]) -> int:
    """Launch one work item on ``stream`` that reads ``reads`` and writes ``writes``: raise
    StreamRaceError for a read of another stream's write the stream has not waited for, then
    stamp the writes with the new position."""
    for array in reads:
        stamp = _stamps.get(id(array))
        if stamp is not None:
            writer, position = stamp
            if not stream.has_seen(writer, position):
                raise StreamRaceError(
                    f"unsynchronized read on simcuda: {stream!r} reads an array written on "
                    f"{writer!r} (its work item {position}) without waiting for an event recorded "
                    f"after that write (it has waited up to item {stream.seen.get(writer, 0)})"
                )
    position = stream.launch()
    for array in writes:
        key = id(array)
        _stamps[key] = (stream, position)
        if key not in _refs:
            _refs[key] = weakref.ref(array, _drop(key))
    return position


def _drop(key: int) -> Callable[[Any], None]:
    def drop(_ref: Any) -> None:
        _stamps.pop(key, None)
        _refs.pop(key, None)

    return drop


def wait_until_written(array: Any) -> None:
    """Block until the work that wrote ``array`` is done (a host read)."""
    stamp = _stamps.get(id(array))
    if stamp is not None:
        stream, position = stamp
        with stream._lock:
            stream._lock.wait_for(lambda: stream.completed(position))
