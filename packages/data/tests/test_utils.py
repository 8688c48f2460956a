"""Graph utilities: traversal, apply_sharding, apply_shuffle_settings, apply_random_seed."""

import random
from collections import Counter
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emberdata.datapipes import IterDataPipe
from emberdata.datapipes.iter import (
    SHARDING_PRIORITIES,
    IterableWrapper,
    Mapper,
    ShardingFilter,
    Shuffler,
    Zipper,
)
from emberdata.datapipes.utils import (
    apply_random_seed,
    apply_sharding,
    apply_shuffle_settings,
    find_dps,
    list_dps,
    traverse_dps,
)


class SeedRecorder(IterDataPipe):
    """A random pipe (it has set_seed) that records the seeds it is given."""

    def __init__(self, source_datapipe):
        self.source_datapipe = source_datapipe
        self.seeds = []

    def set_seed(self, seed):
        self.seeds.append(seed)
        return self

    def __iter__(self):
        return iter(self.source_datapipe)


def pipeline(data, buffer_size):
    """Shuffle before sharding (one shared order), then shuffle the shard again."""
    return (
        IterableWrapper(data)
        .enumerate()
        .shuffle(buffer_size=buffer_size)
        .sharding_filter()
        .shuffle(buffer_size=3)
    )


def run_instances(data, buffer_size, num_instances, seed):
    shards = []
    for instance_id in range(num_instances):
        dp = pipeline(data, buffer_size)  # each worker holds its own copy of the pipeline
        apply_random_seed(dp, random.Random(seed))
        apply_sharding(dp, num_instances, instance_id)
        shards.append(list(dp))
    return shards


# --- traversal ------------------------------------------------------------------------------


def test_traverse_dps():
    a, b = IterableWrapper([1]), IterableWrapper([2])
    zipped = Zipper(a.map(str), b)
    graph = traverse_dps(zipped)
    ((root, sources),) = graph.values()
    assert root is zipped
    assert [dp for dp, _ in sources.values()] == [zipped.datapipes[0], b]
    assert list_dps(graph) == [zipped, zipped.datapipes[0], b, a]
    assert find_dps(graph, Mapper) == [zipped.datapipes[0]]
    assert list_dps(graph, exclude_dps=zipped.datapipes[0]) == [zipped, b]


def test_traverse_shared_source_is_listed_once():
    source = IterableWrapper(range(3))
    dp = source.map(str).zip(source.map(float))
    assert list_dps(traverse_dps(dp)).count(source) == 1


def test_traverse_dps_rejects_non_datapipes():
    with pytest.raises(TypeError, match="traverse_dps expected an IterDataPipe or a MapDataPipe, but got list"):
        traverse_dps([1, 2])


def test_traverse_survives_a_cycle():
    dp = IterableWrapper([1]).map(str)
    dp.datapipe = dp  # a (broken) self-loop must not recurse forever
    assert list_dps(traverse_dps(dp)) == [dp]


# --- apply_sharding -------------------------------------------------------------------------


@given(st.lists(st.integers(), max_size=40), st.integers(1, 5))
def test_apply_sharding_without_shuffle(data, n):
    shards = []
    for k in range(n):
        dp = IterableWrapper(data).sharding_filter().map(str)
        assert apply_sharding(dp, n, k) is dp
        shards.append(list(dp))
    assert shards == [[str(x) for x in data[k::n]] for k in range(n)]


def test_apply_sharding_reaches_every_branch():
    dp = Zipper(
        IterableWrapper(range(6)).sharding_filter(), IterableWrapper("abcdef").sharding_filter()
    )
    apply_sharding(dp, 3, 1)
    assert list(dp) == [(1, "b"), (4, "e")]


def test_apply_sharding_groups():
    dp = IterableWrapper(range(12)).sharding_filter()
    apply_sharding(dp, 2, 1, SHARDING_PRIORITIES.DISTRIBUTED)
    apply_sharding(dp, 2, 0, SHARDING_PRIORITIES.MULTIPROCESSING)
    assert list(dp) == [2, 6, 10]  # worker 0 of rank 1: instance 0 + 2 * 1 of 4


def test_apply_sharding_twice_on_one_path():
    dp = IterableWrapper(range(8)).sharding_filter().map(str).sharding_filter()
    with pytest.raises(RuntimeError, match="Sharding twice on a single pipeline"):
        apply_sharding(dp, 2, 0)


def test_apply_sharding_to_a_two_argument_sharding_pipe():
    class OldStyle(IterDataPipe):
        def __init__(self, source_datapipe):
            self.source_datapipe = source_datapipe
            self.applied = None

        def apply_sharding(self, num_of_instances, instance_id):
            self.applied = (num_of_instances, instance_id)

        def __iter__(self):
            return iter(self.source_datapipe)

    dp = OldStyle(IterableWrapper([1]))
    apply_sharding(dp, 4, 3)
    assert dp.applied == (4, 3)


