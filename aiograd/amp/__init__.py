"""Mixed-precision training helpers, as ``torch.amp``: ``GradScaler`` (dynamic loss scaling,
torch's algorithm, on aiograd tensors and optimizers) and ``autocast`` (a no-op when disabled;
aiograd has no autocast, so an enabled one raises NotImplementedError).

    scaler = aiograd.amp.GradScaler("cpu", enabled=use_amp)
    with aiograd.autocast("cpu", enabled=False):
        loss = loss_fn(model(x), y)
    await scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
"""

from __future__ import annotations

from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "is_autocast_available"]
