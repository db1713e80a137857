"""The gradient service's JSON requests: each endpoint's body checked and turned into an
``AttributionRequest`` (or a ``BadRequest`` naming the problem), and its answer as JSON.

A request is checked whole before it joins a batch, so a bad request fails alone with a 4xx and
never the batch. Error messages quote the request only in bounded pieces (``shown``): an unknown
field's 1 MB name is not echoed back.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import orjson

from ._attributions import (
    IG_RULES,
    NOISE_TYPES,
    Attribution,
    AttributionRequest,
    expanded_rows,
)

__all__ = ["ENDPOINTS", "BadRequest", "Limits", "answer", "parse", "shown"]

#: Each endpoint's path, its attribution method and the fields its body may hold besides
#: ``input`` and ``target``.
ENDPOINTS: dict[str, tuple[str, frozenset[str]]] = {
    "/saliency": ("saliency", frozenset({"abs"})),
    "/input-x-gradient": ("input_x_gradient", frozenset()),
    "/integrated-gradients": ("integrated_gradients", frozenset({"steps", "method", "baseline"})),
    "/smoothgrad": ("smoothgrad", frozenset({"samples", "stdev", "noise_type", "seed", "abs"})),
}


class BadRequest(Exception):
    """A request the service refuses: its HTTP status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may ask for. ``max_rows``: input rows; ``max_work_rows``: rows of the
    batch it expands to (``aiograd.serving.attribute``'s ``expanded_rows``: rows x (steps + 2)
    for integrated gradients, rows x (samples + 1) for SmoothGrad);
    ``max_abs``: the largest magnitude of an input value; ``max_steps``/``max_samples``."""

    max_rows: int = 256
    max_work_rows: int = 8192
    max_abs: float = 1e6
    max_steps: int = 1024
    max_samples: int = 1024


def shown(text: str, limit: int = 40, *, quoted: bool = True) -> str:
    """``text`` for an error message or a log line (``repr``-quoted unless ``quoted=False``),
    cut to ``limit`` characters, with its length when cut."""
    kept = repr(text[:limit]) if quoted else text[:limit]
    return kept if len(text) <= limit else f"{kept}... ({len(text)} characters)"


def _json_type(v: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(v), "number")


def _dump(v: Any) -> str:
    try:
        return orjson.dumps(v).decode()[:40]
    except TypeError:
        return type(v).__name__


_NUMBER_TYPES = frozenset({float, int})


def _index(path: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in path)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _nested_array(value: Any, shape: tuple[int, ...], name: str, what: str, max_abs: float) -> np.ndarray:
    """``value`` as a float64 array of exactly ``shape`` (nested JSON arrays of numbers), or a
    ``BadRequest`` (422) naming the first element that is not. The common case is checked a
    level at a time at C speed; only a failure walks the lists to name the culprit."""
    level: list[Any] = [value]
    for depth, size in enumerate(shape):
        # (sets of types and lengths: C speed, where a generator costs a Python step per row)
        if set(map(type, level)) != {list} or set(map(len, level)) != {size}:
            for flat, v in enumerate(level):
                if type(v) is not list or len(v) != size:
                    where = f"{name}{_index(_unravel(flat, shape[:depth]))}"
                    if type(v) is not list:
                        raise BadRequest(422, f"wrong shape: {where} must be a list (each row is "
                                              f"{what}), got a JSON {_json_type(v)}")
                    raise BadRequest(422, f"wrong shape: {where} has {len(v)} values, expected "
                                          f"{size} (each row is {what})")
        if depth < len(shape) - 1:
            level = value if depth == 0 else list(itertools.chain.from_iterable(level))
    # ``level`` holds the innermost lists: their values' types all at once.
    if not set(map(type, itertools.chain.from_iterable(level))) <= _NUMBER_TYPES:
        flat = next(i for i, v in enumerate(itertools.chain.from_iterable(level))
                    if type(v) is not float and type(v) is not int)
        culprit = next(itertools.islice(itertools.chain.from_iterable(level), flat, None))
        raise BadRequest(422, f"{name}{_index(_unravel(flat, shape))} is not a number: {_dump(culprit)}")
    x = np.array(value, dtype=np.float64)  # of ``shape``, checked above; orjson's integers fit
    # One comparison finds NaN and infinity too (orjson refuses them already: a safety net).
    if not (np.abs(x) <= max_abs).all():
        bad = ~np.isfinite(x)
        if bad.any():
            path = _first(bad)
            raise BadRequest(422, f"{name}{_index(path)} is not a finite number: {x[path]}")
        path = _first(np.abs(x) > max_abs)
        raise BadRequest(422, f"{name}{_index(path)} is {x[path]:g}, larger in magnitude than {max_abs:g}")
    return x


def _target(target: Any, rows: int, classes: int) -> np.ndarray | None:
    if target is None:
        return None
    what = f"'target' must be a class index from 0 to {classes - 1}, or a list of {rows} of them"
    values = target if isinstance(target, list) else [target]
    if isinstance(target, list) and len(target) != rows:
        raise BadRequest(422, f"{what}: got a list of {len(target)}")
    for v in values:
        if type(v) is not int:
            raise BadRequest(422, f"{what}: got {_dump(v)}")
        if not 0 <= v < classes:
            raise BadRequest(422, f"{what}: got {v}")
    return np.asarray(values if isinstance(target, list) else values * rows, dtype=np.int64)


def _int(doc: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    v = doc.get(key, default)
    if type(v) is not int or not low <= v <= high:
        raise BadRequest(422, f"{key!r} must be an integer from {low} to {high}, got {_dump(v)}")
    return v


def _bool(doc: dict[str, Any], key: str) -> bool:
    v = doc.get(key, False)
    if type(v) is not bool:
        raise BadRequest(422, f"{key!r} must be true or false, got {_dump(v)}")
    return v


def _choice(doc: dict[str, Any], key: str, default: str, choices: tuple[str, ...]) -> str:
    v = doc.get(key, default)
    if v not in choices or type(v) is not str:
        raise BadRequest(422, f"{key!r} must be one of {', '.join(map(repr, choices))}, got {_dump(v)}")
    return v


def _row_text(input_shape: tuple[int, ...]) -> str:
    return f"{input_shape[0]} numbers" if len(input_shape) == 1 else f"an array of shape {list(input_shape)}"


def parse(path: str, body: bytes, input_shape: tuple[int, ...], classes: int, limits: Limits) -> AttributionRequest:
    """Check the body of a POST to ``path`` (one of ``ENDPOINTS``) for a model taking rows of
    ``input_shape`` and giving ``classes`` outputs."""
    method, extra = ENDPOINTS[path]
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:  # also NaN, Infinity, 1e999: not standard JSON
        raise BadRequest(400, f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(400, f"the body must be a JSON object, got a JSON {_json_type(doc)}")
    allowed = {"input", "target"} | extra
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise BadRequest(422, f"unknown field {shown(unknown[0])}: {path} takes "
                              f"{', '.join(map(repr, sorted(allowed)))}")
    row = _row_text(input_shape)
    if "input" not in doc:
        raise BadRequest(422, f"missing field 'input': a list of rows, each {row}")
    rows = doc["input"]
    if not isinstance(rows, list):
        raise BadRequest(422, f"'input' must be a list of rows, each {row}, got a JSON {_json_type(rows)}")
    if not rows:
        raise BadRequest(422, "'input' has no rows")
    if len(rows) > limits.max_rows:
        raise BadRequest(413, f"too many rows in 'input': {len(rows)}, the limit is {limits.max_rows}")
    x = _nested_array(rows, (len(rows), *input_shape), "input", row, limits.max_abs)
    target = _target(doc.get("target"), len(rows), classes)
    fields: dict[str, Any] = {}
    if "abs" in extra:
        fields["abs"] = _bool(doc, "abs")
    if method == "integrated_gradients":
        fields["steps"] = _int(doc, "steps", 50, 1, limits.max_steps)
        fields["rule"] = _choice(doc, "method", "gausslegendre", IG_RULES)
        if fields["rule"] != "gausslegendre" and fields["steps"] < 2:  # as Captum
            raise BadRequest(422, f"'steps' must be at least 2 for the {fields['rule']!r} method")
        fields["baseline"] = _baseline(doc.get("baseline"), len(rows), input_shape, limits.max_abs)
    elif method == "smoothgrad":
        fields["samples"] = _int(doc, "samples", 5, 1, limits.max_samples)
        stdev = doc.get("stdev", 1.0)
        if type(stdev) not in _NUMBER_TYPES or not 0 <= stdev <= limits.max_abs:
            raise BadRequest(422, f"'stdev' must be a number from 0 to {limits.max_abs:g}, got {_dump(stdev)}")
        fields["stdev"] = float(stdev)
        fields["noise_type"] = _choice(doc, "noise_type", "smoothgrad", NOISE_TYPES)
        if doc.get("seed") is not None:
            fields["seed"] = _int(doc, "seed", 0, 0, 2**63 - 1)
    # Everything ``check_request`` checks is checked above, in the request's own terms (a test
    # holds the two together); not again here: it costs a tenth of a small request's time.
    request = AttributionRequest(method, x, target, **fields)
    work = expanded_rows(request)
    if work > limits.max_work_rows:
        expanded = "steps" if method == "integrated_gradients" else "samples"
        raise BadRequest(413, f"too much work: {work} rows to compute for {len(rows)} input rows "
                              f"and their {expanded}, the limit is {limits.max_work_rows}")
    return request


def _baseline(value: Any, rows: int, input_shape: tuple[int, ...], max_abs: float) -> np.ndarray | None:
    """Integrated gradients' baseline: absent (zeros), one number, one row, or one per row."""
    if value is None:
        return None
    if type(value) in _NUMBER_TYPES:
        return _nested_array([value], (1,), "baseline", "a number", max_abs).reshape(())
    if not isinstance(value, list):
        raise BadRequest(422, f"'baseline' must be a number, one row or a list of {rows} rows, got a "
                              f"JSON {_json_type(value)}")
    depth, probe = 0, value
    while isinstance(probe, list) and probe:
        depth, probe = depth + 1, probe[0]
    if depth == len(input_shape) + 1:
        return _nested_array(value, (rows, *input_shape), "baseline", _row_text(input_shape), max_abs)
    return _nested_array(value, input_shape, "baseline", _row_text(input_shape), max_abs)[None]


#: Each method's key for its attributions in the answer.
_KEYS = {"saliency": "saliency", "input_x_gradient": "input_x_gradient",
         "integrated_gradients": "integrated_gradients", "smoothgrad": "smoothgrad"}


def answer(method: str, result: Attribution) -> dict[str, Any]:
    """The JSON document of a request's result (numpy arrays, for orjson's OPT_SERIALIZE_NUMPY)."""
    doc: dict[str, Any] = {
        "output": np.ascontiguousarray(result.output),
        "predicted": np.ascontiguousarray(result.predicted),
        "target": np.ascontiguousarray(result.target),
        _KEYS[method]: np.ascontiguousarray(result.attributions),
    }
    if result.delta is not None:
        doc["delta"] = np.ascontiguousarray(result.delta)
    if result.seed is not None:
        doc["seed"] = result.seed
    return doc
