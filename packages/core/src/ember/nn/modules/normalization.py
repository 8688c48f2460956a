"""LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, RMSNorm, LocalResponseNorm (torch.nn)."""

from __future__ import annotations

__all__: list[str] = []
