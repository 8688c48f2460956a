"""ember.backends.mps (torch.backends.mps): Ember has no Metal backend."""

from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos13_or_newer"]


def is_available() -> bool:
    """Whether an MPS device can be used: never, Ember has no Metal backend."""
    return False


def is_built() -> bool:
    """Whether this build includes the MPS backend: no."""
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    return False
