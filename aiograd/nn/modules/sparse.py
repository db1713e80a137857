"""``Embedding`` (torch/nn/modules/sparse.py): a lookup table of ``num_embeddings`` vectors,
drawn from N(0, 1), the ``padding_idx`` row zero; calls ``F.embedding``."""

from __future__ import annotations

from typing import Any

from ..._base._grad_mode import no_grad
from ..._core._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, new_tensor
from .module import Module

__all__ = ["Embedding"]


def padding_row(padding_idx: int | None, num_embeddings: int, word: str) -> int | None:
    """``padding_idx`` as a row in ``[0, num_embeddings)`` (negative counts from the end), torch's
    AssertionError outside it (``word`` capitalised as torch's module spells it)."""
    if padding_idx is None:
        return None
    if (padding_idx > 0 and padding_idx >= num_embeddings) or padding_idx < -num_embeddings:
        raise AssertionError(f"{word} must be within num_embeddings")  # (0 always passes, as in torch)
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


class _EmbeddingTable(Module):
    """What Embedding and EmbeddingBag share: a ``weight`` table drawn from N(0, 1) whose
    ``padding_idx`` row is zero."""

    weight: Parameter
    padding_idx: int | None

    def reset_parameters(self) -> None:
        """Draw the weight from N(0, 1) again; the padding row zero."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)


class Embedding(_EmbeddingTable):
    """Rows of ``weight`` picked by integer indices."""

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, max_norm: float | None = None,
        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
        _weight: Tensor | None = None, _freeze: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_row(padding_idx, num_embeddings, "Padding_idx")
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if _weight is None:
            self.weight = Parameter(new_tensor((num_embeddings, embedding_dim), dtype, device), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        self.sparse = sparse

    def forward(self, input: Tensor) -> Tensor:
        """``F.embedding`` with this layer's settings."""
        return F.embedding(  # type: ignore[attr-defined]
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    def extra_repr(self) -> str:
        """``num_embeddings, embedding_dim`` and the settings that differ from the default."""
        s = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s.format(**self.__dict__)

    @classmethod
    def from_pretrained(
        cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None, max_norm: float | None = None,
        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (shared, frozen unless ``freeze=False``)."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze, padding_idx=padding_idx,
            max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse,
        )
