"""Fixtures for the release tooling tests: the real repository, and throwaway copies of it."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# ci/ holds release.py; ci/tests lets test modules share helpers under any --import-mode.
sys.path[:0] = [str(REPO_ROOT / "ci"), str(REPO_ROOT / "ci" / "tests")]

import release  # noqa: E402  (ci/ is not a package; the path above makes it importable)


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


def minimal_pyproject(pkg: release.Package) -> str:
    """A small pyproject.toml of the right kind, with stale values that sync must fix."""
    if pkg.native:
        return (
            "[build-system]\n"
            'requires = ["scikit-build-core>=0.10", "pybind11"]\n'
            'build-backend = "scikit_build_core.build"\n'
            "\n"
            "[project]\n"
            f'name = "{pkg.distribution}"\n'
            'version = "0.0.0"\n'
            'dependencies = ["numpy"]\n'
        )
    return (
        "[build-system]\n"
        'requires = ["hatchling"]\n'
        'build-backend = "hatchling.build"\n'
        "\n"
        "[project]\n"
        f'name = "{pkg.distribution}"\n'
        'version = "0.0.0"\n'
        "dependencies = []\n"
    )


def minimal_changelog(versions: list[str]) -> str:
    out = ["# Changelog", "", "## [Unreleased]", ""]
    for version in sorted(set(versions), key=lambda v: tuple(map(int, v.split("."))), reverse=True):
        out += [f"## [{version}] - 2026-11-22", "", "- Released.", ""]
    return "\n".join(out)


def needed_versions(rel: release.Release, pkg: release.Package) -> list[str]:
    """The versions a package's changelog must have headings for."""
    return [pkg.version] + [t.versions[pkg.name] for t in rel.trains if pkg.name in t.versions]


def scaffold(root: Path, *, copy_real: bool) -> release.Release:
    """Give every package in root/release.toml a pyproject and changelog, then sync and render.

    copy_real takes the real repository's files where they exist (minimal ones otherwise).
    """
    rel = release.load(root)
    for pkg in rel.packages.values():
        dest = root / pkg.path
        dest.mkdir(parents=True, exist_ok=True)
        for name, fallback in (
            ("pyproject.toml", lambda p=pkg: minimal_pyproject(p)),
            ("CHANGELOG.md", lambda p=pkg: minimal_changelog(needed_versions(rel, p))),
        ):
            real = REPO_ROOT / pkg.path / name
            if copy_real and real.exists():
                shutil.copyfile(real, dest / name)
            elif not (dest / name).exists():
                (dest / name).write_text(fallback(), encoding="utf-8")
    release.sync(rel)
    release.write_pages(rel)
    return rel


def proven_results(rel: release.Release) -> list[dict]:
    """Compat results that prove the newest train and refuse every [[refused]] pair."""
    base = {"python": "3.11.7", "date": "2026-11-25", "commit": "abc1234"}
    newest = rel.trains[0]
    out = [{**base, "train": newest.name, "package": name, "version": version,
            "core": newest.versions["core"], "status": "passed"} for name, version in newest.versions.items()]
    out += [{**base, "train": release.REFUSED, "package": p.package, "version": p.version, "core": p.core,
             "status": "refused"} for p in rel.refused]
    return out


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """make_repo(release_text=None) -> root of a consistent throwaway repository.

    Without release_text it uses the real release.toml; pyprojects and changelogs are minimal
    ones written here, so these tests never depend on other packages' files.
    """

    def make(release_text: str | None = None) -> Path:
        root = tmp_path / "repo"
        root.mkdir()
        text = release_text or (REPO_ROOT / "release.toml").read_text(encoding="utf-8")
        (root / "release.toml").write_text(text, encoding="utf-8")
        (root / "ci").mkdir()
        (root / "ci" / "compat-results.json").write_text("[]\n", encoding="utf-8")
        rel = scaffold(root, copy_real=False)
        release.record_results(root, proven_results(rel))
        release.write_pages(rel)
        return root

    return make
