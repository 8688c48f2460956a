"""The sharding planner: shard layouts, storage estimates, plans that fit, constraints, errors, stats."""

from __future__ import annotations

import copy
import itertools
import logging
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import nn
from emberrec.distributed.embedding import EmbeddingCollectionSharder
from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from emberrec.distributed.planner import (
    EmbeddingShardingPlanner,
    ParameterConstraints,
    PlannerError,
    Topology,
)
from emberrec.distributed.planner.enumerators import EmbeddingEnumerator
from emberrec.distributed.planner.partitioners import GreedyPerfPartitioner, MemoryBalancedPartitioner
from emberrec.distributed.planner.proposers import GreedyProposer, GridSearchProposer, UniformProposer
from emberrec.distributed.planner.shard_estimators import perf_func_emb_wall_time
from emberrec.distributed.planner.stats import EmbeddingStats
from emberrec.distributed.planner.storage_reservations import HeuristicalStorageReservation
from emberrec.distributed.planner.types import PlannerErrorType, Storage
from emberrec.distributed.sharding_plan import (
    apply_to_all,
    calculate_shard_sizes_and_offsets,
    column_wise,
    construct_module_sharding_plan,
    data_parallel,
    get_module_to_default_sharders,
    row_wise,
    table_row_wise,
    table_wise,
)
from emberrec.distributed.types import (
    EnumerableShardingSpec,
    ParameterSharding,
    ShardingPlan,
    ShardingType,
    ShardMetadata,
)
from emberrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig
from emberrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

EBCSharder, ECSharder = EmbeddingBagCollectionSharder, EmbeddingCollectionSharder


ALL_TYPES = [t.value for t in ShardingType]
KB = 1024


def ebc(*shapes: tuple[str, int, int], weighted: bool = False) -> EmbeddingBagCollection:
    return EmbeddingBagCollection(
        [EmbeddingBagConfig(num_embeddings=r, embedding_dim=d, name=n, feature_names=[f"f_{n}"]) for n, r, d in shapes],
        is_weighted=weighted,
    )


class Model(nn.Module):
    """Tables inside a model: a bag collection two levels down and a sequence collection."""

    def __init__(self, bags: EmbeddingBagCollection, seqs: EmbeddingCollection) -> None:
        super().__init__()
        self.dense = nn.Linear(8, 4)
        self.sparse = nn.ModuleDict({"ebc": bags})
        self.ec = seqs


def planner(topology: Topology, **kwargs: object) -> EmbeddingShardingPlanner:
    kwargs.setdefault("batch_size", 32)
    return EmbeddingShardingPlanner(topology=topology, **kwargs)  # type: ignore[arg-type]


def assert_tiles(sharding_type: str, rows: int, cols: int, sizes: list[list[int]], offsets: list[list[int]]) -> None:
    """Shards cover the table exactly once (data parallel: each shard is the whole table)."""
    if sharding_type == ShardingType.DATA_PARALLEL.value:
        assert all(s == [rows, cols] and o == [0, 0] for s, o in zip(sizes, offsets, strict=True))
        return
    cover = [[0] * cols for _ in range(rows)]
    for (r, c), (r0, c0) in zip(sizes, offsets, strict=True):
        assert r >= 0 and c >= 0 and r0 + r <= rows and c0 + c <= cols
        for i in range(r0, r0 + r):
            for j in range(c0, c0 + c):
                cover[i][j] += 1
    assert all(v == 1 for line in cover for v in line)


def plan_shards(plan: ShardingPlan, path: str, table: str) -> tuple[ParameterSharding, list[ShardMetadata]]:
    ps = plan.plan[path][table]
    return ps, (ps.sharding_spec.shards if ps.sharding_spec else [])


# ---- shard layouts ------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.sampled_from([4, 8, 12, 16, 24, 32, 64, 96, 128, 256, 384, 7]),
    hosts=st.integers(1, 3),
    local=st.integers(1, 4),
    min_partition=st.one_of(st.none(), st.integers(1, 200)),
    sharding_type=st.sampled_from(ALL_TYPES),
)
def test_shard_layouts_tile_the_table(rows, cols, hosts, local, min_partition, sharding_type):
    world = hosts * local
    table = ember.zeros(rows, cols)
    sizes, offsets = calculate_shard_sizes_and_offsets(table, world, local, sharding_type, min_partition)
    assert_tiles(sharding_type, rows, cols, sizes, offsets)
    counts = {"data_parallel": world, "table_wise": 1, "row_wise": world, "table_row_wise": local}
    if sharding_type in counts:
        assert len(sizes) == counts[sharding_type]
    if sharding_type in ("row_wise", "table_row_wise"):
        # blocks of ceil(rows / n): all full but the last non-empty one, then empty ones
        block = math.ceil(rows / len(sizes))
        heights = [s[0] for s in sizes]
        assert heights == [min(block, max(0, rows - i * block)) for i in range(len(sizes))]
    if sharding_type in ("column_wise", "table_column_wise"):
        width = sizes[0][1]
        lower = min_partition or 128
        assert cols % width == 0
        # the smallest multiple of 4 dividing cols that is >= the lower bound, else the whole width
        candidates = [w for w in range(max(lower, 1), cols) if cols % w == 0 and w % 4 == 0]
        assert width == (candidates[0] if candidates else cols)


