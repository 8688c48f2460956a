"""ember.utils.data: datasets, samplers, collation and the DataLoader, in the main process and
with worker processes (sample coverage, order, seeding, errors, timeouts, dead workers)."""

import collections
import math
import os
import random
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)


def _gen(seed):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    """0..n-1, split between workers by get_worker_info as a user would."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


# ---- datasets --------------------------------------------------------------------------------

def test_tensor_dataset_rows_and_length():
    x, y = ember.arange(12.).reshape(6, 2), ember.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    row, label = ds[4]
    np.testing.assert_array_equal(row.numpy(), [8.0, 9.0])
    assert int(label) == 4
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.arange(5))
    with pytest.raises(ValueError, match="first dimension"):
        TensorDataset(ember.tensor(1.0))


def test_concat_chain_and_subset():
    ds = Squares(3) + Squares(4)
    assert isinstance(ds, ConcatDataset) and len(ds) == 7
    assert [ds[i] for i in range(7)] == [0, 1, 4, 0, 1, 4, 9]
    assert ds[-1] == 9 and ds[-7] == 0
    with pytest.raises(IndexError, match="out of range"):
        ds[7]
    with pytest.raises(IndexError, match="out of range"):
        ds[-8]
    with pytest.raises(TypeError, match="ChainDataset"):
        ConcatDataset([Stream(3)])
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    sub = Subset(Squares(10), [9, 2, 5])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 4, 25]


def test_random_split_lengths_fractions_and_reproducibility():
    parts = random_split(Squares(10), [3, 7], generator=_gen(1))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(Squares(10), [3, 7], generator=_gen(1))
    assert again[0].indices == parts[0].indices
    # Fractions: the remainder of flooring goes one by one to the first parts.
    assert [len(p) for p in random_split(Squares(11), [0.5, 0.3, 0.2], generator=_gen(0))] == [6, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(Squares(10), [3, 6])
    with pytest.raises(ValueError, match="non-negative"):
        random_split(Squares(2), [3, -1])


# ---- samplers --------------------------------------------------------------------------------

def test_sequential_and_random_samplers():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    order = list(RandomSampler(range(50), generator=_gen(3)))
    assert sorted(order) == list(range(50)) and order != list(range(50))
    assert list(RandomSampler(range(50), generator=_gen(3))) == order
    # More samples than the dataset without replacement: whole permutations, then a cut one.
    long = list(RandomSampler(range(4), num_samples=10, generator=_gen(0)))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3]
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=200, generator=_gen(0)))
    assert len(drawn) == 200 and set(drawn) == {0, 1, 2}
    # Without a generator the default one decides, so ember.manual_seed reproduces it.
    ember.manual_seed(5)
    first = list(RandomSampler(range(20)))
    ember.manual_seed(5)
    assert list(RandomSampler(range(20))) == first
    assert list(RandomSampler(range(0))) == []
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)


def test_subset_random_and_weighted_samplers():
    picks = list(SubsetRandomSampler([10, 20, 30, 40], generator=_gen(2)))
    assert sorted(picks) == [10, 20, 30, 40]
    counts = collections.Counter(WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=_gen(0)))
    assert counts[0] == 0 and abs(counts[2] / 4000 - 0.75) < 0.03
    no_repeat = list(WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False, generator=_gen(0)))
    assert sorted(no_repeat) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], -1)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, "no")


# ---- collation -------------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_structures():
    batch = default_collate([ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])])
    np.testing.assert_array_equal(batch.numpy(), [[1, 2], [3, 4]])
    arrays = default_collate([np.ones((2,), np.float32), np.zeros((2,), np.float32)])
    assert arrays.dtype == ember.float32 and tuple(arrays.shape) == (2, 2)
    ints, floats, bools = default_collate([1, 2]), default_collate([0.5, 1.5]), default_collate([True, False])
    assert (ints.dtype, floats.dtype, bools.dtype) == (ember.int64, ember.float64, ember.bool)
    assert default_collate(["a", "b"]) == ["a", "b"]
    scalars = default_collate([np.float32(1), np.float32(2)])
    assert scalars.dtype == ember.float32 and scalars.tolist() == [1.0, 2.0]
    d = default_collate([{"x": 1, "s": "p"}, {"x": 2, "s": "q"}])
    assert d["x"].tolist() == [1, 2] and d["s"] == ["p", "q"]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.tolist() == [2.0, 4.0]
    # Tuples transpose into a list of fields, as in PyTorch.
    pairs = default_collate([(1, "a"), (2, "b")])
    assert isinstance(pairs, list) and pairs[0].tolist() == [1, 2] and pairs[1] == ["a", "b"]
    nested = default_collate([[[1, 2], 3.0], [[4, 5], 6.0]])
    assert nested[0][0].tolist() == [1, 4] and nested[1].tolist() == [3.0, 6.0]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors.*found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(ValueError, match="the batch is empty"):
        default_collate([])


def test_default_convert():
    out = default_convert({"a": np.arange(3), "b": [np.float64(2.5), "s"], "c": Point(np.ones(1), 7)})
    assert isinstance(out["a"], ember.Tensor) and out["a"].tolist() == [0, 1, 2]
    assert isinstance(out["b"][0], ember.Tensor) and out["b"][1] == "s"
    assert isinstance(out["c"], Point) and isinstance(out["c"].x, ember.Tensor) and out["c"].y == 7
    strings = np.array(["x"])
    assert default_convert(strings) is strings


# ---- the DataLoader, main process --------------------------------------------------------------

def test_loader_batches_and_length():
    ds = TensorDataset(ember.arange(10.), ember.arange(10))
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(DataLoader(ds, batch_size=4)) == 3 and len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # batch_size=None: samples one by one, NumPy converted but not stacked.
    unbatched = list(DataLoader([np.arange(2), np.arange(2) + 5], batch_size=None))
    assert [u.tolist() for u in unbatched] == [[0, 1], [5, 6]]
    custom = list(DataLoader(Squares(5), batch_size=2, collate_fn=sum))
    assert custom == [1, 13, 16]
    by_batch_sampler = list(DataLoader(Squares(5), batch_sampler=[[4, 0], [2]]))
    assert [b.tolist() for b in by_batch_sampler] == [[16, 0], [4]]
    assert len(DataLoader(Stream(10), batch_size=4)) == 3
    assert len(DataLoader(Stream(10), batch_size=4, drop_last=True)) == 2


def test_loader_iterable_dataset_main_process():
    batches = [b.tolist() for b in DataLoader(Stream(7), batch_size=3)]
    assert batches == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert get_worker_info() is None


def test_loader_argument_errors():
    ds = Squares(4)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=SequentialSampler(ds), shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
        (dict(batch_size=0), "batch_size should be a positive integer value"),
        (dict(num_workers=1, prefetch_factor=0), "prefetch_factor should be a positive integer value"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DataLoader(ds, **kwargs)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    loader = DataLoader(ds, batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.num_workers = 0  # not frozen, as in PyTorch


# ---- the DataLoader with worker processes ------------------------------------------------------

@pytest.mark.forks_workers
def test_workers_yield_every_sample_once_in_the_single_process_order():
    ds = TensorDataset(ember.arange(23.), ember.arange(23))
    for epoch_seed in (0, 1):
        single = [b[1].tolist() for b in DataLoader(ds, batch_size=4, shuffle=True, generator=_gen(epoch_seed))]
        multi = [b[1].tolist() for b in DataLoader(ds, batch_size=4, shuffle=True, generator=_gen(epoch_seed),
                                                   num_workers=2)]
        assert multi == single
        assert sorted(sum(multi, [])) == list(range(23))


@pytest.mark.forks_workers
def test_persistent_workers_stop_when_the_loader_is_dropped():
    # The loader owns its persistent iterator: no reference cycle may keep the workers alive (and
    # polling beside the main process) until a garbage-collector pass.
    import gc
    import multiprocessing

    gc.disable()
    try:
        loader = DataLoader(TensorDataset(ember.arange(40.0)), batch_size=4, num_workers=2, persistent_workers=True)
        for _ in range(2):
            assert sum(1 for _ in loader) == 10
        workers = list(loader._persistent_iterator._workers)
        assert all(w.is_alive() for w in workers)
        del loader
        for w in workers:
            w.join(timeout=10)
        assert not any(w.is_alive() for w in workers)
        assert not [c for c in multiprocessing.active_children() if c in workers]
    finally:
        gc.enable()


@pytest.mark.forks_workers
def test_persistent_workers_over_epochs_match_single_process():
    ds = TensorDataset(ember.arange(10))
    g0, g2 = _gen(7), _gen(7)
    single = DataLoader(ds, batch_size=3, shuffle=True, generator=g0)
    multi = DataLoader(ds, batch_size=3, shuffle=True, generator=g2, num_workers=2, persistent_workers=True,
                       prefetch_factor=1)
    for _ in range(3):
        a = [b[0].tolist() for b in single]
        b = [b[0].tolist() for b in multi]
        assert a == b and sorted(sum(b, [])) == list(range(10))
    workers = multi._persistent_iterator._workers
    assert all(w.is_alive() for w in workers)
    # Abandoning an epoch midway leaves prefetched batches behind; the next epoch ignores them.
    it = iter(multi)
    next(it)
    assert sorted(sum((b[0].tolist() for b in multi), [])) == list(range(10))
    multi._persistent_iterator._shutdown()
    assert not any(w.is_alive() for w in workers)


@pytest.mark.forks_workers
def test_iterable_dataset_sharded_by_worker_info():
    batches = [b.tolist() for b in DataLoader(Stream(11), batch_size=2, num_workers=3)]
    # Round-robin over workers: worker 0 gives [0, 3], worker 1 gives [1, 4], ...
    assert batches[:3] == [[0, 3], [1, 4], [2, 5]]
    assert sorted(sum(batches, [])) == list(range(11))
    unbatched = [int(x) for x in DataLoader(Stream(5), batch_size=None, num_workers=2)]
    assert unbatched == [0, 1, 2, 3, 4]


class SeedReport(Dataset):
    """Each sample reports which worker made it and what its random sources gave."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return (info.id, info.seed, info.num_workers, random.random(), float(np.random.rand()),
                float(ember.rand(())))


