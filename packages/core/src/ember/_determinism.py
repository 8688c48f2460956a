"""use_deterministic_algorithms and friends (torch.use_deterministic_algorithms).

Ember's CPU kernels are deterministic whatever the setting: parallel_for cuts work into chunks that
depend on the problem size only, never on the thread count, and per-chunk results are combined in
chunk order (Note [deterministic parallelism] in native/include/ember/parallel.h); scatter and
index_put accumulate in index order. No CPU op has a nondeterministic implementation to refuse, so
the mode is recorded and reported - for scripts, and for a CUDA backend to consult.
"""

from __future__ import annotations

import builtins

__all__ = ["are_deterministic_algorithms_enabled", "get_deterministic_debug_mode",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "use_deterministic_algorithms"]

_state = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Asks for deterministic algorithms (mode=True) or allows any (False); warn_only would make a
    nondeterministic op warn rather than raise."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _state["enabled"] = mode
    _state["warn_only"] = warn_only


def are_deterministic_algorithms_enabled() -> builtins.bool:
    return _state["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> builtins.bool:
    return _state["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default": allow any algorithm; 1/"warn": deterministic, warn only; 2/"error": deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, builtins.int) or isinstance(debug_mode, builtins.bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")


def get_deterministic_debug_mode() -> builtins.int:
    if not _state["enabled"]:
        return 0
    return 1 if _state["warn_only"] else 2
