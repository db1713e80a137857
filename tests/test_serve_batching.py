"""The gradient service's batching and processes (examples/serve_gradients.py): concurrent
requests coalesced by ``aiograd.serving.batch`` with each answer its own, the batcher's
statistics on ``/stats``, overload answered 503 at once, a lone request not held for the batch
timeout, ``--no-batching``, and ``--workers N`` (processes sharing the port, stopped together).

The answers' numbers are checked in test_serve_example.py (against aiograd directly and torch);
here each batched answer is compared with the same request served alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import re
import signal
import sys
from pathlib import Path

import anyio
import numpy as np
import pytest

import aiograd

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("orjson")
serving_app = pytest.importorskip("aiograd.serving._app")

ROOT = Path(__file__).resolve().parent.parent
HANG = 60  # seconds before a test that should finish at once is failed as hung


def _load(name: str):
    module_name = f"_example_{name}"
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, ROOT / "examples" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


serve = _load("serve_gradients")
once = pytest.mark.aiograd(backends=["asyncio"])  # HTTP plumbing: one loop is enough


@pytest.fixture(scope="module")
def model():
    return aiograd.run(serve.train_model(0, epochs=2, points=1024))


@contextlib.asynccontextmanager
async def served(model, **batching):
    app = serve.make_app(model, batching=serve.Batching(**batching))
    runner, url = await serve.start(app)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            yield url, session
    finally:
        await runner.cleanup()


async def post(session, url, x, target=None):
    doc = {"input": x.tolist()} if target is None else {"input": x.tolist(), "target": target}
    async with session.post(f"{url}/saliency", data=json.dumps(doc)) as r:
        return r.status, await r.json(), dict(r.headers)


async def stats(session, url):
    async with session.get(f"{url}/stats") as r:
        return await r.json()


def inputs(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1 + i % 5, serve.FEATURES)) for i in range(n)]


@once
async def test_concurrent_requests_are_batched_and_each_answer_is_its_own(model):
    xs = inputs(48)
    targets = [None if i % 3 == 0 else i % serve.CLASSES for i in range(len(xs))]
    async with served(model, max_batch_size=16) as (url, session):
        answers = await asyncio.gather(*(post(session, url, x, t) for x, t in zip(xs, targets)))
        batching = (await stats(session, url))["batching"]
    assert batching["items"] == 48 and batching["rejected"] == 0
    assert batching["batches"] < 48 and batching["max_batch_size"] <= 16  # coalesced, capped
    for x, t, (status, body, _) in zip(xs, targets, answers):
        assert status == 200, body
        (alone,) = await serve.saliency(model, [serve.SaliencyRequest(
            x, None if t is None else np.full(len(x), t))])
        np.testing.assert_allclose(body["output"], alone["output"], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(body["saliency"], alone["saliency"], rtol=1e-12, atol=1e-14)
        assert body["target"] == (body["predicted"] if t is None else [t] * len(x))


@once
async def test_overload_is_a_503_at_once_with_retry_after(model, monkeypatch):
    release, started = asyncio.Event(), asyncio.Event()
    real = serving_app.attribute

    async def held(model, requests, **kwargs):
        started.set()
        await release.wait()
        return await real(model, requests, **kwargs)

    monkeypatch.setattr(serving_app, "attribute", held)
    xs = inputs(3)
    with anyio.fail_after(HANG):
        async with served(model, max_batch_size=1, max_queue_size=1) as (url, session):
            running = asyncio.ensure_future(post(session, url, xs[0]))
            await started.wait()  # the first request's batch runs (held)
            queued = asyncio.ensure_future(post(session, url, xs[1]))
            while (await stats(session, url))["batching"]["queued"] < 1:
                await asyncio.sleep(0)  # the second is queued (an HTTP round trip per check)
            try:
                status, body, headers = await post(session, url, xs[2])  # answered at once
            finally:
                release.set()
            assert status == 503 and headers["Retry-After"] == "1"
            assert body == {"error": "overloaded: 1 requests are already queued; retry later"}
            assert [(await t)[0] for t in (running, queued)] == [200, 200]
            s = await stats(session, url)
    assert s["batching"]["rejected"] == 1 and s["server"]["status_503"] == 1


@once
async def test_a_lone_request_is_not_held_for_the_batch_timeout(model):
    # A 1-hour timeout: were the lone request held for it, fail_after would fail the test.
    with anyio.fail_after(HANG):
        async with served(model, batch_wait_timeout_s=3600.0) as (url, session):
            for x in inputs(3):
                status, _, _ = await post(session, url, x)
                assert status == 200
            batching = (await stats(session, url))["batching"]
    assert batching["batches"] == 3 and batching["max_queue_wait_s"] < 1.0


@once
async def test_no_batching_computes_each_request_alone_with_the_same_answers(model):
    xs = inputs(12, seed=1)
    async with served(model, enabled=False) as (url, session):
        plain = await asyncio.gather(*(post(session, url, x, 1) for x in xs))
        doc = await stats(session, url)
        async with session.get(f"{url}/health") as r:
            health = await r.json()
    assert doc["batching"] is None and health["batching"]["enabled"] is False
    async with served(model) as (url, session):
        batched = await asyncio.gather(*(post(session, url, x, 1) for x in xs))
    for (s1, a, _), (s2, b, _) in zip(plain, batched):
        assert s1 == s2 == 200
        np.testing.assert_allclose(a["saliency"], b["saliency"], rtol=1e-12, atol=1e-14)


def test_command_line_batching_and_workers_options():
    args = serve.parse_args(["--max-batch-size", "8", "--batch-wait-ms", "2.5",
                             "--max-queue-size", "100", "--workers", "0"])
    config = args.config
    assert (config.batching, config.max_batch_size, config.batch_wait_s, config.max_queue_size) == (
        True, 8, 0.0025, 100)
    assert args.workers == (os.cpu_count() or 1)
    assert serve.parse_args(["--no-batching"]).config.batching is False
    # The example's own defaults for the shared options.
    assert (config.limits.max_rows, config.max_body_bytes, config.drain_s) == (
        serve.MAX_ROWS, serve.MAX_BODY_BYTES, serve.DRAIN_S)


def test_bad_workers_options_are_refused(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        serve.parse_args(["--workers", "-1"])
    assert "--workers must be 0 (one per core) or a positive number, got -1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        serve.parse_args(["--request-timeout-s", "0"])
    assert "--request-timeout-s must be a finite number of seconds > 0, got 0.0" in capsys.readouterr().err
    monkeypatch.delattr(os, "fork", raising=False)
    assert serve.parse_args(["--workers", "1"]).workers == 1  # one process forks nothing
    with pytest.raises(SystemExit):
        serve.parse_args(["--workers", "2"])
    assert "--workers needs fork" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ --workers
@contextlib.asynccontextmanager
async def spawned(*args: str):
    """``serve_gradients.py --workers ... --port 0``; yields the process and its URL."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "examples" / "serve_gradients.py"), "--port", "0",
        "--epochs", "1", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        with anyio.fail_after(HANG):
            line = ""
            while not line.startswith("serving on "):
                line = (await proc.stdout.readline()).decode()
                assert line, f"the server exited: {(await proc.stderr.read()).decode()[-2000:]}"
        yield proc, line.split()[2]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.slow  # worker processes
