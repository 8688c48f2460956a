"""ember.distributed on Gloo: stores, process groups and every collective, in 2 and 4 processes on
loopback (the multi-process checks live in distributed_jobs.py; each spawned job has a deadline,
so a hang fails the test instead of hanging it)."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest

import ember
import ember.distributed as dist

JOBS = pathlib.Path(__file__).with_name("distributed_jobs.py")
needs_gloo = pytest.mark.skipif(not dist.is_gloo_available(),
                                reason="ember was built without Gloo (ember._C_gloo or libgloo missing)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(job: str, world: int, init_method: str, deadline: float = 60) -> list[subprocess.CompletedProcess]:
    """Runs distributed_jobs.py JOB in `world` processes; kills them all at the deadline."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, str(JOBS), job, str(r), str(world), init_method], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(world)]
    end = time.monotonic() + deadline
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(end - time.monotonic(), 0.1))
            results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        logs = "\n".join((p.communicate()[1] or "")[-2000:] for p in procs)
        pytest.fail(f"job {job} on {world} processes hung past its {deadline} s deadline:\n{logs}")
    return results


def assert_ok(results: list[subprocess.CompletedProcess], ranks=None) -> None:
    for r, res in enumerate(results):
        if ranks is None or r in ranks:
            assert res.returncode == 0, f"rank {r} failed:\n{res.stderr[-4000:]}"
            assert "checks: " in res.stdout


@needs_gloo
def test_every_collective_every_dtype_2_processes_file_init(tmp_path):
    assert_ok(run_job("collectives", 2, f"file://{tmp_path}/store"))


@needs_gloo
def test_every_collective_every_dtype_4_processes_tcp_init():
    assert_ok(run_job("collectives", 4, f"tcp://127.0.0.1:{free_port()}"))


@needs_gloo
@pytest.mark.parametrize("world", [2, 4])
def test_ddp_matches_one_process_on_the_whole_batch(tmp_path, world):
    assert_ok(run_job("ddp", world, f"file://{tmp_path}/store"))


@needs_gloo
def test_ddp_comm_hooks_allreduce_fp16_bf16_powersgd(tmp_path):
    assert_ok(run_job("ddp_hooks", 2, f"file://{tmp_path}/store"))


@needs_gloo
@pytest.mark.parametrize("world", [2, 4])
def test_fsdp_matches_one_process_on_the_whole_batch(tmp_path, world):
    assert_ok(run_job("fsdp", world, f"file://{tmp_path}/store"))


@needs_gloo
def test_timeout_names_the_collective_and_monitored_barrier_names_the_rank():
    assert_ok(run_job("timeout", 2, f"tcp://127.0.0.1:{free_port()}"))


@needs_gloo
def test_killed_peer_is_a_clean_error_not_a_hang(tmp_path):
    results = run_job("killed_peer", 2, f"file://{tmp_path}/store", deadline=40)
    assert results[1].returncode == -9
    assert_ok(results, ranks=[0])


# --- in one process ------------------------------------------------------------------------

@pytest.fixture
def single():
    """A world of one process over a HashStore."""
    if not dist.is_gloo_available():
        pytest.skip("ember was built without Gloo")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1, timeout=timedelta(seconds=10))
    yield
    dist.destroy_process_group()


def test_not_initialized_errors():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="all_reduce: the default process group has not been initialized"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match="get_rank: the default process group has not been initialized"):
        dist.get_rank()


def test_availability_is_reported_and_a_missing_library_is_named(monkeypatch):
    assert dist.is_available() == dist.is_gloo_available()
    c10d = dist.distributed_c10d
    monkeypatch.setattr(c10d, "_gloo_module", None)
    monkeypatch.setattr(c10d, "_gloo_problem", "ember._C_gloo could not load the Gloo library libgloo: "
                                               "libgloo.so.0: cannot open shared object file")
    assert not dist.is_available()
    with pytest.raises(RuntimeError, match="gloo backend is not available: .*libgloo.so.0"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)


NO_GLOO = """
import sys

class Block:  # stands for a build without Gloo, or a machine without libgloo
    def find_spec(self, name, path=None, target=None):
        if name == "ember._C_gloo":
            if sys.argv[1] == "not-built":
                raise ModuleNotFoundError("No module named 'ember._C_gloo'", name=name)
            raise ImportError("libgloo.so.0: cannot open shared object file: No such file or directory")

sys.meta_path.insert(0, Block())
import ember
import ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel
assert ember.ones(2).sum().item() == 2
print(dist.is_available(), dist.is_gloo_available())
try:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
except RuntimeError as e:
    print(e)
"""


