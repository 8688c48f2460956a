"""The quantized EmbeddingBagCollection (TorchRec's ``torchrec.quant.embedding_modules``): the
same lookups as ``emberrec.EmbeddingBagCollection`` over ember's inference TBE
(``ember.tbe.IntNBitTableBatchedEmbeddingBagsCodegen``), each table stored as FP32, FP16, INT8,
INT4 or INT2 rows (integer rows carry an fp16 scale and bias, FBGEMM's row-wise format).

``quantize_embeddings(model, dtype)`` swaps every float EmbeddingBagCollection in a model for a
quantized one, as TorchRec's ``torchrec.inference.modules.quantize_embeddings`` does.
"""

from __future__ import annotations

import numpy as np

import ember
from ember.tbe import BoundsCheckMode, EmbeddingLocation, IntNBitTableBatchedEmbeddingBagsCodegen, SparseType
from emberrec.modules import embedding_modules
from emberrec.modules._tbe_tables import TablesInStateDict, features_by_group
from emberrec.modules.embedding_configs import (
    DataType,
    EmbeddingBagConfig,
    PoolingType,
    data_type_to_sparse_type,
    pooling_type_to_pooling_mode,
)
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor, KeyedTensor

_OUTPUT_TYPES = {ember.float32: SparseType.FP32, ember.float16: SparseType.FP16, ember.bfloat16: SparseType.BF16}
_QUANTIZED = (DataType.INT8, DataType.INT4, DataType.INT2)
_BITS = {DataType.INT8: 8, DataType.INT4: 4, DataType.INT2: 2}


def quantize_rows(weight: ember.Tensor, data_type: DataType) -> tuple[ember.Tensor, ember.Tensor | None]:
    """A float table as the inference TBE stores it: (rows as bytes, scale and bias as bytes or
    None). Integer types are quantized row by row (fp16 scale and bias)."""
    weight = weight.detach().float().contiguous()
    if data_type in (DataType.FP32, DataType.FP16):
        # The bytes of each row (through NumPy: ember has no Tensor.view(dtype) yet).
        values = weight.numpy() if data_type == DataType.FP32 else weight.half().numpy()
        return ember.from_numpy(values.view(np.uint8).reshape(weight.shape[0], -1).copy()), None
    if data_type not in _QUANTIZED:
        raise ValueError(f"the inference TBE stores FP32, FP16, INT8, INT4 or INT2 tables, not {data_type}")
    fused = ember.ops.fbgemm.FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf(weight, _BITS[data_type])
    return fused[:, :-4], fused[:, -4:]  # codes, then fp16 scale and bias (the TBE wants them apart)


