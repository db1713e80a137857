"""``aiograd.nn.utils``: gradient clipping, parameters as one vector, and weights in files
(safetensors, npz)."""

from . import clip_grad, convert_parameters, serialization
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .serialization import load, load_npz, load_safetensors, save, save_npz, save_safetensors

__all__ = [
    "clip_grad", "clip_grad_norm_", "clip_grad_value_", "convert_parameters", "load", "load_npz",
    "load_safetensors", "parameters_to_vector", "save", "save_npz", "save_safetensors", "serialization",
    "vector_to_parameters",
]
