"""DataLoader2 and its reading services (``torchdata.dataloader2``)."""

from emberdata.dataloader2 import adapter
from emberdata.dataloader2.dataloader2 import DataLoader2, DataLoader2Iterator
from emberdata.dataloader2.random import SeedGenerator
from emberdata.dataloader2.reading_service import (
    CheckpointableReadingServiceInterface,
    DistributedReadingService,
    InProcessReadingService,
    MultiProcessingReadingService,
    ReadingServiceInterface,
    SequentialReadingService,
)
from emberdata.dataloader2.utils import WorkerInfo

__all__ = [
    "CheckpointableReadingServiceInterface",
    "DataLoader2",
    "DataLoader2Iterator",
    "DistributedReadingService",
    "InProcessReadingService",
    "MultiProcessingReadingService",
    "ReadingServiceInterface",
    "SeedGenerator",
    "SequentialReadingService",
    "WorkerInfo",
    "adapter",
]
