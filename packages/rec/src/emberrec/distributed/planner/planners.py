"""``EmbeddingShardingPlanner``: from a model, its sharders and a topology to a ``ShardingPlan``."""

from __future__ import annotations

import copy
import hashlib
import logging
from time import perf_counter
from typing import Any

import ember
from ember import nn
from emberrec.distributed.planner.constants import BATCH_SIZE, MAX_SIZE
from emberrec.distributed.planner.enumerators import EmbeddingEnumerator
from emberrec.distributed.planner.partitioners import GreedyPerfPartitioner
from emberrec.distributed.planner.perf_models import NoopPerfModel
from emberrec.distributed.planner.proposers import GreedyProposer, GridSearchProposer, UniformProposer
from emberrec.distributed.planner.stats import EmbeddingStats
from emberrec.distributed.planner.storage_reservations import HeuristicalStorageReservation
from emberrec.distributed.planner.types import (
    Enumerator,
    ParameterConstraints,
    Partitioner,
    PerfModel,
    PlannerError,
    PlannerErrorType,
    Proposer,
    ShardingOption,
    Stats,
    Storage,
    StorageReservation,
    Topology,
)
from emberrec.distributed.planner.utils import reset_shard_rank, storage_repr_in_bytes
from emberrec.distributed.sharding_plan import get_default_sharders, placement
from emberrec.distributed.types import (
    EmbeddingModuleShardingPlan,
    EnumerableShardingSpec,
    ModuleSharder,
    ParameterSharding,
    ShardingPlan,
    ShardingPlanner,
    ShardingType,
    ShardMetadata,
)

logger: logging.Logger = logging.getLogger(__name__)


def _to_sharding_plan(sharding_options: list[ShardingOption], topology: Topology) -> ShardingPlan:
    plan: dict[str, Any] = {}
    for option in sharding_options:
        ranks = [shard.rank for shard in option.shards]
        assert all(r is not None for r in ranks), f"{option.fqn} has unplaced shards"
        spec = None
        if option.sharding_type != ShardingType.DATA_PARALLEL.value:
            spec = EnumerableShardingSpec([
                ShardMetadata(
                    shard_offsets=list(shard.offset),
                    shard_sizes=list(shard.size),
                    placement=placement(topology.compute_device, shard.rank, topology.local_world_size),  # type: ignore[arg-type]
                )
                for shard in option.shards
            ])
        module_plan = plan.setdefault(option.path, EmbeddingModuleShardingPlan())
        module_plan[option.name] = ParameterSharding(
            sharding_type=option.sharding_type,
            compute_kernel=option.compute_kernel,
            ranks=ranks,  # type: ignore[arg-type]
            sharding_spec=spec,
            cache_params=option.cache_params,
            enforce_hbm=option.enforce_hbm,
            stochastic_rounding=option.stochastic_rounding,
            bounds_check_mode=option.bounds_check_mode,
        )
    return ShardingPlan(plan)


def _default_topology() -> Topology:
    # Without ember.distributed there is no process group to size the world from: one rank.
    world_size = 1
    try:
        import ember.distributed as dist  # type: ignore[import-not-found]

        if dist.is_available() and dist.is_initialized():
            world_size = dist.get_world_size()
    except ImportError:
        pass
    cuda = getattr(ember, "cuda", None)
    device = "cuda" if cuda is not None and cuda.is_available() else "cpu"
    return Topology(world_size=world_size, compute_device=device)


