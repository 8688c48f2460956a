"""ci/release.py: loading and validating release.toml, sync, check, results."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import proven_results

import release

# A release with a native domain package, a pure one and two trains; tests mutate its text.
BASE = """\
[build]
cxx_standard = 17
pybind11 = "3.1.0"
python = ">=3.10"

[packages.core]
distribution = "ember"
import = "ember"
path = "packages/core"
version = "0.2.0"
native = true

[packages.vision]
distribution = "embervision"
import = "embervision"
path = "packages/vision"
version = "0.2.0"
native = true
core = "0.2"

[packages.data]
distribution = "emberdata"
import = "emberdata"
path = "packages/data"
version = "0.1.1"
native = false
core = ">=0.1,<0.3"

[[train]]
name = "2027.01"
python = ">=3.10"
core = "0.2.0"
vision = "0.2.0"
data = "0.1.1"

[[train]]
name = "2026.11"
python = ">=3.10"
core = "0.1.0"
data = "0.1.0"
"""

_TRAIN_NEW, _TRAIN_OLD = BASE.split("[[train]]\n")[1:]


def write_release(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "release.toml").write_text(text, encoding="utf-8")
    return root


def mutate(old: str, new: str, count: int = 1) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, count)


def test_load_base(tmp_path):
    rel = release.load(write_release(tmp_path, BASE))
    assert list(rel.packages) == ["core", "vision", "data"]
    assert rel.build == release.Build(17, "3.1.0", ">=3.10")
    vision = rel.packages["vision"]
    assert vision == release.Package(
        "vision", "embervision", "embervision", Path("packages/vision"), "0.2.0", True, "0.2"
    )
    assert rel.core.core is None
    assert [t.name for t in rel.trains] == ["2027.01", "2026.11"]
    assert rel.trains[1].versions == {"core": "0.1.0", "data": "0.1.0"}


def test_load_real_release(repo_root):
    rel = release.load(repo_root)
    assert next(iter(rel.packages)) == "core"
    assert all(release.CORE in t.versions for t in rel.trains)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (mutate('pybind11 = "3.1.0"\n', ""), "[build] is missing key 'pybind11'"),
        (mutate("cxx_standard = 17", "cxx_standard = 14"), "cxx_standard 14 is not 17+"),
        (mutate('pybind11 = "3.1.0"', 'pybind11 = ">=3"'), "pybind11 '>=3' is not a version"),
        (mutate('import = "emberdata"\n', ""), "[packages.data] is missing key 'import'"),
        (
            mutate("native = true", 'native = "yes"'),
            "[packages.core] key 'native' must be bool, not str",
        ),
        (mutate("[packages.core]", "[packages.kore]"), "no [packages.core]"),
        (
            mutate("native = true\n", 'native = true\ncore = "0.1"\n'),
            "[packages.core] must not have a 'core' key",
        ),
        (mutate('core = ">=0.1,<0.3"\n', ""), "[packages.data] is missing key 'core'"),
        (
            mutate('core = "0.2"', 'core = ">=0.2"'),
            "[packages.vision] is native, so 'core' must be one core minor like \"0.1\", "
            "not '>=0.2'",
        ),
        (mutate('core = "0.2"', 'core = "0.2.0"'), "is native, so 'core' must be one core minor"),
        (
            mutate('core = ">=0.1,<0.3"', 'core = "0.1"'),
            "[packages.data] is pure Python, so 'core' must be a bounded range like "
            "\">=0.1,<0.2\", not '0.1'",
        ),
        (mutate('core = ">=0.1,<0.3"', 'core = ">=0.1"'), "must be a bounded range"),
        (mutate('core = ">=0.1,<0.3"', 'core = "0.1-ish"'), "must be a bounded range"),
        (
            mutate('vision = "0.2.0"', 'vison = "0.2.0"'),
            "train 2027.01 names unknown package 'vison'",
        ),
        (mutate('core = "0.1.0"\n', ""), "train 2026.11 does not name a core version"),
        (
            mutate('distribution = "emberdata"', 'distribution = "embervision"'),
            "distribution 'embervision' is used by both packages.vision and packages.data",
        ),
        (
            mutate('import = "emberdata"', 'import = "embervision"'),
            "import 'embervision' is used by both",
        ),
        (
            mutate('version = "0.1.1"', 'version = "0.1"'),
            "[packages.data] version '0.1' is not a version X.Y.Z",
        ),
        (
            mutate('version = "0.2.0"', 'version = "v0.2.0"'),
            "[packages.core] version 'v0.2.0' is not a version X.Y.Z",
        ),
        (
            mutate('data = "0.1.0"', 'data = "0.1.0rc1"'),
            "train 2026.11: data = '0.1.0rc1' is not a version X.Y.Z",
        ),
        (
            mutate('data = "0.1.0"', 'data = "0.1.2"'),
            "train 2026.11 names data 0.1.2, newer than its current version 0.1.1",
        ),
        (
            mutate('core = "0.2"', 'core = "0.3"'),
            "train 2027.01 ships vision 0.2.0 with core 0.2.0, outside vision's core '0.3'",
        ),
        (mutate('name = "2026.11"', 'name = "2027.01"'), "train 2027.01 is listed twice"),
        (
            BASE.split("[[train]]")[0] + "[[train]]\n" + _TRAIN_OLD + "\n[[train]]\n" + _TRAIN_NEW,
            "trains must be listed newest first: 2026.11 (core 0.1.0) comes before 2027.01",
        ),
        (BASE.split("[[train]]")[0], "no [[train]] rows"),
        (mutate('path = "packages/data"', 'path = "../data"'), "must be inside the repository"),
        (mutate("[packages.data]", "[packages.Data]"), "package names are lowercase"),
        (mutate('python = ">=3.10"\n', 'python = "3.10+"\n'), "is not a version range"),
        (mutate("[build]", "[build"), "release.toml: "),
    ],
)
def test_load_rejects(tmp_path, text, message):
    with pytest.raises(release.ReleaseError) as info:
        release.load(write_release(tmp_path, text))
    assert message in str(info.value)


def test_load_missing_file(tmp_path):
    with pytest.raises(release.ReleaseError, match=re.escape("release.toml: not found")):
        release.load(tmp_path)


def test_release_error_is_value_error():
    assert issubclass(release.ReleaseError, ValueError)


def test_core_requirement(tmp_path):
    rel = release.load(write_release(tmp_path, BASE))
    assert release.core_requirement(rel, rel.packages["vision"]) == "ember==0.2.*"
    assert release.core_requirement(rel, rel.packages["data"]) == "ember>=0.1,<0.3"
    with pytest.raises(release.ReleaseError, match="core package"):
        release.core_requirement(rel, rel.core)


def test_core_requirement_drops_spaces(tmp_path):
    rel = release.load(write_release(tmp_path, mutate(">=0.1,<0.3", ">= 0.1, < 0.3")))
    assert release.core_requirement(rel, rel.packages["data"]) == "ember>=0.1,<0.3"


# --- sync ---------------------------------------------------------------------------------

CORE_BEFORE = """\
# The core runtime. Versions and pins below are written by ci/release.py sync.
[build-system]
requires = [
    "scikit-build-core>=0.10",  # builds native/ through the symlink
    "pybind11==2.13.6",
]
build-backend = "scikit_build_core.build"

