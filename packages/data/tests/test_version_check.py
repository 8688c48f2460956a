"""The import-time check that the installed ember core is a supported one."""

import importlib.metadata
import pathlib
import re
import subprocess
import sys
import textwrap
import types

import pytest

import emberdata

COMPAT_PAGE = "docs/compatibility.md (the Ember compatibility page)"
V = emberdata.__version__
SPEC = ",".join(emberdata._SUPPORTED_CORE)  # the tested core range, e.g. ">=0.2,<0.3"
LOW = emberdata._SUPPORTED_CORE[0].removeprefix(">=")  # e.g. "0.2"
HIGH = emberdata._SUPPORTED_CORE[1].removeprefix("<")  # e.g. "0.3"
_MAJOR, _MINOR = map(int, LOW.split("."))
BELOW = f"{_MAJOR}.{_MINOR - 1}.0"


def test_version():
    assert importlib.metadata.version("emberdata") == V


def test_tests_run_against_the_installed_package():
    source_tree = pathlib.Path(__file__).resolve().parents[1] / "src"
    assert not pathlib.Path(emberdata.__file__).resolve().is_relative_to(source_tree)


def test_supported_range_matches_the_installed_pin():
    (pin,) = [r for r in importlib.metadata.requires("emberdata") if r.startswith("ember")]
    assert sorted(pin.removeprefix("ember").split(",")) == sorted(emberdata._SUPPORTED_CORE)


@pytest.mark.parametrize(
    "core_version", [LOW, f"{LOW}.0", f"{LOW}.7", f"{LOW}.99", f"{LOW}.0.dev3", f"{LOW}.7+cpu", f"v{LOW}.2"]
)
def test_accepts_supported_core(core_version):
    emberdata._check_core_version(core_version)


@pytest.mark.parametrize(
    "core_version", [f"{HIGH}.0", BELOW, HIGH, "1.0.0", f"{HIGH}.0rc1", "0.0", "not-a-version", ""]
)
def test_rejects_unsupported_core(core_version):
    with pytest.raises(ImportError) as info:
        emberdata._check_core_version(core_version)
    message = str(info.value)
    assert f"ember {core_version} is installed" in message
    assert f"emberdata {V}" in message
    assert SPEC in message
    assert COMPAT_PAGE in message


def test_missing_core(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember", None)
    with pytest.raises(ImportError, match=re.escape(f"emberdata {V} requires ember {SPEC}")) as info:
        emberdata._check_core()
    assert COMPAT_PAGE in str(info.value)


def test_core_without_version(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember", types.ModuleType("ember"))
    with pytest.raises(ImportError, match="the installed ember has no __version__"):
        emberdata._check_core()


@pytest.mark.parametrize("core_version", [f"{HIGH}.0", BELOW])
def test_check_reads_the_imported_core(monkeypatch, core_version):
    fake = types.ModuleType("ember")
    fake.__version__ = core_version
    monkeypatch.setitem(sys.modules, "ember", fake)
    with pytest.raises(ImportError, match=f"but ember {core_version} is installed"):
        emberdata._check_core()


def _import_emberdata(tmp_path, prelude):
    script = textwrap.dedent(prelude) + "\nimport emberdata\n"
    return subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_import_fails_with_unsupported_core(tmp_path):
    result = _import_emberdata(
        tmp_path,
        f"""
        import sys, types
        sys.modules["ember"] = types.SimpleNamespace(__version__="{HIGH}.0")
        """,
    )
    assert result.returncode != 0
    assert f"ImportError: emberdata {V} supports ember {SPEC}" in result.stderr
    assert f"but ember {HIGH}.0 is installed" in result.stderr
    assert COMPAT_PAGE in result.stderr


def test_import_fails_without_core(tmp_path):
    result = _import_emberdata(tmp_path, 'import sys\nsys.modules["ember"] = None\n')
    assert result.returncode != 0
    assert f"ImportError: emberdata {V} requires ember {SPEC}" in result.stderr
