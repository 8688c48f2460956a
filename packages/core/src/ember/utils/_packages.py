"""The import-time check that domain packages run against the installed core.

A pure-Python domain package (emberrec, embervision, ...) names the core range it is tested with
(release.toml's `core = ">=0.2.1,<0.3"`, repeated in the package as `_SUPPORTED_CORE`) and calls
`check_supported_core` when imported, so a core installed with --no-deps, or upgraded afterwards,
fails at import with a message naming both versions instead of failing later inside some op.
Only the numeric release part of a version counts ("0.2.1.dev3" and "0.2.1+cpu" are 0.2.1).
"""

from __future__ import annotations

import re

import ember

COMPAT_PAGE = "docs/compatibility.md (the Ember compatibility page)"


def release_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, micro) of a version string; ValueError when it has no release number."""
    found = re.match(r"\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if found is None:
        raise ValueError(f"cannot read a release number from version {version!r}")
    major, minor, micro = (int(part or 0) for part in found.groups())
    return major, minor, micro


def in_range(version: str, supported: tuple[str, str]) -> bool:
    """Whether `version` lies in (">=low", "<high")."""
    low, high = (release_tuple(bound.lstrip("<>=")) for bound in supported)
    try:
        return low <= release_tuple(version) < high
    except ValueError:
        return False


def check_supported_core(distribution: str, version: str, supported: tuple[str, str]) -> None:
    """ImportError unless the installed ember lies in `supported` (">=low", "<high")."""
    if not in_range(ember.__version__, supported):
        wanted = ",".join(supported)
        raise ImportError(
            f"{distribution} {version} supports ember {wanted}, but ember {ember.__version__} is installed. "
            f"Install a matching pair: pip install 'ember{wanted}'; see {COMPAT_PAGE}."
        )
