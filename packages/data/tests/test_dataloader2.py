"""DataLoader2 with the in-process and multiprocessing reading services: seeds, epochs,
adapters, worker hooks, state dicts, errors and dead workers."""

import os
import pickle
import signal
import time

import pytest

import ember
from emberdata.dataloader2 import (
    DataLoader2,
    InProcessReadingService,
    MultiProcessingReadingService,
    SeedGenerator,
    SequentialReadingService,
    WorkerInfo,
)
from emberdata.dataloader2.adapter import Shuffle
from emberdata.datapipes.iter import IterableWrapper
from emberdata.datapipes.map import SequenceWrapper


def square(x):
    return x * x


def failing_at_13(x):
    if x == 13:
        raise ValueError(f"cannot load sample {x}")
    return x


def pipeline(n=60):
    return IterableWrapper(range(n)).shuffle().sharding_filter().map(square)


def services():
    return {
        "in-process": lambda: InProcessReadingService(),
        "in-process-prefetch": lambda: InProcessReadingService(prefetch_cnt=4),
        "mp0": lambda: MultiProcessingReadingService(num_workers=0),
        "mp1": lambda: MultiProcessingReadingService(num_workers=1),
        "mp2": lambda: MultiProcessingReadingService(num_workers=2, worker_prefetch_cnt=2),
        "mp2-no-prefetch": lambda: MultiProcessingReadingService(
            num_workers=2, worker_prefetch_cnt=0, main_prefetch_cnt=0),
    }


def epochs(reading_service, seed, deadline, count=2, n=60):
    with deadline(60):
        loader = DataLoader2(pipeline(n), reading_service=reading_service)
        loader.seed(seed)
        try:
            return [list(loader) for _ in range(count)]
        finally:
            loader.shutdown()


def test_every_service_gives_the_same_epochs_for_one_seed(deadline):
    reference = epochs(None, 7, deadline)
    for name, make in services().items():
        assert epochs(make(), 7, deadline) == reference, name
    first, second = reference
    assert sorted(first) == sorted(second) == [square(x) for x in range(60)]
    assert first != second  # each epoch its own order
    assert epochs(None, 8, deadline) != reference


def test_unseeded_loader_follows_ember_manual_seed():
    ember.manual_seed(3)
    a = list(DataLoader2(pipeline()))
    ember.manual_seed(3)
    b = list(DataLoader2(pipeline()))
    assert a == b


def test_random_pipes_after_sharding_get_per_worker_seeds(deadline):
    def build():
        return IterableWrapper(range(40)).sharding_filter().shuffle()

    with deadline(60):
        outs = []
        for _ in range(2):
            loader = DataLoader2(build(), reading_service=MultiProcessingReadingService(2))
            loader.seed(1)
            outs.append(list(loader))
            loader.shutdown()
    assert outs[0] == outs[1] and sorted(outs[0]) == list(range(40))


def test_seed_generator_paths():
    g = SeedGenerator(5)
    assert g.spawn(1).generate_seed() == SeedGenerator(5).spawn(1).generate_seed()
    assert g.spawn(1).generate_seed() != g.spawn(2).generate_seed()
    assert g.spawn(1).generate_shared_seed() == g.spawn(2).generate_shared_seed()
    assert pickle.loads(pickle.dumps(g)) == g
    with pytest.raises(TypeError, match="SeedGenerator.seed expected an int seed, but got float"):
        SeedGenerator(1.5)


def test_adapters_run_once_on_a_copy():
    dp = IterableWrapper(range(20)).shuffle()
    loader = DataLoader2(dp, datapipe_adapter_fn=Shuffle(False))
    assert list(loader) == list(range(20))
    assert dp._enabled  # the user's pipe was copied, not changed
    with pytest.warns(UserWarning, match="does not contain a `Shuffler`"):
        several = DataLoader2(IterableWrapper(range(5)), datapipe_adapter_fn=[Shuffle(False), Shuffle(True)])
    assert sorted(several) == list(range(5))


