"""DistributedReadingService with two real rank processes on this machine (rank and world size
given explicitly; rank 0 shares each epoch's seeds over TCP on 127.0.0.1)."""

import multiprocessing
import socket

import pytest

import ember
from emberdata.dataloader2 import (
    DataLoader2,
    DistributedReadingService,
    MultiProcessingReadingService,
    SequentialReadingService,
)
from emberdata.dataloader2._channel import ChannelError
from emberdata.datapipes.iter import IterableWrapper


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world_size, port, workers, seed, results):
    """One rank: two epochs of a shuffled, sharded pipeline."""
    try:
        ember.manual_seed(1000 + rank)  # the ranks' own generators disagree on purpose
        dist = DistributedReadingService(timeout=30, rank=rank, world_size=world_size,
                                         master_port=port)
        service = dist if workers == 0 else SequentialReadingService(
            dist, MultiProcessingReadingService(num_workers=workers))
        loader = DataLoader2(IterableWrapper(range(50)).shuffle().sharding_filter(),
                             reading_service=service)
        if seed is not None:
            loader.seed(seed)
        epochs = [list(loader) for _ in range(2)]
        loader.shutdown()
        results.put((rank, epochs))
    except BaseException as error:  # noqa: BLE001 (reported to the test)
        results.put((rank, repr(error)))


def run_ranks(workers, seed, world_size=2):
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    port = free_port()
    processes = [context.Process(target=rank_main, args=(r, world_size, port, workers, seed, results))
                 for r in range(world_size)]
    for p in processes:
        p.start()
    out = dict(results.get(timeout=60) for _ in processes)
    for p in processes:
        p.join(timeout=10)
    for rank, value in out.items():
        assert not isinstance(value, str), f"rank {rank} failed: {value}"
    return [out[r] for r in range(world_size)]


@pytest.mark.parametrize(("workers", "seed"), [(0, 5), (0, None), (2, 5)])
def test_two_ranks_split_every_epoch_exactly_once(workers, seed):
    ranks = run_ranks(workers, seed)
    for epoch in range(2):
        shards = [ranks[r][epoch] for r in range(2)]
        assert sorted(shards[0] + shards[1]) == list(range(50))
        instances = max(workers, 1)  # worker w of rank r keeps shard w + workers * r
        assert [len(shard) for shard in shards] == [
            sum(len(range(w + instances * r, 50, 2 * instances)) for w in range(instances))
            for r in range(2)
        ]
    assert ranks[0][0] != ranks[0][1]  # a new order each epoch
    if seed is not None:
        assert run_ranks(workers, seed) == ranks  # one seed, one run


def test_two_ranks_agree_with_the_single_process_order():
    ranks = run_ranks(0, 5)
    loader = DataLoader2(IterableWrapper(range(50)).shuffle().sharding_filter())
    loader.seed(5)
    single = [list(loader) for _ in range(2)]
    for epoch in range(2):
        # Rank r holds positions r, r + 2, ... of the order every rank shuffled alike.
        assert ranks[0][epoch] == single[epoch][0::2]
        assert ranks[1][epoch] == single[epoch][1::2]


def test_a_missing_rank_times_out():
    service = DistributedReadingService(timeout=0.5, rank=1, world_size=2, master_port=free_port())
    with pytest.raises(ChannelError, match="rank 1 could not reach rank 0 at 127.0.0.1:\\d+ within 0.5 s"):
        service.initialize(IterableWrapper(range(4)).sharding_filter())
    lonely_root = DistributedReadingService(timeout=0.5, rank=0, world_size=2, master_port=free_port())
    with pytest.raises(ChannelError, match="rank 0 waited 0.5 s for the other ranks .* 0 of 1 did"):
        lonely_root.initialize(IterableWrapper(range(4)).sharding_filter())


def test_rank_settings(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("MASTER_PORT", "29999")
    service = DistributedReadingService()
    assert (service.rank, service.world_size, service.master_port) == (1, 3, 29999)
    monkeypatch.delenv("MASTER_PORT")
    with pytest.raises(ValueError, match="needs master_port \\(or MASTER_PORT\\)"):
        DistributedReadingService()
    with pytest.raises(ValueError, match="expected 0 <= rank < world_size, but got rank=2 and world_size=2"):
        DistributedReadingService(rank=2, world_size=2, master_port=1)
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(ValueError, match="environment variable RANK='one' is not an integer"):
        DistributedReadingService()
    with pytest.raises(ValueError, match="expected a positive timeout"):
        DistributedReadingService(timeout=0, rank=0, world_size=1)
    single = DistributedReadingService(rank=0, world_size=1)
    assert list(DataLoader2(IterableWrapper(range(3)), reading_service=single)) == [0, 1, 2]
