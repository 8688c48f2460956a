"""Jobs that test_distributed*.py runs in several processes: `python distributed_jobs.py JOB RANK
WORLD INIT_METHOD`. Each job checks its results itself (against single-process NumPy / ember
references computed from every rank's inputs, which are functions of the rank) and exits non-zero
on the first failure; it prints one `checks: N` line on success."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from datetime import timedelta
from typing import Any

import numpy as np

import ember
import ember.distributed as dist

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
          ember.bfloat16, ember.float32, ember.float64, ember.complex64, ember.complex128,
          ember.float8_e4m3fn, ember.float8_e5m2, ember.float8_e4m3fnuz, ember.float8_e5m2fnuz]
OPS = [dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX,
       dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
checks = 0


def values(rank: int, n: int, dtype, seed: int = 0) -> np.ndarray:
    """Rank r's data: small integers, so that every partial sum and product is exact in every
    dtype (float8 included) and the reduction order does not matter."""
    v = (np.arange(n) * 7 + rank * 5 + seed) % 3
    if dtype == ember.bool:
        return v.astype(bool)
    if dtype.is_complex:
        return v + 1j * ((np.arange(n) + rank) % 2)
    return v.astype(np.float64 if dtype.is_floating_point else np.int64)


def make(rank: int, shape, dtype, seed: int = 0) -> ember.Tensor:
    n = int(np.prod(shape))
    return ember.from_numpy(values(rank, n, dtype, seed).reshape(shape)).to(dtype)


def zeros(shape, dtype) -> ember.Tensor:
    return ember.zeros(shape, dtype=dtype)


def make_strided(rank: int, shape, dtype) -> ember.Tensor:
    """make()'s values in a non-contiguous view (the transpose of a contiguous tensor)."""
    t = zeros(tuple(reversed(shape)), dtype).t()
    t.copy_(make(rank, shape, dtype))
    return t


def as_np(t: ember.Tensor) -> np.ndarray:
    if t.dtype == ember.bool:
        return t.numpy()
    return t.to(ember.complex128 if t.dtype.is_complex else ember.float64).numpy()


def check(cond: bool, what: str) -> None:
    global checks
    checks += 1
    if not cond:
        raise AssertionError(what)


def same(t: ember.Tensor, expected: np.ndarray, what: str) -> None:
    got = as_np(t)
    check(got.shape == expected.shape and np.array_equal(got, expected.astype(got.dtype)),
          f"{what}: got {got.tolist()}, expected {expected.tolist()}")


def op_valid(op, dtype) -> bool:
    floating = dtype.is_floating_point or dtype.is_complex
    if op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        return not floating
    if op in (dist.ReduceOp.MIN, dist.ReduceOp.MAX):
        return not dtype.is_complex
    if op == dist.ReduceOp.AVG:
        return floating
    return True


def reference(op, arrays: list[np.ndarray], dtype) -> np.ndarray:
    a = np.stack(arrays)
    if dtype == ember.bool:
        f = {dist.ReduceOp.SUM: np.any, dist.ReduceOp.MAX: np.any, dist.ReduceOp.BOR: np.any,
             dist.ReduceOp.PRODUCT: np.all, dist.ReduceOp.MIN: np.all, dist.ReduceOp.BAND: np.all}
        if op == dist.ReduceOp.BXOR:
            return np.logical_xor.reduce(a, axis=0)
        return f[op](a, axis=0)
    if op == dist.ReduceOp.SUM:
        return a.sum(0)
    if op == dist.ReduceOp.AVG:
        return a.sum(0) / len(arrays)
    if op == dist.ReduceOp.PRODUCT:
        return a.prod(0)
    if op == dist.ReduceOp.MIN:
        return a.min(0)
    if op == dist.ReduceOp.MAX:
        return a.max(0)
    ufunc = {dist.ReduceOp.BAND: np.bitwise_and, dist.ReduceOp.BOR: np.bitwise_or, dist.ReduceOp.BXOR: np.bitwise_xor}
    return ufunc[op].reduce(a, axis=0)


def expect_error(exc_type, text: str, fn) -> None:
    try:
        fn()
    except exc_type as e:
        check(text in str(e), f"expected {text!r} in {str(e)!r}")
        return
    raise AssertionError(f"expected {exc_type.__name__} with {text!r}")


# --- jobs ----------------------------------------------------------------------------------

