"""What DataLoader2 hands to ``worker_init_fn`` and ``worker_reset_fn``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkerInfo:
    """The worker a pipeline runs in (``torchdata.dataloader2.utils.WorkerInfo``)."""

    num_workers: int
    worker_id: int
