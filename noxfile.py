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
    nox -s parity-random    random streams bit for bit against PyTorch 2.13's CPU generator
    nox -s demo             build, install, run the example tour in docs/examples/
    nox -s sanitize         the native unit tests under ASan + UBSan
"""

from __future__ import annotations

import datetime
import hashlib
import os
import shutil
import subprocess
import sys
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
    "scipy-openblas32>=0.3.28",  # BLAS/LAPACK that libember links (Note [BLAS provider])
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


def wheels_for(session: nox.Session, pkg: release.Package) -> list[Path]:
    """The wheels a package's tests install: core's plus its own."""
    wheels = [build_wheel(session, RELEASE.core)]
    if pkg.name != release.CORE:
        wheels.append(build_wheel(session, pkg))
    return wheels


def run_pytest(session: nox.Session, tests: Path, name: str, *extra: str) -> None:
    """pytest from a scratch directory, so nothing from the source tree shadows the wheels."""
    args = ["-q", "-p", "no:cacheprovider", "--import-mode=importlib", *extra]
    reports = os.environ.get("EMBER_TEST_REPORTS")
    if reports:
        args.append(f"--junitxml={Path(reports) / (name + '.xml')}")
    session.chdir(session.create_tmp())
    session.run("python", "-m", "pytest", str(tests), *args)


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
        session.install(*map(str, wheels_for(session, pkg)), *TEST_REQUIREMENTS)
        if pkg.native and pkg.name == release.CORE:
            build_dir = _native_build_dir(pkg)
            assert build_dir is not None, "the core build has no ctest directory"
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
        session.run(python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                    "-w", str(out / "wheel"), str(source), external=True,
                    env={"PATH": f"{BUILDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"})
        (wheel,) = (out / "wheel").glob("*.whl")
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
               for p in sorted((ROOT / pkg.path / "csrc").glob("*")) if p.suffix in {".h", ".cpp"}]
    native += [str(p) for p in sorted(ROOT.glob("docs/examples/**/*.cpp"))]
    session.run("clang-format", "--dry-run", "--Werror", *native)


@nox.session
def compat(session: nox.Session) -> None:
    """Install exactly each train's (package, core) pairs from dist/ and run that package's tests.

    A pair whose wheels are not in dist/ (an older train) is reported as not tested. The results
    go to ci/compat-results.json and the compatibility page is regenerated from them."""
    for pkg in RELEASE.packages.values():
        build_wheel(session, pkg)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    today = datetime.date.today().isoformat()
    python = ".".join(map(str, sys.version_info[:3]))
    results = []
    for train in RELEASE.trains:
        core_wheel = _wheel(RELEASE.core, train.versions[release.CORE])
        for name, version in train.versions.items():
            pkg = RELEASE.packages[name]
            wheel = _wheel(pkg, version)
            if wheel is None or core_wheel is None:
                session.warn(f"{train.name}: {pkg.distribution} {version} with core "
                             f"{train.versions[release.CORE]}: wheels not in dist/, not tested")
                continue
            env_dir = Path(session.create_tmp()).resolve() / f"compat-{train.name}-{name}"
            shutil.rmtree(env_dir, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
            py = str(env_dir / "bin" / "python")
            wheels = {str(core_wheel), str(wheel)}
            # --no-index for our wheels: pip must take exactly these files, never another version.
            ok = subprocess.run([py, "-m", "pip", "install", "-q", *TEST_REQUIREMENTS, "numpy"]).returncode == 0
            ok = ok and subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                        *sorted(wheels)]).returncode == 0
            ok = ok and subprocess.run([py, "-m", "pip", "check"]).returncode == 0
            if ok:
                env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}"}
                ok = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                     "--import-mode=importlib", str(ROOT / pkg.path / "tests")],
                                    cwd=env_dir, env=env).returncode == 0
            session.log(f"{train.name}: {pkg.distribution} {version} + ember "
                        f"{train.versions[release.CORE]}: {'passed' if ok else 'FAILED'}")
            results.append({"train": train.name, "package": name, "version": version,
                            "core": train.versions[release.CORE], "python": python,
                            "status": "passed" if ok else "failed", "date": today, "commit": commit})
    release.record_results(ROOT, results)
    release.write_pages(release.load(ROOT))
    if any(r["status"] != "passed" for r in results):
        session.error("some pinned pairs failed their tests; see the compatibility page")


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """Regenerate the compatibility page and check every relative link in the docs."""
    session.run("python", str(ROOT / "ci" / "release.py"), "page", external=True)
    session.run("python", str(ROOT / "ci" / "check_links.py"), external=True)


@nox.session(name="parity-random", venv_backend="virtualenv")
def parity_random(session: nox.Session) -> None:
    """Ember's random streams beside PyTorch 2.13's CPU generator, bit for bit (and RNG states both
    ways): torch runs in a venv of its own, named to the tests by EMBER_TORCH_PYTHON; Ember's tests
    never import it."""
    torch_env = Path(session.create_tmp()).resolve() / "torch-peer"
    if not (torch_env / "bin" / "python").exists():
        session.run(sys.executable, "-m", "venv", str(torch_env), external=True)
        session.run(str(torch_env / "bin" / "python"), "-m", "pip", "install", "-q", "numpy",
                    "torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu",
                    "--extra-index-url", "https://pypi.org/simple", external=True)
    session.install(*map(str, wheels_for(session, RELEASE.core)), *TEST_REQUIREMENTS, "numpy")
    session.env["EMBER_TORCH_PYTHON"] = str(torch_env / "bin" / "python")
    tests = ROOT / RELEASE.core.path / "tests"
    run_pytest(session, tests / "test_random_parity.py", "parity-random", "-rxs")


# The peers of `nox -s bench` (never a dependency of any Ember wheel). PyTorch's CPU build comes
# from pip (uv would fetch a CUDA build); fbgemm_gpu 1.8's CPU wheel is the newest that loads
# beside torch 2.13 and must not pull its own torch.
BENCH_PEERS = ["torch==2.13.0", "numpy"]
BENCH_NO_DEPS_PEERS = ["fbgemm-gpu-cpu==1.8.0"]


@nox.session(venv_backend="virtualenv")
def bench(session: nox.Session) -> None:
    """Each package's benchmarks (packages/*/benchmarks/bench_*.py): Ember beside its peers.

    Arguments after `--` go to every script (e.g. `nox -s bench -- --only matmul`)."""
    session.run("python", "-m", "pip", "install", "-q", *BENCH_PEERS)
    session.run("python", "-m", "pip", "install", "-q", "--no-deps", *BENCH_NO_DEPS_PEERS, success_codes=[0, 1])
    for pkg in RELEASE.packages.values():
        scripts = sorted((ROOT / pkg.path / "benchmarks").glob("bench_*.py"))
        if not scripts:
            continue
        session.run("python", "-m", "pip", "install", "-q", *map(str, wheels_for(session, pkg)))
        for script in scripts:
            session.run("python", str(script), *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: build every wheel, install them, and run the tour in docs/examples/."""
    wheels = [build_wheel(session, pkg) for pkg in RELEASE.packages.values()]
    session.install(*map(str, wheels), "cmake>=3.21", "ninja>=1.10")
    session.chdir(session.create_tmp())
    session.run("python", str(ROOT / "docs" / "examples" / "tour.py"))


