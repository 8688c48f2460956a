"""Proposers: each proposal is one sharding option per table."""

from __future__ import annotations

import itertools
import logging
import math

from emberrec.distributed.planner.types import Enumerator, Proposer, ShardingOption, Topology

logger: logging.Logger = logging.getLogger(__name__)

MAX_PROPOSALS: int = int(1e4)


def _sharding_option_score(sharding_option: ShardingOption, use_depth: bool = True) -> float:
    # depth: the slowest shard (shards run in parallel); otherwise the total work
    perfs = [shard.perf.total for shard in sharding_option.shards if shard.perf is not None]
    return max(perfs) if use_depth else sum(perfs)


def _by_fqn(search_space: list[ShardingOption]) -> dict[str, list[ShardingOption]]:
    grouped: dict[str, list[ShardingOption]] = {}
    for option in search_space:
        grouped.setdefault(option.fqn, []).append(option)
    return grouped


class GreedyProposer(Proposer):
    """Starts from every table's fastest option; after each proposal, moves the table whose
    current option takes the most storage to its next fastest option.

    ``use_depth``: rank options by their slowest shard (else by the sum of their shards).
    ``threshold``: stop after that many proposals in a row rate worse than the best so far.
    """

    def __init__(self, use_depth: bool = True, threshold: int | None = None) -> None:
        self._use_depth = use_depth
        self._threshold = threshold if threshold else None
        self._sharding_options_by_fqn: dict[str, list[ShardingOption]] = {}
        self._current_proposal: dict[str, int] = {}
        self._best_perf_rating = math.inf
        self._num_inferior_perf = 0

    def load(self, search_space: list[ShardingOption], enumerator: Enumerator | None = None) -> None:
        self._sharding_options_by_fqn = _by_fqn(search_space)
        for options in self._sharding_options_by_fqn.values():
            options.sort(key=lambda o: _sharding_option_score(o, self._use_depth))
        self._current_proposal = dict.fromkeys(self._sharding_options_by_fqn, 0)
        self._best_perf_rating = math.inf
        self._num_inferior_perf = 0

    def propose(self) -> list[ShardingOption] | None:
        if not self._current_proposal:
            return None
        return [self._sharding_options_by_fqn[fqn][i] for fqn, i in self._current_proposal.items()]

    def feedback(
        self,
        partitionable: bool,
        plan: list[ShardingOption] | None = None,
        perf_rating: float | None = None,
        storage_constraint: Topology | None = None,
    ) -> None:
        if self._threshold and perf_rating:
            self._num_inferior_perf += 1
            if perf_rating < self._best_perf_rating:
                self._best_perf_rating = perf_rating
                self._num_inferior_perf = 0
            if self._num_inferior_perf > self._threshold:
                self._current_proposal = {}
                return
        largest_fqn, largest = None, (0, 0, 0, 0)
        for fqn, options in self._sharding_options_by_fqn.items():
            index = self._current_proposal[fqn]
            if index + 1 < len(options):
                storages = [shard.storage for shard in options[index].shards if shard.storage is not None]
                key = (max(s.hbm for s in storages), sum(s.hbm for s in storages),
                       max(s.ddr for s in storages), sum(s.ddr for s in storages))
                if key > largest:
                    largest_fqn, largest = fqn, key
        if largest_fqn is None:
            self._current_proposal = {}
        else:
            self._current_proposal[largest_fqn] += 1


class UniformProposer(Proposer):
    """One proposal per sharding type that every table allows: all tables sharded that way,
    each with its fastest kernel."""

    def __init__(self, use_depth: bool = True) -> None:
        self._use_depth = use_depth
        self._grouped_sharding_options: list[list[ShardingOption]] = []
        self._proposal_index = 0

    def load(self, search_space: list[ShardingOption], enumerator: Enumerator | None = None) -> None:
        self._grouped_sharding_options = []
        self._proposal_index = 0
        all_fqns = {o.fqn for o in search_space}
        by_type: dict[str, dict[str, list[ShardingOption]]] = {}
        for option in search_space:
            by_type.setdefault(option.sharding_type, {}).setdefault(option.fqn, []).append(option)
        for by_fqn in by_type.values():
            if by_fqn.keys() == all_fqns:
                self._grouped_sharding_options.append(
                    [min(options, key=lambda o: _sharding_option_score(o, self._use_depth)) for options in by_fqn.values()]
                )

    def propose(self) -> list[ShardingOption] | None:
        if self._proposal_index < len(self._grouped_sharding_options):
            return self._grouped_sharding_options[self._proposal_index]
        return None

    def feedback(
        self,
        partitionable: bool,
        plan: list[ShardingOption] | None = None,
        perf_rating: float | None = None,
        storage_constraint: Topology | None = None,
    ) -> None:
        self._proposal_index += 1


class GridSearchProposer(Proposer):
    """Every combination of options, when there are at most ``max_proposals`` of them
    (otherwise it proposes nothing and logs why)."""

    def __init__(self, max_proposals: int = MAX_PROPOSALS) -> None:
        self._max_proposals = max_proposals
        self._sharding_options_by_fqn: dict[str, list[ShardingOption]] = {}
        self._proposal_index = 0
        self._proposals: list[tuple[int, ...]] = []

    def load(self, search_space: list[ShardingOption], enumerator: Enumerator | None = None) -> None:
        self._sharding_options_by_fqn = _by_fqn(search_space)
        self._proposal_index = 0
        self._proposals = []
        for options in self._sharding_options_by_fqn.values():
            options.sort(key=_sharding_option_score)
        total = math.prod(len(options) for options in self._sharding_options_by_fqn.values())
        if total > self._max_proposals:
            logger.info(f"Skipping grid search proposer: {total:.3g} proposals exceed max_proposals {self._max_proposals}")
            return
        self._proposals = list(itertools.product(*(range(len(o)) for o in self._sharding_options_by_fqn.values())))

    def propose(self) -> list[ShardingOption] | None:
        if self._proposal_index < len(self._proposals):
            indices = self._proposals[self._proposal_index]
            return [options[i] for i, options in zip(indices, self._sharding_options_by_fqn.values(), strict=True)]
        return None

    def feedback(
        self,
        partitionable: bool,
        plan: list[ShardingOption] | None = None,
        perf_rating: float | None = None,
        storage_constraint: Topology | None = None,
    ) -> None:
        self._proposal_index += 1
