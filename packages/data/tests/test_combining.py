"""Multiplexer, Forker, Demultiplexer, IterKeyZipper, MapKeyZipper, the random combinators
(InBatchShuffler, SampleMultiplexer, RandomSplitter) and Prefetcher."""

import threading
import time
import traceback
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emberdata.datapipes import IterDataPipe
from emberdata.datapipes.iter import (
    Forker,
    IterableWrapper,
    Multiplexer,
    RandomSplitter,
    SampleMultiplexer,
)
from emberdata.datapipes.map import SequenceWrapper

lists = st.lists(st.integers(-50, 50), max_size=30)


class Boom(IterDataPipe):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        yield from range(self.n)
        raise KeyError("boom at the end")


# --- Multiplexer -----------------------------------------------------------------------------


@given(st.lists(lists, min_size=1, max_size=4))
def test_multiplexer(datas):
    dp = Multiplexer(*(IterableWrapper(d) for d in datas))
    rounds = min(len(d) for d in datas)
    assert list(dp) == [d[i] for i in range(rounds) for d in datas]
    assert len(dp) == rounds * len(datas)


# --- Forker ----------------------------------------------------------------------------------


@given(lists, st.integers(1, 4))
def test_forker_outputs_are_copies_of_the_stream(data, n):
    children = IterableWrapper(data).fork(n)
    assert len(children) == n
    assert [list(c) for c in children] == [data] * n
    assert all(len(c) == len(data) for c in children)


def test_forker_interleaved_reads_and_buffer():
    a, b = IterableWrapper(range(6)).fork(2, buffer_size=2)
    it_a, it_b = iter(a), iter(b)
    assert [next(it_a), next(it_a), next(it_b), next(it_a)] == [0, 1, 0, 2]
    with pytest.raises(BufferError, match="Forker buffer overflow, buffer size 2 is insufficient"):
        [next(it_a) for _ in range(3)]


def test_forker_new_epoch_invalidates_old_iterators():
    a, b = IterableWrapper(range(4)).fork(2)
    it_a = iter(a)
    next(it_a)
    assert list(b) == [0, 1, 2, 3]
    assert list(a) == [0, 1, 2, 3]  # a restarts: a new epoch
    with pytest.raises(RuntimeError, match="has been invalidated"):
        next(it_a)
    assert list(b) == [0, 1, 2, 3]  # b joins the new epoch


def test_forker_copy_modes():
    rows = [[1], [2]]
    a, b = IterableWrapper(rows).fork(2, copy="deep")
    out_a = list(a)
    out_a[0].append(99)
    assert list(b) == [[1], [2]]
    with pytest.raises(ValueError, match="Unknown copy method `fast` requested"):
        IterableWrapper(rows).fork(2, copy="fast")


def test_forker_errors():
    with pytest.raises(ValueError, match="Forker expected num_instances > 0, but got 0"):
        Forker(IterableWrapper([1]), 0)
    with pytest.raises(TypeError, match="Forker expected all inputs to be `IterDataPipe`"):
        Forker([1, 2], 2)
    with pytest.warns(UserWarning, match="unlimited buffer size"):
        a, b = IterableWrapper(range(3000)).fork(2, buffer_size=-1)
    assert len(list(a)) == 3000 and len(list(b)) == 3000


# --- Demultiplexer ---------------------------------------------------------------------------


@given(lists, st.integers(1, 4))
def test_demultiplexer_routes_by_classifier(data, n):
    children = IterableWrapper(data).demux(n, lambda x: x % n, buffer_size=100)
    assert [list(c) for c in children] == [[x for x in data if x % n == k] for k in range(n)]


