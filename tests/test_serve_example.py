"""The gradient service example (examples/serve_gradients.py) and its load test (load_test.py).

The service runs in the test's own event loop on a free loopback port; its answers are checked
against aiograd computed directly and against torch (float64), concurrently too, and every kind of
bad request must get its 4xx status and a message naming the problem."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import logging
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from helpers import entering, requires_torch, torch

import aiograd

aiohttp = pytest.importorskip("aiohttp")
http = pytest.importorskip("aiograd.serving.http")
orjson = pytest.importorskip("orjson")

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str) -> ModuleType:
    """Import examples/<name>.py as a module (the examples are scripts, not a package)."""
    module_name = f"_example_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, ROOT / "examples" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses look their module up while it loads
        spec.loader.exec_module(module)
    return sys.modules[module_name]


serve = _load("serve_gradients")
load_test = _load("load_test")
BadHTTP = load_test.BadHTTPResponse

MAX_ROWS, MAX_BODY = 32, 16384


@pytest.fixture(scope="module")
def model():
    """Trained once for the module, on a loop of its own (the weights are plain arrays)."""
    return aiograd.run(serve.train_model(0, epochs=4))


@contextlib.asynccontextmanager
async def service(model):
    """The service on a free loopback port, on the test's own loop: its base URL."""
    app = serve.make_app(model, max_rows=MAX_ROWS, max_body_bytes=MAX_BODY)
    runner, base = await serve.start(app)
    try:
        yield base
    finally:
        await runner.cleanup()


def client_session():
    return aiohttp.ClientSession()


#: The test gets ``url`` (the service) and ``session`` (an aiohttp client session).
with_service = entering("url", service)
with_session = entering("session", client_session)


def _inputs(seed: int, rows: int, features: int = serve.FEATURES) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, features))


async def _post(session, url: str, payload) -> tuple[int, dict]:
    data = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
    async with session.post(f"{url}/saliency", data=data) as response:
        return response.status, await response.json()


async def _reference(model, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Logits and saliency computed here another way: grad of the picked logits' sum."""
    inp = aiograd.tensor(x, requires_grad=True)
    logits = model(inp)
    (g,) = await aiograd.grad(logits[np.arange(len(x)), target].sum(), inp)
    return logits.detach().numpy(), g.numpy()


def _torch_module(model):
    """torch's ``nn.Sequential`` of the same layers, with the served model's weights."""
    module = torch.nn.Sequential(
        torch.nn.Linear(model.features, model.module[0].out_features), torch.nn.Tanh(),
        torch.nn.Linear(model.module[0].out_features, model.module[2].out_features), torch.nn.Tanh(),
        torch.nn.Linear(model.module[2].out_features, model.classes),
    ).double()
    module.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in model.module.state_dict().items()})
    return module


