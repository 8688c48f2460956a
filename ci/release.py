#!/usr/bin/env python3
"""Ember's release tooling. `release.toml` is the single source of truth.

    python ci/release.py [--root DIR] sync    write versions and pins into packages/*/pyproject.toml
    python ci/release.py [--root DIR] check   report drift, missing changelog headings, stale pages
    python ci/release.py [--root DIR] page    regenerate docs/compatibility.{md,html}
    python ci/release.py [--root DIR] list    print package names, core first
    python ci/release.py [--root DIR] tags    print each package's release tag and whether it exists

Releases follow docs/releasing.md: each package is tagged `<distribution>-v<version>` on the
commit that cut it, and `check` compares the package's code with that tag.

noxfile.py imports this module (`sys.path.insert(0, "ci"); import release`). It uses the
standard library only, because it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import datetime
import html
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

RELEASE_TOML = "release.toml"
RESULTS_JSON = Path("ci/compat-results.json")
PAGE_MD = Path("docs/compatibility.md")
PAGE_HTML = Path("docs/compatibility.html")
VERSION_TXT = Path("native/version.txt")
CORE = "core"

_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
_MINOR = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)$")
_SPEC_ITEM = re.compile(r"^(~=|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?$")
_PKG_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # becomes a nox session name: tests-<name>
_TRAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COMMIT = re.compile(r"^[0-9a-f]{4,40}$")


class ReleaseError(ValueError):
    """release.toml, a pyproject.toml or the results file is malformed."""


@dataclass(frozen=True)
class Build:
    cxx_standard: int
    pybind11: str
    python: str


@dataclass(frozen=True)
class Package:
    name: str
    distribution: str
    import_name: str
    path: Path  # relative to Release.root
    version: str
    native: bool
    core: str | None  # None for the core package itself


@dataclass(frozen=True)
class Train:
    name: str
    python: str
    versions: dict[str, str]  # package name -> version; always has "core"


@dataclass(frozen=True)
class Refused:
    """A pair known not to work: `package` `version` must be refused at install beside core
    `core` (its pin excludes that core). `nox -s compat` proves the refusal."""

    package: str
    version: str
    core: str
    reason: str


@dataclass(frozen=True)
class Release:
    root: Path
    build: Build
    packages: dict[str, Package]  # core first, then release.toml order
    trains: list[Train]  # newest first
    refused: list[Refused] = field(default_factory=list)

    @property
    def core(self) -> Package:
        return self.packages[CORE]


# ---------------------------------------------------------------------------------------------
# Versions and specifiers (a small subset of PEP 440: X.Y.Z versions, comparison specifiers)


def _vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _parse_spec(spec: str) -> list[tuple[str, tuple[int, ...], bool]] | None:
    """Comma-separated specifiers as (op, version, wildcard), or None if malformed."""
    items = []
    for raw in spec.split(","):
        m = _SPEC_ITEM.match(raw.strip())
        if not m:
            return None
        op, version, wildcard = m.group(1), _vtuple(m.group(2)), bool(m.group(3))
        if wildcard and op not in ("==", "!="):
            return None
        if op == "~=" and len(version) < 2:
            return None
        items.append((op, version, wildcard))
    return items


def _satisfies(version: str, spec: str) -> bool:
    v = _vtuple(version)
    for op, want, wildcard in _parse_spec(spec) or []:
        if wildcard:
            same = v[: len(want)] == want
            if same != (op == "=="):
                return False
            continue
        width = max(len(v), len(want))
        a, b = v + (0,) * (width - len(v)), want + (0,) * (width - len(want))
        ok = {
            "==": a == b,
            "!=": a != b,
            "<": a < b,
            "<=": a <= b,
            ">": a > b,
            ">=": a >= b,
            "~=": a >= b and v[: len(want) - 1] == want[:-1],
        }[op]
        if not ok:
            return False
    return True


def _bounded(spec: str) -> bool:
    ops = {op for op, _, _ in _parse_spec(spec) or []}
    return bool(ops & {">=", ">", "==", "~="}) and bool(ops & {"<", "<=", "==", "~="})


def _core_allows(pkg: Package, core_version: str) -> bool:
    if pkg.native:
        return _vtuple(core_version)[:2] == _vtuple(pkg.core)
    return _satisfies(core_version, pkg.core)


def core_requirement(release: Release, pkg: Package) -> str:
    """The pip requirement a package puts on the core distribution."""
    if pkg.core is None:
        raise ReleaseError(f"{pkg.name} is the core package; it has no core requirement")
    dist = release.core.distribution
    if pkg.native:
        return f"{dist}=={pkg.core}.*"
    return dist + re.sub(r"\s+", "", pkg.core)


def core_support(pkg: Package) -> str:
    """The `core` spec written for humans (the compatibility page)."""
    if pkg.core is None:
        return "— (this is the core)"
    if pkg.native:
        return f"{pkg.core}.x (native: one core minor)"
    return f"{pkg.core} (pure Python: tested range)"


# ---------------------------------------------------------------------------------------------
# load(): read and validate release.toml


def _get(table: dict, key: str, kind: type, where: str):
    if key not in table:
        raise ReleaseError(f"release.toml: {where} is missing key '{key}'")
    value = table[key]
    if type(value) is not kind:  # `type is`, because bool is an int
        raise ReleaseError(
            f"release.toml: {where} key '{key}' must be {kind.__name__}, not {type(value).__name__}"
        )
    return value


def _check_version(value: str, where: str) -> str:
    if not _VERSION.match(value):
        raise ReleaseError(f"release.toml: {where} '{value}' is not a version X.Y.Z")
    return value


def _check_python(value: str, where: str) -> str:
    if _parse_spec(value) is None:
        raise ReleaseError(f"release.toml: {where} '{value}' is not a version range like '>=3.10'")
    return value


def _load_build(data: dict) -> Build:
    table = _get(data, "build", dict, "the file")
    build = Build(
        cxx_standard=_get(table, "cxx_standard", int, "[build]"),
        pybind11=_check_version(_get(table, "pybind11", str, "[build]"), "[build] pybind11"),
        python=_check_python(_get(table, "python", str, "[build]"), "[build] python"),
    )
    if build.cxx_standard not in (17, 20, 23, 26):
        raise ReleaseError(f"release.toml: [build] cxx_standard {build.cxx_standard} is not 17+")
    return build


def _load_package(name: str, table: dict) -> Package:
    where = f"[packages.{name}]"
    if not _PKG_NAME.match(name):
        raise ReleaseError(f"release.toml: {where}: package names are lowercase identifiers")
    path = _get(table, "path", str, where)
    if Path(path).is_absolute() or ".." in Path(path).parts:
        raise ReleaseError(f"release.toml: {where} path '{path}' must be inside the repository")
    native = _get(table, "native", bool, where)
    core = None
    if name == CORE:
        if "core" in table:
            raise ReleaseError(f"release.toml: {where} must not have a 'core' key: it is the core")
    else:
        core = _get(table, "core", str, where)
        if native and not _MINOR.match(core):
            raise ReleaseError(
                f"release.toml: {where} is native, so 'core' must be one core minor "
                f"like \"0.1\", not '{core}'"
            )
        if not native and (_parse_spec(core) is None or not _bounded(core)):
            raise ReleaseError(
                f"release.toml: {where} is pure Python, so 'core' must be a bounded range "
                f"like \">=0.1,<0.2\", not '{core}'"
            )
    return Package(
        name=name,
        distribution=_get(table, "distribution", str, where),
        import_name=_get(table, "import", str, where),
        path=Path(path),
        version=_check_version(_get(table, "version", str, where), f"{where} version"),
        native=native,
        core=core,
    )


def _load_packages(data: dict) -> dict[str, Package]:
    tables = _get(data, "packages", dict, "the file")
    if CORE not in tables:
        raise ReleaseError("release.toml: no [packages.core]: the core package is required")
    packages: dict[str, Package] = {}
    for name in [CORE] + [n for n in tables if n != CORE]:
        if type(tables[name]) is not dict:
            raise ReleaseError(f"release.toml: packages.{name} must be a table")
        packages[name] = _load_package(name, tables[name])
    for attr, label in (
        ("distribution", "distribution"),
        ("import_name", "import"),
        ("path", "path"),
    ):
        seen: dict[object, str] = {}
        for pkg in packages.values():
            value = getattr(pkg, attr)
            if value in seen:
                raise ReleaseError(
                    f"release.toml: {label} '{value}' is used by both packages.{seen[value]} "
                    f"and packages.{pkg.name}"
                )
            seen[value] = pkg.name
    return packages


def _load_trains(data: dict, packages: dict[str, Package]) -> list[Train]:
    rows = data.get("train")
    if not rows or type(rows) is not list:
        raise ReleaseError("release.toml: no [[train]] rows")
    trains: list[Train] = []
    for i, row in enumerate(rows, 1):
        where = f"[[train]] #{i}"
        name = _get(row, "name", str, where)
        if not _TRAIN_NAME.match(name):
            raise ReleaseError(f"release.toml: {where} name '{name}' is not a plain name")
        where = f"train {name}"
        python = _check_python(_get(row, "python", str, where), f"{where} python")
        versions = {}
        for key in row:
            if key in ("name", "python"):
                continue
            if key not in packages:
                raise ReleaseError(f"release.toml: {where} names unknown package '{key}'")
            versions[key] = _check_version(_get(row, key, str, where), f"{where}: {key} =")
        if CORE not in versions:
            raise ReleaseError(f"release.toml: {where} does not name a core version")
        # Keep the dict in package order so every consumer iterates it the same way.
        trains.append(Train(name, python, {p: versions[p] for p in packages if p in versions}))

    seen: set[str] = set()
    for i, train in enumerate(trains):
        prev = trains[i - 1] if i else None
        if train.name in seen:
            raise ReleaseError(f"release.toml: train {train.name} is listed twice")
        seen.add(train.name)
        if prev and _vtuple(prev.versions[CORE]) < _vtuple(train.versions[CORE]):
            raise ReleaseError(
                f"release.toml: trains must be listed newest first: {prev.name} "
                f"(core {prev.versions[CORE]}) comes before {train.name} "
                f"(core {train.versions[CORE]})"
            )
        core_version = train.versions[CORE]
        for name, version in train.versions.items():
            pkg = packages[name]
            if _vtuple(version) > _vtuple(pkg.version):
                raise ReleaseError(
                    f"release.toml: train {train.name} names {name} {version}, newer than its "
                    f"current version {pkg.version}"
                )
            # Only the current version's `core` spec is known; older rows keep their history.
            if pkg.core and version == pkg.version and not _core_allows(pkg, core_version):
                raise ReleaseError(
                    f"release.toml: train {train.name} ships {name} {version} with core "
                    f"{core_version}, outside {name}'s core '{pkg.core}'"
                )
    return trains


def load(root: Path) -> Release:
    """Read and validate `<root>/release.toml`."""
    root = Path(root)
    try:
        data = tomllib.loads((root / RELEASE_TOML).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"{root / RELEASE_TOML}: not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ReleaseError(f"release.toml: {e}") from None
    build = _load_build(data)
    packages = _load_packages(data)
    trains = _load_trains(data, packages)
    return Release(root, build, packages, trains, _load_refused(data, packages, trains))


def _load_refused(data: dict, packages: dict[str, Package], trains: list[Train]) -> list[Refused]:
    rows = data.get("refused", [])
    if type(rows) is not list:
        raise ReleaseError("release.toml: refused must be [[refused]] rows")
    out: list[Refused] = []
    for i, row in enumerate(rows, 1):
        where = f"[[refused]] #{i}"
        name = _get(row, "package", str, where)
        if name not in packages or name == CORE:
            raise ReleaseError(f"release.toml: {where} names '{name}', not a domain package")
        pkg = packages[name]
        version = _check_version(_get(row, "version", str, where), f"{where} version")
        core = _check_version(_get(row, "core", str, where), f"{where} core")
        reason = _get(row, "reason", str, where)
        if version == pkg.version and _core_allows(pkg, core):
            raise ReleaseError(
                f"release.toml: {where}: {name} {version} allows core {core} ('{pkg.core}'), "
                "so its pin would not refuse the pair"
            )
        for train in trains:
            if train.versions.get(name) == version and train.versions[CORE] == core:
                raise ReleaseError(f"release.toml: {where}: train {train.name} ships that pair")
        out.append(Refused(name, version, core, reason))
    return out


# ---------------------------------------------------------------------------------------------
# Targeted TOML edits. tomllib reads; these functions rewrite single values in place so that
# every other byte (comments, ordering, formatting) survives.


def _string_end(text: str, i: int) -> int:
    """Index just past the TOML string literal that starts at text[i]."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        j = i + 3
        while True:
            k = text.find(quote * 3, j)
            if k < 0:
                raise ReleaseError("unterminated multi-line string")
            if quote == '"' and _escaped(text, k):
                j = k + 1
                continue
            # A closing run may hold up to two quotes of content before the delimiter.
            while text.startswith(quote, k + 3) and k + 3 < len(text):
                k += 1
            return k + 3
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\" and quote == '"':
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == "\n":
            break
        j += 1
    raise ReleaseError("unterminated string")


