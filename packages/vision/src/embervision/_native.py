"""Loads embervision's native modules (``_C``, ``_image``, ``_video``) on first use, checking that
each was compiled against the installed core's minor (Note [core compatibility check] in __init__)."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

import ember
from ember.utils._packages import release_tuple


def check_built_for(module: str, built_for: str, core_version: str) -> None:
    """ImportError unless `built_for` and `core_version` share a minor."""
    if release_tuple(built_for)[:2] != release_tuple(core_version)[:2]:
        raise ImportError(
            f"embervision.{module} was built against ember {built_for}, but ember {core_version} is "
            f"installed. Install the embervision release built for ember {core_version}, or "
            f"pip install 'ember=={built_for.rsplit('.', 1)[0]}.*'; see docs/compatibility.md.")


@functools.cache
def load(module: str) -> ModuleType:
    """The native module ``embervision.<module>``, checked against the installed core."""
    try:
        native = importlib.import_module(f"embervision.{module}")
    except ImportError as error:
        raise ImportError(f"embervision's native module {module} failed to load ({error}). Reinstall "
                          f"embervision, or install a pair of wheels from one row of docs/compatibility.md.") from error
    check_built_for(module, native.built_for_core, ember.__version__)
    return native
