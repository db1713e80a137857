"""Several worker processes on one port, supervised by gunicorn's arbiter, each serving the
application with aiohttp's gunicorn worker.

Why gunicorn: its arbiter is the process manager Python web services already run under. It holds
the listening socket, forks the workers after the model is loaded once (``preload_app``: the
weights are shared copy-on-write), restarts a worker that dies, kills one whose event loop stops
answering its heartbeat for ``worker_timeout_s`` (a wedged loop), and on SIGTERM stops them
gracefully within ``graceful_timeout``. aiohttp ships the worker class that runs an aiohttp
application under it. What gunicorn lacks is added here: a back-off between restarts of workers
that keep dying, and a limit past which the service stops with a clear message instead of
forking in a loop; and Prometheus metrics summed over the workers.
"""

from __future__ import annotations

import collections
import gc
import logging
import math
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.worker import GunicornUVLoopWebWorker, GunicornWebWorker
from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]
from gunicorn.arbiter import Arbiter  # type: ignore[import-untyped]
from gunicorn.errors import HaltServer  # type: ignore[import-untyped]

from . import _metrics
from ._app import PATHS, ServerConfig, make_app, make_runner, url_of
from ._model import ServedModel
from ._policy import WorkerPolicy

__all__ = ["WorkerPolicy", "run_workers"]

log = logging.getLogger("aiograd.serving")


class _Arbiter(Arbiter):  # type: ignore[misc]
    """gunicorn's arbiter with a back-off between restarts and a limit on them."""

    policy: WorkerPolicy
    metrics: _metrics.Metrics

    def __init__(self, app: Any) -> None:
        super().__init__(app)
        self.deaths: collections.deque[float] = collections.deque()
        self.next_spawn_at = 0.0
        self.stopping = False
        self.serving = False
        self.address: tuple[str, int] = ("127.0.0.1", 0)
        self.announce: Callable[[str], None] | None = None

    def wait_for_signals(self, timeout: float = 1.0) -> list[int]:
        # Until a worker listens, look every 20 ms rather than every second.
        return super().wait_for_signals(timeout if self.serving else 0.02)  # type: ignore[no-any-return]

    def manage_workers(self) -> None:
        super().manage_workers()
        if not self.serving and self.WORKERS:
            # Each worker listens on its own socket (SO_REUSEPORT): the service is up once one
            # accepts a connection. Announced then, not when the port is bound, so that a
            # client told the URL is not refused.
            try:
                socket.create_connection(self.address, timeout=0.5).close()
            except OSError:
                return
            self.serving = True
            if self.announce is not None:
                self.announce(url_of(*self.address))

    def stop(self, graceful: bool = True) -> None:
        self.stopping = True  # the workers it stops are not deaths
        super().stop(graceful)

    def spawn_workers(self) -> None:
        # The main loop calls this each time it wakes (a signal, or every second) while workers
        # are missing: during a back-off it waits for a later turn.
        if self.stopping or time.monotonic() < self.next_spawn_at:
            return
        super().spawn_workers()

    def worker_died(self, pid: int) -> None:
        _metrics.mark_process_dead(pid)
        if self.stopping:
            return
        now = time.monotonic()
        self.deaths.append(now)
        while self.deaths and self.deaths[0] < now - self.policy.restart_window_s:
            self.deaths.popleft()
        self.metrics.restarts.inc()
        if len(self.deaths) > self.policy.max_restarts:
            raise HaltServer(
                f"workers died {len(self.deaths)} times within {self.policy.restart_window_s:g} s "
                f"(the limit is {self.policy.max_restarts}): stopping the service", 1)
        delay = 0.0 if len(self.deaths) == 1 else min(2.0 ** (len(self.deaths) - 2), self.policy.max_backoff_s)
        self.next_spawn_at = now + delay
        self.log.warning("worker (pid %s) died: restarting it%s", pid,
                         f" in {delay:g} s" if delay else "")


class _Worker(GunicornWebWorker):  # type: ignore[misc]
    """aiohttp's gunicorn worker, stopping to accept at once on SIGTERM: aiohttp's own notices
    it at its next heartbeat, up to a second later (it wakes at once only for SIGINT/SIGQUIT)."""

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        self._notify_waiter_done()


