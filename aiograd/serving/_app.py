"""The gradient service as an ``aiohttp.web`` application: attribution endpoints batched through
``aiograd.serving.batch``, health, metrics and statistics, every wait bounded.

``make_app`` builds the application for a ``ServedModel``; ``make_runner`` the ``AppRunner`` that
serves it with the connection-level bounds of ``_connections.py`` (idle and header-read timeout,
a cap on connections, HTTP parser errors answered as JSON); ``serve`` runs it in this process until SIGTERM or Ctrl-C
and drains. ``run_workers`` (``_workers.py``) runs it in several supervised processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
import re
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from .._engine.engine import get_engine
from ._attributions import Attribution, AttributionRequest, attribute, expanded_rows
from ._batcher import Overloaded, batch
from ._connections import Runner
from ._metrics import Metrics
from ._model import ServedModel
from ._protocol import ENDPOINTS, BadRequest, Limits, answer, parse, shown

__all__ = ["ServerConfig", "make_app", "make_runner", "serve"]

log = logging.getLogger("aiograd.serving")


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """How the service bounds and batches its work; every wait has a default bound.

    - ``limits``: what one request may ask for (``Limits``); ``max_body_bytes``: its body.
    - Batching (``aiograd.serving.batch``): ``batching`` (False computes each request alone),
      ``max_batch_size`` requests per batch, ``batch_wait_s`` that the oldest queued request may
      wait for a fuller batch while none runs, ``max_queue_size`` queued requests past which a
      request is answered 503 at once.
    - Time: ``request_timeout_s`` from a request's arrival to its answer (504 past it, and it
      leaves the batch queue); ``body_timeout_s`` for its body to arrive (408, connection
      closed); ``write_timeout_s`` for the client to take an answer too large to be written at
      once (over 64 KiB; past it the connection is dropped); ``idle_timeout_s`` for a connection to send a complete request head, from its
      opening or its last answer (aiohttp's keep-alive timer, which partial data does not
      reset: the keep-alive and header-read timeout in one); ``drain_s`` that a stopping server
      gives the requests in flight; ``stall_s``: ``/health/ready`` turns false when requests
      are queued and no batch has started or finished for that long.
    - ``max_connections`` open connections per process (more are answered 503 and closed).
    - ``access_log``: one line per request on the ``aiograd.serving.access`` logger.
    """

    limits: Limits = Limits()
    max_body_bytes: int = 1 << 20
    batching: bool = True
    max_batch_size: int = 64
    batch_wait_s: float = 0.0
    max_queue_size: int = 1024
    request_timeout_s: float = 30.0
    body_timeout_s: float = 10.0
    write_timeout_s: float = 10.0
    idle_timeout_s: float = 15.0
    drain_s: float = 10.0
    stall_s: float = 10.0
    max_connections: int = 512
    access_log: bool = False

    def __post_init__(self) -> None:
        for name in ("request_timeout_s", "body_timeout_s", "write_timeout_s", "idle_timeout_s",
                     "stall_s"):
            value = getattr(self, name)
            if not 0 < value < float("inf"):
                raise ValueError(f"{name} must be a finite number of seconds > 0, got {value}")
        for name in ("drain_s", "batch_wait_s"):
            value = getattr(self, name)
            if not 0 <= value < float("inf"):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
        for name in ("max_body_bytes", "max_batch_size", "max_queue_size", "max_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


@dataclasses.dataclass
class _State:
    """One application's mutable state (on its event loop only)."""

    model: ServedModel
    config: ServerConfig
    metrics: Metrics
    info: dict[str, Any]
    compute: Callable[[AttributionRequest], Awaitable[Attribution]] | None = None
    batched: Any = None  # the BatchedFunction, for its statistics
    counters: Counter[str] = dataclasses.field(default_factory=Counter)
    draining: bool = False
    progress_at: float = 0.0  # loop time a batch last started or finished
    flusher: asyncio.TimerHandle | None = None  # the metrics' next flush (each FLUSH_S)


STATE = web.AppKey("aiograd_serving_state", _State)
#: Seconds between flushes of the metrics counted per request (and samples of the gauges):
#: a worker's ``/metrics`` shows the others' answers this late at most.
FLUSH_S = 1.0
#: Every path the service answers (the metrics' endpoint label; any other is "other").
PATHS = (*ENDPOINTS, "/health", "/health/live", "/health/ready", "/metrics", "/stats")


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    body = orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict[str, str] | None = None, *,
           close: bool = False) -> web.Response:
    response = _json({"error": message}, status, headers)
    if close:  # aiohttp then says Connection: close, and closes (a header alone does neither)
        response.force_close()
    return response


