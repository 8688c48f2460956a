"""ember.nn.parallel: DistributedDataParallel (over ember.distributed).

Loaded on first use, so that `import ember` does not import ember.distributed."""

from __future__ import annotations

from typing import Any

__all__ = ["DistributedDataParallel"]


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        from .distributed import DistributedDataParallel
        return DistributedDataParallel
    raise AttributeError(f"module 'ember.nn.parallel' has no attribute {name!r}")
