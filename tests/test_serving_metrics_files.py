"""/metrics in multiprocess mode survives the files of a worker that died mid-write."""

from __future__ import annotations

import pathlib

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402
from prometheus_client.mmap_dict import MmapedDict  # noqa: E402

from aiograd.serving._metrics import _LiveFilesCollector  # noqa: E402


def test_an_unreadable_worker_file_is_left_out_of_the_scrape(tmp_path: pathlib.Path) -> None:
    good = MmapedDict(str(tmp_path / "counter_101.db"))
    good.write_value('["aiograd_demo_total", "aiograd_demo_total", {}, "demo"]', 3.0, 0.0)
    good.close()
    (tmp_path / "counter_102.db").write_bytes(b"\x10\x00\x00\x00garbage-of-a-killed-worker")
    registry = CollectorRegistry()
    registry.register(_LiveFilesCollector(str(tmp_path)))
    text = generate_latest(registry).decode()
    assert "aiograd_demo_total 3.0" in text
