"""Shared memory between processes: Tensor/storage share_memory_ and is_shared, nn.Module.share_memory,
and ember.multiprocessing (tensors sent through Queue, Pipe and Process arguments, spawn). Every
child is joined with a deadline, so a bug fails a test instead of hanging the suite."""

import gc
import os
import pathlib
import pickle
import time
import warnings
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember import _shared_memory as ember_shared_memory
from ember import nn
from ember import storage as ember_storage

DEADLINE = 20  # seconds for any child; a passing one takes about one


@pytest.fixture
def jobs(monkeypatch):
    """The child bodies, importable by a spawned child too (its sys.path is the parent's)."""
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    import shared_memory_jobs

    return shared_memory_jobs


@pytest.fixture
def file_system():
    mp.set_sharing_strategy("file_system")
    yield
    mp.set_sharing_strategy("file_descriptor")


@pytest.fixture
def always_warn():
    """TypedStorage warns once per process; these tests want every warning."""
    ember_storage._set_always_warn_typed_storage_removal(True)
    yield
    ember_storage._set_always_warn_typed_storage_removal(False)


def _roundtrip(obj):
    """obj sent as multiprocessing sends it, and received, in this same process."""
    return ForkingPickler.loads(ForkingPickler.dumps(obj))


def _join(process):
    process.join(DEADLINE)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail(f"child {process.pid} did not finish within {DEADLINE} s")
    assert process.exitcode == 0


def _join_context(context):
    end = time.monotonic() + DEADLINE
    while not context.join(timeout=0.1):
        if time.monotonic() > end:
            for p in context.processes:
                p.kill()
            pytest.fail(f"spawned children did not finish within {DEADLINE} s")


# ---- share_memory_ in one process ----------------------------------------------------------------


def test_tensors_are_private_until_shared():
    assert not ember.ones(3).is_shared()
    assert not ember.ones(3).untyped_storage().is_shared()


def test_share_memory_moves_the_whole_storage_in_place():
    base = ember.arange(12.0).reshape(3, 4)
    view = base[1:, ::2]
    storage = base.untyped_storage()
    before = base.data_ptr()
    assert base.share_memory_() is base
    assert base.is_shared() and view.is_shared() and storage.is_shared()
    assert base.data_ptr() != before
    assert view.data_ptr() == base.data_ptr() + 4 * 4  # the view followed, at its offset
    assert base.tolist() == np.arange(12.0).reshape(3, 4).tolist()
    assert view.tolist() == [[4.0, 6.0], [8.0, 10.0]]
    assert base.untyped_storage() is storage and storage.data_ptr() == base.data_ptr()
    base[1, 0] = 100.0
    assert view[0, 0].item() == 100.0
    moved = base.data_ptr()
    base.share_memory_()  # already shared: a no-op
    assert base.data_ptr() == moved


def test_sharing_a_view_moves_its_base():
    base = ember.arange(20.0).reshape(4, 5)
    view = base.t()[1:, 2:]
    geometry = (view.shape, view.stride(), view.storage_offset())
    view.share_memory_()
    assert base.is_shared()
    assert (view.shape, view.stride(), view.storage_offset()) == geometry
    assert base.tolist() == np.arange(20.0).reshape(4, 5).tolist()
    assert view.tolist() == np.arange(20.0).reshape(4, 5).T[1:, 2:].tolist()


@pytest.mark.parametrize("dtype", [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
                                   ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.complex64,
                                   ember.complex128, ember.float8_e4m3fn, ember.float8_e5m2], ids=str)
def test_every_dtype_keeps_its_bytes(dtype):
    t = (ember.arange(7.0) - 2.5).to(dtype)
    expected = t.view(ember.uint8).tolist()
    t.share_memory_()
    assert t.is_shared() and t.dtype == dtype
    assert t.view(ember.uint8).tolist() == expected


