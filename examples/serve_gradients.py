"""An HTTP service for saliency: the gradient of a model's logit with respect to its input.

    python examples/serve_gradients.py [--host 127.0.0.1] [--port 8080] [--seed 0] [--loop asyncio]
                                       [--weights model.safetensors | --save model.safetensors]

The model is an MLP classifier written with ``aiograd.nn`` (``nn.Sequential`` of ``Linear``,
``Tanh``, ``Linear``, ``Tanh``, ``Linear``: 16 features -> 64 -> 64 -> 4 classes by default).
With ``--weights`` it serves weights from a file: a ``.safetensors`` file written by torch
(``safetensors.torch.save_file(model.state_dict(), path)`` for the same ``torch.nn.Sequential``)
or by aiograd, or an ``.npz``; the sizes are read from the weights. Without it, it trains the
model at startup with ``aiograd.optim.SGD`` on a synthetic task generated from ``--seed`` (about
a second; ``--save`` writes the result). It serves with ``aiohttp.web`` on uvloop when it is
installed. Each request runs the forward pass and ``await aiograd.grad(...)`` on the server's
event loop, so many requests are in flight on one loop at once.

API (JSON in and out):

- ``POST /saliency`` with ``{"input": [[16 numbers], ...], "target": 3}``: ``target`` (optional)
  is one class index for every row, or a list with one per row; left out, each row's predicted
  class is used. Returns ``{"output": [[logits]], "predicted": [...], "target": [...],
  "saliency": [[...]]}``, where ``saliency[n][i]`` is ``d output[n][target[n]] / d input[n][i]``.
- ``GET /health``: ``{"status": "ok", ...}`` with the model's shape, source and accuracy.
- ``GET /stats``: the engine's ``aiograd.get_engine().statistics()`` and the server's counters:
  ``status_<code>`` per answer sent, ``rows``, ``in_flight``, ``max_in_flight``, and
  ``client_disconnected`` for clients that went away before sending their whole body (a client
  event, logged at INFO: no answer, no status counted).

Bad requests get ``{"error": "..."}`` naming the problem: 400 for a body that is not a JSON
object, 422 for a JSON object with a missing or unknown field, a wrong shape, a value that is not
a finite number (or larger in magnitude than 1e6) or a bad target, 413 for more than ``max_rows``
rows or a body over ``max_body_bytes``, 404/405 for other paths and methods.

Tests and ``load_test.py`` use :func:`train_model`, :func:`make_app` and :func:`start`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import logging
import signal
import time
from collections import Counter
from typing import Any

import numpy as np
from aiohttp import web

import aiograd
import aiograd.nn.functional as F
from aiograd import nn, optim

FEATURES = 16
HIDDEN = 64
CLASSES = 4
MAX_ROWS = 256
MAX_BODY_BYTES = 1 << 20  # 1 MiB
MAX_ABS = 1e6

log = logging.getLogger("serve_gradients")


# ------------------------------------------------------------------------------------ model
def make_module(sizes: tuple[int, int, int, int] = (FEATURES, HIDDEN, HIDDEN, CLASSES)) -> nn.Sequential:
    """The classifier, written as in torch: its state dict's keys (``0.weight``, ``0.bias``,
    ``2.weight``, ...) are those of ``torch.nn.Sequential(Linear, Tanh, Linear, Tanh, Linear)``,
    so weights trained with torch and saved with ``safetensors.torch.save_file`` load into it."""
    features, hidden1, hidden2, classes = sizes
    return nn.Sequential(
        nn.Linear(features, hidden1), nn.Tanh(),
        nn.Linear(hidden1, hidden2), nn.Tanh(),
        nn.Linear(hidden2, classes),
    )


@dataclasses.dataclass
class Model:
    """The served module (its parameters frozen: a request's graph records only what depends on
    its input) and where it came from."""

    module: nn.Sequential
    source: str = "trained at startup"
    train_accuracy: float | None = None
    test_accuracy: float | None = None
    train_seconds: float | None = None

    @property
    def features(self) -> int:
        return self.module[0].in_features

    @property
    def classes(self) -> int:
        return self.module[-1].out_features

    def __call__(self, x: aiograd.Tensor) -> aiograd.Tensor:
        return self.module(x)

    def predict(self, x: np.ndarray) -> np.ndarray:
        with aiograd.no_grad():
            return self(aiograd.tensor(x)).argmax(dim=1).numpy()


def frozen(module: nn.Sequential, source: str) -> Model:
    """Serve ``module``: evaluation mode, parameters that no longer require grad."""
    return Model(module.eval().requires_grad_(False), source)


def load_model(path: str) -> Model:
    """The classifier with the weights of a ``.safetensors`` or ``.npz`` file (torch's or
    aiograd's state dict; float32 weights are served in float32). The layer sizes are read from
    the weights' shapes."""
    state = nn.utils.load(path)
    if set(state) != {f"{i}.{kind}" for i in (0, 2, 4) for kind in ("weight", "bias")}:
        raise ValueError(f"{path}: expected the weights of Linear, Tanh, Linear, Tanh, Linear "
                         f"(0.weight, 0.bias, 2.weight, ... 4.bias), got {sorted(state)}")
    hidden1, features = state["0.weight"].shape
    module = make_module((features, hidden1, state["2.weight"].shape[0], state["4.weight"].shape[0]))
    module.to(state["0.weight"].dtype)
    module.load_state_dict(state)
    return frozen(module, path)


def make_data(
    rng: np.random.Generator, n: int, teacher: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Standard normal points labelled by a random tanh network (the teacher): a nonlinear task."""
    x = rng.standard_normal((n, FEATURES))
    a, b = teacher
    return x, np.argmax(np.tanh(x @ a) @ b, axis=1)


async def train_model(seed: int = 0, *, epochs: int = 12, points: int = 4096) -> Model:
    """Train the classifier (float64) with minibatch SGD on the synthetic task; deterministic for
    a given seed."""
    rng = np.random.default_rng(seed)
    aiograd.manual_seed(seed)  # the layers' initialisation draws from it, as torch's
    teacher = [rng.standard_normal((FEATURES, 8)), rng.standard_normal((8, CLASSES))]
    x_train, y_train = make_data(rng, points, teacher)
    x_test, y_test = make_data(rng, points // 4, teacher)
    module = make_module()
    opt = optim.SGD(module.parameters(), lr=0.2, momentum=0.5)
    start = time.perf_counter()
    batch = 64
    for _ in range(epochs):
        order = rng.permutation(points)
        for i in range(0, points, batch):
            idx = order[i:i + batch]
            opt.zero_grad()
            loss = F.cross_entropy(module(aiograd.tensor(x_train[idx])), aiograd.tensor(y_train[idx]))
            await loss.backward()
            opt.step()
    model = frozen(module, "trained at startup")
    model.train_seconds = time.perf_counter() - start
    model.train_accuracy = float((model.predict(x_train) == y_train).mean())
    model.test_accuracy = float((model.predict(x_test) == y_test).mean())
    return model


async def saliency(model: Model, x: np.ndarray, target: np.ndarray | None) -> dict[str, Any]:
    """Logits, and the gradient of each row's target logit with respect to that row.

    Rows are independent, so one vector-Jacobian product with a one-hot ``grad_outputs`` gives
    every row's gradient at once."""
    inp = aiograd.tensor(x, dtype=model.module[0].weight.dtype, requires_grad=True)
    logits = model(inp)
    predicted = logits.detach().argmax(dim=1).numpy()
    if target is None:
        target = predicted
    one_hot = np.zeros(logits.shape, dtype=logits.detach().numpy().dtype)
    one_hot[np.arange(len(x)), target] = 1.0
    (grad,) = await aiograd.grad(logits, inp, grad_outputs=aiograd.tensor(one_hot))
    return {
        "output": logits.detach().numpy().tolist(),
        "predicted": predicted.tolist(),
        "target": np.asarray(target).tolist(),
        "saliency": grad.numpy().tolist(),
    }


# ------------------------------------------------------------------------------- validation
class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _is_number(v: Any) -> bool:
    return type(v) is float or type(v) is int  # JSON numbers only: not bool, not strings


def parse_request(
    body: bytes, features: int, classes: int, max_rows: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Check a ``/saliency`` body; return the input rows (float64) and the targets (or None)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise BadRequest(400, f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(400, f"the body must be a JSON object, got a JSON {_json_type(doc)}")
    unknown = sorted(set(doc) - {"input", "target"})
    if unknown:
        raise BadRequest(422, f"unknown field {unknown[0]!r}: expected 'input' and optionally "
                              "'target'")
    if "input" not in doc:
        raise BadRequest(422, "missing field 'input': a list of rows, each a list of "
                              f"{features} numbers")
    rows = doc["input"]
    if not isinstance(rows, list):
        raise BadRequest(422, f"'input' must be a list of rows, each a list of {features} numbers, "
                              f"got a JSON {_json_type(rows)}")
    if not rows:
        raise BadRequest(422, "'input' has no rows")
    if len(rows) > max_rows:
        raise BadRequest(413, f"too many rows in 'input': {len(rows)}, the limit is {max_rows}")
    for n, row in enumerate(rows):
        if not isinstance(row, list):
            raise BadRequest(422, f"wrong shape: input[{n}] must be a list of {features} numbers, "
                                  f"got a JSON {_json_type(row)}")
        if len(row) != features:
            raise BadRequest(422, f"wrong shape: input[{n}] has {len(row)} values, the model takes "
                                  f"{features} features")
        if not all(map(_is_number, row)):
            i = next(i for i, v in enumerate(row) if not _is_number(v))
            raise BadRequest(422, f"input[{n}][{i}] is not a number: {json.dumps(row[i])[:40]}")
    try:
        x = np.array(rows, dtype=np.float64)
    except OverflowError:  # an integer too large for a float64
        x = np.array([[float(v) if abs(v) < 1e308 else np.inf for v in row] for row in rows])
    bad = ~np.isfinite(x)
    if bad.any():
        n, i = np.argwhere(bad)[0]
        raise BadRequest(422, f"input[{n}][{i}] is not a finite number: {x[n, i]}")
    big = np.abs(x) > MAX_ABS
    if big.any():
        n, i = np.argwhere(big)[0]
        raise BadRequest(422, f"input[{n}][{i}] is {x[n, i]:g}, larger in magnitude than "
                              f"{MAX_ABS:g}")
    return x, _parse_target(doc.get("target"), len(rows), classes)


def _parse_target(target: Any, rows: int, classes: int) -> np.ndarray | None:
    if target is None:
        return None
    what = f"'target' must be a class index from 0 to {classes - 1}, or a list of {rows} of them"
    values = target if isinstance(target, list) else [target]
    if isinstance(target, list) and len(target) != rows:
        raise BadRequest(422, f"{what}: got a list of {len(target)}")
    for v in values:
        if type(v) is not int:
            raise BadRequest(422, f"{what}: got {json.dumps(v)[:40]}")
        if not 0 <= v < classes:
            raise BadRequest(422, f"{what}: got {v}")
    return np.broadcast_to(np.asarray(values, dtype=np.int64), (rows,))


def _json_type(v: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(v), "number")


# ------------------------------------------------------------------------------------ app
MODEL = web.AppKey("model", Model)
LIMITS = web.AppKey("limits", dict)
COUNTERS = web.AppKey("counters", Counter)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@web.middleware
async def json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Answer every error, aiohttp's own (404, 405, 413) included, as ``{"error": ...}``."""
    counters = request.app[COUNTERS]
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = {
            404: f"no such path: {request.path} (try POST /saliency, GET /health, GET /stats)",
            405: f"method {request.method} not allowed on {request.path}",
        }.get(exc.status, exc.text or exc.reason)
        response = _error(exc.status, message)
    except Exception as exc:
        if isinstance(exc, ConnectionResetError) and _client_gone(request):
            # The client closed its connection while sending the body: its doing, not a server
            # error. No answer can reach it (aiohttp's attempt to send this one fails quietly).
            counters["client_disconnected"] += 1
            log.info("client disconnected during %s %s", request.method, request.path)
            return web.Response(status=499, reason="Client Closed Request")
        log.exception("error handling %s %s", request.method, request.path)
        response = _error(500, "internal server error")
    counters[f"status_{response.status}"] += 1
    return response


def _client_gone(request: web.Request) -> bool:
    """Whether the request's connection is closed (aiohttp drops the transport when it is lost)."""
    transport = request.transport
    return transport is None or transport.is_closing()


async def handle_saliency(request: web.Request) -> web.Response:
    model, limits, counters = request.app[MODEL], request.app[LIMITS], request.app[COUNTERS]
    counters["in_flight"] += 1
    counters["max_in_flight"] = max(counters["max_in_flight"], counters["in_flight"])
    try:
        max_bytes = limits["max_body_bytes"]
        if request.content_length is not None and request.content_length > max_bytes:
            return _error(413, f"request body too large: {request.content_length} bytes, the "
                               f"limit is {max_bytes}")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:  # chunked, with no Content-Length
            return _error(413, f"request body too large: more than the limit of {max_bytes} bytes")
        try:
            x, target = parse_request(body, model.features, model.classes, limits["max_rows"])
        except BadRequest as exc:
            return _error(exc.status, str(exc))
        result = await saliency(model, x, target)
        counters["rows"] += len(x)
        return web.json_response(result)
    finally:
        counters["in_flight"] -= 1


async def handle_health(request: web.Request) -> web.Response:
    model = request.app[MODEL]
    return web.json_response({
        "status": "ok",
        "features": model.features,
        "classes": model.classes,
        "source": model.source,
        "train_accuracy": model.train_accuracy,
        "test_accuracy": model.test_accuracy,
        **request.app[LIMITS],
    })


async def handle_stats(request: web.Request) -> web.Response:
    engine = dataclasses.asdict(aiograd.get_engine().statistics())
    server = dict(request.app[COUNTERS])
    return web.json_response({"engine": engine, "server": server},
                             dumps=lambda o: json.dumps(o, default=str))


def make_app(
    model: Model, *, max_rows: int = MAX_ROWS, max_body_bytes: int = MAX_BODY_BYTES
) -> web.Application:
    """The service for ``model``: ``POST /saliency``, ``GET /health``, ``GET /stats``."""
    # aiohttp refuses a body of client_max_size bytes or more; allow exactly max_body_bytes.
    app = web.Application(middlewares=[json_errors], client_max_size=max_body_bytes + 1)
    app[MODEL] = model
    app[LIMITS] = {"max_rows": max_rows, "max_body_bytes": max_body_bytes}
    app[COUNTERS] = Counter(in_flight=0, max_in_flight=0, rows=0)
    app.router.add_post("/saliency", handle_saliency)
    app.router.add_get("/health", handle_health)
    app.router.add_get("/stats", handle_stats)
    return app


async def start(
    app: web.Application, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on ``host:port`` (0: a free port); return the runner (``await
    runner.cleanup()`` stops it) and the base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    if ":" in bound_host:  # IPv6
        bound_host = f"[{bound_host}]"
    return runner, f"http://{bound_host}:{bound_port}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the weights")
    parser.add_argument("--epochs", type=int, default=12, help="training epochs (12: about 0.5 s)")
    parser.add_argument("--weights", metavar="FILE",
                        help="serve these weights (.safetensors or .npz, e.g. torch's, saved with "
                             "safetensors.torch.save_file) instead of training at startup")
    parser.add_argument("--save", metavar="FILE",
                        help="after training, write the weights (.safetensors or .npz)")
    parser.add_argument("--max-rows", type=int, default=MAX_ROWS)
    parser.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES)
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop",
                        help="the event loop: uvloop (the default, when it is installed) or "
                             "asyncio's own")
    return parser.parse_args(argv)


async def serve(args: argparse.Namespace) -> None:
    """Train, serve until SIGTERM or Ctrl-C, stop cleanly."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.weights:
        model = load_model(args.weights)
        print(f"loaded a {model.features}-{model.module[0].out_features}-"
              f"{model.module[2].out_features}-{model.classes} MLP from {args.weights}")
    else:
        model = await train_model(args.seed, epochs=args.epochs)
        print(f"trained {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES} MLP in {model.train_seconds:.1f} s: "
              f"accuracy {model.train_accuracy:.1%} (train), {model.test_accuracy:.1%} (held out)")
        if args.save:
            nn.utils.save(model.module.state_dict(), args.save)
            print(f"weights written to {args.save}")
    app = make_app(model, max_rows=args.max_rows, max_body_bytes=args.max_body_bytes)
    runner, url = await start(app, args.host, args.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    print(f"serving on {url} (POST /saliency, GET /health, GET /stats) on "
          f"{type(loop).__module__.split('.')[0]}'s loop; Ctrl-C stops", flush=True)
    try:
        await stop.wait()  # Ctrl-C cancels this (asyncio.Runner), SIGTERM sets it
    finally:
        await runner.cleanup()
        print("stopped", flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        if args.loop == "asyncio":
            asyncio.run(serve(args))
        else:
            aiograd.run(serve(args))  # on uvloop when it is installed


if __name__ == "__main__":
    main()