class EmbeddingBagCollection(TablesInStateDict):
    """Pooled lookups of quantized tables: KeyedJaggedTensor → KeyedTensor in `output_dtype`.

    Each config's data_type is its table's storage type. Tables are grouped into one TBE per
    pooling; features come out group by group. The tables start empty: load them with
    `load_state_dict` (keys ``embedding_bags.<table>.weight`` and, for integer tables,
    ``embedding_bags.<table>.weight_qscaleshift``) or build the module with `from_float`.
    """

    def __init__(self, tables: list[EmbeddingBagConfig], is_weighted: bool = False, device=None,
                 output_dtype=ember.float32, row_alignment: int = 16) -> None:
        super().__init__()
        if device is not None and ember.device(device).type != "cpu":
            raise NotImplementedError(f"the quantized EmbeddingBagCollection computes on the CPU only, got {device}")
        if output_dtype not in _OUTPUT_TYPES:
            raise ValueError(f"output_dtype must be float32, float16 or bfloat16, got {output_dtype}")
        for config in tables:
            if not isinstance(config, EmbeddingBagConfig):
                raise TypeError(f"expected EmbeddingBagConfig tables, got {type(config).__name__}")
            if config.data_type not in (DataType.FP32, DataType.FP16, *_QUANTIZED):
                raise ValueError(f"table {config.name!r}: the inference TBE stores FP32, FP16, INT8, INT4 or INT2 "
                                 f"tables, not {config.data_type}")
            if is_weighted and config.pooling != PoolingType.SUM:
                raise ValueError(f"table {config.name!r} pools by {config.pooling.value}; weighted features are "
                                 f"pooled by SUM only")
        names = [c.name for c in tables]
        if len(set(names)) != len(names) or "" in names:
            raise ValueError(f"every table needs a unique name, got {names}")
        self._is_weighted = is_weighted
        self._output_dtype = output_dtype
        self._embedding_bag_configs = list(tables)
        by_pooling: dict[PoolingType, list[EmbeddingBagConfig]] = {}
        for config in tables:
            by_pooling.setdefault(config.pooling, []).append(config)
        self._tbes: list[IntNBitTableBatchedEmbeddingBagsCodegen] = []  # a plain list: see _state_tables
        self._group_features: list[list[str]] = []
        self._tables: dict[str, ember.Tensor] = {}
        self._embedding_names: list[str] = []
        self._lengths_per_embedding: list[int] = []
        for pooling, configs in by_pooling.items():
            tbe = IntNBitTableBatchedEmbeddingBagsCodegen(
                [(c.name, c.num_embeddings, c.embedding_dim, data_type_to_sparse_type(c.data_type),
                  EmbeddingLocation.HOST) for c in configs],
                feature_table_map=[t for t, c in enumerate(configs) for _ in c.feature_names],
                pooling_mode=pooling_type_to_pooling_mode(pooling), output_dtype=_OUTPUT_TYPES[output_dtype],
                row_alignment=row_alignment, indices_dtype=ember.int64,
                bounds_check_mode=BoundsCheckMode.FATAL)  # an id outside its table is an error, not repaired
            tbe.initialize_weights()
            for config, (rows, scale_bias) in zip(configs, tbe.split_embedding_weights(), strict=True):
                self._tables[f"embedding_bags.{config.name}.weight"] = rows
                if scale_bias is not None:
                    self._tables[f"embedding_bags.{config.name}.weight_qscaleshift"] = scale_bias
            self._tbes.append(tbe)
            features = [f for c in configs for f in c.feature_names]
            self._group_features.append(features)
            self._embedding_names += features
            self._lengths_per_embedding += [c.embedding_dim for c in configs for _ in c.feature_names]

    @classmethod
    def from_float(cls, module: embedding_modules.EmbeddingBagCollection, data_type: DataType = DataType.INT8,
                   output_dtype=ember.float32,
                   per_table_data_type: dict[str, DataType] | None = None) -> EmbeddingBagCollection:
        """The quantized copy of a float EmbeddingBagCollection: every table stored as
        `data_type` (or its entry in `per_table_data_type`)."""
        if not isinstance(module, embedding_modules.EmbeddingBagCollection):
            raise TypeError(f"from_float takes an emberrec EmbeddingBagCollection, got {type(module).__name__}")
        per_table = per_table_data_type or {}
        unknown = set(per_table) - {c.name for c in module.embedding_bag_configs()}
        if unknown:
            raise ValueError(f"per_table_data_type names tables the module does not have: {sorted(unknown)}")
        configs = [EmbeddingBagConfig(**{**c.__dict__, "data_type": per_table.get(c.name, data_type)})
                   for c in module.embedding_bag_configs()]
        quantized = cls(configs, is_weighted=module.is_weighted(), output_dtype=output_dtype)
        for config in configs:
            rows, scale_bias = quantize_rows(module.embedding_bags[config.name].weight, config.data_type)
            quantized._tables[f"embedding_bags.{config.name}.weight"].copy_(rows)
            if scale_bias is not None:
                quantized._tables[f"embedding_bags.{config.name}.weight_qscaleshift"].copy_(scale_bias)
        return quantized

    def forward(self, features: KeyedJaggedTensor) -> KeyedTensor:
        if self._is_weighted and features.weights_or_none() is None:
            raise ValueError("this EmbeddingBagCollection is weighted but the KeyedJaggedTensor has no weights")
        pooled = []
        for tbe, part in zip(self._tbes, features_by_group(features, self._group_features), strict=True):
            weights = part.weights().float() if self._is_weighted else None
            pooled.append(tbe(part.values(), part.offsets(), per_sample_weights=weights))
        values = ember.cat(pooled, 1) if len(pooled) > 1 else pooled[0]
        return KeyedTensor(self._embedding_names, self._lengths_per_embedding, values)

    def is_weighted(self) -> bool:
        return self._is_weighted

    def output_dtype(self):
        return self._output_dtype

    def embedding_bag_configs(self) -> list[EmbeddingBagConfig]:
        return self._embedding_bag_configs

    def _state_tables(self) -> dict[str, ember.Tensor]:
        return self._tables


_DTYPE_TO_DATA_TYPE = {ember.float32: DataType.FP32, ember.float16: DataType.FP16, ember.int8: DataType.INT8,
                       ember.uint8: DataType.INT8}


def quantize_embeddings(module: ember.nn.Module, dtype=DataType.INT8, inplace: bool = True,
                        output_dtype=ember.float32,
                        per_table_weight_dtype: dict[str, DataType] | None = None) -> ember.nn.Module:
    """Replace every float emberrec EmbeddingBagCollection in `module` (or `module` itself) by its
    quantized copy. `dtype` is a DataType (INT8, INT4, INT2, FP16, FP32) or ember.int8 /
    ember.float16 / ember.float32."""
    data_type = dtype if isinstance(dtype, DataType) else _DTYPE_TO_DATA_TYPE.get(dtype)
    if data_type is None:
        raise ValueError(f"cannot quantize embeddings to {dtype}; give a DataType (INT8, INT4, INT2, FP16, FP32)")
    if isinstance(module, embedding_modules.EmbeddingBagCollection):
        return EmbeddingBagCollection.from_float(module, data_type, output_dtype, per_table_weight_dtype)
    if not inplace:
        import copy

        module = copy.deepcopy(module)
    for name, child in list(module.named_children()):
        setattr(module, name, quantize_embeddings(child, data_type, True, output_dtype, per_table_weight_dtype))
    return module
