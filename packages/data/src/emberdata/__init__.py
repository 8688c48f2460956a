"""emberdata: DataPipes for Ember, in the shape of torchdata 0.7.

Importing ``emberdata`` checks that the installed ``ember`` core is one this release supports
(see Note [core compatibility check]); nothing else in the package imports ``ember`` at import
time.
"""

from __future__ import annotations

import importlib
import re

__version__ = "0.2.0"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# emberdata is pure Python and tested against a range of ember releases. release.toml names that
# range (`core = ">=0.2,<0.3"`) and pyproject.toml pins it; _SUPPORTED_CORE repeats it here so a
# mismatched environment (an older/newer core installed with --no-deps, or a core upgraded after
# emberdata) fails at import with a message that says what to do, instead of failing later at
# some call site. Versions compare on their numeric release part only (X.Y.Z, zero-padded), so
# "0.1.0.dev1" and "0.1.0+cpu" count as 0.1.0; no dependency on `packaging`.
_SUPPORTED_CORE = (">=0.2", "<0.3")
_COMPAT_PAGE = "docs/compatibility.md (the Ember compatibility page)"

_RELEASE = re.compile(r"\s*v?(\d+(?:\.\d+)*)")


def _release_tuple(version: str) -> tuple[int, ...]:
    match = _RELEASE.match(version)
    if match is None:
        raise ValueError(f"cannot read a release number from version {version!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def _compare(left: tuple[int, ...], right: tuple[int, ...]) -> int:
    width = max(len(left), len(right))
    left = left + (0,) * (width - len(left))
    right = right + (0,) * (width - len(right))
    return (left > right) - (left < right)


_OPERATORS = {
    ">=": lambda c: c >= 0,
    ">": lambda c: c > 0,
    "<=": lambda c: c <= 0,
    "<": lambda c: c < 0,
    "==": lambda c: c == 0,
}


def _satisfies(version: str, specifiers: tuple[str, ...]) -> bool:
    release = _release_tuple(version)
    for spec in specifiers:
        op = next(o for o in sorted(_OPERATORS, key=len, reverse=True) if spec.startswith(o))
        if not _OPERATORS[op](_compare(release, _release_tuple(spec[len(op) :]))):
            return False
    return True


def _check_core_version(core_version: str) -> None:
    """Raise ImportError unless ``core_version`` lies in ``_SUPPORTED_CORE``."""
    supported = ",".join(_SUPPORTED_CORE)
    try:
        ok = _satisfies(core_version, _SUPPORTED_CORE)
    except ValueError:
        ok = False
    if not ok:
        raise ImportError(
            f"emberdata {__version__} supports ember {supported}, but ember {core_version} is "
            f"installed. Install a matching pair, e.g. pip install 'ember{supported}', or the "
            f"emberdata release built for ember {core_version}; see {_COMPAT_PAGE}."
        )


def _check_core() -> None:
    """Import ``ember`` and check its version (Note [core compatibility check])."""
    supported = ",".join(_SUPPORTED_CORE)
    try:
        import ember
    except ModuleNotFoundError as error:
        if error.name != "ember":
            raise ImportError(
                f"emberdata requires ember {supported}, but importing ember failed: {error}"
            ) from error
        raise ImportError(
            f"emberdata {__version__} requires ember {supported}, which is not installed: "
            f"pip install 'ember{supported}'; see {_COMPAT_PAGE}."
        ) from error
    except ImportError as error:
        raise ImportError(
            f"emberdata requires ember {supported}, but importing ember failed: {error}"
        ) from error
    core_version = getattr(ember, "__version__", None)
    if core_version is None:
        raise ImportError(
            f"emberdata {__version__} requires ember {supported}, but the installed ember "
            f"has no __version__; see {_COMPAT_PAGE}."
        )
    _check_core_version(str(core_version))


_check_core()

__all__ = ["__version__", "dataloader2", "datapipes"]

_SUBMODULES = ("dataloader2", "datapipes")


def __getattr__(name: str) -> object:
    # The subpackages load on first use, after the check above has passed.
    if name in _SUBMODULES:
        return importlib.import_module(f"emberdata.{name}")
    raise AttributeError(f"module 'emberdata' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])
