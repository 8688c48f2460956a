"""Every IterDataPipe against a plain-Python reference, its length, and its bad-input errors."""

import pickle
import random
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emberdata.datapipes import IterDataPipe, functional_datapipe
from emberdata.datapipes.iter import (
    SHARDING_PRIORITIES,
    Batcher,
    Concater,
    Cycler,
    Enumerator,
    Filter,
    Header,
    IterableWrapper,
    Mapper,
    ShardingFilter,
    Shuffler,
    Zipper,
)

lists = st.lists(st.integers(-100, 100), max_size=50)


def square(x):
    return x * x


def is_even(x):
    return x % 2 == 0


class CountingSource(IterDataPipe):
    """A sized source that counts how many items were pulled from it."""

    def __init__(self, data):
        self.data = list(data)
        self.pulled = 0

    def __iter__(self):
        for item in self.data:
            self.pulled += 1
            yield item

    def __len__(self):
        return len(self.data)


def unsized(data):
    return IterableWrapper(data).filter(lambda _: True)


# --- functional forms -----------------------------------------------------------------------


def test_functional_names_are_registered():
    dp = IterableWrapper([1])
    expected = {
        "map": (Mapper, (square,)),
        "filter": (Filter, (is_even,)),
        "batch": (Batcher, (2,)),
        "header": (Header, ()),
        "enumerate": (Enumerator, ()),
        "zip": (Zipper, (dp,)),
        "concat": (Concater, (dp,)),
        "cycle": (Cycler, ()),
        "shuffle": (Shuffler, ()),
        "sharding_filter": (ShardingFilter, ()),
    }
    for name, (cls, args) in expected.items():
        assert name in IterDataPipe.functions
        assert name in dir(dp)
        assert type(getattr(dp, name)(*args)) is cls


def test_functional_form_is_the_class():
    source = IterableWrapper(range(5))
    assert list(source.map(square)) == list(Mapper(source, square))
    assert source.map.__doc__ == Mapper.__doc__


def test_custom_functional_datapipe():
    @functional_datapipe("_test_double")
    class Doubler(IterDataPipe):
        def __init__(self, source_datapipe, factor=2):
            self.source_datapipe = source_datapipe
            self.factor = factor

        def __iter__(self):
            for x in self.source_datapipe:
                yield x * self.factor

    try:
        dp = IterableWrapper(range(3))._test_double(factor=3)
        assert isinstance(dp, Doubler)
        assert list(dp) == [0, 3, 6]
        assert dp.source_datapipes() == (dp.source_datapipe,)
        with pytest.raises(
            ValueError,
            match="Unable to add DataPipe function name _test_double as it is already taken",
        ):
            functional_datapipe("_test_double")(Doubler)
    finally:
        IterDataPipe.functions.pop("_test_double", None)


def test_register_datapipe_as_function():
    class Plus(IterDataPipe):
        def __init__(self, source_datapipe, n):
            self.source_datapipe, self.n = source_datapipe, n

        def __iter__(self):
            return (x + self.n for x in self.source_datapipe)

    IterDataPipe.register_datapipe_as_function("_test_plus", Plus)
    try:
        assert list(IterableWrapper([1, 2])._test_plus(10)) == [11, 12]
    finally:
        del IterDataPipe.functions["_test_plus"]


def test_functional_datapipe_rejects_non_datapipes():
    with pytest.raises(TypeError, match="`functional_datapipe` can only decorate IterDataPipe"):
        functional_datapipe("_test_bad")(list)
    assert "_test_bad" not in IterDataPipe.functions


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="'IterableWrapper' object has no attribute 'nope'"):
        _ = IterableWrapper([]).nope


def test_base_class_has_no_iter_or_len():
    with pytest.raises(NotImplementedError, match="IterDataPipe must implement __iter__"):
        iter(IterDataPipe())
    with pytest.raises(TypeError, match="IterDataPipe instance doesn't have valid length"):
        len(IterDataPipe())


def test_pipeline_pickles():
    dp = IterableWrapper(range(20)).map(square).filter(is_even).shuffle(buffer_size=4).batch(3)
    dp2 = pickle.loads(pickle.dumps(dp))
    shuffler, shuffler2 = dp.datapipe, dp2.datapipe
    shuffler.set_seed(7)
    shuffler2.set_seed(7)
    assert list(dp2) == list(dp)


# --- IterableWrapper ------------------------------------------------------------------------