# --- apply_shuffle_settings -----------------------------------------------------------------


def test_apply_shuffle_settings():
    dp = IterableWrapper(range(40)).shuffle().map(str)
    assert apply_shuffle_settings(dp, shuffle=False) is dp
    assert list(dp) == [str(x) for x in range(40)]
    apply_shuffle_settings(dp, shuffle=None)
    assert list(dp) == [str(x) for x in range(40)]
    apply_shuffle_settings(dp, shuffle=True)
    assert sorted(dp, key=int) == [str(x) for x in range(40)]


def test_apply_shuffle_settings_adds_a_shuffler():
    dp = IterableWrapper(range(5))
    with pytest.warns(UserWarning, match="does not contain a `Shuffler`. Adding one at the end"):
        shuffled = apply_shuffle_settings(dp, shuffle=True)
    assert isinstance(shuffled, Shuffler)
    assert shuffled.datapipe is dp
    assert apply_shuffle_settings(dp, shuffle=False) is dp


# --- apply_random_seed ----------------------------------------------------------------------


@settings(max_examples=200)
@given(
    data=st.lists(st.integers(-3, 3), max_size=60),
    num_instances=st.integers(1, 5),
    seed=st.integers(0, 2**64 - 1),
    buffer_size=st.integers(1, 70),
)
def test_shards_are_disjoint_and_exhaustive(data, num_instances, seed, buffer_size):
    shards = run_instances(data, buffer_size, num_instances, seed)

    positions = [{i for i, _ in shard} for shard in shards]
    for left, right in combinations(positions, 2):
        assert not left & right
    assert Counter(item for shard in shards for item in shard) == Counter(enumerate(data))
    assert sorted(len(s) for s in shards) == sorted(
        len(data[k::num_instances]) for k in range(num_instances)
    )

    assert run_instances(data, buffer_size, num_instances, seed) == shards  # reproducible


@given(seed=st.integers(0, 2**32))
def test_reseeding_the_same_pipeline_reproduces_it(seed):
    dp = pipeline(range(50), 10)
    apply_sharding(dp, 2, 1)
    apply_random_seed(dp, random.Random(seed))
    first = list(dp)
    apply_random_seed(dp, random.Random(seed))
    assert list(dp) == first


def test_without_a_shared_seed_shards_overlap():
    """Why the shared seed matters: shuffling differently per instance loses data."""
    data = list(range(40))
    shards = []
    for instance_id, seed in enumerate([1, 2]):
        dp = IterableWrapper(data).shuffle().set_seed(seed).sharding_filter()
        apply_sharding(dp, 2, instance_id)
        shards.append(list(dp))
    assert sorted(shards[0] + shards[1]) != data


def test_seeds_are_shared_before_sharding_and_local_after():
    def build():
        before = SeedRecorder(IterableWrapper(range(10)))
        after = SeedRecorder(before.sharding_filter())
        return before, after

    runs = []
    for instance_id in range(3):
        before, after = build()
        apply_sharding(after, 3, instance_id)
        apply_random_seed(after, random.Random(5))
        runs.append((before.seeds, after.seeds))
    assert runs[0][0] == runs[1][0] == runs[2][0]
    assert len({seeds[0] for _, seeds in runs}) == 3


def test_explicit_instance_id_and_int_seed():
    before = SeedRecorder(IterableWrapper(range(4)))
    after = SeedRecorder(before.sharding_filter())
    apply_random_seed(after, 9, instance_id=1)
    apply_random_seed(after, random.Random(9), instance_id=1)
    apply_random_seed(after, random.Random(9), instance_id=2)
    assert before.seeds[0] == before.seeds[1] == before.seeds[2]
    assert after.seeds[0] == after.seeds[1] != after.seeds[2]


def test_apply_random_seed_without_sharding():
    dp = SeedRecorder(IterableWrapper([1])).shuffle(buffer_size=2)
    assert apply_random_seed(dp, random.Random(0)) is dp
    assert len(dp.datapipe.seeds) == 1


@pytest.mark.parametrize("rng", [None, 1.5, True, "seed"])
def test_apply_random_seed_rejects_other_generators(rng):
    with pytest.raises(
        TypeError, match="apply_random_seed expected a random.Random or an int seed, but got"
    ):
        apply_random_seed(IterableWrapper([1]), rng)


def test_sharding_filter_is_found_by_type():
    dp = IterableWrapper(range(3)).sharding_filter().map(str)
    assert find_dps(traverse_dps(dp), ShardingFilter) == [dp.datapipe]