def job_collectives(rank: int, world: int) -> None:
    """Every collective, every dtype and op, sync and async, against single-process results."""
    everyone = range(world)
    for dtype in DTYPES:
        name = str(dtype)
        shape = (3, 4)
        inputs = [values(r, 12, dtype).reshape(shape) for r in everyone]
        for op in OPS:
            if not op_valid(op, dtype):
                bad = make(rank, shape, dtype)
                expect_error(ValueError, f"ReduceOp.{op.name}", lambda t=bad, op=op: dist.all_reduce(t, op=op))
                continue
            t = make(rank, shape, dtype)
            dist.all_reduce(t, op=op)
            same(t, reference(op, inputs, dtype), f"all_reduce {name} {op.name}")
            # reduce onto the last rank, through a non-contiguous view; other ranks keep their input
            t = make_strided(rank, shape, dtype)
            dist.reduce(t, dst=world - 1, op=op)
            same(t, reference(op, inputs, dtype) if rank == world - 1 else inputs[rank], f"reduce {name} {op.name}")
        # all_reduce of a non-contiguous view writes through to its base; async returns a Work
        op = dist.ReduceOp.SUM if dtype.is_complex else dist.ReduceOp.MAX
        t = make_strided(rank, shape, dtype)
        work = dist.all_reduce(t, op=op, async_op=True)
        check(isinstance(work, dist.Work), "async all_reduce returns a Work")
        work.wait()
        check(work.is_completed() and work.is_success(), "Work completed")
        same(t, reference(op, inputs, dtype), f"async non-contiguous all_reduce {name}")
        fut = dist.all_reduce(make(rank, shape, dtype), async_op=True).get_future()
        same(fut.wait()[0], reference(dist.ReduceOp.SUM, inputs, dtype), f"future all_reduce {name}")

        # broadcast from the last rank
        t = make(rank, shape, dtype)
        dist.broadcast(t, src=world - 1)
        same(t, inputs[world - 1], f"broadcast {name}")
        # all_gather (tensor_list, one entry non-contiguous) and all_gather_into_tensor
        outs = [zeros(shape, dtype) for _ in everyone]
        outs[0] = zeros((4, 3), dtype).t()
        dist.all_gather(outs, make(rank, shape, dtype))
        for r in everyone:
            same(outs[r], inputs[r], f"all_gather {name} [{r}]")
        out = zeros((world * 3, 4), dtype)
        dist.all_gather_into_tensor(out, make(rank, shape, dtype))
        same(out, np.concatenate(inputs), f"all_gather_into_tensor {name}")
        # gather to rank 0, scatter from rank 0
        gl = [zeros(shape, dtype) for _ in everyone] if rank == 0 else None
        dist.gather(make(rank, shape, dtype), gl, dst=0)
        if rank == 0:
            for r in everyone:
                same(gl[r], inputs[r], f"gather {name} [{r}]")
        t = zeros(shape, dtype)
        sl = [make(r, shape, dtype, seed=1) for r in everyone] if rank == 0 else None
        dist.scatter(t, sl, src=0)
        same(t, values(rank, 12, dtype, seed=1).reshape(shape), f"scatter {name}")
        # reduce_scatter(_tensor): block r of every rank reduces onto rank r
        op = dist.ReduceOp.SUM
        blocks = [[values(r, 6, dtype, seed=j) for j in everyone] for r in everyone]
        mine = reference(op, [blocks[r][rank] for r in everyone], dtype)
        t = zeros(6, dtype)
        dist.reduce_scatter(t, [ember.from_numpy(b).to(dtype) for b in blocks[rank]], op=op)
        same(t, mine, f"reduce_scatter {name}")
        t = zeros(6, dtype)
        dist.reduce_scatter_tensor(t, ember.from_numpy(np.concatenate(blocks[rank])).to(dtype), op=op)
        same(t, mine, f"reduce_scatter_tensor {name}")
        # all_to_all_single with uneven splits: rank r sends (r + j) % 3 rows of width 2 to rank j
        send_rows = [(rank + j) % 3 for j in everyone]
        recv_rows = [(j + rank) % 3 for j in everyone]
        rows_of = [[values(r * 10 + j, 2 * ((r + j) % 3), dtype).reshape(-1, 2) for j in everyone] for r in everyone]
        inp = ember.from_numpy(np.concatenate(rows_of[rank])).to(dtype)
        out = zeros((sum(recv_rows), 2), dtype)
        dist.all_to_all_single(out, inp, output_split_sizes=recv_rows, input_split_sizes=send_rows)
        same(out, np.concatenate([rows_of[j][rank] for j in everyone]), f"all_to_all_single uneven {name}")
        # all_to_all with tensor lists of different sizes
        outs = [zeros(rows_of[j][rank].shape, dtype) for j in everyone]
        dist.all_to_all(outs, [ember.from_numpy(rows_of[rank][j]).to(dtype) for j in everyone])
        for j in everyone:
            same(outs[j], rows_of[j][rank], f"all_to_all {name} [{j}]")
        # send/recv around the ring, and batch_isend_irecv both ways
        right, left = (rank + 1) % world, (rank - 1) % world
        t = zeros(shape, dtype)
        ops = [dist.P2POp(dist.isend, make(rank, shape, dtype), right), dist.P2POp(dist.irecv, t, left)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        same(t, inputs[left], f"batch_isend_irecv {name}")
        if rank % 2 == 0:
            dist.send(make(rank, shape, dtype), right, tag=3)
            t = zeros(shape, dtype)
            check(dist.recv(t, left, tag=3) == left, "recv returns the sender")
        else:
            t = zeros(shape, dtype)
            check(dist.recv(t, None, tag=3) == left, "recv from any source returns the sender")
            dist.send(make(rank, shape, dtype), right, tag=3)
        same(t, inputs[left], f"send/recv {name}")

    # the object collectives go through ember.save / ember.load(weights_only=True)
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "t": ember.full((2,), float(rank))})
    for r in everyone:
        check(objs[r]["rank"] == r and objs[r]["t"].tolist() == [float(r)] * 2, f"all_gather_object {objs}")
    lst = [{"a": [1, 2.5], "b": "x"}, ember.arange(3), 7] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(lst, src=1)
    check(lst[0] == {"a": [1, 2.5], "b": "x"} and lst[1].tolist() == [0, 1, 2] and lst[2] == 7,
          f"broadcast_object_list {lst}")

    # a subgroup of ranks {1, .., world-1}: ranks are global, group ranks start at 0
    sub = dist.new_group(list(range(1, world)))
    if rank == 0:
        check(sub is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(sub) == -1, "non-member")
        check(dist.all_reduce(ember.ones(2), group=sub) is None, "collective on a non-member is a no-op")
    else:
        check(dist.get_rank(sub) == rank - 1 and dist.get_world_size(sub) == world - 1, "subgroup rank")
        t = ember.full((3,), float(rank))
        dist.all_reduce(t, group=sub)
        same(t, np.full(3, float(sum(range(1, world)))), "subgroup all_reduce")
        t = ember.full((3,), float(rank))
        dist.broadcast(t, src=world - 1, group=sub)
        same(t, np.full(3, float(world - 1)), "subgroup broadcast (global src)")
        expect_error(ValueError, "rank 0 (src) is not part of the group", lambda: dist.broadcast(t, src=0, group=sub))

    # bad input: clear errors, raised before anything is sent
    expect_error(TypeError, "expected tensor to be an ember.Tensor, but got list", lambda: dist.all_reduce([1, 2]))
    expect_error(ValueError, f"expected src to be a rank in [0, {world}), but got {world}",
                 lambda: dist.broadcast(ember.ones(2), src=world))
    expect_error(ValueError, f"expected tensor_list to hold {world} tensors (one per rank), but got 1",
                 lambda: dist.all_gather([ember.ones(2)], ember.ones(2)))
    expect_error(TypeError, "expected tensor_list[0] to have dtype ember.float32 like the input, but got ember.int64",
                 lambda: dist.all_gather([ember.ones(2, dtype=ember.int64)] * world, ember.ones(2)))
    expect_error(ValueError, f"expected output_tensor to have {2 * world} elements, but got 3",
                 lambda: dist.all_gather_into_tensor(ember.ones(3), ember.ones(2)))
    expect_error(ValueError, f"non-negative sizes summing to {world + 1}",
                 lambda: dist.all_to_all_single(ember.ones(world + 1), ember.ones(world + 1), None, [1] * world))
    expect_error(ValueError, "this rank sends itself 1 elements but receives 2",
                 lambda: dist.all_to_all_single(ember.ones(world + 1), ember.ones(world),
                                                [2 if j == rank else 1 for j in range(world)], [1] * world))
    expect_error(ValueError, "ReduceOp.BAND needs an integer or bool tensor, but got float32",
                 lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.BAND))
    expect_error(ValueError, "a rank cannot send to itself", lambda: dist.send(ember.ones(1), rank))
    expect_error(RuntimeError, "trying to initialize the default process group twice",
                 lambda: dist.init_process_group("gloo", init_method="env://"))
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=20))
    check(dist.get_rank() == rank and dist.get_world_size() == world and dist.is_initialized(), "rank/size")


