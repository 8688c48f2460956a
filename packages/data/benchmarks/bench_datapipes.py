"""A map -> shuffle -> batch -> collate pipeline over 1,000,000 small samples, with 0 and 2
worker processes: emberdata's DataPipes in ember's DataLoader beside the same pipeline written
for PyTorch's DataLoader over a map-style Dataset (its sampler shuffles, its workers map and
collate), in one process. Prints both times and ratio = Ember time / PyTorch time (lower is
better; 1.00 is parity).

Ember's pipeline shuffles first and maps after the sharding filter, so each worker maps only its
own samples, as PyTorch's workers do; a pure map commutes with the shuffle, so the samples are
the same. torchdata 0.7's pipes need torch 2.1 and do not install beside torch 2.13; that row is
left out.
"""

from __future__ import annotations

import sys
import time

import ember
from ember.utils.data import DataLoader
from emberdata.datapipes.iter import IterableWrapper

N = 1_000_000
BATCH = 64
BUFFER = 10_000
REPEAT = 2


def sample(i: int) -> tuple[int, float]:
    """A small sample: an id and a value."""
    return i, i * 0.5


def ember_loader(num_workers: int) -> DataLoader:
    dp = (
        IterableWrapper(range(N), deepcopy=False)
        .shuffle(buffer_size=BUFFER)
        .sharding_filter()
        .map(sample)
        .batch(BATCH)
        .collate()
    )
    return DataLoader(dp, batch_size=None, num_workers=num_workers,
                      generator=ember.Generator().manual_seed(0))


def torch_loader(num_workers: int):
    import torch
    from torch.utils.data import DataLoader as TorchDataLoader
    from torch.utils.data import Dataset

    class Samples(Dataset):
        def __len__(self) -> int:
            return N

        def __getitem__(self, i: int) -> tuple[int, float]:
            return sample(i)

    return TorchDataLoader(Samples(), batch_size=BATCH, shuffle=True, num_workers=num_workers,
                           generator=torch.Generator().manual_seed(0))


def epoch_seconds(loader) -> float:
    best = float("inf")
    for _ in range(REPEAT):
        start = time.perf_counter()
        count = 0
        for ids, _values in loader:
            count += len(ids)
        best = min(best, time.perf_counter() - start)
        assert count == N, count
    return best


def main() -> None:
    try:
        import torch
    except ImportError:
        torch = None
        print("torch is not installed: the PyTorch rows are left out (pip install torch==2.13.0)")
    else:
        torch.set_num_threads(1)
    ember.set_num_threads(1)
    print(f"map -> shuffle(buffer {BUFFER:,}) -> batch({BATCH}) -> collate, {N:,} samples; "
          f"best of {REPEAT} epochs; python {sys.version.split()[0]}")
    print(f"{'workers':>7s} {'ember':>9s} {'pytorch':>9s} {'ratio':>7s}")
    for workers in (0, 2):
        ours = epoch_seconds(ember_loader(workers))
        if torch is None:
            print(f"{workers:7d} {ours:8.2f}s {'-':>9s} {'-':>7s}")
            continue
        theirs = epoch_seconds(torch_loader(workers))
        print(f"{workers:7d} {ours:8.2f}s {theirs:8.2f}s {ours / theirs:7.2f}")


if __name__ == "__main__":
    main()