@given(lists)
def test_iterable_wrapper(data):
    dp = IterableWrapper(data)
    assert list(dp) == data
    assert list(dp) == data  # every iteration starts over
    assert len(dp) == len(data)


def test_iterable_wrapper_deepcopies_per_iteration():
    data = [[0], [1]]

    def mutate(item):
        item.append(9)
        return item

    dp = IterableWrapper(data).map(mutate)
    assert list(dp) == [[0, 9], [1, 9]]
    assert list(dp) == [[0, 9], [1, 9]]
    assert data == [[0], [1]]

    shared = IterableWrapper(data, deepcopy=False).map(mutate)
    list(shared)
    assert data == [[0, 9], [1, 9]]


def test_iterable_wrapper_over_generator():
    dp = IterableWrapper(x for x in range(3))
    with pytest.warns(UserWarning, match="can not be deepcopied"):
        assert list(dp) == [0, 1, 2]
    with pytest.raises(TypeError, match="IterableWrapper instance doesn't have valid length"):
        len(dp)


# --- Mapper / Filter ------------------------------------------------------------------------


@given(lists)
def test_mapper(data):
    dp = IterableWrapper(data).map(square)
    assert list(dp) == [square(x) for x in data]
    assert len(dp) == len(data)


@given(lists)
def test_filter(data):
    assert list(IterableWrapper(data).filter(is_even)) == [x for x in data if is_even(x)]


def test_filter_has_no_length():
    dp = IterableWrapper(range(4)).filter(is_even)
    with pytest.raises(TypeError, match="^Filter instance doesn't have valid length$"):
        len(dp)
    with pytest.raises(TypeError, match="^Mapper instance doesn't have valid length$"):
        len(dp.map(square))


@pytest.mark.parametrize(
    ("cls", "name"), [(Mapper, "fn"), (Filter, "filter_fn")], ids=["Mapper", "Filter"]
)
def test_callable_required(cls, name):
    with pytest.raises(TypeError, match=f"{cls.__name__} expected a callable {name}, but got int"):
        cls(IterableWrapper([]), 3)


def test_filter_requires_bool():
    dp = IterableWrapper([1, 2]).filter(lambda x: x)
    with pytest.raises(
        ValueError, match="Boolean output is required for `filter_fn` of Filter, but got int"
    ):
        list(dp)


# --- Batcher --------------------------------------------------------------------------------


