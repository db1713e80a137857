"""aiograd: reverse-mode autograd on numpy, with an asyncio backward engine.

    loss = (w * x).sum()
    await loss.backward()

Layers, bottom up: the Tensor and graph recording (``_tensor``, ``_node``, ``_saved``), the ops
(``_ops``, one module per family), the engine (``_engine``) and the API that checks arguments in
PyTorch's words (``_autograd``). Everything public is re-exported here by name.
"""

from . import _tensor_methods  # noqa: F401  (binds ops as Tensor methods)
from ._autograd import backward, grad
from ._device import device
from ._factories import (
    arange, as_tensor, empty, eye, full, linspace, manual_seed, ones, ones_like, rand, randn,
    randn_like, tensor, zeros, zeros_like,
)
from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._node import Node
from ._ops.elementwise import (
    abs, add, clamp, clip, clone, cos, div, eq, exp, ge, gt, le, log, log1p, lt, maximum, minimum,
    mul, ne, neg, pow, relu, sigmoid, sign, sin, sqrt, sub, tanh, true_divide, where,
)
from ._ops.linalg import matmul, mm
from ._ops.reduction import mean, sum
from ._ops.shape import (
    broadcast_to, expand, flatten, permute, reshape, squeeze, sum_to_size, transpose, unsqueeze,
)
from ._engine import Engine, get_engine
from ._runner import run
from ._tensor import Tensor
from . import nn, testing

__version__ = "0.1.0"
