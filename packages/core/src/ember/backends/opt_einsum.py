"""ember.backends.opt_einsum (torch.backends.opt_einsum): PyTorch hands einsum's contraction order
to the opt_einsum package when it is installed. Ember's einsum picks its own order (greedily, the
pair of operands with the smallest result first; ember/_products.py) and never uses the package,
so is_available() is False, `enabled` False and `strategy` None, as PyTorch reports without it."""

from __future__ import annotations

__all__ = ["enabled", "get_opt_einsum", "is_available", "strategy"]

enabled = False
strategy = None


def is_available() -> bool:
    return False


def get_opt_einsum():
    """The opt_einsum package einsum would use: None."""
    return None
