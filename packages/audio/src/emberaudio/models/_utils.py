"""Input checks shared by the models."""

from __future__ import annotations

import ember


def _check_lengths(lengths: ember.Tensor, batch: int, limit: int, what: str) -> None:
    """``lengths`` must be an integer (batch,) tensor with values in [0, limit] (``what`` names
    the limit in the message)."""
    if not isinstance(lengths, ember.Tensor) or lengths.dim() != 1 or lengths.shape[0] != batch:
        shape = tuple(lengths.shape) if isinstance(lengths, ember.Tensor) else type(lengths).__name__
        raise ValueError(f"lengths must be a 1-D tensor of size {batch} (batch size), got {shape}")
    if lengths.dtype.is_floating_point or lengths.dtype.is_complex:
        raise TypeError(f"lengths must be an integer tensor, got {lengths.dtype}")
    if batch and (int(lengths.min().item()) < 0 or int(lengths.max().item()) > limit):
        raise ValueError(f"lengths must lie in [0, {limit}] ({what}), got {lengths.tolist()}")