def test_empty_tensors_can_be_shared():
    for t in (ember.empty(0), ember.ones(0, 3, dtype=ember.int64)):
        assert t.share_memory_() is t
        assert t.is_shared() and t.numel() == 0


def test_shared_tensor_stays_a_leaf_with_grad():
    p = nn.Parameter(ember.ones(3))
    p.share_memory_()
    assert isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf and p.is_shared()
    (p * 2).sum().backward()
    assert p.grad.tolist() == [2.0, 2.0, 2.0]


def test_numpy_array_taken_before_sharing_stays_valid():
    t = ember.arange(4.0)
    array = t.numpy()
    t.share_memory_()
    gc.collect()
    assert array.tolist() == [0.0, 1.0, 2.0, 3.0]  # the old memory, kept while the storage lives


def test_storage_objects_share_memory(always_warn):
    t = ember.arange(6, dtype=ember.int32)
    untyped = t.untyped_storage()
    assert untyped.share_memory_() is untyped
    assert untyped.is_shared() and t.is_shared() and untyped.data_ptr() == t.data_ptr()
    typed = ember.arange(3.0).storage()
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        assert typed.share_memory_() is typed
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        assert typed.is_shared()


def test_module_share_memory_covers_parameters_grads_and_buffers():
    model = nn.BatchNorm1d(3)
    model.weight.grad = ember.ones(3)
    assert model.share_memory() is model
    tensors = [*model.parameters(), model.weight.grad, *model.buffers()]
    assert len(tensors) == 6  # weight, bias, grad, running_mean, running_var, num_batches_tracked
    assert all(t.is_shared() for t in tensors)


def test_read_only_memory_cannot_be_shared():
    array = np.ones(3)
    array.flags.writeable = False
    t = ember.from_numpy(array)
    with pytest.raises(RuntimeError, match=r"^\[share_memory_\] expected a writable tensor, but this one shares the "
                                           r"memory of a read-only NumPy array \(from_numpy\); copy it first"):
        t.share_memory_()
    assert not t.is_shared()


def test_nested_tensors_are_refused():
    nested = ember.nested.nested_tensor([ember.ones(2), ember.ones(3)])
    with pytest.raises(NotImplementedError, match="share_memory_ is not implemented for nested tensors in Ember"):
        nested.share_memory_()


# ---- sharing strategies --------------------------------------------------------------------------


def test_sharing_strategies():
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    with pytest.raises(ValueError, match=r"^unknown sharing strategy 'file': expected one of 'file_descriptor', "
                                         r"'file_system'$"):
        mp.set_sharing_strategy("file")
    assert mp.get_sharing_strategy() == "file_descriptor"


def _own_shm_files():
    return {n for n in os.listdir("/dev/shm") if n.startswith(f"ember_{os.getpid()}_")}


def test_file_system_strategy_names_a_file_until_the_storage_is_freed(file_system):
    before = _own_shm_files()
    t = ember.ones(1000)
    t.share_memory_()
    created = _own_shm_files() - before
    assert len(created) == 1 and t.is_shared()
    del t
    gc.collect()
    assert _own_shm_files() == before


def test_file_system_strategy_moves_a_descriptor_block_to_a_named_one(file_system):
    mp.set_sharing_strategy("file_descriptor")
    t = ember.ones(5).share_memory_()
    memfd_ptr = t.data_ptr()
    mp.set_sharing_strategy("file_system")
    received = _roundtrip(t)
    assert t.data_ptr() != memfd_ptr  # moved again, as PyTorch does, to get a name
    received.fill_(3)
    assert t.tolist() == [3.0] * 5


def test_without_memfd_a_dev_shm_file_is_unlinked_at_once(monkeypatch):
    monkeypatch.delattr(os, "memfd_create")
    before = _own_shm_files()
    t = ember.arange(4.0).share_memory_()
    assert t.is_shared() and t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert _own_shm_files() == before
    received = _roundtrip(t)
    received[0] = 9.0
    assert t[0].item() == 9.0


