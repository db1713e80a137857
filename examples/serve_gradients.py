"""An HTTP service for gradient attributions of an MLP classifier, on ``aiograd.serving.http``.

    python examples/serve_gradients.py [--port 8080] [--seed 0] [--epochs 12]
                                       [--weights model.safetensors | --save model.safetensors]
                                       [--workers N] [--max-batch-size 64] [--no-batching] ...

The model is an MLP classifier written with ``aiograd.nn`` (``nn.Sequential`` of ``Linear``,
``Tanh``, ``Linear``, ``Tanh``, ``Linear``: 16 features -> 64 -> 64 -> 4 classes by default).
With ``--weights`` it serves weights from a file: a ``.safetensors`` file written by torch
(``safetensors.torch.save_file(model.state_dict(), path)`` for the same ``torch.nn.Sequential``)
or by aiograd, or an ``.npz``; the sizes are read from the weights, which are checked before
they are loaded (a bad file is one line on stderr and exit status 2). Without it, it trains the
model at startup with ``aiograd.optim.SGD`` on a synthetic task generated from ``--seed`` (about
half a second; ``--save`` writes the result).

Everything else is ``aiograd.serving.http``, the service ``python -m aiograd.serving --model
package.module:factory`` runs for any model, and its options (``http.add_arguments``; ``--help``
lists them): the endpoints (``POST /saliency``, ``/input-x-gradient``,
``/integrated-gradients``, ``/smoothgrad``; ``GET /health``, ``/health/live``,
``/health/ready``, ``/metrics``, ``/stats``), the batching of concurrent requests
(``aiograd.serving.batch``: one forward and one backward for every request that queued while
the previous batch ran; each answer equal to the request's alone up to float rounding), the
bounds on every wait, graceful shutdown and ``--workers N`` under gunicorn. docs/serving.md
describes them; examples/README.md shows requests and answers.

BLAS runs single-threaded in every process unless ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` is
set: the cores belong to requests and workers.

Tests and ``load_test.py`` use :func:`train_model`, :func:`load_model`, :func:`make_app` and
:func:`start`.
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
import dataclasses  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from aiohttp import web  # noqa: E402

import aiograd  # noqa: E402
import aiograd.nn.functional as F  # noqa: E402
from aiograd import nn, optim  # noqa: E402
from aiograd.serving import AttributionRequest, attribute, http  # noqa: E402

FEATURES = 16
HIDDEN = 64
CLASSES = 4
MAX_ROWS = 256
MAX_BODY_BYTES = 1 << 20  # 1 MiB
#: Seconds a /saliency request may take, from its arrival to its answer: its body, its wait for
#: a batch and its batch (``--request-timeout-s``). Past it: 408 while the body is still
#: coming, 504 after.
REQUEST_TIMEOUT_S = 30.0

#: Seconds a stopping server waits for the requests in flight (``--drain-s``).
DRAIN_S = 10.0


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
class Model(http.ServedModel):
    """The served classifier (``aiograd.serving.http.ServedModel``: evaluation mode, parameters
    frozen) and, when trained at startup, how it did."""

    train_accuracy: float | None = None
    test_accuracy: float | None = None
    train_seconds: float | None = None

    @property
    def features(self) -> int:
        return self.input_shape[0]

    def predict(self, x: np.ndarray) -> np.ndarray:
        with aiograd.no_grad():
            return self(aiograd.tensor(x)).argmax(dim=1).numpy()

    def describe(self) -> None:
        """What ``/health`` shows of the model besides its shapes and source."""
        self.info = {"train_accuracy": self.train_accuracy, "test_accuracy": self.test_accuracy}


def frozen(module: nn.Sequential, source: str) -> Model:
    """Serve ``module``: evaluation mode, parameters that no longer require grad."""
    module.eval().requires_grad_(False)
    model = Model(module, (module[0].in_features,), module[-1].out_features,
                  np.dtype(module[0].weight.dtype), source)
    model.describe()
    return model


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
    module = make_module().double()  # (float64, as the data; the default dtype is float32)
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
    model.describe()
    return model


# ------------------------------------------------------------------------------------ serving
@dataclasses.dataclass(frozen=True)
class SaliencyRequest:
    """One request's input rows and targets (None: each row's predicted class)."""

    x: np.ndarray
    target: np.ndarray | None = None


async def saliency(model: Model, requests: list[SaliencyRequest]) -> list[dict[str, Any]]:
    """The answers ``POST /saliency`` gives ``requests``, computed directly (one forward and
    one backward for all of them, as the service's batches): the logits, predicted and target
    classes, and the gradient of each row's target logit with respect to that row."""
    results = await attribute(model.module, [AttributionRequest("saliency", r.x, r.target)
                                             for r in requests], dtype=model.dtype)
    return [http.answer("saliency", result) for result in results]


@dataclasses.dataclass(frozen=True)
class Batching:
    """How requests are coalesced (``aiograd.serving.batch``'s arguments); ``enabled=False``
    computes each request on its own."""

    enabled: bool = True
    max_batch_size: int = 64
    batch_wait_timeout_s: float = 0.0
    max_queue_size: int = 1024


def make_app(
    model: Model, *, max_rows: int = MAX_ROWS, max_body_bytes: int = MAX_BODY_BYTES,
    batching: Batching = Batching(), request_timeout_s: float = REQUEST_TIMEOUT_S,
    drain_s: float = DRAIN_S,
) -> web.Application:
    """The service for ``model`` (``aiograd.serving.http.make_app``): ``POST /saliency`` and the
    other attribution endpoints, ``GET /health``, ``/health/live``, ``/health/ready``,
    ``/metrics`` and ``/stats``."""
    config = http.ServerConfig(
        limits=http.Limits(max_rows=max_rows), max_body_bytes=max_body_bytes,
        batching=batching.enabled, max_batch_size=batching.max_batch_size,
        batch_wait_s=batching.batch_wait_timeout_s, max_queue_size=batching.max_queue_size,
        request_timeout_s=request_timeout_s, drain_s=drain_s,
    )
    return http.make_app(model, config)


async def start(app: web.Application, host: str = "127.0.0.1", port: int = 0) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on ``host:port`` (0: a free port); return the runner (``await
    runner.cleanup()`` stops it, draining for at most the app's ``drain_s``) and the base URL."""
    runner = http.make_runner(app) if http.STATE in app else web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    host, port = runner.addresses[0][:2]
    return runner, f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# ------------------------------------------------------------------------------- command line
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model = parser.add_argument_group("the model")
    model.add_argument("--seed", type=int, default=0, help="seed of the data and the weights")
    model.add_argument("--epochs", type=int, default=12, help="training epochs (12: about 0.5 s)")
    model.add_argument("--weights", metavar="FILE",
                       help="serve these weights (.safetensors or .npz, e.g. torch's, saved with "
                            "safetensors.torch.save_file) instead of training at startup")
    model.add_argument("--save", metavar="FILE",
                       help="after training, write the weights (.safetensors or .npz)")
    http.add_arguments(parser)
    parser.set_defaults(max_rows=MAX_ROWS, max_body_bytes=MAX_BODY_BYTES,
                        request_timeout_s=REQUEST_TIMEOUT_S, drain_s=DRAIN_S)
    args = parser.parse_args(argv)
    http.check_arguments(parser, args)
    return args


async def prepare_model(args: argparse.Namespace) -> Model:
    """Load ``--weights``, or train (and ``--save``)."""
    if args.weights:
        try:
            model = load_model(args.weights)
        except (OSError, ValueError, ImportError) as exc:  # a usage error: one line, status 2
            raise http.ModelError(str(exc)) from None
        print(f"loaded a {model.features}-{model.module[0].out_features}-"
              f"{model.module[2].out_features}-{model.classes} MLP from {args.weights}", flush=True)
        return model
    model = await train_model(args.seed, epochs=args.epochs)
    print(f"trained {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES} MLP in {model.train_seconds:.1f} s: "
          f"accuracy {model.train_accuracy:.1%} (train), {model.test_accuracy:.1%} (held out)",
          flush=True)
    if args.save:
        nn.utils.save(model.module.state_dict(), args.save)
        print(f"weights written to {args.save}", flush=True)
    return model


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    http.run(lambda: prepare_model(args), args, prog="serve_gradients.py")


if __name__ == "__main__":
    main()
