"""The Tensor: a numpy array plus what autograd needs to know about it.

Ops live in ``aiograd._ops``; ``_tensor_methods`` binds them as methods and operators. The class
keeps its per-instance state small: most attributes are class-level defaults, so wrapping an op's
result costs one allocation and one store.

The bottom of the graph core: ``_saved``, ``_node``, ``_hooks`` and ``_views`` build on this
module, which imports none of them (``retain_grad`` reaches the hooks through the node itself).
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .._base._dtypes import DEVICE_ARRAY_TYPES, cpp_type_name, numeric_array, scalar_type_name
from .._base._grad_mode import argument_type_name, grad_enabled
from .._base._size import Size
from .._devices._device import CPU, device, device_type
from ._format import format_tensor
from ._tensor_api import TensorMethods

if TYPE_CHECKING:
    from ._node import Node

__all__ = ["Tensor", "check_assigned_grad", "is_tensor"]

_FLOAT_ERROR = "Only Tensors of floating point and complex dtype can require gradients"


def is_tensor(obj: Any) -> bool:
    """True if ``obj`` is an aiograd Tensor."""
    return isinstance(obj, Tensor)


def is_floating(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "f"


def check_assigned_grad(tensor: Tensor, value: Any) -> None:
    """What ``tensor.grad = value`` refuses, in PyTorch's words (``THPVariable_set_grad``): not a
    tensor, the tensor itself, another dtype, shape or device."""
    if not isinstance(value, Tensor):
        raise TypeError(
            "assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(value).__name__}"
        )
    if value is tensor:  # PyTorch's THPVariable_set_grad
        raise RuntimeError("can't assign Variable as its own grad")
    if value.data.dtype != tensor.data.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{cpp_type_name(value.data.dtype)}' "
            f"to a tensor with grad_dtype '{scalar_type_name(tensor.data.dtype)}'. The gradient "
            "must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
            "the tensor's grad_dtype attribute with a specific dtype, or None to allow any "
            "dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
            "gradient may break downstream systems that assume they match."
        )
    if value.data.shape != tensor.data.shape:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(value.data.shape)}' to a tensor "
            f"of size '{list(tensor.data.shape)}'. Please ensure that the gradient and the "
            "tensor are the same size"
        )
    if value._device is not tensor._device:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{value._device.type}' to "
            f"a tensor with device type '{tensor._device.type}'. Please ensure that the "
            "gradient and the tensor are on the same device"
        )


class Tensor(TensorMethods):
    """An n-dimensional array that can record the operations applied to it.

    Create tensors with :func:`aiograd.tensor` and the other factories. ``requires_grad=True``
    marks a leaf whose gradient ``await loss.backward()`` accumulates into ``.grad``.
    """

    # Defaults shared by every instance until set (see the module docstring).
    #: The values, a numpy array (an array of the device type's array module off the CPU).
    data: np.ndarray[Any, Any]
    _grad: Tensor | None = None  # ``.grad``; the engine writes it directly, users via the setter
    grad_fn: Node | None = None
    output_nr: int = 0
    _requires_grad: bool = False
    _vc: list[int] | None = None  # version counter, shared with views; created on first need
    _accumulator: Any = None  # this leaf's AccumulateGrad, created on first use (see _node)
    #: True for a tensor that requires grad but whose gradient goes nowhere: a view made under
    #: no_grad of a base that requires grad (PyTorch gives it no grad accumulator).
    _edgeless: bool = False
    _retains_grad: bool = False
    #: The tensor whose array this one views (the root one, never itself a view), or None; set by
    #: the view ops, whose outputs are ``_views.View`` instances (see aiograd/_core/_views.py).
    _base: Tensor | None = None
    _detached_inplace: bool = False  # set by detach_() on a non-leaf (checked by SavedTensor)
    #: The device holding the data (``.device``); only non-CPU tensors set their own.
    _device: device = CPU

    # numpy must hand mixed expressions (``array * tensor``) to our reflected operators.
    __array_ufunc__ = None

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        self.data = numeric_array(data, copy=False)  # numbers only, as PyTorch
        if requires_grad:
            if not is_floating(self.data.dtype):
                raise RuntimeError(_FLOAT_ERROR)
            self._requires_grad = True

    @classmethod
    def _wrap(
        cls, data: Any, _device_arrays: set[type] = DEVICE_ARRAY_TYPES, _new: Any = object.__new__,
        _ndarray: type = np.ndarray,
    ) -> Tensor:
        """Wrap an op's result without copying; numpy scalars become 0-d arrays."""
        # (the defaults are constants read as locals: every op result passes here)
        out = _new(cls)
        if type(data) is _ndarray or type(data) in _device_arrays:
            out.data = data  # (a device array, CuPy's, is kept where it is)
        else:
            out.data = np.asarray(data)
        return out

    # ----------------------------------------------------------------------------- attributes
    @property
    def requires_grad(self) -> bool:
        """True if gradients are computed for this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if value:  # PyTorch's shorter words when asking for what it already has
                raise RuntimeError("you can only change requires_grad flags of leaf variables.")
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and not is_floating(self.data.dtype):
            # the setter's words (lower case), not the constructor's (_FLOAT_ERROR)
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    @requires_grad.deleter
    def requires_grad(self) -> None:
        # PyTorch's setter receives NULL on deletion and refuses it in these words
        raise RuntimeError("requires_grad must be a bool")

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by ``backward()``; None until one arrives.

        Only leaves (and non-leaves that ``retain_grad()``) get one; reading it on another
        non-leaf warns, as in PyTorch.
        """
        grad = self._grad
        if grad is None and self.grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access "
                "the leaf Tensor instead.",
                UserWarning,
                stacklevel=2,
            )
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            check_assigned_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        # ``del t.grad`` resets it, as in PyTorch (THPVariable_set_grad with NULL)
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded op (user-created, or not requiring grad)."""
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        """True if ``retain_grad()`` was called on this non-leaf tensor."""
        return self._retains_grad

    @property
    def shape(self) -> Size:
        """The size of each dimension (a ``Size``: a tuple that prints as torch's)."""
        return tuple.__new__(Size, self.data.shape)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype[Any]:
        """The numpy dtype of the elements."""
        return self.data.dtype

    @property
    def device(self) -> device:
        """The device holding the data (``to()`` moves it)."""
        return self._device

    @property
    def is_cpu(self) -> bool:
        """True if the tensor lives on the CPU."""
        return self._device is CPU

    @property
    def _version(self) -> int:
        """How many times the data was modified in place."""
        return 0 if self._vc is None else self._vc[0]

    def size(self, dim: int | None = None) -> Any:
        """The shape (a ``Size``), or the size of dimension ``dim``."""
        return tuple.__new__(Size, self.data.shape) if dim is None else self.data.shape[dim]

    def numel(self) -> int:
        """The number of elements."""
        return self.data.size

    def dim(self) -> int:
        """The number of dimensions."""
        return self.data.ndim

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.data.shape[0]))

    # ----------------------------------------------------------------------------- conversions
    def numpy(self, *, force: bool = False) -> np.ndarray[Any, Any]:
        """The underlying array (shared, not copied); a CPU tensor's only, as in PyTorch.

        ``force=True`` detaches and copies to the CPU first where needed (torch's ``force``).
        """
        if force:
            return self.detach().cpu().data
        if self._requires_grad and grad_enabled():  # torch allows it under no_grad
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        if self._device is not CPU:
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return self.data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        data = self.numpy()
        return data.astype(dtype) if dtype is not None else (data.copy() if copy else data)

    def __dlpack__(self, *, stream: Any = None, **kwargs: Any) -> Any:
        """The DLPack capsule of the tensor's memory (``torch.from_dlpack(t)``, ``np.from_dlpack``):
        shared, not copied. Refused for a tensor that requires grad, as torch's."""
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        data = self.data
        return data.__dlpack__(stream=stream, **kwargs) if stream is not None else data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[Any, int]:
        """The DLPack device of the tensor's memory."""
        return self.data.__dlpack_device__()  # type: ignore[no-any-return]

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self.data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self.data.size} elements cannot be converted to Scalar"
            )
        return self.data.item()

    def tolist(self) -> Any:
        """The data as (nested) Python lists."""
        return self.data.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.data.dtype.kind not in "iu" or self.data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.data.item())

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.data.item())

    __hash__ = object.__hash__

    # ----------------------------------------------------------------------------- autograd
    def detach(self) -> Tensor:
        """A tensor sharing this one's data and version counter, cut from the graph."""
        out = Tensor._wrap(self.data)
        if self._device is not CPU:
            out._device = self._device
        if self._vc is None:
            self._vc = [0]
        out._vc = self._vc
        return out

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that does not require grad.

        Views cannot be detached in place. Saved tensors of the graph it leaves stay valid, except
        that a node which saved this non-leaf as an input refuses to unpack it (as in PyTorch).
        """
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self.grad_fn is not None:
            self._detached_inplace = True
            self.grad_fn = None
        self.output_nr = 0
        self._requires_grad = False
        self._retains_grad = False
        return self

    def _is_view(self) -> bool:
        """True if this tensor is a view of another one (``_base``)."""
        return self._base is not None

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return self.

        As in torch, only ``False`` is refused on a non-leaf (which requires grad already).
        """
        if not isinstance(requires_grad, bool):
            raise TypeError(
                "requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                f"{argument_type_name(requires_grad)}"
            )
        if requires_grad and self.grad_fn is not None:
            return self
        if requires_grad and not is_floating(self.data.dtype):
            # torch's words here differ from the setter's and the constructor's
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None or self._retains_grad:
            return
        fn._hook_table().retains_grad[self.output_nr] = weakref.ref(self)
        self._retains_grad = True

    # ----------------------------------------------------------------------------- display
    def __repr__(self) -> str:
        data = self.data
        if type(data) is not np.ndarray:  # printed from a host copy (CUDA)
            data = device_type(self._device.type).to_host(data)
        return format_tensor(self, data)