@pytest.mark.parametrize("case, cause", [
    ("not-built", "this ember was built without Gloo (libgloo was not found when it was built; on Debian/Ubuntu "
                  "install libgloo-dev and rebuild ember)"),
    ("no-library", "ember._C_gloo could not load the Gloo library libgloo: libgloo.so.0: cannot open shared object "
                   "file: No such file or directory"),
])
def test_without_gloo_ember_imports_and_init_names_the_missing_library(case, cause):
    res = subprocess.run([sys.executable, "-c", NO_GLOO, case], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["False False", f"ember.distributed: the gloo backend is not available: {cause}"]


def test_rendezvous_timeout_names_the_missing_ranks(tmp_path):
    if not dist.is_gloo_available():
        pytest.skip("ember was built without Gloo")
    start = time.monotonic()
    with pytest.raises(dist.DistStoreError, match=r"init_process_group: timed out after 0.5 s waiting for rank\(s\) "
                                                  r"\[1, 2\] to join \(rank 0 is here\)"):
        dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=3,
                                timeout=timedelta(seconds=0.5))
    assert time.monotonic() - start < 10 and not dist.is_initialized()


def test_init_arguments_are_checked():
    if not dist.is_gloo_available():
        pytest.skip("ember was built without Gloo")
    with pytest.raises(ValueError, match=r"expected rank in \[0, 2\), but got 2"):
        dist.init_process_group("gloo", store=dist.HashStore(), rank=2, world_size=2)
    with pytest.raises(ValueError, match="unknown init_method 'udp://x'"):
        dist.init_process_group("gloo", init_method="udp://x", rank=0, world_size=1)
    with pytest.raises(RuntimeError, match="backend 'nccl' is not available"):
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    with pytest.raises(ValueError, match="Unknown backend 'fancy'"):
        dist.init_process_group("fancy")
    with pytest.raises(ValueError, match="env:// needs the MASTER_ADDR and MASTER_PORT"):
        env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}
        old = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)
        try:
            dist.init_process_group("gloo", rank=0, world_size=1)
        finally:
            os.environ.clear()
            os.environ.update(old)
    assert not dist.is_initialized()


def test_world_of_one(single):
    # collectives write parameters in place, outside autograd (also through a non-contiguous view)
    p = ember.nn.Parameter(ember.ones(2, 3))
    dist.all_reduce(p, op=dist.ReduceOp.AVG)
    dist.all_reduce(p.t())
    assert p.tolist() == [[1, 1, 1], [1, 1, 1]] and p.requires_grad
    t = ember.arange(6.0).reshape(2, 3)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_backend() == "gloo"
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    objs = [None]
    dist.all_gather_object(objs, {"k": (1, 2)})
    assert objs == [{"k": (1, 2)}]
    with pytest.raises(ValueError, match=r"expected dst to be a rank in \[0, 1\), but got -1"):
        dist.reduce(t, dst=-1)
    with pytest.raises(ValueError, match=r"expected a process group from init_process_group or new_group"):
        dist.all_reduce(t, group="world")
    with pytest.raises(ValueError, match="ReduceOp.AVG needs a floating-point or complex tensor, but got int64"):
        dist.all_reduce(ember.ones(2, dtype=ember.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="ReduceOp.MAX is not defined for complex tensors"):
        dist.all_reduce(ember.ones(2, dtype=ember.complex64), op=dist.ReduceOp.MAX)
    with pytest.raises(TypeError, match="gather: expected gather_list to be a list of tensors, but got NoneType"):
        dist.gather(t, None, dst=0)


def test_object_collectives_refuse_unsafe_objects(single):
    class Custom:
        pass
    objs = [None]
    with pytest.raises(Exception, match="Custom"):
        dist.all_gather_object(objs, Custom())


def test_distributed_sampler():
    from ember.utils.data import DistributedSampler
    data = list(range(10))
    shares = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert shares == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded with the first indices
    dropped = [list(DistributedSampler(data, num_replicas=3, rank=r, shuffle=False, drop_last=True)) for r in range(3)]
    assert dropped == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    a, b = DistributedSampler(data, 2, 0, seed=5), DistributedSampler(data, 2, 1, seed=5)
    first = list(a) + list(b)
    assert sorted(first) == data and list(a) == list(DistributedSampler(data, 2, 0, seed=5))
    a.set_epoch(1)
    assert list(a) != first[:5] and len(a) == 5
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(data, num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="pass num_replicas and rank, or call ember.distributed.init_process_group"):
        DistributedSampler(data)


def test_ddp_needs_a_process_group():
    from ember.nn.parallel import DistributedDataParallel
    with pytest.raises(ValueError, match="get_world_size: the default process group has not been initialized"):
        DistributedDataParallel(ember.nn.Linear(2, 2))


def test_ddp_comm_hook_registration_errors(single):
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    from ember.nn.parallel import DistributedDataParallel
    model = DistributedDataParallel(ember.nn.Linear(3, 2))
    with pytest.raises(TypeError, match="register_comm_hook: expected hook to be callable, but got int"):
        model.register_comm_hook(None, 3)
    with pytest.raises(TypeError, match=r"the hook must take two arguments, \(state, bucket\)"):
        model.register_comm_hook(None, lambda bucket: None)
    model.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(RuntimeError, match="a communication hook is already registered; register_comm_hook can "
                                           "only be called once"):
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    model(ember.ones(1, 3)).sum().backward()
    assert model.module.weight.grad.tolist() == [[1, 1, 1], [1, 1, 1]]

    late = DistributedDataParallel(ember.nn.Linear(3, 2))
    late(ember.ones(1, 3)).sum().backward()
    with pytest.raises(RuntimeError, match="the hook must be registered before the first backward pass"):
        late.register_comm_hook(None, default_hooks.allreduce_hook)

    # what a hook hands back is checked when backward uses it
    bad = DistributedDataParallel(ember.nn.Linear(3, 2))
    bad.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    with pytest.raises(TypeError, match="the communication hook must return an ember.futures.Future, but it "
                                        "returned Tensor"):
        bad(ember.ones(1, 3)).sum().backward()
    short = DistributedDataParallel(ember.nn.Linear(3, 2))
    short.register_comm_hook(None, lambda state, bucket: default_hooks._allreduce_fut(state, bucket.buffer()[:1]))
    with pytest.raises(RuntimeError, match="the communication hook's future must hold the reduced bucket, a tensor "
                                           "of 8 elements, but it holds a tensor of 1 elements"):
        short(ember.ones(1, 3)).sum().backward()

    with pytest.raises(ValueError, match="Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start`"):
        powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=1)
    with pytest.raises(ValueError, match="expected matrix_approximation_rank to be an int >= 1, but got 0"):
        powerSGD_hook.PowerSGDState(None, matrix_approximation_rank=0)


