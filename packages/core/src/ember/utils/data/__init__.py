"""ember.utils.data (torch.utils.data): datasets, samplers, collation and the DataLoader."""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["StackDataset", "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "Subset", "random_split",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler", "default_collate", "default_convert", "DataLoader", "get_worker_info"]
