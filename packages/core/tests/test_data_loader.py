"""ember.utils.data: datasets, samplers, collation and the DataLoader, in the main process and
with worker processes (order, exactly-once delivery, seeding, errors, timeouts, persistent
workers, shutdown). Errors are asserted by type and PyTorch's message."""

import collections
import gc
import multiprocessing
import os
import random
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import ember
import ember.utils.data
from ember.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from ember.utils.data.dataloader import _random_seed

Point = collections.namedtuple("Point", ["x", "y"])


def _gen(seed):
    return ember.Generator().manual_seed(seed)


def _flat(batches):
    return [v for b in batches for v in b.tolist()]


# ---------------------------------------------------------------------------------------------
# datasets used across tests (module level: picklable by reference for the result queue)


class Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


class PidDataset(Dataset):
    """Each sample: (index, pid of the process that fetched it)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return ember.tensor([i, os.getpid()])


class Failing(Dataset):
    def __init__(self, bad, exc):
        self.bad, self.exc = bad, exc

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc
        return i


class Sleepy(Dataset):
    def __init__(self, delays):
        self.delays = delays

    def __len__(self):
        return len(self.delays)

    def __getitem__(self, i):
        time.sleep(self.delays[i])
        return i


class Stream(IterableDataset):
    """range(n), sharded across workers when shard=True."""

    def __init__(self, n, shard=True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class SizedStream(Stream):
    def __len__(self):
        return self.n


class SeedProbe(Dataset):
    """What a worker's random sources give for its first draws, and its WorkerInfo."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return {
            "id": info.id,
            "seed": info.seed,
            "num_workers": info.num_workers,
            "ember": ember.rand(2).tolist(),
            "numpy": np.random.randint(0, 2**31, size=2).tolist(),
            "random": random.random(),
        }


class WithGetitems(Dataset):
    def __init__(self):
        self.batched_calls = 0

    def __len__(self):
        return 10

    def __getitem__(self, i):
        raise AssertionError("the loader should use __getitems__")

    def __getitems__(self, indices):
        return [i * 10 for i in indices]


class ModuleError(Exception):
    pass


class TwoArgError(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


# ---------------------------------------------------------------------------------------------
# datasets


def test_dataset_base_and_add():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        Dataset()[0]
    both = Range(2) + Range(3)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 0, 1, 2]
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 0, 1, 2]


def test_tensor_dataset():
    x, y = ember.arange(12).reshape(4, 3), ember.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    a, b = ds[2]
    assert a.tolist() == [6, 7, 8] and b.item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.zeros(3))


def test_stack_dataset():
    t = StackDataset(Range(3), TensorDataset(ember.arange(3)))
    assert len(t) == 3 and t[1][0] == 1 and t[1][1][0].item() == 1
    d = StackDataset(a=Range(2), b=Range(2))
    assert d[1] == {"a": 1, "b": 1}
    assert d.__getitems__([0, 1]) == [{"a": 0, "b": 0}, {"a": 1, "b": 1}]
    assert StackDataset(Range(10), WithGetitems()).__getitems__([1]) == [(1, 10)]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Range(2), Range(3))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset(Range(2), b=Range(2))


def test_concat_dataset():
    ds = ConcatDataset([Range(2), Range(0), Range(3)])
    assert len(ds) == 5 and ds.cumulative_sizes == [2, 2, 5]
    assert [ds[i] for i in range(5)] == [0, 1, 0, 1, 2]
    assert ds[-1] == 2 and ds[-5] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Range(2), Stream(2)])
    with pytest.warns(DeprecationWarning, match="cummulative_sizes attribute is renamed to cumulative_sizes"):
        assert ds.cummulative_sizes == [2, 2, 5]


def test_chain_dataset():
    ds = ChainDataset([SizedStream(2), SizedStream(3)])
    assert list(ds) == [0, 1, 0, 1, 2] and len(ds) == 5
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Range(2)]))
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(ChainDataset([Range(2)]))