class EmbeddingShardingPlanner(ShardingPlanner):
    """Plans the sharding of every module that one of the sharders handles.

    The storage reservation frees each rank's room for the dense model, the enumerator lists and
    estimates every sharding option, each proposer proposes one option per table until it runs
    out, the partitioner places each proposal's shards, and the proposal the perf model rates
    best (the slowest rank's estimated step time) becomes the plan. ``plan`` raises
    ``PlannerError`` naming the tables and bytes when no proposal fits.

    The stats of the last plan stay readable: ``planner.stats[0].text`` for the default
    ``EmbeddingStats``.
    """

    def __init__(
        self,
        topology: Topology | None = None,
        batch_size: int | None = None,
        enumerator: Enumerator | None = None,
        storage_reservation: StorageReservation | None = None,
        proposer: Proposer | list[Proposer] | None = None,
        partitioner: Partitioner | None = None,
        performance_model: PerfModel | None = None,
        stats: Stats | list[Stats] | None = None,
        constraints: dict[str, ParameterConstraints] | None = None,
        debug: bool = True,
    ) -> None:
        self._topology = topology if topology is not None else _default_topology()
        self._batch_size = batch_size if batch_size else BATCH_SIZE
        self._constraints = constraints
        self._enumerator = enumerator or EmbeddingEnumerator(
            topology=self._topology, batch_size=self._batch_size, constraints=constraints
        )
        self._storage_reservation = storage_reservation or HeuristicalStorageReservation(percentage=0.15)
        self._partitioner = partitioner or GreedyPerfPartitioner()
        if proposer is None:
            self._proposers: list[Proposer] = [
                GridSearchProposer(), GreedyProposer(), GreedyProposer(use_depth=False), UniformProposer()
            ]
        else:
            self._proposers = proposer if isinstance(proposer, list) else [proposer]
        self._perf_model = performance_model or NoopPerfModel(topology=self._topology)
        if stats is None:
            self._stats: list[Stats] = [EmbeddingStats()]
        else:
            self._stats = stats if isinstance(stats, list) else [stats]
        self._debug = debug
        self._num_proposals = 0
        self._num_plans = 0
        self._best_plan: list[ShardingOption] | None = None

    @property
    def stats(self) -> list[Stats]:
        return self._stats

    def collective_plan(
        self,
        module: nn.Module,
        sharders: list[ModuleSharder[nn.Module]] | None = None,
        pg: Any = None,
    ) -> ShardingPlan:
        """One plan for every rank of `pg` (the default group when None and ember.distributed is
        initialized). Planning is deterministic, so each rank plans locally and the ranks compare
        their plans' digests: ranks that planned differently (a different model or topology on
        one of them) raise PlannerError naming them rather than executing mismatched plans."""
        plan = self.plan(module, sharders if sharders is not None else get_default_sharders())
        import ember.distributed as dist

        if not dist.is_available() or not dist.is_initialized() or dist.get_world_size(pg) == 1:
            return plan
        digest = hashlib.sha256(str(plan).encode()).hexdigest()
        digests: list[Any] = [None] * dist.get_world_size(pg)
        dist.all_gather_object(digests, digest, group=pg)
        differing = [r for r, d in enumerate(digests) if d != digests[0]]
        if differing:
            raise PlannerError(f"ranks {differing} planned differently from rank 0 (different models, sharders or "
                               f"topologies on the ranks?)", PlannerErrorType.OTHER)
        return plan

    def plan(self, module: nn.Module, sharders: list[ModuleSharder[nn.Module]]) -> ShardingPlan:
        self._num_proposals = 0
        self._num_plans = 0
        start = perf_counter()
        best_plan: list[ShardingOption] | None = None
        best_rating = float(MAX_SIZE)
        lowest_storage = Storage(MAX_SIZE, MAX_SIZE)
        last_error: PlannerError | None = None
        last_proposal: list[ShardingOption] = []

        storage_constraint = self._storage_reservation.reserve(
            topology=self._topology,
            batch_size=self._batch_size,
            module=module,
            sharders=sharders,
            constraints=self._constraints,
        )
        search_space = self._enumerator.enumerate(module=module, sharders=sharders)
        if not search_space:
            return ShardingPlan({})

        seen: dict[tuple[int, ...], tuple[bool, list[ShardingOption] | None, float | None]] = {}
        for proposer in self._proposers:
            proposer.load(search_space=search_space, enumerator=self._enumerator)
        for proposer in self._proposers:
            proposal = proposer.propose()
            while proposal:
                key = tuple(sorted(map(hash, proposal)))
                if key in seen:
                    partitionable, placed, rating = seen[key]
                    proposer.feedback(partitionable=partitionable, plan=placed, perf_rating=rating,
                                      storage_constraint=storage_constraint)
                    proposal = proposer.propose()
                    continue
                self._num_proposals += 1
                try:
                    placed = self._partitioner.partition(proposal=proposal, storage_constraint=storage_constraint)
                    self._num_plans += 1
                    rating = self._perf_model.rate(plan=placed)
                    if rating < best_rating:
                        best_rating = rating
                        best_plan = copy.deepcopy(placed)
                    seen[key] = (True, placed, rating)
                    proposer.feedback(partitionable=True, plan=placed, perf_rating=rating,
                                      storage_constraint=storage_constraint)
                except PlannerError as error:
                    last_error = error
                    last_proposal = copy.copy(proposal)
                    needed = sum((option.total_storage for option in proposal), Storage(0, 0))
                    if needed < lowest_storage:
                        lowest_storage = needed
                    seen[key] = (False, None, None)
                    proposer.feedback(partitionable=False, storage_constraint=storage_constraint)
                reset_shard_rank(proposal)
                proposal = proposer.propose()

        if best_plan is not None:
            self._best_plan = best_plan
            sharding_plan = _to_sharding_plan(best_plan, self._topology)
            self._log_stats(sharding_plan, best_plan, perf_counter() - start, sharders)
            return sharding_plan

        self._log_stats(ShardingPlan({}), last_proposal, perf_counter() - start, sharders)
        raise self._no_plan_error(search_space, storage_constraint, lowest_storage, last_error)

    def _log_stats(
        self, sharding_plan: ShardingPlan, options: list[ShardingOption], run_time: float,
        sharders: list[ModuleSharder[nn.Module]],
    ) -> None:
        for stats in self._stats:
            stats.log(
                sharding_plan=sharding_plan,
                topology=self._topology,
                batch_size=self._batch_size,
                storage_reservation=self._storage_reservation,
                num_proposals=self._num_proposals,
                num_plans=self._num_plans,
                run_time=run_time,
                best_plan=options,
                constraints=self._constraints,
                sharders=sharders,
                debug=self._debug,
            )

    def _no_plan_error(
        self,
        search_space: list[ShardingOption],
        storage_constraint: Topology,
        lowest_storage: Storage,
        last_error: PlannerError | None,
    ) -> PlannerError:
        capacity = sum((d.storage for d in self._topology.devices), Storage(0, 0))
        available = sum((d.storage for d in storage_constraint.devices), Storage(0, 0))
        rank_free = max((d.storage for d in storage_constraint.devices), default=Storage(0, 0))
        # The tables that make the model large: each with the least memory any of its options
        # needs in all and on one rank (a table-wise table must fit one rank whole).
        least: dict[str, tuple[Storage, Storage, str]] = {}
        for option in search_space:
            total = option.total_storage
            per_rank = max((s.storage for s in option.shards if s.storage is not None), default=Storage(0, 0))
            if option.fqn not in least or total < least[option.fqn][0]:
                least[option.fqn] = (total, per_rank, option.sharding_type)
        largest = sorted(least.items(), key=lambda item: item[1][0], reverse=True)[:5]
        tables = "".join(
            f"\n\t  table {fqn!r}: needs {storage_repr_in_bytes(total)} at the least ({sharding_type}, "
            f"{storage_repr_in_bytes(per_rank)} on one rank)"
            for fqn, (total, per_rank, sharding_type) in largest
        )
        insufficient = self._num_proposals > 0 and not lowest_storage.fits_in(available)
        reason = "insufficient storage" if insufficient else "the strict constraints"
        if self._num_proposals == 0:
            reason = "the proposers proposed nothing (a grid search over too many options proposes nothing)"
        message = (
            f"Unable to find a plan for this model because of {reason}. Planner evaluated "
            f"{self._num_proposals} proposals.\nLargest tables:{tables}"
            f"\n  Per rank: hardware {storage_repr_in_bytes(self._topology.devices[0].storage)}, free for shards "
            f"{storage_repr_in_bytes(rank_free)} (reserved percentage, dense and KJT storage taken off)"
            f"\n  Global: hardware {storage_repr_in_bytes(capacity)}, free for shards {storage_repr_in_bytes(available)}, "
            f"the smallest proposal needs {storage_repr_in_bytes(lowest_storage)}"
            "\nPossible solutions:"
            f"\n  1) Increase the number of devices ({self._topology.world_size})"
            "\n  2) Reduce the model size"
            f"\n  3) Reduce local batch size ({self._batch_size})"
            "\n  4) Remove planner constraints that might be reducing search space or available storage"
            f"\nLast planner error: \n\t{last_error}\n"
        )
        error_type = PlannerErrorType.INSUFFICIENT_STORAGE if insufficient else PlannerErrorType.STRICT_CONSTRAINTS
        return PlannerError(message, error_type=error_type)