@nox.session
def sanitize(session: nox.Session) -> None:
    """The core built with ASan + UBSan: its C++ unit tests, then its Python tests with the
    sanitizer runtime preloaded into the interpreter."""
    python = _builder_python(session)
    env = {"PATH": f"{BUILDER / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    core = RELEASE.core
    wheel_dir = Path(session.create_tmp()).resolve() / "wheel"
    shutil.rmtree(wheel_dir, ignore_errors=True)
    session.run(python, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(wheel_dir),
                str(ROOT / core.path), "-C", "build-dir=build/sanitize-{wheel_tag}",
                "-C", "cmake.build-type=RelWithDebInfo", "-C", "cmake.define.EMBER_SANITIZE=ON",
                "-C", "cmake.define.EMBER_BUILD_TESTS=ON", external=True, env=env)
    sanitizer_env = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",  # CPython's own allocations are not ours
                     "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    (build_dir,) = sorted((ROOT / core.path / "build").glob("sanitize-*/native"))
    session.run(str(BUILDER / "bin" / "ctest"), "--test-dir", str(build_dir), "--output-on-failure", external=True,
                env={**sanitizer_env, "ASAN_OPTIONS": "detect_leaks=1"})
    (wheel,) = wheel_dir.glob("*.whl")
    session.install(str(wheel), *TEST_REQUIREMENTS)
    # libstdc++ is preloaded too: the python binary does not link it, and ASan must find the real
    # __cxa_throw when it starts, or the first C++ exception aborts.
    preload = " ".join(subprocess.run(["g++", f"-print-file-name={lib}"], capture_output=True, text=True,
                                      check=True).stdout.strip() for lib in ("libasan.so", "libstdc++.so"))
    session.chdir(session.create_tmp())
    session.run("python", "-m", "pytest", str(ROOT / core.path / "tests"), "-q", "-p", "no:cacheprovider",
                "--import-mode=importlib", env={**sanitizer_env, "LD_PRELOAD": preload, "PYTHONMALLOC": "malloc"})


@nox.session
def fuzz(session: nox.Session) -> None:
    """Hypothesis fuzzing of the checkpoint readers (zip archive, weights-only unpickler,
    safetensors header, mmap) against the installed core wheel: every mutated file must load or
    raise a documented exception. Examples per test: the first positional argument, else
    $EMBER_FUZZ_EXAMPLES, else 5000 (`nox -s fuzz -- 50000`). Under the sanitizer build, run
    tests/test_checkpoint_fuzz.py as `sanitize` runs the suite, with EMBER_FUZZ_EXAMPLES set."""
    examples = session.posargs[0] if session.posargs else os.environ.get("EMBER_FUZZ_EXAMPLES", "5000")
    session.install(*map(str, wheels_for(session, RELEASE.core)), *TEST_REQUIREMENTS)
    session.env["EMBER_FUZZ_EXAMPLES"] = str(int(examples))
    run_pytest(session, ROOT / RELEASE.core.path / "tests" / "test_checkpoint_fuzz.py", "fuzz")