def test_subset_and_getitems():
    sub = Subset(Range(10), [7, 3, 5])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [7, 3, 5]
    assert sub.__getitems__([2, 0]) == [5, 7]
    batched = Subset(WithGetitems(), [4, 2, 9])
    assert batched.__getitems__([0, 2]) == [40, 90]
    # the loader fetches whole batches through __getitems__ when the dataset has it
    assert [b.tolist() for b in DataLoader(WithGetitems(), batch_size=4)] == [[0, 10, 20, 30], [40, 50, 60, 70], [80, 90]]
    assert [b.tolist() for b in DataLoader(batched, batch_size=2)] == [[40, 20], [90]]


def test_random_split_lengths_and_fractions():
    ds = Range(10)
    parts = random_split(ds, [3, 7], generator=_gen(0))
    assert [len(p) for p in parts] == [3, 7]
    values = [p[i] for p in parts for i in range(len(p))]
    assert sorted(values) == list(range(10))  # disjoint and exhaustive
    # reproducible with the same generator seed, a permutation otherwise
    again = random_split(ds, [3, 7], generator=_gen(0))
    assert [list(p.indices) for p in parts] == [list(p.indices) for p in again]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    # fractions: floor each, then hand the remainder out round-robin from the first split
    assert [len(p) for p in random_split(ds, [0.33, 0.33, 0.34], generator=_gen(1))] == [4, 3, 3]
    assert [len(p) for p in random_split(Range(11), [0.5, 0.5], generator=_gen(1))] == [6, 5]
    fr = random_split(Range(100), [0.1, 0.2, 0.7], generator=_gen(2))
    assert [len(p) for p in fr] == [10, 20, 70]
    assert sorted(i for p in fr for i in p.indices) == list(range(100))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0. This might result in an empty dataset."):
        random_split(Range(3), [1.0, 0.0], generator=_gen(0))
    # the default generator is used without one
    ember.manual_seed(3)
    a = random_split(ds, [5, 5])
    ember.manual_seed(3)
    b = random_split(ds, [5, 5])
    assert a[0].indices == b[0].indices


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(Range(10), [3, 6])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(Range(10), [1.5, -0.5])


# ---------------------------------------------------------------------------------------------
# samplers


def test_sequential_and_base_sampler():
    assert list(SequentialSampler(Range(4))) == [0, 1, 2, 3] and len(SequentialSampler(Range(4))) == 4
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    with pytest.warns(UserWarning, match="`data_source` argument is not used"):
        Sampler(Range(3))


def test_random_sampler_without_replacement():
    s = RandomSampler(Range(20), generator=_gen(0))
    first, second = list(s), list(s)
    assert sorted(first) == sorted(second) == list(range(20))
    assert first != second  # reshuffled every epoch
    assert list(RandomSampler(Range(20), generator=_gen(0))) == first
    # num_samples larger than the dataset: whole permutations, then a prefix of one more
    drawn = list(RandomSampler(Range(5), num_samples=12, generator=_gen(1)))
    assert len(drawn) == 12 and sorted(drawn[:5]) == sorted(drawn[5:10]) == list(range(5))
    assert len(set(drawn[10:])) == 2
    # no generator: a fresh one seeded from the default generator on each iteration
    ember.manual_seed(0)
    a = list(RandomSampler(Range(10)))
    ember.manual_seed(0)
    assert list(RandomSampler(Range(10))) == a


def test_random_sampler_with_replacement():
    s = RandomSampler(Range(4), replacement=True, num_samples=1000, generator=_gen(0))
    drawn = list(s)
    assert len(s) == 1000 and len(drawn) == 1000 and set(drawn) == {0, 1, 2, 3}
    counts = collections.Counter(drawn)
    assert all(200 < c < 300 for c in counts.values())  # uniform, 250 expected (sd ~14)
    assert len(list(RandomSampler(Range(3), replacement=True, num_samples=70))) == 70  # 32-sized chunks + rest
    assert len(RandomSampler(Range(7), replacement=True)) == 7