@once
async def test_workers_share_the_port_and_stop_together():
    async with spawned("--workers", "2") as (proc, url):
        seen = set()
        for i in range(40):  # fresh connections: the kernel spreads them among the workers
            async with aiohttp.ClientSession() as session:
                status, body, _ = await post(session, url, inputs(1, seed=i)[0])
                assert status == 200, body
                seen.add((await stats(session, url))["worker"]["pid"])
                if len(seen) == 2:
                    break
        assert len(seen) == 2  # 40 connections all on one worker: p = 2**-39
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(HANG):
            out, _ = await proc.communicate()
        assert proc.returncode == 0 and out.decode().rstrip().endswith("stopped")


@pytest.mark.slow  # worker processes
@once
async def test_a_worker_that_dies_is_restarted():
    """A worker killed (-9) is replaced by a new one and the service goes on; before, the
    supervisor stopped the other worker and exited 1."""
    async with spawned("--workers", "2") as (proc, url):
        async with aiohttp.ClientSession() as session, session.get(f"{url}/stats") as r:
            pid = (await r.json())["worker"]["pid"]
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(HANG):
            restarts = 0.0
            while restarts < 1:  # an HTTP round trip per check: the arbiter restarts it
                async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as r:
                    text = await r.text()
                restarts = float(re.search(r"^aiograd_serving_worker_restarts_total (\S+)$", text,
                                           re.MULTILINE)[1])
            for i in range(8):  # fresh connections, to both workers
                async with aiohttp.ClientSession() as session:
                    status, body, _ = await post(session, url, inputs(1, seed=i)[0])
                    assert status == 200, body
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(HANG):
            out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()[-2000:]
        assert out.decode().rstrip().endswith("stopped")
        assert f"worker (pid {pid}) died: restarting it" in err.decode()


