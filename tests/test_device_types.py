"""Device types as modules: loaded by name on first use, one interface (``aiograd._devices._device``'s
docstring), ``cpu`` and ``sim`` implementing it, and third-party types registered by module,
module name or object."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aiograd as ag
from aiograd._devices import _device
from aiograd._devices._device import DeviceType
from aiograd.executors import InlineExecutor

INTERFACE = (
    "array_module", "indexed", "default_executor", "to_device", "to_host", "synchronize",
    "has_streams", "current_stream", "default_stream", "stream_scope", "record_event",
    "wait_event", "call_when_done", "ran_on",
)


@pytest.fixture
def registry() -> Iterator[None]:
    """Give the test its own device-type registry entries; forget what it added afterwards."""
    sources, loaded = dict(_device._SOURCES), dict(_device._LOADED)
    stream_devices = set(_device._stream_devices)
    yield
    _device._stream_devices.clear()
    _device._stream_devices.update(stream_devices)
    added = set(_device._SOURCES) - set(sources)
    _device._SOURCES.clear()
    _device._SOURCES.update(sources)
    _device._LOADED.clear()
    _device._LOADED.update(loaded)
    for key in [k for k in _device._interned if k[0] in added]:
        del _device._interned[key]


def test_the_interface_fields_are_the_documented_ones() -> None:
    fields = {f for f in DeviceType.__dataclass_fields__ if f != "name"}
    assert fields == set(INTERFACE)
    for name in INTERFACE:
        assert f"``{name}" in (_device.__doc__ or ""), f"{name} is not documented in aiograd._devices._device"


@pytest.mark.parametrize(("name", "indexed", "executor"), [("cpu", False, "ThreadExecutor"), ("sim", True, "InlineExecutor")])
def test_builtin_types_implement_the_interface(name: str, indexed: bool, executor: str) -> None:
    module = importlib.import_module(f"aiograd._devices.{name}")
    assert all(hasattr(module, attr) for attr in INTERFACE)
    loaded = _device.device_type(name)
    assert loaded == DeviceType.from_implementation(name, module)
    assert loaded.array_module is np and loaded.indexed is indexed and loaded.default_executor is executor
    # Synchronous types: no stream, no event, nothing to wait for; a callback runs at once.
    assert not loaded.has_streams
    assert loaded.current_stream(0) is None and loaded.default_stream(0) is None
    assert loaded.record_event(None) is None and loaded.wait_event(None, None) is None
    assert loaded.synchronize(0) is None and loaded.ran_on(None, [], []) is None
    with loaded.stream_scope(None):
        pass
    called: list[int] = []
    loaded.call_when_done(None, lambda: called.append(1))
    assert called == [1]


@pytest.mark.parametrize("name", ["cpu", "sim"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_to_device_to_host_round_trip(name: str, dtype: type) -> None:
    kind = _device.device_type(name)
    host = np.arange(6).reshape(2, 3).astype(dtype)[:, ::2]  # not contiguous
    on_device = kind.to_device(host, None if name == "cpu" else 1)
    assert not np.shares_memory(on_device, host)  # a copy: the host array may change after
    back = kind.to_host(on_device)
    assert type(back) is np.ndarray and back.dtype == host.dtype
    np.testing.assert_array_equal(back, host)


def test_a_device_knows_its_array_module() -> None:
    assert ag.device("sim:3").xp is np and ag.device("cpu").xp is np
    assert "xp" in ag.device.__slots__  # a plain attribute, read without a lookup in the registry


def test_importing_aiograd_loads_no_other_device_type() -> None:
    # (the package's private modules, the registry ``_device`` and ``_cuda_runtime``, are not device types)
    code = "import sys, aiograd; print(sorted(m for m in sys.modules if m.startswith('aiograd._devices.') and not m.rsplit('.', 1)[1].startswith('_')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.split() == ["['aiograd._devices.cpu']"]


def test_a_registered_module_is_imported_when_its_first_device_is_made(
    registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lazy_device_type.py").write_text(
        textwrap.dedent(
            """
            import numpy as array_module
            from aiograd._devices.sim import (
                current_stream, default_executor, record_event, synchronize, to_device, to_host,
                wait_event,
            )
            indexed = True
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_device_type", raising=False)
    _device.register_device_type("lazy", "lazy_device_type")
    assert "lazy" in _device.device_types()
    assert "lazy_device_type" not in sys.modules
    dev = ag.device("lazy:2")
    assert "lazy_device_type" in sys.modules
    assert dev.xp is np and _device.device_type("lazy").default_executor == "InlineExecutor"
    t = ag.ones(2, device="lazy")  # indexed: a bare name is index 0
    assert t.device is ag.device("lazy:0") and str(t.device) == "lazy:0"
    assert (t * 2).device is t.device


def test_an_object_can_implement_a_type(registry: None) -> None:
    impl = types.SimpleNamespace(
        array_module=np, indexed=False, default_executor=InlineExecutor,
        to_device=lambda a, i: np.array(a), to_host=lambda a: a,
        current_stream=lambda i: None, record_event=lambda i: None,
        wait_event=lambda e, i: None, synchronize=lambda i: None,
    )
    _device.register_device_type("unnumbered", impl)
    assert _device.device_type("unnumbered").to_host is impl.to_host
    assert ag.zeros(1, device="unnumbered").device is ag.device("unnumbered")


def test_an_incomplete_implementation_is_refused_at_registration(registry: None) -> None:
    impl = types.SimpleNamespace(array_module=np, indexed=True, default_executor=InlineExecutor)
    with pytest.raises(TypeError, match="lacks to_device, to_host, synchronize "):
        _device.register_device_type("broken", impl)
    assert "broken" not in _device.device_types()
    # A type with streams must implement the stream hooks; one without may leave them out.
    streamed = types.SimpleNamespace(
        array_module=np, indexed=True, default_executor=InlineExecutor, to_device=np.array,
        to_host=np.asarray, synchronize=lambda index: None, has_streams=True,
    )
    with pytest.raises(TypeError, match="lacks current_stream, default_stream, stream_scope, record_event, "
                       "wait_event, call_when_done, ran_on "):
        _device.register_device_type("streamed", streamed)
    streamed.has_streams = False
    _device.register_device_type("streamed", streamed)
    assert _device.device_type("streamed").current_stream(0) is None


def test_unknown_types_keep_torchs_error() -> None:
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, sim, simcuda device type at start of device string: xla:0"):
        ag.device("xla:0")
    with pytest.raises(KeyError):
        _device.device_type("xla")
