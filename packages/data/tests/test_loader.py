"""DataPipes in ember's DataLoader (Note [DataLoader pipeline protocol]): shuffle=True drives
the Shuffler, workers get their shard, every sample comes once per epoch, the same seed gives
the same order for any number of workers, epochs differ; worker errors and dead workers."""

import os
import signal

import pytest

import ember
from ember.utils.data import DataLoader
from emberdata.datapipes.iter import IterableWrapper, ShardingFilter, Shuffler


def pipeline(n=100):
    return IterableWrapper(range(n)).shuffle(buffer_size=1000).sharding_filter()


def samples(loader):
    return [int(x) for x in loader]


def batches(loader):
    return [b.tolist() for b in loader]


def run(num_workers, seed=0, n=100, **kwargs):
    kwargs.setdefault("batch_size", None)
    loader = DataLoader(pipeline(n), num_workers=num_workers, shuffle=True,
                        generator=ember.Generator().manual_seed(seed), **kwargs)
    return samples(loader) if kwargs["batch_size"] is None else batches(loader)


def test_the_issue_example_works(deadline):
    with deadline(60):
        dp = IterableWrapper(range(1000)).shuffle().sharding_filter()
        loader = DataLoader(dp, batch_size=None, num_workers=2, shuffle=True)
        first, second = samples(loader), samples(loader)
    assert sorted(first) == list(range(1000)) and sorted(second) == list(range(1000))
    assert first != list(range(1000))
    assert first != second  # a new order every epoch
    assert len(loader) == 1000


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_same_seed_same_order_for_any_number_of_workers(num_workers, deadline):
    with deadline(60):
        reference = run(0, seed=11)
        assert run(num_workers, seed=11) == reference
        assert run(num_workers, seed=12) != reference
    assert sorted(reference) == list(range(100))


@pytest.mark.parametrize(("num_workers", "batch_size", "drop_last"),
                         [(2, 7, False), (3, 8, True), (2, 1, False), (3, 50, False)])
def test_batches_do_not_depend_on_the_number_of_workers(num_workers, batch_size, drop_last, deadline):
    with deadline(60):
        reference = run(0, seed=3, batch_size=batch_size, drop_last=drop_last)
        got = run(num_workers, seed=3, batch_size=batch_size, drop_last=drop_last)
    assert got == reference
    flat = [x for b in got for x in b]
    assert len(set(flat)) == len(flat) and set(flat) <= set(range(100))  # each at most once
    assert len(flat) == (100 - 100 % batch_size if drop_last else 100)


def test_ember_manual_seed_reproduces_an_unseeded_loader(deadline):
    with deadline(60):
        ember.manual_seed(5)
        a = samples(DataLoader(pipeline(), batch_size=None, num_workers=2, shuffle=True))
        ember.manual_seed(5)
        b = samples(DataLoader(pipeline(), batch_size=None, num_workers=2, shuffle=True))
    assert a == b


def test_persistent_workers_new_order_every_epoch(deadline):
    with deadline(60):
        loader = DataLoader(pipeline(60), batch_size=4, num_workers=2, persistent_workers=True,
                            shuffle=True, generator=ember.Generator().manual_seed(1))
        epochs = [batches(loader) for _ in range(3)]
        single = DataLoader(pipeline(60), batch_size=4, num_workers=0, shuffle=True,
                            generator=ember.Generator().manual_seed(1))
        single_epochs = [batches(single) for _ in range(3)]
    assert epochs == single_epochs
    for epoch in epochs:
        assert sorted(x for b in epoch for x in b) == list(range(60))
    assert epochs[0] != epochs[1] != epochs[2]


def test_shuffle_option_drives_the_shuffler():
    dp = pipeline(50)
    assert samples(DataLoader(dp, batch_size=None, shuffle=False)) == list(range(50))
    assert samples(DataLoader(dp, batch_size=None, shuffle=True)) != list(range(50))
    plain = IterableWrapper(range(50))
    with pytest.warns(UserWarning, match="does not contain a `Shuffler`. Adding one at the end"):
        loader = DataLoader(plain, batch_size=None, shuffle=True)
    assert isinstance(loader.dataset, Shuffler)
    out = samples(loader)
    assert sorted(out) == list(range(50)) and out != list(range(50))


def test_random_pipes_after_the_sharding_filter_differ_per_worker_and_reproduce(deadline):
    def build():
        return IterableWrapper(range(40)).sharding_filter().shuffle()

    with deadline(60):
        a = samples(DataLoader(build(), batch_size=None, num_workers=2,
                               generator=ember.Generator().manual_seed(2)))
        b = samples(DataLoader(build(), batch_size=None, num_workers=2,
                               generator=ember.Generator().manual_seed(2)))
    assert a == b and sorted(a) == list(range(40))
    evens, odds = a[0::2], a[1::2]
    assert sorted(evens) == list(range(0, 40, 2)) and sorted(odds) == list(range(1, 40, 2))


def test_workers_without_a_sharding_filter_are_warned_about():
    dp = IterableWrapper(range(4))
    with pytest.warns(UserWarning, match="without a sharding_filter\\(\\): every worker yields every sample"):
        dp._dataloader_start_epoch(0, 0, 2, None)


def test_loader_length_and_sharding_state_stay_in_the_workers():
    dp = pipeline(30)
    loader = DataLoader(dp, batch_size=4, num_workers=2)
    assert len(loader) == 8
    assert len(batches(loader)) == 8
    sharding = dp
    assert isinstance(sharding, ShardingFilter) and sharding.num_of_instances == 1


def failing_at_13(x):
    if x == 13:
        raise ValueError(f"cannot load sample {x}")
    return x


def test_worker_exception_names_the_worker_and_keeps_the_traceback(deadline):
    dp = IterableWrapper(range(40)).sharding_filter().map(failing_at_13)
    with deadline(60), pytest.raises(ValueError) as info:
        samples(DataLoader(dp, batch_size=None, num_workers=2))
    message = str(info.value)
    assert "Caught ValueError in DataLoader worker process 1." in message
    assert "Original Traceback" in message and "in failing_at_13" in message
    assert "cannot load sample 13" in message


def kill_myself_at_7(x):
    if x == 7:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def test_a_killed_worker_is_detected_not_waited_on(deadline):
    dp = IterableWrapper(range(40)).sharding_filter().map(kill_myself_at_7)
    with deadline(60), pytest.raises(RuntimeError, match="exited unexpectedly with exit code -9"):
        samples(DataLoader(dp, batch_size=None, num_workers=2))
