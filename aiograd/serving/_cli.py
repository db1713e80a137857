"""``python -m aiograd.serving``: serve gradient attributions of any ``aiograd.nn.Module``.

    python -m aiograd.serving --model mypackage.models:make_classifier --weights model.safetensors

The options are built by ``add_arguments`` and read by ``config_from`` and ``policy_from``, so a
script that prepares its model its own way (``examples/serve_gradients.py`` trains one) offers
the same options and calls ``run``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..nn.modules.module import Module
from ..nn.utils import serialization
from ._app import ServerConfig, make_app, serve
from ._model import ModelError, ServedModel, import_factory, serve_module
from ._policy import WorkerPolicy
from ._protocol import ENDPOINTS, Limits

__all__ = ["add_arguments", "config_from", "main", "parse_args", "policy_from", "run"]

_DEFAULTS = ServerConfig()


def _shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes separated by commas, e.g. 3,32,32, got {text!r}") from None
    if not shape or any(d < 1 for d in shape):
        raise argparse.ArgumentTypeError(f"expected positive sizes, e.g. 3,32,32, got {text!r}")
    return shape


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The serving options: address, processes, batching, limits and timeouts."""
    net = parser.add_argument_group("address and processes")
    net.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    net.add_argument("--port", type=int, default=8080, help="0 picks a free port (default %(default)s)")
    net.add_argument("--workers", type=int, default=1, metavar="N",
                     help="serve from N processes on one port, supervised by gunicorn (0: one per "
                          "CPU core; default 1: this process, unsupervised)")
    net.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop",
                     help="the event loop: uvloop (when installed) or asyncio's own")
    net.add_argument("--max-restarts", type=int, default=5, metavar="N",
                     help="with --workers: worker deaths within --restart-window-s past which "
                          "the service stops (default %(default)s)")
    net.add_argument("--restart-window-s", type=float, default=60.0, metavar="SECONDS")
    net.add_argument("--worker-timeout-s", type=float, default=60.0, metavar="SECONDS",
                     help="with --workers: a worker whose event loop is blocked this long is "
                          "restarted (default %(default)g)")
    b = parser.add_argument_group("batching")
    b.add_argument("--max-batch-size", type=int, default=_DEFAULTS.max_batch_size,
                   help="most requests in one batch (default %(default)s)")
    b.add_argument("--batch-wait-ms", type=float, default=0.0,
                   help="how long the oldest queued request may wait for a fuller batch while "
                        "none runs (a request finding the server idle never waits)")
    b.add_argument("--max-queue-size", type=int, default=_DEFAULTS.max_queue_size,
                   help="queued requests past which the server answers 503 (default %(default)s)")
    b.add_argument("--no-batching", action="store_true", help="compute every request on its own")
    lim = parser.add_argument_group("limits and timeouts")
    lim.add_argument("--max-rows", type=int, default=Limits.max_rows,
                     help="input rows per request (default %(default)s)")
    lim.add_argument("--max-work-rows", type=int, default=Limits.max_work_rows,
                     help="rows a request may expand to: rows x steps (integrated gradients), "
                          "rows x samples (SmoothGrad) (default %(default)s)")
    lim.add_argument("--max-body-bytes", type=int, default=_DEFAULTS.max_body_bytes)
    lim.add_argument("--max-connections", type=int, default=_DEFAULTS.max_connections,
                     help="open connections per process; more are answered 503 (default %(default)s)")
    lim.add_argument("--request-timeout-s", type=float, default=_DEFAULTS.request_timeout_s,
                     metavar="SECONDS", help="a request's bound, from its arrival to its answer "
                     "(504 past it; default %(default)g)")
    lim.add_argument("--body-timeout-s", type=float, default=_DEFAULTS.body_timeout_s,
                     metavar="SECONDS", help="for a request's body to arrive (408; default %(default)g)")
    lim.add_argument("--write-timeout-s", type=float, default=_DEFAULTS.write_timeout_s,
                     metavar="SECONDS", help="for a client to take an answer over 64 KiB; past "
                     "it the connection is dropped (default %(default)g)")
    lim.add_argument("--idle-timeout-s", type=float, default=_DEFAULTS.idle_timeout_s,
                     metavar="SECONDS", help="for a connection to send a complete request head, "
                     "from its opening or its last answer: keep-alive and header-read timeout "
                     "(default %(default)g)")
    lim.add_argument("--drain-s", type=float, default=_DEFAULTS.drain_s, metavar="SECONDS",
                     help="on SIGTERM, how long the requests in flight may take before their "
                          "connections are closed (default %(default)g)")
    lim.add_argument("--stall-s", type=float, default=_DEFAULTS.stall_s, metavar="SECONDS",
                     help="/health/ready fails when requests are queued and no batch progressed "
                          "for this long (default %(default)g)")
    parser.add_argument("--access-log", action="store_true",
                        help="log one line per request, with its request id")


