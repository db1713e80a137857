"""The public surface: explicit exports, each documented, no internal names leaking."""

from __future__ import annotations

import importlib.util
import inspect

import aiograd
import aiograd.autograd
import aiograd.distributed
import aiograd.executors
import aiograd.function
import aiograd.functional
import aiograd.graph
import aiograd.jit
import aiograd.nn
import aiograd.nn.functional
import aiograd.nn.init
import aiograd.nn.utils
import aiograd.optim
import aiograd.optim.lr_scheduler
import aiograd.profiler
import aiograd.serving
import aiograd.special
import aiograd.sync
import aiograd.testing
import aiograd.utils.checkpoint
import aiograd.viz

PUBLIC_MODULES = (
    aiograd,
    aiograd.autograd,
    aiograd.cuda,
    aiograd.executors,
    aiograd.function,
    aiograd.functional,
    aiograd.graph,
    aiograd.jit,
    aiograd.nn.functional,
    aiograd.sync,
    aiograd.testing,
    aiograd.utils,
    aiograd.utils.checkpoint,
    aiograd.optim,
    aiograd.optim.lr_scheduler,
    aiograd.linalg,
    # aiograd.nn (Module, layers, init, utils)
    aiograd.nn,
    aiograd.nn.init,
    aiograd.nn.utils,
    aiograd.serving,
    aiograd.special,
    aiograd.viz,
    aiograd.profiler,
    aiograd.distributed,
)
if importlib.util.find_spec("aiohttp") is not None:  # the serve extra (the dev extra has it)
    import aiograd.serving.http

    PUBLIC_MODULES += (aiograd.serving.http,)


def _private(name: str) -> bool:
    """``_x``, or ``@py_builtins``/``@pytest_ar``: pytest rewrites the asserts of every module of
    a distribution that has a pytest plugin (aiograd's, aiograd/pytest_plugin.py), and the
    rewritten modules hold these two helpers."""
    return name.startswith(("_", "@"))


def _public(module) -> list[str]:
    return list(module.__all__)


def test_every_public_name_is_documented():
    for module in PUBLIC_MODULES:
        for name in _public(module):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            assert inspect.getdoc(obj), f"{module.__name__}.{name} has no docstring"


def test_no_internal_module_leaks_into_the_top_level():
    modules = {n for n in dir(aiograd) if not _private(n) and inspect.ismodule(getattr(aiograd, n))}
    assert modules <= {
        "cuda", "executors", "func", "function", "functional", "graph", "nn", "sync", "testing", "utils",
        "linalg", "optim",
        "serving",
        "pytest_plugin",  # loaded by pytest (a pytest11 entry point); its hooks are pytest's API
        "viz",
        "profiler",
        "distributed",
        "distributions",
        "accelerator", "backends", "amp", "autograd", "jit", "special",  # torch's namespaces that training scripts touch
    }, modules


def test_all_lists_exactly_the_public_names():
    for module in PUBLIC_MODULES:
        public = {
            n
            for n in dir(module)
            if not _private(n)
            and n != "annotations"  # from __future__
            # pytest imported it (aiograd's pytest plugin), `import aiograd` does not: not an export
            and not (module is aiograd and n == "pytest_plugin")
            # imported on demand (it needs the serve extra), so not in `import *`
            and not (module is aiograd.serving and n == "http")
            and not (  # imported third-party modules (np, typing) are not exports
                inspect.ismodule(getattr(module, n))
                and not getattr(module, n).__name__.startswith("aiograd")
            )
        }
        exported = set(module.__all__)
        assert public == exported, (module.__name__, public ^ exported)
