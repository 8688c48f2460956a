"""Randomness of DataLoader2 (``torchdata.dataloader2.random``): see Note [counter-based seeds]
in ``emberdata._seeds``."""

from emberdata._seeds import SeedGenerator, derive

__all__ = ["SeedGenerator", "derive"]