def config_from(args: argparse.Namespace) -> ServerConfig:
    """The ``ServerConfig`` that ``add_arguments``' options give."""
    limits = Limits(max_rows=args.max_rows, max_work_rows=args.max_work_rows)
    return ServerConfig(
        limits=limits, max_body_bytes=args.max_body_bytes, batching=not args.no_batching,
        max_batch_size=args.max_batch_size, batch_wait_s=args.batch_wait_ms / 1e3,
        max_queue_size=args.max_queue_size, request_timeout_s=args.request_timeout_s,
        body_timeout_s=args.body_timeout_s, write_timeout_s=args.write_timeout_s,
        idle_timeout_s=args.idle_timeout_s,
        drain_s=args.drain_s, stall_s=args.stall_s, max_connections=args.max_connections,
        access_log=args.access_log,
    )


def policy_from(args: argparse.Namespace) -> WorkerPolicy:
    """The ``WorkerPolicy`` that ``add_arguments``' options give."""
    return WorkerPolicy(workers=args.workers, max_restarts=args.max_restarts,
                        restart_window_s=args.restart_window_s,
                        worker_timeout_s=args.worker_timeout_s, loop=args.loop)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse inconsistent options with argparse's usage error (exit status 2)."""
    if args.workers == 0:
        args.workers = os.cpu_count() or 1
    if args.workers < 1:
        parser.error(f"--workers must be 0 (one per core) or a positive number, got {args.workers}")
    if args.workers > 1:
        if not hasattr(os, "fork") or not hasattr(socket, "SO_REUSEADDR"):
            parser.error("--workers needs fork (Linux, BSD, macOS): run one process per port "
                         "behind a proxy instead")
        try:
            import gunicorn  # type: ignore[import-untyped]  # noqa: F401
        except ImportError:
            parser.error("--workers needs gunicorn: pip install 'aiograd[serve]'")
    if args.max_restarts < 0:
        parser.error("--max-restarts must be >= 0")
    for name in ("restart_window_s", "worker_timeout_s"):
        if not 0 < getattr(args, name) < float("inf"):
            parser.error(f"--{name.replace('_', '-')} must be a finite number of seconds > 0")
    for name in ("max_rows", "max_work_rows"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    try:
        args.config = config_from(args)
    except ValueError as exc:
        option = str(exc).split(" ", 1)
        parser.error(f"--{option[0].replace('_', '-')} {option[1]}" if len(option) == 2 else str(exc))


def _describe(config: ServerConfig) -> str:
    if not config.batching:
        return "no batching"
    return (f"batches of up to {config.max_batch_size}, wait {config.batch_wait_s * 1e3:g} ms, "
            f"queue {config.max_queue_size}")


def run(prepare: Callable[[], Awaitable[ServedModel]], args: argparse.Namespace,
        *, prog: str = "aiograd.serving", info: dict[str, Any] | None = None) -> None:
    """Prepare the model and serve it as ``args`` say (``add_arguments``' options, checked by
    ``check_arguments``): in this process, or with ``--workers N`` in N processes forked after
    the model is ready. A ``ModelError`` from ``prepare`` is printed as one line and exits with
    status 2; SIGTERM or Ctrl-C drains and exits with status 0."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config: ServerConfig = args.config
    endpoints = ", ".join(f"POST {p}" for p in ENDPOINTS)

    def fail(exc: BaseException) -> None:
        print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        raise SystemExit(2)

    if args.workers > 1:
        from ._workers import run_workers

        try:
            model = _run_loop(prepare(), args.loop)
        except ModelError as exc:
            fail(exc)

        def announce_workers(url: str) -> None:
            print(f"serving on {url} ({endpoints}; GET /health, /metrics) from {args.workers} "
                  f"worker processes, {_describe(config)}; Ctrl-C stops", flush=True)

        arbiter = os.getpid()
        try:
            run_workers(model, config, args.host, args.port, policy_from(args), announce=announce_workers)
        except SystemExit as exc:  # gunicorn's arbiter exits the process when it stops
            if os.getpid() == arbiter and exc.code in (0, None):
                print("stopped", flush=True)
            raise
        return

    async def one_process() -> None:
        try:
            model = await prepare()
        except ModelError as exc:
            fail(exc)
        app = make_app(model, config, info=info)
        loop_name = type(asyncio.get_running_loop()).__module__.split(".")[0]

        def announce(url: str) -> None:
            print(f"serving on {url} ({endpoints}; GET /health, /metrics) on {loop_name}'s loop, "
                  f"{_describe(config)}; Ctrl-C stops", flush=True)

        await serve(app, args.host, args.port, announce=announce)
        print("stopped", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        _run_loop(one_process(), args.loop)


def _run_loop(main: Any, loop: str) -> Any:
    if loop == "asyncio":
        return asyncio.run(main)
    from .._api._runner import run as run_on_uvloop

    return run_on_uvloop(main)  # uvloop when it is installed


def _prog() -> str:
    """How the user ran it: ``python -m aiograd.serving`` or the ``aiograd-serve`` script."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m aiograd.serving" if name in ("", "__main__.py", "-c") else name


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """``python -m aiograd.serving``'s options, checked (a usage error exits with status 2)."""
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Serve gradient attributions (saliency, input x gradient, integrated "
                    "gradients, SmoothGrad) of an aiograd.nn.Module over HTTP, batching "
                    "concurrent requests.")
    model = parser.add_argument_group("model")
    model.add_argument("--model", required=True, metavar="MODULE:FACTORY",
                       help="package.module:factory (or file.py:factory): a callable returning "
                            "the aiograd.nn.Module to serve, mapping (rows, *input_shape) to "
                            "(rows, classes)")
    model.add_argument("--weights", metavar="FILE",
                       help="its weights: a .safetensors (torch's, saved with "
                            "safetensors.torch.save_file, or aiograd's) or .npz state dict, checked "
                            "before it is loaded")
    model.add_argument("--input-shape", type=_shape, metavar="SIZES",
                       help="one row's shape, e.g. 3,32,32 (read off the model when its first "
                            "layer is a Linear)")
    model.add_argument("--max-weight-bytes", type=int, default=serialization.MAX_BYTES,
                       help="the most bytes of weights a file may load (default 4 GiB)")
    model.add_argument("--no-check-rows", action="store_true",
                       help="skip the startup check that each output row depends on its own "
                            "input row only (batching needs it)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    return args


def main(argv: list[str] | None = None) -> None:
    """``python -m aiograd.serving`` (and ``aiograd-serve``): import ``--model``'s factory, make
    its module servable (``serve_module``) and serve it as the options say (``run``)."""
    args = parse_args(argv)

    async def prepare() -> ServedModel:
        factory = import_factory(args.model)
        try:
            module = factory if isinstance(factory, Module) else factory()
        except Exception as exc:
            raise ModelError(f"--model: calling {args.model} failed: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:200]}") from None
        served = await serve_module(module, weights=args.weights, input_shape=args.input_shape,
                                    source=os.path.basename(args.weights) if args.weights else args.model,
                                    max_weight_bytes=args.max_weight_bytes,
                                    check_rows=not args.no_check_rows)
        print(f"serving {args.model}"
              f"{' with ' + os.path.basename(args.weights) if args.weights else ''}: input "
              f"{list(served.input_shape)}, {served.classes} classes, {served.dtype}", flush=True)
        return dataclasses.replace(served, info={"model": args.model})

    run(prepare, args, prog=_prog())
