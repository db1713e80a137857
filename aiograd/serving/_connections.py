"""The gradient service's connections: aiohttp's server and connection handler, bounded.

``Runner`` serves an application with a cap on open connections per process (past it a
connection is answered 503 and closed, unread: ``_Refusal``), and a ``_Handler`` per connection
that answers the HTTP parser's errors as JSON with one log line and lets a draining server read
the body of the request in progress. ``_AccessLogger`` writes the optional access log.
"""

from __future__ import annotations

import asyncio
import logging
from http import HTTPStatus
from typing import Any

import orjson
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler, _ErrInfo

from ._metrics import Metrics
from ._protocol import shown

__all__ = ["ACCESS_LOG", "Runner"]

#: One line per request when the access log is on.
ACCESS_LOG = logging.getLogger("aiograd.serving.access")


class _AccessLogger(AbstractAccessLogger):
    """One line per answered request: request id, client, request line, status, bytes, time."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        request_id = response.headers.get("X-Request-Id", "-")
        self.logger.info('%s %s "%s %s" %d %d %.1fms', request_id, request.remote, request.method,
                         shown(request.path, 80, quoted=False), response.status, response.body_length,
                         time * 1e3)


class _Handler(RequestHandler):
    """aiohttp's connection handler, answering the HTTP parser's errors (a malformed request
    line, headers too long, a bad chunk) as ``{"error": ...}`` with one log line, where aiohttp
    answers plain text and logs a traceback at ERROR for each; and reading the body of the
    request in progress while the server drains, where aiohttp drops it. (aiohttp's private
    ``_close``, ``_force_close``, ``_request_in_progress``, ``_current_request``, ``_messages``,
    ``_ErrInfo`` and ``_manager``: checked against
    aiohttp 3.14, by tests/test_serving_http.py and tests/test_serving_chaos.py.)"""

    __slots__ = ()

    def data_received(self, data: bytes) -> None:
        # A stopping server marks its connections closing (aiohttp's pre_shutdown), and aiohttp
        # then drops whatever arrives: the body of a request already being handled would never
        # come, and its client would get no answer. Let the body of that request in.
        if ((self._close or self._force_close) and self._request_in_progress
                and self.transport is not None):
            flags = self._close, self._force_close
            self._close = self._force_close = False
            try:
                self._receive(data)
            finally:
                self._close, self._force_close = flags
            return
        self._receive(data)

    def _receive(self, data: bytes) -> None:
        request = self._current_request
        if request is None or request.content.is_eof():
            super().data_received(data)
            return
        # A request is reading its body. aiohttp's C parser fails a malformed body (a bad chunk)
        # by queueing an error as if it were the next request, and the body being read would
        # wait for more until its timeout (a 408 after seconds): hand the error to that body,
        # whose reader answers 400 at once (aiohttp's Python parser does this itself).
        queued = len(self._messages)
        super().data_received(data)
        if len(self._messages) > queued:
            error, _ = self._messages[-1]
            if isinstance(error, _ErrInfo) and not request.content.is_eof():
                self._messages.pop()
                exc = error.exc if isinstance(error.exc, HttpProcessingError) else \
                    HttpProcessingError(message=error.message)
                request.content.set_exception(exc)

    def handle_error(self, request: web.BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:
            raise ConnectionError("Response is sent already, cannot send another response "
                                  "with the error message")
        if isinstance(exc, HttpProcessingError) and exc.message:
            text = exc.message
        else:
            text = message or (str(exc) if exc is not None else "") or HTTPStatus(status).phrase
        first = text.strip().splitlines()[0].rstrip(":") if text.strip() else HTTPStatus(status).phrase
        if status >= 500:
            self.logger.error("error handling a request from %s", request.remote, exc_info=exc)
            error = "internal server error"
        else:
            self.logger.info("bad HTTP request from %s: %s", request.remote, first[:200])
            error = f"bad HTTP request: {shown(first, 120, quoted=False)}"
        manager = self._manager
        if isinstance(manager, _Server):
            manager.metrics.answered("", status, 0.0)
        response = web.Response(status=status, body=orjson.dumps({"error": error}),
                                content_type="application/json")
        response.force_close()
        return response


class _Refusal(asyncio.Protocol):
    """A connection past the cap: answered 503 and closed, its request unread."""

    ANSWER = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
              b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s")

    def __init__(self, cap: int) -> None:
        self.body = orjson.dumps({"error": f"too many connections: this server process holds "
                                           f"{cap}, its limit; retry later"})
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.ANSWER % (len(self.body), self.body))
        # Closing at once with the request unread would reset the connection, and the client
        # might never read the answer: close after a moment, or when the client does.
        asyncio.get_running_loop().call_later(1.0, transport.close)

    def data_received(self, data: bytes) -> None:
        pass  # the request is not read

    def eof_received(self) -> bool:
        return False  # close


class _Server(web.Server):
    """aiohttp's server with a cap on open connections and ``_Handler`` for each."""

    cap: int
    metrics: Metrics

    def __call__(self) -> Any:
        if len(self._connections) >= self.cap:
            self.metrics.refused.inc()
            return _Refusal(self.cap)
        handler = super().__call__()
        handler.__class__ = _Handler  # the same object, with JSON parser errors
        return handler

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        self.metrics.connections.inc()

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        self.metrics.connections.dec()


class Runner(web.AppRunner):
    """aiohttp's ``AppRunner`` whose server caps its connections at ``max_connections`` and
    serves each with ``_Handler``; ``drain_s``: how long ``cleanup()`` waits for the requests in
    flight; ``idle_timeout_s``: aiohttp's keep-alive timer, which runs from a connection's
    opening and from each answer (so it also bounds reading a request's head); ``linger_s``:
    after an answer to a request whose body was not read (413, 408), how long what the client
    still sends is read and dropped before the connection closes (aiohttp: 10 s)."""

    def __init__(self, app: web.Application, metrics: Metrics, *, max_connections: int,
                 drain_s: float, idle_timeout_s: float, linger_s: float, access_log: bool) -> None:
        super().__init__(
            app,
            # A client that goes away cancels its handler, and so its place in the batch queue
            # (aiohttp's default lets the handler run on for nobody).
            handler_cancellation=True,
            shutdown_timeout=drain_s,
            keepalive_timeout=idle_timeout_s,
            lingering_time=linger_s,
            access_log=ACCESS_LOG if access_log else None,
            access_log_class=_AccessLogger,
        )
        self.metrics, self.max_connections = metrics, max_connections

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # the same object, with the cap
        assert isinstance(server, _Server)
        server.cap, server.metrics = self.max_connections, self.metrics
        return server