def job_timeout(rank: int, world: int) -> None:
    """Rank 1 stays away: rank 0's all_reduce times out naming the collective, and a
    monitored_barrier names rank 1."""
    if rank == 0:
        pg = dist.new_group(timeout=timedelta(seconds=1))
        start = time.monotonic()
        expect_error(dist.DistBackendError, "all_reduce timed out after 1 s on rank 0",
                     lambda: dist.all_reduce(ember.ones(4), group=pg))
        check(time.monotonic() - start < 10, "the timeout fired in time")
        expect_error(dist.DistBackendError, "Rank 1 failed to pass monitored_barrier in 1 s",
                     lambda: dist.monitored_barrier(timeout=timedelta(seconds=1)))
        _store_flag_set("rank0_done")
        # rank 0 hosts the store: leaving before rank 1 has read the flag would close rank 1's
        # connection under it (seen under load), so it waits for rank 1's answer
        _store_flag_wait("rank1_done")
    else:
        dist.new_group(timeout=timedelta(seconds=1))
        _store_flag_wait("rank0_done")
        _store_flag_set("rank1_done")


def job_killed_peer(rank: int, world: int) -> None:
    """The last rank dies (SIGKILL) before an all_reduce: the others get a clean error well
    within the 60 s timeout instead of a hang."""
    dist.barrier()
    if rank == world - 1:
        os.kill(os.getpid(), 9)
    start = time.monotonic()
    expect_error(dist.DistBackendError, "all_reduce", lambda: dist.all_reduce(ember.ones(1 << 16)))
    check(time.monotonic() - start < 30, f"error after {time.monotonic() - start:.1f} s")


