"""``ParameterList`` and ``ParameterDict`` (torch/nn/modules/container.py): parameters held in a
list or a dict, registered under the keys ``"0"``, ``"1"``, ... or the dict's keys. A plain
tensor put in is made a ``Parameter``; any other value (a number, a module...) is kept as a
plain attribute, as torch 2.x allows. Neither can be called."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, KeysView, Mapping
from typing import Any

from ..._core._tensor import Tensor
from ..parameter import Parameter
from .container import abs_string_index
from .module import Module, typename

__all__ = ["ParameterDict", "ParameterList"]


def _entry(key: Any, p: Any, type_str: str) -> str:
    """One line of the containers' ``extra_repr``, as torch writes it."""
    if isinstance(p, Tensor):
        size_str = "x".join(str(size) for size in p.shape)
        device_str = f" ({p.device})" if p.device.type == "cuda" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{type_str} of size {size_str}{device_str}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


def _as_parameter(value: Any) -> Any:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters (or other values): indexing, slicing (a new ``ParameterList``),
    ``len``, iteration, ``append``, ``extend``, ``+=``, assignment to an index."""

    _size: int

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx: Any) -> str:
        """The key of index ``idx`` (negative counts from the end)."""
        return abs_string_index(idx, len(self))

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(self))
            out = self.__class__()
            for i in range(start, stop, step):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx: int, param: Any) -> None:
        key = self._get_abs_string_index(idx)
        setattr(self, key, _as_parameter(param))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> ParameterList:
        return self.extend(parameters)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end (a tensor as a Parameter); returns self."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Append every value of ``values``; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        """One line per entry: ``(0): Parameter containing: [aiograd.float32 of size 2x3]``."""
        return "\n".join(
            _entry(k, p, f"aiograd.{p.dtype}" if isinstance(p, Tensor) else "") for k, p in enumerate(self)
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (or other values) under string keys: ``[key]``, ``keys()``,
    ``items()``, ``values()``, ``update``, ``pop``, ``popitem``, ``get``, ``setdefault``,
    ``copy``, ``fromkeys``, ``|``."""

    _keys: dict[str, None]

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                f"(type is '{type(key).__name__}'). Open an issue on github if you need non-string keys."
            )
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        setattr(self, attr, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        """A new ParameterDict of the same values (the parameters shared, not copied)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any | None = None) -> Any:
        """``self[key]``, set to ``default`` first if missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for k in self._keys.copy():
            del self[k]

    def pop(self, key: str) -> Any:
        """Remove the entry ``key`` and return its value."""
        v = self[key]
        del self[key]
        return v

    def popitem(self) -> tuple[str, Any]:
        """Remove the last entry and return it as ``(key, value)``."""
        k, _ = self._keys.popitem()
        self._keys[k] = None  # (deleted below, with its attribute)
        val = self[k]
        del self[k]
        return k, val

    def get(self, key: str, default: Any | None = None) -> Any:
        """``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any | None = None) -> ParameterDict:
        """A new ParameterDict with ``keys``, each set to ``default``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self) -> KeysView[str]:
        """The keys, in order."""
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        """The ``(key, value)`` pairs, in order."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        """The values, in order."""
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        """Add the entries of an ordered mapping, a ParameterDict (in their order), any other
        mapping (its keys sorted, as torch) or an iterable of ``(key, value)`` pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                + type(parameters).__name__
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, Mapping):
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(
                        "ParameterDict update sequence element #" + str(j) + " should be Iterable; is" + type(p).__name__
                    )
                if not len(p) == 2:  # type: ignore[arg-type]
                    raise ValueError(
                        "ParameterDict update sequence element #" + str(j) + " has length " + str(len(p))  # type: ignore[arg-type]
                        + "; 2 is required"
                    )
                self[p[0]] = p[1]  # type: ignore[index]

    def extra_repr(self) -> str:
        """One line per entry: ``(key): Parameter containing: [aiograd.FloatTensor of size 2x3]``."""
        return "\n".join(_entry(k, p, typename(p)) for k, p in self.items())

    def __call__(self, input: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other: ParameterDict) -> ParameterDict:
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self
