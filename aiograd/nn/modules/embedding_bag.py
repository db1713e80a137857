"""``EmbeddingBag`` (torch/nn/modules/sparse.py): sums, means or maxima of bags of rows of a
lookup table drawn from N(0, 1) (the ``padding_idx`` row zero); calls ``F.embedding_bag``."""

from __future__ import annotations

from typing import Any

from ..._core._tensor import Tensor
from .. import functional as F
from ..parameter import Parameter, new_tensor
from .sparse import _EmbeddingTable, padding_row

__all__ = ["EmbeddingBag"]


class EmbeddingBag(_EmbeddingTable):
    """Bags of ``weight`` rows reduced by ``mode`` (``'sum'``, ``'mean'`` or ``'max'``)."""

    def __init__(
        self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None, norm_type: float = 2.0,
        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight: Tensor | None = None,
        include_last_offset: bool = False, padding_idx: int | None = None, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = padding_row(padding_idx, num_embeddings, "padding_idx")
        if _weight is None:
            self.weight = Parameter(new_tensor((num_embeddings, embedding_dim), dtype, device))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        """``F.embedding_bag`` with this layer's settings."""
        return F.embedding_bag(  # type: ignore[attr-defined]
            input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.mode,
            self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx,
        )

    def extra_repr(self) -> str:
        """``num_embeddings, embedding_dim``, the settings that differ from the default, ``mode``."""
        s = "{num_embeddings}, {embedding_dim}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        s += ", mode={mode}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        return s.format(**{k: repr(v) for k, v in self.__dict__.items()})

    @classmethod
    def from_pretrained(
        cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None, norm_type: float = 2.0,
        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (shared, frozen unless ``freeze=False``)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            num_embeddings=rows, embedding_dim=cols, _weight=embeddings, max_norm=max_norm, norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
            include_last_offset=include_last_offset, padding_idx=padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