def test_powersgd_on_a_bucket_without_matrices(single):
    # LayerNorm's parameters are vectors: every step after the plain ones averages them uncompressed
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
    from ember.nn.parallel import DistributedDataParallel
    state = powerSGD_hook.PowerSGDState(None, start_powerSGD_iter=2)
    model = DistributedDataParallel(ember.nn.LayerNorm(4))
    model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    x = ember.arange(8.0).reshape(2, 4)
    for _ in range(4):
        model.module.zero_grad()
        (model(x) * ember.arange(4.0)).sum().backward()
    ref = ember.nn.LayerNorm(4)
    (ref(x) * ember.arange(4.0)).sum().backward()
    assert state.iter == 4 and state.compression_stats() == (1.0, 16, 16)
    assert model.module.weight.grad.tolist() == ref.weight.grad.tolist()
    assert model.module.bias.grad.tolist() == ref.bias.grad.tolist() == [0, 2, 4, 6]


def test_grad_bucket():
    params = [ember.nn.Parameter(ember.zeros(2, 3)), ember.nn.Parameter(ember.zeros(2))]
    bucket = dist.GradBucket(1, ember.arange(8.0), params, is_last=False)
    assert bucket.index() == 1 and not bucket.is_last() and bucket.parameters() == params
    w, b = bucket.gradients()
    assert w.tolist() == [[0, 1, 2], [3, 4, 5]] and b.tolist() == [6, 7]
    assert bucket.get_index() == 1 and bucket.get_tensor() is bucket.buffer()  # the 1.8 names
    assert not bucket.is_the_last_bucket_to_allreduce() and len(bucket.get_per_parameter_tensors()) == 2
    bucket.set_buffer(ember.zeros(8))
    assert bucket.buffer().tolist() == [0] * 8
    with pytest.raises(ValueError, match=r"expected a 1-D tensor of 8 elements, but got shape \(2, 4\)"):
        bucket.set_buffer(ember.zeros(2, 4))