[project]
name = "ember"
version = "0.0.1"   # from release.toml
description = "Tensors and autograd"
requires-python = '>=3.9'
dependencies = ["numpy>=1.24"]

[tool.scikit-build]
minimum-version = "0.10"

[tool.scikit-build.cmake.define]
EMBER_BUILD_TESTS = "OFF"
CMAKE_CXX_STANDARD = "14"  # kept in step with release.toml
"""

CORE_AFTER = """\
# The core runtime. Versions and pins below are written by ci/release.py sync.
[build-system]
requires = [
    "scikit-build-core>=0.10",  # builds native/ through the symlink
    "pybind11==3.1.0",
]
build-backend = "scikit_build_core.build"

[project]
name = "ember"
version = "0.2.0"   # from release.toml
description = "Tensors and autograd"
requires-python = ">=3.10"
dependencies = ["numpy>=1.24"]

[tool.scikit-build]
minimum-version = "0.10"

[tool.scikit-build.cmake.define]
EMBER_BUILD_TESTS = "OFF"
CMAKE_CXX_STANDARD = "17"  # kept in step with release.toml
"""

VISION_BEFORE = """\
[build-system]
requires = ["scikit-build-core>=0.10", "pybind11", "ember==0.1.*"]
build-backend = "scikit_build_core.build"

