"""``aiograd.nn.utils.rnn`` (torch/nn/utils/rnn.py): ``PackedSequence`` and padding, packing and
their inverses. Every function is one ``index_select`` of the (concatenated) inputs at indices
computed with numpy, so gradients flow through aiograd's ops as through torch's kernels; padded
positions read a constant row and so get no gradient."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from ..._core._tensor import Tensor
from ..._ops.casting import _to_args
from ..._ops.joining import cat

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


def _np(t: Any) -> np.ndarray:
    """A tensor's (or a list's) values as a host numpy array."""
    if isinstance(t, Tensor):
        return np.asarray(t.detach().cpu().data)
    return np.asarray(t)


def _index(values: np.ndarray, device: Any) -> Tensor:
    """An int64 index tensor on ``device``."""
    out = Tensor(np.ascontiguousarray(values, dtype=np.int64))
    return out if device is None or device.type == "cpu" else out.to(device)


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """Holds the ``data`` and the ``batch_sizes`` of a packed batch of sequences, as
    ``torch.nn.utils.rnn.PackedSequence``: a named tuple ``(data, batch_sizes, sorted_indices,
    unsorted_indices)``.

    Made by :func:`pack_padded_sequence` and :func:`pack_sequence`, not by hand. ``batch_sizes[t]``
    is the number of sequences longer than ``t``; ``data`` holds their ``t``-th elements, step
    after step. ``sorted_indices`` (``None`` when the batch came sorted) is the order the
    sequences were packed in, ``unsorted_indices`` its inverse. ``batch_sizes`` is always an int64
    CPU tensor; the index tensors live on ``data``'s device.

    Also built as ``PackedSequence((data, batch_sizes), sorted_indices=...)``; when
    ``unsorted_indices`` is not given it is computed from ``sorted_indices``.
    """

    def __new__(
        cls,
        data: Any,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. "
                    "Instances of PackedSequence should never be created manually. "
                    "They should be instantiated by functions like pack_sequence "
                    "and pack_padded_sequences in nn.utils.rnn. "
                    "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence"
                )
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise AssertionError("Expected data to be a list or tuple of length 2")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """Move and/or cast ``data`` as ``Tensor.to`` does; the index tensors follow ``data`` to
        its device (``batch_sizes`` stays on the CPU). Returns ``self`` when ``data`` is
        unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        _, _, copy = _to_args(args, kwargs)

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(data.device, copy=copy)

        return type(self)(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    def cuda(self, device: Any = None) -> PackedSequence:
        """A copy on a CUDA device (``data`` and the index tensors)."""
        return self.to(device if device is not None else "cuda")

    def cpu(self) -> PackedSequence:
        """A copy on the CPU (``self`` when already there)."""
        return self.to("cpu")

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self.to(dtype=np.float64)

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self.to(dtype=np.float32)

    def half(self) -> PackedSequence:
        """``data`` as float16."""
        return self.to(dtype=np.float16)

    def long(self) -> PackedSequence:
        """``data`` as int64."""
        return self.to(dtype=np.int64)

    def int(self) -> PackedSequence:
        """``data`` as int32."""
        return self.to(dtype=np.int32)

    def short(self) -> PackedSequence:
        """``data`` as int16."""
        return self.to(dtype=np.int16)

    def char(self) -> PackedSequence:
        """``data`` as int8."""
        return self.to(dtype=np.int8)

    def byte(self) -> PackedSequence:
        """``data`` as uint8."""
        return self.to(dtype=np.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        """Always ``False``: aiograd has no pinned host memory."""
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of the 1-D index tensor ``permutation`` (``None`` for ``None``), on its device:
    ``out[permutation[i]] = i``. Converts between a :class:`PackedSequence`'s ``sorted_indices``
    and ``unsorted_indices``."""
    if permutation is None:
        return None
    perm = _np(permutation).astype(np.int64)
    out = np.empty_like(perm)
    out[perm] = np.arange(perm.size)
    return _index(out, permutation.device).to(dtype=permutation.dtype)


def _lengths_array(lengths: Any) -> np.ndarray:
    """``lengths`` as int64 numpy values, with torch's check that it is a 1-D CPU tensor."""
    if isinstance(lengths, Tensor):
        arr = _np(lengths).astype(np.int64)
        if lengths.dim() != 1 or lengths.device.type != "cpu":
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.dim()}D {lengths.device} Long tensor"
            )
        return arr
    return np.asarray(lengths).astype(np.int64).reshape(-1)


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | list[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch of variable-length sequences, as
    ``torch.nn.utils.rnn.pack_padded_sequence``.

    ``input`` is ``T x B x *`` (``B x T x *`` when ``batch_first``), ``lengths`` the ``B``
    lengths (a list, or a 1-D CPU tensor), each at least 1. With ``enforce_sorted`` (the
    default) the lengths must not increase; with ``enforce_sorted=False`` the batch is sorted
    first (stably) and the order is kept in ``sorted_indices``. Steps past a sequence's length
    are left out. Inverse of :func:`pad_packed_sequence`; differentiable in ``input``.
    """
    lens = _lengths_array(lengths)
    if input.dim() < 2:
        if input.dim() == 0 and not batch_first:
            raise IndexError("Dimension specified as 1 but tensor has no dimensions")
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    batch_dim = 0 if batch_first else 1
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = _index(order, input.device)
        input = input.index_select(batch_dim, sorted_indices)
    steps, batch = input.shape[1 - batch_dim], input.shape[batch_dim]
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if lens.shape[0] != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.shape[0]} "
            f"(batch_size={batch})"
        )
    if lens[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    if np.any(lens[:-1] < lens[1:]):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
            "sidestep this requirement if you do not need ONNX exportability."
        )
    if lens[0] > steps:  # torch reads past the input here; aiograd refuses
        raise RuntimeError(
            f"Expected every length to be at most the input's number of steps ({steps}), "
            f"but got a length of {int(lens[0])}"
        )
    batch_sizes = (lens[None, :] > np.arange(lens[0])[:, None]).sum(axis=1)
    t_idx = np.concatenate([np.full(n, t) for t, n in enumerate(batch_sizes)])
    b_idx = np.concatenate([np.arange(n) for n in batch_sizes])
    flat = b_idx * steps + t_idx if batch_first else t_idx * batch + b_idx
    rows = input.reshape(steps * batch, *input.shape[2:])
    data = rows.index_select(0, _index(flat, input.device))
    return PackedSequence(data, _index(batch_sizes, None), sorted_indices, None)


def _gather_padded(
    rows: Tensor,
    index: np.ndarray,
    shape: tuple[int, ...],
    padding_value: float,
) -> Tensor:
    """``rows`` (``N x *``) read at ``index`` (any shape, ``-1`` meaning padding), reshaped to
    ``shape``: one ``index_select`` of ``rows`` with a constant padding row appended."""
    trailing = tuple(rows.shape[1:])
    if np.any(index < 0):
        pad = Tensor(np.full((1, *trailing), padding_value).astype(rows.dtype))
        if rows.device.type != "cpu":
            pad = pad.to(rows.device)
        index = np.where(index < 0, rows.shape[0], index)
        rows = cat([rows, pad])
    return rows.index_select(0, _index(index.reshape(-1), rows.device)).reshape(*shape, *trailing)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Pad a packed batch back to a tensor, as ``torch.nn.utils.rnn.pad_packed_sequence``.

    Returns ``(padded, lengths)``: ``padded`` is ``T x B x *`` (``B x T x *`` when
    ``batch_first``), ``T`` the longest length or ``total_length`` when given (a
    ``ValueError`` when that is shorter), the empty steps filled with ``padding_value``;
    ``lengths`` the int64 CPU tensor of the lengths. The batch comes back in its original
    order (before :func:`pack_padded_sequence` sorted it). Differentiable in ``sequence.data``.
    """
    batch_sizes = _np(sequence.batch_sizes).astype(np.int64)
    max_seq_length = batch_sizes.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length "
                "of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {max_seq_length}"
            )
        max_seq_length = total_length
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    index = np.full((max_seq_length, batch), -1, dtype=np.int64)
    offset = 0
    for t, n in enumerate(batch_sizes):
        index[t, :n] = np.arange(offset, offset + n)
        offset += n
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        order = _np(unsorted).astype(np.int64)
        index, lengths = index[:, order], lengths[order]
    if batch_first:
        index = index.T
    padded = _gather_padded(sequence.data, index, index.shape, padding_value)
    return padded, _index(lengths, None)