def _escaped(text: str, k: int) -> bool:
    n = 0
    while k - n - 1 >= 0 and text[k - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _skip_comment(text: str, i: int) -> int:
    nl = text.find("\n", i)
    return len(text) if nl < 0 else nl


def _top_level_lines(text: str) -> list[int]:
    """Start offsets of lines that begin outside any multi-line array, table or string."""
    starts, depth, j = [0], 0, 0
    while j < len(text):
        c = text[j]
        if c in "\"'":
            j = _string_end(text, j)
            continue
        if c == "#":
            j = _skip_comment(text, j)
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth = max(depth - 1, 0)
        elif c == "\n" and depth == 0 and j + 1 < len(text):
            starts.append(j + 1)
        j += 1
    return starts


def _line_at(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


_HEADER = re.compile(r"^\[\[?\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(?:#.*)?$")


def _table_name(line: str) -> str | None:
    m = _HEADER.match(line)
    if not m:
        return None
    return ".".join(part.strip().strip("\"'") for part in m.group(1).split("."))


def _find_table(text: str, table: str) -> tuple[int, int] | None:
    """(body start, body end) offsets of `[table]`, or None."""
    starts = _top_level_lines(text)
    for n, start in enumerate(starts):
        if _table_name(_line_at(text, start)) != table:
            continue
        body = start + len(_line_at(text, start)) + 1
        for later in starts[n + 1 :]:
            if _table_name(_line_at(text, later)) is not None:
                return min(body, later), later
        return min(body, len(text)), len(text)
    return None


def _find_key(text: str, table: str, key: str) -> tuple[int, int] | None:
    """(line start, value start) of `key = ...` directly in `[table]`, or None."""
    span = _find_table(text, table)
    if span is None:
        return None
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=\s*")
    for start in _top_level_lines(text):
        if span[0] <= start < span[1]:
            m = pattern.match(_line_at(text, start))
            if m:
                return start, start + m.end()
    return None


def _value_end(text: str, i: int) -> int:
    """Index just past the TOML value that starts at text[i]."""
    if i < len(text) and text[i] in "\"'":
        return _string_end(text, i)
    if i < len(text) and text[i] in "[{":
        return _array_items(text, i)[1]
    m = re.compile(r"[^\s,#\]}]*").match(text, i)
    return m.end()


def _array_items(text: str, i: int) -> tuple[list[tuple[int, int]], int]:
    """Spans of the string items of the array opening at text[i], and the index past its end."""
    items, depth, j = [], 0, i
    while j < len(text):
        c = text[j]
        if c in "\"'":
            end = _string_end(text, j)
            if depth == 1:
                items.append((j, end))
            j = end
            continue
        if c == "#":
            j = _skip_comment(text, j)
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return items, j + 1
        j += 1
    raise ReleaseError("unterminated array")


def _decode(literal: str):
    return tomllib.loads(f"v = {literal}")["v"]


def _insert_key(text: str, table: str, line: str, after: tuple[str, ...]) -> str:
    """Insert `line` into `[table]` after the first existing key of `after`, else at the top."""
    span = _find_table(text, table)
    if span is None:
        raise ReleaseError(f"no [{table}] table")
    at = span[0]
    for key in after:
        found = _find_key(text, table, key)
        if found:
            end = _value_end(text, found[1])
            nl = text.find("\n", end)
            at = len(text) if nl < 0 else nl + 1
            break
    if at == len(text) and not text.endswith("\n"):
        text += "\n"
        at += 1
    return text[:at] + line + "\n" + text[at:]


def _set_value(text: str, table: str, key: str, value: str, after: tuple[str, ...] = ()) -> str:
    """Make `key = "value"` in `[table]`: rewrite the value in place, or add the line."""
    literal = json.dumps(value)
    found = _find_key(text, table, key)
    if found is None:
        return _insert_key(text, table, f"{key} = {literal}", after)
    start = found[1]
    end = _value_end(text, start)
    if _decode(text[start:end]) == value:
        return text  # keeps the author's quoting
    return text[:start] + literal + text[end:]


def _req_name(requirement: str) -> str | None:
    m = re.match(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)", requirement)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else None


def _find_requirement(requirements: list, dist: str) -> str | None:
    """The entry of a requirements list that names distribution `dist`, or None."""
    want = _req_name(dist)
    for entry in requirements:
        if isinstance(entry, str) and _req_name(entry) == want:
            return entry
    return None


def _set_requirement(
    text: str, table: str, key: str, dist: str, requirement: str, after: tuple[str, ...] = ()
) -> str:
    """Make the `[table] key` array hold `requirement` as its only entry on `dist`."""
    literal = json.dumps(requirement)
    found = _find_key(text, table, key)
    if found is None:
        return _insert_key(text, table, f"{key} = [{literal}]", after)
    start = found[1]
    if text[start : start + 1] != "[":
        raise ReleaseError(f"[{table}] {key} must be an array")
    items, end = _array_items(text, start)
    hits = [(a, b) for a, b in items if _req_name(_decode(text[a:b])) == _req_name(dist)]
    if len(hits) > 1:
        raise ReleaseError(f"[{table}] {key} names {dist} more than once")
    if hits:
        a, b = hits[0]
        if _decode(text[a:b]) == requirement:
            return text
        return text[:a] + literal + text[b:]
    # Add it as the first entry, in the array's own layout.
    nl = text.find("\n", start, end)
    if nl >= 0 and not text[start + 1 : nl].split("#")[0].strip():
        indent = "    "
        if items:
            line_start = text.rfind("\n", 0, items[0][0]) + 1
            indent = text[line_start : items[0][0]]
            indent = indent if not indent.strip() else "    "
        return text[: nl + 1] + f"{indent}{literal},\n" + text[nl + 1 :]
    return text[: start + 1] + literal + (", " if items else "") + text[start + 1 :]


# ---------------------------------------------------------------------------------------------
# sync() and the drift half of check()


def _rel(release: Release, path: Path) -> str:
    try:
        return path.relative_to(release.root).as_posix()
    except ValueError:
        return str(path)


def _pyproject(release: Release, pkg: Package) -> Path:
    return release.root / pkg.path / "pyproject.toml"


def _synced_pyproject(release: Release, pkg: Package, text: str) -> str:
    """The pyproject text with every field that release.toml owns set from it."""
    where = _rel(release, _pyproject(release, pkg))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ReleaseError(f"{where}: {e}") from None
    if "project" not in data:
        raise ReleaseError(f"{where}: no [project] table")
    if "version" in data["project"].get("dynamic", []):
        raise ReleaseError(f"{where}: version must not be dynamic: release.toml owns it")
    b = release.build
    try:
        text = _set_value(text, "project", "name", pkg.distribution)
        text = _set_value(text, "project", "version", pkg.version, after=("name",))
        text = _set_value(text, "project", "requires-python", b.python, after=("version", "name"))
        if pkg.core is not None:
            text = _set_requirement(
                text,
                "project",
                "dependencies",
                release.core.distribution,
                core_requirement(release, pkg),
                after=("requires-python", "version", "name"),
            )
        if pkg.native:
            text = _set_requirement(
                text, "build-system", "requires", "pybind11", f"pybind11=={b.pybind11}"
            )
            if pkg.core is not None:
                text = _set_requirement(
                    text,
                    "build-system",
                    "requires",
                    release.core.distribution,
                    core_requirement(release, pkg),
                )
            text = _set_cxx_standard(text, data, str(b.cxx_standard))
    except ReleaseError as e:
        raise ReleaseError(f"{where}: {e}") from None
    return text


_DEFINE = "tool.scikit-build.cmake.define"


def _set_cxx_standard(text: str, data: dict, value: str) -> str:
    if _find_table(text, _DEFINE) is None:
        define = data.get("tool", {}).get("scikit-build", {}).get("cmake", {}).get("define")
        if define is not None:
            # Another spelling (dotted keys, inline table) owns it; a new table would clash.
            raise ReleaseError(f"write cmake.define as a [{_DEFINE}] table so sync can edit it")
        return text.rstrip("\n") + f'\n\n[{_DEFINE}]\nCMAKE_CXX_STANDARD = "{value}"\n'
    return _set_value(text, _DEFINE, "CMAKE_CXX_STANDARD", value)


def _synced_files(release: Release) -> list[tuple[Path, str | None, str]]:
    """(path, current text or None if absent, text sync writes) for every file sync owns."""
    out = []
    for pkg in release.packages.values():
        path = _pyproject(release, pkg)
        if not path.exists():
            raise ReleaseError(f"{_rel(release, path)}: missing")
        text = path.read_text(encoding="utf-8")
        out.append((path, text, _synced_pyproject(release, pkg, text)))
    path = release.root / VERSION_TXT
    current = path.read_text(encoding="utf-8") if path.exists() else None
    out.append((path, current, release.core.version + "\n"))
    return out


def sync(release: Release) -> list[Path]:
    """Write release.toml's versions and pins into the files it owns; return those changed."""
    changed = []
    for path, current, new in _synced_files(release):
        if current != new:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(new.encode("utf-8"))
            changed.append(path)
    return changed


def _drift(release: Release, pkg: Package, data: dict) -> list[str]:
    """Field-by-field differences between a parsed pyproject and release.toml."""
    where = _rel(release, _pyproject(release, pkg))
    problems = []

    def compare(field: str, current, expected) -> None:
        if current != expected:
            shown = "missing" if current is None else current
            problems.append(f"{where}: {field} is {shown}, release.toml says {expected}")

    project = data.get("project", {})
    compare("name", project.get("name"), pkg.distribution)
    compare("version", project.get("version"), pkg.version)
    compare("requires-python", project.get("requires-python"), release.build.python)
    core_dist = release.core.distribution
    if pkg.core is not None:
        compare(
            f"dependency on {core_dist}",
            _find_requirement(project.get("dependencies", []), core_dist),
            core_requirement(release, pkg),
        )
    if pkg.native:
        requires = data.get("build-system", {}).get("requires", [])
        compare(
            "build-system requires pybind11",
            _find_requirement(requires, "pybind11"),
            f"pybind11=={release.build.pybind11}",
        )
        if pkg.core is not None:
            compare(
                f"build-system requires {core_dist}",
                _find_requirement(requires, core_dist),
                core_requirement(release, pkg),
            )
        define = data.get("tool", {}).get("scikit-build", {}).get("cmake", {}).get("define", {})
        compare(
            f"[{_DEFINE}] CMAKE_CXX_STANDARD",
            define.get("CMAKE_CXX_STANDARD"),
            str(release.build.cxx_standard),
        )
    return problems


def _check_synced(release: Release) -> list[str]:
    problems = []
    for pkg in release.packages.values():
        path = _pyproject(release, pkg)
        where = _rel(release, path)
        if not path.exists():
            problems.append(f"{where}: missing")
            continue
        text = path.read_text(encoding="utf-8")
        try:
            new = _synced_pyproject(release, pkg, text)
        except ReleaseError as e:
            problems.append(str(e))
            continue
        if new != text:
            found = _drift(release, pkg, tomllib.loads(text))
            problems += found or [f"{where}: differs from what `release.py sync` writes"]
    path = release.root / VERSION_TXT
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current != release.core.version + "\n":
        shown = "missing" if current is None else repr(current)
        problems.append(
            f"{VERSION_TXT.as_posix()}: is {shown}, release.toml says core "
            f"{release.core.version} (a line of its own)"
        )
    return problems


# ---------------------------------------------------------------------------------------------
# Changelogs (Keep a Changelog: `## [Unreleased]`, then `## [X.Y.Z] - YYYY-MM-DD`, newest first)

_CHANGELOG_HEADING = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$")


def _valid_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_changelog(release: Release, pkg: Package) -> list[str]:
    path = release.root / pkg.path / "CHANGELOG.md"
    where = _rel(release, path)
    if not path.exists():
        return [f"{where}: missing"]
    problems, versions = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("## "):
            continue
        if line == "## [Unreleased]":
            if versions:
                problems.append(f"{where}:{n}: [Unreleased] must come before every version")
            continue
        m = _CHANGELOG_HEADING.match(line)
        if not m or not _valid_date(m.group(2)):
            problems.append(
                f"{where}:{n}: heading {line!r} is not '## [X.Y.Z] - YYYY-MM-DD' "
                "or '## [Unreleased]'"
            )
            continue
        version = m.group(1)
        if version in versions:
            problems.append(f"{where}:{n}: version {version} has two headings")
        elif versions and _vtuple(version) > _vtuple(versions[-1]):
            problems.append(
                f"{where}:{n}: {version} is listed below {versions[-1]}; newest goes first"
            )
        versions.append(version)

    needed = {pkg.version: "the current version"}
    for train in release.trains:
        if pkg.name in train.versions:
            needed.setdefault(train.versions[pkg.name], f"shipped in train {train.name}")
    for version, why in needed.items():
        if version not in versions:
            problems.append(
                f"{where}: no '## [{version}] - YYYY-MM-DD' heading for {version} ({why})"
            )
    return problems


# ---------------------------------------------------------------------------------------------
# Results of the compatibility session (ci/compat-results.json)

_RESULT_KEYS = ("train", "package", "version", "core", "python", "status", "date", "commit")
# "refused": the install of a [[refused]] pair failed on the pin, as it must (train REFUSED).
_STATUSES = ("passed", "failed", "refused")
REFUSED = "refused"


def _result_key(entry: dict) -> tuple[str, str, str, str]:
    return entry["train"], entry["package"], entry["version"], entry["core"]


def _check_result(entry, where: str) -> None:
    if not isinstance(entry, dict):
        raise ReleaseError(f"{where}: each entry must be an object")
    missing = [k for k in _RESULT_KEYS if k not in entry]
    if missing:
        raise ReleaseError(f"{where}: entry {entry} lacks {', '.join(missing)}")
    if any(not isinstance(entry[k], str) for k in _RESULT_KEYS):
        raise ReleaseError(f"{where}: entry {entry}: every field must be a string")
    if entry["status"] not in _STATUSES:
        raise ReleaseError(
            f"{where}: status must be 'passed', 'failed' or 'refused', not {entry['status']!r}"
        )
    if not _DATE.match(entry["date"]):
        raise ReleaseError(f"{where}: date must be YYYY-MM-DD, not {entry['date']!r}")
    if not _COMMIT.match(entry["commit"]):
        raise ReleaseError(f"{where}: commit must be a short hex sha, not {entry['commit']!r}")


def load_results(root: Path) -> list[dict]:
    """The recorded compatibility results; [] when the file does not exist yet."""
    path = Path(root) / RESULTS_JSON
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ReleaseError(f"{RESULTS_JSON.as_posix()}: {e}") from None
    if not isinstance(entries, list):
        raise ReleaseError(f"{RESULTS_JSON.as_posix()}: must be a JSON list")
    for entry in entries:
        _check_result(entry, RESULTS_JSON.as_posix())
    return entries


def record_results(root: Path, entries: list[dict]) -> Path:
    """Merge entries into the results file; an entry replaces one with the same
    (train, package, version, core)."""
    for entry in entries:
        _check_result(entry, "record_results")
    merged = {_result_key(e): e for e in load_results(root)}
    merged.update({_result_key(e): dict(e) for e in entries})
    path = Path(root) / RESULTS_JSON
    path.parent.mkdir(parents=True, exist_ok=True)
    out = [merged[k] for k in sorted(merged)]
    path.write_bytes(
        (json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    )
    return path


def _status(results: list[dict], package: str, version: str, core: str) -> tuple[str, str]:
    """(css class, words) for one (package version, core version) pair, from any train."""
    pair = (package, version, core)
    runs = [r for r in results if (r["package"], r["version"], r["core"]) == pair and r["train"] != REFUSED]
    if not runs:
        return "untested", "not tested"
    # Newest run wins; on the same day a failure outranks a pass.
    last = max(runs, key=lambda r: (r["date"], r["status"] == "failed", r["commit"], r["train"]))
    if last["status"] == "passed":
        return "passed", f"tested ✓ {last['date']} ({last['commit']})"
    return "failed", f"FAILED {last['date']} ({last['commit']})"


# ---------------------------------------------------------------------------------------------
# The compatibility page (docs/compatibility.md and .html)

_GENERATED = (
    "Generated by `python ci/release.py page` from release.toml and "
    "ci/compat-results.json. Do not edit by hand."
)
_INTRO = (
    "Each row is a release train: versions that ship together, newest first. Every "
    "package cell says whether that exact pair (the package version with the row's "
    "`ember` core version) was installed from wheels and tested by `nox -s compat`."
)
_STATUS_KEY = (
    "**tested ✓ date (commit)**: that pair's tests passed; **FAILED**: they failed; "
    "**not tested**: no run is recorded. The Python column is the train's "
    "supported range."
)


@dataclass(frozen=True)
class _Cell:
    version: str  # "—" when the package does not ship in the train
    css: str = "absent"
    status: str = ""


def _table_data(release: Release, results: list[dict]) -> tuple[list[str], list[list]]:
    """Header and rows of the trains table: train, one cell per package, Python range."""
    header = ["train"] + [p.distribution for p in release.packages.values()] + ["Python"]
    rows = []
    for train in release.trains:
        core = train.versions[CORE]
        cells = []
        for pkg in release.packages.values():
            version = train.versions.get(pkg.name)
            if version is None:
                cells.append(_Cell("—"))
            else:
                cells.append(_Cell(version, *_status(results, pkg.name, version, core)))
        rows.append([train.name, *cells, train.python])
    return header, rows


def _refused_data(release: Release, results: list[dict]) -> list[tuple[Refused, _Cell]]:
    """Each [[refused]] pair with the newest recorded attempt to install it."""
    out = []
    for pair in release.refused:
        key = (REFUSED, pair.package, pair.version, pair.core)
        runs = [r for r in results if _result_key(r) == key]
        if not runs:
            cell = _Cell(pair.version, "untested", "not tested")
        else:
            last = max(runs, key=lambda r: (r["date"], r["commit"]))
            if last["status"] == "refused":
                cell = _Cell(pair.version, "passed", f"refused at install ✓ {last['date']} ({last['commit']})")
            else:
                cell = _Cell(pair.version, "failed", f"INSTALLED, pin missing {last['date']} ({last['commit']})")
        out.append((pair, cell))
    return out


_REFUSED_INTRO = (
    "Pairs known not to work: pip must refuse to install them together, because the "
    "package's pin excludes that core. `nox -s compat` tries each install and records the refusal."
)


def _mismatch_help(release: Release) -> str:
    newest = release.trains[0]
    pins = " ".join(f"{release.packages[n].distribution}=={v}" for n, v in newest.versions.items())
    return (
        "A package with native code is built against one `ember` core minor and checks at "
        "import that the installed core is that minor. If it raises an ImportError about a "
        "core mismatch, install the versions from one row of the table above, for the newest "
        f"train: `pip install {pins}`. Pure-Python packages accept any core in their tested "
        "range, but only the pairs marked tested ✓ have been run together."
    )


def _build_note(release: Release) -> str:
    b = release.build
    return (
        f"Native wheels build with C++{b.cxx_standard} and pybind11=={b.pybind11}; every "
        f"wheel requires Python {b.python}."
    )


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _render_md(release: Release, results: list[dict]) -> str:
    header, rows = _table_data(release, results)
    lines = [
        f"<!-- {_GENERATED} -->",
        "",
        "# Version compatibility",
        "",
        _INTRO,
        "",
        _STATUS_KEY,
        "",
        "| "
        + " | ".join(f"`{h}`" if i and i < len(header) - 1 else h for i, h in enumerate(header))
        + " |",
        "|" + "---|" * len(header),
    ]
    for name, *cells, python in rows:
        shown = [c.version if c.css == "absent" else f"{c.version}<br>{c.status}" for c in cells]
        lines.append("| " + " | ".join([_md(name), *shown, f"`{_md(python)}`"]) + " |")
    lines += [
        "",
        "## Packages",
        "",
        "| distribution | import | current version | kind | supported core versions |",
        "|---|---|---|---|---|",
    ]
    for pkg in release.packages.values():
        kind = "native" if pkg.native else "pure"
        lines.append(
            f"| `{pkg.distribution}` | `{pkg.import_name}` | {pkg.version} | {kind} | "
            f"{_md(core_support(pkg))} |"
        )
    refused = _refused_data(release, results)
    if refused:
        lines += ["", "## Pairs known not to work", "", _REFUSED_INTRO, "",
                  "| package | version | `ember` | why | install |", "|---|---|---|---|---|"]
        for pair, cell in refused:
            dist = release.packages[pair.package].distribution
            lines.append(f"| `{dist}` | {pair.version} | {pair.core} | {_md(pair.reason)} | {cell.status} |")
    help_text = _mismatch_help(release)
    lines += [
        "",
        _build_note(release),
        "",
        "## If a native extension reports a core mismatch",
        "",
        help_text,
        "",
    ]
    return "\n".join(lines)


_CSS = """\
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem;
       color: #1f2328; line-height: 1.5; }
table { border-collapse: collapse; margin: 1rem 0 2rem; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.5rem; }
th, td { border: 1px solid #d0d7de; padding: 0.4rem 0.8rem; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
code { font-family: ui-monospace, monospace; font-size: 0.95em; }
.version { display: block; font-weight: 600; }
.status { display: block; font-size: 0.85em; }
.passed .status { color: #1a7f37; }
.failed { background: #ffebe9; }
.failed .status { color: #cf222e; font-weight: 600; }
.untested .status, .absent { color: #6e7781; }"""


def _render_html(release: Release, results: list[dict]) -> str:
    e = html.escape
    header, rows = _table_data(release, results)
    out = [
        "<!DOCTYPE html>",
        f"<!-- {e(_GENERATED)} -->",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Ember version compatibility</title>",
        "<style>",
        _CSS,
        "</style>",
        "</head>",
        "<body>",
        "<main>",
        "<h1>Version compatibility</h1>",
        f"<p>{_md_inline(_INTRO)}</p>",
        f"<p>{_md_inline(_STATUS_KEY)}</p>",
        '<table id="trains">',
        "<caption>Release trains, newest first</caption>",
        "<thead>",
        "<tr>" + "".join(f'<th scope="col">{e(h)}</th>' for h in header) + "</tr>",
        "</thead>",
        "<tbody>",
    ]
    for name, *cells, python in rows:
        tds = []
        for c in cells:
            if c.css == "absent":
                tds.append(f'<td class="absent">{e(c.version)}</td>')
            else:
                tds.append(
                    f'<td class="{c.css}"><span class="version">{e(c.version)}</span> '
                    f'<span class="status">{e(c.status)}</span></td>'
                )
        out.append(
            f'<tr><th scope="row">{e(name)}</th>{"".join(tds)}'
            f"<td><code>{e(python)}</code></td></tr>"
        )
    out += [
        "</tbody>",
        "</table>",
        "<h2>Packages</h2>",
        '<table id="packages">',
        "<thead>",
        "<tr>"
        + "".join(
            f'<th scope="col">{h}</th>'
            for h in (
                "distribution",
                "import",
                "current version",
                "kind",
                "supported core versions",
            )
        )
        + "</tr>",
        "</thead>",
        "<tbody>",
    ]
    for pkg in release.packages.values():
        kind = "native" if pkg.native else "pure"
        out.append(
            f'<tr><th scope="row"><code>{e(pkg.distribution)}</code></th>'
            f"<td><code>{e(pkg.import_name)}</code></td><td>{e(pkg.version)}</td>"
            f"<td>{kind}</td><td>{e(core_support(pkg))}</td></tr>"
        )
    out += ["</tbody>", "</table>"]
    refused = _refused_data(release, results)
    if refused:
        out += ["<h2>Pairs known not to work</h2>", f"<p>{_md_inline(_REFUSED_INTRO)}</p>",
                '<table id="refused">', "<thead>",
                "<tr>" + "".join(f'<th scope="col">{h}</th>' for h in
                                 ("package", "version", "ember", "why", "install")) + "</tr>",
                "</thead>", "<tbody>"]
        for pair, cell in refused:
            dist = release.packages[pair.package].distribution
            out.append(f'<tr><th scope="row"><code>{e(dist)}</code></th><td>{e(pair.version)}</td>'
                       f"<td>{e(pair.core)}</td><td>{e(pair.reason)}</td>"
                       f'<td class="{cell.css}"><span class="status">{e(cell.status)}</span></td></tr>')
        out += ["</tbody>", "</table>"]
    help_text = _mismatch_help(release)
    out += [
        f"<p>{e(_build_note(release))}</p>",
        "<h2>If a native extension reports a core mismatch</h2>",
        f"<p>{_md_inline(help_text)}</p>",
        "</main>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(out)


def _md_inline(text: str) -> str:
    """HTML for the little Markdown the page prose uses: `code` and **bold**."""
    parts = re.split(r"(`[^`]*`|\*\*[^*]*\*\*)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        elif part.startswith("**") and part.endswith("**") and len(part) > 3:
            out.append(f"<strong>{html.escape(part[2:-2])}</strong>")
        else:
            out.append(html.escape(part))
    return "".join(out)


def render_pages(release: Release, results: list[dict]) -> tuple[str, str]:
    """(markdown, html) of the compatibility page; a pure function of its inputs."""
    return _render_md(release, results), _render_html(release, results)


def write_pages(release: Release) -> list[Path]:
    """Regenerate docs/compatibility.{md,html}; return the files that changed."""
    changed = []
    pages = render_pages(release, load_results(release.root))
    for rel, text in zip((PAGE_MD, PAGE_HTML), pages, strict=True):
        path = release.root / rel
        data = text.encode("utf-8")
        if not path.exists() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            changed.append(path)
    return changed


def _check_pages(release: Release) -> list[str]:
    try:
        pages = render_pages(release, load_results(release.root))
    except ReleaseError as e:
        return [str(e)]
    problems = []
    for rel, text in zip((PAGE_MD, PAGE_HTML), pages, strict=True):
        path = release.root / rel
        if not path.exists():
            problems.append(f"{rel.as_posix()}: missing; run `python ci/release.py page`")
        elif path.read_bytes() != text.encode("utf-8"):
            problems.append(
                f"{rel.as_posix()}: stale (differs from a fresh render); "
                "run `python ci/release.py page`"
            )
    return problems


# ---------------------------------------------------------------------------------------------
# Releases in git: tags, and code changed since them (docs/releasing.md)


def tag_name(pkg: Package, version: str) -> str:
    """The git tag of a package's release: `ember-v0.2.0`, `emberdata-v0.2.0`."""
    return f"{pkg.distribution}-v{version}"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    """git in `root`, or None when git or the repository is unavailable."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    except OSError:
        return None
    return done


def git_tags(root: Path) -> set[str] | None:
    """The repository's tags; None when `root` is not the top of a git work tree."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0 or Path(top.stdout.strip()).resolve() != Path(root).resolve():
        return None
    listed = _git(root, "tag", "--list")
    return set(listed.stdout.split()) if listed is not None and listed.returncode == 0 else None


def code_paths(release: Release, pkg: Package) -> list[str]:
    """git pathspecs of the code a package ships (tests and benchmarks excluded)."""
    paths = [pkg.path.as_posix()]
    if pkg.name == CORE and pkg.native:
        paths.append("native")
    return paths + [f":(exclude){p}/{sub}" for p in paths for sub in ("tests", "benchmarks")]


def unreleased_entries(release: Release, pkg: Package) -> list[str]:
    """The non-blank, non-heading lines under a changelog's `## [Unreleased]`."""
    path = release.root / pkg.path / "CHANGELOG.md"
    if not path.exists():
        return []
    entries, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line == "## [Unreleased]"
        elif inside and line.strip() and not line.startswith("#"):
            entries.append(line)
    return entries


def _check_tags(release: Release) -> list[str]:
    """Each package's current version is tagged, and code changed since that tag is described
    under [Unreleased]. Skipped outside a git work tree or in a checkout without tags."""
    tags = git_tags(release.root)
    if not tags:
        return []
    problems = []
    for pkg in release.packages.values():
        tag = tag_name(pkg, pkg.version)
        if tag not in tags:
            problems.append(
                f"{pkg.distribution} {pkg.version}: no git tag {tag}; tag the commit that cut it "
                "(docs/releasing.md)"
            )
            continue
        diff = _git(release.root, "diff", "--quiet", tag, "--", *code_paths(release, pkg))
        if diff is not None and diff.returncode == 1 and not unreleased_entries(release, pkg):
            problems.append(
                f"{pkg.path.as_posix()}: code changed since {tag}, but CHANGELOG.md's [Unreleased] "
                "section is empty; describe the change there"
            )
    return problems


def _check_proven(release: Release) -> list[str]:
    """The newest train's pairs passed `nox -s compat`, and each [[refused]] pair was refused."""
    try:
        results = load_results(release.root)
    except ReleaseError as e:
        return [str(e)]
    problems = []
    newest = release.trains[0]
    core = newest.versions[CORE]
    for name, version in newest.versions.items():
        css, words = _status(results, name, version, core)
        if css != "passed":
            problems.append(
                f"train {newest.name}: {release.packages[name].distribution} {version} with core "
                f"{core} is {words}; run `nox -s compat`"
            )
    for pair, cell in _refused_data(release, results):
        if cell.css != "passed":
            problems.append(
                f"refused pair {release.packages[pair.package].distribution} {pair.version} with "
                f"core {pair.core}: {cell.status}; run `nox -s compat`"
            )
    return problems


def check(release: Release) -> list[str]:
    """Every problem with the repository's release state; empty means OK."""
    problems = _check_synced(release)
    for pkg in release.packages.values():
        problems += _check_changelog(release, pkg)
    return problems + _check_pages(release) + _check_proven(release) + _check_tags(release)


# ---------------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="repository root (default: the parent of ci/)",
    )
    parser.add_argument("command", choices=("sync", "check", "page", "list", "tags"))
    args = parser.parse_args(argv)
    try:
        release = load(args.root)
        if args.command == "list":
            print("\n".join(release.packages))
        elif args.command == "tags":
            tags = git_tags(release.root) or set()
            for pkg in release.packages.values():
                tag = tag_name(pkg, pkg.version)
                print(f"{tag}\t{'exists' if tag in tags else 'missing'}")
        elif args.command == "check":
            problems = check(release)
            for problem in problems:
                print(problem)
            if problems:
                return 1
            print(
                f"release check: OK ({len(release.packages)} packages, "
                f"{len(release.trains)} trains)"
            )
        else:
            changed = sync(release) if args.command == "sync" else write_pages(release)
            for path in changed:
                print(f"wrote {_rel(release, path)}")
            if not changed:
                print(f"{args.command}: up to date")
    except ReleaseError as e:
        print(f"release.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
