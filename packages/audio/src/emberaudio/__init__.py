"""emberaudio: audio for Ember, in the shape of torchaudio.

FFmpeg-backed I/O (``emberaudio.io``: StreamReader, StreamWriter; ``load``, ``save``, ``info``),
spectral and filtering functions and their modules (``emberaudio.functional``,
``emberaudio.transforms``, beamforming included), speech models (``emberaudio.models``: Emformer,
RNN-T, Conformer, Wav2Vec2/HuBERT) and the CTC beam-search decoder
(``emberaudio.models.decoder``). torchaudio code ports by replacing ``torchaudio`` with
``emberaudio`` and ``torch`` with ``ember``.

Importing ``emberaudio`` checks that the installed ``ember`` core is the supported minor; each
native module checks, when first loaded, that it was built against that minor too (Note [core
compatibility check]).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Note [core compatibility check]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# emberaudio has native code, so release.toml pins it to one core minor (`core = "0.2"`), which
# pyproject.toml pins and _SUPPORTED_CORE repeats. The pure-Python parts (functional, transforms,
# models) load without the native modules; emberaudio._native loads those on first use and checks
# the core version each was compiled against.
_SUPPORTED_CORE = "0.2"


def _supported_range() -> tuple[str, str]:
    major, minor = map(int, _SUPPORTED_CORE.split("."))
    return f">={major}.{minor}", f"<{major}.{minor + 1}"


def _check_core() -> None:
    try:
        import ember  # noqa: F401  (the ImportError names the missing core)
        from ember.utils._packages import check_supported_core
    except ImportError as error:
        raise ImportError(f"emberaudio {__version__} needs ember {_SUPPORTED_CORE}.x ({error}): "
                          f"pip install 'ember=={_SUPPORTED_CORE}.*'; see docs/compatibility.md") from error
    check_supported_core("emberaudio", __version__, _supported_range())


_check_core()

_SUBMODULES = ("functional", "io", "models", "transforms")
# Functions loaded from a private module on first use (name -> module).
_LAZY = {"load": "_backend", "save": "_backend", "info": "_backend", "AudioMetaData": "_backend"}

__all__ = ["__version__", *_SUBMODULES, *_LAZY]


def __getattr__(name: str) -> object:
    # Subpackages load on first use.
    if name in _SUBMODULES:
        return importlib.import_module(f"emberaudio.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(f"emberaudio.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'emberaudio' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES, *_LAZY])
