"""embertext: text for Ember, in the shape of torchtext.

C++ tokenizers (BERT WordPiece, GPT-2 and CLIP byte-level BPE; the library ``libembertext``
ships in this wheel with its CMake package, see ``cmake_prefix_path``), vocabularies and
transforms usable in emberdata pipes and DataLoader workers, datasets as DataPipes, and encoder
models on ember.nn.

Importing ``embertext`` checks that the installed ``ember`` core is the one its native module
was built for (see Note [core compatibility check]).
"""

from __future__ import annotations

import importlib
import os
import re

__version__ = "0.1.0"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# embertext has native code, so release.toml pins it to one core minor (`core = "0.2"`), as
# torchvision and torchaudio wheels are pinned to one torch minor. _SUPPORTED_CORE repeats that
# pin, and embertext._C records the core version it was compiled against. A mismatch (a core
# installed with --no-deps, or upgraded after embertext) fails here, at import, with a message
# that says what to install, instead of failing later in some call.
_SUPPORTED_CORE = "0.2"
_COMPAT_PAGE = "docs/compatibility.md (the Ember compatibility page)"

_RELEASE = re.compile(r"\s*v?(\d+)\.(\d+)")


def _minor(version: str) -> str | None:
    match = _RELEASE.match(version)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


def _check_core_version(core_version: str, built_for: str | None = None) -> None:
    """Raise ImportError unless ``core_version`` is in the supported minor (and, when given, the
    minor this build of embertext was compiled against)."""
    wanted = _SUPPORTED_CORE if built_for is None else _minor(built_for)
    if _minor(core_version) != _SUPPORTED_CORE or _minor(core_version) != wanted:
        built = f" (its native module was built against ember {built_for})" if built_for else ""
        raise ImportError(
            f"embertext {__version__} requires ember {_SUPPORTED_CORE}.x{built}, but ember "
            f"{core_version} is installed. Install a matching pair, e.g. "
            f"pip install 'ember=={_SUPPORTED_CORE}.*', or the embertext release built for ember "
            f"{core_version}; see {_COMPAT_PAGE}."
        )


def _check_core() -> None:
    try:
        import ember
    except ModuleNotFoundError as error:
        if error.name != "ember":
            raise ImportError(
                f"embertext requires ember {_SUPPORTED_CORE}.x, but importing ember failed: {error}"
            ) from error
        raise ImportError(
            f"embertext {__version__} requires ember {_SUPPORTED_CORE}.x, which is not installed: "
            f"pip install 'ember=={_SUPPORTED_CORE}.*'; see {_COMPAT_PAGE}."
        ) from error
    core_version = getattr(ember, "__version__", None)
    if core_version is None:
        raise ImportError(
            f"embertext {__version__} requires ember {_SUPPORTED_CORE}.x, but the installed ember "
            f"has no __version__; see {_COMPAT_PAGE}."
        )
    _check_core_version(str(core_version))
    try:
        from embertext import _C
    except ImportError as error:
        raise ImportError(
            f"embertext's native module failed to load ({error}). Reinstall embertext, or install "
            f"the pair of wheels from one row of {_COMPAT_PAGE}."
        ) from error
    _check_core_version(str(core_version), _C.built_for_core)


_check_core()

cmake_prefix_path = os.path.join(os.path.dirname(__file__), "share", "cmake")
"""Give this to CMake (``-DCMAKE_PREFIX_PATH=...``) to ``find_package(EmberText)``: the C++
tokenizer library ``EmberText::tokenizers``, usable without Python."""

_SUBMODULES = ("data", "datasets", "functional", "models", "transforms", "vocab")

__all__ = ["__version__", "cmake_prefix_path", *_SUBMODULES]


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        return importlib.import_module(f"embertext.{name}")
    raise AttributeError(f"module 'embertext' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])
