"""An HTTP service for saliency: the gradient of a model's logit with respect to its input.

    python examples/serve_gradients.py [--host 127.0.0.1] [--port 8080] [--seed 0] [--loop asyncio]
                                       [--weights model.safetensors | --save model.safetensors]
                                       [--workers N] [--max-batch-size 64] [--batch-wait-ms 0]
                                       [--max-queue-size 1024] [--no-batching]

The model is an MLP classifier written with ``aiograd.nn`` (``nn.Sequential`` of ``Linear``,
``Tanh``, ``Linear``, ``Tanh``, ``Linear``: 16 features -> 64 -> 64 -> 4 classes by default).
With ``--weights`` it serves weights from a file: a ``.safetensors`` file written by torch
(``safetensors.torch.save_file(model.state_dict(), path)`` for the same ``torch.nn.Sequential``)
or by aiograd, or an ``.npz``; the sizes are read from the weights. Without it, it trains the
model at startup with ``aiograd.optim.SGD`` on a synthetic task generated from ``--seed`` (about
a second; ``--save`` writes the result). It serves with ``aiohttp.web`` on uvloop when it is
installed, and reads and writes JSON with orjson.

Batching. Concurrent requests are coalesced by ``aiograd.serving.batch``: while one batch runs,
the requests that arrive queue, and the next batch takes up to ``--max-batch-size`` of them, so
one forward and one ``aiograd.grad`` serve them all (``aiograd.serving.per_request_grad``: each
request's own gradient, because the MLP's rows are independent; equal to a request served alone
up to float rounding, as BLAS may round a larger product differently: about 1e-15 relative).
A request that finds the server idle is computed on the loop's next turn, alone, without waiting
for company; ``--batch-wait-ms`` (default 0) only lets the oldest queued request wait that long
for a fuller batch while no batch runs. Past
``--max-queue-size`` queued requests the server answers 503 at once (with ``Retry-After: 1``).
Each request is validated before it joins a batch, so a bad request fails alone (4xx) and
never the batch. ``--no-batching`` computes every request on its own (the comparison).

Processes. ``--workers N`` serves from N processes (0: one per CPU core) on one port: this
process trains or loads the model once, hands the weights to N worker processes (this script
again), which each bind the port with ``SO_REUSEPORT`` so that the kernel spreads connections
among them (Linux), and supervises them: SIGTERM or Ctrl-C stops all, and a worker that dies
stops the service with an error. BLAS runs single-threaded in every process unless
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` is set: the cores belong to requests and workers.

API (JSON in and out):

- ``POST /saliency`` with ``{"input": [[16 numbers], ...], "target": 3}``: ``target`` (optional)
  is one class index for every row, or a list with one per row; left out, each row's predicted
  class is used. Returns ``{"output": [[logits]], "predicted": [...], "target": [...],
  "saliency": [[...]]}``, where ``saliency[n][i]`` is ``d output[n][target[n]] / d input[n][i]``.
- ``GET /health``: ``{"status": "ok", ...}`` with the model's shape, source and accuracy, the
  limits and the batching settings.
- ``GET /stats``: the engine's ``aiograd.get_engine().statistics()``, the batcher's
  ``statistics()`` (``batching``: batches, items, mean and max batch size, queue waits,
  rejections; null with ``--no-batching``), and the server's counters (``pid``: of the process
  that counted them): ``status_<code>`` per answer sent, ``rows``, ``in_flight``,
  ``max_in_flight``, and ``client_disconnected`` for clients that went away before their
  answer (a client event, logged at INFO: no answer, no status counted; the request's handler
  is cancelled, and with it its place in the batch queue, so it is never computed). With
  ``--workers``, each worker answers for itself (``worker`` says which) and a connection goes
  to one worker.

Bad requests get ``{"error": "..."}`` naming the problem: 400 for a body that is not a JSON
object (or not standard JSON: ``NaN``, ``Infinity`` and numbers that overflow a double are not),
422 for a JSON object with a missing or unknown field, a wrong shape, a value that is not a
number (or larger in magnitude than 1e6) or a bad target, 413 for more than ``max_rows`` rows or
a body over ``max_body_bytes``, 404/405 for other paths and methods, 503 when overloaded.

Tests and ``load_test.py`` use :func:`train_model`, :func:`make_app` and :func:`start`.
"""

from __future__ import annotations

import os

