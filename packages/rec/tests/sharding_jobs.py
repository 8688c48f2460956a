"""Jobs that test_sharding.py runs in N processes: python sharding_jobs.py JOB RANK WORLD INIT_METHOD.

Every rank builds the same unsharded EmbeddingBagCollection (same seed) and its own batch (seeded by
rank, batch size 3 + rank), so each rank can also compute what the unsharded module gives for every
rank's batch: the reference for outputs, gradients and optimizer steps. Prints "checks: N" on success.
"""

from __future__ import annotations

import sys

import numpy as np

import ember
import ember.distributed as dist
from ember.tbe import EmbOptimType
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType
from emberrec.distributed import sharding_plan
from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from emberrec.distributed.model_parallel import DistributedModelParallel
from emberrec.distributed.sharded_embeddingbag import ShardedTensor
from emberrec.distributed.types import ShardingPlan

TABLES = [
    EmbeddingBagConfig(num_embeddings=11, embedding_dim=8, name="t0", feature_names=["f0"]),
    EmbeddingBagConfig(num_embeddings=7, embedding_dim=8, name="t1", feature_names=["f1", "f2"],
                       pooling=PoolingType.MEAN),
]
KEYS = ["f2", "f0", "f1"]
ROWS = {"f0": 11, "f1": 7, "f2": 7}
CHECKS = 0


def check(ok: bool, what: str) -> None:
    global CHECKS
    if not ok:
        raise AssertionError(what)
    CHECKS += 1


def close(a, b, what, tol=1e-10):
    a = a.detach().numpy() if isinstance(a, ember.Tensor) else a
    b = b.detach().numpy() if isinstance(b, ember.Tensor) else b
    check(a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol), f"{what}: max diff "
          f"{np.abs(a - b).max() if a.shape == b.shape else (a.shape, b.shape)}")


def batch(rank: int):
    rng = np.random.default_rng(100 + rank)
    stride = 3 + rank
    lengths = rng.integers(0, 4, stride * len(KEYS))
    values = np.concatenate([rng.integers(0, ROWS[k], lengths[i * stride:(i + 1) * stride].sum())
                             for i, k in enumerate(KEYS)])
    return KeyedJaggedTensor.from_lengths_sync(KEYS, ember.tensor(values), ember.tensor(lengths))


def upstream(rank: int, dtype):
    return ember.tensor(np.random.default_rng(200 + rank).standard_normal((3 + rank, 24)), dtype=dtype)


def reference(dtype):
    ember.manual_seed(0)
    return EmbeddingBagCollection(TABLES).to(dtype)


def plan_for(ebc, kind: str, world: int, kernel: str) -> ShardingPlan:
    generators = {
        "table_wise": {"t0": sharding_plan.table_wise(rank=world - 1), "t1": sharding_plan.table_wise(rank=0)},
        "row_wise": sharding_plan.apply_to_all(ebc, sharding_plan.row_wise()),
        "column_wise": sharding_plan.apply_to_all(ebc, sharding_plan.column_wise(ranks=[world - 1, 0])),
        "table_row_wise": sharding_plan.apply_to_all(ebc, sharding_plan.table_row_wise(host_index=0)),
        "data_parallel": sharding_plan.apply_to_all(ebc, sharding_plan.data_parallel()),
        "table_column_wise": sharding_plan.apply_to_all(ebc, sharding_plan.column_wise(ranks=[0, world - 1])),
        "mixed": {"t0": sharding_plan.row_wise(), "t1": sharding_plan.column_wise(ranks=[0, world - 1])},
    }[kind]
    module_plan = sharding_plan.construct_module_sharding_plan(ebc, generators, world_size=world, device_type="cpu")
    for ps in module_plan.values():
        if kind == "table_column_wise":  # column blocks on the ranks of host 0 (all ranks here: one host)
            ps.sharding_type = "table_column_wise"
        if ps.sharding_type != "data_parallel":
            ps.compute_kernel = kernel
    return ShardingPlan({"": module_plan})


def gathered(dmp) -> dict:
    return {k: v.gather() if isinstance(v, ShardedTensor) else v for k, v in dmp.state_dict().items()}


