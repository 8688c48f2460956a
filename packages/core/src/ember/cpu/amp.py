"""ember.cpu.amp (torch.cpu.amp): CPU autocast with its device type fixed."""

from __future__ import annotations

import ember

from ..amp.autocast_mode import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """ember.autocast("cpu", ...), with torch.cpu.amp.autocast's defaults."""

    def __init__(self, enabled: bool = True, dtype: ember.dtype = ember.bfloat16, cache_enabled: bool = True) -> None:
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
