"""The sharded EmbeddingBagCollection step in 2 processes (Gloo on loopback) against the same
step in one process: FusedEmbeddingBagCollection (SGD) over 8 tables of `rows` x 64, each process
with its own batch of 2048 bags of 20 ids. The ratio is the 2-process step time / the one-process
step time (weak scaling: the 2 processes together train twice the samples); 1.0 would mean
sharding costs nothing over one process, values above 1 are the communication and the sharing of
this machine's cores.

    python bench_rec_sharded.py [--rows 100000] [--steps 20] [--sharding table_wise,row_wise]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

TABLES, DIM, BATCH, POOL, WORLD = 8, 64, 2048, 20, 2


def tables(rows):
    return [EmbeddingBagConfig(num_embeddings=rows, embedding_dim=DIM, name=f"t{t}", feature_names=[f"f{t}"])
            for t in range(TABLES)]


def batch(rows, seed):
    rng = np.random.default_rng(seed)
    return KeyedJaggedTensor.from_lengths_sync([f"f{t}" for t in range(TABLES)],
                                               ember.from_numpy(rng.integers(0, rows, TABLES * BATCH * POOL)),
                                               ember.from_numpy(np.full(TABLES * BATCH, POOL)))


def step_times(module, kjt, grad, steps):
    module(kjt).values().backward(grad)  # warm up
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        module(kjt).values().backward(grad)
        times.append(time.perf_counter() - start)
    return times


def child(rank, rows, steps, sharding, init):
    import ember.distributed as dist
    from ember.tbe import EmbOptimType
    from emberrec.distributed import sharding_plan
    from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from emberrec.distributed.model_parallel import DistributedModelParallel
    from emberrec.distributed.types import ShardingPlan

    ember.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=WORLD)
    ebc = EmbeddingBagCollection(tables(rows))
    generator = sharding_plan.row_wise() if sharding == "row_wise" else None
    per_table = {f"t{t}": generator or sharding_plan.table_wise(rank=t % WORLD) for t in range(TABLES)}
    plan = ShardingPlan({"": sharding_plan.construct_module_sharding_plan(ebc, per_table, world_size=WORLD,
                                                                          device_type="cpu")})
    sharder = EmbeddingBagCollectionSharder(fused_params={"optimizer": EmbOptimType.EXACT_SGD, "learning_rate": 0.01})
    dmp = DistributedModelParallel(ebc, plan=plan, sharders=[sharder])
    grad = ember.ones(BATCH, TABLES * DIM)
    times = step_times(dmp, batch(rows, rank), grad, steps)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"median {statistics.median(times)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sharding", default="table_wise,row_wise")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # rank, sharding, init method
    args = parser.parse_args(argv)
    if args.child:
        child(int(args.child[0]), args.rows, args.steps, args.child[1], args.child[2])
        return 0
    import ember.distributed as dist

    if not dist.is_gloo_available():
        print("bench_rec_sharded: ember was built without Gloo; skipped")
        return 0
    from emberrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection

    ember.set_num_threads(1)
    single = FusedEmbeddingBagCollection(tables(args.rows), ember.optim.SGD, {"lr": 0.01})
    one = statistics.median(step_times(single, batch(args.rows, 0), ember.ones(BATCH, TABLES * DIM), args.steps))
    del single
    print(f"emberrec sharded EBC step, {WORLD} processes x 1 thread vs 1 process x 1 thread; {TABLES} tables x "
          f"{args.rows} x {DIM}, B {BATCH} per process, L {POOL}, fused SGD")
    print(f"{'sharding':12s} {'2 processes':>12s} {'1 process':>10s} {'ratio':>6s}")
    for sharding in args.sharding.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            init = f"file://{tmp}/store"
            procs = [subprocess.Popen([sys.executable, __file__, "--rows", str(args.rows), "--steps", str(args.steps),
                                       "--child", str(r), sharding, init], stdout=subprocess.PIPE, text=True,
                                      env=dict(os.environ, OMP_NUM_THREADS="1")) for r in range(WORLD)]
            outs = [p.communicate(timeout=600)[0] for p in procs]
        if any(p.returncode for p in procs):
            print(f"{sharding:12s} failed (exit codes {[p.returncode for p in procs]})")
            continue
        two = float(outs[0].split("median ")[1])
        print(f"{sharding:12s} {two * 1e3:10.2f}ms {one * 1e3:8.2f}ms {two / one:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
