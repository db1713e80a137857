"""The HTTP gradient service library, ``aiograd.serving.http``: its endpoints' answers against
``attribute`` computed directly, batching, every kind of bad request (exact status and message),
request ids, overload, timeouts at each stage of a request, the connection cap, HTTP parser
errors, clients that hang up, health and readiness (draining, a stalled batcher), graceful
drain, Prometheus metrics, the access log, and the checks of ``ServerConfig`` and
``serve_module``.

Each server runs on the test's own event loop on a free loopback port (``served``); batches are
held where a test needs a request in flight (``Hold``). Waits are on events or on observable
state, polled with ``asyncio.sleep(0)``; each is bounded by ``anyio.fail_after``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aiograd
from aiograd import nn
from aiograd.nn.utils import save

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("orjson")
prometheus_parser = pytest.importorskip("prometheus_client.parser")

from aiograd.serving import _app  # noqa: E402 - needs aiohttp
from aiograd.serving._attributions import AttributionRequest, attribute, check_request  # noqa: E402
from aiograd.serving.http import (  # noqa: E402
    ENDPOINTS,
    STATE,
    BadRequest,
    Limits,
    ModelError,
    ServerConfig,
    make_app,
    make_runner,
    parse,
    serve,
    serve_module,
)

HANG = 60  # seconds before a test that should finish at once is failed as hung
SOON = 5  # seconds within which a timer of a fraction of a second must have fired
once = pytest.mark.aiograd(backends=["asyncio"])  # HTTP plumbing: one loop is enough

FEATURES, CLASSES = 6, 3
X = np.random.default_rng(1).standard_normal((4, FEATURES))
BASELINES = np.random.default_rng(2).standard_normal((4, FEATURES)) * 0.1
ROW = [0.5] * FEATURES
GENERATED_ID = re.compile(r"[0-9a-f]+-[0-9a-f]+")  # the server's own request ids: pid-counter
PATHS_HELP = ("(POST /saliency, /input-x-gradient, /integrated-gradients, /smoothgrad; GET /health, "
              "/health/live, /health/ready, /metrics, /stats)")


def _module() -> nn.Module:
    aiograd.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(), nn.Linear(16, CLASSES))


@pytest.fixture(scope="module")
def model():
    return aiograd.run(serve_module(_module()))


# ------------------------------------------------------------------------------------ helpers
def _json_ready(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in doc.items()}


@dataclasses.dataclass
class Server:
    app: Any
    runner: Any
    host: str
    port: int
    session: Any

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def state(self) -> Any:
        return self.app[STATE]

    async def post(self, path: str, doc: Any, headers: dict[str, str] | None = None):
        """(status, JSON body, headers) of a POST of ``doc`` (bytes and str as they are)."""
        data = doc if isinstance(doc, (bytes, str)) else json.dumps(_json_ready(doc))
        async with self.session.post(self.url + path, data=data, headers=headers) as r:
            return r.status, await r.json(), r.headers

    async def get(self, path: str, headers: dict[str, str] | None = None):
        async with self.session.get(self.url + path, headers=headers) as r:
            body = await r.read()
            doc = json.loads(body) if r.content_type == "application/json" else body.decode()
            return r.status, doc, r.headers

    async def stats(self) -> dict[str, Any]:
        status, doc, _ = await self.get("/stats")
        assert status == 200, doc
        return doc

    async def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample of ``/metrics``: (name, sorted labels) -> value."""
        status, text, headers = await self.get("/metrics")
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=")
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in prometheus_parser.text_string_to_metric_families(text)
                for s in family.samples}

    @contextlib.asynccontextmanager
    async def connection(self):
        """A raw TCP connection to the server: (reader, writer)."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            yield reader, writer
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def served(model, config: ServerConfig | None = None, **fields: Any):
    """``make_app(model, config)`` served by ``make_runner`` on a free loopback port."""
    app = make_app(model, config if config is not None else ServerConfig(**fields))
    runner = make_runner(app)
    await runner.setup()
    try:
        site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            yield Server(app, runner, host, port, session)
    finally:
        await runner.cleanup()


class Hold:
    """Replaces the service's ``attribute`` by one that waits for ``release`` before computing:
    ``started`` is set once a batch runs, ``calls`` holds each batch's size and ``cancelled``
    the sizes of the batches cancelled while held."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.release, self.started = asyncio.Event(), asyncio.Event()
        self.calls: list[int] = []
        self.cancelled: list[int] = []
        real = _app.attribute

        async def held(module, items, **kwargs):
            self.calls.append(len(items))
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(len(items))
                raise
            return await real(module, items, **kwargs)

        monkeypatch.setattr(_app, "attribute", held)


async def until(condition) -> None:
    """Wait (a loop turn at a time) until ``condition()`` holds; the caller bounds the wait."""
    while not condition():
        await asyncio.sleep(0)


