"""``Parameter`` (torch.nn.Parameter): a Tensor that a ``Module`` registers as one of its weights,
and ``Buffer`` (torch.nn.Buffer), a tensor marked to be registered as a buffer."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._base._dtypes import get_default_dtype
from .._core._tensor import Tensor
from .._devices._device import CPU, device_type, get_default_device, placement

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter", "is_lazy", "new_tensor"]


def new_tensor(shape: tuple[int, ...], dtype: Any = None, device: Any = None, fill: float | None = None) -> Tensor:
    """A fresh tensor for a layer's weight or buffer: ``dtype`` the default dtype by default
    (``get_default_dtype``, as torch's layers), on ``device`` (the default device when None, as
    the factories); zeros, or ``fill``. The layers initialise their weights afterwards
    (``reset_parameters``)."""
    data = np.full(shape, 0.0 if fill is None else fill, dtype=get_default_dtype() if dtype is None else np.dtype(dtype))
    out = Tensor._wrap(data)
    dev = get_default_device() if device is None else placement(device)
    if dev is not CPU:
        out.data = device_type(dev.type).to_device(data, dev.index)
        out._device = dev
    return out


class Parameter(Tensor):
    """A tensor that is a module's parameter: assigned as a ``Module`` attribute it is registered
    (``parameters()``, ``state_dict()``). ``requires_grad`` is True by default. It shares
    ``data``'s array, as ``torch.nn.Parameter`` shares its storage."""

    data: np.ndarray[Any, Any]

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty(0, dtype=np.float32)
        if not isinstance(data, Tensor):
            super().__init__(data, requires_grad)
            return
        # the tensor's own array, whatever its device's array type (Tensor() would make a
        # host copy of a device array)
        if requires_grad and data.data.dtype.kind != "f":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        self.data = data.data
        if data._device is not CPU:
            self._device = data._device
        self._requires_grad = bool(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        copied = Tensor._wrap(self.data.copy())
        if self._device is not CPU:
            copied._device = self._device
        result = Parameter(copied, self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild_parameter, (self.detach().cpu().data, self._requires_grad))


def _rebuild_parameter(data: Any, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A tensor that a ``Module`` registers as a buffer when assigned as an attribute
    (torch.nn.Buffer); ``persistent=False`` keeps it out of ``state_dict()``. Registration keeps
    the tensor's data as a plain Tensor."""

    data: np.ndarray[Any, Any]
    persistent: bool

    def __init__(self, data: Any, *, persistent: bool = True) -> None:
        tensor = data if isinstance(data, Tensor) else Tensor(data)
        self.data = tensor.data  # (kept as it is: Tensor() would copy a device array to the host)
        if tensor._device is not CPU:
            self._device = tensor._device
        self.persistent = persistent


# ------------------------------------------------------------------------------ lazy modules' placeholders
class _Unmaterialized(np.ndarray):  # type: ignore[type-arg]
    """The empty array of an uninitialized parameter or buffer: computing with it raises
    torch's error (torch's ``__torch_function__`` check, here numpy's hooks)."""

    _owner = "UninitializedParameter"

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise _uninitialized_use(self._owner, ufunc)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise _uninitialized_use(self._owner, func)


def _uninitialized_use(cls_name: str, func: Any) -> ValueError:
    return ValueError(
        f"Attempted to use an uninitialized parameter in {func}. "
        "This error happens when you are using a `LazyModule` or "
        f"explicitly manipulating `torch.nn.parameter.{cls_name}` "
        "objects. When using LazyModules Call `forward` with a dummy batch "
        "to initialize the parameters before calling torch functions"
    )


def _empty_placeholder(cls_name: str, device: Any, dtype: Any) -> Any:
    data = new_tensor((0,), dtype, device).data
    view = np.asarray(data).view(_Unmaterialized)
    view._owner = cls_name
    return view


class UninitializedTensorMixin:
    """What torch's uninitialized parameters and buffers share: no shape until ``materialize``."""

    __slots__ = ()
    cls_to_become: type[Any]
    data: Any

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give it ``shape`` (zeros: torch's are ``empty``), on its device and of its dtype
        unless given; it becomes a ``Parameter`` (a ``Tensor`` for a buffer)."""
        made = new_tensor(tuple(shape), np.asarray(self.data).dtype if dtype is None else dtype,
                          self.device if device is None else device)  # type: ignore[attr-defined]
        self.data = made.data
        if made._device is not CPU:
            self._device = made._device
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        """torch's error: an uninitialized parameter has no shape."""
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. "
            "This error usually happens in `load_state_dict` when trying to load "
            "an uninitialized parameter into an initialized one. "
            "Call `forward` to initialize the parameters before accessing their attributes."
        )

    def share_memory_(self) -> Any:
        """torch's error."""
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer. "
            "Call `forward` to initialize the parameters before calling "
            "`module.share_memory()`."
        )

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto: Any) -> Any:
        return (self.__class__, (self.requires_grad,))  # type: ignore[attr-defined]


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


# (the mixin comes second, so that ``materialize`` may change the class: CPython refuses that
# layout change the other way round; its overrides of Tensor's are named again in each class)
_OVERRIDES = ("shape", "share_memory_", "__repr__", "__reduce_ex__")


class UninitializedParameter(Parameter, UninitializedTensorMixin):
    """A parameter whose shape is not known yet (a lazy module's, until its first forward)."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        self.data = _empty_placeholder("UninitializedParameter", device, dtype)
        dev = get_default_device() if device is None else placement(device)
        if dev is not CPU:
            self._device = dev
        self._requires_grad = bool(requires_grad)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, np.asarray(self.data).dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(Tensor, UninitializedTensorMixin):
    """A buffer whose shape is not known yet (a lazy module's, until its first forward)."""

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        self.data = _empty_placeholder("UninitializedBuffer", device, dtype)
        dev = get_default_device() if device is None else placement(device)
        if dev is not CPU:
            self._device = dev
        self._requires_grad = bool(requires_grad)
        self.persistent = persistent
        self._is_buffer = True


for _cls in (UninitializedParameter, UninitializedBuffer):
    for _name in _OVERRIDES:
        setattr(_cls, _name, UninitializedTensorMixin.__dict__[_name])
