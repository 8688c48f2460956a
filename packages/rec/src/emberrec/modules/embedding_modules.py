"""Embedding collections (TorchRec's ``torchrec.modules.embedding_modules``).

``EmbeddingBagCollection`` looks up every feature of a KeyedJaggedTensor in its table and pools
each bag, returning a KeyedTensor of [B, sum of dims]; ``EmbeddingCollection`` returns, per
feature, a JaggedTensor of one row per index. Each table is an ordinary ``ember.nn.EmbeddingBag``
/ ``ember.nn.Embedding`` under ``embedding_bags.<table>`` / ``embeddings.<table>``, so state
dicts match TorchRec's and any ember optimizer trains them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import ember
from ember import nn
from emberrec.modules.embedding_configs import (
    BaseEmbeddingConfig,
    DataType,
    EmbeddingBagConfig,
    EmbeddingConfig,
    PoolingType,
    data_type_to_dtype,
    pooling_type_to_str,
)
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor


def _check_tables(tables: Sequence[BaseEmbeddingConfig], kind: type) -> None:
    names: set[str] = set()
    features: dict[str, str] = {}
    for config in tables:
        if not isinstance(config, kind):
            raise TypeError(f"expected {kind.__name__} tables, got {type(config).__name__}")
        if not config.name:
            raise ValueError(f"every table needs a name: {config}")
        if config.name in names:
            raise ValueError(f"duplicate table name {config.name!r}")
        names.add(config.name)
        if not config.feature_names:
            raise ValueError(f"table {config.name!r} has no feature_names")
        for feature in config.feature_names:
            if feature in features:
                raise ValueError(f"feature {feature!r} is looked up in two tables: "
                                 f"{features[feature]!r} and {config.name!r}")
            features[feature] = config.name
        if config.data_type not in (DataType.FP32, DataType.FP16, DataType.BF16):
            raise ValueError(f"table {config.name!r}: a trainable table is FP32, FP16 or BF16, got "
                             f"{config.data_type} (quantized tables live in emberrec.quant)")


def _init_table(weight: ember.Tensor, config: BaseEmbeddingConfig) -> None:
    with ember.no_grad():
        if config.init_fn is not None:
            config.init_fn(weight)
        else:
            weight.uniform_(config.get_weight_init_min(), config.get_weight_init_max())


def _features_of(features: KeyedJaggedTensor, wanted: Sequence[str]) -> dict[str, JaggedTensor]:
    if not isinstance(features, KeyedJaggedTensor):
        raise TypeError(f"expected a KeyedJaggedTensor, got {type(features).__name__}")
    by_key = features.to_dict()
    missing = [f for f in wanted if f not in by_key]
    if missing:
        raise KeyError(f"the KeyedJaggedTensor lacks features {missing} (it has {features.keys()})")
    return by_key


@contextlib.contextmanager
def _naming(feature: str, config: BaseEmbeddingConfig):
    """A lookup's error (an id outside the table) names the feature and its table."""
    try:
        yield
    except (IndexError, RuntimeError) as error:
        raise IndexError(f"feature {feature!r} (table {config.name!r}, {config.num_embeddings} rows): "
                         f"{error}") from error