async def read_answer(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """One HTTP answer read off a raw connection: (status line, headers lower-cased, body)."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    status_line, *lines = head.split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines if line)
    headers = {k.lower(): v for k, v in headers.items()}
    body = await reader.readexactly(int(headers["content-length"]))
    return status_line, headers, body


async def read_to_eof(reader: asyncio.StreamReader, within: float = SOON) -> bytes:
    """Everything until the server closes the connection, which it must do ``within`` s."""
    with anyio.fail_after(within):
        return await reader.read()


def _request(method: str, x: np.ndarray, target: Any = None, **fields: Any) -> AttributionRequest:
    if target is not None:
        target = np.broadcast_to(np.asarray(target, dtype=np.int64), (len(x),)).copy()
    return AttributionRequest(method, np.asarray(x, dtype=np.float64), target, **fields)


#: The answer's key for each endpoint's attributions, and its extra keys.
KEYS = {"/saliency": ("saliency", set()), "/input-x-gradient": ("input_x_gradient", set()),
        "/integrated-gradients": ("integrated_gradients", {"delta"}),
        "/smoothgrad": ("smoothgrad", {"seed"})}


async def check_answer(model, path: str, body: dict[str, Any], request: AttributionRequest) -> None:
    """``body`` is the answer to ``request``: its keys, and its values equal to ``attribute``'s
    for the request computed alone."""
    key, extra = KEYS[path]
    assert set(body) == {"output", "predicted", "target", key} | extra, sorted(body)
    (alone,) = await attribute(model.module, [request], dtype=model.dtype)
    np.testing.assert_allclose(body["output"], alone.output, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(body[key], alone.attributions, rtol=1e-12, atol=1e-14)
    assert np.shape(body[key]) == np.shape(request.x)
    assert body["predicted"] == alone.predicted.tolist() == np.argmax(body["output"], 1).tolist()
    assert body["target"] == alone.target.tolist()
    if request.target is None:
        assert body["target"] == body["predicted"]
    else:
        assert body["target"] == request.target.tolist()
    if "delta" in extra:
        np.testing.assert_allclose(body["delta"], alone.delta, rtol=1e-12, atol=1e-14)
    if "seed" in extra:
        assert body["seed"] == alone.seed


# ----------------------------------------------------------------------------- good requests
GOOD = {
    # (path, body, the same request for ``attribute``)
    "saliency": ("/saliency", {"input": X}, _request("saliency", X)),
    "saliency-targets-abs": ("/saliency", {"input": X, "target": [0, 1, 2, 1], "abs": True},
                             _request("saliency", X, [0, 1, 2, 1], abs=True)),
    "input-x-gradient": ("/input-x-gradient", {"input": X}, _request("input_x_gradient", X)),
    "input-x-gradient-one-target": ("/input-x-gradient", {"input": X[:2], "target": 2},
                                    _request("input_x_gradient", X[:2], 2)),
    "integrated-gradients": ("/integrated-gradients", {"input": X},
                             _request("integrated_gradients", X)),
    "ig-number-baseline": (
        "/integrated-gradients",
        {"input": X, "steps": 16, "method": "riemann_trapezoid", "baseline": 0.25, "target": 1},
        _request("integrated_gradients", X, 1, steps=16, rule="riemann_trapezoid",
                 baseline=np.float64(0.25))),
    "ig-one-row-baseline": (
        "/integrated-gradients", {"input": X, "steps": 7, "method": "riemann_left",
                                  "baseline": BASELINES[0]},
        _request("integrated_gradients", X, steps=7, rule="riemann_left",
                 baseline=BASELINES[:1])),
    "ig-baseline-per-row": (
        "/integrated-gradients", {"input": X, "steps": 9, "method": "riemann_middle",
                                  "baseline": BASELINES, "target": [2, 0, 1, 2]},
        _request("integrated_gradients", X, [2, 0, 1, 2], steps=9, rule="riemann_middle",
                 baseline=BASELINES)),
    "smoothgrad-seed": (
        "/smoothgrad", {"input": X, "seed": 7, "samples": 4, "stdev": 0.3},
        _request("smoothgrad", X, seed=7, samples=4, stdev=0.3)),
    "vargrad-abs-target": (
        "/smoothgrad", {"input": X[:3], "seed": 11, "noise_type": "vargrad", "abs": True,
                        "target": [1, 1, 0], "stdev": 0},  # stdev 0: every sample the same
        _request("smoothgrad", X[:3], [1, 1, 0], seed=11, noise_type="vargrad", abs=True,
                 stdev=0.0)),
    "smoothgrad-sq": (
        "/smoothgrad", {"input": X[:1], "seed": 3, "noise_type": "smoothgrad_sq", "samples": 2},
        _request("smoothgrad", X[:1], seed=3, noise_type="smoothgrad_sq", samples=2)),
}


@once
@pytest.mark.parametrize(("path", "doc", "request_"), GOOD.values(), ids=GOOD)
async def test_each_endpoint_answers_what_attribute_computes(model, path, doc, request_):
    async with served(model) as server:
        status, body, headers = await server.post(path, doc)
    assert status == 200, body
    assert headers["Content-Type"] == "application/json"
    assert GENERATED_ID.fullmatch(headers["X-Request-Id"])
    await check_answer(model, path, body, request_)
    if "seed" in doc:
        assert body["seed"] == doc["seed"]
    if doc.get("noise_type") == "vargrad" and doc.get("stdev") == 0:
        # no noise: no variance, but for rounding (Captum's formula, from the two means)
        np.testing.assert_allclose(body["smoothgrad"], 0.0, rtol=0, atol=1e-15)


@once
async def test_smoothgrad_without_a_seed_reports_one_that_reproduces_it(model):
    doc = {"input": X[:2], "samples": 3, "stdev": 0.5}
    async with served(model) as server:
        (s1, first, _), (s2, second, _) = [await server.post("/smoothgrad", doc) for _ in range(2)]
        assert s1 == s2 == 200
        assert type(first["seed"]) is int and 0 <= first["seed"] < 2**53  # exact in any JSON client
        assert first["seed"] != second["seed"]  # drawn per request
        assert first["smoothgrad"] != second["smoothgrad"]
        status, again, _ = await server.post("/smoothgrad", {**doc, "seed": first["seed"]})
    assert status == 200 and again == first  # the same noise: the same answer, bit for bit
    for body in (first, second):
        await check_answer(model, "/smoothgrad", body,
                           _request("smoothgrad", X[:2], samples=3, stdev=0.5, seed=body["seed"]))


@once
async def test_concurrent_requests_of_every_endpoint_are_batched_each_its_own_answer(model, monkeypatch):
    rng = np.random.default_rng(5)
    cases = []
    for i in range(24):
        x = rng.standard_normal((1 + i % 3, FEATURES))
        target = None if i % 4 == 0 else i % CLASSES
        path = list(ENDPOINTS)[i % 4]
        doc: dict[str, Any] = {"input": x} if target is None else {"input": x, "target": target}
        method, fields = ENDPOINTS[path][0], {}
        if path == "/integrated-gradients":
            fields = {"steps": 3 + i, "rule": "riemann_right"}
            doc.update(steps=3 + i, method="riemann_right", baseline=0.1 * i)
            fields["baseline"] = np.float64(0.1 * i)
        elif path == "/smoothgrad":
            fields = {"seed": i, "samples": 1 + i % 4, "stdev": 0.2}
            doc.update(seed=i, samples=1 + i % 4, stdev=0.2)
        cases.append((path, doc, _request(method, x, target, **fields)))
    hold = Hold(monkeypatch)
    with anyio.fail_after(HANG):
        async with served(model, max_batch_size=64) as server:
            first = asyncio.ensure_future(server.post(*cases[0][:2]))
            await hold.started.wait()  # the first request's batch runs (held): the others queue
            rest = [asyncio.ensure_future(server.post(path, doc)) for path, doc, _ in cases[1:]]
            await until(lambda: server.state.batched.statistics().queued == len(rest))
            hold.release.set()
            answers = [await first, *[await r for r in rest]]
            batching = (await server.stats())["batching"]
    assert hold.calls == [1, 23]  # one batch, every endpoint mixed, for the 23 queued requests
    assert (batching["batches"], batching["items"], batching["max_batch_size"]) == (2, 24, 23)
    for (path, _, request), (status, body, _) in zip(cases, answers):
        assert status == 200, body
        await check_answer(model, path, body, request)


# ------------------------------------------------------------------------------ bad requests
BAD = [
    # (path, body, status, the exact error message)
    ("/saliency", "{not json", 400,
     "invalid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)"),
    ("/saliency", "", 400, "invalid JSON: Input is a zero-length, empty document: line 1 column 1 (char 0)"),
    ("/saliency", '{"input": [[NaN, 0, 0, 0, 0, 0]]}', 400,
     "invalid JSON: unexpected character, expected a JSON value: line 1 column 13 (char 12)"),
    ("/saliency", "[[1, 2]]", 400, "the body must be a JSON object, got a JSON array"),
    ("/saliency", "3", 400, "the body must be a JSON object, got a JSON number"),
    ("/saliency", {"input": [ROW], "inputs": 1}, 422,
     "unknown field 'inputs': /saliency takes 'abs', 'input', 'target'"),
    ("/input-x-gradient", {"input": [ROW], "abs": True}, 422,
     "unknown field 'abs': /input-x-gradient takes 'input', 'target'"),
    ("/saliency", {"target": 1}, 422, "missing field 'input': a list of rows, each 6 numbers"),
    ("/saliency", {"input": "1,2"}, 422,
     "'input' must be a list of rows, each 6 numbers, got a JSON string"),
    ("/saliency", {"input": []}, 422, "'input' has no rows"),
    ("/saliency", {"input": [ROW, [1.0, 2.0]]}, 422,
     "wrong shape: input[1] has 2 values, expected 6 (each row is 6 numbers)"),
    ("/saliency", {"input": ROW}, 422,
     "wrong shape: input[0] must be a list (each row is 6 numbers), got a JSON number"),
    ("/saliency", {"input": [[ROW]]}, 422,
     "wrong shape: input[0] has 1 values, expected 6 (each row is 6 numbers)"),
    ("/saliency", {"input": [ROW, [*ROW[:5], [0.5]]]}, 422, "input[1][5] is not a number: [0.5]"),
    ("/saliency", {"input": [ROW, [0, 0, "x", 0, 0, 0]]}, 422, 'input[1][2] is not a number: "x"'),
    ("/saliency", {"input": [[None, *ROW[1:]]]}, 422, "input[0][0] is not a number: null"),
    ("/saliency", {"input": [ROW, [*ROW[:3], True, *ROW[4:]]]}, 422,
     "input[1][3] is not a number: true"),
    ("/saliency", {"input": [ROW, [*ROW[:4], -2e6, 0]]}, 422,
     "input[1][4] is -2e+06, larger in magnitude than 1e+06"),
    ("/saliency", {"input": [ROW] * 9}, 413, "too many rows in 'input': 9, the limit is 8"),
    ("/integrated-gradients", {"input": [ROW] * 2, "steps": 48}, 413,
     "too much work: 100 rows to compute for 2 input rows and their steps, the limit is 99"),
    ("/smoothgrad", {"input": [ROW] * 3, "samples": 33}, 413,
     "too much work: 102 rows to compute for 3 input rows and their samples, the limit is 99"),
    ("/integrated-gradients", {"input": [ROW], "steps": 0}, 422,
     "'steps' must be an integer from 1 to 1024, got 0"),
    ("/integrated-gradients", {"input": [ROW], "steps": 1025}, 422,
     "'steps' must be an integer from 1 to 1024, got 1025"),
    ("/integrated-gradients", {"input": [ROW], "steps": 5.0}, 422,
     "'steps' must be an integer from 1 to 1024, got 5.0"),
    ("/integrated-gradients", {"input": [ROW], "steps": True}, 422,
     "'steps' must be an integer from 1 to 1024, got true"),
    ("/integrated-gradients", {"input": [ROW], "method": "simpson"}, 422,
     "'method' must be one of 'gausslegendre', 'riemann_left', 'riemann_right', "
     "'riemann_middle', 'riemann_trapezoid', got \"simpson\""),
    ("/integrated-gradients", {"input": [ROW], "method": "riemann_trapezoid", "steps": 1}, 422,
     "'steps' must be at least 2 for the 'riemann_trapezoid' method"),
    ("/integrated-gradients", {"input": [ROW], "method": "riemann_left", "steps": 1}, 422,
     "'steps' must be at least 2 for the 'riemann_left' method"),
    ("/integrated-gradients", {"input": [ROW], "steps": 1}, 200, None),  # one Gauss point: fine
    ("/integrated-gradients", {"input": [ROW], "baseline": "zero"}, 422,
     "'baseline' must be a number, one row or a list of 1 rows, got a JSON string"),
    ("/integrated-gradients", {"input": [ROW], "baseline": [1, 2]}, 422,
     "wrong shape: baseline has 2 values, expected 6 (each row is 6 numbers)"),
    ("/integrated-gradients", {"input": [ROW], "baseline": 2e6}, 422,
     "baseline[0] is 2e+06, larger in magnitude than 1e+06"),
    ("/smoothgrad", {"input": [ROW], "samples": 0}, 422,
     "'samples' must be an integer from 1 to 1024, got 0"),
    ("/smoothgrad", {"input": [ROW], "stdev": -1}, 422,
     "'stdev' must be a number from 0 to 1e+06, got -1"),
    ("/smoothgrad", {"input": [ROW], "stdev": "1"}, 422,
     "'stdev' must be a number from 0 to 1e+06, got \"1\""),
    ("/smoothgrad", {"input": [ROW], "noise_type": "var"}, 422,
     "'noise_type' must be one of 'smoothgrad', 'smoothgrad_sq', 'vargrad', got \"var\""),
    ("/smoothgrad", {"input": [ROW], "seed": -1}, 422,
     "'seed' must be an integer from 0 to 9223372036854775807, got -1"),
    ("/smoothgrad", {"input": [ROW], "seed": 1.5}, 422,
     "'seed' must be an integer from 0 to 9223372036854775807, got 1.5"),
    ("/smoothgrad", {"input": [ROW], "abs": 1}, 422, "'abs' must be true or false, got 1"),
    ("/saliency", {"input": [ROW], "abs": "yes"}, 422, "'abs' must be true or false, got \"yes\""),
    ("/saliency", {"input": [ROW], "target": 3}, 422,
     "'target' must be a class index from 0 to 2, or a list of 1 of them: got 3"),
    ("/saliency", {"input": [ROW], "target": -1}, 422,
     "'target' must be a class index from 0 to 2, or a list of 1 of them: got -1"),
    ("/saliency", {"input": [ROW], "target": 1.0}, 422,
     "'target' must be a class index from 0 to 2, or a list of 1 of them: got 1.0"),
    ("/saliency", {"input": [ROW], "target": True}, 422,
     "'target' must be a class index from 0 to 2, or a list of 1 of them: got true"),
    ("/saliency", {"input": [ROW, ROW], "target": [1]}, 422,
     "'target' must be a class index from 0 to 2, or a list of 2 of them: got a list of 1"),
    ("/saliency", {"input": [ROW, ROW], "target": [1, "2"]}, 422,
     "'target' must be a class index from 0 to 2, or a list of 2 of them: got \"2\""),
]


@once
async def test_bad_requests_get_their_status_and_exact_message(model):
    limits = Limits(max_rows=8, max_work_rows=99)
    async with served(model, limits=limits) as server:
        for path, doc, status, message in BAD:
            got, body, headers = await server.post(path, doc)
            if status == 200:
                assert got == 200, body
                continue
            assert (got, body) == (status, {"error": message}), (path, doc)
            assert headers["Content-Type"] == "application/json"
            assert GENERATED_ID.fullmatch(headers["X-Request-Id"])
        # ... and none of them reached the batcher
        stats = await server.stats()
    assert stats["batching"]["items"] == 1 and stats["server"]["rows"] == 1  # the good one
    assert stats["server"]["in_flight"] == 0
    assert {k: v for k, v in stats["server"].items() if k.startswith("status_4")} == {
        f"status_{s}": sum(status == s for _, _, status, _ in BAD) for s in (400, 413, 422)}


@once
async def test_error_messages_do_not_echo_unbounded_input(model):
    """A 1 MB field name (the default body limit allows it) and a 4000-character path are
    named by their first 40 characters and their length."""
    key = "k" * 1_000_000
    async with served(model) as server:
        status, body, headers = await server.post("/saliency", {"input": [ROW], key: 1})
        assert status == 422 and GENERATED_ID.fullmatch(headers["X-Request-Id"])
        assert body == {"error": f"unknown field {'k' * 40!r}... (1000000 characters): /saliency "
                                 "takes 'abs', 'input', 'target'"}
        path = "/" + "p" * 3999
        status, body, headers = await server.get(path)
        assert status == 404 and GENERATED_ID.fullmatch(headers["X-Request-Id"])
        assert body == {"error": f"no such path: {path[:40]!r}... (4000 characters) {PATHS_HELP}"}
        assert len(body["error"]) < 300
        status, body, _ = await server.post("/gradient", "{}")
        assert (status, body) == (404, {"error": f"no such path: '/gradient' {PATHS_HELP}"})


@once
async def test_wrong_methods_are_405_json_errors(model):
    async with served(model) as server:
        status, body, headers = await server.get("/saliency")
        assert (status, body) == (405, {"error": "method 'GET' not allowed on '/saliency'"})
        assert GENERATED_ID.fullmatch(headers["X-Request-Id"])
        status, body, headers = await server.post("/health/ready", "{}")
        assert (status, body) == (405, {"error": "method 'POST' not allowed on '/health/ready'"})
        assert GENERATED_ID.fullmatch(headers["X-Request-Id"])


@once
async def test_a_405_names_the_allowed_methods(model):
    async with served(model) as server:
        status, _, headers = await server.get("/saliency")
        assert status == 405 and headers.get("Allow") == "POST"


@once
async def test_bodies_over_max_body_bytes_are_413_with_or_without_content_length(model):
    limit = 4096
    async with served(model, max_body_bytes=limit) as server:
        exact = json.dumps({"input": [ROW]})
        exact = exact[:-1] + " " * (limit - len(exact)) + "}"
        assert len(exact) == limit
        status, body, _ = await server.post("/saliency", exact)
        assert status == 200, body  # exactly the limit is accepted
        status, body, headers = await server.post("/saliency", exact + " ")
        assert (status, body) == (413, {"error": "request body too large: 4097 bytes, the limit "
                                                 "is 4096"})
        assert headers["Connection"] == "close" and GENERATED_ID.fullmatch(headers["X-Request-Id"])

        async def chunks():  # no Content-Length: the limit stops it while reading
            yield b'{"input": [['
            for _ in range(5):
                yield b" " * 1000

        async with server.session.post(server.url + "/saliency", data=chunks()) as r:
            assert r.request_info.headers["Transfer-Encoding"] == "chunked"
            assert r.status == 413 and GENERATED_ID.fullmatch(r.headers["X-Request-Id"])
            assert await r.json() == {"error": "request body too large: more than the limit of "
                                               "4096 bytes"}
        assert (await server.stats())["server"]["status_413"] == 2


# ------------------------------------------------------------------------------- request ids
@once
async def test_a_valid_client_request_id_is_echoed_and_an_invalid_one_replaced(model):
    async with served(model) as server:
        for given in ("client-7_a.b:c", "x" * 64):
            _, _, headers = await server.post("/saliency", {"input": [ROW]}, {"X-Request-Id": given})
            assert headers["X-Request-Id"] == given
            status, _, headers = await server.post("/saliency", {}, {"X-Request-Id": given})
            assert status == 422 and headers["X-Request-Id"] == given  # errors too
            _, _, headers = await server.get("/health/live", {"X-Request-Id": given})
            assert headers["X-Request-Id"] == given
        seen = set()
        for bad in ("x" * 65, "has space", "semi;colon", "quote\"", "é", ""):
            _, _, headers = await server.post("/saliency", {"input": [ROW]}, {"X-Request-Id": bad})
            assert headers["X-Request-Id"] != bad and GENERATED_ID.fullmatch(headers["X-Request-Id"])
            seen.add(headers["X-Request-Id"])
        _, _, headers = await server.get("/nowhere")
        seen.add(headers["X-Request-Id"])
    assert len(seen) == 7  # a new id for each


# ---------------------------------------------------------------------------------- overload
@once
async def test_overload_is_a_503_at_once_with_retry_after(model, monkeypatch):
    hold = Hold(monkeypatch)
    with anyio.fail_after(HANG):
        async with served(model, max_batch_size=1, max_queue_size=1) as server:
            running = asyncio.ensure_future(server.post("/saliency", {"input": X[:1]}))
            await hold.started.wait()  # the first request's batch runs (held)
            queued = asyncio.ensure_future(server.post("/smoothgrad", {"input": X[1:2], "seed": 1}))
            await until(lambda: server.state.batched.statistics().queued == 1)
            try:
                status, body, headers = await server.post("/saliency", {"input": X[2:3]})
            finally:
                hold.release.set()
            assert (status, body) == (503, {"error": "overloaded: 1 requests are already queued; "
                                                     "retry later"})
            assert headers["Retry-After"] == "1" and GENERATED_ID.fullmatch(headers["X-Request-Id"])
            assert [(await t)[0] for t in (running, queued)] == [200, 200]
            stats = await server.stats()
    assert hold.calls == [1, 1]
    assert stats["batching"]["rejected"] == 1 and stats["server"]["status_503"] == 1


# ---------------------------------------------------------------------------------- timeouts
@once
async def test_a_request_without_an_answer_in_time_is_a_504_its_batch_cancelled(model, monkeypatch):
    hold = Hold(monkeypatch)
    with anyio.fail_after(HANG):
        async with served(model, request_timeout_s=0.2) as server:
            status, body, headers = await server.post("/saliency", {"input": X[:1]})
            assert (status, body) == (504, {"error": "no answer within 0.2 s; retry later"})
            assert headers["Retry-After"] == "1" and GENERATED_ID.fullmatch(headers["X-Request-Id"])
            await until(lambda: hold.cancelled == [1])  # nobody waits for it: it is stopped
            hold.release.set()
            status, body, _ = await server.post("/saliency", {"input": X[:1]})
            assert status == 200, body
            await check_answer(model, "/saliency", body, _request("saliency", X[:1]))
            stats = await server.stats()
            metrics = await server.metrics()
    assert stats["batching"]["queued"] == 0 and not stats["batching"]["running"]
    assert stats["batching"]["cancelled"] == 1 and stats["server"]["timed_out"] == 1
    assert metrics["aiograd_serving_timeouts_total", (("kind", "answer"),)] == 1
    assert ("aiograd_serving_timeouts_total", (("kind", "body"),)) not in metrics
    assert metrics["aiograd_serving_requests_total", (("endpoint", "/saliency"), ("status", "504"))] == 1


@once
@pytest.mark.parametrize(("config", "seconds"), [
    ({"body_timeout_s": 0.3}, 0.3),
    ({"body_timeout_s": 10.0, "request_timeout_s": 0.2}, 0.2),  # the request's bound is shorter
], ids=["body_timeout", "request_timeout"])
async def test_a_body_that_stops_halfway_is_a_408(model, config, seconds):
    async with served(model, **config) as server, server.connection() as (reader, writer):
        loop = asyncio.get_running_loop()
        sent = loop.time()
        writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{")
        with anyio.fail_after(SOON):
            status_line, headers, body = await read_answer(reader)
        waited = loop.time() - sent
        metrics = await server.metrics()
    assert status_line == "HTTP/1.1 408 Request Timeout"
    assert json.loads(body) == {"error": f"the request body did not arrive within {seconds:g} s"}
    assert headers["connection"] == "close" and GENERATED_ID.fullmatch(headers["x-request-id"])
    assert waited >= seconds - 0.05
    assert metrics["aiograd_serving_timeouts_total", (("kind", "body"),)] == 1


@once
async def test_answers_that_say_connection_close_close_the_connection(model):
    async with served(model, body_timeout_s=0.3, max_body_bytes=4096) as server:
        async with server.connection() as (reader, writer):  # the body stops halfway: 408
            writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{")
            answer = await read_to_eof(reader, within=2.0)
            assert answer.startswith(b"HTTP/1.1 408 ")
        async with server.connection() as (reader, writer):  # too large a body, all sent: 413
            writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n"
                         + b" " * 5000)
            answer = await read_to_eof(reader, within=2.0)
            assert answer.startswith(b"HTTP/1.1 413 ")


@once
async def test_idle_and_slow_connections_are_closed_after_idle_timeout(model):
    """A connection that sends nothing, or part of a request head (slowloris), is closed
    without an answer after idle_timeout_s; a keep-alive connection idle after its answer
    too."""
    async with served(model, idle_timeout_s=0.3) as server:
        loop = asyncio.get_running_loop()

        async def client(data: bytes) -> tuple[bytes, float]:
            async with server.connection() as (reader, writer):
                opened = loop.time()
                writer.write(data)
                return await read_to_eof(reader), loop.time() - opened

        (silent, t1), (partial, t2), (kept, t3) = await asyncio.gather(
            client(b""),
            client(b"GET /health/live HTTP/1.1\r\nHost: t\r\nX-Slow: "),
            client(b"GET /health/live HTTP/1.1\r\nHost: t\r\n\r\n"),
        )
        status, _, _ = await server.get("/health/live")  # the server goes on serving
    assert silent == partial == b""
    head, _, body = kept.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and body == b'{"live":true}'
    assert min(t1, t2, t3) >= 0.25 and status == 200


# ------------------------------------------------------------------------- connection cap
@once
async def test_connections_past_the_cap_are_refused_with_a_503_and_closed(model):
    async with served(model, max_connections=2) as server:
        server_side = server.runner.server
        with anyio.fail_after(HANG):
            async with server.connection() as (r1, w1):
                async with server.connection() as (r2, w2):
                    await until(lambda: len(server_side.connections) == 2)
                    async with server.connection() as (r3, w3):
                        w3.write(b"GET /health/live HTTP/1.1\r\nHost: t\r\n\r\n")
                        status_line, headers, body = await read_answer(r3)
                        assert await read_to_eof(r3) == b""  # closed, its request unread
                    assert status_line == "HTTP/1.1 503 Service Unavailable"
                    assert headers["retry-after"] == "1" and headers["connection"] == "close"
                    assert headers["content-type"] == "application/json"
                    assert json.loads(body) == {"error": "too many connections: this server "
                                                         "process holds 2, its limit; retry later"}
                    # the connections within the cap are served
                    w2.write(b"GET /health/live HTTP/1.1\r\nHost: t\r\n\r\n")
                    assert (await read_answer(r2))[2] == b'{"live":true}'
                await until(lambda: len(server_side.connections) < 2)
                status, body, _ = await server.get("/health/live")  # room again: served
                assert (status, body) == (200, {"live": True})
                metrics = await server.metrics()
    assert metrics["aiograd_serving_connections_refused_total", ()] == 1
    assert metrics["aiograd_serving_connections", ()] == 2  # the first and the session's


# ------------------------------------------------------------------------ HTTP parser errors
PARSER_ERRORS = {
    # (the request, a pattern of the message: aiohttp's C parser's or its Python parser's)
    "request line": (b"GARBAGE\r\n\r\n", r"(?i)invalid method|bad HTTP method"),
    "header": (b"GET /health/live HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n", r"(?i)header"),
    "long header": (b"GET /health/live HTTP/1.1\r\nHost: t\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n",
                    r"8190"),
    "chunk": (b"POST /saliency HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
              r"(?i)chunk|zz"),  # the Python parser names only the bad size
    "content-length": (b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Length: ten\r\n\r\n",
                       r"(?i)content-length"),
}


@once
async def test_http_parser_errors_are_json_400s_and_logged_without_error(model, caplog):
    caplog.set_level(logging.DEBUG)
    async with served(model) as server:
        with anyio.fail_after(HANG):
            for raw, pattern in PARSER_ERRORS.values():
                async with server.connection() as (reader, writer):
                    writer.write(raw)
                    answer = await read_to_eof(reader)  # answered, then closed
                head, _, body = answer.partition(b"\r\n\r\n")
                status_line, *lines = head.decode().split("\r\n")
                headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)}
                assert re.fullmatch(r"HTTP/1\.[01] 400 Bad Request", status_line), answer[:300]
                # The connection closes (above), and the answer says so: HTTP/1.0 means it.
                assert headers.get("connection", "close" if status_line.startswith("HTTP/1.0")
                                   else None) == "close"
                assert headers["content-type"] == "application/json"
                error = json.loads(body)["error"]
                assert list(json.loads(body)) == ["error"] and len(error) < 300
                assert error.startswith("bad HTTP request: ") and re.search(pattern, error), error
            status, body, _ = await server.get("/health/live")  # it goes on serving
            metrics = await server.metrics()
    assert (status, body) == (200, {"live": True})
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [r for r in caplog.records if r.exc_info or r.exc_text] == []
    bad = [r.getMessage() for r in caplog.records if "bad HTTP request" in r.getMessage()]
    assert len(bad) == len(PARSER_ERRORS)
    assert all(r.levelno == logging.INFO for r in caplog.records if "bad HTTP request" in r.getMessage())
    assert metrics["aiograd_serving_requests_total", (("endpoint", "other"), ("status", "400"))] == len(PARSER_ERRORS)


@once
async def test_a_malformed_chunk_after_the_head_is_a_400_at_once(model, caplog):
    """With either of aiohttp's parsers: its C parser queued the error as the next request's,
    and the body being read waited for its timeout (a 408, here after 30 s)."""
    caplog.set_level(logging.INFO)
    async with served(model, body_timeout_s=30) as server, server.connection() as (reader, writer):
        writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
        with anyio.fail_after(HANG):
            await until(lambda: server.state.counters["in_flight"] == 1)  # reading the body
        with anyio.fail_after(SOON):  # not the body timeout
            writer.write(b"zz\r\n")
            status_line, _, body = await read_answer(reader)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert status_line.endswith(" 400 Bad Request")
    assert json.loads(body)["error"].startswith("bad HTTP request: ")


# ---------------------------------------------------------------------------- hung-up clients
async def _send_and_hang_up(server: Server, body: bytes) -> None:
    """A client that sends a whole request and closes at once (any client timeout does this)."""
    async with server.connection() as (_, writer):
        writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        await writer.drain()


@once
@pytest.mark.parametrize("burst", [1, 8, 64])
async def test_clients_that_hang_up_at_once_never_wedge_the_batcher(model, burst):
    body = json.dumps({"input": X[:1].tolist()}).encode()
    async with served(model, max_batch_size=8) as server:
        with anyio.fail_after(HANG):
            for _ in range(10 if burst == 1 else 3):
                await asyncio.gather(*(_send_and_hang_up(server, body) for _ in range(burst)))
                status, answer, _ = await server.post("/saliency", {"input": X[1:2]})
                assert status == 200, answer
            await check_answer(model, "/saliency", answer, _request("saliency", X[1:2]))
            batching = (await server.stats())["batching"]
    assert batching["queued"] == 0 and not batching["running"]


# ------------------------------------------------------------------------------------ health
@once
async def test_health_live_ready_and_the_model_description(model):
    config = ServerConfig(limits=Limits(max_rows=10), max_body_bytes=5000, max_batch_size=7,
                          batch_wait_s=0.001, max_queue_size=30, request_timeout_s=2.5)
    async with served(model, config) as server:
        status, body, headers = await server.get("/health/live")
        assert (status, body) == (200, {"live": True})
        assert GENERATED_ID.fullmatch(headers["X-Request-Id"])
        status, body, _ = await server.get("/health/ready")
        assert (status, body) == (200, {"ready": True})
        status, health, _ = await server.get("/health")
        assert status == 200
        assert health == {
            "status": "ok", "ready": True, "input_shape": [FEATURES], "classes": CLASSES,
            "dtype": "float64", "source": "built in the process",
            "endpoints": ["/saliency", "/input-x-gradient", "/integrated-gradients", "/smoothgrad"],
            "limits": {"max_rows": 10, "max_work_rows": 8192, "max_abs": 1e6, "max_steps": 1024,
                       "max_samples": 1024, "max_body_bytes": 5000, "request_timeout_s": 2.5},
            "batching": {"enabled": True, "max_batch_size": 7, "batch_wait_s": 0.001,
                         "max_queue_size": 30},
        }
        server.state.draining = True
        status, body, _ = await server.get("/health/ready")
        assert (status, body) == (503, {"ready": False, "reason": "draining: the server is stopping"})
        status, health, _ = await server.get("/health")
        assert status == 200 and (health["status"], health["ready"]) == ("not ready", False)
        status, body, _ = await server.get("/health/live")
        assert (status, body) == (200, {"live": True})  # live: do not restart a draining server
        server.state.draining = False
        assert (await server.get("/health/ready"))[:2] == (200, {"ready": True})


@once
async def test_health_and_stats_say_when_batching_is_off(model):
    async with served(model, batching=False) as server:
        status, body, _ = await server.post("/saliency", {"input": X})
        assert status == 200
        await check_answer(model, "/saliency", body, _request("saliency", X))
        health = (await server.get("/health"))[1]
        stats = await server.stats()
        ready = await server.get("/health/ready")
    assert health["batching"]["enabled"] is False and stats["batching"] is None
    assert stats["server"]["status_200"] >= 1 and stats["server"]["rows"] == 4
    assert ready[:2] == (200, {"ready": True})


@once
async def test_ready_turns_false_while_the_batcher_makes_no_progress(model, monkeypatch):
    hold = Hold(monkeypatch)
    with anyio.fail_after(HANG):
        async with served(model, max_batch_size=1, stall_s=0.2) as server:
            assert (await server.get("/health/ready"))[:2] == (200, {"ready": True})
            first = asyncio.ensure_future(server.post("/saliency", {"input": X[:1]}))
            await hold.started.wait()
            second = asyncio.ensure_future(server.post("/saliency", {"input": X[1:2]}))
            await until(lambda: server.state.batched.statistics().queued == 1)
            try:
                while (ready := await server.get("/health/ready"))[0] == 200:
                    assert ready[1] == {"ready": True}
                live = await server.get("/health/live")
                health = (await server.get("/health"))[1]
            finally:
                hold.release.set()
            status, body, _ = ready
            assert status == 503 and list(body) == ["ready", "reason"] and body["ready"] is False
            match = re.fullmatch(r"no batch progress for (\d+\.\d) s with 1 requests queued "
                                 r"\(stall_s=0\.2\)", body["reason"])
            assert match and float(match[1]) >= 0.2, body
            assert live[:2] == (200, {"live": True})
            assert (health["status"], health["ready"]) == ("not ready", False)
            assert [(await t)[0] for t in (first, second)] == [200, 200]
            assert (await server.get("/health/ready"))[:2] == (200, {"ready": True})


# ---------------------------------------------------------------------------- graceful drain
@contextlib.asynccontextmanager
async def serving(app):
    """``serve(app, port 0)`` in a task, stopped by the ``stop`` event it yields with the URL."""
    stop, urls = asyncio.Event(), []
    task = asyncio.ensure_future(serve(app, "127.0.0.1", 0, announce=urls.append, stop=stop))
    try:
        with anyio.fail_after(HANG):
            await until(lambda: urls or task.done())
        if task.done():
            await task  # it failed: say why
        yield urls[0], stop, task
    finally:
        stop.set()
        with anyio.fail_after(HANG):
            await task


@once
async def test_a_stopping_server_answers_the_requests_in_flight_and_returns(model, monkeypatch):
    hold = Hold(monkeypatch)
    app = make_app(model, ServerConfig(drain_s=5.0))
    loop = asyncio.get_running_loop()
    async with serving(app) as (url, stop, task), aiohttp.ClientSession() as session:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
        host, port = url.removeprefix("http://").split(":")
        with anyio.fail_after(HANG):
            async def post():
                async with session.post(f"{url}/saliency", json={"input": X[:2].tolist()}) as r:
                    return r.status, await r.json()

            held = asyncio.ensure_future(post())
            await hold.started.wait()
            assert not app[STATE].draining
            stopped_at = loop.time()
            stop.set()
            await until(lambda: app[STATE].draining)  # not ready from now on
            assert not task.done()  # it waits for the request in flight
            hold.release.set()
            status, body = await held
            await task
            took = loop.time() - stopped_at
        assert status == 200, body
        await check_answer(model, "/saliency", body, _request("saliency", X[:2]))
        assert took < 5.0  # well within drain_s: it returned once the request was answered
        with pytest.raises(OSError):  # no longer listening
            await asyncio.open_connection(host, int(port))


@once
async def test_a_stopping_server_cuts_off_requests_held_past_drain_s(model, monkeypatch):
    hold = Hold(monkeypatch)
    app = make_app(model, ServerConfig(drain_s=0.3))
    loop = asyncio.get_running_loop()
    try:
        async with serving(app) as (url, stop, task), aiohttp.ClientSession() as session:
            with anyio.fail_after(HANG):
                async def post():
                    async with session.post(f"{url}/saliency", json={"input": X[:1].tolist()}) as r:
                        return r.status

                held = asyncio.ensure_future(post())
                await hold.started.wait()
                stopped_at = loop.time()
                stop.set()
            with anyio.fail_after(SOON):  # about 2 x drain_s: aiohttp waits, cancels, waits
                await task
            took = loop.time() - stopped_at
            with pytest.raises(aiohttp.ClientError), anyio.fail_after(HANG):
                await held  # cut off: the connection closes without an answer
            await until(lambda: hold.cancelled == [1])  # and its batch stopped
    finally:
        hold.release.set()
    assert 0.25 <= took < SOON


# ----------------------------------------------------------------------------------- metrics
@once
async def test_metrics_count_requests_latencies_and_batches(model):
    async with served(model) as server:
        for _ in range(2):
            assert (await server.post("/saliency", {"input": X[:2]}))[0] == 200
        assert (await server.post("/smoothgrad", {"input": X[:1], "samples": 2}))[0] == 200
        assert (await server.post("/saliency", {"input": []}))[0] == 422
        for path in ("/no-such-path-1", "/no-such-path-2/x"):
            assert (await server.get(path))[0] == 404
        stats = await server.stats()
        status, text, headers = await server.get("/metrics")
        metrics = await server.metrics()
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=")
    assert "no-such-path" not in text  # random paths make no labels

    def requests(endpoint, code):
        return metrics.get(("aiograd_serving_requests_total",
                            (("endpoint", endpoint), ("status", code))))

    assert requests("/saliency", "200") == 2 and requests("/saliency", "422") == 1
    assert requests("/smoothgrad", "200") == 1 and requests("other", "404") == 2
    assert requests("/stats", "200") == 1 and requests("/metrics", "200") == 1  # the first scrape
    labelled = {dict(labels)["endpoint"] for (name, labels) in metrics
                if name == "aiograd_serving_requests_total"}
    assert labelled == {"/saliency", "/smoothgrad", "other", "/stats", "/metrics"}
    duration = "aiograd_serving_request_duration_seconds"
    assert metrics[f"{duration}_count", (("endpoint", "/saliency"),)] == 3
    assert metrics[f"{duration}_count", (("endpoint", "other"),)] == 2
    assert metrics[f"{duration}_bucket", (("endpoint", "/saliency"), ("le", "+Inf"))] == 3
    assert 0 < metrics[f"{duration}_sum", (("endpoint", "/saliency"),)] < 3 * HANG
    assert stats["batching"]["batches"] == 3  # one request a batch: each came alone
    assert metrics["aiograd_serving_batch_size_count", ()] == 3
    assert metrics["aiograd_serving_batch_size_sum", ()] == 3
    assert metrics["aiograd_serving_batch_size_bucket", (("le", "1.0"),)] == 3
    # rows in the batches, steps and samples expanded: 2 + 2 + 1 x (2 samples + 1)
    assert metrics["aiograd_serving_batch_rows_sum", ()] == 7
    assert metrics["aiograd_serving_in_flight", ()] == 0
    assert metrics["aiograd_serving_queue_depth", ()] == 0
    assert metrics["aiograd_serving_connections", ()] == 1  # the session's one connection
    assert metrics["aiograd_serving_connections_refused_total", ()] == 0


# -------------------------------------------------------------------------------- access log
@once
async def test_the_access_log_has_one_line_per_request(model, caplog):
    caplog.set_level(logging.INFO, logger="aiograd.serving.access")

    def lines():
        return [r for r in caplog.records if r.name == "aiograd.serving.access"]

    async with served(model, access_log=True) as server:
        with anyio.fail_after(HANG):
            await server.post("/saliency", {"input": [ROW]}, {"X-Request-Id": "req-1"})
            await server.post("/saliency", {"input": []}, {"X-Request-Id": "req-2"})
            _, _, headers = await server.get("/nowhere")
            await until(lambda: len(lines()) == 3)  # logged once the answer is written
    assert [r.levelno for r in lines()] == [logging.INFO] * 3
    messages = [r.getMessage() for r in lines()]
    assert re.fullmatch(r'req-1 127\.0\.0\.1 "POST /saliency" 200 \d+ [\d.]+ms', messages[0])
    assert re.fullmatch(r'req-2 127\.0\.0\.1 "POST /saliency" 422 \d+ [\d.]+ms', messages[1])
    assert re.fullmatch(rf'{headers["X-Request-Id"]} 127\.0\.0\.1 "GET /nowhere" 404 \d+ [\d.]+ms',
                        messages[2])


@once
async def test_no_access_log_unless_asked(model, caplog):
    caplog.set_level(logging.INFO, logger="aiograd.serving.access")
    async with served(model) as server:
        assert (await server.post("/saliency", {"input": [ROW]}))[0] == 200
    assert [r for r in caplog.records if r.name == "aiograd.serving.access"] == []


# ------------------------------------------------------------------------------ ServerConfig
BAD_CONFIGS = [
    ({"request_timeout_s": 0}, "request_timeout_s must be a finite number of seconds > 0, got 0"),
    ({"body_timeout_s": -1.0}, "body_timeout_s must be a finite number of seconds > 0, got -1.0"),
    ({"idle_timeout_s": float("inf")},
     "idle_timeout_s must be a finite number of seconds > 0, got inf"),
    ({"stall_s": float("nan")}, "stall_s must be a finite number of seconds > 0, got nan"),
    ({"drain_s": -1}, "drain_s must be a finite number of seconds >= 0, got -1"),
    ({"batch_wait_s": float("inf")},
     "batch_wait_s must be a finite number of seconds >= 0, got inf"),
    ({"max_connections": 0}, "max_connections must be at least 1, got 0"),
    ({"max_body_bytes": 0}, "max_body_bytes must be at least 1, got 0"),
    ({"max_batch_size": -2}, "max_batch_size must be at least 1, got -2"),
    ({"max_queue_size": 0}, "max_queue_size must be at least 1, got 0"),
]


@pytest.mark.parametrize(("fields", "message"), BAD_CONFIGS, ids=[next(iter(f)) for f, _ in BAD_CONFIGS])
def test_server_config_refuses_bad_values(fields, message):
    with pytest.raises(ValueError) as info:
        ServerConfig(**fields)
    assert str(info.value) == message


def test_server_config_takes_the_edge_values():
    config = ServerConfig(drain_s=0, batch_wait_s=0.0, max_connections=1, request_timeout_s=1e-3)
    assert (config.drain_s, config.max_connections, config.request_timeout_s) == (0, 1, 1e-3)


# ------------------------------------------------------------------------------ serve_module
class _RowSum(nn.Module):
    """Its output is one number per row: not (rows, classes)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(FEATURES, 3)

    def forward(self, x):
        return self.linear(x).sum(1)


class _Centred(nn.Module):
    """Subtracts the batch's mean: each row's output depends on the other rows."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(FEATURES, 3)

    def forward(self, x):
        h = self.linear(x)
        return h - h.mean(0, keepdim=True)


@once
async def test_serve_module_refuses_what_it_cannot_serve_in_one_line():
    cases = [
        (lambda: serve_module(object()),
         "the model to serve must be an aiograd.nn.Module, got object"),
        (lambda: serve_module(nn.Sequential(nn.Conv1d(2, 4, 3), nn.Flatten())),
         "the input shape of one row cannot be read off the model (its first layer is not a "
         "Linear): give it, e.g. --input-shape 3,32,32"),
        (lambda: serve_module(_RowSum()),
         "the model must map (rows, 6) to (rows, classes); on 2 rows it gave (2,)"),
        (lambda: serve_module(_module(), input_shape=(5,)),
         None),  # fails in the model: checked by the prefix below
        (lambda: serve_module(_module(), input_shape=(0,)),
         "the input shape must be positive sizes, got (0,)"),
        (lambda: serve_module(nn.Sequential(nn.Linear(FEATURES, 3),
                                            nn.BatchNorm1d(3, track_running_stats=False))),
         "the model's BatchNorm1d '1' without running statistics (track_running_stats=False) "
         "normalises with the statistics of the whole batch even in evaluation mode: batched "
         "requests would change each other's gradients"),
    ]
    for make, message in cases:
        with pytest.raises(ModelError) as info:
            await make()
        text = str(info.value)
        assert "\n" not in text and isinstance(info.value, ValueError)
        if message is None:
            assert text.startswith("the model fails on a batch of 2 rows of shape (5,): "), text
        else:
            assert text == message
    with pytest.raises(ModelError) as info:
        await serve_module(_Centred())
    assert str(info.value).startswith("batched gradients would mix requests: "), info.value
    assert "\n" not in str(info.value)
    served_conv = await serve_module(nn.Sequential(nn.Conv1d(2, 4, 3), nn.Flatten()),
                                     input_shape=(2, 5))
    assert (served_conv.input_shape, served_conv.classes) == ((2, 5), 12)  # given: served
    assert (await serve_module(_Centred(), check_rows=False)).classes == 3
    # a batch norm with running statistics is per row in evaluation mode: served
    with_norm = await serve_module(nn.Sequential(nn.Linear(FEATURES, 3), nn.BatchNorm1d(3)))
    assert not with_norm.module.training and with_norm.classes == 3


def _state(**replace: Any) -> dict[str, Any]:
    state = {k: aiograd.tensor(v.numpy()) for k, v in _module().state_dict().items()}
    for k, v in replace.items():
        if v is None:
            del state[k]
        else:
            state[k] = aiograd.tensor(np.asarray(v))
    return state


@once
@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
async def test_serve_module_refuses_weights_that_do_not_fit(tmp_path, suffix):
    complex_dtype = np.complex64  # the one complex type safetensors stores
    cases = [
        ({"2.bias": None, "extra": np.zeros(2)},
         "its keys do not match the model's state dict: missing 1 ('2.bias'); unexpected 1 "
         "('extra')"),
        ({"2.weight": np.zeros((CLASSES, 15))},
         "'2.weight' has shape (3, 15), the model's has (3, 16)"),
        ({"0.weight": np.ones((16, FEATURES), complex_dtype)},
         "'0.weight' is complex64, not real floating point: the model's weights must be float16, "
         "float32 or float64"),
        ({"0.bias": np.zeros(16, np.int64)},
         "'0.bias' is int64, not real floating point: the model's weights must be float16, "
         "float32 or float64"),
        ({"2.bias": np.array([0.0, np.nan, 0.0])},
         "'2.bias' has values that are not finite (NaN or infinity)"),
    ]
    path = tmp_path / f"model{suffix}"
    for replace, message in cases:
        save(_state(**replace), path)
        with pytest.raises(ModelError) as info:
            await serve_module(_module(), weights=str(path))
        assert str(info.value) == f"model{suffix}: {message}"
    path.write_bytes(b"not weights")
    with pytest.raises(ModelError) as info:
        await serve_module(_module(), weights=str(path))
    assert str(info.value).startswith(f"model{suffix}: ") and "\n" not in str(info.value)
    with pytest.raises(ModelError) as info:
        await serve_module(_module(), weights=str(tmp_path / f"missing{suffix}"))
    assert "No such file or directory" in str(info.value) and "\n" not in str(info.value)


@once
async def test_float32_weights_serve_a_float32_model_with_float32_accurate_answers(tmp_path):
    rng = np.random.default_rng(3)  # other weights than the module's own, in float32
    weights = {k: aiograd.tensor(rng.standard_normal(v.shape).astype(np.float32))
               for k, v in _module().state_dict().items()}
    path = tmp_path / "model.safetensors"
    save(weights, path)
    model32 = await serve_module(_module(), weights=str(path))
    assert model32.dtype == np.float32 and model32.source == str(path)
    assert all(p.dtype == np.float32 for p in model32.module.parameters())
    # float64 arithmetic on the same (float32-valued) weights
    reference = await serve_module(_module())
    reference.module.load_state_dict({k: aiograd.tensor(v.numpy().astype(np.float64))
                                      for k, v in weights.items()})
    async with served(model32) as server:
        status, body, _ = await server.post("/integrated-gradients",
                                            {"input": X, "target": 1, "steps": 8})
        health = (await server.get("/health"))[1]
    assert status == 200, body
    assert (health["dtype"], health["source"]) == ("float32", str(path))
    (exact,) = await attribute(reference.module, [_request("integrated_gradients", X, 1, steps=8)])
    np.testing.assert_allclose(body["output"], exact.output, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(body["integrated_gradients"], exact.attributions, rtol=1e-4, atol=1e-5)
    assert not np.array_equal(body["output"], exact.output)  # computed in float32 indeed


# ----------------------------------------------------------------- smuggling and compression
async def _raw_exchange(server: Server, request: bytes) -> bytes:
    """Send ``request`` on a fresh connection; everything the server answers, until it closes."""
    async with server.connection() as (reader, writer):
        writer.write(request)
        await writer.drain()
        with anyio.fail_after(HANG):
            return await reader.read()


@once
@pytest.mark.parametrize("framing", [
    b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",  # CL.TE
    b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n",  # TE.CL
    b"Content-Length: 2\r\nContent-Length: 40\r\n",  # two lengths
    b"Transfer-Encoding: gzip, chunked\r\nTransfer-Encoding: chunked\r\n",
], ids=["CL.TE", "TE.CL", "two lengths", "two encodings"])
async def test_ambiguous_framing_is_refused_and_nothing_is_smuggled(model, framing):
    """A request whose body length two parsers could read differently (request smuggling) is a
    400 that closes the connection: the bytes after it are never taken as a second request."""
    smuggled = b"GET /stats HTTP/1.1\r\nHost: t\r\n\r\n"
    request = (b"POST /saliency HTTP/1.1\r\nHost: t\r\n" + framing + b"\r\n"
               b"0\r\n\r\n" + smuggled)
    async with served(model) as server:
        answer = await _raw_exchange(server, request)
        status, _, _ = await server.get("/health/live")  # still serving
    assert answer.startswith(b"HTTP/1.") and answer.split(b" ", 2)[1] == b"400", answer[:200]
    assert answer.count(b"HTTP/1.") == 1  # one answer: the smuggled GET got none
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"].startswith("bad HTTP request: ")
    assert status == 200


@once
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_compressed_body_that_expands_past_the_limit_is_413(model, encoding):
    """A gzip or deflate body under the limit on the wire that expands a thousandfold (a
    compression bomb: 16 KiB sent, 16 MiB inflated) is refused once its expansion passes
    max_body_bytes, not inflated whole in memory."""
    import zlib

    compressor = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    chunk = b"\0" * (1 << 20)
    body = b"".join(compressor.compress(chunk) for _ in range(16)) + compressor.flush()
    assert len(body) < 32 << 10  # under the limit as sent
    async with served(model, max_body_bytes=64 << 10) as server:
        status, doc, headers = await server.post(
            "/saliency", body, headers={"Content-Encoding": encoding,
                                        "Content-Type": "application/json"})
        # A small compressed body that fits once inflated is read as usual.
        small = zlib.compressobj(9, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
        ok = small.compress(json.dumps({"input": [ROW]}).encode()) + small.flush()
        ok_status, ok_doc, _ = await server.post(
            "/saliency", ok, headers={"Content-Encoding": encoding})
    assert (status, doc) == (413, {"error": "request body too large: more than the limit of "
                                            "65536 bytes"}), doc
    assert headers["Connection"] == "close"
    assert ok_status == 200 and len(ok_doc["saliency"]) == 1, ok_doc


# --------------------------------------------------------- the parser and attribute's checks
_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 70), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["gausslegendre", "riemann_left", "riemann_trapezoid", "vargrad",
                     "smoothgrad_sq", "nope", ""]),
    st.lists(st.integers(-1, 3), max_size=5),
    st.lists(st.lists(st.floats(-2, 2), min_size=FEATURES, max_size=FEATURES), max_size=3),
    st.lists(st.floats(-2, 2), min_size=FEATURES, max_size=FEATURES),
)


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(sorted(ENDPOINTS)), rows=st.integers(1, 3), data=st.data())
def test_what_the_parser_accepts_attribute_accepts(path, rows, data):
    """The service checks each request as it parses it, in the request's own terms, and does
    not run ``check_request`` again: every body ``parse`` accepts must give a request that
    ``check_request`` (with the model's classes) accepts too."""
    keys = sorted({"target"} | ENDPOINTS[path][1])  # the path's own fields
    row = st.lists(st.floats(-2, 2), min_size=FEATURES, max_size=FEATURES)
    near = {  # values near and at the edges of what is valid (3 times in 4), else anything
        "target": st.one_of(st.integers(-1, CLASSES), st.lists(st.integers(-1, CLASSES),
                                                               min_size=rows, max_size=rows + 1)),
        "abs": st.booleans(), "steps": st.integers(0, 60), "samples": st.integers(0, 40),
        "method": st.sampled_from(["gausslegendre", "riemann_left", "riemann_right",
                                   "riemann_middle", "riemann_trapezoid"]),
        "baseline": st.one_of(st.floats(-2, 2), row, st.lists(row, min_size=rows, max_size=rows)),
        "stdev": st.one_of(st.floats(0, 3), st.integers(-1, 3)),
        "noise_type": st.sampled_from(["smoothgrad", "smoothgrad_sq", "vargrad"]),
        "seed": st.integers(-1, 2**63),
    }
    fields = {key: data.draw(st.one_of(near[key], near[key], near[key], _values), label=key)
              for key in data.draw(st.lists(st.sampled_from(keys), unique=True), label="keys")}
    doc = {"input": X[:rows].tolist(), **fields}
    try:
        request = parse(path, json.dumps(doc).encode(), (FEATURES,), CLASSES, Limits(max_work_rows=10**6))
    except BadRequest:
        return
    check_request(request, classes=CLASSES)  # raises ValueError if the parser let a bad one in
    assert np.array_equal(request.x, X[:rows]) and request.method == ENDPOINTS[path][0]
    assert request.target is None or request.target.shape == (rows,)


@once
async def test_an_http_0_9_request_is_refused(model):
    """``GET /health`` without a version (HTTP/0.9) was answered ``HTTP/0.9 200 OK`` with
    headers, which an HTTP/0.9 client cannot read: it is a 505 now, and the connection closes."""
    async with served(model) as server:
        answer = await _raw_exchange(server, b"GET /health\r\n\r\n")
        status, _, _ = await server.get("/health/live")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"505", answer[:200]
    assert json.loads(body) == {"error": "HTTP/0.9 is not supported: send HTTP/1.0 or HTTP/1.1"}
    assert status == 200


@pytest.fixture(scope="module")
def wide():
    """A model of 65,536 features: its answers are large."""
    aiograd.manual_seed(0)
    return aiograd.run(serve_module(nn.Sequential(nn.Linear(1 << 16, 2))))


@once
async def test_a_client_that_never_reads_a_large_answer_is_dropped_after_write_timeout_s(wide):
    """A 21 MB answer to a client that never reads it would hold its handler (and the answer's
    bytes) for good; the connection is dropped after write_timeout_s and the server goes on."""
    rows = np.random.default_rng(0).standard_normal((16, 1 << 16)).round(3)
    body = json.dumps({"input": rows.tolist()}).encode()
    async with served(wide, max_body_bytes=len(body), write_timeout_s=0.5,
                      limits=Limits(max_rows=16)) as server:
        async with server.connection() as (reader, writer):
            writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%b"
                         % (len(body), body))
            await writer.drain()
            with anyio.fail_after(HANG):  # (nothing is read meanwhile)
                await until(lambda: server.state.counters["timed_out"] == 1)
                await until(lambda: server.state.counters["in_flight"] == 0)
            with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
                with anyio.fail_after(HANG):
                    await reader.readexactly(64 << 20)  # the answer's rest never comes
        status, doc, _ = await server.get("/health/live")
        metrics = await server.metrics()
    assert (status, doc) == (200, {"live": True})
    assert metrics["aiograd_serving_timeouts_total", (("kind", "write"),)] == 1
