"""emberaudio's import-time check of the installed core (Note [core compatibility check])."""

from __future__ import annotations

import importlib.metadata
import pathlib

import pytest

import ember
import emberaudio
from emberaudio import _native


def test_version_and_pin_agree():
    assert importlib.metadata.version("emberaudio") == emberaudio.__version__
    (pin,) = [r for r in importlib.metadata.requires("emberaudio") if r.startswith("ember=")]
    assert pin == f"ember=={emberaudio._SUPPORTED_CORE}.*"


def test_tests_run_against_the_installed_package():
    source_tree = pathlib.Path(__file__).resolve().parents[1] / "src"
    assert not pathlib.Path(emberaudio.__file__).resolve().is_relative_to(source_tree)


@pytest.mark.parametrize("core", ["0.1.9", "0.3.0", "1.0.0", "not a version"])
def test_an_unsupported_core_is_refused_at_import(monkeypatch, core):
    monkeypatch.setattr(ember, "__version__", core)
    with pytest.raises(ImportError, match=rf"emberaudio {emberaudio.__version__} supports ember .* but ember "
                                          rf"{core} is installed"):
        emberaudio._check_core()


def test_the_installed_core_is_accepted():
    emberaudio._check_core()


@pytest.mark.parametrize("module", ["_C", "_ffmpeg"])
def test_native_modules_were_built_for_the_installed_core(module):
    native = _native.load(module)
    assert native.built_for_core.split(".")[:2] == ember.__version__.split(".")[:2]


def test_a_native_module_built_for_another_minor_is_refused():
    with pytest.raises(ImportError, match=r"emberaudio._C was built against ember 0.3.0, but ember 0.2.1 is installed"):
        _native.check_built_for("_C", "0.3.0", "0.2.1")