@once
async def test_a_client_gone_while_queued_leaves_the_queue_and_is_never_computed(model, monkeypatch):
    release, started = asyncio.Event(), asyncio.Event()
    real, computed = serving_app.attribute, []

    async def held(model, requests, **kwargs):
        computed.append([len(r.x) for r in requests])
        started.set()
        await release.wait()
        return await real(model, requests, **kwargs)

    monkeypatch.setattr(serving_app, "attribute", held)
    with anyio.fail_after(HANG):
        async with served(model, max_batch_size=1) as (url, session):
            try:
                first = asyncio.ensure_future(post(session, url, inputs(1)[0]))  # 1 row
                await started.wait()
                host, port = url.removeprefix("http://").rsplit(":", 1)
                reader, writer = await asyncio.open_connection(host, int(port))
                body = json.dumps({"input": [[0.5] * serve.FEATURES] * 3}).encode()  # 3 rows
                writer.write(b"POST /saliency HTTP/1.1\r\nHost: t\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
                while (await stats(session, url))["batching"]["queued"] < 1:
                    await asyncio.sleep(0)
                writer.close()  # the client gives up while its request waits for a batch
                await writer.wait_closed()
                while (await stats(session, url))["batching"]["queued"] > 0:
                    await asyncio.sleep(0)
            finally:
                release.set()
            assert (await first)[0] == 200
            s = await stats(session, url)
    assert computed == [[1]]  # the 3-row request never reached the batch function
    assert s["batching"]["cancelled"] == 1 and s["batching"]["items"] == 1
    assert s["server"]["client_disconnected"] == 1


async def _send_and_hang_up(url: str, body: bytes) -> None:
    """A client that sends a whole request and closes at once (any client timeout does this)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"POST /saliency HTTP/1.1\r\nHost: %b\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%b" % (host.encode(), len(body), body)
    )
    await writer.drain()
    writer.close()
    await writer.wait_closed()


@once
@pytest.mark.parametrize("burst", [1, 2, 8, 64])
async def test_clients_that_hang_up_at_once_never_wedge_the_batcher(model, burst):
    """Bursts of clients that send a full request and close at once, each followed by an
    ordinary request, which must be answered: one such burst stopped /saliency for good (the
    batch of hung-up callers was cancelled before it started, and the batcher stayed
    "running"), while /health still said ok."""
    body = json.dumps({"input": inputs(1)[0].tolist()}).encode()
    (x,) = inputs(1, seed=1)
    async with served(model, max_batch_size=8) as (url, session):
        with anyio.fail_after(HANG):
            for _ in range(10 if burst == 1 else 3):
                await asyncio.gather(*(_send_and_hang_up(url, body) for _ in range(burst)))
                status, answer, _ = await post(session, url, x)
                assert status == 200, answer
            batching = (await stats(session, url))["batching"]
    assert batching["queued"] == 0 and not batching["running"]


@contextlib.asynccontextmanager
async def served_with_timeout(model, request_timeout_s):
    app = serve.make_app(model, batching=serve.Batching(max_batch_size=4),
                         request_timeout_s=request_timeout_s)
    runner, url = await serve.start(app)
    try:
        async with aiohttp.ClientSession() as session:
            yield url, session
    finally:
        await runner.cleanup()


@once
async def test_a_request_without_an_answer_in_time_is_a_504_and_leaves_the_queue(model, monkeypatch):
    """A request whose batch does not answer within --request-timeout-s gets 504 (it waited
    forever before); its batch, with no caller left, is cancelled, and the service goes on."""
    release, started, cancelled = asyncio.Event(), asyncio.Event(), []
    real = serving_app.attribute

    async def held(model, requests, **kwargs):
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.append(len(requests))
            raise
        return await real(model, requests, **kwargs)

    monkeypatch.setattr(serving_app, "attribute", held)
    (x,) = inputs(1)
    with anyio.fail_after(HANG):
        async with served_with_timeout(model, 0.2) as (url, session):
            status, body, headers = await post(session, url, x)
            assert status == 504, body
            assert body["error"] == "no answer within 0.2 s; retry later"
            assert headers["Retry-After"] == "1"
            assert cancelled == [1]  # nobody waited for the batch any more: it was stopped
            release.set()
            status, body, _ = await post(session, url, x)
            assert status == 200, body
            batching = (await stats(session, url))["batching"]
    assert batching["queued"] == 0 and not batching["running"]


@once
async def test_a_body_that_stops_halfway_is_a_408_within_the_request_timeout(model):
    """A client that sends its headers and part of its body, then nothing (slowloris), is
    answered 408 and its connection closed once the request's time is up; before, it held
    its handler forever."""
    async with served_with_timeout(model, 0.2) as (url, _):
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(b"POST /saliency HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            await writer.drain()
            with anyio.fail_after(HANG):
                answer = await reader.read()  # until the server closes the connection
        finally:
            writer.close()
            await writer.wait_closed()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), answer[:200]
    assert json.loads(body) == {"error": "the request body did not arrive within 0.2 s"}