def job_ddp(rank: int, world: int) -> None:
    """DDP on `world` processes, each on its shard, against one process on the whole batch
    (float64): an MLP (10 SGD steps) and a Transformer encoder layer (5 Adam steps), no_sync
    accumulation, find_unused_parameters, broadcast_buffers; then DistributedSampler."""
    from ember import nn
    from ember.nn.parallel import DistributedDataParallel as DDP

    def mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)).double()

    def batch(seed: int, per_rank: int) -> tuple[ember.Tensor, ember.Tensor]:
        g = ember.Generator()
        g.manual_seed(seed)
        return (ember.randn(world * per_rank, 5, generator=g, dtype=ember.float64),
                ember.randn(world * per_rank, 3, generator=g, dtype=ember.float64))

    def shard(t: ember.Tensor, per_rank: int) -> ember.Tensor:
        return t[rank * per_rank:(rank + 1) * per_rank]

    def close(a: ember.Tensor, b: ember.Tensor, what: str) -> None:
        err = float((a - b).abs().max())
        check(err < 1e-12, f"{what}: max error {err}")

    # training: replicas start from different weights; DDP broadcasts rank 0's (seed 0)
    ember.manual_seed(0)
    ref = mlp()
    ember.manual_seed(rank)
    ddp = DDP(mlp(), bucket_cap_mb=200 / 2**20)  # ~200-byte buckets: several of them
    check(len(ddp._buckets) > 2, f"{len(ddp._buckets)} buckets")
    for p, q in zip(ddp.parameters(), ref.parameters(), strict=True):
        close(p, q, "parameters after DDP's broadcast")
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step in range(10):
        x, y = batch(100 + step, 4)
        opt.zero_grad()
        ((ddp(shard(x, 4)) - shard(y, 4)) ** 2).mean().backward()
        opt.step()
        ref_opt.zero_grad()
        ((ref(x) - y) ** 2).mean().backward()
        ref_opt.step()
    for p, q in zip(ddp.parameters(), ref.parameters(), strict=True):
        close(p, q, "parameters after 10 steps")

    # a small Transformer (attention, layer norms, many buckets), Adam, 5 steps
    def encoder() -> nn.Module:
        return nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                          batch_first=True).double()

    ember.manual_seed(0)
    tref = encoder()
    ember.manual_seed(rank * 7)  # rank 0's weights equal the reference's; DDP broadcasts them
    tddp = DDP(encoder(), bucket_cap_mb=1000 / 2**20)
    topt, tref_opt = ember.optim.Adam(tddp.parameters(), lr=1e-2), ember.optim.Adam(tref.parameters(), lr=1e-2)
    for step in range(5):
        g = ember.Generator()
        g.manual_seed(500 + step)
        x = ember.randn(world * 2, 3, 8, generator=g, dtype=ember.float64)
        topt.zero_grad()
        tddp(shard(x, 2)).pow(2).mean().backward()
        topt.step()
        tref_opt.zero_grad()
        tref(x).pow(2).mean().backward()
        tref_opt.step()
    for p, q in zip(tddp.parameters(), tref.parameters(), strict=True):
        close(p, q, "Transformer parameters after 5 Adam steps")

    # no_sync: two micro-batches, the first accumulated locally, averaged with the second
    opt.zero_grad()
    ref_opt.zero_grad()
    for k in range(2):
        x, y = batch(200 + k, 2)
        with ddp.no_sync() if k == 0 else contextlib.nullcontext():
            ((ddp(shard(x, 2)) - shard(y, 2)) ** 2).mean().backward()
        ((ref(x) - y) ** 2).mean().backward()
    for p, q in zip(ddp.parameters(), ref.parameters(), strict=True):
        close(p.grad, q.grad, "no_sync accumulated gradients")

    # find_unused_parameters: head b only on rank 1, head c on no rank
    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body, self.a, self.b, self.c = nn.Linear(5, 4), nn.Linear(4, 1), nn.Linear(4, 1), nn.Linear(4, 1)

        def forward(self, x: ember.Tensor, use_b: bool) -> ember.Tensor:
            h = self.body(x).tanh()
            return self.a(h) + self.b(h) if use_b else self.a(h)

    ember.manual_seed(1)
    ref = Heads().double()
    model = DDP(Heads().double(), find_unused_parameters=True)
    model.module.load_state_dict(ref.state_dict())
    x, _ = batch(300, 3)
    model(shard(x, 3), rank == 1).sum().backward()
    total = sum(ref(x[r * 3:(r + 1) * 3], r == 1).sum() for r in range(world)) / world
    total.backward()
    for (name, p), q in zip(model.module.named_parameters(), ref.parameters(), strict=True):
        if name.startswith("c."):
            check(p.grad is None, f"{name}: unused on every rank keeps grad None")
        else:
            close(p.grad, q.grad, f"find_unused_parameters gradient of {name}")
    # without find_unused_parameters an unused head is an error at the next forward
    strict = DDP(Heads().double())
    strict(shard(x, 3), False).sum().backward()
    expect_error(RuntimeError, "parameters that received no gradient: ['b.weight', 'b.bias', 'c.weight', 'c.bias']",
                 lambda: strict(shard(x, 3), False))

    # broadcast_buffers: at each forward every rank starts from rank 0's BatchNorm statistics
    for broadcast in (True, False):
        net = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)).double()
        seen = []
        net[1].register_forward_pre_hook(lambda m, args, seen=seen: seen.append(m.running_mean.clone()))
        model = DDP(net, broadcast_buffers=broadcast)
        for k in range(2):
            x, _ = batch(400 + k, 3)
            model(shard(x, 3)).sum().backward()
        everyone = [ember.zeros(4, dtype=ember.float64) for _ in range(world)]
        dist.all_gather(everyone, seen[-1])
        agree = all(bool((e == everyone[0]).all()) for e in everyone)
        check(agree == broadcast, f"broadcast_buffers={broadcast}: running means agree: {agree}")

    # DistributedSampler: the ranks' shares are disjoint and cover the dataset (padded)
    from ember.utils.data import DistributedSampler
    sampler = DistributedSampler(list(range(10)), shuffle=True, seed=3)
    sampler.set_epoch(2)
    shares = [None] * world
    dist.all_gather_object(shares, list(sampler))
    check(len(shares[rank]) == -(-10 // world) and sorted(set(sum(shares, []))) == list(range(10)),
          f"DistributedSampler shares {shares}")


def job_ddp_hooks(rank: int, world: int) -> None:
    """DDP communication hooks: allreduce_hook equals the default bit for bit; fp16/bf16 within the
    cast's precision; PowerSGD at full rank equals plain averaging, and at rank 1 with error feedback
    trains a regression MLP to the loss plain DDP reaches."""
    from ember import nn
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks as dh
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    from ember.nn.parallel import DistributedDataParallel as DDP

    def mlp(dtype=ember.float64) -> nn.Module:
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype)

    def batch(step: int, dtype=ember.float64) -> tuple[ember.Tensor, ember.Tensor]:
        g = ember.Generator()
        g.manual_seed(700 + step * world + rank)  # this rank's own shard
        return ember.randn(4, 5, generator=g, dtype=dtype), ember.randn(4, 3, generator=g, dtype=dtype)

    def train(model: nn.Module, steps: int, dtype=ember.float64, record=None) -> None:
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for step in range(steps):
            x, y = batch(step, dtype)
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            if record is not None:
                record.append([p.grad.clone() for p in model.parameters()])
            opt.step()

    def err(a: ember.Tensor, b: ember.Tensor) -> float:
        return float((a.double() - b.double()).abs().max())

    cap = 200 / 2**20  # several buckets
    plain = DDP(mlp(), bucket_cap_mb=cap)
    train(plain, 10)
    hooked = DDP(mlp(), bucket_cap_mb=cap)
    hooked.register_comm_hook(None, dh.allreduce_hook)
    train(hooked, 10)
    for p, q in zip(hooked.parameters(), plain.parameters(), strict=True):
        check(bool((p == q).all()), f"allreduce_hook vs default: max difference {err(p, q)}")

    # fp16/bf16: the gradients of the first step against the default's, on float32 models
    for hook, rel in ((dh.fp16_compress_hook, 2.0 ** -9), (dh.bf16_compress_hook, 2.0 ** -6)):
        ref_grads, grads = [], []
        train(DDP(mlp(ember.float32), bucket_cap_mb=cap), 3, ember.float32, ref_grads)
        model = DDP(mlp(ember.float32), bucket_cap_mb=cap)
        model.register_comm_hook(dist.group.WORLD, hook)
        train(model, 3, ember.float32, grads)
        for step in range(3):
            for g, r in zip(grads[step], ref_grads[step], strict=True):
                scale = float(r.abs().max())
                check(g.dtype == ember.float32 and err(g, r) <= rel * scale + 1e-6,
                      f"{hook.__name__} step {step}: error {err(g, r)} vs scale {scale}")

    # the wrappers: fp16_compress_wrapper(allreduce_hook) is fp16_compress_hook, bit for bit
    wrapped = DDP(mlp(ember.float32), bucket_cap_mb=cap)
    wrapped.register_comm_hook(None, dh.fp16_compress_wrapper(dh.allreduce_hook))
    direct = DDP(mlp(ember.float32), bucket_cap_mb=cap)
    direct.register_comm_hook(None, dh.fp16_compress_hook)
    train(wrapped, 3, ember.float32)
    train(direct, 3, ember.float32)
    for p, q in zip(wrapped.parameters(), direct.parameters(), strict=True):
        check(p.dtype == ember.float32 and bool((p == q).all()), f"fp16_compress_wrapper: off by {err(p, q)}")

    # PowerSGD with a rank at least each matrix's full rank, compressing every matrix: the same
    # average as plain all-reduce (up to rounding), for 8 compressed steps after 2 plain ones
    state = psgd.PowerSGDState(None, matrix_approximation_rank=8, start_powerSGD_iter=2, min_compression_rate=0,
                               use_error_feedback=True, warm_start=True, random_seed=3)
    full = DDP(mlp(), bucket_cap_mb=cap)
    full.register_comm_hook(state, psgd.powerSGD_hook)
    train(full, 10)
    check(state.iter == 10 and state.compression_stats()[2] > 0 and len(state.error_dict) > 0,
          f"PowerSGD state: iter {state.iter}, stats {state.compression_stats()}")
    for p, q in zip(full.parameters(), plain.parameters(), strict=True):
        check(err(p, q) < 1e-9, f"full-rank PowerSGD vs plain averaging: max difference {err(p, q)}")

    # batched PowerSGD at full rank on a bucket that is exactly a square (a 4 x 4 weight, whose
    # gradient over 8 samples has full rank): plain averaging again
    def square(hook_state) -> nn.Module:
        ember.manual_seed(3)
        net = DDP(nn.Linear(4, 4, bias=False).double())
        if hook_state is not None:
            net.register_comm_hook(hook_state, psgd.batched_powerSGD_hook)
        opt = ember.optim.SGD(net.parameters(), lr=0.1)
        for step in range(10):
            g = ember.Generator()
            g.manual_seed(40 + step * world + rank)
            x, y = ember.randn(4, 4, generator=g, dtype=ember.float64), ember.randn(4, 4, generator=g, dtype=ember.float64)
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
        return net

    bstate = psgd.PowerSGDState(None, matrix_approximation_rank=4, start_powerSGD_iter=2, random_seed=4)
    a, b = square(bstate).module.weight, square(None).module.weight
    check(bstate.iter == 10 and bstate.compression_stats()[1:] == (8 * 16, 8 * 32) and err(a, b) < 1e-9,
          f"full-rank batched PowerSGD vs plain averaging: {bstate.compression_stats()}, off by {err(a, b)}")

    # PowerSGD at rank 1 with error feedback on a regression task: after 150 SGD steps the loss is
    # within 25% (+0.002) of plain DDP's, and both lie far below the starting loss
    def regression(hook_state, hook=None) -> tuple[float, float]:
        ember.manual_seed(11)
        teacher = nn.Sequential(nn.Linear(16, 24), nn.Tanh(), nn.Linear(24, 1)).double()
        ember.manual_seed(12)
        net = DDP(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                                nn.Linear(32, 1)).double())
        if hook is not None:
            net.register_comm_hook(hook_state, hook)
        g = ember.Generator()
        g.manual_seed(99)
        xs = ember.randn(world, 64, 16, generator=g, dtype=ember.float64)
        with ember.no_grad():
            ys = teacher(xs)
        opt = ember.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for _ in range(150):
            opt.zero_grad()
            loss = ((net(xs[rank]) - ys[rank]) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        total = ember.tensor([losses[0], losses[-1]], dtype=ember.float64)
        dist.all_reduce(total, op=dist.ReduceOp.AVG)
        return float(total[0]), float(total[1])

    start, plain_loss = regression(None)
    low = psgd.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=10, use_error_feedback=True,
                             warm_start=True, random_seed=5)
    start_low, low_loss = regression(low, psgd.powerSGD_hook)
    rate = low.compression_stats()[0]
    _, fp16_loss = regression(None, dh.fp16_compress_hook)
    batched_state = psgd.PowerSGDState(None, matrix_approximation_rank=4, start_powerSGD_iter=10, random_seed=5)
    _, batched_loss = regression(batched_state, psgd.batched_powerSGD_hook)
    batched_rate = batched_state.compression_stats()[0]
    print(f"regression: start {start:.4f}, plain DDP {plain_loss:.5f}, PowerSGD rank 1 {low_loss:.5f} "
          f"(compression rate {rate:.2f}), fp16 {fp16_loss:.5f}, batched PowerSGD rank 4 {batched_loss:.5f} "
          f"(compression rate {batched_rate:.2f})", flush=True)
    check(batched_rate > 2 and batched_loss <= 1.25 * plain_loss + 0.002,
          f"batched PowerSGD rank 4 loss {batched_loss} vs plain DDP {plain_loss} (rate {batched_rate})")
    check(abs(fp16_loss - plain_loss) <= 0.05 * plain_loss, f"fp16 hook loss {fp16_loss} vs plain DDP {plain_loss}")
    check(start == start_low and rate > 2, f"starting losses {start} {start_low}, rate {rate}")
    check(plain_loss < 0.1 * start and low_loss <= 1.25 * plain_loss + 0.002,
          f"PowerSGD rank 1 loss {low_loss} vs plain DDP {plain_loss} (start {start})")


