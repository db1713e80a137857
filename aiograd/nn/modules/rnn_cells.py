"""``RNNCell``, ``LSTMCell`` and ``GRUCell`` (torch/nn/modules/rnn.py): one time step, with
torch's parameters, initialisation, checks and messages; the step is the recurrent layers' node
(aiograd/nn/_rnn.py) over a sequence of one."""

from __future__ import annotations

import math
from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from .._rnn import recurrent_layer
from ..parameter import Parameter, new_tensor
from .module import Module
from .rnn import _zeros

__all__ = ["GRUCell", "LSTMCell", "RNNCell", "RNNCellBase"]


class RNNCellBase(Module):
    """Base class of the cells (``torch.nn.RNNCellBase``): ``weight_ih``, ``weight_hh`` and (with
    ``bias``) ``bias_ih``, ``bias_hh``, drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    weight_ih: Parameter
    weight_hh: Parameter
    bias_ih: Parameter | None
    bias_hh: Parameter | None

    _name = "RNNCell"
    _mode = "RNN_TANH"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(new_tensor((num_chunks * hidden_size, input_size), dtype, device))
        self.weight_hh = Parameter(new_tensor((num_chunks * hidden_size, hidden_size), dtype, device))
        if bias:
            self.bias_ih = Parameter(new_tensor((num_chunks * hidden_size,), dtype, device))
            self.bias_hh = Parameter(new_tensor((num_chunks * hidden_size,), dtype, device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        """torch's summary of the arguments."""
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in torch's order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _step(self, input: Tensor, hx: Any, lstm: bool) -> Any:
        """One step: checks as torch's ATen cells, then the shared recurrent node with one step."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{self._name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = [] if hx is None else (list(hx) if lstm else [hx])
        for idx, value in enumerate(states):
            if value.dim() not in (1, 2):
                what = f"hx[{idx}]" if lstm else "hidden"
                raise ValueError(f"{self._name}: Expected {what} to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _zeros((input.size(0), self.hidden_size), input)
            states = [zeros, zeros] if lstm else [zeros]
        elif not is_batched:
            states = [s.unsqueeze(0) for s in states]
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for idx, s in enumerate(states):
            if input.size(0) != s.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{idx} batch size {s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(
                    f"hidden{idx} has inconsistent hidden_size: got {s.size(1)}, expected {self.hidden_size}"
                )
        gi = F.linear(input, self.weight_ih, self.bias_ih)
        res = recurrent_layer(
            self._mode, gi, states[0], states[1] if lstm else None, self.weight_hh, self.bias_hh, None,
            [input.size(0)],
        )
        outs = res[1:]
        if not is_batched:
            outs = tuple(o.squeeze(0) for o in outs)
        return outs if lstm else outs[0]


class RNNCell(RNNCellBase):
    """One Elman RNN step, as ``torch.nn.RNNCell``: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``
    (or relu). ``forward(input, hx=None)`` returns ``h'``; 1-D (unbatched) inputs work."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
        device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        self._mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._step(input, hx, False)


class LSTMCell(RNNCellBase):
    """One LSTM step, as ``torch.nn.LSTMCell``. ``forward(input, (h, c)=None)`` returns
    ``(h', c')``."""

    _name = "LSTMCell"
    _mode = "LSTM"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """The next ``(h, c)``."""
        return self._step(input, hx, True)


class GRUCell(RNNCellBase):
    """One GRU step, as ``torch.nn.GRUCell``. ``forward(input, hx=None)`` returns ``h'``."""

    _name = "GRUCell"
    _mode = "GRU"

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        return self._step(input, hx, False)
