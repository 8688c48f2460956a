"""The import-time check that the installed ember core is the one embertext was built for."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess
import sys
import textwrap
import types

import pytest

import ember
import embertext
from embertext import _C

COMPAT_PAGE = "docs/compatibility.md (the Ember compatibility page)"
V = embertext.__version__
M = embertext._SUPPORTED_CORE  # the one core minor this release supports, e.g. "0.2"
_MAJOR, _MINOR = map(int, M.split("."))
NEXT = f"{_MAJOR}.{_MINOR + 1}.0"  # the next core minor: never supported by a native build


def test_versions():
    assert importlib.metadata.version("embertext") == V
    assert _C.__version__ == embertext.__version__  # the C++ library's version.h agrees


def test_tests_run_against_the_installed_package():
    source_tree = pathlib.Path(__file__).resolve().parents[1] / "src"
    assert not pathlib.Path(embertext.__file__).resolve().is_relative_to(source_tree)


def test_pin_matches_the_supported_minor():
    (pin,) = [r for r in importlib.metadata.requires("embertext") if r.startswith("ember=")]
    assert pin == f"ember=={embertext._SUPPORTED_CORE}.*"


def test_built_for_the_installed_core():
    assert _C.built_for_core.split(".")[:2] == ember.__version__.split(".")[:2]


@pytest.mark.parametrize("core_version", [M, f"{M}.0", f"{M}.7", f"{M}.0.dev3", f"{M}.7+cpu", f"v{M}.2"])
def test_accepts_the_supported_minor(core_version):
    embertext._check_core_version(core_version)
    embertext._check_core_version(core_version, built_for=f"{M}.0")


@pytest.mark.parametrize("core_version", [NEXT, f"{_MAJOR}.{_MINOR - 1}.9", "1.1.0", f"{_MAJOR}.{_MINOR}0.0",
                                          "not-a-version", ""])
def test_rejects_other_minors(core_version):
    with pytest.raises(ImportError) as info:
        embertext._check_core_version(core_version)
    message = str(info.value)
    assert f"but ember {core_version} is installed" in message
    assert f"embertext {V} requires ember {M}.x" in message
    assert f"pip install 'ember=={M}.*'" in message
    assert COMPAT_PAGE in message


def test_rejects_a_module_built_for_another_core():
    with pytest.raises(ImportError, match=f"its native module was built against ember {re.escape(NEXT)}"):
        embertext._check_core_version(f"{M}.0", built_for=NEXT)


def test_missing_core(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember", None)
    with pytest.raises(ImportError, match=re.escape(f"embertext {V} requires ember {M}.x, which is not installed")):
        embertext._check_core()


def test_core_without_version(monkeypatch):
    monkeypatch.setitem(sys.modules, "ember", types.ModuleType("ember"))
    with pytest.raises(ImportError, match="the installed ember has no __version__"):
        embertext._check_core()


def test_import_fails_cleanly_in_a_fresh_interpreter(tmp_path):
    """A fake newer core on sys.path: `import embertext` raises the ImportError, nothing else."""
    fake = tmp_path / "ember"
    fake.mkdir()
    (fake / "__init__.py").write_text(f"__version__ = '{NEXT}'\n")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        try:
            import embertext
        except ImportError as e:
            print("ImportError:", e)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"ImportError: embertext {V} requires ember {M}.x" in done.stdout
    assert f"ember {NEXT} is installed" in done.stdout


def test_cmake_prefix_path_holds_the_package():
    config = pathlib.Path(embertext.cmake_prefix_path) / "EmberText" / "EmberTextConfig.cmake"
    assert config.is_file()
    assert (pathlib.Path(embertext.__file__).parent / "include" / "embertext" / "embertext.h").is_file()