def job_dense(rank: int, world: int) -> None:
    """Every sharding type, dense kernel, float64: outputs equal the unsharded module's and every
    table's gradient the sum over ranks (replicated tables: the average)."""
    for kind in ("table_wise", "row_wise", "column_wise", "table_row_wise", "table_column_wise", "data_parallel",
                 "mixed"):
        ref = reference(ember.float64)
        dmp = DistributedModelParallel(reference(ember.float64), plan=plan_for(ref, kind, world, "dense"))
        out = dmp(batch(rank))
        want = ref(batch(rank))
        check(out.keys() == want.keys(), f"{kind}: keys {out.keys()}")
        close(out.values(), want.values(), f"{kind}: forward on rank {rank}")
        (out.values() * upstream(rank, ember.float64)).sum().backward()
        for s in range(world):
            (ref(batch(s)).values() * upstream(s, ember.float64)).sum().backward()
        sharded = dmp.module
        for config in TABLES:
            full = ref.embedding_bags[config.name].weight.grad
            if kind == "data_parallel":
                close(sharded.embedding_bags[config.name].weight.grad, full / world, f"{kind}: {config.name} grad")
                continue
            for shard, key in sharded._local_shards[config.name]:
                (r0, c0), (nr, nc) = shard.shard_offsets, shard.shard_sizes
                close(sharded.embedding_bags[key].weight.grad, full[r0:r0 + nr, c0:c0 + nc],
                      f"{kind}: {config.name} shard {key} grad on rank {rank}")
        state = gathered(dmp)
        for key, value in ref.state_dict().items():
            close(state[key], value, f"{kind}: gathered {key}")


def job_fused(rank: int, world: int) -> None:
    """Fused SGD in the backward: after two steps every table equals the unsharded module trained
    by SGD on the sum of every rank's loss; a fresh DMP loads the gathered state."""
    for kind in ("table_wise", "row_wise", "column_wise", "table_row_wise", "mixed"):
        ref = reference(ember.float32)
        optimizer = ember.optim.SGD(ref.parameters(), lr=0.1)
        plan = plan_for(ref, kind, world, "fused")
        dmp = DistributedModelParallel(reference(ember.float32), plan=plan, sharders=[
            EmbeddingBagCollectionSharder(
                fused_params={"optimizer": EmbOptimType.EXACT_SGD, "learning_rate": 0.1})])
        for _ in range(2):
            (dmp(batch(rank)).values() * upstream(rank, ember.float32)).sum().backward()
            optimizer.zero_grad()
            for s in range(world):
                (ref(batch(s)).values() * upstream(s, ember.float32)).sum().backward()
            optimizer.step()
        state = gathered(dmp)
        for key, value in ref.state_dict().items():
            close(state[key], value, f"{kind} fused: {key}", tol=1e-5)
        fresh = DistributedModelParallel(reference(ember.float32), plan=plan)
        fresh.load_state_dict(state)
        close(fresh(batch(rank)).values(), ref(batch(rank)).values(), f"{kind}: reloaded forward", tol=1e-5)
        n_local = sum(len(shards) for shards in dmp.module._local_shards.values())
        check(len(dmp.fused_optimizer.params) == n_local, f"{kind}: the fused optimizer holds the {n_local} local shards")


def job_planned(rank: int, world: int) -> None:
    """No plan given: the planner plans on every rank (the same plan) and the outputs are right."""
    from emberrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from emberrec.distributed.planner.types import PlannerError

    ref = reference(ember.float32)
    dmp = DistributedModelParallel(reference(ember.float32))
    check(set(dmp.plan.plan) == {""}, f"planned modules {list(dmp.plan.plan)}")
    close(dmp(batch(rank)).values(), ref(batch(rank)).values(), "planned forward", tol=1e-6)
    # A rank with a different model plans differently: every rank learns which one.
    tables = TABLES if rank == 0 else [EmbeddingBagConfig(**{**TABLES[0].__dict__, "num_embeddings": 5000}), TABLES[1]]
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=world, compute_device="cpu"))
    try:
        planner.collective_plan(EmbeddingBagCollection(tables), None, None)
        check(False, "differing plans are refused")
    except PlannerError as error:
        check("planned differently from rank 0" in str(error) and "[1]" in str(error), str(error))


def dlrm_batches(rank: int, n: int):
    from emberrec.datasets.batch import Batch

    out = []
    for i in range(n):
        kjt = batch(rank + 10 * i)
        rng = np.random.default_rng(300 + rank + 10 * i)
        out.append(Batch(dense_features=ember.tensor(rng.standard_normal((kjt.stride(), 4)).astype(np.float32)),
                         sparse_features=kjt, labels=ember.tensor(rng.integers(0, 2, kjt.stride()).astype(np.float32))))
    return out