def test_fsdp_bad_configurations(single):
    from ember.distributed.fsdp import (
        FullStateDictConfig,
        FullyShardedDataParallel,
        LocalStateDictConfig,
        MixedPrecision,
        ShardingStrategy,
        StateDictType,
    )
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    nn = ember.nn
    with pytest.raises(TypeError, match="FullyShardedDataParallel: expected an ember.nn.Module, but got int"):
        FullyShardedDataParallel(3)
    with pytest.raises(TypeError, match="expected sharding_strategy to be a ShardingStrategy, but got 'FULL_SHARD'"):
        FullyShardedDataParallel(nn.Linear(2, 2), sharding_strategy="FULL_SHARD")
    with pytest.raises(ValueError, match=r"expected MixedPrecision.param_dtype to be a floating-point dtype, but "
                                         r"got ember.int32"):
        FullyShardedDataParallel(nn.Linear(2, 2), mixed_precision=MixedPrecision(param_dtype=ember.int32))
    with pytest.raises(NotImplementedError, match="param_init_fn materializes modules on the meta device"):
        FullyShardedDataParallel(nn.Linear(2, 2), param_init_fn=lambda m: None)
    with pytest.raises(ValueError, match="device_id is for CUDA modules"):
        FullyShardedDataParallel(nn.Linear(2, 2), device_id=0)
    with pytest.raises(TypeError, match="expected auto_wrap_policy to be callable, but got int"):
        FullyShardedDataParallel(nn.Linear(2, 2), auto_wrap_policy=5)
    with pytest.raises(ValueError, match="the parameters flattened into one unit must share dtype and requires_grad, "
                                         "but 1.weight is ember.float64"):
        FullyShardedDataParallel(nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).double()))
    with pytest.raises(TypeError, match="expected ignored_modules to hold nn.Modules, but got str"):
        FullyShardedDataParallel(nn.Linear(2, 2), ignored_modules=["0"])
    with pytest.raises(TypeError, match="ModuleWrapPolicy: expected nn.Module subclasses, but got 3"):
        ModuleWrapPolicy({3})
    model = FullyShardedDataParallel(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)),
                                     sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)
    with pytest.raises(ValueError, match="already wrapped in FSDP; auto_wrap_policy can only wrap an unwrapped"):
        FullyShardedDataParallel(model, auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    with pytest.raises(ValueError, match="FULL_STATE_DICT takes a FullStateDictConfig, but got LocalStateDictConfig"):
        with FullyShardedDataParallel.state_dict_type(model, StateDictType.FULL_STATE_DICT, LocalStateDictConfig()):
            pass
    with pytest.raises(ValueError, match="the module contains no FSDP unit"):
        with FullyShardedDataParallel.state_dict_type(nn.Linear(2, 2), StateDictType.FULL_STATE_DICT):
            pass
    state = model.state_dict()
    with FullyShardedDataParallel.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        with pytest.raises(RuntimeError, match=r"weight of Linear on rank 0 has shape \(2, 2\), but its chunk of a "
                                               r"\(3, 2\) parameter over 1 ranks is \(3, 2\)"):
            model.load_state_dict({**state, "0.weight": ember.zeros(2, 2)})
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(RuntimeError, match=r"missing keys \['2.bias'\], unexpected keys \['extra'\]"):
        model.load_state_dict({**{k: v for k, v in state.items() if k != "2.bias"}, "extra": ember.zeros(1)})
    with pytest.raises(RuntimeError, match=r"weight of Linear has shape \(3, 3\), but the model's has \(3, 2\)"):
        model.load_state_dict({**state, "0.weight": ember.zeros(3, 3)})
    with FullyShardedDataParallel.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig()):
        assert list(model.state_dict()) == list(state)
    # in a world of one, FSDP computes what the module does; SHARD_GRAD_OP keeps the gathered
    # weights from forward to backward, and a forward without grad releases them at once
    ember.manual_seed(0)
    x = ember.randn(4, 2)
    ref = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    ref.load_state_dict(state)
    out = model(x)
    assert ember.allclose(out, ref(x)) and model.module[0].weight.numel() == 6
    out.sum().backward()
    assert model.module[0].weight.numel() == 0 and model.flat_param.grad.shape == (13,)
    with ember.no_grad():
        assert ember.allclose(model(x), ref(x)) and model.module[0].weight.numel() == 0
    assert [n for n, _ in model.named_parameters()] == ["flat_param"] and model.flat_param.numel() == 13
    with pytest.raises(ValueError, match="writeback=True is not supported with rank0_only=True"):
        with FullyShardedDataParallel.summon_full_params(model, rank0_only=True):
            pass
    with pytest.raises(ValueError, match="expected the dictionary full_optim_state_dict returned"):
        FullyShardedDataParallel.shard_full_optim_state_dict({"state": {}}, model)
    with pytest.raises(ValueError, match="parameter id 9 is out of range for a model with 4 parameters"):
        FullyShardedDataParallel.shard_full_optim_state_dict({"state": {}, "param_groups": [{"params": [9]}]}, model)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(x).sum().backward()
    opt.step()
    full = FullyShardedDataParallel.full_optim_state_dict(model, opt)
    assert [tuple(full["state"][i]["momentum_buffer"].shape) for i in range(4)] == [(3, 2), (3,), (1, 3), (1,)]
    from ember.distributed.fsdp.wrap import enable_wrap, wrap
    plain = wrap(nn.Linear(2, 2))
    with enable_wrap(wrapper_cls=FullyShardedDataParallel, sharding_strategy=ShardingStrategy.NO_SHARD):
        manual = wrap(nn.Sequential(wrap(nn.Linear(2, 2)), wrap(nn.Linear(2, 2), sharding_strategy=None)))
        with pytest.raises(RuntimeError, match="already inside an enable_wrap context"):
            with enable_wrap(wrapper_cls=FullyShardedDataParallel):
                pass
    assert isinstance(plain, nn.Linear) and isinstance(manual, FullyShardedDataParallel)
    assert [u.sharding_strategy for u in (manual, manual.module[0], manual.module[1])] == [
        ShardingStrategy.NO_SHARD, ShardingStrategy.NO_SHARD, ShardingStrategy.FULL_SHARD]
    # FULL_SHARD regathers at the unit's outputs; a tensor that leaves the unit another way would
    # meet released parameters in backward, which is an error, not zeros
    class Leaky(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x: ember.Tensor) -> ember.Tensor:
            self.side = self.lin(x * 2)
            return self.lin(x)

    leaky = FullyShardedDataParallel(Leaky())
    out = leaky(x)
    out.sum().backward()  # through the output: fine
    leaky(x)
    with pytest.raises(RuntimeError, match="backward reached the unit's parameters without passing through the "
                                           "unit's outputs"):
        leaky.module.side.sum().backward()
    nested = FullyShardedDataParallel(nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)),
                                      auto_wrap_policy=ModuleWrapPolicy({nn.Linear}))
    inner = nested.module[0]
    for call in (lambda: inner.clip_grad_norm_(1.0), lambda: inner.no_sync().__enter__()):
        with pytest.raises(RuntimeError, match="must be called on the root FSDP instance"):
            call()


