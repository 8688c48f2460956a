"""embervision's import-time check of the installed core (Note [core compatibility check])."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re

import pytest

import ember
import embervision
from embervision import _native


def test_version_and_pin_agree():
    assert importlib.metadata.version("embervision") == embervision.__version__
    (pin,) = [r for r in importlib.metadata.requires("embervision") if re.match(r"ember[<>=!~ ]", r)]
    assert pin == f"ember=={embervision._SUPPORTED_CORE}.*"


def test_tests_run_against_the_installed_package():
    source_tree = pathlib.Path(__file__).resolve().parents[1] / "src"
    assert not pathlib.Path(embervision.__file__).resolve().is_relative_to(source_tree)


@pytest.mark.parametrize("core", ["0.1.9", "0.3.0", "1.0.0", "not a version"])
def test_an_unsupported_core_is_refused_at_import(monkeypatch, core):
    monkeypatch.setattr(ember, "__version__", core)
    with pytest.raises(ImportError, match=rf"embervision {embervision.__version__} supports ember .* but ember "
                                          rf"{core} is installed"):
        embervision._check_core()


def test_the_installed_core_is_accepted():
    embervision._check_core()


@pytest.mark.parametrize("module", ["_C", "_image", "_transforms", "_video"])
def test_native_modules_were_built_for_the_installed_core(module):
    native = _native.load(module)
    assert native.built_for_core.split(".")[:2] == ember.__version__.split(".")[:2]


def test_a_native_module_built_for_another_minor_is_refused():
    with pytest.raises(ImportError, match=r"embervision._C was built against ember 0.3.0, but ember 0.2.1 is installed"):
        _native.check_built_for("_C", "0.3.0", "0.2.1")