_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_ids = itertools.count(1)
_id_prefix = (0, "")  # (pid, "pid-") of this process: a forked worker makes its own


def _request_id(request: web.BaseRequest) -> str:
    """The client's ``X-Request-Id`` when it is a short plain token, else a new one: this
    process's id and a counter, in hexadecimal."""
    given = request.headers.get("X-Request-Id")
    if given is not None and _REQUEST_ID.fullmatch(given):
        return given
    global _id_prefix
    pid = os.getpid()
    if _id_prefix[0] != pid:
        _id_prefix = (pid, f"{pid:x}-")
    return f"{_id_prefix[1]}{next(_ids):x}"


def _client_gone(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _client_left(state: _State, request: web.Request, request_id: str) -> None:
    """A client went away before its answer: a client event (INFO), counted, not an error."""
    state.counters["client_disconnected"] += 1
    state.metrics.disconnects.inc()
    log.info("%s: client disconnected during %s %s", request_id, request.method, shown(request.path))


@web.middleware
async def _middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    """Request ids, metrics, and every error as ``{"error": ...}`` (aiohttp's 404/405/413 too)."""
    state = request.app[STATE]
    started = time.perf_counter()
    request_id = _request_id(request)
    try:
        if request.version < (1, 0):  # HTTP/0.9 has no headers, so no status or length either
            raise web.HTTPVersionNotSupported()
        response = await handler(request)
    except asyncio.CancelledError:
        # aiohttp cancels the handler of a lost connection (handler_cancellation): a request
        # still queued leaves the batch queue, so nothing is computed for nobody.
        if _client_gone(request):
            _client_left(state, request, request_id)
        raise
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = {
            404: f"no such path: {shown(request.path)} (POST {', '.join(ENDPOINTS)}; GET /health, "
                 "/health/live, /health/ready, /metrics, /stats)",
            405: f"method {shown(request.method)} not allowed on {shown(request.path)}",
            413: f"request body too large: more than the limit of {state.config.max_body_bytes} bytes",
            505: f"HTTP/{request.version[0]}.{request.version[1]} is not supported: send HTTP/1.0 "
                 "or HTTP/1.1",
        }.get(exc.status, exc.reason)
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None  # RFC 9110
        response = _error(exc.status, message, allow)
    except Exception as exc:
        if isinstance(exc, ConnectionResetError) and _client_gone(request):
            # The client closed its connection while sending the body: no answer can reach it.
            _client_left(state, request, request_id)
            return web.Response(status=499, reason="Client Closed Request")
        log.exception("%s: error handling %s %s", request_id, request.method, shown(request.path))
        response = _error(500, "internal server error")
    response.headers["X-Request-Id"] = request_id
    state.counters[f"status_{response.status}"] += 1
    state.metrics.answered(request.path, response.status, time.perf_counter() - started)
    body = response.body if isinstance(response, web.Response) else None
    if isinstance(body, bytes) and len(body) > _WRITE_UNBOUNDED:
        await _write_within(request, response, state, request_id)
    return response


#: Answers of at most this many bytes are written without a timer: the transport takes them
#: whole (asyncio's high-water mark), so their writing never waits for the client.
_WRITE_UNBOUNDED = 64 << 10


async def _write_within(request: web.Request, response: web.StreamResponse, state: _State,
                        request_id: str) -> None:
    """Send a large answer here, bounded by ``write_timeout_s``: a client that does not read
    it would hold its handler and the answer's bytes for good. Past the bound the connection
    is dropped (aiohttp then finds the answer sent, or its connection gone)."""
    try:
        async with asyncio.timeout(state.config.write_timeout_s):
            await response.prepare(request)
            await response.write_eof()
    except TimeoutError:
        state.counters["timed_out"] += 1
        state.metrics.timeouts.labels("write").inc()
        log.info("%s: the client did not read its answer within %g s: connection dropped",
                 request_id, state.config.write_timeout_s)
        if request.transport is not None:
            request.transport.abort()
    except ConnectionError:
        pass  # the client went away: nothing to send it


def _attribution_handler(path: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    method = ENDPOINTS[path][0]

    async def handle(request: web.Request) -> web.Response:
        state = request.app[STATE]
        config, model = state.config, state.model
        counters = state.counters
        counters["in_flight"] += 1
        if counters["in_flight"] > counters["max_in_flight"]:
            counters["max_in_flight"] = counters["in_flight"]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + config.request_timeout_s  # one bound for the whole request
        try:
            limit = config.max_body_bytes
            if request.content_length is not None and request.content_length > limit:
                return _error(413, f"request body too large: {request.content_length} bytes, the "
                                   f"limit is {limit}", close=True)
            try:
                if request.content.is_eof():  # the whole body came with the head: no wait
                    body = await request.read()
                else:  # (a timer costs about 5 us: only a body still coming needs one)
                    async with asyncio.timeout_at(min(deadline, loop.time() + config.body_timeout_s)):
                        body = await request.read()
            except web.HTTPRequestEntityTooLarge:  # chunked, with no Content-Length
                return _error(413, f"request body too large: more than the limit of {limit} bytes",
                              close=True)
            except (HttpProcessingError, RequestPayloadError) as exc:  # a malformed body
                cause = exc.__cause__ if isinstance(exc.__cause__, HttpProcessingError) else exc
                text = (getattr(cause, "message", "") or str(cause)).strip()
                first = text.splitlines()[0].rstrip(":") if text else "malformed body"
                request.content.feed_eof()  # nothing more to read: aiohttp must not linger on it
                return _error(400, f"bad HTTP request: {shown(first, 120, quoted=False)}", close=True)
            except TimeoutError:  # a body sent slowly, or stopped halfway
                state.counters["timed_out"] += 1
                state.metrics.timeouts.labels("body").inc()
                seconds = min(config.body_timeout_s, config.request_timeout_s)
                return _error(408, f"the request body did not arrive within {seconds:g} s",
                              close=True)
            try:
                item = parse(path, body, model.input_shape, model.classes, config.limits)
            except BadRequest as exc:
                return _error(exc.status, str(exc))
            assert state.compute is not None
            try:
                # Leaving the wait cancels it: a request still queued leaves the batch queue.
                async with asyncio.timeout_at(deadline):
                    result = await state.compute(item)
            except Overloaded:
                return _error(503, f"overloaded: {config.max_queue_size} requests are already "
                                   "queued; retry later", {"Retry-After": "1"})
            except TimeoutError:
                state.counters["timed_out"] += 1
                state.metrics.timeouts.labels("answer").inc()
                return _error(504, f"no answer within {config.request_timeout_s:g} s; retry later",
                              {"Retry-After": "1"})
            state.counters["rows"] += len(item.x)
            return _json(answer(method, result))
        finally:
            counters["in_flight"] -= 1

    handle.__name__ = f"handle_{method}"
    return handle


def _not_ready(state: _State) -> str | None:
    """Why the service should get no new requests now, or None."""
    if state.draining:
        return "draining: the server is stopping"
    if state.batched is not None:
        stats = state.batched.statistics()
        idle_for = asyncio.get_running_loop().time() - state.progress_at
        if stats.queued and idle_for > state.config.stall_s:
            return (f"no batch progress for {idle_for:.1f} s with {stats.queued} requests queued "
                    f"(stall_s={state.config.stall_s:g})")
    return None


async def _health(request: web.Request) -> web.Response:
    state = request.app[STATE]
    model, config = state.model, state.config
    reason = _not_ready(state)
    return _json({
        "status": "ok" if reason is None else "not ready",
        "ready": reason is None,
        "input_shape": list(model.input_shape),
        "classes": model.classes,
        "dtype": str(model.dtype),
        "source": model.source,
        **model.info,
        "endpoints": list(ENDPOINTS),
        "limits": {**dataclasses.asdict(config.limits), "max_body_bytes": config.max_body_bytes,
                   "request_timeout_s": config.request_timeout_s},
        "batching": {"enabled": config.batching, "max_batch_size": config.max_batch_size,
                     "batch_wait_s": config.batch_wait_s, "max_queue_size": config.max_queue_size},
        **state.info,
    })


async def _live(request: web.Request) -> web.Response:
    """The process's event loop answers: restart the process only when this fails."""
    return _json({"live": True})


async def _ready(request: web.Request) -> web.Response:
    reason = _not_ready(request.app[STATE])
    if reason is None:
        return _json({"ready": True})
    return _json({"ready": False, "reason": reason}, 503)


async def _metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    _flush(state)
    body, content_type = state.metrics.render()
    response = web.Response(body=body)
    response.headers["Content-Type"] = content_type
    return response


async def _stats(request: web.Request) -> web.Response:
    state = request.app[STATE]
    engine = dataclasses.asdict(get_engine().statistics())
    batching = dataclasses.asdict(state.batched.statistics()) if state.batched is not None else None
    server = {**state.counters, "pid": os.getpid()}
    doc = {"engine": engine, "batching": batching, "server": server, **state.info}
    return web.Response(body=orjson.dumps(doc, default=str), content_type="application/json")


async def _start_draining(app: web.Application) -> None:
    app[STATE].draining = True


def _flush(state: _State) -> None:
    """Bring the metrics up to date: the answers counted since the last flush, and the gauges
    sampled now."""
    state.metrics.flush()
    state.metrics.in_flight.set(state.counters["in_flight"])
    state.metrics.queue_depth.set(state.batched.statistics().queued if state.batched is not None else 0)


async def _start_flushing(app: web.Application) -> None:
    state = app[STATE]
    loop = asyncio.get_running_loop()

    def tick() -> None:
        _flush(state)
        state.flusher = loop.call_later(FLUSH_S, tick)

    state.flusher = loop.call_later(FLUSH_S, tick)


async def _stop_flushing(app: web.Application) -> None:
    state = app[STATE]
    if state.flusher is not None:
        state.flusher.cancel()
        state.flusher = None
    _flush(state)  # what the last second counted


def make_app(
    model: ServedModel,
    config: ServerConfig = ServerConfig(),
    *,
    metrics: Metrics | None = None,
    info: dict[str, Any] | None = None,
) -> web.Application:
    """The service for ``model``: ``POST`` to each of ``ENDPOINTS`` (saliency, input x gradient,
    integrated gradients, SmoothGrad), ``GET /health`` (the model, limits and batching),
    ``/health/live``, ``/health/ready``, ``/metrics`` (Prometheus) and ``/stats``. ``info`` is
    added to ``/health`` and ``/stats`` (a worker's index, say)."""
    # aiohttp refuses a body of client_max_size bytes or more; allow exactly max_body_bytes.
    app = web.Application(middlewares=[_middleware], client_max_size=config.max_body_bytes + 1)
    state = _State(model, config, metrics or Metrics(PATHS), dict(info or {}))
    state.counters.update(in_flight=0, max_in_flight=0, rows=0)
    app[STATE] = state
    if config.batching:
        @batch(max_batch_size=config.max_batch_size, batch_wait_timeout_s=config.batch_wait_s,
               max_queue_size=config.max_queue_size)
        async def attribute_batch(items: list[AttributionRequest]) -> list[Attribution]:
            loop = asyncio.get_running_loop()
            state.progress_at = loop.time()
            state.metrics.batch_size.observe(len(items))
            state.metrics.batch_rows.observe(sum(map(expanded_rows, items)))
            try:
                return await attribute(model.module, items, dtype=model.dtype, check=False)  # parsed
            finally:
                state.progress_at = loop.time()

        state.compute = attribute_batch
        state.batched = attribute_batch
    else:
        async def attribute_alone(item: AttributionRequest) -> Attribution:
            (result,) = await attribute(model.module, [item], dtype=model.dtype, check=False)
            return result

        state.compute = attribute_alone
    for path in ENDPOINTS:
        app.router.add_post(path, _attribution_handler(path))
    app.router.add_get("/health", _health)
    app.router.add_get("/health/live", _live)
    app.router.add_get("/health/ready", _ready)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/stats", _stats)
    app.on_startup.append(_start_flushing)
    app.on_shutdown.append(_start_draining)
    app.on_cleanup.append(_stop_flushing)
    return app


def make_runner(app: web.Application) -> web.AppRunner:
    """The runner that serves ``app`` (from ``make_app``) with its config's connection bounds;
    ``await runner.cleanup()`` drains it (at most ``drain_s``)."""
    state = app[STATE]
    config = state.config
    return Runner(app, state.metrics, max_connections=config.max_connections,
                  drain_s=config.drain_s, idle_timeout_s=config.idle_timeout_s,
                  linger_s=min(1.0, config.body_timeout_s), access_log=config.access_log)


def url_of(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def serve(
    app: web.Application,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    reuse_port: bool = False,
    announce: Callable[[str], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` (0: a free port) in this process until SIGTERM or SIGINT
    (or ``stop`` is set), then drain: stop accepting, report not ready, answer what is in flight
    within the config's ``drain_s``, and return. ``announce`` gets the base URL once serving."""
    state = app[STATE]
    runner = make_runner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_port=reuse_port or None,
                           backlog=min(state.config.max_connections, 1024))
        await site.start()
        url = url_of(*runner.addresses[0][:2])
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        handled = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows; not main thread
                loop.add_signal_handler(sig, stop.set)
                handled.append(sig)
        try:
            if announce is not None:
                announce(url)
            await stop.wait()
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)
        state.draining = True
        log.info("stopping: draining the requests in flight (at most %g s)", state.config.drain_s)
    finally:
        state.draining = True
        await runner.cleanup()
