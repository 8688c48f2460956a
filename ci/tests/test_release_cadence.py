"""The release cadence rules of docs/releasing.md: [[refused]] pairs, proven trains, tags."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import proven_results

import release

REFUSED_ROW = """
[[refused]]
package = "data"
version = "{version}"
core = "{core}"
reason = "{reason}"
"""


def _add_refused(root: Path, version: str, core: str, reason: str = "outside its pin") -> None:
    path = root / "release.toml"
    path.write_text(path.read_text(encoding="utf-8") + REFUSED_ROW.format(
        version=version, core=core, reason=reason), encoding="utf-8")


def _without_refused(text: str) -> str:
    return text.split("\n[[refused]]")[0].rstrip("\n") + "\n"


@pytest.fixture
def repo(make_repo, repo_root) -> Path:
    """A consistent copy whose release.toml has no [[refused]] rows yet."""
    text = _without_refused((repo_root / "release.toml").read_text(encoding="utf-8"))
    return make_repo(text)


def test_real_release_declares_refused_pairs(repo_root):
    rel = release.load(repo_root)
    assert rel.refused, "the compatibility page must show at least one pair known not to work"
    for pair in rel.refused:
        assert pair.package in rel.packages and pair.reason


def test_refused_pair_loads_and_shows_on_the_page(repo):
    rel = release.load(repo)
    data = rel.packages["data"]
    old_core = "0.0.1"  # below every pin's floor
    _add_refused(repo, data.version, old_core, "needs a newer core")
    rel = release.load(repo)
    assert rel.refused == [release.Refused("data", data.version, old_core, "needs a newer core")]
    md, html = release.render_pages(rel, [])
    assert "## Pairs known not to work" in md
    assert f"| `emberdata` | {data.version} | {old_core} | needs a newer core | not tested |" in md
    assert '<table id="refused">' in html

    entry = {"train": release.REFUSED, "package": "data", "version": data.version, "core": old_core,
             "python": "3.11.7", "date": "2026-11-25", "commit": "abc1234"}
    md, _ = release.render_pages(rel, [{**entry, "status": "refused"}])
    assert "refused at install ✓ 2026-11-25 (abc1234)" in md
    md, html = release.render_pages(rel, [{**entry, "status": "failed"}])
    assert "INSTALLED, pin missing 2026-11-25 (abc1234)" in md
    assert 'class="failed"' in html


def test_check_wants_each_refused_pair_refused(repo):
    data = release.load(repo).packages["data"]
    _add_refused(repo, data.version, "0.0.1")
    rel = release.load(repo)
    release.write_pages(rel)
    assert release.check(rel) == [
        f"refused pair emberdata {data.version} with core 0.0.1: not tested; run `nox -s compat`"
    ]
    release.record_results(repo, proven_results(rel))
    release.write_pages(rel)
    assert release.check(rel) == []


def test_refused_pair_results_do_not_count_as_train_runs(repo):
    rel = release.load(repo)
    newest = rel.trains[0]
    core = newest.versions["core"]
    (repo / "ci" / "compat-results.json").write_text("[]\n", encoding="utf-8")
    release.record_results(repo, [{"train": release.REFUSED, "package": "data",
                                   "version": newest.versions["data"], "core": core, "python": "3.11.7",
                                   "status": "refused", "date": "2026-11-25", "commit": "abc1234"}])
    release.write_pages(rel)
    assert f"train {newest.name}: emberdata {newest.versions['data']} with core {core} is not tested; " \
        "run `nox -s compat`" in release.check(rel)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"package": "core"}, "names 'core', not a domain package"),
        ({"package": "nope"}, "names 'nope', not a domain package"),
        ({"version": "1.2"}, "version"),
        ({"core": "x"}, "core"),
    ],
)
def test_refused_rows_are_validated(repo, row, message):
    fields = {"package": "data", "version": "0.0.1", "core": "0.0.1", "reason": "r", **row}
    path = repo / "release.toml"
    path.write_text(path.read_text(encoding="utf-8") + "\n[[refused]]\n" + "".join(
        f'{k} = "{v}"\n' for k, v in fields.items()), encoding="utf-8")
    with pytest.raises(release.ReleaseError, match=message):
        release.load(repo)


def test_a_pair_the_pin_allows_is_not_a_refused_pair(repo):
    rel = release.load(repo)
    data = rel.packages["data"]
    _add_refused(repo, data.version, rel.core.version)
    with pytest.raises(release.ReleaseError, match="so its pin would not refuse the pair"):
        release.load(repo)


def test_a_pair_a_train_ships_is_not_a_refused_pair(repo):
    # An older data version (its pin is history, so only the trains can rule the pair out).
    path = repo / "release.toml"
    path.write_text(path.read_text(encoding="utf-8") + '\n[[train]]\nname = "0000.01"\npython = ">=3.10"\n'
                    'core = "0.0.1"\ndata = "0.0.1"\n', encoding="utf-8")
    _add_refused(repo, "0.0.1", "0.0.1")
    with pytest.raises(release.ReleaseError, match="train 0000.01 ships that pair"):
        release.load(repo)


# ---------------------------------------------------------------------------------------------
# Tags: each current version is tagged; code changed since the tag needs an [Unreleased] entry


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def git_repo(repo) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "release")
    return repo


def _tag_all(root: Path) -> None:
    rel = release.load(root)
    for pkg in rel.packages.values():
        _git(root, "tag", release.tag_name(pkg, pkg.version))


def test_tag_names():
    pkg = release.Package("data", "emberdata", "emberdata", Path("packages/data"), "0.2.0", False, ">=0.2,<0.3")
    assert release.tag_name(pkg, "0.2.0") == "emberdata-v0.2.0"


def test_no_tags_at_all_skips_the_tag_rules(git_repo):
    assert release.git_tags(git_repo) == set()
    assert release.check(release.load(git_repo)) == []


def test_outside_git_the_tag_rules_are_skipped(repo):
    assert release.git_tags(repo) is None


def test_a_missing_tag_is_reported(git_repo):
    _git(git_repo, "tag", "unrelated-v1")
    rel = release.load(git_repo)
    problems = release.check(rel)
    for pkg in rel.packages.values():
        assert (f"{pkg.distribution} {pkg.version}: no git tag {release.tag_name(pkg, pkg.version)}; "
                "tag the commit that cut it (docs/releasing.md)") in problems


def test_code_changed_since_the_tag_needs_an_unreleased_entry(git_repo):
    _tag_all(git_repo)
    rel = release.load(git_repo)
    assert release.check(rel) == []
    code = git_repo / "packages" / "data" / "src" / "emberdata" / "feature.py"
    code.parent.mkdir(parents=True)
    code.write_text("VALUE = 1\n", encoding="utf-8")
    _git(git_repo, "add", "-A")  # tracked: `git diff <tag>` sees it
    tag = release.tag_name(rel.packages["data"], rel.packages["data"].version)
    assert release.check(rel) == [
        f"packages/data: code changed since {tag}, but CHANGELOG.md's [Unreleased] section is "
        "empty; describe the change there"
    ]
    changelog = git_repo / "packages" / "data" / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    changelog.write_text(text.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Added\n- feature.py\n", 1),
                         encoding="utf-8")
    assert release.unreleased_entries(rel, rel.packages["data"]) == ["- feature.py"]
    assert release.check(rel) == []


def test_tests_and_benchmarks_are_not_release_code(git_repo):
    _tag_all(git_repo)
    rel = release.load(git_repo)
    for sub in ("tests", "benchmarks"):
        path = git_repo / "packages" / "data" / sub / "test_new.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
    _git(git_repo, "add", "-A")
    assert release.check(rel) == []


def test_core_native_code_counts_for_the_core(git_repo):
    _tag_all(git_repo)
    rel = release.load(git_repo)
    (git_repo / "native" / "kernel.cpp").write_text("int f();\n", encoding="utf-8")
    _git(git_repo, "add", "-A")
    problems = release.check(rel)
    assert [p.split(":")[0] for p in problems] == ["packages/core"]
    assert release.code_paths(rel, rel.core)[:2] == ["packages/core", "native"]
