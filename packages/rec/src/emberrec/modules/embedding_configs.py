"""Table configurations (TorchRec's ``torchrec.modules.embedding_configs``).

A config names one embedding table, its shape, the features looked up in it, its storage type and
(for bags) how a bag's rows are pooled. The collections in ``embedding_modules`` build their
tables from these.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import ember
from ember.tbe import PoolingMode, SparseType


@enum.unique
class PoolingType(enum.Enum):
    SUM = "SUM"
    MEAN = "MEAN"
    NONE = "NONE"


@enum.unique
class DataType(enum.Enum):
    """The storage type of a table's rows."""

    FP32 = "FP32"
    FP16 = "FP16"
    BF16 = "BF16"
    INT64 = "INT64"
    INT32 = "INT32"
    INT8 = "INT8"
    UINT8 = "UINT8"
    INT4 = "INT4"
    INT2 = "INT2"
    NFP8 = "NFP8"

    def __str__(self) -> str:
        return self.value


@dataclass
class BaseEmbeddingConfig:
    num_embeddings: int
    embedding_dim: int
    name: str = ""
    data_type: DataType = DataType.FP32
    feature_names: list[str] = field(default_factory=list)
    weight_init_max: float | None = None
    weight_init_min: float | None = None
    init_fn: Callable[[ember.Tensor], ember.Tensor | None] | None = None
    need_pos: bool = False

    def __post_init__(self) -> None:
        for attr in ("num_embeddings", "embedding_dim"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"table {self.name!r}: {attr} must be a positive int, got {value!r}")
        if not isinstance(self.data_type, DataType):
            raise TypeError(f"table {self.name!r}: data_type must be a DataType, got {self.data_type!r}")
        self.feature_names = list(self.feature_names) or ([self.name] if self.name else [])
        if len(set(self.feature_names)) != len(self.feature_names):
            raise ValueError(f"table {self.name!r}: feature_names repeat a name: {self.feature_names}")

    def get_weight_init_max(self) -> float:
        return math.sqrt(1 / self.num_embeddings) if self.weight_init_max is None else self.weight_init_max

    def get_weight_init_min(self) -> float:
        return -math.sqrt(1 / self.num_embeddings) if self.weight_init_min is None else self.weight_init_min

    def num_features(self) -> int:
        return len(self.feature_names)


@dataclass
class EmbeddingBagConfig(BaseEmbeddingConfig):
    """A table whose bags are pooled (SUM by default) into one row per sample and feature."""

    pooling: PoolingType = PoolingType.SUM

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pooling not in (PoolingType.SUM, PoolingType.MEAN):
            raise ValueError(f"table {self.name!r}: a bag is pooled by SUM or MEAN, got {self.pooling!r}")


@dataclass
class EmbeddingConfig(BaseEmbeddingConfig):
    """A table looked up without pooling: one row per index (sequence features)."""


_POOLING_MODES = {PoolingType.SUM: PoolingMode.SUM, PoolingType.MEAN: PoolingMode.MEAN, PoolingType.NONE: PoolingMode.NONE}
_SPARSE_TYPES = {
    DataType.FP32: SparseType.FP32,
    DataType.FP16: SparseType.FP16,
    DataType.INT8: SparseType.INT8,
    DataType.INT4: SparseType.INT4,
    DataType.INT2: SparseType.INT2,
}
_DTYPES = {
    DataType.FP32: ember.float32,
    DataType.FP16: ember.float16,
    DataType.BF16: ember.bfloat16,
    DataType.INT64: ember.int64,
    DataType.INT32: ember.int32,
    DataType.INT8: ember.int8,
    DataType.UINT8: ember.uint8,
}


def pooling_type_to_str(pooling: PoolingType) -> str:
    return {PoolingType.SUM: "sum", PoolingType.MEAN: "mean"}[pooling]


def pooling_type_to_pooling_mode(pooling: PoolingType) -> PoolingMode:
    return _POOLING_MODES[pooling]


def data_type_to_sparse_type(data_type: DataType) -> SparseType:
    """The TBE row format of a table's data type; ValueError for a type TBE does not store."""
    try:
        return _SPARSE_TYPES[data_type]
    except KeyError:
        raise ValueError(f"table-batched embeddings do not store {data_type}; use one of "
                         f"{', '.join(str(t) for t in _SPARSE_TYPES)}") from None


def data_type_to_dtype(data_type: DataType) -> ember.dtype:
    try:
        return _DTYPES[data_type]
    except KeyError:
        raise ValueError(f"{data_type} has no ember dtype (it is a packed TBE row format)") from None


def dtype_to_data_type(dtype: ember.dtype) -> DataType:
    for data_type, known in _DTYPES.items():
        if known == dtype:
            return data_type
    raise ValueError(f"no DataType for {dtype}")
