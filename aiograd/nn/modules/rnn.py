"""``RNN``, ``LSTM`` and ``GRU`` (torch/nn/modules/rnn.py; the cells are in rnn_cells.py):
torch's parameters (names, shapes, initialisation order), arguments, checks and messages. The
math is in aiograd/nn/_rnn.py: per layer and direction one matmul projects every time step's input,
then one custom node runs the time loop (and its backward)."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ..._core._tensor import Tensor
from ..._ops.joining import cat, stack
from .. import functional as F
from .. import init
from .._rnn import recurrent_layer
from ..parameter import Parameter, new_tensor
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "RNNBase"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _zeros(shape: tuple[int, ...], like: Tensor) -> Tensor:
    return new_tensor(shape, like.dtype, like.device)


def _permute(hx: Tensor, permutation: Tensor | None) -> Tensor:
    return hx if permutation is None else hx.index_select(1, permutation)


class RNNBase(Module):
    """Base class of :class:`RNN`, :class:`LSTM` and :class:`GRU` (``torch.nn.RNNBase``): builds
    the parameters ``weight_ih_l{k}{_reverse}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}`` (and LSTM's ``weight_hr_l{k}``) in torch's order and draws them all from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    dropout: float

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:  # type: ignore[operator]
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        self.dropout = float(dropout)  # type: ignore[arg-type]
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if dropout > 0 and num_layers == 1:  # type: ignore[operator]
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=3,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [
                    ("weight_ih_l{}{}", (gate_size, layer_input_size)),
                    ("weight_hh_l{}{}", (gate_size, real_hidden_size)),
                ]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for fmt, shape in shapes:
                    name = fmt.format(layer, suffix)
                    setattr(self, name, Parameter(new_tensor(shape, dtype, device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters, one list per layer and direction, in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (torch's packs the weights for cuDNN)."""

    def reset_parameters(self) -> None:
        """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in torch's order."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        """torch's summary of the arguments."""
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------------------- checks
    def check_input(self, input: Tensor, batch_sizes: Any) -> None:
        """torch's checks of the input's dtype, rank and feature size."""
        w = self._flat_weights[0]
        if w is not None and input.dtype != w.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). "
                f"Convert input: input.to({w.dtype}), or convert model: model.to({input.dtype})"
            )
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.size(-1)}"
            )

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Any) -> tuple[int, int, int]:
        """``(num_layers * num_directions, batch, proj_size or hidden_size)``."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(
        self, hx: Tensor, expected_hidden_size: tuple[int, int, int], msg: str = "Expected hidden size {}, got {}"
    ) -> None:
        """torch's RuntimeError when ``hx`` is not of ``expected_hidden_size``."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Any) -> None:
        """Check the input and the initial hidden state."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        """``hx`` with its batch (dim 1) in the order ``permutation``."""
        return _permute(hx, permutation)

    # ------------------------------------------------------------------------------- forward
    def _prepare(self, input: Any, hx: Any, name: str, lstm: bool) -> tuple[Any, ...]:
        """Unpack a packed input or batch an unbatched one; returns ``(data, batch_sizes, sorted,
        unsorted, hx, is_batched, batch_dim)``, ``hx`` None when not given."""
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is not None:
                hx = (_permute(hx[0], sorted_indices), _permute(hx[1], sorted_indices)) if lstm else _permute(
                    hx, sorted_indices
                )
            return data, batch_sizes, sorted_indices, unsorted_indices, hx, True, 1
        if input.dim() not in (2, 3):
            tensor = " tensor" if name == "RNN" else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tensor} instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is not None:
            want = 3 if is_batched else 2
            if lstm:
                if hx[0].dim() != want or hx[1].dim() != want:
                    kind = "batched 3-D" if is_batched else "unbatched 2-D"
                    raise RuntimeError(
                        f"For {kind} input, hx and cx should also be {want}-D but got "
                        f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                    )
                if not is_batched:
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            else:
                if hx.dim() != want:
                    kind = "batched 3-D" if is_batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
                if not is_batched:
                    hx = hx.unsqueeze(1)
        return input, None, None, None, hx, is_batched, batch_dim

    def _run(self, data: Tensor, batch_sizes: list[int], hx: Tensor, cx: Tensor | None) -> tuple[Any, ...]:
        """All layers over packed ``data`` (``N x input_size``); ``(output, h_n, c_n)``."""
        num_directions = 2 if self.bidirectional else 1
        layer_input = data
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                p = dict(zip(self._all_weights[k], self.all_weights[k], strict=True))
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                gi = F.linear(layer_input, p["weight_ih" + suffix], p.get("bias_ih" + suffix))
                res = recurrent_layer(
                    self.mode, gi, hx[k], None if cx is None else cx[k], p["weight_hh" + suffix],
                    p.get("bias_hh" + suffix), p.get("weight_hr" + suffix), batch_sizes, direction == 1,
                )
                outs.append(res[0])
                hs.append(res[1])
                if cx is not None:
                    cs.append(res[2])
            layer_input = outs[0] if num_directions == 1 else cat(outs, -1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, stack(hs, 0), (stack(cs, 0) if cx is not None else None)

    def _forward(self, input: Any, hx: Any) -> tuple[Any, Any]:
        lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        data, bsz, sorted_idx, unsorted_idx, hx, is_batched, batch_dim = self._prepare(input, hx, name, lstm)
        num_directions = 2 if self.bidirectional else 1
        packed = bsz is not None
        if packed:
            batch_sizes = [int(b) for b in bsz.tolist()]
            max_batch = batch_sizes[0]
        else:
            max_batch = data.size(0) if self.batch_first else data.size(1)
        real = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = _zeros((self.num_layers * num_directions, max_batch, real), data)
            if lstm:
                hx = (hx, _zeros((self.num_layers * num_directions, max_batch, self.hidden_size), data))
        self.check_input(data, bsz)
        if lstm:
            self.check_hidden_size(hx[0], self.get_expected_hidden_size(data, bsz), "Expected hidden[0] size {}, got {}")
            expected_c = (self.num_layers * num_directions, self.get_expected_hidden_size(data, bsz)[1], self.hidden_size)
            self.check_hidden_size(hx[1], expected_c, "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(hx, self.get_expected_hidden_size(data, bsz))
        h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
        if packed:
            out, h_n, c_n = self._run(data, batch_sizes, h0, c0)
            output: Any = PackedSequence(out, bsz, sorted_idx, unsorted_idx)
        else:
            seq = data.transpose(0, 1) if self.batch_first else data
            steps, batch = seq.shape[0], seq.shape[1]
            flat = seq.reshape(steps * batch, seq.shape[2])
            out, h_n, c_n = self._run(flat, [batch] * steps, h0, c0)
            output = out.reshape(steps, batch, out.shape[-1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not is_batched:
                output = output.squeeze(batch_dim)
                h_n = h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
        h_n = _permute(h_n, unsorted_idx)
        if lstm:
            return output, (h_n, _permute(c_n, unsorted_idx))  # type: ignore[arg-type]
        return output, h_n


class RNN(RNNBase):
    """Elman RNN, as ``torch.nn.RNN``: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``
    (``nonlinearity='relu'`` for relu), over ``num_layers`` layers, optionally bidirectional,
    with dropout between layers in training. ``forward(input, hx=None)`` takes a ``(L, N, H_in)``
    (``(N, L, H_in)`` with ``batch_first``), an unbatched ``(L, H_in)`` input or a
    :class:`~aiograd.nn.utils.rnn.PackedSequence`, and returns ``(output, h_n)``."""

    nonlinearity: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """``(output, h_n)``; a packed input gives a packed output."""
        return self._forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory, as ``torch.nn.LSTM`` (gates ``i, f, g, o``; ``proj_size > 0``
    adds ``weight_hr_l{k}`` projecting ``h_t`` to ``proj_size``). ``forward(input, (h_0, c_0))``
    returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Any) -> tuple[int, int, int]:
        """``(num_layers * num_directions, batch, hidden_size)``."""
        h = self.get_expected_hidden_size(input, batch_sizes)
        return (h[0], h[1], self.hidden_size)

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:  # type: ignore[override]
        """``(h, c)`` with their batch in the order ``permutation``."""
        return (_permute(hx[0], permutation), _permute(hx[1], permutation))

    def forward(self, input: Any, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Any, tuple[Tensor, Tensor]]:
        """``(output, (h_n, c_n))``; a packed input gives a packed output."""
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit, as ``torch.nn.GRU`` (gates ``r, z, n``,
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``).
    ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """``(output, h_n)``; a packed input gives a packed output."""
        return self._forward(input, hx)
