"""Nothing in the release tooling names a package: adding one to release.toml is enough.

These tests copy the repository's release files into a temporary directory, add a throwaway
pure-Python package `zzz` (distribution "emberzzz"), and follow it through sync, check, the
compatibility page and (when noxfile.py exists) the nox session list.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import scaffold

import release

ZZZ_VERSION = "0.0.1"

ZZZ_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "emberzzz"
version = "0.0.0"
"""

ZZZ_CHANGELOG = f"""\
# Changelog

## [Unreleased]

## [{ZZZ_VERSION}] - 2026-11-22

### Added
- A package that exists only in this test.
"""


def copy_repo(repo_root: Path, dest: Path) -> Path:
    """release.toml, ci/, docs/ and each package's pyproject.toml and CHANGELOG.md."""
    dest.mkdir()
    shutil.copyfile(repo_root / "release.toml", dest / "release.toml")
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    shutil.copytree(repo_root / "ci", dest / "ci", ignore=ignore)
    shutil.copytree(repo_root / "docs", dest / "docs", ignore=ignore)
    version_txt = repo_root / "native" / "version.txt"
    if version_txt.exists():
        (dest / "native").mkdir()
        shutil.copyfile(version_txt, dest / "native" / "version.txt")
    # Real files where they exist; minimal stand-ins for packages not written yet.
    scaffold(dest, copy_real=True)
    return dest


def add_zzz(root: Path) -> None:
    """Append [packages.zzz] to release.toml and ship it in the newest train."""
    rel = release.load(root)
    major, minor = release._vtuple(rel.trains[0].versions["core"])[:2]
    text = (root / "release.toml").read_text(encoding="utf-8")
    # The newest train is the first [[train]]; its `name = ...` line is followed by zzz's pin.
    text = re.sub(
        r'(\[\[train\]\]\s*\nname = "[^"]*"\n)', rf'\g<1>zzz = "{ZZZ_VERSION}"\n', text, count=1
    )
    text += (
        "\n[packages.zzz]\n"
        'distribution = "emberzzz"\n'
        'import = "emberzzz"\n'
        'path = "packages/zzz"\n'
        f'version = "{ZZZ_VERSION}"\n'
        "native = false\n"
        f'core = ">={major}.{minor},<{major}.{minor + 1}"\n'
    )
    (root / "release.toml").write_text(text, encoding="utf-8")
    pkg = root / "packages" / "zzz"
    pkg.mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(ZZZ_PYPROJECT, encoding="utf-8")
    (pkg / "CHANGELOG.md").write_text(ZZZ_CHANGELOG, encoding="utf-8")


@pytest.fixture
def zzz_repo(repo_root: Path, tmp_path: Path) -> Path:
    root = copy_repo(repo_root, tmp_path / "repo")
    assert release.check(release.load(root)) == [], "the copy must start out consistent"
    add_zzz(root)
    prove_zzz(root)
    return root


def prove_zzz(root: Path) -> None:
    """Record what `nox -s compat` records when zzz's pair passes in the newest train."""
    newest = release.load(root).trains[0]
    release.record_results(root, [{
        "train": newest.name, "package": "zzz", "version": ZZZ_VERSION, "core": newest.versions["core"],
        "python": "3.11.7", "status": "passed", "date": "2026-11-25", "commit": "abc1234",
    }])


def test_a_new_package_in_the_newest_train_must_pass_compat(repo_root, tmp_path):
    root = copy_repo(repo_root, tmp_path / "repo")
    add_zzz(root)
    rel = release.load(root)
    release.sync(rel)
    release.write_pages(rel)
    core = rel.trains[0].versions["core"]
    assert release.check(rel) == [
        f"train {rel.trains[0].name}: emberzzz {ZZZ_VERSION} with core {core} is not tested; "
        "run `nox -s compat`"
    ]
    prove_zzz(root)
    release.write_pages(rel)
    assert release.check(rel) == []


def test_new_package_flows_through_sync_check_and_page(zzz_repo):
    rel = release.load(zzz_repo)
    zzz = rel.packages["zzz"]
    assert list(rel.packages)[-1] == "zzz"
    assert rel.trains[0].versions["zzz"] == ZZZ_VERSION

    changed = release.sync(rel)
    assert zzz_repo / "packages/zzz/pyproject.toml" in changed
    project = tomllib.loads((zzz_repo / "packages/zzz/pyproject.toml").read_text())["project"]
    assert project["version"] == ZZZ_VERSION
    assert project["requires-python"] == rel.build.python
    assert project["dependencies"] == [release.core_requirement(rel, zzz)]
    assert release.sync(rel) == []

    # The only thing left is the page, which does not show zzz yet.
    assert release.check(rel) == [
        "docs/compatibility.md: stale (differs from a fresh render); "
        "run `python ci/release.py page`",
        "docs/compatibility.html: stale (differs from a fresh render); "
        "run `python ci/release.py page`",
    ]
    release.write_pages(rel)
    assert release.check(rel) == []

    md = (zzz_repo / "docs/compatibility.md").read_text(encoding="utf-8")
    html = (zzz_repo / "docs/compatibility.html").read_text(encoding="utf-8")
    assert "| `emberzzz` |" in md  # a trains column and a packages row
    assert f"{ZZZ_VERSION}<br>tested ✓ 2026-11-25 (abc1234)" in md
    assert '<th scope="col">emberzzz</th>' in html
    assert '<th scope="row"><code>emberzzz</code></th>' in html


def test_new_package_needs_a_changelog_heading(zzz_repo):
    rel = release.load(zzz_repo)
    release.sync(rel)
    release.write_pages(rel)
    assert release.check(rel) == []
    changelog = zzz_repo / "packages/zzz/CHANGELOG.md"
    changelog.write_text(ZZZ_CHANGELOG.replace(f"## [{ZZZ_VERSION}] - 2026-11-22\n", ""))
    assert release.check(rel) == [
        f"packages/zzz/CHANGELOG.md: no '## [{ZZZ_VERSION}] - YYYY-MM-DD' heading for "
        f"{ZZZ_VERSION} (the current version)"
    ]


def test_new_package_through_the_cli(zzz_repo):
    script = [sys.executable, str(zzz_repo / "ci/release.py")]  # the copy: --root defaults to it
    run = subprocess.run
    assert run([*script, "check"], capture_output=True, check=False).returncode == 1
    assert run([*script, "sync"], capture_output=True, check=False).returncode == 0
    assert run([*script, "page"], capture_output=True, check=False).returncode == 0
    out = run([*script, "check"], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout
    assert out.stdout.startswith("release check: OK")
    out = run([*script, "list"], capture_output=True, text=True, check=False)
    assert out.stdout.splitlines()[0] == "core"
    assert out.stdout.splitlines()[-1] == "zzz"


def test_nox_lists_a_session_for_the_new_package(repo_root, zzz_repo):
    assert (repo_root / "noxfile.py").exists(), "the repository must have a noxfile.py"
    if importlib.util.find_spec("nox") is None:
        pytest.fail("nox is not installed; run `bash ci/setup.sh` (the tests-release session installs it)")
    shutil.copyfile(repo_root / "noxfile.py", zzz_repo / "noxfile.py")
    out = subprocess.run(
        [sys.executable, "-m", "nox", "-l"],
        cwd=zzz_repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"(^|\s)tests-zzz(\s|$)", out.stdout, re.MULTILINE), out.stdout
