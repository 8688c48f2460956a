"""MultiheadAttention and the Transformer layers (torch.nn)."""

from __future__ import annotations

__all__: list[str] = []
