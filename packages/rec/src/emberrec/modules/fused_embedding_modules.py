"""FusedEmbeddingBagCollection (TorchRec's ``torchrec.modules.fused_embedding_modules``): an
EmbeddingBagCollection whose tables live in ember's table-batched embeddings
(``ember.tbe.SplitTableBatchedEmbeddingBagsCodegen``) and are updated by the optimizer fused into
the lookup's backward, so no gradient of a table is ever materialized.

Tables with the same pooling and data type share one TBE (TorchRec groups them the same way);
the output KeyedTensor lists features group by group. The tables are NOT parameters of the
module: an optimizer built over ``model.parameters()`` trains the dense part only, and the
tables' optimizer is ``fused_optimizer()``. ``state_dict()`` still names each table
``embedding_bags.<table>.weight``, as EmbeddingBagCollection does, so checkpoints move between
the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember.tbe import (
    ComputeDevice,
    EmbeddingLocation,
    EmbOptimType,
    SplitTableBatchedEmbeddingBagsCodegen,
    WeightDecayMode,
)
from emberrec.modules._tbe_tables import TablesInStateDict, features_by_group
from emberrec.modules.embedding_configs import (
    EmbeddingBagConfig,
    PoolingType,
    data_type_to_sparse_type,
    pooling_type_to_pooling_mode,
)
from emberrec.modules.embedding_modules import _check_tables
from emberrec.optim.keyed import KeyedOptimizer
from emberrec.optim.rowwise_adagrad import RowWiseAdagrad
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor, KeyedTensor


def _only(kwargs: dict[str, Any], optimizer: str, allowed: dict[str, Any]) -> None:
    """Refuse an optimizer argument the fused kernel does not implement (rather than ignore it)."""
    for key, value in kwargs.items():
        if key not in allowed:
            raise ValueError(f"fused {optimizer}: argument {key!r} is not supported by the fused kernels")
        if allowed[key] is not None and value != allowed[key]:
            raise ValueError(f"fused {optimizer}: {key}={value!r} is not supported (only {allowed[key]!r})")


def convert_optimizer_type_and_kwargs(optimizer_type: type, optimizer_kwargs: dict[str, Any]
                                      ) -> tuple[EmbOptimType, dict[str, Any]]:
    """An ember.optim class and its arguments → the TBE optimizer and the TBE's arguments."""
    kw = dict(optimizer_kwargs)
    lr = kw.pop("lr", None)
    out: dict[str, Any] = {} if lr is None else {"learning_rate": float(lr)}
    name = getattr(optimizer_type, "__name__", repr(optimizer_type))
    if optimizer_type is ember.optim.SGD:
        _only(kw, name, {"momentum": 0, "dampening": 0, "weight_decay": 0, "nesterov": False, "maximize": False})
        return EmbOptimType.EXACT_SGD, out
    if optimizer_type is ember.optim.Adagrad:
        _only(kw, name, {"eps": None, "lr_decay": 0, "weight_decay": 0, "initial_accumulator_value": 0,
                         "maximize": False})
        out["eps"] = float(kw.get("eps", 1e-10))
        return EmbOptimType.EXACT_ADAGRAD, out
    if optimizer_type is RowWiseAdagrad:
        _only(kw, name, {"eps": None, "lr_decay": 0, "weight_decay": None, "initial_accumulator_value": 0,
                         "maximize": False})
        out["eps"] = float(kw.get("eps", 1e-10))
        if kw.get("weight_decay", 0):
            out.update(weight_decay=float(kw["weight_decay"]), weight_decay_mode=WeightDecayMode.L2)
        return EmbOptimType.EXACT_ROWWISE_ADAGRAD, out
    if optimizer_type in (ember.optim.Adam, ember.optim.AdamW):
        # The fused Adam decays weights decoupled from the gradient, as AdamW does; Adam's own
        # weight_decay (added to the gradient) has no fused kernel.
        decoupled = optimizer_type is ember.optim.AdamW
        _only(kw, name, {"eps": None, "betas": None, "weight_decay": None if decoupled else 0, "amsgrad": False,
                         "maximize": False})
        beta1, beta2 = kw.get("betas", (0.9, 0.999))
        out.update(eps=float(kw.get("eps", 1e-8)), beta1=float(beta1), beta2=float(beta2),
                   weight_decay=float(kw.get("weight_decay", 1e-2 if decoupled else 0.0)))
        return EmbOptimType.ADAM, out
    raise ValueError(f"no fused kernel for optimizer {name}; use ember.optim.SGD, ember.optim.Adagrad, "
                     f"ember.optim.Adam, ember.optim.AdamW or emberrec.optim.RowWiseAdagrad")


