"""Sharded execution of an EmbeddingBagCollection (TorchRec's ``ShardedEmbeddingBagCollection``)
across the processes of an ``ember.distributed`` group.

Every rank holds its own batch (a KJT of all features) and the shards the plan puts on it.
A forward runs, for the tables that are not data parallel:

1. input distribution: each rank sends every shard owner the bags of the features it looks up,
   lengths first (all-to-all), then ids and weights (all-to-all with the split sizes those
   lengths give); a row-wise shard receives only the ids in its row range, made local;
2. lookups of every local shard over the bags of all ranks;
3. output distribution: table-wise, column-wise, table-column-wise and table-row-wise shards send
   each rank its rows back (a differentiable all-to-all); row-wise shards are summed into each
   rank's rows by a reduce-scatter (backward: all-gather); column shards are concatenated and
   row shards summed on the receiving rank; MEAN over row shards divides by the whole bag's
   length after the sum.

Data-parallel tables are whole on every rank and looked up locally; their gradients (like the
dense model's) are averaged across ranks by DistributedModelParallel. Sharded tables receive the
sum of every rank's gradient through the collectives' backward, as TorchRec's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ember
import ember.distributed as dist
from ember import nn
from ember.tbe import EmbOptimType
from emberrec.distributed.comm_ops import all_to_all_pooled, reduce_scatter_pooled
from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.types import ParameterSharding, ShardingType, ShardMetadata
from emberrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType, pooling_type_to_str
from emberrec.modules.embedding_modules import EmbeddingBagCollection
from emberrec.modules.fused_embedding_modules import FusedEmbeddingBagCollection
from emberrec.optim.rowwise_adagrad import RowWiseAdagrad
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor, KeyedTensor

_ROW_SPLIT = (ShardingType.ROW_WISE.value, ShardingType.TABLE_ROW_WISE.value)
_SUPPORTED = {t.value for t in ShardingType}
# TBE optimizer of `fused_params` -> the ember.optim class a FusedEmbeddingBagCollection takes.
_FUSED_OPTIMIZERS = {
    EmbOptimType.EXACT_SGD: ember.optim.SGD,
    EmbOptimType.EXACT_ADAGRAD: ember.optim.Adagrad,
    EmbOptimType.EXACT_ROWWISE_ADAGRAD: RowWiseAdagrad,
    EmbOptimType.ADAM: ember.optim.Adam,
}


@dataclass
class ShardingEnv:
    """The group a module is sharded over (TorchRec's ``ShardingEnv``)."""

    world_size: int
    rank: int
    process_group: Any = None

    @staticmethod
    def from_process_group(pg: Any = None) -> ShardingEnv:
        return ShardingEnv(dist.get_world_size(pg), dist.get_rank(pg), pg)


def fused_optimizer_of(fused_params: dict[str, Any] | None) -> tuple[type, dict[str, Any]]:
    """TorchRec's fused_params ({"optimizer": EmbOptimType, "learning_rate": ..., "eps": ...,
    "beta1"/"beta2", "weight_decay"}) as an ember.optim class and its arguments. Default: exact SGD
    at learning rate 0.01 (the TBE's default)."""
    params = dict(fused_params or {})
    optimizer = EmbOptimType(params.pop("optimizer", EmbOptimType.EXACT_SGD))
    if optimizer not in _FUSED_OPTIMIZERS:
        raise ValueError(f"fused_params optimizer {optimizer.name} has no fused kernel; use one of "
                         f"{', '.join(o.name for o in _FUSED_OPTIMIZERS)}")
    kwargs: dict[str, Any] = {"lr": float(params.pop("learning_rate", 0.01))}
    if "eps" in params:
        kwargs["eps"] = float(params.pop("eps"))
    if optimizer == EmbOptimType.ADAM:
        kwargs["betas"] = (float(params.pop("beta1", 0.9)), float(params.pop("beta2", 0.999)))
    if "weight_decay" in params and optimizer in (EmbOptimType.EXACT_ROWWISE_ADAGRAD,):
        kwargs["weight_decay"] = float(params.pop("weight_decay"))
    params.pop("stochastic_rounding", None)  # the fused CPU kernels round to nearest
    if params:
        raise ValueError(f"fused_params {sorted(params)} are not supported with {optimizer.name}")
    return _FUSED_OPTIMIZERS[optimizer], kwargs


@dataclass
class _Unit:
    """One feature looked up in one shard of one table."""

    table: str
    feature: str
    shard: int
    rank: int
    row_offset: int
    rows: int
    col_offset: int
    cols: int
    sharding_type: str
    kernel: str

    @property
    def name(self) -> str:  # a unique key for the unit's lookups on its rank
        return f"{self.feature}@{self.table}.{self.shard}"

    @property
    def row_split(self) -> bool:
        return self.sharding_type in _ROW_SPLIT


# Note [pipelined input distribution]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Sending a batch's bags takes three collectives, each sized by the one before: batch sizes
# (all-gather), lengths (all-to-all) and ids with weights (all-to-all with the split sizes the
# lengths give). InputDist runs them as stages, so a training pipeline can start the next batch's
# lengths before this batch's forward and its ids after this batch's backward, letting the
# transfers overlap compute. Every rank runs the stages at the same points of its program, so the
# collectives pair up across ranks in the same order.
class InputDist:
    """The bags of one batch on their way to the shard owners: `send_ids()` (after the lengths
    arrive) starts the second all-to-all, `wait()` returns {unit: (lengths, ids, weights)}."""

    def __init__(self, module: ShardedEmbeddingBagCollection, batch_sizes: list[int], send_lengths, send_values,
                 send_weights) -> None:
        self.module, self.batch_sizes = module, batch_sizes
        self._values, self._weights = send_values, send_weights
        n_mine = len(module._mine)
        self._recv_counts = [n_mine * b for b in batch_sizes]
        self._lengths = ember.empty(sum(self._recv_counts), dtype=ember.int64)
        self._lengths_work = dist.all_to_all_single(
            self._lengths, ember.cat(send_lengths), output_split_sizes=self._recv_counts,
            input_split_sizes=[t.numel() for t in send_lengths], group=module._group, async_op=True)
        self._ids_work = None
        self._bags = None

    def send_ids(self) -> None:
        if self._ids_work is not None:
            return
        self._lengths_work.wait()
        self._per_source = list(ember.split(self._lengths, self._recv_counts))
        self._value_counts = [int(block.sum().item()) for block in self._per_source]
        group, counts = self.module._group, self._value_counts
        self._ids = ember.empty(sum(counts), dtype=ember.int64)
        works = [dist.all_to_all_single(self._ids, ember.cat(self._values), output_split_sizes=counts,
                                        input_split_sizes=[t.numel() for t in self._values], group=group,
                                        async_op=True)]
        self._w = None
        if self.module._is_weighted:
            self._w = ember.empty(sum(counts))
            works.append(dist.all_to_all_single(self._w, ember.cat(self._weights), output_split_sizes=counts,
                                                input_split_sizes=[t.numel() for t in self._weights], group=group,
                                                async_op=True))
        self._ids_work = works

    def wait(self) -> dict[str, tuple]:
        if self._bags is not None:
            return self._bags
        self.send_ids()
        for work in self._ids_work:
            work.wait()
        # Regroup by unit: each source sent its bags unit after unit.
        mine, n_mine = self.module._mine, len(self.module._mine)
        id_blocks = list(ember.split(self._ids, self._value_counts))
        w_blocks = list(ember.split(self._w, self._value_counts)) if self._w is not None else None
        per_unit = [list(ember.split(block, [b] * n_mine)) if n_mine else []
                    for block, b in zip(self._per_source, self.batch_sizes, strict=True)]
        counts = [[int(x.sum().item()) for x in blocks] for blocks in per_unit]
        bags = {}
        for k, u in enumerate(mine):
            lens, ids, ws = [], [], []
            for s in range(len(self.batch_sizes)):
                start = sum(counts[s][:k])
                lens.append(per_unit[s][k])
                ids.append(id_blocks[s][start:start + counts[s][k]])
                if w_blocks is not None:
                    ws.append(w_blocks[s][start:start + counts[s][k]])
            bags[u.name] = (ember.cat(lens), ember.cat(ids), ember.cat(ws) if ws else None)
        self._bags = bags
        return bags


class ShardedTensor:
    """A table split across ranks: the shards' metadata and this rank's shards (TorchRec's
    ShardedTensor, without the tensor API). `gather()` assembles the whole table (collective)."""

    def __init__(self, size: tuple[int, int], shards: list[ShardMetadata], local: list[tuple[ShardMetadata, ember.Tensor]],
                 dtype, group: Any = None) -> None:
        self._size, self._metadata, self._local, self._dtype, self._group = size, shards, local, dtype, group

    def size(self) -> tuple[int, int]:
        return self._size

    @property
    def shape(self) -> tuple[int, int]:
        return self._size

    @property
    def dtype(self):
        return self._dtype

    def metadata(self) -> list[ShardMetadata]:
        return self._metadata

    def local_shards(self) -> list[tuple[ShardMetadata, ember.Tensor]]:
        return self._local

    def gather(self, dst: int = 0, out: ember.Tensor | None = None) -> ember.Tensor:
        """The whole table, on every rank (shards do not overlap, so a SUM all-reduce of each
        rank's shards written into zeros assembles it); `out`, if given, receives it on `dst`."""
        full = ember.zeros(*self._size, dtype=self.dtype)
        for meta, tensor in self._local:
            (r0, c0), (nr, nc) = meta.shard_offsets, meta.shard_sizes
            full[r0:r0 + nr, c0:c0 + nc] = tensor.detach()
        dist.all_reduce(full, group=self._group)
        if out is not None and dist.get_rank(self._group) == dst:
            out.copy_(full)
        return full


class ShardedEmbeddingBagCollection(nn.Module):
    """An EmbeddingBagCollection executed under a plan (see the module docstring). Built from the
    unsharded module, whose tables give every shard its starting rows."""

    def __init__(self, module: EmbeddingBagCollection, table_plan: dict[str, ParameterSharding], env: ShardingEnv,
                 fused_params: dict[str, Any] | None = None) -> None:
        super().__init__()
        configs = module.embedding_bag_configs()
        missing = [c.name for c in configs if c.name not in table_plan]
        if missing:
            raise ValueError(f"the plan shards no way for tables {missing}")
        self._env, self._configs, self._is_weighted = env, configs, module.is_weighted()
        self._group = env.process_group
        self._plan = dict(table_plan)
        self._units: list[_Unit] = []
        self.embedding_bags = nn.ModuleDict()  # data-parallel tables (whole) and dense local shards
        fused_configs: list[EmbeddingBagConfig] = []
        self._shard_specs: dict[str, list[ShardMetadata]] = {}
        # The fused kernels keep float32 tables; dense shards keep the table's dtype.
        self._dtypes = {c.name: ember.float32 if table_plan[c.name].compute_kernel == EmbeddingComputeKernel.FUSED.value
                        else module.embedding_bags[c.name].weight.dtype for c in configs}
        self._local_shards: dict[str, list[tuple[ShardMetadata, str]]] = {}  # table -> (shard, local key)
        for config in configs:
            ps = table_plan[config.name]
            if ps.sharding_type not in _SUPPORTED:
                raise ValueError(f"table {config.name!r}: unknown sharding type {ps.sharding_type!r}")
            weight = module.embedding_bags[config.name].weight.detach()
            if ps.sharding_type == ShardingType.DATA_PARALLEL.value:
                if ps.compute_kernel != EmbeddingComputeKernel.DENSE.value:
                    raise ValueError(f"table {config.name!r}: a data-parallel table uses the dense kernel, "
                                     f"got {ps.compute_kernel!r}")
                bag = nn.EmbeddingBag(config.num_embeddings, config.embedding_dim, mode=pooling_type_to_str(config.pooling),
                                      include_last_offset=True, dtype=weight.dtype)
                with ember.no_grad():
                    bag.weight.copy_(weight)
                self.embedding_bags[config.name] = bag
                continue
            if ps.compute_kernel not in (EmbeddingComputeKernel.DENSE.value, EmbeddingComputeKernel.FUSED.value):
                raise NotImplementedError(f"table {config.name!r}: compute kernel {ps.compute_kernel!r} is not "
                                          f"available on the CPU (use dense or fused)")
            shards = ps.sharding_spec.shards
            self._shard_specs[config.name] = shards
            self._local_shards[config.name] = []
            for index, shard in enumerate(shards):
                (r0, c0), (nr, nc) = shard.shard_offsets, shard.shard_sizes
                for feature in config.feature_names:
                    self._units.append(_Unit(config.name, feature, index, shard.rank, r0, nr, c0, nc,
                                             ps.sharding_type, ps.compute_kernel))
                if shard.rank != env.rank or nr == 0:
                    continue
                rows = weight[r0:r0 + nr, c0:c0 + nc]
                pooling = PoolingType.SUM if ps.sharding_type in _ROW_SPLIT else config.pooling
                key = f"{config.name}@{index}"
                self._local_shards[config.name].append((shard, key))
                if ps.compute_kernel == EmbeddingComputeKernel.DENSE.value:
                    bag = nn.EmbeddingBag(nr, nc, mode=pooling_type_to_str(pooling), include_last_offset=True,
                                          dtype=weight.dtype)
                    with ember.no_grad():
                        bag.weight.copy_(rows)
                    self.embedding_bags[key] = bag
                else:
                    fused_configs.append(EmbeddingBagConfig(
                        num_embeddings=nr, embedding_dim=nc, name=key, pooling=pooling,
                        feature_names=[u.name for u in self._units if u.table == config.name and u.shard == index],
                        init_fn=lambda w, rows=rows: w.copy_(rows)))
        self._pending: dict[int, InputDist] = {}  # input distributions started ahead, by KJT object
        self._fused = None
        if fused_configs:
            optimizer, kwargs = fused_optimizer_of(fused_params)
            self._fused = FusedEmbeddingBagCollection(fused_configs, optimizer, kwargs, is_weighted=self._is_weighted)
        world = env.world_size
        self._units_on = [[u for u in self._units if u.rank == d] for d in range(world)]
        self._units_of: dict[tuple[str, str], list[_Unit]] = {}  # (table, feature) -> its shards' units
        for u in self._units:
            self._units_of.setdefault((u.table, u.feature), []).append(u)
        self._mine = self._units_on[env.rank]
        # Row-wise tables reduce-scatter (every rank holds one row block of each); the others go home by all-to-all.
        self._rw = [u for u in self._mine if u.sharding_type == ShardingType.ROW_WISE.value]
        self._a2a_on = [[u for u in units if u.sharding_type != ShardingType.ROW_WISE.value] for units in self._units_on]
        self._a2a_width = [sum(u.cols for u in units) for units in self._a2a_on]
        # Every rank exchanges pooled rows in one dtype (a rank with no shard must send that too).
        sharded_types = {self._dtypes[c.name] for c in configs if table_plan[c.name].sharding_type != "data_parallel"}
        if len(sharded_types) > 1:
            raise ValueError(f"the sharded tables mix dtypes {sorted(map(str, sharded_types))}; use one")
        self._pooled_dtype = sharded_types.pop() if sharded_types else ember.float32
        self._embedding_names = [f for c in configs for f in c.feature_names]
        self._dims = [c.embedding_dim for c in configs for _ in c.feature_names]

    # ---- the three stages -------------------------------------------------------------------

    def input_dist(self, features: KeyedJaggedTensor) -> InputDist:
        """Starts sending `features`' bags to the shard owners (Note [pipelined input
        distribution]); forward() on the same KJT object then uses them instead of sending again."""
        self._check(features)
        sizes = [ember.zeros(1, dtype=ember.int64) for _ in range(self._env.world_size)]
        dist.all_gather(sizes, ember.tensor([features.stride()], dtype=ember.int64), group=self._group)
        batch_sizes = [int(s.item()) for s in sizes]
        by_key = features.to_dict()
        send_lengths, send_values, send_weights = [], [], []
        for units in self._units_on:
            lengths, values, weights = [], [], []
            for u in units:
                jt = by_key[u.feature]
                ids, bag_lengths, w = jt.values(), jt.lengths().to(ember.int64), jt.weights_or_none()
                if u.row_split:
                    keep = (ids >= u.row_offset) & (ids < u.row_offset + u.rows)
                    bag = ember.repeat_interleave(ember.arange(bag_lengths.numel()), bag_lengths)
                    bag_lengths = ember.zeros(bag_lengths.numel(), dtype=ember.int64).index_add_(
                        0, bag[keep], ember.ones(int(keep.sum().item()), dtype=ember.int64))
                    ids, w = ids[keep] - u.row_offset, None if w is None else w[keep]
                lengths.append(bag_lengths)
                values.append(ids.to(ember.int64))
                if w is not None:
                    weights.append(w.float())
            send_lengths.append(ember.cat(lengths) if lengths else ember.empty(0, dtype=ember.int64))
            send_values.append(ember.cat(values) if values else ember.empty(0, dtype=ember.int64))
            send_weights.append(ember.cat(weights) if weights else ember.empty(0))
        pending = InputDist(self, batch_sizes, send_lengths, send_values, send_weights)
        self._pending[id(features)] = pending
        return pending

    def _check(self, features: KeyedJaggedTensor) -> None:
        if not isinstance(features, KeyedJaggedTensor):
            raise TypeError(f"expected a KeyedJaggedTensor, got {type(features).__name__}")
        missing = [f for f in self._embedding_names if f not in features._key_indices()]
        if missing:
            raise KeyError(f"the KeyedJaggedTensor lacks features {missing} (it has {features.keys()})")
        if features.variable_stride_per_key():
            raise NotImplementedError("a variable batch per key is not implemented for sharded collections")
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError("this EmbeddingBagCollection is weighted but the KeyedJaggedTensor has no weights")

    def _lookups(self, bags, total_batch: int) -> dict[str, ember.Tensor]:
        """[sum of batches, cols] pooled rows of every local unit."""
        pooled = {}
        fused_keys = []
        for u in self._mine:
            lengths, ids, weights = bags[u.name]
            if u.rows == 0:  # an empty row block adds nothing
                # requires grad: this rank must join the collectives' backward like the others
                pooled[u.name] = ember.zeros(total_batch, u.cols, dtype=self._dtypes[u.table], requires_grad=True)
            elif u.kernel == EmbeddingComputeKernel.DENSE.value:
                offsets = ember.ops.fbgemm.asynchronous_complete_cumsum(lengths)
                pooled[u.name] = self.embedding_bags[f"{u.table}@{u.shard}"](ids, offsets, per_sample_weights=weights)
            else:
                fused_keys.append(u.name)
        if fused_keys:
            kjt = KeyedJaggedTensor(
                fused_keys, ember.cat([bags[k][1] for k in fused_keys]),
                ember.cat([bags[k][2] for k in fused_keys]) if self._is_weighted else None,
                lengths=ember.cat([bags[k][0] for k in fused_keys]), stride=total_batch)
            result = self._fused(kjt)
            for key in fused_keys:
                pooled[key] = result[key]
        return pooled

    def _output_dist(self, pooled, batch_sizes: list[int]) -> dict[str, ember.Tensor]:
        """This rank's [batch, cols] piece of every unit (own and other ranks')."""
        rank, world = self._env.rank, self._env.world_size
        pieces: dict[str, ember.Tensor] = {}
        mine = self._a2a_on[rank]
        if sum(self._a2a_width):
            if mine:
                rows = ember.cat([pooled[u.name] for u in mine], 1)  # [sum of batches, width]
                send = ember.cat([block.reshape(-1) for block in ember.split(rows, batch_sizes)])
            else:
                send = ember.zeros(0, dtype=self._pooled_dtype, requires_grad=True)  # joins the backward too
            received = all_to_all_pooled(send, [b * self._a2a_width[rank] for b in batch_sizes],
                                         [batch_sizes[rank] * w for w in self._a2a_width], self._group)
            blocks = ember.split(received, [batch_sizes[rank] * w for w in self._a2a_width])
            for d in range(world):
                if not self._a2a_on[d]:
                    continue
                block = blocks[d].view(batch_sizes[rank], self._a2a_width[d])
                for u, piece in zip(self._a2a_on[d], ember.split(block, [u.cols for u in self._a2a_on[d]], 1),
                                    strict=True):
                    pieces[u.name] = piece
        if self._rw:
            summed = reduce_scatter_pooled(ember.cat([pooled[u.name] for u in self._rw], 1), batch_sizes, self._group)
            for u, piece in zip(self._rw, ember.split(summed, [u.cols for u in self._rw], 1), strict=True):
                pieces[f"{u.feature}@{u.table}"] = piece
        return pieces

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        pending = self._pending.pop(id(features), None)
        if pending is None:  # not started ahead by a pipeline: send the bags now
            self.input_dist(features)
            pending = self._pending.pop(id(features))
        bags, batch_sizes = pending.wait(), pending.batch_sizes
        pieces = {}
        if self._units:
            pieces = self._output_dist(self._lookups(bags, sum(batch_sizes)), batch_sizes)
        by_key = features.to_dict()
        outputs = []
        for config in self._configs:
            ps = self._plan[config.name]
            for feature in config.feature_names:
                jt = by_key[feature]
                if ps.sharding_type == ShardingType.DATA_PARALLEL.value:
                    bag = self.embedding_bags[config.name]
                    outputs.append(bag(jt.values(), jt.offsets(),
                                       per_sample_weights=jt.weights() if self._is_weighted else None))
                    continue
                units = self._units_of[(config.name, feature)]
                if ps.sharding_type == ShardingType.ROW_WISE.value:
                    out = pieces[f"{feature}@{config.name}"]
                elif ps.sharding_type == ShardingType.TABLE_ROW_WISE.value:
                    out = sum(pieces[u.name] for u in units)
                else:  # whole rows: one shard, or column blocks side by side
                    out = ember.cat([pieces[u.name] for u in sorted(units, key=lambda u: u.col_offset)], 1)
                if ps.sharding_type in _ROW_SPLIT and config.pooling == PoolingType.MEAN:
                    out = out / jt.lengths().clamp(min=1).to(out.dtype).unsqueeze(1)
                outputs.append(out)
        return KeyedTensor(self._embedding_names, self._dims, ember.cat(outputs, 1))

    # ---- tables -------------------------------------------------------------------------------

    def fused_optimizer(self):
        """The KeyedOptimizer of the local fused shards (None when no shard here is fused)."""
        return None if self._fused is None else self._fused.fused_optimizer()

    def sharded_tables(self) -> dict[str, ShardedTensor]:
        """Every sharded table as a ShardedTensor of this rank's shards."""
        fused = {} if self._fused is None else self._fused.state_dict()
        out = {}
        for config in self._configs:
            if config.name not in self._shard_specs:
                continue
            local = []
            for shard, key in self._local_shards[config.name]:
                tensor = (self.embedding_bags[key].weight if key in self.embedding_bags
                          else fused[f"embedding_bags.{key}.weight"])
                local.append((shard, tensor))
            out[config.name] = ShardedTensor((config.num_embeddings, config.embedding_dim),
                                             self._shard_specs[config.name], local, self._dtypes[config.name],
                                             self._group)
        return out

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Data-parallel tables as tensors, sharded ones as ShardedTensor under
        ``embedding_bags.<table>.weight`` (call ``.gather()`` on every rank for the whole table)."""
        out = {} if destination is None else destination
        for name, bag in self.embedding_bags.items():
            if name in self._plan:  # a data-parallel table (local shards have "<table>@<i>" keys)
                out[f"{prefix}embedding_bags.{name}.weight"] = bag.weight if keep_vars else bag.weight.detach()
        for name, table in self.sharded_tables().items():
            out[f"{prefix}embedding_bags.{name}.weight"] = table
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Whole tables (as an EmbeddingBagCollection's state_dict has them) or ShardedTensors
        (gathered first: a collective): each rank copies its shards. DistributedModelParallel routes
        a model's state_dict here for each sharded collection."""
        fused = {} if self._fused is None else self._fused.state_dict()
        for config in self._configs:
            key = f"embedding_bags.{config.name}.weight"
            if key not in state_dict:
                if strict:
                    raise KeyError(f"the state_dict lacks {key!r}")
                continue
            full = state_dict[key]
            if isinstance(full, ShardedTensor):
                full = full.gather()
            with ember.no_grad():
                if config.name in self.embedding_bags:
                    self.embedding_bags[config.name].weight.copy_(full)
                for shard, local in self._local_shards.get(config.name, []):
                    (r0, c0), (nr, nc) = shard.shard_offsets, shard.shard_sizes
                    target = self.embedding_bags[local].weight if local in self.embedding_bags \
                        else fused[f"embedding_bags.{local}.weight"]
                    target.copy_(full[r0:r0 + nr, c0:c0 + nc])