def _broadcast_check(slot: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """torch's ``copy_`` errors for a sequence of ``shape`` copied into an output slot."""
    ndim = max(len(slot), len(shape))
    result = []
    for i in range(ndim - 1, -1, -1):
        a = slot[i - ndim + len(slot)] if i - ndim + len(slot) >= 0 else 1
        b = shape[i - ndim + len(shape)] if i - ndim + len(shape) >= 0 else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {i}"
            )
        result.insert(0, a if b == 1 else b)
    if tuple(result) != tuple(slot):
        raise RuntimeError(
            f"output with shape [{', '.join(map(str, slot))}] doesn't match the broadcast shape "
            f"[{', '.join(map(str, result))}]"
        )


def pad_sequence(
    sequences: Tensor | Iterable[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack variable-length sequences into one padded tensor, as
    ``torch.nn.utils.rnn.pad_sequence``.

    Each sequence is ``L_i x *`` (the trailing sizes are the first sequence's; others broadcast
    to them, and are cast to its dtype and moved to its device). The output is ``T x B x *``
    (``B x T x *`` when ``batch_first``), ``T`` the longest length, the rest filled with
    ``padding_value`` on the right (or on the left with ``padding_side="left"``).
    Differentiable in every sequence.
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    first = seqs[0]
    if first.dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    trailing = tuple(first.shape[1:])
    for s in seqs:
        if s.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    lens = [int(s.shape[0]) for s in seqs]
    max_len = max(lens)
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    parts = []
    for s, n in zip(seqs, lens):
        _broadcast_check((n, *trailing), tuple(s.shape))
        s = s.to(first.device, first.dtype)
        if tuple(s.shape) != (n, *trailing):
            s = s.expand(n, *trailing)
        parts.append(s)
    index = np.full((len(seqs), max_len), -1, dtype=np.int64)
    offset = 0
    for i, n in enumerate(lens):
        start = max_len - n if padding_side == "left" else 0
        index[i, start : start + n] = np.arange(offset, offset + n)
        offset += n
    if not batch_first:
        index = index.T
    rows = parts[0] if len(parts) == 1 else cat(parts)
    return _gather_padded(rows, index, index.shape, padding_value)


def unpad_sequence(
    padded_sequences: Tensor,
    lengths: Tensor | list[int],
    batch_first: bool = False,
) -> list[Tensor]:
    """Split a padded batch back into its sequences, as ``torch.nn.utils.rnn.unpad_sequence``:
    sequence ``b`` is the first ``lengths[b]`` steps of ``padded_sequences``' ``b``-th batch
    element (``padded_sequences`` is ``T x B x *``, or ``B x T x *`` when ``batch_first``).
    Unlike torch, it does not transpose ``padded_sequences`` in place."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    steps = np.arange(padded_sequences.shape[1])
    out = []
    for seq, length in zip(padded_sequences.unbind(0), _np(lengths).reshape(-1), strict=True):
        out.append(seq[Tensor(steps < length)])
    return out


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length sequences (each ``L_i x *``), as
    ``torch.nn.utils.rnn.pack_sequence``: :func:`pad_sequence` then
    :func:`pack_padded_sequence`. With ``enforce_sorted`` (the default) the lengths must not
    increase."""
    lengths = _index([int(v.shape[0]) for v in sequences], None)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a :class:`PackedSequence` holds, in their original order, as
    ``torch.nn.utils.rnn.unpack_sequence``: :func:`pad_packed_sequence` then
    :func:`unpad_sequence`."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
