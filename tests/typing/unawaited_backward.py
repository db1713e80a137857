"""A forgotten ``await``: pyright must flag the bare ``loss.backward()`` (reportUnusedCoroutine)."""

import aiograd as ag


async def main() -> None:
    w = ag.randn(3, requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