class _UVLoopWorker(_Worker, GunicornUVLoopWebWorker):  # type: ignore[misc]
    """``_Worker`` on uvloop."""


def _child_exit(server: Any, worker: Any) -> None:
    if isinstance(server, _Arbiter):
        server.worker_died(worker.pid)


class _Application(BaseApplication):  # type: ignore[misc]
    def __init__(self, model: ServedModel, config: ServerConfig, host: str, port: int,
                 policy: WorkerPolicy, announce: Callable[[str], None] | None) -> None:
        self.model, self.config, self.host, self.port = model, config, host, port
        self.policy, self.announce = policy, announce
        super().__init__()

    def load_config(self) -> None:
        uvloop = self.policy.loop == "uvloop"
        if uvloop:
            try:
                import uvloop as _  # noqa: F401
            except ImportError:
                uvloop = False
        settings: dict[str, Any] = {
            "bind": [f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"],
            "workers": self.policy.workers,
            "worker_class": _UVLoopWorker if uvloop else _Worker,
            "timeout": math.ceil(self.policy.worker_timeout_s),
            # gunicorn kills the workers this long after SIGTERM; they drain in drain_s.
            "graceful_timeout": math.ceil(self.config.drain_s) + 5,
            "preload_app": True,
            # Each worker listens on a socket of its own (SO_REUSEPORT), so that the kernel
            # spreads connections evenly: on one shared socket, the worker that wins the accepts
            # took all 64 connections of a load test while the other idled.
            "reuse_port": True,
            "backlog": min(self.config.max_connections, 2048),
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "info",
            "proc_name": "aiograd.serving",
            "child_exit": _child_exit,
        }
        if "control_socket_disable" in self.cfg.settings:
            settings["control_socket_disable"] = True  # no shared socket file in $HOME
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Callable[[], Any]:
        model, config = self.model, self.config
        policy = self.policy

        async def runner() -> web.AppRunner:
            info = {"worker": {"pid": os.getpid(), "workers": policy.workers}}
            return make_runner(make_app(model, config, info=info))

        return runner

    def run(self) -> None:
        arbiter = _Arbiter(self)
        arbiter.policy, arbiter.announce = self.policy, self.announce
        arbiter.address = (self.host, self.port)
        arbiter.metrics = _metrics.Metrics(PATHS)
        arbiter.run()


def run_workers(
    model: ServedModel,
    config: ServerConfig,
    host: str = "127.0.0.1",
    port: int = 8080,
    policy: WorkerPolicy = WorkerPolicy(),  # noqa: B008 (frozen: one shared default is safe)
    *,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve ``model`` from ``policy.workers`` supervised processes on ``host:port`` until SIGTERM
    (graceful: the workers drain within the config's ``drain_s``) or SIGINT, then exit the
    process (``SystemExit``): status 0, or 1 when workers died more often than the policy allows.
    ``announce`` gets the base URL once a worker accepts connections. ``/metrics`` of any worker reports the
    whole service. Not on Windows (gunicorn needs ``fork``)."""
    arbiter_pid = os.getpid()
    # Hold the port for the service's life (bound, not listening: no connection comes here),
    # so that port 0 gives every worker the same free port and a worker restarted later finds
    # it still free; the workers bind it too, each with SO_REUSEPORT.
    holder = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    directory = tempfile.mkdtemp(prefix="aiograd-serving-metrics-")
    argv = sys.argv
    try:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind((host, port))
        port = holder.getsockname()[1]
        _metrics.enable_multiprocess(directory)
        sys.argv = sys.argv[:1]  # gunicorn parses sys.argv when its application is made
        # What the workers inherit (the model, the imports) is never collected: the collector
        # would walk it in every worker, and touching it copies the pages it shares.
        gc.collect()
        gc.freeze()
        _Application(model, config, host, port, policy, announce).run()
    finally:
        # A worker leaves through here too (gunicorn's fork returns into this call in the child,
        # which ends with SystemExit): only the arbiter removes what the workers share.
        if os.getpid() == arbiter_pid:
            sys.argv = argv
            holder.close()
            shutil.rmtree(directory, ignore_errors=True)