@pytest.mark.forks_workers
def test_workers_seed_every_random_source_from_the_base_seed():
    g = _gen(11)
    expected_base = int(ember.randint(0, 2**62, (), generator=_gen(11)))
    rows = list(DataLoader(SeedReport(), batch_size=None, num_workers=2, generator=g))
    assert len(rows) == 4
    first_of_worker = {}
    for worker_id, seed, n, *_ in rows:
        assert n == 2 and seed == expected_base + worker_id
    for row in rows:
        first_of_worker.setdefault(int(row[0]), row)
    for worker_id, row in first_of_worker.items():
        seed = expected_base + worker_id
        random.seed(seed)
        np.random.seed(seed % 2**32)
        ember.manual_seed(seed)
        assert tuple(row[3:]) == (random.random(), float(np.random.rand()), float(ember.rand(())))
    assert first_of_worker[0][3] != first_of_worker[1][3]


@pytest.mark.forks_workers
def test_worker_init_fn_runs_in_each_worker():
    class WhoInitialised(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return os.environ.get("EMBER_TEST_WORKER", "unset")

    def init(worker_id):
        os.environ["EMBER_TEST_WORKER"] = f"w{worker_id}"

    got = list(DataLoader(WhoInitialised(), batch_size=None, num_workers=2, worker_init_fn=init))
    assert got == ["w0", "w1"]


class Failing(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            raise KeyError(f"no sample {i}")
        return i


@pytest.mark.forks_workers
def test_worker_exception_reaches_the_main_process():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        next(it)
    with pytest.raises(KeyError, match="no sample 4"):
        list(DataLoader(Failing(), batch_size=2))


@pytest.mark.forks_workers
def test_unpicklable_batch_is_an_error_not_a_hang():
    loader = DataLoader(Squares(2), batch_size=None, num_workers=1, collate_fn=lambda x: (lambda: x))
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(loader)


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(5)
        return i


@pytest.mark.forks_workers
def test_timeout_raises():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 1 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=1))