def dlrm_dmp(world: int):
    from emberrec.models.dlrm import DLRM, DLRMTrain

    ember.manual_seed(0)
    tables = [EmbeddingBagConfig(**{**t.__dict__}) for t in TABLES]
    model = DLRMTrain(DLRM(EmbeddingBagCollection(tables), dense_in_features=4, dense_arch_layer_sizes=[16, 8],
                           over_arch_layer_sizes=[16, 1]))
    ebc = model.model.sparse_arch.embedding_bag_collection
    module_plan = sharding_plan.construct_module_sharding_plan(
        ebc, {"t0": sharding_plan.row_wise(), "t1": sharding_plan.table_wise(rank=world - 1)}, world_size=world,
        device_type="cpu")
    sharder = EmbeddingBagCollectionSharder(fused_params={"optimizer": EmbOptimType.EXACT_SGD, "learning_rate": 0.1})
    dmp = DistributedModelParallel(model, plan=ShardingPlan({"model.sparse_arch.embedding_bag_collection": module_plan}),
                                   sharders=[sharder])
    return dmp, ember.optim.SGD(dmp.parameters(), lr=0.1)


def job_pipeline(rank: int, world: int) -> None:
    """DLRM with a sharded sparse arch: TrainPipelineSparseDist gives the same losses and the same
    model as the plain loop, and the replicated dense parameters stay equal across ranks."""
    from emberrec.distributed.train_pipeline import TrainPipelineSparseDist

    batches = dlrm_batches(rank, 4)
    plain, plain_opt = dlrm_dmp(world)
    plain_losses = []
    for b in batches:
        plain_opt.zero_grad()
        loss, _ = plain(b)
        loss.backward()
        plain_opt.step()
        plain_losses.append(float(loss))
    piped, piped_opt = dlrm_dmp(world)
    pipeline = TrainPipelineSparseDist(piped, piped_opt)
    it = iter(batches)
    piped_losses = [float(pipeline.progress(it)[0]) for _ in batches]
    try:
        pipeline.progress(it)
        check(False, "progress after the last batch raises StopIteration")
    except StopIteration:
        check(True, "")
    check(np.allclose(plain_losses, piped_losses, rtol=1e-6), f"losses {plain_losses} vs {piped_losses}")
    a, b = gathered(plain), gathered(piped)
    for key in a:
        close(a[key], b[key], f"pipeline: {key}", tol=1e-6)
    head = next(p for p in piped.parameters())
    copies = [ember.zeros_like(head) for _ in range(world)]
    dist.all_gather(copies, head.detach().contiguous())
    for c in copies[1:]:
        close(c, copies[0], "replicated dense parameter equal on every rank", tol=0)


def job_metrics(rank: int, world: int) -> None:
    """RecMetrics reduced over real processes (ember.distributed's all-reduce) equal one metric fed
    every rank's data (windows large enough to hold it all: a rank keeps window_size / world)."""
    from emberrec.metrics import (
        AccuracyMetric,
        AUCMetric,
        CalibrationMetric,
        CTRMetric,
        MSEMetric,
        NEMetric,
        RecMetricList,
        RecTaskInfo,
    )

    task = RecTaskInfo(name="t", label_name="y", prediction_name="p", weight_name="w")

    def metrics(world_size, my_rank):
        return RecMetricList([cls(world_size=world_size, my_rank=my_rank, batch_size=8, tasks=[task], window_size=1000)
                              for cls in (NEMetric, CTRMetric, CalibrationMetric, MSEMetric, AccuracyMetric, AUCMetric)])

    ours, single = metrics(world, rank), metrics(1, 0)
    for step in range(5):
        for r in range(world):
            rng = np.random.default_rng(1000 * step + r)
            n = 6 + r  # ranks hold different numbers of examples
            args = {"predictions": {"t": ember.tensor(rng.uniform(0, 1, n))},
                    "labels": {"t": ember.tensor(rng.integers(0, 2, n).astype(np.float64))},
                    "weights": {"t": ember.tensor(rng.uniform(0.5, 2, n))}}
            single.update(**args)
            if r == rank:
                ours.update(**args)
    got, want = ours.compute(), single.compute()
    if rank != 0:
        check(got == {}, "only rank 0 reports")
        return
    check(set(got) == set(want), f"keys {sorted(set(got) ^ set(want))}")
    for key in want:
        close(got[key], want[key], f"metric {key}", tol=1e-9)


def main() -> int:
    job, rank, world, init_method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
    try:
        globals()[f"job_{job}"](rank, world)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    print(f"checks: {CHECKS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
