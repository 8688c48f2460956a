"""embervision's import-time check of the installed core (Note [core compatibility check])."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re

import pytest

import ember
import embervision


def test_version_and_pin_agree():
    assert importlib.metadata.version("embervision") == embervision.__version__
    (pin,) = [r for r in importlib.metadata.requires("embervision") if re.match(r"ember[<>=!~ ]", r)]
    assert sorted(pin.removeprefix("ember").split(",")) == sorted(embervision._SUPPORTED_CORE)


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