def test_iterators_continue_the_epoch_and_invalidate_older_ones():
    loader = DataLoader2(IterableWrapper(range(6)))
    first = iter(loader)
    assert [next(first), next(first)] == [0, 1]
    second = iter(loader)
    assert list(second) == [2, 3, 4, 5]
    with pytest.raises(RuntimeError, match="This iterator has been invalidated"):
        next(first)
    assert list(loader) == [0, 1, 2, 3, 4, 5]


def test_an_exhausted_iterator_does_not_end_more_epochs():
    loader = DataLoader2(IterableWrapper(range(3)).shuffle())
    loader.seed(0)
    iterator = iter(loader)
    first = list(iterator)
    assert next(iterator, None) is None and next(iterator, None) is None
    second = list(loader)
    loader.seed(0)
    assert [list(loader), list(loader)] == [first, second]  # epochs 0 and 1, none skipped


def test_shutdown():
    loader = DataLoader2(IterableWrapper(range(3)), reading_service=MultiProcessingReadingService(2))
    iterator = iter(loader)
    loader.shutdown()
    with pytest.raises(RuntimeError, match="has already been shut down"):
        next(iterator)
    with pytest.raises(RuntimeError, match="has already been shut down"):
        iter(loader)
    loader.shutdown()  # twice is fine
    with DataLoader2(IterableWrapper(range(3))) as managed:
        assert list(managed) == [0, 1, 2]
    assert managed._terminated


def tag_with_worker(datapipe, info):
    return datapipe.map(lambda x, wid=info.worker_id: (wid, x))


def count_resets(datapipe, info, seed_generator):
    assert isinstance(seed_generator, SeedGenerator) and isinstance(info, WorkerInfo)
    return datapipe


def test_worker_init_and_reset_functions(deadline):
    rs = MultiProcessingReadingService(2, worker_init_fn=tag_with_worker, worker_reset_fn=count_resets)
    with deadline(60):
        loader = DataLoader2(IterableWrapper(range(10)).sharding_filter(), reading_service=rs)
        out = list(loader)
        loader.shutdown()
    assert out == [(x % 2, x) for x in range(10)]
    in_process = DataLoader2(IterableWrapper(range(3)), reading_service=InProcessReadingService(
        init_fn=tag_with_worker, reset_fn=count_resets))
    assert list(in_process) == [(0, 0), (0, 1), (0, 2)]


def test_map_datapipe():
    loader = DataLoader2(SequenceWrapper(range(5)).map(square))
    assert list(loader) == [0, 1, 4, 9, 16]


def test_bad_arguments():
    with pytest.raises(TypeError, match="DataLoader2 expected an IterDataPipe or a MapDataPipe, but got range"):
        DataLoader2(range(3))
    with pytest.raises(TypeError, match="expected a ReadingServiceInterface reading_service"):
        DataLoader2(IterableWrapper([1]), reading_service=object())
    with pytest.raises(TypeError, match="DataLoader2 expected callable adapters"):
        DataLoader2(IterableWrapper([1]), datapipe_adapter_fn=[1])
    with pytest.raises(RuntimeError, match="DataLoader2 has no datapipe: call load_state_dict first"):
        iter(DataLoader2(None))
    with pytest.raises(TypeError, match="DataLoader2.seed expected an int seed"):
        DataLoader2(IterableWrapper([1])).seed("7")
    with pytest.raises(ValueError, match="expected an int num_workers >= 0, but got -1"):
        MultiProcessingReadingService(num_workers=-1)
    with pytest.raises(ValueError, match="multiprocessing_context must be one of"):
        MultiProcessingReadingService(2, multiprocessing_context="threads")
    with pytest.raises(ValueError, match="expected an int prefetch_cnt >= 0, but got -2"):
        InProcessReadingService(prefetch_cnt=-2)
    with pytest.raises(TypeError, match="SequentialReadingService expected ReadingServiceInterface"):
        SequentialReadingService(InProcessReadingService(), "mp")


