"""The device types that ship with aiograd, one module each, loaded by ``aiograd._device`` the
first time a device of that type is made (``aiograd._devices.cpu``, ``aiograd._devices.sim``).

The interface a device-type module implements is written down in ``aiograd._device``'s
docstring. This package imports nothing: importing it must not load any device type.
"""