@pytest.mark.forks_workers
def test_a_childs_named_files_are_unlinked_when_it_exits(file_system, jobs):
    context = mp.get_context("fork")
    ours, theirs = context.Pipe()
    child = context.Process(target=jobs.keep_a_shared_tensor, args=(theirs,))
    child.start()
    assert ours.poll(DEADLINE)
    names = ours.recv()
    _join(child)
    assert len(names) == 1 and names[0].startswith(f"ember_{child.pid}_")
    assert not os.path.exists(os.path.join("/dev/shm", names[0]))


def test_a_file_shorter_than_announced_is_refused():
    fd = os.memfd_create("short")
    os.ftruncate(fd, 10)
    with pytest.raises(RuntimeError, match="^expected the shared memory it was sent to hold 100 bytes, but it has 10$"):
        ember_shared_memory.attach_fd(fd, 100)  # mapping it would SIGBUS past byte 10
    with pytest.raises(OSError):
        os.fstat(fd)  # the descriptor it was given is closed


def test_a_named_block_freed_before_it_is_received(file_system):
    t = ember.ones(3)
    payload = ForkingPickler.dumps(t)
    del t
    gc.collect()
    with pytest.raises(RuntimeError, match=r"^shared memory /dev/shm/ember_\d+_\d+_\w+ no longer exists: with the "
                                           r"file_system strategy the sending process must keep the tensor alive"):
        ForkingPickler.loads(payload)


