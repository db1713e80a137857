"""``aiograd.optim``: PyTorch's optimizers (``torch.optim``) and learning-rate schedulers.

    optimizer = aiograd.optim.SGD(params, lr=0.1, momentum=0.9)
    optimizer.zero_grad()
    await loss.backward()
    optimizer.step()

``Optimizer`` (param groups, state, ``state_dict`` in PyTorch's layout), ``SGD``, ``Adam``,
``AdamW``, ``RMSprop``; ``lr_scheduler`` holds the schedulers. A closure that awaits backward
goes through ``await optimizer.step_async(closure)`` (see aiograd/optim/optimizer.py).
"""

from . import adam, adamw, lr_scheduler, optimizer, rmsprop, sgd
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler",
    # the modules, public as torch.optim's (``optimizer.required``, ...)
    "optimizer", "sgd", "adam", "adamw", "rmsprop",
]
