"""``aiograd.distributions``: the part of ``torch.distributions`` that VAEs and policy-gradient
code use, written with aiograd ops so ``log_prob``, ``entropy``, ``rsample`` and
``kl_divergence`` are differentiable (``await loss.backward()`` reaches the parameters).

``Distribution`` (the base: shapes, ``sample``/``rsample``, ``log_prob``, ``entropy``, ``mean``,
``mode``, ``stddev``, ``variance``, ``expand``, ``support``, ``arg_constraints`` and argument
validation with torch's ``ValueError`` messages, ``set_default_validate_args``), ``Normal``,
``Bernoulli``, ``Categorical``, ``OneHotCategorical``, ``Uniform``, ``MultivariateNormal``,
``Independent``, ``Gamma`` (``rsample`` with torch's ``_standard_gamma_grad``), ``Beta`` and
``Dirichlet`` (no ``rsample``); ``kl_divergence``/``register_kl`` with the closed forms among
these; ``constraints`` and ``utils``. Sampling calls aiograd's samplers (torch's Mersenne
Twister and CPU algorithms) in torch's order, so after the same ``manual_seed`` samples are
torch's, except Gamma's, Beta's and Dirichlet's (Marsaglia-Tsang, vectorised: the same
distribution, reproducible under ``manual_seed``, not torch's values).
Sizes are tuples (aiograd has no ``torch.Size``), so messages show ``(2, 3)`` where torch's show
``torch.Size([2, 3])``.
"""

from . import constraints, kl, utils
from .bernoulli import Bernoulli
from .categorical import Categorical
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .uniform import Uniform

__all__ = [
    "Bernoulli",
    "Beta",
    "Categorical",
    "Dirichlet",
    "Distribution",
    "Gamma",
    "Independent",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Uniform",
    "constraints",
    "kl",
    "kl_divergence",
    "register_kl",
    "utils",
]
