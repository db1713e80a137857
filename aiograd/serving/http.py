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

from ._app import STATE, ServerConfig, make_app, make_runner, serve
from ._cli import add_arguments, check_arguments, main, run
from ._metrics import Metrics
from ._model import ModelError, ServedModel, import_factory, load_weights, serve_module
from ._protocol import ENDPOINTS, BadRequest, Limits, answer, parse

__all__ = [
    "ENDPOINTS", "STATE", "BadRequest", "Limits", "Metrics", "ModelError", "ServedModel",
    "ServerConfig", "add_arguments", "answer", "check_arguments", "import_factory", "load_weights",
    "main", "make_app", "make_runner", "parse", "run", "run_workers", "serve", "serve_module",
]


def run_workers(*args, **kwargs):  # type: ignore[no-untyped-def]
    """``aiograd.serving._workers.run_workers`` (imported on first use: it needs gunicorn)."""
    from ._workers import run_workers as run

    return run(*args, **kwargs)