def test_random_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=1"):
        RandomSampler(Range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(Range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(Range(0))


def test_subset_random_sampler():
    idx = [10, 20, 30, 40, 50]
    s = SubsetRandomSampler(idx, generator=_gen(4))
    a = list(s)
    assert sorted(a) == idx and len(s) == 5
    assert list(SubsetRandomSampler(idx, generator=_gen(4))) == a
    orders = {tuple(s) for _ in range(20)}
    assert len(orders) > 1


def test_weighted_random_sampler():
    s = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=_gen(0))
    drawn = list(s)
    assert len(drawn) == len(s) == 4000 and 0 not in drawn
    assert abs(drawn.count(2) / 4000 - 0.75) < 0.03  # sd 0.007
    assert list(WeightedRandomSampler([0.0, 1.0, 3.0], 50, generator=_gen(0))) == drawn[:50]
    no_repl = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0, 5.0], 5, replacement=False, generator=_gen(1)))
    assert sorted(no_repl) == [0, 1, 2, 3, 4]
    assert s.weights.dtype == ember.float64


def test_weighted_random_sampler_errors():
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match=f"num_samples should be a positive integer value, but got num_samples={bad}"):
            WeightedRandomSampler([1.0], bad)
    with pytest.raises(ValueError, match="replacement should be a boolean value, but got replacement=0"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert list(BatchSampler(range(6), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(10), 3, False)) == 4 and len(BatchSampler(range(10), 3, True)) == 3
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=f"batch_size should be a positive integer value, but got batch_size={bad}"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_distributed_sampler():
    shards = [list(DistributedSampler(Range(10), num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded by wrapping around
    dropped = [list(DistributedSampler(Range(10), num_replicas=3, rank=r, drop_last=True)) for r in range(3)]
    assert all(len(d) == 3 for d in dropped) and len(set(sum(dropped, []))) == 9
    s = DistributedSampler(Range(10), num_replicas=2, rank=0, seed=5)
    e0 = list(s)
    s.set_epoch(1)
    assert list(s) != e0 and len(s) == 5
    other = DistributedSampler(Range(10), num_replicas=2, rank=1, seed=5)
    assert sorted(e0 + list(other)) == list(range(10))
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(Range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="Requires distributed package to be available"):
        DistributedSampler(Range(4))


# ---------------------------------------------------------------------------------------------
# collation


def test_default_collate_scalars_and_strings():
    ints = default_collate([0, 1, 2])
    assert ints.dtype == ember.int64 and ints.tolist() == [0, 1, 2]
    floats = default_collate([0.5, 1.5])
    assert floats.dtype == ember.float64 and floats.tolist() == [0.5, 1.5]
    bools = default_collate([True, False])
    assert bools.dtype == ember.bool and bools.tolist() == [True, False]
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_default_collate_tensors_and_numpy():
    t = default_collate([ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])])
    assert t.shape == (2, 2) and t.dtype == ember.float32 and t.tolist() == [[1, 2], [3, 4]]
    a = default_collate([np.arange(3, dtype=np.int32), np.arange(3, 6, dtype=np.int32)])
    assert isinstance(a, ember.Tensor) and a.dtype == ember.int32 and a.tolist() == [[0, 1, 2], [3, 4, 5]]
    s = default_collate([np.float32(1.5), np.float32(2.5)])
    assert s.dtype == ember.float32 and s.tolist() == [1.5, 2.5]
    f64 = default_collate([np.float64(1.0), np.float64(2.0)])  # a float subclass: still numpy's rule
    assert f64.dtype == ember.float64
    assert default_collate([np.bool_(True), np.bool_(False)]).dtype == ember.bool


def test_default_collate_nested():
    batch = [
        {"img": ember.ones(2), "label": 1, "meta": {"name": "a", "pt": Point(1.0, np.int64(2))}, "pair": (1, 2)},
        {"img": ember.zeros(2), "label": 0, "meta": {"name": "b", "pt": Point(3.0, np.int64(4))}, "pair": (3, 4)},
    ]
    out = default_collate(batch)
    assert set(out) == {"img", "label", "meta", "pair"}
    assert out["img"].tolist() == [[1, 1], [0, 0]]
    assert out["label"].tolist() == [1, 0]
    assert out["meta"]["name"] == ["a", "b"]
    pt = out["meta"]["pt"]
    assert isinstance(pt, Point) and pt.x.dtype == ember.float64 and pt.x.tolist() == [1.0, 3.0]
    assert pt.y.dtype == ember.int64 and pt.y.tolist() == [2, 4]
    # a tuple becomes a list of collated fields (as PyTorch); a list stays a list
    assert isinstance(out["pair"], list) and [p.tolist() for p in out["pair"]] == [[1, 3], [2, 4]]
    lists = default_collate([[1, 2], [3, 4]])
    assert isinstance(lists, list) and [x.tolist() for x in lists] == [[1, 3], [2, 4]]
    # mapping subclasses keep their type
    od = default_collate([collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)])
    assert isinstance(od, collections.OrderedDict) and list(od) == ["b", "a"] and od["a"].tolist() == [2, 4]
    dd = default_collate([collections.defaultdict(int, k=1), collections.defaultdict(int, k=2)])
    assert isinstance(dd, collections.defaultdict) and dd["k"].tolist() == [1, 2]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    msg = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class 'object'>"
    with pytest.raises(TypeError) as info:
        default_collate([object(), object()])
    assert str(info.value) == msg
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(TypeError, match="found object"):
        default_collate([np.array([None]), np.array([None])])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ember.zeros(2), ember.zeros(3)])


