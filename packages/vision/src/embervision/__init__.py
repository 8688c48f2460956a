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

__version__ = "0.1.0"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# embervision is pure Python on core's kernels (for now: its native kernels will pin a core
# minor), so release.toml gives it a tested core range, which pyproject.toml pins and
# _SUPPORTED_CORE repeats; ember.utils._packages checks it at import.
_SUPPORTED_CORE = (">=0.2.1", "<0.3")


def _check_core() -> None:
    wanted = ",".join(_SUPPORTED_CORE)
    try:
        import ember  # noqa: F401  (the ImportError names the missing core)
        from ember.utils._packages import check_supported_core
    except ImportError as error:
        raise ImportError(f"embervision {__version__} needs ember {wanted} ({error}): pip install 'ember{wanted}'; "
                          f"see docs/compatibility.md") from error
    check_supported_core("embervision", __version__, _SUPPORTED_CORE)


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