# ---- what multiprocessing sends ------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_sent_tensor_maps_the_same_memory(strategy):
    mp.set_sharing_strategy(strategy)
    try:
        base = ember.arange(24.0).reshape(4, 6)
        view = base[1:, 2::2]
        received = _roundtrip(view)
    finally:
        mp.set_sharing_strategy("file_descriptor")
    assert base.is_shared() and received.is_shared()
    assert (received.dtype, received.shape, received.stride(), received.storage_offset()) == \
           (view.dtype, view.shape, view.stride(), view.storage_offset())
    received.fill_(-1)
    assert view.tolist() == [[-1.0] * 2] * 3
    assert base[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_views_sent_together_share_one_storage():
    base = ember.zeros(6)
    first, second = _roundtrip((base[:3], base[2:]))
    assert first.untyped_storage() is second.untyped_storage()
    first[2] = 7.0
    assert second[0].item() == 7.0 and base[2].item() == 7.0


def test_sent_tensors_keep_requires_grad_and_parameter_type():
    p = nn.Parameter(ember.ones(2))
    frozen = nn.Parameter(ember.ones(2), requires_grad=False)
    leaf = ember.ones(2, requires_grad=True)
    got_p, got_frozen, got_leaf, got_int = _roundtrip((p, frozen, leaf, ember.arange(3)))
    assert type(got_p) is nn.Parameter and got_p.requires_grad
    assert type(got_frozen) is nn.Parameter and not got_frozen.requires_grad
    assert type(got_leaf) is ember.Tensor and got_leaf.requires_grad and got_leaf.is_leaf
    assert got_int.dtype == ember.int64 and got_int.tolist() == [0, 1, 2]


def test_sent_storages_map_the_same_memory(always_warn):
    untyped = ember.zeros(4, dtype=ember.uint8).untyped_storage()
    got = _roundtrip(untyped)
    assert type(got) is ember.UntypedStorage and got.is_shared()
    got[1] = 9
    assert untyped[1] == 9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typed = ember.zeros(2, dtype=ember.float64).storage()
        got_typed = _roundtrip(typed)
        assert got_typed.dtype == ember.float64
        got_typed[0] = 2.5
        assert typed[0] == 2.5


def test_empty_tensor_is_sent():
    got = _roundtrip(ember.empty(0, 4))
    assert got.shape == (0, 4) and got.is_shared()


def test_sparse_tensor_is_sent_as_shared_parts():
    sparse = ember.sparse_coo_tensor(ember.tensor([[0, 2]]), ember.tensor([1.0, 2.0]), (3,))
    got = _roundtrip(sparse)
    assert got.to_dense().tolist() == [1.0, 0.0, 2.0]
    got._values().mul_(10)
    assert sparse.to_dense().tolist() == [10.0, 0.0, 20.0]


def test_non_leaf_tensor_requiring_grad_is_refused():
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"^Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                                           r"since autograd does not support crossing process boundaries\."):
        ForkingPickler.dumps(x)


def test_plain_pickle_still_copies():
    t = ember.arange(3.0)
    assert pickle.loads(pickle.dumps(t)).tolist() == [0.0, 1.0, 2.0]
    assert not t.is_shared()


def test_module_reexports_the_standard_library():
    import multiprocessing

    assert mp.Process is multiprocessing.Process and mp.Queue is not None
    assert set(multiprocessing.__all__) <= set(mp.__all__)
    assert {"set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"} <= set(mp.__all__)


# ---- child processes -----------------------------------------------------------------------------


@pytest.mark.forks_workers
def test_forked_child_writes_are_seen_by_the_parent(jobs):
    t = ember.zeros(4).share_memory_()
    child = mp.get_context("fork").Process(target=jobs.fill, args=(t, 7.0))
    child.start()
    _join(child)
    assert t.tolist() == [7.0] * 4


@pytest.mark.forks_workers
def test_tensor_through_a_pipe(jobs):
    context = mp.get_context("fork")
    ours, theirs = context.Pipe()
    child = context.Process(target=jobs.receive_through_pipe, args=(theirs,))
    child.start()
    t = ember.zeros(3, dtype=ember.int32)
    ours.send(t)
    assert ours.poll(DEADLINE) and ours.recv() == "done"
    _join(child)
    assert t.tolist() == [5, 5, 5]


def test_spawned_child_through_a_queue_and_process_args(jobs):
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    through_queue = ember.arange(12, dtype=ember.float64).reshape(3, 4)[:, 1:3]
    through_args = ember.zeros(2, dtype=ember.int16)
    children = [context.Process(target=jobs.receive_and_write, args=(inbox, outbox)),
                context.Process(target=jobs.add_one, args=(through_args,))]
    for child in children:
        child.start()
    inbox.put(through_queue)
    report = outbox.get(timeout=DEADLINE)
    for child in children:
        _join(child)
    assert report == ("ember.float64", (3, 2), (4, 1), 1, True)
    assert through_queue.tolist() == [[10.0, 20.0], [50.0, 60.0], [90.0, 100.0]]
    assert through_args.tolist() == [1, 1] and through_args.is_shared()


def test_spawn_raises_a_childs_error_with_its_traceback(jobs):
    context = mp.spawn(jobs.fail_on_one, nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    with pytest.raises(mp.ProcessRaisedException) as info:
        _join_context(context)
    assert info.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(info.value)
    assert "Traceback" in str(info.value) and "ValueError: child 1 failed" in str(info.value)


@pytest.mark.forks_workers
def test_start_processes_reports_an_exit_code(jobs):
    context = mp.start_processes(jobs.exit_with_three, nprocs=1, join=False, start_method="fork")
    with pytest.raises(mp.ProcessExitedException, match="^process 0 terminated with exit code 3$") as info:
        _join_context(context)
    assert info.value.exit_code == 3 and info.value.signal_name is None


def test_hogwild_training_in_two_processes(jobs):
    ember.manual_seed(0)
    model = nn.Linear(2, 1, bias=False)
    model.share_memory()
    before = model.weight.detach().clone()
    _join_context(mp.spawn(jobs.hogwild, args=(model, 5), nprocs=2, join=False))
    after = model.weight.detach()
    # process i's data moves column i only: both columns moved means both processes wrote here
    assert after[0, 0].item() != before[0, 0].item() and after[0, 1].item() != before[0, 1].item()
    assert abs(after[0, 0].item() - 2.0) < abs(before[0, 0].item() - 2.0)
