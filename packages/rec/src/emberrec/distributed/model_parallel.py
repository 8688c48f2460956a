"""DistributedModelParallel (TorchRec's ``torchrec.distributed.model_parallel``): a model whose
embedding collections run sharded under a plan and whose other parameters are replicated.

Construction plans the model (``EmbeddingShardingPlanner.collective_plan`` unless a plan is
given), replaces each planned collection with its sharded module, and makes the replicated
parameters equal on every rank (broadcast from rank 0). During backward each replicated
parameter's gradient is averaged over the ranks as soon as it is accumulated (one all-reduce per
parameter, in the order backward produces them, which is the same on every rank); sharded tables
get the sum of every rank's gradient through the collectives, as in TorchRec.
"""

from __future__ import annotations

import ember
import ember.distributed as dist
from ember import nn
from emberrec.distributed.sharded_embeddingbag import ShardedEmbeddingBagCollection, ShardingEnv
from emberrec.distributed.sharding_plan import get_default_sharders
from emberrec.distributed.types import ModuleSharder, ShardingPlan
from emberrec.optim.keyed import KeyedOptimizer


class CombinedOptimizer(KeyedOptimizer):
    """Several keyed optimizers as one (TorchRec's CombinedOptimizer): keys get the owner's path."""

    def __init__(self, optimizers: list[tuple[str, KeyedOptimizer]]) -> None:
        self._optimizers = optimizers
        params, state, groups = {}, {}, []
        for path, optimizer in optimizers:
            params.update({f"{path}.{k}" if path else k: v for k, v in optimizer.params.items()})
            state.update(optimizer.state)
            groups += optimizer.param_groups
        super().__init__(params, state, groups)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for _, optimizer in self._optimizers:
            optimizer.step()
        return loss


class DistributedModelParallel(nn.Module):
    def __init__(self, module: nn.Module, env: ShardingEnv | None = None, device=None, plan: ShardingPlan | None = None,
                 sharders: list[ModuleSharder] | None = None, init_data_parallel: bool = True,
                 init_parameters: bool = True) -> None:
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("DistributedModelParallel needs ember.distributed.init_process_group first")
        if device is not None and ember.device(device).type != "cpu":
            raise NotImplementedError(f"DistributedModelParallel runs on the CPU only, got device {device}")
        self._env = env or ShardingEnv.from_process_group(None)
        sharders = list(sharders or get_default_sharders())
        if plan is None:
            from emberrec.distributed.planner import EmbeddingShardingPlanner, Topology

            planner = EmbeddingShardingPlanner(topology=Topology(world_size=self._env.world_size, compute_device="cpu"))
            plan = planner.collective_plan(module, sharders, self._env.process_group)
        self._plan = plan
        by_type = {sharder.module_type: sharder for sharder in sharders}
        self._sharded: dict[str, ShardedEmbeddingBagCollection] = {}
        self.module = self._shard(module, "", by_type)
        unused = set(plan.plan) - set(self._sharded)
        if unused:
            raise ValueError(f"the plan names modules the model does not have (or no sharder handles): {sorted(unused)}")
        self._replicated = [p for name, p in self.module.named_parameters() if not self._is_shard(name)]
        if init_data_parallel and self._env.world_size > 1:
            with ember.no_grad():
                for tensor in [*self._replicated, *self.module.buffers()]:
                    dist.broadcast(tensor, 0, group=self._env.process_group)
            for p in self._replicated:
                if p.requires_grad:
                    p.register_post_accumulate_grad_hook(lambda _, p=p: self._average(p))

    def _shard(self, module: nn.Module, path: str, by_type: dict[type, ModuleSharder]) -> nn.Module:
        params = self._plan.get_plan_for_module(path)
        if params is not None:
            sharder = by_type.get(type(module))
            if sharder is None or not hasattr(sharder, "shard"):
                raise ValueError(f"module {path or '<root>'!r} ({type(module).__name__}) is planned but no "
                                 f"sharder executes it")
            sharded = sharder.shard(module, params, self._env)
            self._sharded[path] = sharded
            return sharded
        for name, child in list(module.named_children()):
            setattr(module, name, self._shard(child, f"{path}.{name}" if path else name, by_type))
        return module

    def _is_shard(self, name: str) -> bool:
        """A parameter of a sharded collection's local shard (a data-parallel table is replicated)."""
        for path in self._sharded:
            head = f"{path}.embedding_bags." if path else "embedding_bags."
            if name.startswith(head) and "@" in name[len(head):]:
                return True
        return False

    def _average(self, p) -> None:
        with ember.no_grad():
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG, group=self._env.process_group)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @property
    def plan(self) -> ShardingPlan:
        return self._plan

    @property
    def fused_optimizer(self) -> KeyedOptimizer:
        """Every sharded collection's fused optimizer as one KeyedOptimizer."""
        found = [(path, s.fused_optimizer()) for path, s in self._sharded.items() if s.fused_optimizer() is not None]
        return CombinedOptimizer(found)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """The wrapped model's state_dict (no "module." prefix), sharded tables as ShardedTensor."""
        return self.module.state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Loads an unsharded model's state_dict (or this one's): each sharded collection takes
        its tables' shards, every other module its usual entries."""
        rest = dict(state_dict)
        for path, sharded in self._sharded.items():
            head = f"{path}." if path else ""
            mine = {k[len(head):]: rest.pop(k) for k in list(rest) if k.startswith(head + "embedding_bags.")}
            sharded.load_state_dict(mine, strict=strict)
        own = {k for k in self.module.state_dict() if not any(k.startswith(f"{p}." if p else "") for p in self._sharded)}
        unexpected = sorted(set(rest) - own)
        missing = sorted(own - set(rest))
        if strict and (unexpected or missing):
            raise RuntimeError(f"Error(s) in loading state_dict for DistributedModelParallel: missing {missing}, "
                               f"unexpected {unexpected}")
        with ember.no_grad():
            current = self.module.state_dict(keep_vars=True)
            for key in own & set(rest):
                current[key].copy_(rest[key])
        return None
