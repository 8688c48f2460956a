"""fbgemm_gpu's table-batched-embedding enums, with its names and values (so FBGEMM code ports by
changing the import). SparseType's int codes are the ones the kernels and the row layouts use."""

from __future__ import annotations

import enum

import ember


class EmbeddingLocation(enum.IntEnum):
    DEVICE = 0
    MANAGED = 1
    MANAGED_CACHING = 2
    HOST = 3
    MTIA = 4


class ComputeDevice(enum.IntEnum):
    CPU = 0
    CUDA = 1
    MTIA = 2


class PoolingMode(enum.IntEnum):
    SUM = 0
    MEAN = 1
    NONE = 2


class BoundsCheckMode(enum.IntEnum):
    """What a lookup does with an index outside its table or an offset outside `indices`
    (Note [bounds check] in native/src/ops/fbgemm/tbe.cpp). FATAL raises IndexError naming the
    table or feature, the bag and the value. WARNING and IGNORE repair the input, WARNING warning
    once per call: each offset is clamped into [previous offset, len(indices)] (offsets[0] to 0)
    and a bad index is left out of its bag (it adds nothing, is not counted by MEAN, gets no
    gradient). NONE is not offered: Ember checks every index, and treats NONE as FATAL. (The op
    ember.ops.fbgemm.bounds_check_indices keeps FBGEMM's own repair: a bad index becomes row 0.)"""

    FATAL = 0
    WARNING = 1
    IGNORE = 2
    NONE = 3


class CacheAlgorithm(enum.Enum):
    LRU = 0
    LFU = 1


class WeightDecayMode(enum.IntEnum):
    NONE = 0
    L2 = 1
    DECOUPLE = 2


class EmbOptimType(enum.Enum):
    SGD = "sgd"
    EXACT_SGD = "exact_sgd"
    LAMB = "lamb"
    ADAM = "adam"
    EXACT_ADAGRAD = "exact_adagrad"
    EXACT_ROWWISE_ADAGRAD = "exact_row_wise_adagrad"
    LARS_SGD = "lars_sgd"
    PARTIAL_ROWWISE_ADAM = "partial_row_wise_adam"
    PARTIAL_ROWWISE_LAMB = "partial_row_wise_lamb"
    ROWWISE_ADAGRAD = "row_wise_adagrad"
    NONE = "none"

    def __str__(self) -> str:
        return self.value


class SparseType(enum.Enum):
    FP32 = "fp32"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    INT2 = "int2"
    BF16 = "bf16"

    def as_int(self) -> int:
        return _SPARSE_CODES[self]

    @staticmethod
    def from_int(code: int) -> SparseType:
        for t, c in _SPARSE_CODES.items():
            if c == code:
                return t
        raise ValueError(f"SparseType.from_int: expected one of {sorted(_SPARSE_CODES.values())}, but got {code}")

    def bit_rate(self) -> int:
        return {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4, "int2": 2}[self.value]

    def is_float(self) -> bool:
        return self in (SparseType.FP32, SparseType.FP16, SparseType.BF16, SparseType.FP8)

    def as_dtype(self):
        """The dtype of a table of this type: the float types' own, uint8 bytes for the rest."""
        return {"fp32": ember.float32, "fp16": ember.float16, "bf16": ember.bfloat16}.get(self.value, ember.uint8)

    @staticmethod
    def from_dtype(dtype) -> SparseType:
        for t in (SparseType.FP32, SparseType.FP16, SparseType.BF16):
            if t.as_dtype() == dtype:
                return t
        if dtype == ember.uint8:
            return SparseType.INT8
        raise ValueError(f"SparseType.from_dtype: expected float32, float16, bfloat16 or uint8, but got {dtype}")

    def __str__(self) -> str:
        return self.value


_SPARSE_CODES = {SparseType.FP32: 0, SparseType.FP16: 1, SparseType.INT8: 2, SparseType.INT4: 3,
                 SparseType.INT2: 4, SparseType.BF16: 5, SparseType.FP8: 6}