class EmbeddingBagCollection(nn.Module):
    """Pooled lookups: KeyedJaggedTensor → KeyedTensor keyed by feature, in table order.

    An empty bag pools to zeros. With ``is_weighted=True`` the KJT's weights scale each row
    before pooling (per-sample weights). A KJT with a variable batch per key needs
    ``inverse_indices``; each key's pooled rows are then expanded to the full batch with them.
    """

    def __init__(self, tables: list[EmbeddingBagConfig], is_weighted: bool = False, device=None) -> None:
        super().__init__()
        _check_tables(tables, EmbeddingBagConfig)
        for config in tables:
            if is_weighted and config.pooling != PoolingType.SUM:
                raise ValueError(f"table {config.name!r} pools by {config.pooling.value}; weighted features "
                                 f"(is_weighted=True) are pooled by SUM only")
        self._is_weighted = is_weighted
        self._embedding_bag_configs = list(tables)
        self.embedding_bags = nn.ModuleDict()
        for config in tables:
            bag = nn.EmbeddingBag(config.num_embeddings, config.embedding_dim, mode=pooling_type_to_str(config.pooling),
                                  include_last_offset=True, device=device,
                                  dtype=data_type_to_dtype(config.data_type))
            _init_table(bag.weight, config)
            self.embedding_bags[config.name] = bag
        self._embedding_names = [f for config in tables for f in config.feature_names]
        self._lengths_per_embedding = [config.embedding_dim for config in tables for _ in config.feature_names]

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        by_key = _features_of(features, self._embedding_names)
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError("this EmbeddingBagCollection is weighted but the KeyedJaggedTensor has no weights")
        inverse = None
        if features.variable_stride_per_key():
            if features.inverse_indices_or_none() is None:
                raise ValueError("a KeyedJaggedTensor with a variable batch per key needs inverse_indices "
                                 "to give every feature the full batch")
            inverse_keys, inverse_tensor = features.inverse_indices()
            inverse = {key: inverse_tensor[i] for i, key in enumerate(inverse_keys)}
        pooled = []
        for config in self._embedding_bag_configs:
            bag = self.embedding_bags[config.name]
            for feature in config.feature_names:
                jt = by_key[feature]
                with _naming(feature, config):
                    out = bag(jt.values(), jt.offsets(),
                              per_sample_weights=jt.weights() if self._is_weighted else None)
                if inverse is not None:
                    if feature not in inverse:
                        raise KeyError(f"inverse_indices lack feature {feature!r}")
                    out = out.index_select(0, inverse[feature].to(ember.int64))
                pooled.append(out)
        values = ember.cat(pooled, 1) if pooled else ember.empty(features.stride(), 0)
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding, values)

    def is_weighted(self) -> bool:
        return self._is_weighted

    def embedding_bag_configs(self) -> list[EmbeddingBagConfig]:
        return self._embedding_bag_configs

    def reset_parameters(self) -> None:
        for config in self._embedding_bag_configs:
            _init_table(self.embedding_bags[config.name].weight, config)


class EmbeddingCollection(nn.Module):
    """Sequence lookups: KeyedJaggedTensor → {feature: JaggedTensor of [sum of lengths, D]}.

    Every table must have the same embedding_dim (TorchRec's rule: the rows of different
    features are meant to be compared). ``need_indices=True`` keeps the looked-up ids as each
    output's weights.
    """

    def __init__(self, tables: list[EmbeddingConfig], device=None, need_indices: bool = False) -> None:
        super().__init__()
        _check_tables(tables, EmbeddingConfig)
        dims = {config.name: config.embedding_dim for config in tables}
        if len(set(dims.values())) > 1:
            raise ValueError(f"every table of an EmbeddingCollection needs the same embedding_dim, got {dims}")
        self._embedding_configs = list(tables)
        self._need_indices = need_indices
        self._embedding_dim = next(iter(dims.values()), 0)
        self.embeddings = nn.ModuleDict()
        for config in tables:
            table = nn.Embedding(config.num_embeddings, config.embedding_dim, device=device,
                                 dtype=data_type_to_dtype(config.data_type))
            _init_table(table.weight, config)
            self.embeddings[config.name] = table
        self._embedding_names = [f for config in tables for f in config.feature_names]

    def forward(self, features: KeyedJaggedTensor) -> dict[str, JaggedTensor]:
        by_key = _features_of(features, self._embedding_names)
        out = {}
        for config in self._embedding_configs:
            table = self.embeddings[config.name]
            for feature in config.feature_names:
                jt = by_key[feature]
                with _naming(feature, config):
                    rows = table(jt.values())
                out[feature] = JaggedTensor(rows, lengths=jt.lengths(),
                                            weights=jt.values() if self._need_indices else None)
        return out

    def need_indices(self) -> bool:
        return self._need_indices

    def embedding_dim(self) -> int:
        return self._embedding_dim

    def embedding_configs(self) -> list[EmbeddingConfig]:
        return self._embedding_configs

    def embedding_names_by_table(self) -> list[list[str]]:
        return [list(config.feature_names) for config in self._embedding_configs]

    def reset_parameters(self) -> None:
        for config in self._embedding_configs:
            _init_table(self.embeddings[config.name].weight, config)