class EmbeddingFusedOptimizer(KeyedOptimizer):
    """The fused optimizer of a FusedEmbeddingBagCollection: its tables keyed by parameter name,
    their optimizer states (views of the TBE's buffers), one param group per TBE. step() applies
    a changed "lr" to the kernels; the update itself runs in the backward."""

    def __init__(self, groups: Sequence[tuple[SplitTableBatchedEmbeddingBagsCodegen, list[str]]],
                 optimizer_type: type, optimizer_kwargs: dict[str, Any]) -> None:
        params, state, param_groups = {}, {}, []
        self._tbes = []
        for tbe, table_names in groups:
            weights = tbe.split_embedding_weights()
            states = tbe.split_optimizer_states() if tbe.optimizer != EmbOptimType.EXACT_SGD else [[]] * len(weights)
            group_params = []
            for name, weight, table_states in zip(table_names, weights, states, strict=True):
                key = f"embedding_bags.{name}.weight"
                params[key] = weight
                group_params.append(weight)
                kinds = [s for s in ("momentum1", "momentum2")][:len(table_states)]
                state[weight] = {f"{name}.{kind}": value for kind, value in zip(kinds, table_states, strict=True)}
            param_groups.append({**optimizer_kwargs, "lr": tbe.get_learning_rate(), "params": group_params})
            self._tbes.append(tbe)
        super().__init__(params, state, param_groups)
        self.optimizer_type = optimizer_type

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for tbe, group in zip(self._tbes, self.param_groups, strict=True):
            if group["lr"] != tbe.get_learning_rate():
                tbe.set_learning_rate(group["lr"])
        return loss

    def load_state_dict(self, state_dict) -> None:
        super().load_state_dict(state_dict)
        self.step()  # a restored learning rate reaches the kernels


class FusedEmbeddingBagCollection(TablesInStateDict):
    """An EmbeddingBagCollection trained by a fused optimizer (see the module docstring)."""

    def __init__(self, tables: list[EmbeddingBagConfig], optimizer_type: type, optimizer_kwargs: dict[str, Any],
                 is_weighted: bool = False, device=None, location: EmbeddingLocation | None = None) -> None:
        super().__init__()
        _check_tables(tables, EmbeddingBagConfig)
        if device is not None and ember.device(device).type != "cpu":
            raise NotImplementedError(f"FusedEmbeddingBagCollection computes on the CPU only, got device {device}")
        if location not in (None, EmbeddingLocation.HOST):
            raise ValueError(f"on the CPU tables live in host memory (EmbeddingLocation.HOST), got {location!r}")
        if is_weighted and any(c.pooling != PoolingType.SUM for c in tables):
            raise ValueError("weighted features (is_weighted=True) are pooled by SUM only")
        optimizer, tbe_kwargs = convert_optimizer_type_and_kwargs(optimizer_type, optimizer_kwargs)
        self._is_weighted = is_weighted
        self._embedding_bag_configs = list(tables)
        self._optimizer_type, self._optimizer_kwargs = optimizer_type, dict(optimizer_kwargs)
        grouped: dict[tuple, list[EmbeddingBagConfig]] = {}
        for config in tables:
            grouped.setdefault((config.pooling, config.data_type), []).append(config)
        # A plain list: the TBEs stay out of the module's children and parameters (module docstring).
        self._emb_modules: list[SplitTableBatchedEmbeddingBagsCodegen] = []
        self._group_tables: list[list[str]] = []
        self._group_features: list[list[str]] = []
        self._embedding_names: list[str] = []
        self._lengths_per_embedding: list[int] = []
        for (pooling, data_type), configs in grouped.items():
            features = [f for c in configs for f in c.feature_names]
            tbe = SplitTableBatchedEmbeddingBagsCodegen(
                [(c.num_embeddings, c.embedding_dim, EmbeddingLocation.HOST, ComputeDevice.CPU) for c in configs],
                feature_table_map=[t for t, c in enumerate(configs) for _ in c.feature_names],
                weights_precision=data_type_to_sparse_type(data_type), optimizer=optimizer,
                pooling_mode=pooling_type_to_pooling_mode(pooling), stochastic_rounding=False, **tbe_kwargs)
            for config, weight in zip(configs, tbe.split_embedding_weights(), strict=True):
                with ember.no_grad():
                    if config.init_fn is not None:
                        config.init_fn(weight)
                    else:
                        weight.uniform_(config.get_weight_init_min(), config.get_weight_init_max())
            self._emb_modules.append(tbe)
            self._group_tables.append([c.name for c in configs])
            self._group_features.append(features)
            self._embedding_names += features
            self._lengths_per_embedding += [c.embedding_dim for c in configs for _ in c.feature_names]
        self._optim = EmbeddingFusedOptimizer(list(zip(self._emb_modules, self._group_tables, strict=True)),
                                              optimizer_type, self._optimizer_kwargs)

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError("this FusedEmbeddingBagCollection is weighted but the KeyedJaggedTensor has no weights")
        parts = features_by_group(features, self._group_features)
        pooled = []
        for tbe, part in zip(self._emb_modules, parts, strict=True):
            pooled.append(tbe(part.values(), part.offsets(),
                              per_sample_weights=part.weights() if self._is_weighted else None))
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding,
                           ember.cat(pooled, 1) if len(pooled) > 1 else pooled[0])

    def fused_optimizer(self) -> EmbeddingFusedOptimizer:
        return self._optim

    def is_weighted(self) -> bool:
        return self._is_weighted

    def embedding_bag_configs(self) -> list[EmbeddingBagConfig]:
        return self._embedding_bag_configs

    def optimizer_type(self) -> type:
        return self._optimizer_type

    def optimizer_kwargs(self) -> dict[str, Any]:
        return self._optimizer_kwargs

    def _state_tables(self) -> dict[str, ember.Tensor]:
        return self._optim.params