def test_demultiplexer_drop_none_buffer_and_errors():
    evens, odds = IterableWrapper(range(8)).demux(
        2, lambda x: None if x == 4 else x % 2, drop_none=True
    )
    assert list(odds) == [1, 3, 5, 7]
    assert list(evens) == [0, 2, 6]
    bad, _ = IterableWrapper([1]).demux(2, lambda x: 5)
    with pytest.raises(ValueError, match="should be between 0 and 1. 5 is returned"):
        list(bad)
    first, second = IterableWrapper(range(10)).demux(2, lambda x: x // 5, buffer_size=3)
    with pytest.raises(BufferError, match="Demultiplexer buffer overflow, buffer size 3"):
        list(second)  # items of `first` pile up while reading `second`
    with pytest.raises(TypeError, match="Demultiplexer expected a callable classifier_fn"):
        IterableWrapper([1]).demux(2, None)
    with pytest.raises(TypeError, match="^_ChildDataPipe instance doesn't have valid length$"):
        len(first)


# --- IterKeyZipper / MapKeyZipper ------------------------------------------------------------


@given(st.permutations(list(range(12))), st.booleans())
def test_iter_key_zipper_matches_any_order(ref_order, keep_key):
    source = IterableWrapper(range(12))
    ref = IterableWrapper([(k, str(k)) for k in ref_order])
    dp = source.zip_with_iter(ref, key_fn=lambda x: x, ref_key_fn=lambda r: r[0], keep_key=keep_key)
    out = list(dp)
    pairs = [(k, (k, str(k))) for k in range(12)]
    assert out == ([(k, p) for k, p in zip(range(12), pairs, strict=True)] if keep_key else pairs)
    assert len(dp) == 12


def test_iter_key_zipper_errors():
    src = IterableWrapper([3])
    missing = src.zip_with_iter(IterableWrapper([1, 2]), key_fn=int)
    with pytest.raises(BufferError, match="No matching key can be found from reference DataPipe"):
        list(missing)
    small = IterableWrapper([5]).zip_with_iter(IterableWrapper(range(10)), key_fn=int, buffer_size=2)
    with pytest.raises(BufferError, match="buffer_size=2 is insufficient"):
        list(small)
    with pytest.raises(TypeError, match="IterKeyZipper expected a callable key_fn"):
        src.zip_with_iter(src, key_fn=1)
    with pytest.raises(TypeError, match="IterKeyZipper expected all inputs to be `IterDataPipe`"):
        src.zip_with_iter([1], key_fn=int)


def test_iter_key_zipper_duplicate_keys_are_used_in_order():
    ref = IterableWrapper([("a", 1), ("a", 2)])
    dp = IterableWrapper(["a", "a"]).zip_with_iter(ref, key_fn=lambda s: s, ref_key_fn=lambda r: r[0],
                                                    merge_fn=lambda s, r: r[1])
    assert list(dp) == [1, 2]


def test_map_key_zipper():
    table = SequenceWrapper({"a": 1, "b": 2})
    dp = IterableWrapper(["b", "a"]).zip_with_map(table, key_fn=str.strip, keep_key=True)
    assert list(dp) == [("b", ("b", 2)), ("a", ("a", 1))]
    with pytest.raises(KeyError, match="key 'c' .* is not in the MapDataPipe"):
        list(IterableWrapper(["c"]).zip_with_map(table, key_fn=str.strip))
    with pytest.raises(TypeError, match="MapKeyZipper expected map_datapipe to be a MapDataPipe"):
        IterableWrapper(["c"]).zip_with_map({"c": 1}, key_fn=str.strip)


# --- random combinators ----------------------------------------------------------------------


def test_in_batch_shuffler():
    dp = IterableWrapper(range(20)).batch(5).in_batch_shuffle()
    first = list(dp.set_seed(7))
    assert list(dp.set_seed(7)) == first
    assert [sorted(b) for b in first] == [list(range(i, i + 5)) for i in range(0, 20, 5)]
    assert first != [list(range(i, i + 5)) for i in range(0, 20, 5)]
    assert list(dp.set_shuffle(False)) == [list(range(i, i + 5)) for i in range(0, 20, 5)]
    assert len(dp) == 4


def test_sample_multiplexer_weights_and_exhaustion():
    a, b = IterableWrapper(["a"] * 300), IterableWrapper(["b"] * 300)
    out = list(SampleMultiplexer({a: 9, b: 1}, seed=0))
    assert Counter(out) == {"a": 300, "b": 300}
    assert Counter(out[:100])["a"] > 75  # the heavy input dominates while both last
    dp = SampleMultiplexer({a: 1, b: 1}, seed=3)
    assert list(dp.set_seed(5)) == list(dp.set_seed(5))
    assert len(dp) == 600


@pytest.mark.parametrize(
    ("arg", "error", "message"),
    [
        ({}, ValueError, "expected a non-empty dict"),
        ({IterableWrapper([1]): 0}, ValueError, "Expecting a positive and non-zero weight, got 0"),
        ({IterableWrapper([1]): -1.5}, ValueError, "Expecting a positive and non-zero weight"),
        ({"x": 1}, TypeError, "expected IterDataPipe keys, but got str"),
    ],
)
def test_sample_multiplexer_errors(arg, error, message):
    with pytest.raises(error, match=message):
        SampleMultiplexer(arg)


@given(st.integers(0, 80), st.integers(0, 1000))
def test_random_splitter_partitions_with_exact_counts(n, seed):
    train, valid, test = IterableWrapper(range(n)).random_split(
        weights={"train": 0.7, "valid": 0.2, "test": 0.1}, seed=seed
    )
    parts = [list(train), list(valid), list(test)]
    assert sorted(x for p in parts for x in p) == list(range(n))
    assert [len(p) for p in parts] == [len(train), len(valid), len(test)]
    assert sum(len(p) for p in parts) == n
    assert list(train) == parts[0]  # every epoch: the same split


def test_random_splitter_target_override_seed_and_errors():
    dp = IterableWrapper(range(50))
    a = dp.random_split(weights={"a": 1, "b": 1}, seed=1, target="a")
    before = list(a)
    a.override_seed(2)
    assert list(a) != before and len(list(a)) == 25
    with pytest.raises(KeyError, match="`target='c'` does not match any key in `weights`."):
        dp.random_split(weights={"a": 1}, seed=0, target="c")
    with pytest.raises(TypeError, match="RandomSplitter needs `total_length`"):
        dp.filter(bool).random_split(weights={"a": 1}, seed=0)
    with pytest.raises(ValueError, match="non-negative weights with a positive sum"):
        dp.random_split(weights={"a": -1}, seed=0)
    short = RandomSplitter(dp, {"a": 1}, 0, total_length=10, target="a")
    with pytest.raises(ValueError, match="total_length=10, but the source yields more items"):
        list(short)


# --- Prefetcher ------------------------------------------------------------------------------


def test_prefetcher_reads_ahead_and_reraises():
    assert list(IterableWrapper(range(100)).prefetch(buffer_size=3)) == list(range(100))
    with pytest.raises(KeyError, match="boom at the end") as info:
        list(Boom(5).prefetch())
    # The original traceback, from the producer thread, comes along.
    assert 'raise KeyError("boom at the end")' in "".join(traceback.format_exception(info.value))


def test_prefetcher_stops_its_thread_when_the_consumer_stops():
    before = threading.active_count()
    dp = IterableWrapper(range(10_000)).prefetch(buffer_size=2)
    iterator = iter(dp)
    assert next(iterator) == 0
    iterator.close()
    deadline = time.monotonic() + 3
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before


def test_prefetcher_errors():
    with pytest.raises(ValueError, match="Prefetcher expected buffer_size > 0, but got 0"):
        IterableWrapper([1]).prefetch(0)
