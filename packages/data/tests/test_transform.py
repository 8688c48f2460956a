"""Mapper columns, Filter columns, FlatMapper, Collator, UnBatcher, BucketBatcher,
MaxTokenBucketizer and Grouper: behaviour against plain references, and bad arguments."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from emberdata.datapipes import DataChunk
from emberdata.datapipes.iter import (
    BucketBatcher,
    Collator,
    Grouper,
    IterableWrapper,
    MaxTokenBucketizer,
    UnBatcher,
)

# --- Mapper / Filter columns -----------------------------------------------------------------


def test_mapper_input_and_output_columns():
    rows = [(1, 2, 3), (4, 5, 6)]
    dp = IterableWrapper(rows)
    assert list(dp.map(lambda x: -x, input_col=0)) == [(-1, 2, 3), (-4, 5, 6)]
    assert list(dp.map(lambda a, b: a + b, input_col=[0, 2])) == [(4, 2), (10, 5)]
    assert list(dp.map(lambda a, b: a + b, input_col=(0, 2), output_col=1)) == [(1, 4, 3), (4, 10, 6)]
    assert list(dp.map(lambda x: x * 10, input_col=1, output_col=-1)) == [(1, 2, 3, 20), (4, 5, 6, 50)]
    assert list(dp.map(lambda x: x * 10, input_col=1, output_col=[0])) == [(20, 2, 3), (50, 5, 6)]


def test_mapper_on_dicts_leaves_the_source_alone():
    rows = [{"a": 1, "b": 2}]
    dp = IterableWrapper(rows, deepcopy=False).map(lambda x: x + 1, input_col="a", output_col="c")
    assert list(dp) == [{"a": 1, "b": 2, "c": 2}]
    assert rows == [{"a": 1, "b": 2}]


def test_mapper_column_errors():
    dp = IterableWrapper([(1, 2)])
    with pytest.raises(ValueError, match="`output_col` must be None when `input_col` is None."):
        dp.map(abs, output_col=1)
    with pytest.raises(ValueError, match="`output_col` must be a single-element list or tuple"):
        dp.map(abs, input_col=0, output_col=[0, 1])
    with pytest.raises(ValueError, match=r"takes 1 positional parameters \(1 required\), but "
                                         r"input_col=\[0, 1\] passes 2"):
        dp.map(lambda x: x, input_col=[0, 1])
    with pytest.raises(ValueError, match="takes 2 positional parameters"):
        dp.filter(lambda x, y: True, input_col=0)


def test_filter_input_col():
    dp = IterableWrapper([(1, "a"), (2, "b"), (3, "c")])
    assert list(dp.filter(lambda x: x % 2 == 1, input_col=0)) == [(1, "a"), (3, "c")]
    assert list(dp.filter(lambda x, y: y == "b", input_col=[0, 1])) == [(2, "b")]


# --- FlatMapper ------------------------------------------------------------------------------


@given(st.lists(st.lists(st.integers(), max_size=4), max_size=10))
def test_flatmapper(nested):
    assert list(IterableWrapper(nested).flatmap()) == [x for xs in nested for x in xs]
    assert list(IterableWrapper(nested).flatmap(reversed)) == [x for xs in nested for x in xs[::-1]]


def test_flatmapper_input_col_and_errors():
    dp = IterableWrapper([("ab", 1), ("c", 2)])
    assert list(dp.flatmap(list, input_col=0)) == ["a", "b", "c"]
    with pytest.raises(TypeError, match="FlatMapper expected a callable fn, but got int"):
        dp.flatmap(3)
    with pytest.raises(TypeError, match="^FlatMapper instance doesn't have valid length$"):
        len(dp.flatmap())


# --- Collator --------------------------------------------------------------------------------


def test_collator_default_collate_makes_tensors():
    (batch,) = list(IterableWrapper([(1, 0.5), (2, 1.5)]).batch(2).collate())
    ids, values = batch
    assert isinstance(ids, ember.Tensor) and ids.dtype == ember.int64
    assert ids.tolist() == [1, 2]
    assert values.dtype == ember.float64 and values.tolist() == [0.5, 1.5]


def test_collator_conversion_dict_and_collate_fn():
    rows = [{"x": 1, "name": "a"}, {"x": 2, "name": "b"}]
    (batch,) = list(IterableWrapper(rows).batch(2).collate({"name": "-".join}))
    assert batch["name"] == "a-b"
    assert batch["x"].tolist() == [1, 2]
    assert list(IterableWrapper(range(4)).batch(2).collate(collate_fn=max)) == [1, 3]
    assert len(IterableWrapper(range(5)).batch(2).collate()) == 3


def test_collator_errors():
    with pytest.raises(TypeError, match="Collator expected a callable or dict `conversion`"):
        Collator(IterableWrapper([]), conversion=3)
    with pytest.raises(TypeError, match="Collator expected a callable for column 'x', but got int"):
        Collator(IterableWrapper([]), conversion={"x": 1})
    dp = IterableWrapper([[1, 2]]).collate({"x": sum})
    with pytest.raises(TypeError, match="expects a non-empty batch of dicts"):
        list(dp)


# --- UnBatcher -------------------------------------------------------------------------------


def test_unbatcher_levels():
    data = [[[0, 1], [2]], [[3, 4]]]
    dp = IterableWrapper(data)
    assert list(dp.unbatch(0)) == data
    assert list(dp.unbatch()) == [[0, 1], [2], [3, 4]]
    assert list(dp.unbatch(unbatch_level=2)) == [0, 1, 2, 3, 4]
    assert list(dp.unbatch(unbatch_level=-1)) == [0, 1, 2, 3, 4]
    with pytest.raises(IndexError, match="unbatch_level 3 exceeds the depth of the DataPipe"):
        list(dp.unbatch(unbatch_level=3))
    with pytest.raises(ValueError, match="UnBatcher expected unbatch_level >= -1, but got -2"):
        UnBatcher(dp, unbatch_level=-2)


def test_batcher_wrapper_class():
    batches = list(IterableWrapper(range(3)).batch(2))
    assert all(type(b) is DataChunk for b in batches)
    assert list(IterableWrapper(range(3)).batch(2, wrapper_class=tuple)) == [(0, 1), (2,)]
    assert batches[0].as_str() == "[0, 1]"
    assert list(batches[0].raw_iterator()) == [0, 1]


def test_shuffler_unbatch_level():
    dp = IterableWrapper(range(10)).batch(3).shuffle(unbatch_level=1).set_seed(0)
    out = list(dp)
    assert sorted(out) == list(range(10)) and out != list(range(10))


# --- BucketBatcher ---------------------------------------------------------------------------


@settings(max_examples=60)
@given(
    n=st.integers(0, 60),
    batch_size=st.integers(1, 5),
    batch_num=st.integers(1, 4),
    bucket_num=st.integers(1, 3),
    drop_last=st.booleans(),
    sort=st.booleans(),
    in_batch=st.booleans(),
    seed=st.integers(0, 100),
)
def test_bucketbatcher_keeps_every_item(n, batch_size, batch_num, bucket_num, drop_last, sort,
                                        in_batch, seed):
    from emberdata.datapipes.utils import apply_random_seed

    dp = BucketBatcher(IterableWrapper(range(n)), batch_size, drop_last, batch_num, bucket_num,
                       sorted if sort else None, in_batch)
    apply_random_seed(dp, seed)
    batches = list(dp)
    assert len(batches) == len(dp)
    # One batch at most is short (sorting and bucket shuffling may move it from the end).
    assert sum(len(b) != batch_size for b in batches) <= (0 if drop_last else 1)
    flat = sorted(x for b in batches for x in b)
    if drop_last:
        assert len(flat) == n - n % batch_size
    else:
        assert flat == list(range(n))


def test_bucketbatcher_sorts_within_buckets():
    lengths = [5, 1, 4, 2, 3, 6]
    dp = IterableWrapper(lengths).bucketbatch(batch_size=2, batch_num=3, sort_key=sorted,
                                              use_in_batch_shuffle=False)
    apply = list(dp)
    assert sorted(map(sorted, apply)) == [[1, 2], [3, 4], [5, 6]]


def test_bucketbatcher_errors():
    for name, kwargs in [("batch_size", {"batch_size": 0}),
                         ("batch_num", {"batch_size": 1, "batch_num": 0}),
                         ("bucket_num", {"batch_size": 1, "bucket_num": 0})]:
        with pytest.raises(ValueError, match=f"BucketBatcher expected {name} > 0, but got 0"):
            IterableWrapper([1]).bucketbatch(**kwargs)
    with pytest.raises(TypeError, match="BucketBatcher expected a callable sort_key"):
        IterableWrapper([1]).bucketbatch(2, sort_key="len")


# --- MaxTokenBucketizer ----------------------------------------------------------------------


@given(st.lists(st.text(max_size=6), max_size=40), st.integers(6, 20), st.integers(1, 50),
       st.booleans())
def test_max_token_bucketizer_limits(words, max_tokens, buffer_size, padding):
    batches = list(MaxTokenBucketizer(IterableWrapper(words), max_tokens,
                                      buffer_size=buffer_size, include_padding=padding))
    assert sorted(w for b in batches for w in b) == sorted(words)
    for batch in batches:
        tokens = max(map(len, batch)) * len(batch) if padding else sum(map(len, batch))
        assert tokens <= max_tokens or len(batch) == 1


def test_max_token_bucketizer_filters_and_sorts():
    words = ["aaaa", "a", "aaa", "", "aa", "aaaaaaa"]
    dp = IterableWrapper(words).max_token_bucketize(6, min_len=1, max_len=4)
    assert list(dp) == [["a", "aa", "aaa"], ["aaaa"]]
    padded = IterableWrapper(["a", "aaa", "aa"]).max_token_bucketize(6, include_padding=True)
    assert list(padded) == [["a", "aa"], ["aaa"]]  # 2 * 3 = 6 fits, 3 * 3 = 9 does not


def test_max_token_bucketizer_errors():
    dp = IterableWrapper(["a"])
    with pytest.raises(ValueError, match="expected 0 <= min_len <= max_len, but got min_len=5"):
        dp.max_token_bucketize(10, min_len=5, max_len=3)
    with pytest.raises(ValueError, match="expected max_token_count >= max_len"):
        dp.max_token_bucketize(3, max_len=5)
    with pytest.raises(ValueError, match="MaxTokenBucketizer expected buffer_size > 0, but got 0"):
        dp.max_token_bucketize(3, buffer_size=0)
    with pytest.raises(TypeError, match="MaxTokenBucketizer expected a callable len_fn"):
        dp.max_token_bucketize(3, len_fn=None)


# --- Grouper ---------------------------------------------------------------------------------


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 12))
def test_grouper_groups_every_item_by_key(keys, buffer_size):
    dp = IterableWrapper(keys).groupby(lambda k: k, buffer_size=buffer_size, keep_key=True)
    groups = list(dp)
    assert sorted(x for _, g in groups for x in g) == sorted(keys)
    assert all(set(g) == {k} for k, g in groups)


def test_grouper_group_size_and_guarantee():
    dp = IterableWrapper(range(10)).groupby(lambda x: x % 2, group_size=3)
    assert list(dp) == [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]
    full = IterableWrapper([0, 3, 1, 6]).groupby(
        lambda x: x % 3, buffer_size=3, group_size=3, guaranteed_group_size=2
    )
    assert list(full) == [[0, 3], [1], [6]]  # the full buffer yields its largest group
    failing = IterableWrapper([0, 1, 2]).groupby(
        lambda x: x, buffer_size=2, group_size=2, guaranteed_group_size=2
    )
    with pytest.raises(RuntimeError, match="smaller than guaranteed_group_size=2"):
        list(failing)
    dropping = IterableWrapper([0, 1, 2]).groupby(
        lambda x: x, buffer_size=2, group_size=2, guaranteed_group_size=2, drop_remaining=True
    )
    assert list(dropping) == [[2]]  # groups too small when the buffer fills are dropped


def test_grouper_errors():
    dp = IterableWrapper([1])
    with pytest.raises(ValueError, match="Grouper expected group_size <= buffer_size"):
        Grouper(dp, abs, buffer_size=2, group_size=3)
    with pytest.raises(ValueError, match="Grouper expected group_size with guaranteed_group_size"):
        Grouper(dp, abs, guaranteed_group_size=1)
    with pytest.raises(ValueError, match="Grouper expected guaranteed_group_size <= group_size"):
        Grouper(dp, abs, group_size=2, guaranteed_group_size=3)
    with pytest.raises(TypeError, match="Grouper expected a callable group_key_fn"):
        Grouper(dp, None)
    with pytest.raises(AssertionError):  # torchdata asserted these
        Grouper(dp, abs, buffer_size=0)