def test_collate_fn_map_extension():
    from ember.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v

    def collate_box(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)

    out = collate([{"b": Box(1)}, {"b": Box(2)}], collate_fn_map={Box: collate_box, **default_collate_fn_map})
    assert out == {"b": 3}


def test_default_convert():
    t = default_convert(np.array([1, 2], dtype=np.int16))
    assert isinstance(t, ember.Tensor) and t.dtype == ember.int16
    assert default_convert(np.float32(2.0)).dtype == ember.float32
    strings = np.array(["x", "y"])
    assert default_convert(strings) is strings
    assert default_convert("abc") == "abc" and default_convert(3) == 3 and default_convert(2.5) == 2.5
    out = default_convert({"a": np.zeros(2), "b": (np.ones(1), "s"), "p": Point(np.ones(1), 1), "l": [np.zeros(1)]})
    assert isinstance(out["a"], ember.Tensor) and out["a"].dtype == ember.float64
    assert isinstance(out["b"], list) and isinstance(out["b"][0], ember.Tensor) and out["b"][1] == "s"
    assert isinstance(out["p"], Point) and isinstance(out["p"].x, ember.Tensor) and out["p"].y == 1
    assert isinstance(out["l"][0], ember.Tensor)
    same = ember.ones(2)
    assert default_convert(same) is same


# ---------------------------------------------------------------------------------------------
# DataLoader: arguments


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"num_workers": -1}, ValueError, "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."),
        ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
        (
            {"prefetch_factor": 2},
            ValueError,
            "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
            "multiprocessing, otherwise set prefetch_factor to None.",
        ),
        ({"num_workers": 1, "prefetch_factor": -1}, ValueError, "prefetch_factor option should be non-negative"),
        ({"persistent_workers": True}, ValueError, "persistent_workers option needs num_workers > 0"),
        ({"sampler": [0, 1], "shuffle": True}, ValueError, "sampler option is mutually exclusive with shuffle"),
        *[
            (
                {"batch_sampler": [[0, 1]], **extra},
                ValueError,
                "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last",
            )
            for extra in ({"batch_size": 2}, {"shuffle": True}, {"sampler": [0]}, {"drop_last": True})
        ],
        (
            {"batch_size": None, "drop_last": True},
            ValueError,
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last",
        ),
        (
            {"multiprocessing_context": "fork"},
            ValueError,
            "multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got num_workers=0",
        ),
        (
            {"num_workers": 1, "multiprocessing_context": 3},
            TypeError,
            "multiprocessing_context option should be a valid context object or a string specifying the start "
            "method, but got multiprocessing_context=3",
        ),
    ],
)
def test_dataloader_argument_errors(kwargs, exc, message):
    with pytest.raises(exc) as info:
        DataLoader(Range(4), **kwargs)
    assert str(info.value) == message