[project]
name = "embervision"
version = "0.1.0"
dependencies = [
    # numpy first
    "numpy",
    "pillow>=10",
]

[tool.ruff]
line-length = 100
"""

VISION_AFTER = """\
[build-system]
requires = ["scikit-build-core>=0.10", "pybind11==3.1.0", "ember==0.2.*"]
build-backend = "scikit_build_core.build"

[project]
name = "embervision"
version = "0.2.0"
requires-python = ">=3.10"
dependencies = [
    "ember==0.2.*",
    # numpy first
    "numpy",
    "pillow>=10",
]

[tool.ruff]
line-length = 100

[tool.scikit-build.cmake.define]
CMAKE_CXX_STANDARD = "17"
"""

DATA_BEFORE = """\
[project]
name = "emberdata"
version = "0.1.1"
requires-python = ">=3.10"
dependencies = ["ember>=0.1,<0.2", "numpy"]  # core first

[project.optional-dependencies]
test = ["pytest", "ember[test]"]
"""

DATA_AFTER = DATA_BEFORE.replace("ember>=0.1,<0.2", "ember>=0.1,<0.3")


def base_repo(tmp_path: Path) -> release.Release:
    root = write_release(tmp_path / "repo", BASE)
    for name, text in (("core", CORE_BEFORE), ("vision", VISION_BEFORE), ("data", DATA_BEFORE)):
        (root / "packages" / name).mkdir(parents=True)
        (root / "packages" / name / "pyproject.toml").write_text(text, encoding="utf-8")
    return release.load(root)


def read(rel: release.Release, path: str) -> str:
    return (rel.root / path).read_text(encoding="utf-8")


def test_sync_rewrites_only_owned_values(tmp_path):
    rel = base_repo(tmp_path)
    changed = release.sync(rel)
    assert sorted(p.relative_to(rel.root).as_posix() for p in changed) == [
        "native/version.txt",
        "packages/core/pyproject.toml",
        "packages/data/pyproject.toml",
        "packages/vision/pyproject.toml",
    ]
    assert read(rel, "packages/core/pyproject.toml") == CORE_AFTER
    assert read(rel, "packages/vision/pyproject.toml") == VISION_AFTER
    assert read(rel, "packages/data/pyproject.toml") == DATA_AFTER
    assert read(rel, "native/version.txt") == "0.2.0\n"


def test_sync_is_idempotent(tmp_path):
    rel = base_repo(tmp_path)
    release.sync(rel)
    snapshot = {p: p.read_bytes() for p in rel.root.rglob("*") if p.is_file()}
    assert release.sync(rel) == []
    assert snapshot == {p: p.read_bytes() for p in rel.root.rglob("*") if p.is_file()}


def test_sync_output_is_valid_toml_with_release_values(tmp_path):
    rel = base_repo(tmp_path)
    release.sync(rel)
    vision = tomllib.loads(read(rel, "packages/vision/pyproject.toml"))
    assert vision["project"]["version"] == "0.2.0"
    assert vision["project"]["requires-python"] == ">=3.10"
    assert vision["project"]["dependencies"][0] == "ember==0.2.*"
    assert "pybind11==3.1.0" in vision["build-system"]["requires"]
    assert vision["tool"]["scikit-build"]["cmake"]["define"]["CMAKE_CXX_STANDARD"] == "17"
    # ember[test] in optional-dependencies is not the runtime dependency; sync leaves it.
    data = tomllib.loads(read(rel, "packages/data/pyproject.toml"))
    assert data["project"]["optional-dependencies"]["test"] == ["pytest", "ember[test]"]


@pytest.mark.parametrize(
    ("project_tail", "expected"),
    [
        ("", 'requires-python = ">=3.10"\ndependencies = ["ember>=0.1,<0.3"]\n'),
        ("dependencies = []\n", 'requires-python = ">=3.10"\ndependencies = ["ember>=0.1,<0.3"]\n'),
        (
            'dependencies = ["numpy"]\n',
            'requires-python = ">=3.10"\ndependencies = ["ember>=0.1,<0.3", "numpy"]\n',
        ),
        (
            'dependencies = [\n  "numpy",\n]\n',
            'requires-python = ">=3.10"\ndependencies = [\n  "ember>=0.1,<0.3",\n  "numpy",\n]\n',
        ),
        (
            "dependencies = [\n]\n",
            'requires-python = ">=3.10"\ndependencies = [\n    "ember>=0.1,<0.3",\n]\n',
        ),
        (
            "dependencies = ['Ember >= 0.0']\n",
            'requires-python = ">=3.10"\ndependencies = ["ember>=0.1,<0.3"]\n',
        ),
    ],
)
def test_sync_dependency_layouts(tmp_path, project_tail, expected):
    rel = base_repo(tmp_path)
    head = '[project]\nname = "emberdata"\nversion = "0.1.1"\n'
    path = rel.root / "packages/data/pyproject.toml"
    path.write_text(head + project_tail, encoding="utf-8")
    release.sync(rel)
    assert path.read_text(encoding="utf-8") == head + expected


def test_sync_refuses_dynamic_version(tmp_path):
    rel = base_repo(tmp_path)
    path = rel.root / "packages/data/pyproject.toml"
    path.write_text('[project]\nname = "emberdata"\ndynamic = ["version"]\n', encoding="utf-8")
    with pytest.raises(
        release.ReleaseError,
        match=re.escape("packages/data/pyproject.toml: version must not be dynamic"),
    ):
        release.sync(rel)


def test_sync_refuses_missing_pyproject(tmp_path):
    rel = base_repo(tmp_path)
    (rel.root / "packages/data/pyproject.toml").unlink()
    with pytest.raises(
        release.ReleaseError, match=re.escape("packages/data/pyproject.toml: missing")
    ):
        release.sync(rel)


def test_sync_refuses_dotted_cmake_define(tmp_path):
    rel = base_repo(tmp_path)
    path = rel.root / "packages/vision/pyproject.toml"
    path.write_text(
        VISION_BEFORE + '\n[tool.scikit-build]\ncmake.define.X = "1"\n', encoding="utf-8"
    )
    with pytest.raises(release.ReleaseError, match=r"\[tool.scikit-build.cmake.define\] table"):
        release.sync(rel)


# --- check --------------------------------------------------------------------------------


def test_check_passes_on_the_real_repository(repo_root):
    """Fails until packages/*/pyproject.toml, changelogs and docs/ are all in step."""
    assert release.check(release.load(repo_root)) == []


def test_check_passes_on_a_fresh_copy(make_repo):
    assert release.check(release.load(make_repo())) == []


def test_check_reports_version_drift(make_repo):
    root = make_repo()
    rel = release.load(root)
    data = rel.packages["data"]
    path = root / data.path / "pyproject.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(f'version = "{data.version}"', 'version = "9.9.9"'), encoding="utf-8"
    )
    assert release.check(rel) == [
        f"packages/data/pyproject.toml: version is 9.9.9, release.toml says {data.version}"
    ]


def test_check_reports_each_drifted_field(tmp_path):
    rel = base_repo(tmp_path)
    problems = release.check(rel)
    for expected in (
        "packages/core/pyproject.toml: version is 0.0.1, release.toml says 0.2.0",
        "packages/core/pyproject.toml: requires-python is >=3.9, release.toml says >=3.10",
        "packages/core/pyproject.toml: build-system requires pybind11 is pybind11==2.13.6, "
        "release.toml says pybind11==3.1.0",
        "packages/core/pyproject.toml: [tool.scikit-build.cmake.define] CMAKE_CXX_STANDARD is "
        "14, release.toml says 17",
        "packages/vision/pyproject.toml: requires-python is missing, release.toml says >=3.10",
        "packages/vision/pyproject.toml: dependency on ember is missing, "
        "release.toml says ember==0.2.*",
        "packages/vision/pyproject.toml: build-system requires ember is ember==0.1.*, "
        "release.toml says ember==0.2.*",
        "packages/data/pyproject.toml: dependency on ember is ember>=0.1,<0.2, "
        "release.toml says ember>=0.1,<0.3",
        "native/version.txt: is missing, release.toml says core 0.2.0 (a line of its own)",
    ):
        assert expected in problems


def test_check_reports_formatting_drift(make_repo):
    root = make_repo()
    path = root / "packages/data/pyproject.toml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"ember>=', '"ember >=', 1), encoding="utf-8")
    spec = release.load(root).packages["data"].core
    assert release.check(release.load(root)) == [
        f"packages/data/pyproject.toml: dependency on ember is ember {spec}, "
        f"release.toml says ember{spec}"
    ]


def test_check_reports_missing_changelog_heading(make_repo):
    root = make_repo()
    rel = release.load(root)
    path = root / "packages/data/CHANGELOG.md"
    text = path.read_text(encoding="utf-8")
    version = rel.packages["data"].version
    path.write_text(text.replace(f"## [{version}]", "## Old"), encoding="utf-8")
    problems = release.check(rel)
    assert (
        f"packages/data/CHANGELOG.md: no '## [{version}] - YYYY-MM-DD' heading for "
        f"{version} (the current version)" in problems
    )
    assert any("heading '## Old - 2026-11-22' is not" in p for p in problems)


def test_check_wants_headings_for_every_train_version(tmp_path):
    rel = base_repo(tmp_path)
    release.sync(rel)
    for name in ("core", "vision", "data"):
        versions = ["0.2.0", "0.1.0"] if name != "vision" else ["0.2.0"]
        if name == "data":
            versions = ["0.1.1"]  # 0.1.0 shipped in train 2026.11 but has no heading
        (rel.root / f"packages/{name}/CHANGELOG.md").write_text(
            "# Changelog\n\n" + "".join(f"## [{v}] - 2026-11-22\n\n" for v in versions),
            encoding="utf-8",
        )
    release.record_results(rel.root, proven_results(rel))
    release.write_pages(rel)
    assert release.check(rel) == [
        "packages/data/CHANGELOG.md: no '## [0.1.0] - YYYY-MM-DD' heading for 0.1.0 "
        "(shipped in train 2026.11)"
    ]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("## [0.1.0] - 2026-11-22\n## [Unreleased]\n", "[Unreleased] must come before"),
        ("## [0.0.9] - 2026-01-01\n## [0.1.0] - 2026-11-22\n", "0.1.0 is listed below 0.0.9"),
        ("## [0.1.0] - 2026-11-22\n## [0.1.0] - 2026-11-22\n", "0.1.0 has two headings"),
        ("## [0.1.0] - 2026-13-40\n", "is not '## [X.Y.Z] - YYYY-MM-DD'"),
        ("## [0.1.0]\n", "is not '## [X.Y.Z] - YYYY-MM-DD'"),
        ("## 0.1.0 - 2026-11-22\n", "is not '## [X.Y.Z] - YYYY-MM-DD'"),
    ],
)
def test_check_changelog_format(make_repo, body, problem):
    root = make_repo()
    (root / "packages/data/CHANGELOG.md").write_text("# Changelog\n\n" + body, encoding="utf-8")
    problems = release.check(release.load(root))
    assert any(p.startswith("packages/data/CHANGELOG.md:") and problem in p for p in problems), (
        problems
    )


def test_check_reports_missing_changelog(make_repo):
    root = make_repo()
    (root / "packages/core/CHANGELOG.md").unlink()
    assert release.check(release.load(root)) == ["packages/core/CHANGELOG.md: missing"]


def test_check_reports_stale_pages(make_repo):
    root = make_repo()
    rel = release.load(root)
    train = rel.trains[0]
    release.record_results(
        root, [result(train.name, "core", train.versions["core"], train.versions["core"])]
    )
    assert release.check(rel) == [
        "docs/compatibility.md: stale (differs from a fresh render); "
        "run `python ci/release.py page`",
        "docs/compatibility.html: stale (differs from a fresh render); "
        "run `python ci/release.py page`",
    ]
    assert len(release.write_pages(rel)) == 2
    assert release.check(rel) == []
    assert release.write_pages(rel) == []


def test_check_reports_hand_edited_page(make_repo):
    root = make_repo()
    page = root / "docs/compatibility.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA hand-written note.\n", encoding="utf-8")
    (root / "docs/compatibility.html").unlink()
    assert release.check(release.load(root)) == [
        "docs/compatibility.md: stale (differs from a fresh render); "
        "run `python ci/release.py page`",
        "docs/compatibility.html: missing; run `python ci/release.py page`",
    ]


# --- results ------------------------------------------------------------------------------


def result(train, package, version, core, status="passed", date="2026-11-22", commit="abc1234"):
    return {
        "train": train,
        "package": package,
        "version": version,
        "core": core,
        "python": "3.11.7",
        "status": status,
        "date": date,
        "commit": commit,
    }


def test_load_results_without_a_file(tmp_path):
    assert release.load_results(tmp_path) == []


def test_record_results_replaces_same_key_and_keeps_others(tmp_path):
    a = result("2026.11", "data", "0.1.0", "0.1.0")
    b = result("2026.11", "core", "0.1.0", "0.1.0")
    c = result("2026.10", "data", "0.1.0", "0.1.0")
    release.record_results(tmp_path, [a, b])
    release.record_results(tmp_path, [c])
    a2 = result("2026.11", "data", "0.1.0", "0.1.0", status="failed", commit="def5678")
    path = release.record_results(tmp_path, [a2])
    assert path == tmp_path / "ci/compat-results.json"
    # Sorted by (train, package, version, core); a2 replaced a, the others stayed.
    assert release.load_results(tmp_path) == [c, b, a2]
    text = path.read_text(encoding="utf-8")
    assert text.endswith("]\n")
    assert text == json.dumps([c, b, a2], indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_record_results_is_order_independent(tmp_path):
    entries = [result("2026.11", p, "0.1.0", "0.1.0") for p in ("data", "core", "audio")]
    release.record_results(tmp_path / "a", entries)
    release.record_results(tmp_path / "b", entries[::-1])
    assert (tmp_path / "a/ci/compat-results.json").read_bytes() == (
        tmp_path / "b/ci/compat-results.json"
    ).read_bytes()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": "ok"}, "status must be 'passed', 'failed' or 'refused'"),
        ({"date": "22/11/2026"}, "date must be YYYY-MM-DD"),
        ({"commit": "HEAD"}, "commit must be a short hex sha"),
        ({"python": 3.11}, "every field must be a string"),
    ],
)
def test_record_results_rejects_bad_entries(tmp_path, change, message):
    with pytest.raises(release.ReleaseError, match=message):
        release.record_results(tmp_path, [result("t", "data", "0.1.0", "0.1.0") | change])


def test_record_results_rejects_missing_fields(tmp_path):
    entry = result("t", "data", "0.1.0", "0.1.0")
    del entry["commit"]
    with pytest.raises(release.ReleaseError, match="lacks commit"):
        release.record_results(tmp_path, [entry])


def test_committed_results_file_is_valid(repo_root):
    release.load_results(repo_root)
    text = (repo_root / "ci/compat-results.json").read_text(encoding="utf-8")
    entries = json.loads(text)
    assert text == json.dumps(entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# --- CLI ----------------------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess:
    script = Path(release.__file__)
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, check=False
    )


def test_cli_check_ok(make_repo):
    root = make_repo()
    rel = release.load(root)
    out = run_cli("--root", str(root), "check")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == (
        f"release check: OK ({len(rel.packages)} packages, {len(rel.trains)} trains)\n"
    )


def test_cli_check_fails_with_problems(make_repo):
    root = make_repo()
    (root / "packages/core/CHANGELOG.md").unlink()
    out = run_cli("--root", str(root), "check")
    assert out.returncode == 1
    assert out.stdout == "packages/core/CHANGELOG.md: missing\n"


def test_cli_check_fails_on_bad_release(tmp_path):
    write_release(tmp_path, mutate('core = "0.1.0"\n', ""))
    out = run_cli("--root", str(tmp_path), "check")
    assert out.returncode == 1
    assert "train 2026.11 does not name a core version" in out.stderr


def test_cli_list(tmp_path):
    write_release(tmp_path, BASE)
    out = run_cli("--root", str(tmp_path), "list")
    assert out.returncode == 0
    assert out.stdout == "core\nvision\ndata\n"


def test_cli_sync_and_page(tmp_path):
    rel = base_repo(tmp_path)
    out = run_cli("--root", str(rel.root), "sync")
    assert out.returncode == 0, out.stderr
    assert "wrote packages/vision/pyproject.toml" in out.stdout
    assert run_cli("--root", str(rel.root), "sync").stdout == "sync: up to date\n"
    out = run_cli("--root", str(rel.root), "page")
    assert out.stdout == "wrote docs/compatibility.md\nwrote docs/compatibility.html\n"


def test_cli_default_root_is_the_repository(repo_root):
    out = run_cli("list")
    assert out.stdout.splitlines() == list(release.load(repo_root).packages)
