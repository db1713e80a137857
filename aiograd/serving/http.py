"""The gradient service over HTTP: ``aiograd.serving.http`` (needs ``pip install 'aiograd[serve]'``:
aiohttp, orjson, prometheus_client, and gunicorn for several worker processes).

- ``serve_module`` makes an ``aiograd.nn.Module`` servable (weights checked, input shape, rows
  independent) as a ``ServedModel``; ``import_factory`` finds ``package.module:factory``.
- ``make_app`` builds the ``aiohttp.web.Application`` (endpoints ``/saliency``,
  ``/input-x-gradient``, ``/integrated-gradients``, ``/smoothgrad``; ``/health``,
  ``/health/live``, ``/health/ready``, ``/metrics``, ``/stats``) bounded by a ``ServerConfig``;
  ``make_runner`` its runner, ``serve`` runs it in this process until SIGTERM and drains.
- ``run_workers`` serves from several processes under gunicorn, restarting those that die.
- ``main`` is ``python -m aiograd.serving``; ``add_arguments``, ``check_arguments`` and ``run``
  give a script of one's own the same options.

docs/serving.md describes the API and running it in production.
"""

from collections.abc import Callable as _Callable

from ._app import STATE, ServerConfig, make_app, make_runner, serve
from ._cli import add_arguments, check_arguments, main, run
from ._metrics import Metrics
from ._model import ModelError, ServedModel, import_factory, load_weights, serve_module
from ._policy import WorkerPolicy
from ._protocol import ENDPOINTS, BadRequest, Limits, answer, parse

__all__ = [
    "BadRequest",
    "ENDPOINTS",
    "Limits",
    "Metrics",
    "ModelError",
    "STATE",
    "ServedModel",
    "ServerConfig",
    "WorkerPolicy",
    "add_arguments",
    "answer",
    "check_arguments",
    "import_factory",
    "load_weights",
    "main",
    "make_app",
    "make_runner",
    "parse",
    "run",
    "run_workers",
    "serve",
    "serve_module",
]


def run_workers(
    model: ServedModel,
    config: ServerConfig,
    host: str = "127.0.0.1",
    port: int = 8080,
    policy: WorkerPolicy | None = None,
    *,
    announce: _Callable[[str], None] | None = None,
) -> None:
    """Serve ``model`` from ``policy.workers`` processes supervised by gunicorn (imported here:
    ``pip install 'aiograd[serve]'``; not on Windows): see ``WorkerPolicy`` for the restarts,
    their back-off and limit. Exits the process (``SystemExit``) when the service stops: status
    0 after SIGTERM, 1 when workers died more often than the policy allows."""
    from ._workers import run_workers as run

    run(model, config, host, port, policy if policy is not None else WorkerPolicy(), announce=announce)
