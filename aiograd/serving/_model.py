"""The model a gradient service serves: a user's ``aiograd.nn.Module`` from ``package.module:factory``,
its weights from a file checked before they are trusted, its input shape and its classes.

Everything here runs once, at startup, and fails with a ``ModelError``: one line that names the
file, the parameter or the factory, which the command line prints with exit status 2.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .._base._grad_mode import no_grad
from .._core._tensor import Tensor
from ..nn import Linear, Module
from ..nn.utils import serialization
from ._requests import batch_coupled_modules, check_rows_independent

__all__ = ["ModelError", "ServedModel", "import_factory", "load_weights", "serve_module"]


class ModelError(ValueError):
    """A model, its factory or its weights cannot be served; the message is one line."""


@dataclasses.dataclass
class ServedModel:
    """A module ready to serve: in evaluation mode, its parameters frozen (a request's graph
    records only what depends on its input), with the input shape of one row (``input_shape``:
    a request's input is ``(rows, *input_shape)``), its number of output classes and its dtype.
    ``source`` says where it came from and ``info`` holds what ``/health`` shows besides."""

    module: Module
    input_shape: tuple[int, ...]
    classes: int
    dtype: np.dtype[Any]
    source: str = "built in the process"
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __call__(self, x: Tensor) -> Tensor:
        return self.module(x)


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def import_factory(spec: str) -> Callable[[], Any]:
    """The callable named by ``spec``: ``package.module:attribute`` (the attribute may be dotted,
    ``module:Class.build``) or ``path/to/file.py:attribute``, as gunicorn and uvicorn name
    applications."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ModelError(f"--model must be 'package.module:factory' (or 'file.py:factory'), got {spec!r}")
    try:
        if module_name.endswith(".py"):
            path = os.path.abspath(module_name)
            if not os.path.isfile(path):
                raise ModelError(f"--model: no such file: {os.path.basename(module_name)!r}")
            name = "_aiograd_served_" + os.path.splitext(os.path.basename(path))[0]
            loader_spec = importlib.util.spec_from_file_location(name, path)
            assert loader_spec is not None and loader_spec.loader is not None
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"--model: importing {module_name!r} failed: {type(exc).__name__}: "
                         f"{_one_line(str(exc), 200)}") from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ModelError(f"--model: {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ModelError(f"--model: {spec!r} is a {type(target).__name__}, not a callable that "
                         "returns an aiograd.nn.Module")
    return target  # type: ignore[no-any-return]


def load_weights(path: str, module: Module, *, max_bytes: int | None = serialization.MAX_BYTES) -> dict[str, Tensor]:
    """The weights of ``path`` (``.safetensors`` or ``.npz``), checked against ``module``'s state
    dict before it is touched: the file's own checks (``nn.utils.load``: sizes bounded before any
    array is read, numeric dtypes only), then the same keys, each of the same shape, real floating
    point where the module has floating point (not complex, integer or bool) and finite."""
    name = os.path.basename(path)
    try:
        state = serialization.load(path, max_bytes=max_bytes)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelError(_one_line(str(exc))) from None
    expected = module.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} ({', '.join(map(repr, missing[:3]))}"
                         f"{', ...' if len(missing) > 3 else ''})")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)} ({', '.join(map(repr, unexpected[:3]))}"
                         f"{', ...' if len(unexpected) > 3 else ''})")
        raise ModelError(f"{name}: its keys do not match the model's state dict: {'; '.join(parts)}")
    for key, want in expected.items():
        got = state[key]
        if tuple(got.shape) != tuple(want.shape):
            raise ModelError(f"{name}: {key!r} has shape {tuple(got.shape)}, the model's has "
                             f"{tuple(want.shape)}")
        if np.dtype(want.dtype).kind == "f":
            if np.dtype(got.dtype).kind != "f":
                raise ModelError(f"{name}: {key!r} is {got.dtype}, not real floating point: the "
                                 "model's weights must be float16, float32 or float64")
            if not np.isfinite(got.numpy()).all():
                raise ModelError(f"{name}: {key!r} has values that are not finite (NaN or infinity)")
        elif np.dtype(got.dtype).kind not in "iub":
            raise ModelError(f"{name}: {key!r} is {got.dtype}, the model's is {want.dtype}")
    return state