def job_fsdp(rank: int, world: int) -> None:
    """FSDP on `world` processes against one process on the whole batch (float64): an MLP (size-based
    auto-wrap, 10 SGD steps) and a Transformer encoder layer (transformer auto-wrap, 10 Adam steps)
    under each ShardingStrategy; full and local state dicts round-trip; MixedPrecision, CPUOffload,
    ignored_modules, sync_module_states."""
    import functools

    from ember import nn
    from ember.distributed.fsdp import (
        CPUOffload,
        FlatParameter,
        FullStateDictConfig,
        LocalStateDictConfig,
        MixedPrecision,
        ShardedStateDictConfig,
        ShardingStrategy,
        StateDictType,
    )
    from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    from ember.distributed.fsdp.wrap import (
        ModuleWrapPolicy,
        size_based_auto_wrap_policy,
        transformer_auto_wrap_policy,
    )

    def mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)).double()

    def encoder() -> nn.Module:
        return nn.Sequential(nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                                        batch_first=True), nn.Linear(8, 3)).double()

    def data(step: int, shape) -> tuple[ember.Tensor, ember.Tensor]:
        g = ember.Generator()
        g.manual_seed(900 + step)
        x = ember.randn(world * shape[0], *shape[1:], generator=g, dtype=ember.float64)
        return x, ember.randn(*x.shape[:-1], 3, generator=g, dtype=ember.float64)

    def shard(t: ember.Tensor) -> ember.Tensor:
        n = t.shape[0] // world
        return t[rank * n:(rank + 1) * n]

    def close(model: nn.Module, ref: Any, what: str, tol: float = 1e-12) -> None:
        got, want = model.state_dict(), ref if isinstance(ref, dict) else ref.state_dict()
        check(list(got) == list(want), f"{what}: keys {list(got)} vs {list(want)}")
        for k in want:
            err = float((got[k].double() - want[k].double()).abs().max())
            check(err <= tol, f"{what}: {k} off by {err}")

    def train(make, wrap, shape, opt_cls, steps=10, tol=1e-12, what=""):
        ember.manual_seed(0)
        ref = make()
        ember.manual_seed(1 + rank)
        model = wrap(make())
        model.load_state_dict(ref.state_dict())  # every rank passes the full state dict
        opt, ref_opt = opt_cls(model.parameters()), opt_cls(ref.parameters())
        for step in range(steps):
            x, y = data(step, shape)
            opt.zero_grad()
            ((model(shard(x)) - shard(y)) ** 2).mean().backward()
            opt.step()
            ref_opt.zero_grad()
            ((ref(x) - y) ** 2).mean().backward()
            ref_opt.step()
        close(model, ref, what, tol)
        return model, ref

    size_policy = functools.partial(size_based_auto_wrap_policy, min_num_params=40)
    layer_policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={nn.TransformerEncoderLayer})
    sgd = functools.partial(ember.optim.SGD, lr=0.1, momentum=0.9)
    adam = functools.partial(ember.optim.Adam, lr=1e-2)
    for strategy in ShardingStrategy:
        mlp_fsdp, mlp_ref = train(mlp, lambda m, s=strategy: FSDP(m, sharding_strategy=s, auto_wrap_policy=size_policy),
                                  (4, 5), sgd, what=f"MLP {strategy.name}")
        units = [m for m in mlp_fsdp.modules() if isinstance(m, FSDP)]
        flat = [p for p in mlp_fsdp.parameters()]
        sizes = [u._numel for u in units if u.flat_param is not None]
        share = (lambda n: n) if strategy == ShardingStrategy.NO_SHARD else (lambda n: -(-n // world))
        check(len(units) == 3 and sorted(sizes) == [27, 48, 72] and all(isinstance(p, FlatParameter) for p in flat)
              and sorted(p.numel() for p in flat) == sorted(share(n) for n in sizes),
              f"{strategy.name}: units {len(units)}, sizes {sizes}, local {[p.numel() for p in flat]}")
        # 1e-10: the key projection's bias has a gradient of pure rounding noise (softmax ignores it),
        # which Adam's division by sqrt(v) + eps scales up by ~1/eps
        # the gathered parameters: released after forward and gathered again before backward
        # (FULL_SHARD: the pages go back to the OS, so the saved views read zeros in between), or
        # kept until backward (SHARD_GRAD_OP); NO_SHARD gathers nothing
        first = units[1].module  # Linear(5, 8)
        before = units[1]._all_gathers
        loss = mlp_fsdp(ember.ones(2, 5, dtype=ember.float64)).sum()
        held, forward_gathers = first.weight.numel(), units[1]._all_gathers - before
        gathered = units[1]._last_gathered()
        released = gathered is not None and not gathered.live and float(gathered.tensor.abs().sum()) == 0
        loss.backward()
        gathers = units[1]._all_gathers - before
        expected = {ShardingStrategy.FULL_SHARD: (0, 1, 2, True), ShardingStrategy.SHARD_GRAD_OP: (40, 1, 1, False),
                    ShardingStrategy.NO_SHARD: (0, 0, 0, False)}[strategy]
        check((held, forward_gathers, gathers, released) == expected and first.weight.numel() == 0,
              f"{strategy.name}: {held} gathered weights held between forward and backward, {forward_gathers} "
              f"gathers in forward, {gathers} in all, pages released {released}")
        train(encoder, lambda m, s=strategy: FSDP(m, sharding_strategy=s, auto_wrap_policy=layer_policy),
              (2, 3, 8), adam, tol=1e-10, what=f"Transformer {strategy.name}")

    # no_sync accumulation, clip_grad_norm_ (inf, then 2) and summon_full_params on FULL_SHARD
    ember.manual_seed(0)
    ref = mlp()
    model = FSDP(mlp(), auto_wrap_policy=size_policy)
    model.load_state_dict(ref.state_dict())
    for k in range(2):
        x, y = data(200 + k, (2, 5))
        with model.no_sync() if k == 0 else contextlib.nullcontext():
            ((model(shard(x)) - shard(y)) ** 2).mean().backward()
        ((ref(x) - y) ** 2).mean().backward()
    inf_norm = model.clip_grad_norm_(1e9, float("inf"))
    ref_inf = nn.utils.get_total_norm([p.grad for p in ref.parameters()], float("inf"))
    norm = model.clip_grad_norm_(0.05)
    ref_norm = nn.utils.clip_grad_norm_(ref.parameters(), 0.05)
    check(abs(float(inf_norm) - float(ref_inf)) < 1e-12 and abs(float(norm) - float(ref_norm)) < 1e-12
          and float(ref_norm) > 0.05, f"clip_grad_norm_: {inf_norm} {ref_inf}, {norm} {ref_norm}")
    ember.optim.SGD(model.parameters(), lr=0.5).step()
    ember.optim.SGD(ref.parameters(), lr=0.5).step()
    close(model, ref, "no_sync accumulation, then clipping")
    with FSDP.summon_full_params(model):
        linear = model.module[0].module
        check(linear.weight.shape == (8, 5), f"summon_full_params: weight of shape {linear.weight.shape}")
        err = float((linear.weight - ref[0].weight).abs().max())
        linear.weight.mul_(2)
    with ember.no_grad():
        ref[0].weight.mul_(2)
    check(err < 1e-12 and linear.weight.numel() == 0, f"summon_full_params: off by {err}")
    close(model, ref, "summon_full_params writeback")

    # optimizer state: full_optim_state_dict consolidates Adam's shards under the original
    # parameters' ids; shard_full_optim_state_dict hands a fresh model's optimizer its share
    def step(m: nn.Module, o: Any, x: ember.Tensor, y: ember.Tensor) -> None:
        o.zero_grad()
        ((m(x) - y) ** 2).mean().backward()
        o.step()

    ember.manual_seed(0)
    ref = mlp()
    model = FSDP(mlp(), auto_wrap_policy=size_policy)
    model.load_state_dict(ref.state_dict())
    opt, ref_opt = adam(model.parameters()), adam(ref.parameters())
    for k in range(3):
        x, y = data(300 + k, (2, 5))
        step(model, opt, shard(x), shard(y))
        step(ref, ref_opt, x, y)
    full_osd = FSDP.full_optim_state_dict(model, opt, rank0_only=False)
    ref_osd = ref_opt.state_dict()
    check(full_osd["param_groups"][0]["params"] == list(range(6)) and sorted(full_osd["state"]) == list(range(6))
          and full_osd["param_groups"][0]["lr"] == 1e-2, f"full optimizer state dict: {full_osd['param_groups']}")
    for uid in range(6):
        for key in ("step", "exp_avg", "exp_avg_sq"):
            got, want = full_osd["state"][uid][key], ref_osd["state"][uid][key]
            check(got.shape == want.shape and float((got - want).abs().max()) < 1e-12,
                  f"full optimizer state {uid} {key}: {got} vs {want}")
    only = FSDP.full_optim_state_dict(model, opt)
    check(len(only["state"]) == 6 if rank == 0 else only == {}, f"rank0_only optimizer state on rank {rank}")
    fresh = FSDP(mlp(), auto_wrap_policy=size_policy)
    scattered = FSDP(mlp(), auto_wrap_policy=size_policy)
    fresh.load_state_dict(model.state_dict())
    scattered.load_state_dict(model.state_dict())
    fresh_opt, scattered_opt = adam(fresh.parameters()), adam(scattered.parameters())
    fresh_opt.load_state_dict(FSDP.shard_full_optim_state_dict(full_osd, fresh))
    scattered_opt.load_state_dict(FSDP.scatter_full_optim_state_dict(only if rank == 0 else None, scattered))
    for k in range(2):
        x, y = data(400 + k, (2, 5))
        step(fresh, fresh_opt, shard(x), shard(y))
        step(scattered, scattered_opt, shard(x), shard(y))
        step(ref, ref_opt, x, y)
    close(fresh, ref, "training resumed from the sharded full optimizer state dict")
    close(scattered, ref, "training resumed from the scattered full optimizer state dict")

    # full state dict: a fresh model loads it and then computes what the reference does
    full = mlp_fsdp.state_dict()
    ember.manual_seed(50 + rank)
    fresh = FSDP(mlp(), auto_wrap_policy=size_policy)
    fresh.load_state_dict(full)
    close(fresh, full, "full state dict round trip", 0)
    x, _ = data(77, (4, 5))
    out = fresh(shard(x))
    err = float((out - mlp_ref(shard(x))).abs().max())
    check(err < 1e-12, f"output after loading the full state dict: off by {err}")
    with FSDP.state_dict_type(fresh, StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True,
                                                                                        rank0_only=True)):
        only = fresh.state_dict()
    check((len(only) == 6) if rank == 0 else (only == {}), f"rank0_only state dict on rank {rank}: {list(only)}")
    # sharded state dict: original names, this rank's chunk of each parameter's rows
    with FSDP.state_dict_type(fresh, StateDictType.SHARDED_STATE_DICT, ShardedStateDictConfig()):
        chunks = fresh.state_dict()
        reloaded = FSDP(mlp(), auto_wrap_policy=size_policy)
        with FSDP.state_dict_type(reloaded, StateDictType.SHARDED_STATE_DICT):
            reloaded.load_state_dict(chunks)
    rows = -(-8 // world)
    check(list(chunks) == list(full) and all(bool((chunks[k] == full[k][rank * rows:(rank + 1) * rows]).all())
                                             for k in ("0.weight", "0.bias", "2.weight"))
          and chunks["4.bias"].shape == full["4.bias"][rank * -(-3 // world):(rank + 1) * -(-3 // world)].shape,
          f"sharded state dict on rank {rank}: {[(k, tuple(v.shape)) for k, v in chunks.items()]}")
    close(reloaded, full, "sharded state dict round trip", 0)

    # local state dict: the flat shards under the wrappers' names
    with FSDP.state_dict_type(fresh, StateDictType.LOCAL_STATE_DICT, LocalStateDictConfig()):
        local = fresh.state_dict()
        other = FSDP(mlp(), auto_wrap_policy=size_policy)
        with FSDP.state_dict_type(other, StateDictType.LOCAL_STATE_DICT):
            other.load_state_dict(local)
    check(sorted(local) == ["_fsdp_wrapped_module.0.flat_param", "_fsdp_wrapped_module.2.flat_param", "flat_param"]
          and local["flat_param"].numel() == -(-27 // world), f"local state dict {[(k, v.shape) for k, v in local.items()]}")
    close(other, full, "local state dict round trip", 0)

    # MixedPrecision: compute in float32, shards and their gradients stay float64
    mp = MixedPrecision(param_dtype=ember.float32, reduce_dtype=ember.float32, buffer_dtype=ember.float32)
    model, _ = train(mlp, lambda m: FSDP(m, mixed_precision=mp, auto_wrap_policy=ModuleWrapPolicy({nn.Linear})),
                     (4, 5), sgd, steps=3, tol=1e-5, what="MixedPrecision")
    check(model(ember.zeros(2, 5, dtype=ember.float64)).dtype == ember.float32
          and all(p.dtype == ember.float64 and p.grad.dtype == ember.float64 for p in model.parameters()),
          "MixedPrecision dtypes")
    bn = FSDP(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).double(), mixed_precision=mp)
    check(bn.module[1].running_mean.dtype == ember.float32, "buffer_dtype casts buffers")

    # CPUOffload is a flag on CPU; ignored_modules keep their parameters whole and unsynchronized
    train(mlp, lambda m: FSDP(m, cpu_offload=CPUOffload(offload_params=True)), (4, 5), sgd, steps=3,
          what="CPUOffload")
    net = mlp()
    ignored = FSDP(net, ignored_modules=[net[4]])
    names = [n for n, _ in ignored.named_parameters()]
    check(names == ["flat_param", "_fsdp_wrapped_module.4.weight", "_fsdp_wrapped_module.4.bias"]
          and ignored.flat_param.numel() == -(-120 // world), f"ignored_modules: {names}, {ignored.flat_param.numel()}")

    # sync_module_states: every rank starts from rank 0's weights
    ember.manual_seed(rank)
    synced = FSDP(mlp(), sync_module_states=True).state_dict()
    ember.manual_seed(0)
    for k, v in mlp().state_dict().items():
        check(bool((synced[k] == v).all()), f"sync_module_states: {k}")


def _store_flag_set(key: str) -> None:
    dist.distributed_c10d._world.store.set(key, b"1")


def _store_flag_wait(key: str) -> None:
    dist.distributed_c10d._world.store.wait([key], timedelta(seconds=30))


JOBS = {"collectives": job_collectives, "ddp": job_ddp, "ddp_hooks": job_ddp_hooks, "fsdp": job_fsdp, "timeout": job_timeout, "killed_peer": job_killed_peer}
TIMEOUTS = {"collectives": 60, "ddp": 60, "ddp_hooks": 60, "fsdp": 60, "timeout": 60, "killed_peer": 60}


if __name__ == "__main__":
    job, rank, world, init_method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=TIMEOUTS[job]))
    JOBS[job](rank, world)
    print(f"checks: {checks}", flush=True)
    if job != "killed_peer":
        dist.destroy_process_group()