def _torch_reference(model, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    out = _torch_module(model)(h)
    (g,) = torch.autograd.grad(out[torch.arange(len(x)), torch.tensor(target)].sum(), h)
    return out.detach().numpy(), g.numpy()


# ----------------------------------------------------------------------------------- the model
def test_training_is_deterministic_and_learns(model):
    a = aiograd.run(serve.train_model(1, epochs=1, points=512))
    b = aiograd.run(serve.train_model(1, epochs=1, points=512))
    state_a, state_b = a.module.state_dict(), b.module.state_dict()
    assert list(state_a) == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    for key in state_a:
        assert np.array_equal(state_a[key].numpy(), state_b[key].numpy()), key
    assert (model.features, model.classes) == (serve.FEATURES, serve.CLASSES)
    assert model.test_accuracy > 0.6  # 4 classes: chance is about 0.25
    assert not any(p.requires_grad for p in model.module.parameters())
    assert not model.module.training


# ------------------------------------------------------------------------------- good requests
@with_service
@with_session
async def test_health_and_stats(url, session):
    async with session.get(f"{url}/health") as r:
        assert r.status == 200
        health = await r.json()
    assert health["status"] == "ok"
    assert (health["input_shape"], health["classes"]) == ([serve.FEATURES], serve.CLASSES)
    assert (health["limits"]["max_rows"], health["limits"]["max_body_bytes"]) == (MAX_ROWS, MAX_BODY)
    await _post(session, url, {"input": _inputs(0, 2).tolist()})
    async with session.get(f"{url}/stats") as r:
        assert r.status == 200
        stats = await r.json()
    # Whatever fields the engine's statistics have (new ones may come), all are there.
    fields = {f.name for f in dataclasses.fields(aiograd.EngineStatistics)}
    assert fields <= set(stats["engine"]) and stats["engine"]["nodes_executed"] > 0
    assert stats["server"]["rows"] == 2 and stats["server"]["status_200"] >= 1
    assert stats["server"]["in_flight"] == 0 and stats["server"]["max_in_flight"] >= 1


@with_service
@with_session
async def test_saliency_matches_direct_computation(url, session, model):
    x = _inputs(1, 5)
    target = np.array([0, 1, 2, 3, 1])
    status, body = await _post(session, url, {"input": x.tolist(), "target": target.tolist()})
    assert status == 200, body
    # JSON carries float64 exactly (repr round-trips): the same computation here is bitwise equal.
    (same,) = await serve.saliency(model, [serve.SaliencyRequest(x, target)])
    assert body == json.loads(orjson.dumps(same, option=orjson.OPT_SERIALIZE_NUMPY))
    logits, grad = await _reference(model, x, target)
    np.testing.assert_allclose(body["output"], logits, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(body["saliency"], grad, rtol=1e-12, atol=1e-14)
    assert body["predicted"] == logits.argmax(1).tolist() and body["target"] == target.tolist()


@with_service
@with_session
async def test_target_defaults_to_the_predicted_class_and_broadcasts(url, session, model):
    x = _inputs(2, 4)
    status, default = await _post(session, url, {"input": x.tolist()})
    assert status == 200 and default["target"] == default["predicted"]
    logits, grad = await _reference(model, x, np.asarray(default["predicted"]))
    np.testing.assert_allclose(default["saliency"], grad, rtol=1e-12, atol=1e-14)
    status, one = await _post(session, url, {"input": x.tolist(), "target": 2})
    assert status == 200 and one["target"] == [2, 2, 2, 2]
    # Integers are numbers too; the saliency of a row does not depend on the other rows.
    ints = [int(v) for v in np.round(x[0])]
    status, single = await _post(session, url, {"input": [ints], "target": 2})
    assert status == 200 and np.shape(single["saliency"]) == (1, serve.FEATURES)


@requires_torch
@with_service
@with_session
async def test_saliency_matches_torch(url, session, model):
    x = _inputs(3, MAX_ROWS)
    target = np.arange(MAX_ROWS) % serve.CLASSES
    status, body = await _post(session, url, {"input": x.tolist(), "target": target.tolist()})
    assert status == 200, body
    logits, grad = _torch_reference(model, x, target)
    np.testing.assert_allclose(body["output"], logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(body["saliency"], grad, rtol=1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
@with_session
async def test_weights_trained_with_torch_are_served_with_torchs_gradients(tmp_path, session, suffix):
    """A torch model saved with safetensors.torch.save_file (or as an .npz) is served: the
    answers are torch's logits and input gradients, in the file's float32."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 6),
                                 torch.nn.Tanh(), torch.nn.Linear(6, 3))
    path = tmp_path / f"model{suffix}"
    if suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(module.state_dict(), str(path))
    else:
        np.savez(path, **{k: v.numpy() for k, v in module.state_dict().items()})
    model = serve.load_model(str(path))
    assert (model.features, model.classes, model.source) == (5, 3, str(path))
    x = _inputs(4, 6, features=5)
    target = np.arange(6) % 3
    app = serve.make_app(model)
    runner, base = await serve.start(app)
    try:
        status, body = await _post(session, base, {"input": x.tolist(), "target": target.tolist()})
        async with session.get(f"{base}/health") as r:
            health = await r.json()
    finally:
        await runner.cleanup()
    assert status == 200, body
    assert (health["input_shape"], health["classes"], health["source"]) == ([5], 3, str(path))
    h = torch.tensor(x, dtype=torch.float32, requires_grad=True)
    out = module(h)
    (g,) = torch.autograd.grad(out[torch.arange(6), torch.tensor(target)].sum(), h)
    np.testing.assert_allclose(body["output"], out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(body["saliency"], g.numpy(), rtol=1e-5, atol=1e-6)


def test_weights_of_another_architecture_are_refused(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, **{"weight": np.ones((2, 2))})
    with pytest.raises(ValueError, match=r"expected the weights of Linear, Tanh, Linear, Tanh, Linear .* got \['weight'\]"):
        serve.load_model(str(path))


@with_service
async def test_many_concurrent_requests_each_get_their_own_answer(url, model):
    n = 100
    xs = [_inputs(100 + i, 1 + i % 7) for i in range(n)]
    targets = [np.arange(len(x)) * (i + 1) % serve.CLASSES for i, x in enumerate(xs)]
    connector = aiohttp.TCPConnector(limit=n)  # one connection per request: all in flight at once
    async with aiohttp.ClientSession(connector=connector) as s:
        answers = await asyncio.gather(*(
            _post(s, url, {"input": x.tolist(), "target": t.tolist()}) for x, t in zip(xs, targets)
        ))
    for x, t, (status, body) in zip(xs, targets, answers):
        assert status == 200, body
        logits, grad = await _reference(model, x, t)
        np.testing.assert_allclose(body["output"], logits, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(body["saliency"], grad, rtol=1e-12, atol=1e-14)


# -------------------------------------------------------------------------------- bad requests
def _row(*values) -> list:
    """A row of the right length starting with ``values``."""
    return [*values, *[0.5] * (serve.FEATURES - len(values))]


def _raw_row(start: str) -> str:
    """A body with one row, written as JSON text starting with ``start``."""
    return '{"input": [[' + start + ", 0" * (serve.FEATURES - 1 - start.count(",")) + "]]}"


BAD_REQUESTS = [
    # (payload, status, a pattern the error message must match)
    ("{not json", 400, r"invalid JSON"),
    (b"\xff\xfe\x00", 400, r"invalid JSON"),
    ("", 400, r"invalid JSON"),
    ("[[1, 2]]", 400, r"must be a JSON object.*array"),
    ("[" * 5000, 400, r"invalid JSON"),  # nested too deep for the parser
    ({"target": 1}, 422, r"missing field 'input'"),
    ({"input": [_row()], "inputs": 1}, 422, r"unknown field 'inputs'"),
    ({"input": "1,2,3"}, 422, r"'input' must be a list of rows.*string"),
    ({"input": []}, 422, r"'input' has no rows"),
    ({"input": [1.0] * serve.FEATURES}, 422, r"wrong shape: input\[0\] must be a list \(each row is 16 numbers\), got a JSON number"),
    ({"input": [_row(), [1.0, 2.0]]}, 422, r"wrong shape: input\[1\] has 2 values, expected 16 \(each row is 16 numbers\)"),
    ({"input": [_row(1.0, "2")]}, 422, r'input\[0\]\[1\] is not a number: "2"'),
    ({"input": [_row(None)]}, 422, r"input\[0\]\[0\] is not a number: null"),
    ({"input": [_row(), _row(0.0, 0.0, True)]}, 422, r"input\[1\]\[2\] is not a number: true"),
    # NaN, Infinity and numbers that overflow a double are not standard JSON (orjson refuses).
    (_raw_row("NaN"), 400, r"invalid JSON: unexpected character.*column 13"),
    (_raw_row("0, -Infinity"), 400, r"invalid JSON: no digit after sign.*column 17"),
    (_raw_row("1e999"), 400, r"invalid JSON: number is infinity when parsed as double"),
    ({"input": [_row(10 ** 400)]}, 400, r"invalid JSON: number is infinity when parsed as double"),
    ({"input": [_row(2 ** 64 - 1)]}, 422, r"input\[0\]\[0\] is 1\.84467e\+19, larger in magnitude"),
    ({"input": [_row(2e6)]}, 422, r"input\[0\]\[0\] is 2e\+06, larger in magnitude than 1e\+06"),
    ({"input": [_row()], "target": 4}, 422, r"'target' must be a class index from 0 to 3.*got 4"),
    ({"input": [_row()], "target": -1}, 422, r"'target'.*got -1"),
    ({"input": [_row()], "target": 1.0}, 422, r"'target'.*got 1\.0"),
    ({"input": [_row()], "target": "1"}, 422, r"'target'.*got \"1\""),
    ({"input": [_row()], "target": True}, 422, r"'target'.*got true"),
    ({"input": [_row(), _row()], "target": [1]}, 422, r"'target'.*of 2 of them: got a list of 1"),
    ({"input": [_row()] * (MAX_ROWS + 1)}, 413,
     rf"too many rows in 'input': {MAX_ROWS + 1}, the limit is {MAX_ROWS}"),
    ('{"input": [[' + " " * MAX_BODY + "]]}", 413,
     rf"request body too large: \d+ bytes, the limit is {MAX_BODY}"),
]


@with_service
@with_session
async def test_bad_requests_get_a_4xx_naming_the_problem(url, session):
    for payload, status, pattern in BAD_REQUESTS:
        got, body = await _post(session, url, payload)
        assert (got, list(body)) == (status, ["error"]), (payload, body)
        assert re.search(pattern, body["error"]), (payload, body)
    async with session.get(f"{url}/stats") as r:
        server = (await r.json())["server"]
    assert server["status_422"] == sum(s == 422 for _, s, _ in BAD_REQUESTS)
    assert server["in_flight"] == 0 and server["rows"] == 0


@with_service
@with_session
async def test_exactly_max_body_bytes_is_accepted(url, session):
    body = json.dumps({"input": [_row()]})
    body = body[:-1] + " " * (MAX_BODY - len(body)) + "}"
    assert len(body) == MAX_BODY
    status, answer = await _post(session, url, body)
    assert status == 200, answer


@with_service
@with_session
async def test_chunked_body_too_large_is_413(url, session):
    async def chunks():  # no Content-Length: aiohttp's client_max_size stops it while reading
        yield b'{"input": [['
        for _ in range(MAX_BODY // 1000 + 1):
            yield b" " * 1000

    async with session.post(f"{url}/saliency", data=chunks()) as r:
        assert r.status == 413
        error = (await r.json())["error"]
    assert re.search(rf"request body too large: more than the limit of {MAX_BODY}", error)


@with_service
@with_session
async def test_wrong_path_and_method_are_json_errors(url, session):
    async with session.get(f"{url}/saliency") as r:
        assert r.status == 405
        assert "method 'GET' not allowed on '/saliency'" in (await r.json())["error"]
    async with session.post(f"{url}/gradient", data="{}") as r:
        assert r.status == 404 and "no such path: '/gradient'" in (await r.json())["error"]


@with_service
@with_session
async def test_error_messages_never_echo_unbounded_input(url, session):
    """A field name as long as the body limit allows (the issue's was 1 MB, at the default
    limit), or a path of thousands of characters, is named by its first 40 characters and its
    length: an error answer stays small whatever the request."""
    key = "k" * 10_000
    status, body = await _post(session, url, {"input": [_row()], key: 1})
    assert status == 422 and len(body["error"]) < 200, len(body["error"])
    assert body["error"].startswith(f"unknown field {'k' * 40!r}... (10000 characters)")
    async with session.get(f"{url}/{'p' * 4000}") as r:
        error = (await r.json())["error"]
    assert r.status == 404 and len(error) < 300 and "(4001 characters)" in error  # 40 of 4001


# ---------------------------------------------------------------------------------- load test
@with_service
async def test_load_test_against_the_service(url):
    report = await load_test.run_load(url, requests=50, concurrency=16, rows=4)
    assert (report.requests, report.concurrency, report.rows) == (50, 16, 4)
    assert (report.ok, report.errors) == (50, {})
    assert report.warmup == 32  # two per client, not counted
    assert report.throughput_rps > 0 and report.elapsed_s > 0 and report.client_cpu_us > 0
    assert 0 < report.p50_ms <= report.p99_ms <= report.max_ms
    assert report.server_max_in_flight >= 1
    summary = report.summary()
    assert "50 ok, 0 errors" in summary and "requests/s" in summary and "p99" in summary


@with_service
async def test_load_test_counts_errors(url):
    # More rows than the server takes: every request is refused, and the report says how.
    report = await load_test.run_load(url, requests=6, concurrency=3, rows=MAX_ROWS + 1)
    assert (report.ok, report.errors) == (0, {"HTTP 413": 6})
    assert "0 ok, 6 errors (HTTP 413: 6)" in report.summary()


@with_service
async def test_load_test_sweeps_the_levels(url):
    reports = await load_test.run_sweep(url, [1, 3], requests=12, rows=2)
    assert [(r.concurrency, r.requests, r.ok, r.errors) for r in reports] == [
        (1, 12, 12, {}), (3, 12, 12, {})]
    assert [r.warmup for r in reports] == [20, 20]
    table = load_test.format_table(reports).splitlines()
    assert table[0].split()[:4] == ["clients", "requests", "ok", "errors"]
    assert [row.split()[:4] for row in table[1:]] == [["1", "12", "12", "0"], ["3", "12", "12", "0"]]
    assert load_test.default_requests(1) == 500 and load_test.default_requests(256) == 5120


@pytest.mark.slow  # the example's processes
def test_command_lines_spawn_serve_and_stop(tmp_path):
    """load_test.py --spawn starts serve_gradients.py --port 0 in a subprocess, sweeps it, and
    stops it with SIGTERM; a server that did not exit cleanly makes it fail."""
    out = tmp_path / "reports.json"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "load_test.py"), "--spawn", "--requests", "20",
         "--concurrency", "1,4", "--rows", "2", "--server-arg=--epochs=1", "--json", str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    number, optional = r"[\d.]+", r"(?:[\d.]+|-)"
    for clients in (1, 4):  # clients, requests, ok, errors, req/s, p50, p99, max, client us/req
        row = rf"^ +{clients} +20 +20  0 +(?: +{number}){{5}} +{optional} +{optional}$"
        assert re.search(row, result.stdout, re.MULTILINE), result.stdout
    reports = json.loads(out.read_text())
    assert [(r["concurrency"], r["requests"], r["ok"], r["errors"]) for r in reports] == [
        (1, 20, 20, {}), (4, 20, 20, {})]


@contextlib.asynccontextmanager
async def _tiny_service(answer, workers: int = 1):
    """An aiohttp app with the service's /health and /stats (with batching counters: one batch
    per two requests) whose POST /saliency is ``answer(n, request, rows)``, n counting from 0.
    With ``workers`` > 1, /stats names a pid taking turns, like a server of several processes."""
    seen = {"requests": 0, "peers": set(), "stats": 0}

    async def saliency(request):
        rows = len((await request.json())["input"])
        seen["peers"].add(request.transport.get_extra_info("peername"))
        n, seen["requests"] = seen["requests"], seen["requests"] + 1
        return await answer(n, request, rows)

    async def stats(request):
        items, seen["stats"] = seen["requests"], seen["stats"] + 1
        pid = 1000 + seen["stats"] % workers
        return aiohttp.web.json_response({"server": {"max_in_flight": 1, "pid": pid},
                                          "batching": {"items": items, "batches": (items + 1) // 2}})

    async def health(request):
        return aiohttp.web.json_response({"input_shape": [3], "classes": 2})

    app = aiohttp.web.Application()
    app.router.add_post("/saliency", saliency)
    app.router.add_get("/stats", stats)
    app.router.add_get("/health", health)
    runner, base = await serve.start(app)
    try:
        yield base, seen
    finally:
        await runner.cleanup()


def _saliency_answer(rows: int, features: int = 3) -> dict:
    return {"saliency": [[0.5] * features] * rows}


async def test_load_test_counts_503_and_bad_answers_and_the_mean_batch_size():
    async def answer(n, request, rows):
        if n % 4 == 1:  # a batching server past its queue's bound
            return aiohttp.web.json_response({"error": "overloaded"}, status=503)
        if n % 4 == 3:
            return aiohttp.web.json_response(_saliency_answer(rows, features=2))
        return aiohttp.web.json_response(_saliency_answer(rows))

    async with _tiny_service(answer) as (base, seen):
        report = await load_test.run_load(base, requests=12, concurrency=2, rows=3, warmup=4)
    assert (report.ok, report.errors) == (6, {"HTTP 503": 3, "bad response": 3})
    assert seen["requests"] == 16 and len(seen["peers"]) == 2  # two keep-alive connections
    assert (report.batches, report.batched_items, report.mean_batch_size) == (6, 12, 2.0)
    assert (report.server_max_in_flight, report.warmup) == (1, 4)
    assert "server: 6 batches, 2.0 requests per batch" in report.summary()


async def test_load_test_subtracts_batch_counters_of_one_process_only():
    async def answer(n, request, rows):
        return aiohttp.web.json_response(_saliency_answer(rows))

    async with _tiny_service(answer, workers=2) as (base, _):
        report = await load_test.run_load(base, requests=4, concurrency=2, rows=1, warmup=0)
    assert (report.ok, report.batches, report.mean_batch_size) == (4, None, None)
    assert "batches" not in report.summary()


@pytest.mark.parametrize("how", ["Connection: close", "chunked"])
async def test_load_test_reconnects_after_connection_close_and_reads_chunked_answers(how):
    async def answer(n, request, rows):
        if how == "chunked":  # the body in three chunks
            response = aiohttp.web.StreamResponse(headers={"Content-Type": "application/json"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            text = json.dumps(_saliency_answer(rows)).encode()
            for part in (text[:5], text[5:9], text[9:]):
                await response.write(part)
            await response.write_eof()
            return response
        response = aiohttp.web.json_response(_saliency_answer(rows))
        response.force_close()  # answers with Connection: close, then closes
        return response

    async with _tiny_service(answer) as (base, seen):
        report = await load_test.run_load(base, requests=6, concurrency=2, rows=2, warmup=2)
    assert (report.ok, report.errors) == (6, {})
    # A connection per request after Connection: close; two kept alive throughout otherwise.
    assert len(seen["peers"]) == (8 if how == "Connection: close" else 2)


RAW_ANSWERS = {
    # what the server writes before it closes: (status, body, whether the client closed after
    # the answer) read, or the error raised (then the connection is closed: it is not usable)
    "chunked, extension, trailer": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
        (200, b"hello world", False)),
    "keep-alive, lower-case header": (
        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", (200, b"{}", False)),
    "HTTP/1.0, no length": (
        b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nbusy",
        (503, b"busy", True)),
    "Connection: close, no length": (
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}", (200, b"{}", True)),
    "Connection: close, length": (
        b"HTTP/1.1 422 Unprocessable Entity\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        (422, b"{}", True)),
    "no length": (b"HTTP/1.1 200 OK\r\n\r\n{}", "bad response (no Content-Length)"),
    "not HTTP": (b"SMTP ready\r\n\r\n", "bad response (status line)"),
    "bad length": (b"HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\n{}",
                   "bad response (Content-Length)"),
    "bad chunk size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                       "bad response (chunk size)"),
    "short body": (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", asyncio.IncompleteReadError),
    "no answer": (b"", asyncio.IncompleteReadError),
}


@pytest.mark.parametrize(("raw", "expected"), RAW_ANSWERS.values(), ids=RAW_ANSWERS)
async def test_lean_client_reads_raw_answers(raw: bytes, expected):
    async def answer_once(reader, writer):
        await reader.readuntil(b"\r\n\r\n")  # the test's request has no body
        writer.write(raw)
        writer.close()

    server = await asyncio.start_server(answer_once, "127.0.0.1", 0)
    connection = load_test.Connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        request = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n"
        if isinstance(expected, tuple):
            status, body, closed = expected
            assert await connection.exchange(request) == (status, body)
            assert connection.is_open is not closed
        else:
            with pytest.raises(BadHTTP if isinstance(expected, str) else expected) as info:
                await connection.exchange(request)
            if isinstance(expected, str):
                assert str(info.value) == expected
            assert not connection.is_open
    finally:
        connection.close()
        server.close()
        await server.wait_closed()


@pytest.mark.aiograd(backends=["asyncio"])  # waits out a 3 s timeout: once is enough
async def test_load_test_times_out_requests_and_goes_on():
    release = asyncio.Event()

    async def answer(n, request, rows):
        if n == 0:
            await release.wait()  # never answered in time
        return aiohttp.web.json_response(_saliency_answer(rows))

    async with _tiny_service(answer) as (base, seen):
        try:
            # The timeout ends the unanswered request, and must not end the others, answered
            # at once but maybe slowly on a loaded machine: generous, as it is waited in full.
            report = await load_test.run_load(base, requests=4, concurrency=1, rows=1, warmup=0,
                                              timeout_s=3.0)
        finally:
            release.set()
    assert (report.ok, report.errors) == (3, {"TimeoutError": 1})
    assert len(seen["peers"]) == 2  # the timed-out connection was dropped, a new one opened


# ------------------------------------------------------------------- clients that go away early
@pytest.mark.parametrize("sent", [b"", b'{"input": [[0.5, '], ids=["no body", "part of the body"])
async def test_client_disconnecting_mid_body_is_a_client_event(model, caplog, sent: bytes):
    app = serve.make_app(model, max_rows=MAX_ROWS, max_body_bytes=MAX_BODY)
    started, handled = asyncio.Event(), asyncio.Event()

    @aiohttp.web.middleware
    async def signal_when_handled(request, handler):  # outermost: ends after json_errors
        started.set()
        try:
            return await handler(request)
        finally:
            handled.set()

    app.middlewares.insert(0, signal_when_handled)
    runner, base = await serve.start(app)
    try:
        host, port = base.removeprefix("http://").rsplit(":", 1)
        caplog.set_level("INFO")
        reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
        writer.write(b"POST /saliency HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n" + sent)
        await writer.drain()
        await asyncio.wait_for(started.wait(), timeout=30)  # the handler is waiting for the body
        writer.close()  # 1000 bytes announced, fewer sent
        await writer.wait_closed()
        await asyncio.wait_for(handled.wait(), timeout=30)
        counters = dict(app[http.STATE].counters)
        assert counters["client_disconnected"] == 1 and counters["in_flight"] == 0
        assert not [name for name in counters if name.startswith("status_")]  # no answer counted
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
        (logged,) = [r.getMessage() for r in caplog.records if r.name == "aiograd.serving"]
        assert re.fullmatch(r"[0-9a-f]+-[0-9a-f]+: client disconnected during POST '/saliency'", logged)
        async with aiohttp.ClientSession() as s:  # the server goes on serving
            status, _ = await _post(s, base, {"input": [_row()]})
            async with s.get(f"{base}/stats") as r:
                server = (await r.json())["server"]
        assert status == 200 and server["client_disconnected"] == 1 and server["status_200"] == 1
        assert not any(name.startswith("status_5") for name in server)
    finally:
        await runner.cleanup()


# ------------------------------------------------------------------------- weights from a file
def _mlp_weights(**replace: np.ndarray) -> dict[str, np.ndarray]:
    """The state dict of a 5-7-6-3 classifier (float32), some entries replaced."""
    rng = np.random.default_rng(0)
    state = {"0.weight": rng.standard_normal((7, 5)), "0.bias": np.zeros(7),
             "2.weight": rng.standard_normal((6, 7)), "2.bias": np.zeros(6),
             "4.weight": rng.standard_normal((3, 6)), "4.bias": np.zeros(3)}
    state = {k: v.astype(np.float32) for k, v in state.items()}
    state.update(replace)
    return state


@pytest.mark.parametrize(("replace", "message"), [
    ({"2.weight": np.ones((6, 7), np.complex64)},
     "model.npz: '2.weight' is complex64, not real floating point: the model's weights must be "
     "float16, float32 or float64"),
    ({"0.bias": np.zeros(7, np.int64)},
     "model.npz: '0.bias' is int64, not real floating point: the model's weights must be "
     "float16, float32 or float64"),
    ({"4.bias": np.array([0.0, np.nan, 0.0], np.float32)},
     "model.npz: '4.bias' has values that are not finite (NaN or infinity)"),
    ({"0.weight": np.full((7, 5), np.inf, np.float32)},
     "model.npz: '0.weight' has values that are not finite (NaN or infinity)"),
    ({"2.bias": np.zeros(5, np.float32)},
     "model.npz: '2.bias' has shape (5,), expected (6,) (from the other layers' shapes)"),
], ids=["complex", "integer", "nan", "inf", "shape"])
def test_weights_that_cannot_be_served_are_refused(tmp_path, replace, message):
    path = tmp_path / "model.npz"
    np.savez(path, **_mlp_weights(**replace))
    with pytest.raises(ValueError) as info:
        serve.load_model(str(path))
    assert str(info.value) == message
    np.savez(path, **_mlp_weights())  # the same file, good: loads
    assert (serve.load_model(str(path)).features, serve.load_model(str(path)).dtype) == (5, np.float32)


@pytest.mark.parametrize("bad", ["complex", "not-npy", "missing"])
def test_command_line_refuses_bad_weights_in_one_line_before_serving(tmp_path, bad):
    """``--weights`` with a file that cannot be served: one line on stderr, as argparse's errors,
    exit status 2, no traceback, and no server."""
    import zipfile

    path = tmp_path / "model.npz"
    if bad == "complex":
        np.savez(path, **_mlp_weights(**{"2.weight": np.ones((6, 7), np.complex128)}))
        expected = "model.npz: '2.weight' is complex128, not real floating point"
    elif bad == "not-npy":
        np.savez(path, **_mlp_weights())
        with zipfile.ZipFile(path, "a") as archive:
            archive.writestr("notes.txt", b"hello")
        expected = "model.npz: entry 'notes.txt' is not an .npy array"
    else:
        expected = "No such file or directory"
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "serve_gradients.py"), "--weights", str(path),
         "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""  # neither loaded nor serving
    assert result.stderr.startswith("serve_gradients.py: error: ") and expected in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.endswith("\n"), result.stderr


@pytest.mark.slow  # a server process
def test_sigterm_with_a_request_half_sent_stops_within_the_drain_time():
    """A request whose client stops sending halfway (or a connection accepted just before
    SIGTERM) held the stopping server for aiohttp's default shutdown timeout: 60.9 s measured
    before; the server now waits ``--drain-s`` at most, then exits with status 0."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "serve_gradients.py"), "--port", "0", "--epochs",
         "1", "--loop", "asyncio", "--drain-s", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        lines = []  # the training's line, then "serving on http://127.0.0.1:PORT ..."
        while not (match := re.search(r"serving on http://([\d.]+):(\d+)", lines[-1] if lines else "")):
            lines.append(proc.stdout.readline())
            assert lines[-1], f"the server exited: {''.join(lines)}"  # (EOF: it is gone)
        with socket.create_connection((match[1], int(match[2]))) as client:
            client.sendall(b"POST /saliency HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=40)  # bounds a hang: it took 60 s before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.rstrip().endswith("stopped")