def _infer_input_shape(module: Module) -> tuple[int, ...] | None:
    """One row's shape, where the module says it: an ``input_shape`` attribute, or a first layer
    that is a ``Linear`` (its ``in_features``)."""
    declared = getattr(module, "input_shape", None)
    if declared is not None:
        return tuple(int(d) for d in declared)
    for sub in module.modules():
        if next(iter(sub.children()), None) is not None:
            continue  # a container: look inside
        if isinstance(sub, Linear):
            return (sub.in_features,)
        if next(iter(sub.parameters(recurse=False)), None) is not None:
            return None  # a first layer with weights that does not tell its input's size
    return None


async def serve_module(
    module: Any,
    *,
    weights: str | None = None,
    input_shape: tuple[int, ...] | None = None,
    source: str | None = None,
    max_weight_bytes: int | None = serialization.MAX_BYTES,
    check_rows: bool = True,
    info: dict[str, Any] | None = None,
) -> ServedModel:
    """Make ``module`` servable, or raise ``ModelError`` saying why.

    Loads ``weights`` (checked: ``load_weights``) and casts the module to their floating dtype;
    puts it in evaluation mode with frozen parameters; finds one row's ``input_shape`` (given, or
    ``_infer_input_shape``); runs it once on two rows of zeros, which must give ``(2, classes)``;
    and, with ``check_rows``, checks on three random rows that each output row depends on its own
    input row only (``check_rows_independent``), without which batched gradients would mix
    requests."""
    if not isinstance(module, Module):
        raise ModelError(f"the model to serve must be an aiograd.nn.Module, got "
                         f"{type(module).__name__}")
    if weights is not None:
        state = load_weights(weights, module, max_bytes=max_weight_bytes)
        floating = [t.dtype for k, t in state.items() if np.dtype(t.dtype).kind == "f"]
        if floating:
            module.to(floating[0])
        try:
            module.load_state_dict(state)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise ModelError(f"{os.path.basename(weights)}: {_one_line(str(exc), 300)}") from None
    module.eval().requires_grad_(False)
    coupled = batch_coupled_modules(module)
    if coupled:
        raise ModelError(f"the model's {coupled[0]} normalises with the statistics of the whole "
                         "batch even in evaluation mode: batched requests would change each other's "
                         "gradients")
    shape = input_shape if input_shape is not None else _infer_input_shape(module)
    if shape is None:
        raise ModelError("the input shape of one row cannot be read off the model (its first "
                         "layer is not a Linear): give it, e.g. --input-shape 3,32,32")
    if not shape or any(d < 1 for d in shape):
        raise ModelError(f"the input shape must be positive sizes, got {shape}")
    params = [p for p in module.parameters()]
    dtype = np.dtype(params[0].dtype) if params else np.dtype(np.float64)
    probe = np.zeros((2, *shape), dtype=dtype)
    try:
        with no_grad():
            out = module(Tensor._wrap(probe))
    except Exception as exc:
        raise ModelError(f"the model fails on a batch of 2 rows of shape {shape}: "
                         f"{type(exc).__name__}: {_one_line(str(exc), 200)}") from None
    if not isinstance(out, Tensor) or out.ndim != 2 or out.shape[0] != 2:
        got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ModelError(f"the model must map (rows, {', '.join(map(str, shape))}) to (rows, "
                         f"classes); on 2 rows it gave {got}")
    if check_rows:
        rng = np.random.default_rng(0)
        try:
            await check_rows_independent(module, rng.standard_normal((3, *shape)).astype(dtype), probes=3)
        except ValueError as exc:
            raise ModelError(f"batched gradients would mix requests: {_one_line(str(exc), 300)}") from None
    return ServedModel(module, tuple(shape), int(out.shape[1]), dtype,
                       source or (weights if weights is not None else "built in the process"),
                       dict(info or {}))