def test_worker_exception_names_the_worker_and_keeps_the_traceback(deadline):
    dp = IterableWrapper(range(40)).sharding_filter().map(failing_at_13)
    with deadline(60):
        loader = DataLoader2(dp, reading_service=MultiProcessingReadingService(2))
        with pytest.raises(ValueError) as info:
            list(loader)
        message = str(info.value)
        assert "Caught ValueError in DataLoader2 worker process 1." in message
        assert "in failing_at_13" in message and "cannot load sample 13" in message
        # The workers survive a failed epoch; a pipeline that fails every epoch fails again.
        with pytest.raises(ValueError, match="worker process 1"):
            list(loader)
        loader.shutdown()


def test_worker_init_error_is_reported(deadline):
    def broken_init(datapipe, info):
        raise OSError("no disk")

    with deadline(60):
        loader = DataLoader2(IterableWrapper(range(4)), reading_service=MultiProcessingReadingService(
            2, worker_init_fn=broken_init, multiprocessing_context="fork"))
        with pytest.raises(OSError, match="Caught OSError in DataLoader2 worker process 0"):
            list(loader)
        loader.shutdown()


def test_unpicklable_item_is_an_error_not_a_hang(deadline):
    with deadline(60):
        loader = DataLoader2(IterableWrapper(range(4)).sharding_filter().map(lambda x: lambda: x),
                             reading_service=MultiProcessingReadingService(2))
        with pytest.raises((AttributeError, pickle.PicklingError), match="worker process"):
            list(loader)
        loader.shutdown()


def slow(x):
    time.sleep(0.01)
    return x


@pytest.mark.parametrize("main_prefetch_cnt", [0, 10])
def test_a_killed_worker_is_detected_not_waited_on(main_prefetch_cnt, deadline):
    with deadline(60):
        rs = MultiProcessingReadingService(2, main_prefetch_cnt=main_prefetch_cnt)
        loader = DataLoader2(IterableWrapper(range(1000)).sharding_filter().map(slow), reading_service=rs)
        iterator = iter(loader)
        next(iterator)
        os.kill(rs._processes[1].pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match=r"DataLoader2 worker 1 \(pid \d+\) exited unexpectedly with exit code -9"):
            for _ in iterator:
                pass
        loader.shutdown()


def test_state_dict_resumes_mid_epoch(deadline):
    def build():
        return IterableWrapper(range(30)).shuffle().sharding_filter().map(square)

    for make in (InProcessReadingService, lambda: MultiProcessingReadingService(2)):
        with deadline(60):
            loader = DataLoader2(build(), reading_service=make())
            loader.seed(4)
            full = [list(loader), list(loader)]
            loader.shutdown()

            loader = DataLoader2(build(), reading_service=make())
            loader.seed(4)
            list(loader)  # epoch 0
            iterator = iter(loader)
            head = [next(iterator) for _ in range(11)]
            state = loader.state_dict()
            loader.shutdown()

            restored = DataLoader2.from_state(pickle.loads(pickle.dumps(state)), make())
            tail = list(restored)
            following = list(restored)
            restored.shutdown()
        assert head + tail == full[1]
        assert following != full[1] and sorted(following) == sorted(full[1])


def test_state_dict_errors():
    with pytest.raises(TypeError, match="needs a picklable DataPipe graph"):
        DataLoader2(IterableWrapper([1]).map(lambda x: x)).state_dict()
    with pytest.raises(ValueError, match="expected the dict that state_dict\\(\\) returns"):
        DataLoader2(None).load_state_dict({"x": 1})
    loader = DataLoader2(IterableWrapper([1]))
    list(loader)
    with pytest.raises(RuntimeError, match="load_state_dict must be called before iterating"):
        loader.load_state_dict(loader.state_dict())


def test_spawned_workers_get_a_pickled_pipeline(deadline):
    def build():  # builtins only: a spawned worker unpickles the graph by import
        return IterableWrapper(range(-20, 20)).shuffle().sharding_filter().map(abs)

    with deadline(120):
        spawned = DataLoader2(build(), reading_service=MultiProcessingReadingService(
            2, multiprocessing_context="spawn"))
        spawned.seed(6)
        got = list(spawned)
        spawned.shutdown()
    reference = DataLoader2(build())
    reference.seed(6)
    assert got == list(reference)
