"""Properties of sharding and seeding: for any dataset size, batch size, number of workers and
number of ranks, the shards of an epoch hold every sample exactly once, and one seed gives one
run. Each instance runs exactly what a worker runs (ShardingFilter after DistributedReadingService
set the rank, then the DataLoader's start-of-epoch hook); a few examples also run real worker
processes."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.utils.data import DataLoader
from emberdata.dataloader2 import DataLoader2, MultiProcessingReadingService
from emberdata.datapipes.iter import SHARDING_PRIORITIES, IterableWrapper
from emberdata.datapipes.utils import apply_sharding


def build(n, buffer_size):
    return IterableWrapper(range(n)).shuffle(buffer_size=buffer_size).sharding_filter().shuffle(
        buffer_size=3)


def worker_batches(n, buffer_size, batch_size, ranks, rank, workers, worker, seed):
    """The batches worker `worker` of rank `rank` loads in an epoch with seed `seed`."""
    dp = build(n, buffer_size)
    apply_sharding(dp, ranks, rank, SHARDING_PRIORITIES.DISTRIBUTED)
    dp._dataloader_start_epoch(seed, worker, workers, batch_size)
    stream = list(dp)
    return [stream[i:i + batch_size] for i in range(0, len(stream), batch_size)]


def epoch(n, buffer_size, batch_size, ranks, workers, seed):
    return {
        (r, w): worker_batches(n, buffer_size, batch_size, ranks, r, workers, w, seed)
        for r in range(ranks)
        for w in range(workers)
    }


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 120),
    buffer_size=st.integers(1, 150),
    batch_size=st.integers(1, 9),
    ranks=st.integers(1, 4),
    workers=st.integers(1, 4),
    seed=st.integers(0, 2**62),
)
def test_union_of_all_shards_is_the_dataset_once(n, buffer_size, batch_size, ranks, workers, seed):
    shards = epoch(n, buffer_size, batch_size, ranks, workers, seed)
    loaded = Counter(x for batches in shards.values() for batch in batches for x in batch)
    assert loaded == Counter(range(n))
    for batches in shards.values():
        assert all(len(b) == batch_size for b in batches[:-1])
    assert epoch(n, buffer_size, batch_size, ranks, workers, seed) == shards


@settings(max_examples=40, deadline=None)
@given(n=st.integers(20, 120), ranks=st.integers(1, 3), workers=st.integers(1, 3),
       seed=st.integers(0, 2**62))
def test_another_seed_another_order(n, ranks, workers, seed):
    a = epoch(n, 200, 4, ranks, workers, seed)
    b = epoch(n, 200, 4, ranks, workers, seed + 1)
    assert a != b


@settings(max_examples=6, deadline=None)
@given(n=st.integers(0, 60), batch_size=st.integers(1, 8), workers=st.sampled_from([0, 2]),
       seed=st.integers(0, 2**31))
def test_real_dataloader_workers(n, batch_size, workers, seed):
    def load():
        loader = DataLoader(IterableWrapper(range(n)).shuffle().sharding_filter(),
                            batch_size=batch_size, num_workers=workers,
                            generator=ember.Generator().manual_seed(seed))
        return [b.tolist() for b in loader]

    first = load()
    assert sorted(x for b in first for x in b) == list(range(n))
    assert load() == first


@settings(max_examples=4, deadline=None)
@given(n=st.integers(0, 60), workers=st.sampled_from([1, 2]), seed=st.integers(0, 2**31))
def test_real_dataloader2_workers(n, workers, seed):
    def load():
        loader = DataLoader2(IterableWrapper(range(n)).shuffle().sharding_filter(),
                             reading_service=MultiProcessingReadingService(workers))
        loader.seed(seed)
        try:
            return list(loader)
        finally:
            loader.shutdown()

    first = load()
    assert sorted(first) == list(range(n))
    assert load() == first