def test_dataloader_argument_errors_more():
    with pytest.raises(ValueError, match=r"multiprocessing_context option should specify a valid start method in \[.*'fork'.*\], but got multiprocessing_context='nope'"):
        DataLoader(Range(4), num_workers=1, multiprocessing_context="nope")
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(4), shuffle=True)
    with pytest.raises(ValueError, match=r"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler=\[0\]"):
        DataLoader(Stream(4), sampler=[0])
    with pytest.raises(ValueError, match=r"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler=\[\[0\]\]"):
        DataLoader(Stream(4), batch_sampler=[[0]])
    DataLoader(Stream(4), shuffle=False)  # accepted, as PyTorch
    dl = DataLoader(Range(4))
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(dl, attr, None)
    dl.num_workers = 0  # other attributes may change
    assert DataLoader(Range(4), num_workers=1).prefetch_factor == 2
    assert DataLoader(Range(4)).prefetch_factor is None


def test_dataloader_defaults_and_len():
    dl = DataLoader(Range(10), batch_size=3)
    assert isinstance(dl.sampler, SequentialSampler) and isinstance(dl.batch_sampler, BatchSampler)
    assert dl.collate_fn is default_collate and dl.generator is None
    assert len(dl) == 4 and [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    dropped = DataLoader(Range(10), batch_size=3, drop_last=True)
    assert len(dropped) == 3 and [b.tolist() for b in dropped][-1] == [6, 7, 8]
    assert isinstance(DataLoader(Range(3), shuffle=True).sampler, RandomSampler)
    single = DataLoader(Range(3))
    assert [b.tolist() for b in single] == [[0], [1], [2]]
    # len of an iterable dataset: len(dataset) / batch_size, rounded by drop_last
    assert len(DataLoader(SizedStream(10), batch_size=4)) == 3
    assert len(DataLoader(SizedStream(10), batch_size=4, drop_last=True)) == 2
    assert len(DataLoader(SizedStream(10), batch_size=None)) == 10
    with pytest.raises(TypeError):
        len(DataLoader(Stream(10)))


def test_auto_batching_off():
    class Arrays(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": np.full(2, i, dtype=np.float32), "name": f"s{i}"}

    dl = DataLoader(Arrays(), batch_size=None)
    assert dl.collate_fn is default_convert and dl.batch_sampler is None and len(dl) == 3
    out = list(dl)
    assert out[1]["x"].dtype == ember.float32 and out[1]["x"].tolist() == [1, 1] and out[1]["name"] == "s1"
    # custom sampler without batching: the sampler's keys are passed through
    assert list(DataLoader(Range(5), batch_size=None, sampler=[4, 0])) == [4, 0]


def test_custom_batch_sampler_and_collate():
    dl = DataLoader(Range(6), batch_sampler=[[5, 0], [1], [2, 3, 4]])
    assert dl.batch_size is None and dl.drop_last is False and len(dl) == 3
    assert [b.tolist() for b in dl] == [[5, 0], [1], [2, 3, 4]]
    assert list(DataLoader(Range(5), batch_size=2, collate_fn=sum)) == [1, 5, 4]
    assert [b.tolist() for b in DataLoader(Range(5), batch_size=2, sampler=[4, 3, 2])] == [[4, 3], [2]]


def test_iterable_dataset_main_process():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]

    class Liar(SizedStream):
        def __len__(self):
            return 2

    dl = DataLoader(Liar(4), batch_size=None)
    assert len(dl) == 2
    with pytest.warns(UserWarning, match=r"Length of IterableDataset .* was reported to be 2\(when accessing len\(dataloader\)\), but [34] samples have been fetched"):
        list(dl)


def test_pin_memory_without_accelerator_is_a_noop():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        out = [b.tolist() for b in DataLoader(Range(4), batch_size=2, pin_memory=True)]
    assert out == [[0, 1], [2, 3]]


def test_get_worker_info_in_main_process():
    assert get_worker_info() is None
    assert ember.utils.data.get_worker_info is get_worker_info


# ---------------------------------------------------------------------------------------------
# DataLoader with worker processes


def test_workers_same_order_as_main_process_and_exactly_once():
    ds = TensorDataset(ember.arange(53))
    for seed in (0, 1):
        orders = []
        for nw in (0, 2):
            dl = DataLoader(ds, batch_size=4, shuffle=True, num_workers=nw, generator=_gen(seed))
            epochs = [_flat(b[0] for b in dl) for _ in range(2)]
            for e in epochs:
                assert sorted(e) == list(range(53))  # every sample exactly once per epoch
            assert epochs[0] != epochs[1]  # reshuffled
            orders.append(epochs)
        assert orders[0] == orders[1]
    # without shuffle: dataset order, whatever the number of workers and the prefetch depth
    seq = DataLoader(ds, batch_size=5, num_workers=2, prefetch_factor=1)
    assert _flat(b[0] for b in seq) == list(range(53)) and len(seq) == 11


def test_workers_keep_order_when_a_worker_is_slow():
    # task 0 (worker 0) is slow: worker 1's results arrive first and wait in the reorder buffer
    dl = DataLoader(Sleepy([0.3, 0, 0, 0, 0, 0, 0, 0]), batch_size=1, num_workers=2, prefetch_factor=3)
    assert [b.item() for b in dl] == list(range(8))


def test_prefetch_bound():
    dl = DataLoader(Range(100), batch_size=2, num_workers=2, prefetch_factor=3)
    it = iter(dl)
    assert it._tasks_outstanding == 6 and it._send_idx == 6
    next(it)
    assert it._tasks_outstanding <= 6 and it._send_idx == 7
    del it
    short = iter(DataLoader(Range(3), batch_size=2, num_workers=2, prefetch_factor=3))
    assert short._tasks_outstanding == 2
    assert [b.tolist() for b in short] == [[0, 1], [2]]


def test_workers_drop_last_and_custom_collate():
    dl = DataLoader(Range(11), batch_size=3, drop_last=True, num_workers=2)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert list(DataLoader(Range(5), batch_size=2, collate_fn=sum, num_workers=2)) == [1, 5, 4]
    assert list(DataLoader(Range(4), batch_size=None, num_workers=2)) == [0, 1, 2, 3]


def test_iterable_dataset_with_workers():
    sharded = DataLoader(Stream(10), batch_size=2, num_workers=2)
    batches = [b.tolist() for b in sharded]
    assert sorted(v for b in batches for v in b) == list(range(10))  # each sample once
    assert batches[:2] == [[0, 2], [1, 3]]  # batches alternate between the workers
    # without sharding every worker yields the whole stream
    dup = _flat(DataLoader(Stream(5, shard=False), batch_size=2, num_workers=2))
    assert sorted(dup) == sorted(list(range(5)) * 2)
    # drop_last applies per worker (as PyTorch): worker 0 has 0,2,4,6 -> [0,2],[4,6]; worker 1 has 1,3,5 -> [1,3]
    dl = DataLoader(Stream(7), batch_size=2, drop_last=True, num_workers=2)
    assert sorted(map(tuple, (b.tolist() for b in dl))) == [(0, 2), (1, 3), (4, 6)]
    assert sorted(DataLoader(Stream(5), batch_size=None, num_workers=2)) == [0, 1, 2, 3, 4]


def test_worker_init_fn_and_worker_info():
    class InfoProbe(Dataset):
        def __init__(self):
            self.tag = "main"

        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = get_worker_info()
            return (info.id, info.num_workers, self.tag, info.dataset is self, repr(info))

    def init(worker_id):
        info = get_worker_info()
        assert info.id == worker_id
        info.dataset.tag = f"worker{worker_id}"  # configures this worker's copy only

    ds = InfoProbe()
    out = list(DataLoader(ds, batch_size=None, num_workers=2, worker_init_fn=init))
    # (default_convert turns each tuple sample into a list, as PyTorch)
    assert [o[:4] for o in out] == [[0, 2, "worker0", True], [1, 2, "worker1", True]] * 2
    assert out[0][4].startswith("WorkerInfo(id=0, num_workers=2, seed=")
    assert ds.tag == "main"  # the main process's dataset is untouched

    def frozen(worker_id):
        get_worker_info().id = 5

    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        list(DataLoader(Range(2), num_workers=1, worker_init_fn=frozen))


def test_worker_seeds():
    def run(seed):
        return list(DataLoader(SeedProbe(), batch_size=None, num_workers=2, generator=_gen(seed)))

    out = run(7)
    w0, w1 = out[0], out[1]
    assert (w0["id"], w1["id"], w0["num_workers"]) == (0, 1, 2)
    # base_seed is drawn from the loader's generator; worker i gets base_seed + i
    base = _random_seed(_gen(7))
    assert (w0["seed"], w1["seed"]) == (base, base + 1)
    # every random source is seeded, distinctly per worker (NumPy too: PyTorch < 1.9 left it alone)
    for key in ("ember", "numpy", "random"):
        assert w0[key] != w1[key], key
    for w in (w0, w1):
        assert w["ember"] == ember.rand(2, generator=_gen(w["seed"])).tolist()
        assert w["random"] == random.Random(w["seed"]).random()
        state = np.random.SeedSequence([w["id"], base & 0xFFFFFFFF, base >> 32, 0]).generate_state(4)
        assert w["numpy"] == np.random.RandomState(state).randint(0, 2**31, size=2).tolist()
    # the same generator seed gives the same worker streams; another seed, other streams
    assert run(7) == out
    assert run(8)[0]["numpy"] != w0["numpy"]
    # without a generator, base_seed comes from the default generator
    ember.manual_seed(11)
    a = list(DataLoader(SeedProbe(), batch_size=None, num_workers=2))
    ember.manual_seed(11)
    assert list(DataLoader(SeedProbe(), batch_size=None, num_workers=2)) == a
    # a new iterator (epoch) draws a new base_seed
    dl = DataLoader(SeedProbe(), batch_size=None, num_workers=2, generator=_gen(3))
    assert list(dl)[0]["seed"] != list(dl)[0]["seed"]


def test_worker_exception_is_reraised_with_traceback():
    dl = DataLoader(Failing(3, ValueError("bad index 3")), batch_size=None, num_workers=2)
    it = iter(dl)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError) as info:
        next(it)
    msg = str(info.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback (most recent call last):")
    assert "in __getitem__" in msg and "ValueError: bad index 3" in msg
    assert [next(it), next(it)] == [4, 5]  # loading goes on after an error, as PyTorch
    with pytest.raises(StopIteration):
        next(it)


def test_worker_exception_types():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Failing(0, KeyError("k")), num_workers=1))
    assert str(info.value).startswith("Caught KeyError in DataLoader worker process 0.")  # readable, not repr'd
    with pytest.raises(ModuleError, match="Caught ModuleError in DataLoader worker process 0"):
        list(DataLoader(Failing(1, ModuleError("x")), num_workers=1))
    # an exception that cannot be rebuilt from a message becomes a RuntimeError
    with pytest.raises(RuntimeError, match="Caught TwoArgError in DataLoader worker process 0"):
        list(DataLoader(Failing(1, TwoArgError(1, 2)), num_workers=1))

    class LocalError(Exception):  # cannot be pickled by reference
        pass

    with pytest.raises(RuntimeError, match=r"Caught LocalError in DataLoader worker process 0(.|\n)*LocalError: local"):
        list(DataLoader(Failing(0, LocalError("local")), num_workers=1))
    # a batch that cannot be pickled is an error in the main process, not a hang
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(DataLoader(Range(2), num_workers=1, collate_fn=lambda b: (lambda: b), timeout=10))
    # worker_init_fn failing: the first task reports it
    def bad_init(worker_id):
        raise OSError("cannot open shard")

    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0(.|\n)*cannot open shard"):
        list(DataLoader(Range(2), num_workers=1, worker_init_fn=bad_init))
    # in the main process the original exception propagates unchanged
    with pytest.raises(ValueError, match="^plain$"):
        list(DataLoader(Failing(0, ValueError("plain"))))