class Dies(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        os._exit(3)


@pytest.mark.forks_workers
def test_dead_worker_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3"):
        list(DataLoader(Dies(), num_workers=1))


@pytest.mark.forks_workers
def test_out_of_order_delivery_still_covers_the_epoch():
    got = sorted(int(x) for b in DataLoader(Squares(9), batch_size=2, num_workers=2, in_order=False) for x in b)
    assert got == sorted(i * i for i in range(9))


def test_spawned_workers():
    ds = TensorDataset(ember.arange(6))
    got = [b[0].tolist() for b in DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn")]
    assert got == [[0, 1, 2, 3], [4, 5]]


def test_pin_memory_is_accepted_on_cpu():
    batch = next(iter(DataLoader(TensorDataset(ember.ones(3, 2)), batch_size=3, pin_memory=True)))
    assert math.isclose(float(batch[0].sum()), 6.0)


class ParallelWork(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return float((ember.ones(1 << 20) * 2).sum())


@pytest.mark.forks_workers
def test_forked_workers_can_run_threaded_ops():
    # The parent's thread pool exists before the fork; a child that asks for threads again must
    # build its own instead of waiting on the parent's (Note [thread pool after fork]).
    previous = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        (ember.ones(1 << 20) * 2).sum()
        loader = DataLoader(ParallelWork(), batch_size=None, num_workers=1, timeout=30,
                            worker_init_fn=lambda _: ember.set_num_threads(2))
        assert list(loader) == [2.0 * (1 << 20)] * 2
    finally:
        ember.set_num_threads(previous)
