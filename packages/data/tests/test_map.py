"""Map-style pipes and the conversions between the two kinds of pipe."""

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ember.utils.data import DataLoader
from emberdata.datapipes import MapDataPipe, functional_datapipe
from emberdata.datapipes.iter import IterableWrapper
from emberdata.datapipes.map import (
    Batcher,
    Concater,
    IterToMapConverter,
    Mapper,
    MapToIterConverter,
    SequenceWrapper,
    Shuffler,
    Zipper,
)

lists = st.lists(st.integers(-20, 20), max_size=30)


def double(x):
    return 2 * x


def split_key(s):
    return s[0], int(s[1])


@given(lists)
def test_sequence_wrapper_and_mapper(data):
    dp = SequenceWrapper(data)
    assert len(dp) == len(data) and list(dp) == data
    mapped = dp.map(double)
    assert isinstance(mapped, Mapper)
    assert [mapped[i] for i in range(len(data))] == [2 * x for x in data]
    assert len(mapped) == len(data)
    assert list(pickle.loads(pickle.dumps(mapped))) == [2 * x for x in data]


def test_sequence_wrapper_copies_once():
    data = [[1]]
    dp = SequenceWrapper(data)
    data[0].append(2)
    assert dp[0] == [1]
    shared = SequenceWrapper(data, deepcopy=False)
    data[0].append(3)
    assert shared[0] == [1, 2, 3]
    with pytest.raises(TypeError, match="SequenceWrapper expected a sequence or mapping"):
        SequenceWrapper(x for x in range(3))


@given(lists, st.integers(1, 7), st.booleans())
def test_map_batcher(data, size, drop_last):
    dp = SequenceWrapper(data).batch(size, drop_last=drop_last)
    expected = [data[i:i + size] for i in range(0, len(data), size)]
    if drop_last and expected and len(expected[-1]) < size:
        expected.pop()
    assert [dp[i] for i in range(len(dp))] == expected
    assert len(dp) == len(expected)
    if expected:
        assert dp[-1] == expected[-1]
    with pytest.raises(IndexError, match="out of bound"):
        dp[len(expected)]


def test_map_batcher_errors():
    with pytest.raises(ValueError, match="Batcher expected batch_size > 0, but got 0"):
        Batcher(SequenceWrapper([1]), 0)
    with pytest.raises(TypeError, match="Batcher indices must be integers, not str"):
        SequenceWrapper([1]).batch(1)["0"]


@given(st.lists(lists, min_size=1, max_size=4))
def test_map_concater_and_zipper(datas):
    dps = [SequenceWrapper(d) for d in datas]
    cat = dps[0].concat(*dps[1:])
    flat = [x for d in datas for x in d]
    assert [cat[i] for i in range(len(cat))] == flat
    if flat:
        assert cat[-1] == flat[-1]
    zipped = Zipper(*dps)
    assert len(zipped) == min(map(len, datas))
    assert [zipped[i] for i in range(len(zipped))] == list(zip(*datas, strict=False))


def test_map_combining_errors():
    with pytest.raises(ValueError, match="Concater expected at least one DataPipe"):
        Concater()
    with pytest.raises(TypeError, match="Zipper expected all inputs to be `MapDataPipe`, but input 1"):
        Zipper(SequenceWrapper([1]), [1])
    with pytest.raises(IndexError, match="Index 3 is out of range for a Concater of length 3"):
        SequenceWrapper([1]).concat(SequenceWrapper([2, 3]))[3]


def test_map_shuffler():
    dp = SequenceWrapper(list("abcdefghij")).shuffle()
    assert isinstance(dp, Shuffler)
    first = list(dp.set_seed(3))
    assert sorted(first) == list("abcdefghij") and first != list("abcdefghij")
    assert list(dp.set_seed(3)) == first
    assert list(dp) != first  # no new seed: a new order
    assert list(dp.set_shuffle(False)) == list("abcdefghij")
    picked = Shuffler(SequenceWrapper(list("abcdef")), indices=[0, 2, 4])
    assert sorted(picked) == ["a", "c", "e"] and len(picked) == 3
    with pytest.raises(TypeError, match=r"Shuffler \(map\) expected a MapDataPipe"):
        Shuffler(IterableWrapper([1]))


def test_conversions_both_ways():
    it = SequenceWrapper("abc").to_iter_datapipe()
    assert isinstance(it, MapToIterConverter) and list(it) == ["a", "b", "c"] and len(it) == 3
    assert list(MapToIterConverter(SequenceWrapper("abc"), indices=[2, 0])) == ["c", "a"]
    mapped = IterableWrapper([("x", 1), ("y", 2)]).to_map_datapipe()
    assert isinstance(mapped, IterToMapConverter)
    assert mapped["y"] == 2 and len(mapped) == 2
    keyed = IterableWrapper(["a1", "b2"]).to_map_datapipe(split_key)
    assert keyed["a"] == 1
    assert pickle.loads(pickle.dumps(keyed))["b"] == 2
    with pytest.raises(KeyError, match="IterToMapConverter: key 'z' not found"):
        mapped["z"]
    with pytest.raises(TypeError, match=r"needs \(key, value\) pairs, but got 3"):
        IterableWrapper([3]).to_map_datapipe()["a"]
    with pytest.warns(UserWarning, match="Found duplicate key 'x'"):
        assert IterableWrapper([("x", 1), ("x", 2)]).to_map_datapipe()["x"] == 2
    with pytest.raises(TypeError, match="MapToIterConverter expected a MapDataPipe"):
        MapToIterConverter([1])


def test_map_datapipe_in_the_dataloader():
    dp = SequenceWrapper(range(10)).map(double)
    loader = DataLoader(dp, batch_size=4, shuffle=True)
    assert sorted(x for b in loader for x in b.tolist()) == [2 * x for x in range(10)]


def test_custom_map_functional_datapipe():
    @functional_datapipe("_test_negate")
    class Negate(MapDataPipe):
        def __init__(self, datapipe):
            self.datapipe = datapipe

        def __getitem__(self, i):
            return -self.datapipe[i]

        def __len__(self):
            return len(self.datapipe)

    try:
        assert list(SequenceWrapper([1, 2])._test_negate()) == [-1, -2]
    finally:
        MapDataPipe.functions.pop("_test_negate")
    with pytest.raises(NotImplementedError, match="MapDataPipe must implement __getitem__"):
        MapDataPipe()[0]
