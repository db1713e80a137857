"""``aiograd.nn.utils``: gradient clipping, parameters as one vector, weights in files
(safetensors, npz), packed and padded sequences (``rnn``), and
parametrizations (``parametrize``, ``parametrizations``, weight and spectral norm)."""

from . import clip_grad, convert_parameters, parametrizations, parametrize, rnn, serialization
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .serialization import load, load_npz, load_safetensors, save, save_npz, save_safetensors
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad", "clip_grad_norm_", "clip_grad_value_", "convert_parameters", "load", "load_npz",
    "load_safetensors", "parameters_to_vector", "rnn", "save", "save_npz", "save_safetensors", "serialization",
    "vector_to_parameters", "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm",
    "spectral_norm", "weight_norm",
]
