"""The package's metadata: one source for the version, the SPDX license with its file, the
typing marker, and a changelog that names the version."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import aiograd

ROOT = Path(__file__).resolve().parent.parent


def test_the_version_has_one_source():
    assert importlib.metadata.version("aiograd") == aiograd.__version__


def test_license_is_an_spdx_expression_with_its_file():
    meta = importlib.metadata.metadata("aiograd")
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")


def test_classifiers_say_typed_and_the_event_loops():
    classifiers = importlib.metadata.metadata("aiograd").get_all("Classifier")
    for c in ("Typing :: Typed", "Framework :: AsyncIO", "Framework :: Trio",
              "Programming Language :: Python :: 3.11"):
        assert c in classifiers


def test_py_typed_ships_and_the_changelog_names_the_version():
    assert (Path(aiograd.__file__).parent / "py.typed").is_file()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {aiograd.__version__}\n" in changelog and "## Unreleased\n" in changelog
