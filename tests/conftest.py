"""Shared fixtures: every test must leave no asyncio task behind."""

from __future__ import annotations

import asyncio

import pytest


@pytest.fixture(autouse=True)
async def no_leaked_tasks():
    """Fail a test that leaves asyncio tasks pending on its loop."""
    yield
    await asyncio.sleep(0)
    me = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for t in pending:
        t.cancel()
    assert not pending, f"test leaked asyncio tasks: {pending}"
