"""The device types that ship with aiograd, one module each, loaded by ``aiograd._devices._device`` the
first time a device of that type is made (``aiograd._devices.cpu``, ``aiograd._devices.sim``).

The interface a device-type module implements is written down in ``aiograd._devices._device``'s
docstring, with the device registry itself (``_device``) and CuPy's runtime
(``_cuda_runtime``). Layer 2: these modules may import the base (``aiograd._base``) and nothing
above it. This package's ``__init__`` imports nothing: importing it must not load any device type.
"""
