"""The DataLoader's pipeline protocol (Note [DataLoader pipeline protocol]): an iterable dataset
with `_dataloader_shuffle` / `_dataloader_start_epoch` is told the shuffle setting once and,
before every epoch in whichever process iterates it, the epoch's seed, its worker id, the
number of workers and the batch size. Tested with a small stand-alone dataset (no emberdata)."""

import random

import pytest

import ember
from ember.utils.data import DataLoader, IterableDataset


def _gen(seed):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


class Pipeline(IterableDataset):
    """Shuffles 0..n-1 with the epoch's seed, then keeps its worker's runs of batch_size items
    (what emberdata's shuffle().sharding_filter() does), and reports what it was told."""

    def __init__(self, n):
        self.n = n
        self.shuffle = None
        self.told = None

    def _dataloader_shuffle(self, shuffle):
        self.shuffle = shuffle
        return self

    def _dataloader_start_epoch(self, seed, worker_id, num_workers, batch_size):
        self.told = (seed, worker_id, num_workers, batch_size)

    def __iter__(self):
        seed, worker_id, num_workers, batch_size = self.told
        order = list(range(self.n))
        if self.shuffle:
            random.Random(seed).shuffle(order)
        block, n = batch_size or 1, max(num_workers, 1)
        for i, x in enumerate(order):
            if (i // block) % n == worker_id:
                yield (x, seed, worker_id, num_workers, batch_size)

    def __len__(self):
        return self.n


def _samples(loader):
    return [tuple(int(v) if v is not None else None for v in s) for s in loader]


def test_shuffle_setting_is_passed_once_and_the_dataset_kept():
    dataset = Pipeline(10)
    loader = DataLoader(dataset, batch_size=None, shuffle=True)
    assert dataset.shuffle is True and loader.dataset is dataset
    DataLoader(dataset, batch_size=None, shuffle=False)
    assert dataset.shuffle is False
    DataLoader(dataset, batch_size=None)  # shuffle=None leaves it alone
    assert dataset.shuffle is False


def test_iterable_dataset_without_the_hook_still_refuses_shuffle():
    class Plain(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Plain(), shuffle=True)


def test_main_process_is_told_seed_and_worker_zero():
    loader = DataLoader(Pipeline(6), batch_size=None, shuffle=True, generator=_gen(0))
    out = _samples(loader)
    assert sorted(x for x, *_ in out) == list(range(6))
    assert {tuple(rest[1:]) for _, *rest in out} == {(0, 0, None)}


@pytest.mark.forks_workers
@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_workers_are_told_the_same_seed_and_their_id(num_workers):
    loader = DataLoader(Pipeline(30), batch_size=None, shuffle=True, num_workers=num_workers,
                        generator=_gen(4))
    out = _samples(loader)
    assert len({seed for _, seed, *_ in out}) == 1
    assert {(w, n) for _, _, w, n, _ in out} == {(w, num_workers) for w in range(num_workers)}
    single = _samples(DataLoader(Pipeline(30), batch_size=None, shuffle=True, generator=_gen(4)))
    assert [x for x, *_ in out] == [x for x, *_ in single]  # same order for any worker count


@pytest.mark.forks_workers
def test_batch_size_is_passed_and_batches_match_the_main_process():
    def xs(loader):
        return [b[0].tolist() for b in loader]

    with_workers = DataLoader(Pipeline(23), batch_size=4, shuffle=True, num_workers=2,
                              generator=_gen(9))
    main = DataLoader(Pipeline(23), batch_size=4, shuffle=True, generator=_gen(9))
    assert xs(with_workers) == xs(main)
    assert {int(s) for b in with_workers for s in b[4]} == {4}


@pytest.mark.forks_workers
def test_each_epoch_gets_a_new_seed_also_with_persistent_workers():
    for persistent in (False, True):
        loader = DataLoader(Pipeline(8), batch_size=None, shuffle=True, num_workers=2,
                            persistent_workers=persistent, generator=_gen(1))
        seeds = [{seed for _, seed, *_ in _samples(loader)} for _ in range(3)]
        assert all(len(s) == 1 for s in seeds)
        assert len(set.union(*seeds)) == 3
