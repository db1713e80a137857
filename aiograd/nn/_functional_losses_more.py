"""The ``nn.functional`` names of ``_losses_more`` (margin, embedding and likelihood losses),
``_ctc`` (``ctc_loss``), ``_embedding_bag`` and ``_unpool`` (``max_unpool*``, ``lp_pool*``),
gathered for functional.py to re-export in one line."""

from ._ctc import ctc_loss
from ._embedding_bag import embedding_bag
from ._losses_more import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ._unpool import lp_pool1d, lp_pool2d, lp_pool3d, max_unpool1d, max_unpool2d, max_unpool3d

__all__ = [
    "cosine_embedding_loss", "ctc_loss", "embedding_bag", "gaussian_nll_loss", "hinge_embedding_loss",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss",
    "soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
]