# --- stores --------------------------------------------------------------------------------

def _exercise(store: dist.Store) -> None:
    store.set("a", "1")
    store.set("b", b"\x00\xff")
    assert store.get("a") == b"1" and store.get("b") == b"\x00\xff"
    assert store.add("n", 2) == 2 and store.add("n", 3) == 5 and store.get("n") == b"5"
    assert store.check(["a", "n"]) and not store.check(["zz"])
    assert store.compare_set("a", "1", "2") == b"2" and store.compare_set("a", "1", "3") == b"2"
    assert store.delete_key("b") and not store.delete_key("b")
    assert store.num_keys() >= 2
    store.wait(["a"], timedelta(seconds=1))
    start = time.monotonic()
    with pytest.raises(dist.DistStoreError, match=r"Timed out after 0.2 s waiting for keys \['missing'\]"):
        store.wait(["missing"], timedelta(seconds=0.2))
    assert time.monotonic() - start < 5
    # a getter blocks until another thread sets the key
    threading.Timer(0.1, lambda: store.set("late", "x")).start()
    assert store.get("late") == b"x"
    with pytest.raises(TypeError, match="Store values must be str or bytes, but got int"):
        store.set("c", 3)


def test_hash_store():
    _exercise(dist.HashStore())


def test_file_store(tmp_path):
    _exercise(dist.FileStore(str(tmp_path / "fs")))
    a, b = dist.FileStore(str(tmp_path / "shared")), dist.FileStore(str(tmp_path / "shared"))
    a.set("k", "v")
    assert b.get("k") == b"v" and b.add("c", 1) == 1 and a.add("c", 1) == 2


def test_tcp_store():
    master = dist.TCPStore("127.0.0.1", 0, world_size=2, is_master=True, timeout=timedelta(seconds=10),
                           wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", master.port, timeout=timedelta(seconds=10))
    _exercise(client)
    assert master.get("a") == b"2"
    prefixed = dist.PrefixStore("p", master)
    prefixed.set("x", "1")
    assert client.get("p/x") == b"1" and prefixed.get("x") == b"1"
    with pytest.raises(dist.DistStoreError, match="could not connect to 127.0.0.1:1 within 0.3 s"):
        dist.TCPStore("127.0.0.1", 1, timeout=timedelta(seconds=0.3))
