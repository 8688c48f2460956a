"""embervision: vision for Ember, in the shape of torchvision.

Models with the multi-weight API (``embervision.models``), detection and box ops
(``embervision.ops``), transforms v1 and v2 with ``tv_tensors`` (``embervision.transforms``,
``embervision.tv_tensors``), datasets (``embervision.datasets``) and drawing utilities
(``embervision.utils``). torchvision code ports by
replacing ``torchvision`` with ``embervision`` and ``torch`` with ``ember``.

Importing ``embervision`` checks that the installed ``ember`` core is in the tested range (Note
[core compatibility check]).
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# embervision has native code (detection ops, image codecs), so release.toml pins it to one core
# minor (`core = "0.2"`), which pyproject.toml pins and _SUPPORTED_CORE repeats. Models and
# transforms load without the native modules; embervision._native loads those on first use and
# checks the core version each was compiled against.
_SUPPORTED_CORE = "0.2"


def _supported_range() -> tuple[str, str]:
    major, minor = map(int, _SUPPORTED_CORE.split("."))
    return f">={major}.{minor}", f"<{major}.{minor + 1}"


def _check_core() -> None:
    try:
        import ember  # noqa: F401  (the ImportError names the missing core)
        from ember.utils._packages import check_supported_core
    except ImportError as error:
        raise ImportError(f"embervision {__version__} needs ember {_SUPPORTED_CORE}.x ({error}): "
                          f"pip install 'ember=={_SUPPORTED_CORE}.*'; see docs/compatibility.md") from error
    check_supported_core("embervision", __version__, _supported_range())


_check_core()

_SUBMODULES = ("datasets", "io", "models", "ops", "transforms", "tv_tensors", "utils")

__all__ = ["__version__", *_SUBMODULES]


def __getattr__(name: str) -> object:
    # Subpackages load on first use.
    if name in _SUBMODULES:
        return importlib.import_module(f"embervision.{name}")
    raise AttributeError(f"module 'embervision' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])