def test_timeout():
    dl = DataLoader(Sleepy([1.0, 0.0]), batch_size=None, num_workers=1, timeout=0.2)
    it = iter(dl)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.2 seconds$"):
        next(it)
    assert time.monotonic() - start < 0.8
    time.sleep(1.0)
    assert next(it) == 0  # the batch still comes, and loading goes on
    del it
    fast = DataLoader(Range(4), batch_size=2, num_workers=2, timeout=5)
    assert [b.tolist() for b in fast] == [[0, 1], [2, 3]]


def test_worker_killed_is_detected():
    class Exits(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 1:
                os._exit(3)
            return i

    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(DataLoader(Exits(), batch_size=None, num_workers=2))
    assert time.monotonic() - start < 4  # noticed through the process sentinel, not a poll


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_persistent_workers():
    calls = []

    def init(worker_id):
        calls.append(worker_id)  # in the worker's memory: counted through the samples below

    class CountInits(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return ember.tensor([i, os.getpid(), len(calls)])

    dl = DataLoader(CountInits(), batch_size=2, shuffle=True, num_workers=2, persistent_workers=True,
                    worker_init_fn=init, generator=_gen(0))
    pids, orders = set(), []
    for _ in range(3):
        rows = [r for b in dl for r in b.tolist()]
        orders.append([r[0] for r in rows])
        pids |= {r[1] for r in rows}
        assert all(r[2] == 1 for r in rows)  # worker_init_fn ran once per worker, not per epoch
    assert all(sorted(o) == list(range(6)) for o in orders) and len({tuple(o) for o in orders}) > 1
    assert len(pids) == 2 and dl._iterator is not None
    it = dl._iterator
    assert all(w.is_alive() for w in it._workers)
    # an epoch left early: the next one is still complete and served by the same workers
    first = next(iter(dl))
    assert first.shape == (2, 3)
    rows = [r for b in dl for r in b.tolist()]
    assert sorted(r[0] for r in rows) == list(range(6)) and {r[1] for r in rows} == pids
    # iterable dataset: workers end their stream and are resumed next epoch
    sdl = DataLoader(Stream(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert sorted(_flat(sdl)) == sorted(_flat(sdl)) == list(range(6))
    workers = list(it._workers) + list(sdl._iterator._workers)
    del dl, it, sdl
    gc.collect()
    assert not any(w.is_alive() for w in workers)


def test_workers_shut_down():
    dl = DataLoader(PidDataset(), batch_size=2, num_workers=2)
    it = iter(dl)
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    list(it)  # exhausted: workers are joined
    assert not any(w.is_alive() for w in workers)
    # left early and dropped: workers are joined too
    it = iter(dl)
    pids = [w.pid for w in it._workers]
    next(it)
    del it
    gc.collect()
    assert not any(_alive(pid) for pid in pids)


def test_no_hang_at_interpreter_exit(tmp_path):
    script = textwrap.dedent(
        """
        import ember.utils.data as data

        class DS(data.Dataset):
            def __len__(self):
                return 1000

            def __getitem__(self, i):
                return i

        it = iter(data.DataLoader(DS(), batch_size=2, num_workers=2))
        next(it)  # a live iterator with busy workers at exit
        persistent = data.DataLoader(DS(), batch_size=2, num_workers=2, persistent_workers=True)
        next(iter(persistent))
        print("done", flush=True)
        """
    )
    path = tmp_path / "exit_with_workers.py"
    path.write_text(script)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"


def test_default_context_is_fork_on_linux():
    if not sys.platform.startswith("linux") or multiprocessing.get_start_method(allow_none=True):
        pytest.skip("fork is the default only on Linux without a start method set")
    it = iter(DataLoader(Range(2), num_workers=1))
    assert type(it._workers[0]).__name__ == "ForkProcess"
    assert [b.tolist() for b in it] == [[0], [1]]


def test_spawn_context():
    ds = TensorDataset(ember.arange(6))
    dl = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert dl.multiprocessing_context.get_start_method() == "spawn"
    assert [b[0].tolist() for b in dl] == [[0, 1], [2, 3], [4, 5]]

    class Local(Dataset):  # cannot be pickled for a spawned worker
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return i

    with pytest.raises(AttributeError, match="Can't pickle local object"):
        iter(DataLoader(Local(), num_workers=2, multiprocessing_context="spawn"))
    assert multiprocessing.active_children() == []


def test_warns_about_too_many_workers():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DataLoader(Range(2), num_workers=10_000)
    assert any("This DataLoader will create 10000 worker processes in total." in str(w.message) for w in caught)