def test_row_wise_leaves_trailing_ranks_empty():
    sizes, offsets = calculate_shard_sizes_and_offsets(ember.zeros(5, 8), 4, 4, "row_wise")
    assert sizes == [[2, 8], [2, 8], [1, 8], [0, 8]]
    assert offsets == [[0, 0], [2, 0], [4, 0], [5, 0]]
    with pytest.raises(ValueError, match="Unrecognized or unsupported sharding type provided: diagonal"):
        calculate_shard_sizes_and_offsets(ember.zeros(5, 8), 4, 4, "diagonal")


@pytest.mark.parametrize("sharding_type", ALL_TYPES)
@pytest.mark.parametrize("world,local", [(1, 1), (2, 2), (4, 2)])
def test_each_sharding_type_planned(sharding_type, world, local):
    """Forcing one sharding type: the plan's shards tile each table, sit on valid ranks, and a
    host-level table stays on one host."""
    model = ebc(("t0", 37, 64), ("t1", 11, 256), ("t2", 3, 32))
    constraints = {n: ParameterConstraints(sharding_types=[sharding_type], min_partition=32) for n in ("t0", "t1", "t2")}
    topology = Topology(world_size=world, local_world_size=local, compute_device="cpu", ddr_cap=64 * 1024**2)
    plan = planner(topology, constraints=constraints).plan(model, [EBCSharder()])
    for name, rows, cols in (("t0", 37, 64), ("t1", 11, 256), ("t2", 3, 32)):
        ps, shards = plan_shards(plan, "", name)
        assert ps.sharding_type == sharding_type
        assert ps.compute_kernel == ("dense" if sharding_type == "data_parallel" else "fused")
        assert all(0 <= r < world for r in ps.ranks)
        if sharding_type == "data_parallel":
            assert ps.sharding_spec is None and ps.ranks == list(range(world))
            continue
        assert ps.ranks == [s.rank for s in shards]
        assert all(s.placement == f"rank:{s.rank}/cpu" for s in shards)
        assert_tiles(sharding_type, rows, cols, [s.shard_sizes for s in shards], [s.shard_offsets for s in shards])
        if sharding_type == "row_wise":
            assert ps.ranks == list(range(world))
        if sharding_type in ("table_row_wise", "table_column_wise"):
            assert len({r // local for r in ps.ranks}) == 1
        if sharding_type == "table_row_wise":
            host = ps.ranks[0] // local
            assert ps.ranks == list(range(host * local, host * local + local))


# ---- storage estimates ---------------------------------------------------------------------------

def reference_storage(sharding_type: str, rows: int, cols: int, shard: list[int], world: int, local: int,
                      batch: int, pooling: float, pooled: bool = True) -> int:
    """Bytes of one fp32 shard on cpu with no optimizer state: weights plus the id and output
    buffers of its sharding type, written out case by case."""
    r, c = shard
    weights = rows * cols * 4 if sharding_type == "data_parallel" else r * c * 4
    ids = pooling * batch
    out_rows = batch if pooled else ids
    if sharding_type == "data_parallel":
        io = ids * 8 + out_rows * cols * 4
    elif sharding_type == "table_wise":
        io = ids * world * 8 + out_rows * world * cols * 4
    elif sharding_type in ("column_wise", "table_column_wise"):
        io = ids * world * 8 + out_rows * world * c * 4
    else:
        n = world if sharding_type == "row_wise" else local
        local_rows = batch if pooled else ids / n
        io = 0 if r * c == 0 else math.ceil(ids / n * world * 8) + math.ceil(local_rows * world * c * 4)
    return weights + math.ceil(io)


@pytest.mark.parametrize(
    "sharding_type,pooled",
    [(t, True) for t in ALL_TYPES] + [(t, False) for t in ("data_parallel", "table_wise", "column_wise", "row_wise")],
)
def test_storage_estimate_matches_reference(sharding_type, pooled):
    world, local, batch, pooling = 4, 2, 16, 3.0
    rows, cols = 50, 64
    if pooled:
        module, sharder = ebc(("t", rows, cols)), EBCSharder()
    else:
        module = EmbeddingCollection([EmbeddingConfig(num_embeddings=rows, embedding_dim=cols, name="t")])
        sharder = ECSharder()
    topology = Topology(world_size=world, local_world_size=local, compute_device="cpu")
    constraints = {"t": ParameterConstraints(sharding_types=[sharding_type], pooling_factors=[pooling], min_partition=16)}
    (option,) = EmbeddingEnumerator(topology, batch, constraints).enumerate(module, [sharder])
    assert option.is_pooled is pooled
    for shard in option.shards:
        expected = reference_storage(sharding_type, rows, cols, shard.size, world, local, batch, pooling, pooled)
        assert shard.storage == Storage(hbm=0, ddr=expected)


def test_storage_on_cuda_and_optimizer_state():
    topology = Topology(world_size=2, compute_device="cuda", hbm_cap=1024**3)
    module = ebc(("t", 100, 32))
    constraints = {"t": ParameterConstraints(sharding_types=["table_wise"], pooling_factors=[1.0])}
    enumerate_ = EmbeddingEnumerator(topology, 8, constraints).enumerate
    options = {o.compute_kernel: o for o in enumerate_(module, [EBCSharder()])}
    assert set(options) == {"fused", "fused_uvm", "fused_uvm_caching"}
    io = 8 * 2 * 8 + 8 * 2 * 32 * 4  # ids and pooled outputs of 2 ranks' batches of 8
    table = 100 * 32 * 4
    assert options["fused"].shards[0].storage == Storage(hbm=table + io, ddr=0)
    assert options["fused_uvm"].shards[0].storage == Storage(hbm=io, ddr=table)
    assert options["fused_uvm_caching"].shards[0].storage == Storage(hbm=round(0.2 * table) + io, ddr=table)
    # Adam keeps two moments per weight; row-wise Adagrad one per row
    for optimizer, state in (("adam", 2 * table), ("exact_row_wise_adagrad", 100 * 4), ("exact_sgd", 0)):
        sharder = EBCSharder(fused_params={"optimizer": optimizer})
        fused = [o for o in enumerate_(module, [sharder]) if o.compute_kernel == "fused"][0]
        assert fused.shards[0].storage == Storage(hbm=table + state + io, ddr=0)


def test_perf_estimate_table_wise_reference():
    """The table-wise perf of one shard against its formula written out by hand."""
    batch, pooling, world, cols = 64, 2.0, 2, 64
    bw, net = 1e6, 1e5
    (perf,) = perf_func_emb_wall_time(
        shard_sizes=[[1000, cols]], compute_kernel="fused", compute_device="cpu", sharding_type="table_wise",
        batch_sizes=[batch], world_size=world, local_world_size=world, input_lengths=[pooling],
        input_data_type_size=8, table_data_type_size=4, num_poolings=[1.0], hbm_mem_bw=1.0, ddr_mem_bw=bw,
        intra_host_bw=net, inter_host_bw=1.0, bwd_compute_multiplier=2.0, is_pooled=True,
    )
    ids = batch * pooling * world
    output = batch * world * cols * 4
    fwd = (ids * 8 + ids * cols * 4 + output) * 1.15 / bw  # 64 columns: half a GPU block
    assert perf.fwd_compute == pytest.approx(fwd)
    assert perf.bwd_compute == pytest.approx(2 * fwd)
    assert perf.fwd_comms == pytest.approx(output / net) and perf.bwd_comms == pytest.approx(output / net)
    assert perf.total == pytest.approx(3 * fwd + 2 * output / net)


# ---- plans fit -----------------------------------------------------------------------------------

TABLES = [("big", 4000, 64), ("mid", 1500, 32), ("small", 300, 16), ("wide", 200, 256)]


def rank_usage(p: EmbeddingShardingPlanner, world: int) -> list[Storage]:
    used = [Storage(0, 0) for _ in range(world)]
    for option in p._best_plan or []:
        for shard in option.shards:
            used[shard.rank] += shard.storage
    return used


@pytest.mark.parametrize(
    "world,local,cap_kb",
    # ample memory, then memory in which the big table (1000 KB of weights) fits no rank whole
    [(1, 1, 8192), (2, 2, 8192), (4, 2, 8192), (1, 1, 2000), (2, 2, 1100), (4, 2, 900)],
)
def test_plans_fit_memory(world, local, cap_kb):
    """Every rank's shards plus the reservation fit its DDR, and the plan's ranks are the
    ranks the estimates were placed on."""
    model = ebc(*TABLES)
    topology = Topology(world_size=world, local_world_size=local, compute_device="cpu", ddr_cap=cap_kb * KB)
    p = planner(topology)
    plan = p.plan(model, [EBCSharder()])
    reservation = p._storage_reservation
    reserved = reservation._kjt_storage + reservation._dense_storage
    for used in rank_usage(p, world):
        assert used.hbm == 0
        assert used.ddr + reserved.ddr <= int(0.85 * cap_kb * KB)
    assert set(plan.plan[""]) == {name for name, _, _ in TABLES}
    for option in p._best_plan:
        ps = plan.plan[""][option.name]
        assert ps.sharding_type == option.sharding_type
        assert ps.ranks == [s.rank for s in option.shards]
    if world > 1 and cap_kb < 2000:
        assert plan.plan[""]["big"].sharding_type in ("row_wise", "table_row_wise")


def test_tight_memory_splits_the_big_table():
    """The big table (1 MB of weights) cannot sit whole on one 1 MB rank: the planner splits it."""
    model = ebc(("big", 4000, 64), ("small", 100, 16))
    topology = Topology(world_size=4, compute_device="cpu", ddr_cap=1024 * KB)
    p = planner(topology)
    plan = p.plan(model, [EBCSharder()])
    assert plan.plan[""]["big"].sharding_type in ("row_wise", "table_row_wise")
    ample = planner(Topology(world_size=4, compute_device="cpu", ddr_cap=64 * 1024 * KB)).plan(model, [EBCSharder()])
    assert ample.plan[""]["big"].sharding_type in ("table_wise", "data_parallel", "column_wise", "table_column_wise")


def test_plan_of_nested_modules_and_sequence_tables():
    seqs = EmbeddingCollection([EmbeddingConfig(num_embeddings=60, embedding_dim=16, name="s0", feature_names=["q"])])
    model = Model(ebc(("b0", 80, 16), ("b1", 40, 8)), seqs)
    topology = Topology(world_size=2, compute_device="cpu", ddr_cap=8 * 1024 * KB)
    p = planner(topology)
    plan = p.plan(model, [EBCSharder(), ECSharder()])
    assert set(plan.plan) == {"sparse.ebc", "ec"}
    assert set(plan.plan["sparse.ebc"]) == {"b0", "b1"} and set(plan.plan["ec"]) == {"s0"}
    assert plan.get_plan_for_module("ec") is plan.plan["ec"] and plan.get_plan_for_module("dense") is None
    assert plan.plan["ec"]["s0"].sharding_type in ECSharder().sharding_types("cpu")
    text = str(plan)
    assert "module: sparse.ebc" in text and "module: ec" in text and "b1" in text
    # the dense Linear's parameters (x6) are reserved on every rank, the tables are not
    linear_bytes = (8 * 4 + 4) * 4
    assert p._storage_reservation._dense_storage == Storage(hbm=0, ddr=6 * linear_bytes)
    # only the sharders given are planned
    assert set(planner(topology).plan(model, [ECSharder()]).plan) == {"ec"}
    assert planner(topology).plan(nn.Linear(2, 2), [EBCSharder()]) == ShardingPlan({})


def test_memory_balanced_partitioner_lowers_peak_memory():
    model = ebc(("a", 3000, 32), ("b", 2000, 32), ("c", 1000, 32), ("d", 800, 32), ("e", 100, 32))
    constraints = {n: ParameterConstraints(sharding_types=["table_wise"]) for n in "abcde"}
    topology = Topology(world_size=2, compute_device="cpu", ddr_cap=16 * 1024 * KB)
    peaks = {}
    for name, partitioner in (("greedy", GreedyPerfPartitioner()), ("balanced", MemoryBalancedPartitioner())):
        p = planner(topology, constraints=constraints, partitioner=partitioner)
        p.plan(model, [EBCSharder()])
        used = rank_usage(p, 2)
        assert sum(u.ddr for u in used) == sum(o.total_storage.ddr for o in p._best_plan)
        peaks[name] = max(u.ddr for u in used)
    # the best split of the five tables over two ranks, by brute force
    sizes = [o.total_storage.ddr for o in p._best_plan]
    best = min(
        max(sum(s for s, bit in zip(sizes, bits, strict=True) if bit), sum(s for s, bit in zip(sizes, bits, strict=True) if not bit))
        for bits in itertools.product([0, 1], repeat=len(sizes))
    )
    assert peaks["balanced"] < peaks["greedy"]
    assert peaks["balanced"] <= best * 1.01


# ---- constraints ---------------------------------------------------------------------------------

def test_constraints_honoured():
    model = ebc(("cw", 64, 128), ("rw", 64, 16), ("pf", 64, 16), ("free", 64, 16))
    constraints = {
        "cw": ParameterConstraints(sharding_types=["column_wise"], min_partition=32),
        "rw": ParameterConstraints(sharding_types=[ShardingType.ROW_WISE], compute_kernels=["fused"]),
        "pf": ParameterConstraints(sharding_types=["table_wise"], pooling_factors=[10.0, 30.0]),
        "free": ParameterConstraints(pooling_factors=[1.0]),
    }
    topology = Topology(world_size=4, compute_device="cpu", ddr_cap=16 * 1024 * KB)
    p = planner(topology, constraints=constraints)
    plan = p.plan(model, [EBCSharder()])
    ps, shards = plan_shards(plan, "", "cw")
    assert ps.sharding_type == "column_wise" and [s.shard_sizes for s in shards] == [[64, 32]] * 4
    assert plan.plan[""]["rw"].sharding_type == "row_wise" and plan.plan[""]["rw"].compute_kernel == "fused"
    assert plan.plan[""]["pf"].sharding_type == "table_wise"
    # two features pooling 10 and 30 ids per sample: 40 ids per sample from each of 4 ranks
    pf = next(o for o in p._best_plan if o.name == "pf")
    assert pf.num_inputs == 2
    assert pf.shards[0].storage.ddr == 64 * 16 * 4 + 40 * 32 * 4 * 8 + 2 * 32 * 4 * 16 * 4
    text = p.stats[0].text
    assert "40.0" in text  # the pooling factor column sums the features'


def test_constraint_errors():
    with pytest.raises(ValueError, match=r"ParameterConstraints.sharding_types: unknown \['diagonal'\]"):
        ParameterConstraints(sharding_types=["diagonal"])
    with pytest.raises(ValueError, match="ParameterConstraints.compute_kernels: unknown"):
        ParameterConstraints(compute_kernels=["turbo"])
    with pytest.raises(ValueError, match="min_partition must be a positive int, got 0"):
        ParameterConstraints(min_partition=0)
    with pytest.raises(ValueError, match="batch_sizes has 1 entries but pooling_factors has 2"):
        ParameterConstraints(pooling_factors=[1.0, 2.0], batch_sizes=[8])
    with pytest.raises(ValueError, match="pooling_factors must be a non-empty list"):
        ParameterConstraints(pooling_factors=[])
    # a sequence table cannot be table-row-wise: nothing is left to plan it with
    seqs = EmbeddingCollection([EmbeddingConfig(num_embeddings=10, embedding_dim=8, name="s")])
    p = planner(Topology(world_size=2, compute_device="cpu"), constraints={"s": ParameterConstraints(sharding_types=["table_row_wise"])})
    with pytest.raises(RuntimeError, match="No available sharding type and compute kernel combination .* for s "):
        p.plan(seqs, [ECSharder()])
    # uvm kernels need cuda
    p = planner(Topology(world_size=2, compute_device="cpu"), constraints={"s": ParameterConstraints(compute_kernels=["fused_uvm"])})
    with pytest.raises(RuntimeError, match="for s "):
        p.plan(seqs, [ECSharder()])


def test_topology_errors():
    with pytest.raises(ValueError, match="unsupported compute device 'tpu'"):
        Topology(world_size=2, compute_device="tpu")
    with pytest.raises(ValueError, match="world_size must be a positive int, got 0"):
        Topology(world_size=0, compute_device="cpu")
    with pytest.raises(ValueError, match="world_size 6 is not a whole number of hosts of local_world_size 4"):
        Topology(world_size=6, local_world_size=4, compute_device="cpu")
    with pytest.raises(ValueError, match="ddr_cap must be a non-negative int of bytes, got -1"):
        Topology(world_size=2, compute_device="cpu", ddr_cap=-1)
    cpu = Topology(world_size=2, compute_device="cpu", hbm_cap=10, ddr_cap=100)
    assert [d.storage for d in cpu.devices] == [Storage(hbm=0, ddr=100)] * 2  # no HBM on cpu
    cuda = Topology(world_size=2, compute_device="cuda", hbm_cap=10, ddr_cap=100)
    assert cuda.devices[1].storage == Storage(hbm=10, ddr=100) and cuda.local_world_size == 2


# ---- errors --------------------------------------------------------------------------------------

def test_plan_that_cannot_fit_names_the_table_and_bytes():
    model = ebc(("huge", 20000, 64), ("small", 100, 16))
    topology = Topology(world_size=2, compute_device="cpu", ddr_cap=1024 * KB)
    p = planner(topology)
    with pytest.raises(PlannerError) as info:
        p.plan(model, [EBCSharder()])
    error = info.value
    assert error.error_type == PlannerErrorType.INSUFFICIENT_STORAGE
    # the least the huge table needs: row-wise, 5.12 MB of weights plus its buffers
    options = EmbeddingEnumerator(topology, 32).enumerate(model, [EBCSharder()])
    least = min(o.total_storage.ddr for o in options if o.name == "huge")
    assert least >= 20000 * 64 * 4
    message = str(error)
    assert f"table 'huge': needs Storage(hbm=0 bytes, ddr={least} bytes)" in message
    assert "Last planner error" in message and "table 'huge'" in message.split("Last planner error")[1]
    # the stats of the failed attempt are still written
    assert "World Size: 2" in p.stats[0].text


def test_partition_error_names_the_shard():
    model = ebc(("t", 5000, 64))
    topology = Topology(world_size=2, compute_device="cpu", ddr_cap=1024 * KB)
    constraints = {"t": ParameterConstraints(sharding_types=["table_wise"])}
    search = EmbeddingEnumerator(topology, 32, constraints).enumerate(model, [EBCSharder()])
    needed = search[0].shards[0].storage.ddr
    with pytest.raises(PlannerError, match=rf"table 't' \(table_wise, fused\): shard 0 of 1 .*needs Storage\(hbm=0 bytes, ddr={needed} bytes\)") as info:
        GreedyPerfPartitioner().partition(search, topology)
    assert info.value.error_type == PlannerErrorType.PARTITION
    # row blocks of 2500 rows (640 KB) on ranks of 512 KB; on a host of two such ranks
    small = Topology(world_size=4, local_world_size=2, compute_device="cpu", ddr_cap=512 * KB)
    for sharding_type, pattern in (
        ("row_wise", r"table 't' \(row_wise, fused\): shard 0 of 4 \(rows \[0, 1250\), cols \[0, 64\)\) needs "),
        ("table_row_wise", r"table 't' \(table_row_wise, fused\) needs Storage\(hbm=0 bytes, ddr=\d+ bytes\) on the ranks of one host"),
    ):
        rw = {"t": ParameterConstraints(sharding_types=[sharding_type])}
        (option,) = EmbeddingEnumerator(small, 32, rw).enumerate(model, [EBCSharder()])
        for shard in option.shards:
            shard.storage = Storage(0, 600 * KB)
        with pytest.raises(PlannerError, match=pattern):
            GreedyPerfPartitioner().partition([option], small)
    with pytest.raises(PlannerError, match="strict constraints"):
        # fits in total across ranks but not table-wise on one rank
        planner(Topology(world_size=8, compute_device="cpu", ddr_cap=1024 * KB), constraints=constraints).plan(model, [EBCSharder()])


def test_reservation_larger_than_memory():
    model = ebc(("t", 10, 8))
    topology = Topology(world_size=1, compute_device="cpu", ddr_cap=1000)
    with pytest.raises(PlannerError, match="negative available storage") as info:
        planner(topology, batch_size=512).plan(model, [EBCSharder()])
    assert info.value.error_type == PlannerErrorType.INSUFFICIENT_STORAGE


# ---- stats ---------------------------------------------------------------------------------------

def test_stats_table_lists_ranks_and_tables(caplog):
    model = ebc(*TABLES, weighted=True)
    topology = Topology(world_size=4, local_world_size=2, compute_device="cpu", ddr_cap=8 * 1024 * KB)
    p = planner(topology)
    with caplog.at_level(logging.INFO, logger="emberrec.distributed.planner.stats"):
        plan = p.plan(model, [EBCSharder()])
    text = p.stats[0].text
    assert "--- Planner Statistics ---" in text and "Batch Size: 32" in text
    assert "Rank" in text and "DDR (GB)" in text
    lines = text.splitlines()
    assert all(len(line) == len(lines[0]) for line in lines)  # a closed box
    rank_rows = [line for line in lines if line.startswith("#") and line[1:].split()[:1] in ([str(r)] for r in range(4))]
    assert len(rank_rows) == 4
    for name, _, _ in TABLES:
        row = next(line for line in lines if f" {name} " in line)
        assert plan.plan[""][name].compute_kernel in row and " weighted " in row and "unweighted" not in row
    assert all(line in caplog.text for line in lines)


def test_stats_used_memory_matches_the_plan():
    model = ebc(("a", 1000, 32), ("b", 500, 32))
    constraints = {"a": ParameterConstraints(sharding_types=["table_wise"]), "b": ParameterConstraints(sharding_types=["table_wise"])}
    topology = Topology(world_size=2, compute_device="cpu", ddr_cap=1024**3)
    p = planner(topology, constraints=constraints, debug=False)
    plan = p.plan(model, [EBCSharder()])
    stats: EmbeddingStats = p.stats[0]
    assert "Parameter Info" not in stats.text
    reserved = p._storage_reservation._kjt_storage.ddr
    for rank, used in enumerate(rank_usage(p, 2)):
        row = next(line for line in stats._stats_table if line[1:].split()[:1] == [str(rank)])
        assert f"{round((used.ddr + reserved) / 1024**3, 3)} (" in row
        assert f"TW: {sum(ps.ranks == [rank] for ps in plan.plan[''].values())}" in row


# ---- proposers, types ------------------------------------------------------------------------------

def test_proposers():
    model = ebc(("a", 100, 16), ("b", 100, 16))
    topology = Topology(world_size=2, compute_device="cpu")
    constraints = {n: ParameterConstraints(sharding_types=["table_wise", "row_wise", "data_parallel"]) for n in "ab"}
    space = EmbeddingEnumerator(topology, 32, constraints).enumerate(model, [EBCSharder()])
    assert len(space) == 6

    def drain(proposer) -> list[list]:
        proposer.load(copy.copy(space))
        out = []
        while (proposal := proposer.propose()) is not None:
            out.append([(o.name, o.sharding_type) for o in proposal])
            proposer.feedback(partitionable=True)
        return out

    grid = drain(GridSearchProposer())
    assert len(grid) == 9 and len({tuple(p) for p in grid}) == 9
    assert drain(GridSearchProposer(max_proposals=8)) == []
    uniform = drain(UniformProposer())
    assert sorted({t for p in uniform for _, t in p}) == ["data_parallel", "row_wise", "table_wise"]
    assert all(len({t for _, t in p}) == 1 for p in uniform)
    greedy = drain(GreedyProposer())
    # starts from each table's fastest option and then walks every table through its options
    fastest = {n: min((o for o in space if o.name == n), key=lambda o: max(s.perf.total for s in o.shards)).sharding_type for n in "ab"}
    assert greedy[0] == [("a", fastest["a"]), ("b", fastest["b"])]
    assert len(greedy) == 5


def test_sharding_spec_validation_and_collective_plan():
    with pytest.raises(ValueError, match="overlap"):
        EnumerableShardingSpec([ShardMetadata([0, 0], [4, 8], "rank:0/cpu"), ShardMetadata([2, 0], [4, 8], "rank:1/cpu")])
    with pytest.raises(ValueError, match="different lengths"):
        ShardMetadata([0], [4, 8])
    assert ShardMetadata([0, 0], [4, 8], "rank:3/cuda:1").rank == 3
    model = ebc(("a", 100, 16))
    topology = Topology(world_size=2, compute_device="cpu")
    p = planner(topology)
    # Without an initialized process group the collective plan is the local one (the ranks'
    # agreement is checked in 2 processes by test_sharding.py's "planned" job).
    assert p.collective_plan(model, [EBCSharder()]) == p.plan(model, [EBCSharder()])


def test_cuda_topology_places_on_local_devices():
    model = ebc(("a", 1000, 64), ("b", 1000, 64))
    topology = Topology(world_size=4, local_world_size=2, compute_device="cuda", hbm_cap=1024**3, ddr_cap=1024**3)
    constraints = {n: ParameterConstraints(sharding_types=["row_wise"]) for n in "ab"}
    p = planner(topology, constraints=constraints, storage_reservation=HeuristicalStorageReservation(0.1))
    plan = p.plan(model, [EBCSharder()])
    _, shards = plan_shards(plan, "", "a")
    assert [s.placement for s in shards] == ["rank:0/cuda:0", "rank:1/cuda:1", "rank:2/cuda:0", "rank:3/cuda:1"]
    for used in rank_usage(p, 4):
        assert used.ddr == 0 and 0 < used.hbm <= 0.9 * 1024**3


# ---- plans written by hand -------------------------------------------------------------------------

def test_construct_module_sharding_plan():
    module = ebc(("dp", 10, 8), ("tw", 12, 8), ("rw", 10, 8), ("cw", 6, 16), ("twrw", 9, 8))
    plan = construct_module_sharding_plan(
        module,
        {
            "dp": data_parallel(),
            "tw": table_wise(rank=3),
            "rw": row_wise(),
            "cw": column_wise(ranks=[2, 0, 2, 1]),
            "twrw": table_row_wise(host_index=1),
        },
        world_size=4,
        local_size=2,
        device_type="cuda",
    )
    assert plan["dp"] == ParameterSharding("data_parallel", "dense", ranks=[0, 1, 2, 3])
    assert plan["tw"].compute_kernel == "fused" and plan["tw"].ranks == [3]
    assert plan["tw"].sharding_spec.shards == [ShardMetadata([0, 0], [12, 8], "rank:3/cuda:1")]
    rw = plan["rw"].sharding_spec.shards
    assert [(s.shard_offsets, s.shard_sizes) for s in rw] == [([0, 0], [3, 8]), ([3, 0], [3, 8]), ([6, 0], [3, 8]), ([9, 0], [1, 8])]
    assert plan["cw"].ranks == [2, 0, 2, 1]
    assert [s.shard_offsets for s in plan["cw"].sharding_spec.shards] == [[0, 0], [0, 4], [0, 8], [0, 12]]
    assert plan["twrw"].ranks == [2, 3]
    for name, (rows, cols) in {"tw": (12, 8), "rw": (10, 8), "cw": (6, 16), "twrw": (9, 8)}.items():
        shards = plan[name].sharding_spec.shards
        assert_tiles(plan[name].sharding_type, rows, cols, [s.shard_sizes for s in shards], [s.shard_offsets for s in shards])
    # one generator for all tables, on cpu, with the sharder's default kernel
    everywhere = construct_module_sharding_plan(module, apply_to_all(module, row_wise()), world_size=2, device_type="cpu")
    assert set(everywhere) == set(plan) and all(ps.compute_kernel == "fused" for ps in everywhere.values())
    assert everywhere["tw"].sharding_spec.shards[1].placement == "rank:1/cpu"
    assert isinstance(get_module_to_default_sharders()[EmbeddingBagCollection], EmbeddingBagCollectionSharder)


def test_construct_module_sharding_plan_errors():
    module = ebc(("a", 10, 8), ("b", 10, 6))
    build = construct_module_sharding_plan
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        build(module, {"a": row_wise(), "c": row_wise()}, world_size=2)
    with pytest.raises(ValueError, match="pass world_size"):
        build(module, apply_to_all(module, row_wise()))
    with pytest.raises(ValueError, match="table_wise: rank 2 is outside the world of 2 ranks"):
        build(module, {"a": table_wise(2), "b": row_wise()}, world_size=2)
    with pytest.raises(ValueError, match="column_wise: 6 columns do not split into 2 blocks"):
        build(module, {"a": column_wise([0, 1]), "b": column_wise([0, 1])}, world_size=2)
    with pytest.raises(ValueError, match="table_row_wise: host_index 1 is outside the 1 hosts"):
        build(module, {"a": table_row_wise(1), "b": row_wise()}, world_size=2)
    with pytest.raises(ValueError, match="no default sharder for Linear"):
        build(nn.Linear(2, 2), {}, world_size=2)
    with pytest.raises(TypeError, match="EmbeddingCollectionSharder shards EmbeddingCollection, not EmbeddingBagCollection"):
        apply_to_all(module, row_wise(), ECSharder())


def test_perf_estimate_row_wise_and_data_parallel_reference():
    batch, pooling, world, local, rows, cols = 64, 2.0, 4, 2, 1000, 128
    bw, intra, inter = 1e6, 1e5, 1e4
    common = dict(
        compute_kernel="fused", compute_device="cpu", batch_sizes=[batch], world_size=world, local_world_size=local,
        input_lengths=[pooling], input_data_type_size=8, table_data_type_size=4, num_poolings=[1.0], hbm_mem_bw=1.0,
        ddr_mem_bw=bw, intra_host_bw=intra, inter_host_bw=inter, bwd_compute_multiplier=2.0, is_pooled=True,
    )
    rw = perf_func_emb_wall_time(shard_sizes=[[250, cols]] * 4, sharding_type="row_wise", **common)
    ids = batch * pooling  # a row block sees 1/W of each of the W ranks' ids
    output = batch * world * cols * 4  # partial sums for the global batch, reduce-scattered
    fwd = (ids * 8 + ids * cols * 4 + output) / bw
    assert rw[0].fwd_compute == pytest.approx(fwd) and rw[0].bwd_compute == pytest.approx(2 * fwd)
    assert rw[0].fwd_comms == pytest.approx(output / inter)  # two hosts: the exchange crosses them
    assert rw[0].bwd_comms == pytest.approx(output / inter + output * 2.455 / bw)
    common["compute_kernel"] = "dense"
    (dp,) = perf_func_emb_wall_time(shard_sizes=[[rows, cols]], sharding_type="data_parallel", **common)
    table = rows * cols * 4
    fwd = (ids * 8 + ids * cols * 4 + batch * cols * 4) / (0.5 * bw)  # dense kernels: half the bandwidth
    all_reduce = table * (2 * 2 - 1) / 2 / (inter * local)  # ring all-reduce over two hosts
    assert dp.fwd_compute == pytest.approx(fwd) and dp.fwd_comms == 0
    assert dp.bwd_comms == pytest.approx(all_reduce + table * 9.22 / (0.5 * bw))
    with pytest.raises(PlannerError, match="No kernel bandwidth exists for this combo of compute device: cpu, compute kernel: fused_uvm"):
        perf_func_emb_wall_time(shard_sizes=[[rows, cols]], sharding_type="table_wise", **{**common, "compute_kernel": "fused_uvm"})


def test_default_topology_and_no_proposals():
    p = EmbeddingShardingPlanner(batch_size=8)
    assert p._topology.world_size == 1 and p._topology.compute_device in ("cpu", "cuda")
    model = ebc(("a", 10, 8), ("b", 10, 8))
    with pytest.raises(PlannerError, match="the proposers proposed nothing") as info:
        planner(Topology(world_size=2, compute_device="cpu"), proposer=GridSearchProposer(max_proposals=2)).plan(model, [EBCSharder()])
    assert info.value.error_type == PlannerErrorType.STRICT_CONSTRAINTS