# A service's parallelism is its concurrent requests (batched) and its --workers, not BLAS
# threads inside one small product: on a busy 2-core machine OpenBLAS's threads spin waiting for
# a core (measured at 64 concurrent clients: 697 us of CPU per request with its default 2
# threads, 170 us with 1). Set before numpy loads it, unless the environment says otherwise.
if not any(v in os.environ for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")):
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import orjson  # noqa: E402
from aiohttp import web  # noqa: E402

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402
from aiograd import nn, optim, serving  # noqa: E402

FEATURES = 16
HIDDEN = 64
CLASSES = 4
MAX_ROWS = 256
MAX_BODY_BYTES = 1 << 20  # 1 MiB
MAX_ABS = 1e6
#: Seconds a /saliency request may take, from its arrival to its answer: its body, its wait for
#: a batch and its batch (``--request-timeout-s``). Past it: 408 while the body is still
#: coming, 504 after.
REQUEST_TIMEOUT_S = 30.0

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

    @property
    def dtype(self) -> Any:
        return self.module[0].weight.dtype

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
    the weights' shapes.

    A file from anywhere: ``nn.utils.load`` checks it before reading its arrays, and weights
    that are not real floating point (complex, integer, bool), not finite (NaN, inf) or not of
    consistent shapes are refused, each with a one-line ``ValueError`` naming the parameter."""
    state = nn.utils.load(path)
    name = os.path.basename(path)
    if set(state) != {f"{i}.{kind}" for i in (0, 2, 4) for kind in ("weight", "bias")}:
        raise ValueError(f"{path}: expected the weights of Linear, Tanh, Linear, Tanh, Linear "
                         f"(0.weight, 0.bias, 2.weight, ... 4.bias), got {sorted(state)}")
    for key in sorted(state):
        t = state[key]
        if t.dtype.kind != "f":
            raise ValueError(f"{name}: {key!r} is {t.dtype}, not real floating point: the model's "
                             "weights must be float16, float32 or float64")
        if t.ndim != (2 if key.endswith("weight") else 1):
            raise ValueError(f"{name}: {key!r} has shape {tuple(t.shape)}: a Linear's "
                             f"{key.split('.')[1]} has {2 if key.endswith('weight') else 1} dimensions")
    hidden1, features = state["0.weight"].shape
    module = make_module((features, hidden1, state["2.weight"].shape[0], state["4.weight"].shape[0]))
    for key, p in module.state_dict().items():
        if tuple(state[key].shape) != tuple(p.shape):
            raise ValueError(f"{name}: {key!r} has shape {tuple(state[key].shape)}, expected "
                             f"{tuple(p.shape)} (from the other layers' shapes)")
    for key in sorted(state):
        if not np.isfinite(state[key].numpy()).all():
            raise ValueError(f"{name}: {key!r} has values that are not finite (NaN or infinity)")
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


@dataclasses.dataclass(frozen=True)
class SaliencyRequest:
    """One validated request: its input rows and targets (None: each row's predicted class)."""

    x: np.ndarray
    target: np.ndarray | None


async def saliency(model: Model, requests: list[SaliencyRequest]) -> list[dict[str, Any]]:
    """Logits, and the gradient of each row's target logit with respect to that row, for each
    request: one forward and one backward for all of them.

    The MLP's rows are independent, so ``per_request_grad`` gives each request its own gradient
    (up to float rounding: docs/serving.md); its ``grad_output`` is the one-hot of its targets, chosen once the output is known
    (the predicted class where the request gave none)."""

    def one_hot(target: np.ndarray | None) -> Any:
        def seed(logits: aiograd.Tensor) -> np.ndarray:
            y = logits.numpy()
            rows = np.arange(len(y))
            v = np.zeros_like(y)
            v[rows, y.argmax(axis=1) if target is None else target] = 1.0
            return v
        return seed

    results = await serving.per_request_grad(
        model.module, [r.x for r in requests], [one_hot(r.target) for r in requests],
        dtype=model.dtype,
    )
    answers = []
    for r, (logits, grad) in zip(requests, results):
        out = logits.numpy()
        predicted = out.argmax(axis=1)
        answers.append({
            "output": out,
            "predicted": predicted,
            "target": predicted if r.target is None else r.target,
            "saliency": grad.numpy(),
        })
    return answers


# ------------------------------------------------------------------------------- validation
class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


#: JSON numbers (orjson reads them as these), not bool, not strings.
_NUMBER_TYPES = frozenset({float, int})


def _is_number(v: Any) -> bool:
    return type(v) is float or type(v) is int


def _shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for an error message, cut to ``limit`` characters: a message never echoes
    an unbounded piece of the request back (a 1 MB field name, a long path)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def parse_request(
    body: bytes, features: int, classes: int, max_rows: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Check a ``/saliency`` body; return the input rows (float64) and the targets (or None)."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:  # also NaN, Infinity, 1e999: not standard JSON
        raise BadRequest(400, f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(400, f"the body must be a JSON object, got a JSON {_json_type(doc)}")
    unknown = sorted(set(doc) - {"input", "target"})
    if unknown:
        raise BadRequest(422, f"unknown field {_shown(unknown[0])}: expected 'input' and "
                              "optionally 'target'")
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
    # The types of all values at once, at C speed; the slow search only names a culprit.
    if not set(map(type, itertools.chain.from_iterable(rows))) <= _NUMBER_TYPES:
        n, i = next((n, i) for n, row in enumerate(rows) for i, v in enumerate(row)
                    if not _is_number(v))
        raise BadRequest(422, f"input[{n}][{i}] is not a number: "
                              f"{orjson.dumps(rows[n][i]).decode()[:40]}")
    x = np.array(rows, dtype=np.float64)  # orjson's integers fit (it reads larger ones as floats)
    bad = ~np.isfinite(x)  # orjson refuses NaN, Infinity and overflow already: a safety net
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
            raise BadRequest(422, f"{what}: got {orjson.dumps(v).decode()[:40]}")
        if not 0 <= v < classes:
            raise BadRequest(422, f"{what}: got {v}")
    return np.asarray(values if isinstance(target, list) else values * rows, dtype=np.int64)


def _json_type(v: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(v), "number")


# ------------------------------------------------------------------------------------ app
@dataclasses.dataclass(frozen=True)
class Batching:
    """How requests are coalesced (``aiograd.serving.batch``'s arguments); ``enabled=False``
    computes each request on its own."""

    enabled: bool = True
    max_batch_size: int = 64
    batch_wait_timeout_s: float = 0.0
    max_queue_size: int = 1024


MODEL = web.AppKey("model", Model)
LIMITS = web.AppKey("limits", dict)
COUNTERS = web.AppKey("counters", Counter)
COMPUTE = web.AppKey("compute", Any)  # SaliencyRequest -> its answer (batched or not)
BATCHING = web.AppKey("batching", Batching)
WORKER = web.AppKey("worker", dict)


def _json(doc: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    body = orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return _json({"error": message}, status, headers)


@web.middleware
async def json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Answer every error, aiohttp's own (404, 405, 413) included, as ``{"error": ...}``."""
    counters = request.app[COUNTERS]
    try:
        response = await handler(request)
    except asyncio.CancelledError:
        # aiohttp cancels the handler of a connection that is lost (handler_cancellation): a
        # request still queued for a batch leaves the queue, so nothing is computed in vain.
        if _client_gone(request):
            counters["client_disconnected"] += 1
            log.info("client disconnected during %s %s", request.method, request.path)
        raise
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = {
            404: f"no such path: {_shown(request.path)} (try POST /saliency, GET /health, "
                 "GET /stats)",
            405: f"method {_shown(request.method)} not allowed on {_shown(request.path)}",
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
    timeout = limits["request_timeout_s"]
    deadline = asyncio.get_running_loop().time() + timeout  # one bound for the whole request
    try:
        max_bytes = limits["max_body_bytes"]
        if request.content_length is not None and request.content_length > max_bytes:
            return _error(413, f"request body too large: {request.content_length} bytes, the "
                               f"limit is {max_bytes}")
        try:
            async with asyncio.timeout_at(deadline):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:  # chunked, with no Content-Length
            return _error(413, f"request body too large: more than the limit of {max_bytes} bytes")
        except TimeoutError:  # a client that sends its body slowly, or stops halfway
            counters["timed_out"] += 1
            return _error(408, f"the request body did not arrive within {timeout:g} s (the "
                               "server's --request-timeout-s)", {"Connection": "close"})
        try:
            x, target = parse_request(body, model.features, model.classes, limits["max_rows"])
        except BadRequest as exc:
            return _error(exc.status, str(exc))
        try:
            # Leaving the wait cancels it: a request still queued leaves the batcher's queue.
            async with asyncio.timeout_at(deadline):
                result = await request.app[COMPUTE](SaliencyRequest(x, target))
        except serving.Overloaded:
            queue = request.app[BATCHING].max_queue_size
            return _error(503, f"overloaded: {queue} requests are already queued (the server's "
                               "--max-queue-size); retry later", {"Retry-After": "1"})
        except TimeoutError:
            counters["timed_out"] += 1
            return _error(504, f"no answer within {timeout:g} s (the server's "
                               "--request-timeout-s); retry later", {"Retry-After": "1"})
        counters["rows"] += len(x)
        return _json(result)
    finally:
        counters["in_flight"] -= 1


async def handle_health(request: web.Request) -> web.Response:
    model = request.app[MODEL]
    return _json({
        "status": "ok",
        "features": model.features,
        "classes": model.classes,
        "source": model.source,
        "train_accuracy": model.train_accuracy,
        "test_accuracy": model.test_accuracy,
        **request.app[LIMITS],
        "batching": dataclasses.asdict(request.app[BATCHING]),
        **request.app[WORKER],
    })


async def handle_stats(request: web.Request) -> web.Response:
    engine = dataclasses.asdict(aiograd.get_engine().statistics())
    compute = request.app[COMPUTE]
    batching = dataclasses.asdict(compute.statistics()) if request.app[BATCHING].enabled else None
    server = {**request.app[COUNTERS], "pid": os.getpid()}  # which process counted them
    doc = {"engine": engine, "batching": batching, "server": server, **request.app[WORKER]}
    return web.json_response(doc, dumps=lambda o: json.dumps(o, default=str))


def make_app(
    model: Model, *, max_rows: int = MAX_ROWS, max_body_bytes: int = MAX_BODY_BYTES,
    batching: Batching = Batching(), worker: dict[str, int] | None = None,
    request_timeout_s: float = REQUEST_TIMEOUT_S,
) -> web.Application:
    """The service for ``model``: ``POST /saliency``, ``GET /health``, ``GET /stats``."""
    # aiohttp refuses a body of client_max_size bytes or more; allow exactly max_body_bytes.
    app = web.Application(middlewares=[json_errors], client_max_size=max_body_bytes + 1)
    app[MODEL] = model
    app[LIMITS] = {"max_rows": max_rows, "max_body_bytes": max_body_bytes,
                   "request_timeout_s": request_timeout_s}
    app[COUNTERS] = Counter(in_flight=0, max_in_flight=0, rows=0)
    app[BATCHING] = batching
    app[WORKER] = {"worker": worker} if worker else {}
    if batching.enabled:
        @serving.batch(max_batch_size=batching.max_batch_size,
                       batch_wait_timeout_s=batching.batch_wait_timeout_s,
                       max_queue_size=batching.max_queue_size)
        async def compute(requests: list[SaliencyRequest]) -> list[dict[str, Any]]:
            return await saliency(model, requests)

        app[COMPUTE] = compute
    else:
        async def compute_alone(request: SaliencyRequest) -> dict[str, Any]:
            (answer,) = await saliency(model, [request])
            return answer

        app[COMPUTE] = compute_alone
    app.router.add_post("/saliency", handle_saliency)
    app.router.add_get("/health", handle_health)
    app.router.add_get("/stats", handle_stats)
    return app


#: Seconds a stopping server waits for the requests in flight (``--drain-s``).
DRAIN_S = 10.0


async def start(
    app: web.Application, host: str = "127.0.0.1", port: int = 0, *, reuse_port: bool = False,
    drain_s: float = DRAIN_S,
) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on ``host:port`` (0: a free port); return the runner (``await
    runner.cleanup()`` stops it) and the base URL. ``reuse_port``: share the port with other
    processes (``SO_REUSEPORT``), as the workers of ``--workers`` do. ``drain_s``: how long
    ``cleanup()`` waits for the requests in flight (and for connections that have sent none
    yet) before it closes them; aiohttp's own default is 60 s."""
    # handler_cancellation: a client that goes away cancels its handler, and so its place in
    # the batcher's queue (aiohttp's default lets the handler run on for nobody).
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=drain_s)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, reuse_port=reuse_port or None).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, _url(*runner.addresses[0][:2])


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# ------------------------------------------------------------------------------- command line
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
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="serve from N processes sharing the port (0: one per CPU core)")
    parser.add_argument("--max-batch-size", type=int, default=Batching.max_batch_size,
                        help="most requests in one batch")
    parser.add_argument("--batch-wait-ms", type=float, default=0.0,
                        help="how long the oldest queued request may wait for a fuller batch "
                             "while none runs (a request finding the server idle never waits)")
    parser.add_argument("--max-queue-size", type=int, default=Batching.max_queue_size,
                        help="queued requests past which the server answers 503")
    parser.add_argument("--no-batching", action="store_true",
                        help="compute every request on its own")
    parser.add_argument("--request-timeout-s", type=float, default=REQUEST_TIMEOUT_S,
                        metavar="SECONDS", help="a request's bound, from its arrival to its answer "
                        "(408 while its body is still coming, 504 after; default %(default)g)")
    parser.add_argument("--drain-s", type=float, default=DRAIN_S, metavar="SECONDS",
                        help="on SIGTERM, how long the requests in flight may take before their "
                        "connections are closed (default %(default)g)")
    parser.add_argument("--worker-of", metavar="DIR", help=argparse.SUPPRESS)  # see serve_workers
    parser.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.batching = Batching(not args.no_batching, args.max_batch_size, args.batch_wait_ms / 1e3,
                             args.max_queue_size)
    if not 0 < args.request_timeout_s < float("inf"):
        parser.error(f"--request-timeout-s must be a finite number of seconds > 0, got "
                     f"{args.request_timeout_s}")
    if not 0 <= args.drain_s < float("inf"):
        parser.error(f"--drain-s must be a finite number of seconds >= 0, got {args.drain_s}")
    if args.workers == 0:
        args.workers = os.cpu_count() or 1
    if args.workers < 1:
        parser.error(f"--workers must be 0 (one per core) or a positive number, got {args.workers}")
    if args.workers > 1 and not hasattr(socket, "SO_REUSEPORT"):
        parser.error("--workers needs SO_REUSEPORT (Linux, BSD, macOS), which this system lacks: "
                     "run one process per port behind a proxy instead")
    return args


async def prepare_model(args: argparse.Namespace) -> Model:
    """Load ``--weights``, or train (and ``--save``)."""
    if args.weights:
        # main has loaded (and so checked) them already, before serving
        model = getattr(args, "model", None)
        if model is None:
            model = load_model(args.weights)
        print(f"loaded a {model.features}-{model.module[0].out_features}-"
              f"{model.module[2].out_features}-{model.classes} MLP from {args.weights}")
        return model
    model = await train_model(args.seed, epochs=args.epochs)
    print(f"trained {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES} MLP in {model.train_seconds:.1f} s: "
          f"accuracy {model.train_accuracy:.1%} (train), {model.test_accuracy:.1%} (held out)")
    if args.save:
        nn.utils.save(model.module.state_dict(), args.save)
        print(f"weights written to {args.save}")
    return model


def _stop_event() -> asyncio.Event:
    """Set by SIGTERM (Ctrl-C cancels the main task instead: asyncio.Runner)."""
    stop = asyncio.Event()
    with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    return stop


def _describe(args: argparse.Namespace) -> str:
    b = args.batching
    if not b.enabled:
        return "no batching"
    return (f"batches of up to {b.max_batch_size}, wait {b.batch_wait_timeout_s * 1e3:g} ms, "
            f"queue {b.max_queue_size}")


async def serve(args: argparse.Namespace) -> None:
    """Train or load, serve until SIGTERM or Ctrl-C, stop cleanly (one process)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    worker = None
    if args.worker_of:
        model = load_worker_model(args.worker_of)
        worker = {"index": args.worker_index, "pid": os.getpid(), "workers": args.workers}
    else:
        model = await prepare_model(args)
    app = make_app(model, max_rows=args.max_rows, max_body_bytes=args.max_body_bytes,
                   batching=args.batching, worker=worker, request_timeout_s=args.request_timeout_s)
    runner, url = await start(app, args.host, args.port, reuse_port=bool(args.worker_of),
                              drain_s=args.drain_s)
    stop = _stop_event()
    loop_name = type(asyncio.get_running_loop()).__module__.split(".")[0]
    if args.worker_of:
        print(f"worker {args.worker_index} ready on {url} (pid {os.getpid()})", flush=True)
    else:
        print(f"serving on {url} (POST /saliency, GET /health, GET /stats) on {loop_name}'s "
              f"loop, {_describe(args)}; Ctrl-C stops", flush=True)
    try:
        await stop.wait()  # Ctrl-C cancels this (asyncio.Runner), SIGTERM sets it
    finally:
        await runner.cleanup()
        if not args.worker_of:
            print("stopped", flush=True)


# ----------------------------------------------------------------------------------- workers
def load_worker_model(directory: str) -> Model:
    """The model the supervisor prepared (weights and where they came from)."""
    model = load_model(os.path.join(directory, "model.npz"))
    with open(os.path.join(directory, "model.json"), "rb") as f:
        for key, value in orjson.loads(f.read()).items():
            setattr(model, key, value)
    return model


async def serve_workers(args: argparse.Namespace) -> None:
    """``--workers N``: prepare the model once, start N worker processes on one port
    (``SO_REUSEPORT``), relay their output, stop them all on SIGTERM or Ctrl-C or when one dies."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    model = await prepare_model(args)
    with tempfile.TemporaryDirectory(prefix="serve_gradients_") as directory:
        nn.utils.save(model.module.state_dict(), os.path.join(directory, "model.npz"))
        meta = {k: getattr(model, k) for k in
                ("source", "train_accuracy", "test_accuracy", "train_seconds")}
        with open(os.path.join(directory, "model.json"), "wb") as f:
            f.write(orjson.dumps(meta))
        # Hold the port (bound, not listening: no connection comes here) so that port 0 gives
        # every worker the same free port; the workers bind it too, each with SO_REUSEPORT.
        with socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET) as holder:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            holder.bind((args.host, args.port))
            port = holder.getsockname()[1]
            started = await asyncio.gather(
                *(_start_worker(args, i, directory, port) for i in range(args.workers)),
                return_exceptions=True,
            )
        workers = [w for w in started if isinstance(w, asyncio.subprocess.Process)]
        failed = [e for e in started if isinstance(e, BaseException)]
        if failed:
            for w in workers:
                w.terminate()
                await w.wait()
            raise failed[0]
        await _supervise(args, workers, _url(args.host, port))


async def _start_worker(args: argparse.Namespace, index: int, directory: str,
                        port: int) -> asyncio.subprocess.Process:
    passed = ["--host", args.host, "--port", str(port), "--loop", args.loop,
              "--max-rows", str(args.max_rows), "--max-body-bytes", str(args.max_body_bytes),
              "--max-batch-size", str(args.max_batch_size),
              "--batch-wait-ms", str(args.batch_wait_ms),
              "--max-queue-size", str(args.max_queue_size), "--drain-s", str(args.drain_s),
              "--request-timeout-s", str(args.request_timeout_s),
              "--workers", str(args.workers), "--worker-of", directory,
              "--worker-index", str(index)]
    if args.no_batching:
        passed.append("--no-batching")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, os.path.abspath(__file__), *passed, stdout=asyncio.subprocess.PIPE,
    )  # the environment, BLAS threads included (set above), is inherited
    assert proc.stdout is not None
    line = (await proc.stdout.readline()).decode()
    if not line.startswith(f"worker {index} ready"):
        raise RuntimeError(f"worker {index} did not start (exit status {await proc.wait()})")
    return proc


async def _supervise(args: argparse.Namespace, workers: list[asyncio.subprocess.Process],
                     url: str) -> None:
    stop = _stop_event()
    print(f"serving on {url} (POST /saliency, GET /health, GET /stats) from {len(workers)} worker "
          f"processes (pids {', '.join(str(w.pid) for w in workers)}), {_describe(args)}; "
          "Ctrl-C stops", flush=True)
    waits = [asyncio.ensure_future(w.wait()) for w in workers]
    stopping = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait([stopping, *waits], return_when=asyncio.FIRST_COMPLETED)
        died = [i for i, w in enumerate(waits) if w in done]
    finally:
        stopping.cancel()
        for w in workers:
            if w.returncode is None:
                w.terminate()
        for w in workers:
            await w.communicate()  # drains its output too
        print("stopped", flush=True)
    if died:
        i = died[0]
        raise SystemExit(f"worker {i} exited with status {workers[i].returncode}: stopped all")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.weights and not args.worker_of:
        # A bad file is a usage error: one line, exit status 2 (as argparse), before serving.
        try:
            args.model = load_model(args.weights)
        except (OSError, ValueError, ImportError) as exc:
            message = " ".join(str(exc).split())
            print(f"{os.path.basename(sys.argv[0]) or 'serve_gradients.py'}: error: {message}",
                  file=sys.stderr)
            raise SystemExit(2) from None
    entry = serve_workers if args.workers > 1 and not args.worker_of else serve
    with contextlib.suppress(KeyboardInterrupt):
        if args.loop == "asyncio":
            asyncio.run(entry(args))
        else:
            aiograd.run(entry(args))  # on uvloop when it is installed


if __name__ == "__main__":
    main()