def reference_batches(data, batch_size, drop_last):
    batches = [data[i : i + batch_size] for i in range(0, len(data), batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    return batches


@given(lists, st.integers(1, 12), st.booleans())
def test_batcher(data, batch_size, drop_last):
    dp = IterableWrapper(data).batch(batch_size, drop_last=drop_last)
    expected = reference_batches(data, batch_size, drop_last)
    assert list(dp) == expected
    assert len(dp) == len(expected)


def test_batcher_length_needs_a_sized_source():
    with pytest.raises(TypeError, match="^Batcher instance doesn't have valid length$"):
        len(unsized([1, 2]).batch(2))


@pytest.mark.parametrize("batch_size", [0, -3])
def test_batcher_rejects_non_positive_batch_size(batch_size):
    message = f"Batcher expected batch_size > 0, but got {batch_size}"
    with pytest.raises(ValueError, match=message):
        IterableWrapper([1]).batch(batch_size)
    with pytest.raises(AssertionError, match=message):  # what torchdata raised
        Batcher(IterableWrapper([1]), batch_size)


@pytest.mark.parametrize("batch_size", [2.0, "2", True])
def test_batcher_rejects_non_int_batch_size(batch_size):
    with pytest.raises(TypeError, match="Batcher expected an int batch_size, but got"):
        IterableWrapper([1]).batch(batch_size)


# --- Header ---------------------------------------------------------------------------------


@given(lists, st.none() | st.integers(0, 60))
def test_header(data, limit):
    dp = IterableWrapper(data).header(limit)
    expected = data if limit is None else data[:limit]
    assert list(dp) == expected
    assert len(dp) == len(expected)


def test_header_default_limit_is_ten():
    assert list(IterableWrapper(range(20)).header()) == list(range(10))


def test_header_reads_no_further_than_its_limit():
    source = CountingSource(range(10))
    assert list(source.header(3)) == [0, 1, 2]
    assert source.pulled == 3


@pytest.mark.parametrize("limit", [None, 1, 5])
def test_header_over_unsized_source(limit):
    dp = unsized(range(2)).header(limit)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(dp) == [0, 1][:limit]
    with pytest.raises(TypeError, match="^Header instance doesn't have valid length$"):
        len(dp)


def test_header_over_infinite_source():
    assert list(IterableWrapper([1, 2]).cycle().header(5)) == [1, 2, 1, 2, 1]


def test_header_rejects_negative_limit():
    with pytest.raises(ValueError, match="Header expected limit >= 0 or None, but got -1"):
        IterableWrapper([1]).header(-1)


# --- Enumerator -----------------------------------------------------------------------------


@given(lists, st.integers(-5, 5))
def test_enumerator(data, start):
    dp = IterableWrapper(data).enumerate(starting_index=start)
    assert list(dp) == list(enumerate(data, start))
    assert len(dp) == len(data)
    assert list(IterableWrapper(data).enumerate()) == list(enumerate(data))


# --- Zipper / Concater ----------------------------------------------------------------------


@given(st.lists(lists, min_size=1, max_size=4))
def test_zipper(datas):
    dps = [IterableWrapper(d) for d in datas]
    dp = Zipper(*dps)
    assert list(dp) == list(zip(*datas, strict=False))
    assert len(dp) == min(len(d) for d in datas)
    assert dp.source_datapipes() == tuple(dps)


@given(st.lists(lists, min_size=1, max_size=4))
def test_concater(datas):
    dps = [IterableWrapper(d) for d in datas]
    dp = dps[0].concat(*dps[1:])
    assert list(dp) == [x for d in datas for x in d]
    assert len(dp) == sum(len(d) for d in datas)


@pytest.mark.parametrize("cls", [Zipper, Concater])
def test_combining_errors(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=f"{name} expected at least one DataPipe, but got nothing"):
        cls()
    with pytest.raises(
        TypeError,
        match=rf"{name} expected all inputs to be `IterDataPipe`, but input 1 is list \(\[1\]\)",
    ):
        cls(IterableWrapper([1]), [1])
    with pytest.raises(TypeError, match=f"^{name} instance doesn't have valid length$"):
        len(cls(IterableWrapper([1]), unsized([1])))


# --- Cycler ---------------------------------------------------------------------------------


@given(lists, st.integers(0, 4))
def test_cycler(data, count):
    dp = IterableWrapper(data).cycle(count)
    assert list(dp) == data * count
    assert len(dp) == len(data) * count


def test_cycler_forever():
    dp = IterableWrapper([1, 2, 3]).cycle()
    assert list(Header(dp, 7)) == [1, 2, 3, 1, 2, 3, 1]
    with pytest.raises(
        TypeError,
        match="This Cycler instance cycles forever, and therefore doesn't have valid length",
    ):
        len(dp)


def test_cycler_rejects_negative_count():
    with pytest.raises(ValueError, match="Cycler expected non-negative count, got -2"):
        IterableWrapper([1]).cycle(-2)


# --- Shuffler -------------------------------------------------------------------------------


def reference_shuffle(data, buffer_size, seed):
    """The buffer shuffle written out plainly with its own random.Random: a full buffer swaps a
    uniform pick for each new item; the rest comes out as one uniform permutation."""
    rng = random.Random(seed)
    buffer, out = [], []
    for x in data:
        if len(buffer) == buffer_size:
            idx = int(rng.random() * buffer_size)
            out.append(buffer[idx])
            buffer[idx] = x
        else:
            buffer.append(x)
    rng.shuffle(buffer)
    return out + buffer


@given(lists, st.integers(1, 60), st.integers(0, 2**64 - 1))
def test_shuffler_matches_reference(data, buffer_size, seed):
    dp = IterableWrapper(data).shuffle(buffer_size=buffer_size).set_seed(seed)
    out = list(dp)
    assert out == reference_shuffle(data, buffer_size, seed)
    assert sorted(out) == sorted(data)
    assert len(dp) == len(data)


@given(st.integers(0, 60), st.integers(1, 10), st.integers(0, 2**32))
def test_shuffler_is_buffer_local(n, buffer_size, seed):
    """Item i cannot come out before position i - buffer_size + 1."""
    out = list(IterableWrapper(range(n)).shuffle(buffer_size=buffer_size).set_seed(seed))
    assert all(position >= item - buffer_size + 1 for position, item in enumerate(out))


def test_shuffler_buffer_of_one_keeps_order():
    assert list(IterableWrapper(range(20)).shuffle(buffer_size=1)) == list(range(20))


def test_shuffler_seed_applies_to_the_next_iteration_only():
    dp = IterableWrapper(range(50)).shuffle()
    first = list(dp.set_seed(3))
    assert list(dp.set_seed(3)) == first
    assert list(dp) != first  # no new seed: the stream continues, a new epoch order
    assert sorted(dp) == list(range(50))


def test_shuffler_never_touches_the_global_rng():
    state = random.getstate()
    list(IterableWrapper(range(100)).shuffle(buffer_size=7))
    list(IterableWrapper(range(100)).shuffle().set_seed(1))
    assert random.getstate() == state


def test_shuffler_set_shuffle():
    dp = IterableWrapper(range(30)).shuffle().set_shuffle(False)
    assert list(dp) == list(range(30))
    assert sorted(dp.set_shuffle(True)) == list(range(30))


@pytest.mark.parametrize("buffer_size", [0, -1])
def test_shuffler_rejects_non_positive_buffer(buffer_size):
    message = f"Shuffler expected buffer_size > 0, but got {buffer_size}"
    with pytest.raises(ValueError, match=message):
        IterableWrapper([1]).shuffle(buffer_size=buffer_size)
    with pytest.raises(AssertionError, match=message):
        Shuffler(IterableWrapper([1]), buffer_size=buffer_size)


def test_shuffler_buffer_size_is_keyword_only():
    with pytest.raises(TypeError):
        IterableWrapper([1]).shuffle(3)


# --- ShardingFilter -------------------------------------------------------------------------


@given(lists, st.integers(1, 6), st.data())
def test_sharding_filter(data, n, draw):
    k = draw.draw(st.integers(0, n - 1))
    dp = IterableWrapper(data).sharding_filter()
    assert list(dp) == data  # unsharded: everything passes
    dp.apply_sharding(n, k)
    assert list(dp) == data[k::n]
    assert len(dp) == len(data[k::n])


def test_sharding_filter_groups_combine():
    data = list(range(30))
    shards = []
    for rank in range(2):
        for worker in range(3):
            dp = IterableWrapper(data).sharding_filter()
            dp.apply_sharding(2, rank, SHARDING_PRIORITIES.DISTRIBUTED)
            dp.apply_sharding(3, worker, SHARDING_PRIORITIES.MULTIPROCESSING)
            assert (dp.num_of_instances, dp.instance_id) == (6, worker + 3 * rank)
            shards.append(list(dp))
    assert sorted(x for shard in shards for x in shard) == data


def test_sharding_filter_group_filter():
    dp = ShardingFilter(IterableWrapper(range(12)), SHARDING_PRIORITIES.MULTIPROCESSING)
    dp.apply_sharding(2, 1, SHARDING_PRIORITIES.DISTRIBUTED)
    dp.apply_sharding(3, 2, SHARDING_PRIORITIES.MULTIPROCESSING)
    assert list(dp) == [2, 5, 8, 11]


def test_sharding_filter_cannot_mix_default_groups():
    dp = IterableWrapper(range(4)).sharding_filter()
    dp.apply_sharding(2, 0)
    with pytest.raises(RuntimeError, match="cannot mix DEFAULT and non DEFAULT groups"):
        dp.apply_sharding(2, 0, SHARDING_PRIORITIES.DISTRIBUTED)
    dp = IterableWrapper(range(4)).sharding_filter()
    dp.apply_sharding(2, 0, SHARDING_PRIORITIES.DISTRIBUTED)
    with pytest.raises(RuntimeError, match="cannot mix DEFAULT and non DEFAULT groups"):
        dp.apply_sharding(2, 0)


@pytest.mark.parametrize(
    ("n", "k", "message"),
    [
        (2, 2, r"instance_id\(2\) and num_of_instances\(2\)"),
        (3, -1, r"instance_id\(-1\) and num_of_instances\(3\)"),
        (0, 0, "ShardingFilter expected num_of_instances >= 1, but got 0"),
    ],
)
def test_sharding_filter_bad_instance(n, k, message):
    with pytest.raises(ValueError, match=message):
        IterableWrapper([1]).sharding_filter().apply_sharding(n, k)


def test_sharding_filter_length_needs_a_sized_source():
    with pytest.raises(TypeError, match="^ShardingFilter instance doesn't have valid length$"):
        len(unsized([1]).sharding_filter())
