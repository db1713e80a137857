"""``aiograd.optim``: PyTorch's optimizers (``torch.optim``) and learning-rate schedulers.

    optimizer = aiograd.optim.SGD(params, lr=0.1, momentum=0.9)
    optimizer.zero_grad()
    await loss.backward()
    optimizer.step()

``Optimizer`` (param groups, state, ``state_dict`` in PyTorch's layout), ``SGD``, ``Adam``,
``AdamW``, ``RMSprop``, ``Adagrad``, ``Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``, ``Rprop``,
``ASGD`` and ``LBFGS`` (whose
``step`` is a coroutine: ``await optimizer.step(closure)``); ``lr_scheduler`` holds the schedulers. A closure that awaits backward
goes through ``await optimizer.step_async(closure)`` (see aiograd/optim/optimizer.py).
"""

from . import (
    adadelta,
    adagrad,
    adam,
    adamax,
    adamw,
    asgd,
    lbfgs,
    lr_scheduler,
    nadam,
    optimizer,
    radam,
    rmsprop,
    rprop,
    sgd,
)
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
    "Rprop", "ASGD", "LBFGS", "lr_scheduler",
    # the modules, public as torch.optim's (``optimizer.required``, ...)
    "optimizer", "sgd", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "adamax", "nadam",
    "radam", "rprop", "asgd", "lbfgs",
]
