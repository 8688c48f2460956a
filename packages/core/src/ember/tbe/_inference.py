"""fbgemm_gpu's IntNBitTableBatchedEmbeddingBagsCodegen: table-batched embedding bags over
quantized (INT8/INT4/INT2, row-wise fp16 scale and bias at the row's front) or float (FP32, FP16,
BF16, FP8) tables, for inference on the CPU.

The weights live in one uint8 buffer laid out as FBGEMM lays it out (each table's rows padded to
`row_alignment` bytes, each table to 128 bytes), so `split_embedding_weights()` gives the same
per-table (weights, scale_bias) byte views and tables quantized by FBGEMM's
FloatToFusedNBitRowwiseQuantizedSBHalf / FloatToFused8BitRowwiseQuantized load unchanged through
`assign_embedding_weights`. The lookup is the core's
ember.ops.fbgemm.int_nbit_split_embedding_bounds_checked_lookup, which checks every index
against its table's rows and every offset (BoundsCheckMode)."""

from __future__ import annotations

import warnings
from itertools import accumulate

import ember

from ._enums import BoundsCheckMode, CacheAlgorithm, EmbeddingLocation, PoolingMode, SparseType

__all__ = ["IntNBitTableBatchedEmbeddingBagsCodegen", "rounded_row_size_in_bytes", "unpadded_row_size_in_bytes"]

DEFAULT_SCALE_BIAS_SIZE_IN_BYTES = 4
_OUTPUT_TYPES = (SparseType.FP32, SparseType.FP16, SparseType.BF16)


def unpadded_row_size_in_bytes(dim: int, weight_ty: SparseType,
                               scale_bias_size_in_bytes: int = DEFAULT_SCALE_BIAS_SIZE_IN_BYTES) -> int:
    """A row's bytes before padding: 4D (FP32), 2D (FP16, BF16), D (FP8), and for INT8/INT4/INT2 the
    packed codes (ceil(D / (8/bits)) bytes) plus the scale and bias."""
    if weight_ty.is_float():
        return dim * {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}[weight_ty.value]
    per_byte = 8 // weight_ty.bit_rate()
    return (dim + per_byte - 1) // per_byte + scale_bias_size_in_bytes


def rounded_row_size_in_bytes(dim: int, weight_ty: SparseType, row_alignment: int,
                              scale_bias_size_in_bytes: int = DEFAULT_SCALE_BIAS_SIZE_IN_BYTES) -> int:
    r = unpadded_row_size_in_bytes(dim, weight_ty, scale_bias_size_in_bytes)
    return (r + row_alignment - 1) // row_alignment * row_alignment


def _round_up(a: int, b: int) -> int:
    return (a + b - 1) // b * b


def _err(msg: str, cls=ValueError):
    return cls(f"[IntNBitTableBatchedEmbeddingBagsCodegen] {msg}")


class IntNBitTableBatchedEmbeddingBagsCodegen(ember.nn.Module):
    """Table-batched embedding bags over quantized tables (fbgemm_gpu's constructor and defaults).

    `embedding_specs` lists (name, rows, dim, SparseType, EmbeddingLocation) per table;
    `feature_table_map[f]` is feature f's table (default: one feature per table). forward(indices,
    offsets, per_sample_weights=None) takes FBGEMM's feature-major bags: offsets of length T*B+1,
    bag (t, b) = indices[offsets[t*B+b]:offsets[t*B+b+1]], indices local to the feature's table,
    and returns (B, sum of dims) in `output_dtype` (pooling SUM or MEAN) or (len(indices), dim)
    (pooling NONE). Weights must be set (initialize_weights, fill_random_weights,
    assign_embedding_weights or weight_lists) first. Only the CPU and EmbeddingLocation.HOST are
    offered, without caches or index remapping."""

    def __init__(
        self,
        embedding_specs,
        feature_table_map=None,
        index_remapping=None,
        pooling_mode: PoolingMode = PoolingMode.SUM,
        device=None,
        bounds_check_mode: BoundsCheckMode = BoundsCheckMode.WARNING,
        weight_lists=None,
        pruning_hash_load_factor: float = 0.5,
        use_array_for_index_remapping: bool = True,
        output_dtype: SparseType = SparseType.FP16,
        cache_algorithm: CacheAlgorithm = CacheAlgorithm.LRU,
        cache_load_factor: float = 0.2,
        cache_sets: int = 0,
        cache_reserved_memory: float = 0.0,
        enforce_hbm: bool = False,
        record_cache_metrics=None,
        gather_uvm_cache_stats: bool | None = False,
        row_alignment: int | None = None,
        fp8_exponent_bits: int | None = None,
        fp8_exponent_bias: int | None = None,
        cache_assoc: int = 32,
        scale_bias_size_in_bytes: int = DEFAULT_SCALE_BIAS_SIZE_IN_BYTES,
        cacheline_alignment: bool = True,
        uvm_host_mapped: bool = False,
        reverse_qparam: bool = False,
        feature_names_per_table=None,
        indices_dtype=ember.int32,
    ) -> None:
        super().__init__()
        specs = list(embedding_specs)
        if not specs:
            raise _err("expected at least one table in embedding_specs, but got none")
        for i, spec in enumerate(specs):
            if len(spec) != 5:
                raise _err(f"expected embedding_specs[{i}] = (name, rows, dim, SparseType, EmbeddingLocation), but "
                           f"got {spec!r}")
            _, rows, dim, ty, loc = spec
            if not isinstance(ty, SparseType):
                raise _err(f"expected a SparseType in embedding_specs[{i}], but got {ty!r}", TypeError)
            if int(rows) < 0 or int(dim) < 0:
                raise _err(f"expected non-negative rows and dim in embedding_specs[{i}], but got {rows} and {dim}")
            if loc != EmbeddingLocation.HOST:
                raise _err(f"expected EmbeddingLocation.HOST for every table on the CPU, but got {loc!r} for "
                           f"table {i}")
        if index_remapping is not None:
            raise _err("expected index_remapping=None (pruned tables are not offered), but got a remapping",
                       NotImplementedError)
        if device is not None and ember.device(device).type != "cpu":
            raise _err(f"expected the CPU, but got device {device}", NotImplementedError)
        if scale_bias_size_in_bytes != DEFAULT_SCALE_BIAS_SIZE_IN_BYTES:
            raise _err(f"expected scale_bias_size_in_bytes=4 (fp16 scale and bias), but got {scale_bias_size_in_bytes}")
        if reverse_qparam:
            raise _err("expected reverse_qparam=False (scale and bias at the row's front), but got True",
                       NotImplementedError)
        if output_dtype not in _OUTPUT_TYPES:
            raise _err(f"expected output_dtype FP32, FP16 or BF16, but got {output_dtype}")
        pooling_mode = PoolingMode(pooling_mode)
        bounds_check_mode = BoundsCheckMode(bounds_check_mode)
        if row_alignment is None:
            row_alignment = 1
        if int(row_alignment) < 1:
            raise _err(f"expected a positive row_alignment, but got {row_alignment}")

        self.embedding_specs = [(n, int(r), int(d), t, loc) for n, r, d, t, loc in specs]
        self.pooling_mode = pooling_mode
        self.bounds_check_mode_int = int(bounds_check_mode)
        self.output_dtype = output_dtype.as_int()
        self.row_alignment = int(row_alignment)
        self.scale_bias_size_in_bytes = scale_bias_size_in_bytes
        self.reverse_qparam = False
        self.indices_dtype = indices_dtype
        self.feature_names_per_table = feature_names_per_table
        self.feature_names = [s[0] for s in self.embedding_specs]
        self.current_device = ember.device("cpu")
        self.use_cpu = True
        T_ = len(self.embedding_specs)
        self.feature_table_map = list(feature_table_map) if feature_table_map is not None else list(range(T_))
        for f, t in enumerate(self.feature_table_map):
            if not 0 <= t < T_:
                raise _err(f"expected feature_table_map entries in [0, {T_}), but got {t} for feature {f}")
        missing = sorted(set(range(T_)) - set(self.feature_table_map))
        if missing:
            raise _err(f"expected every table to have a feature, but tables {missing} have none")
        rows = [s[1] for s in self.embedding_specs]
        dims = [s[2] for s in self.embedding_specs]
        tys = [s[3] for s in self.embedding_specs]
        if pooling_mode == PoolingMode.NONE and len(set(dims)) > 1:
            raise _err(f"expected one dim for every table with PoolingMode.NONE, but got {sorted(set(dims))}")
        D_offsets = [0, *accumulate(dims[t] for t in self.feature_table_map)]
        self.total_D = D_offsets[-1]

        def max_ty_D(ty: SparseType) -> int:
            return max((d for d, t in zip(dims, tys, strict=True) if t == ty), default=0)

        self.max_int2_D = max_ty_D(SparseType.INT2)
        self.max_int4_D = max_ty_D(SparseType.INT4)
        self.max_int8_D = max_ty_D(SparseType.INT8)
        self.max_float8_D = max_ty_D(SparseType.FP8)
        self.max_float16_D = max_ty_D(SparseType.FP16)
        self.max_float32_D = max_ty_D(SparseType.FP32)
        if SparseType.FP8 in tys:
            self.fp8_exponent_bits = 4 if fp8_exponent_bits is None else int(fp8_exponent_bits)
            self.fp8_exponent_bias = 7 if fp8_exponent_bias is None else int(fp8_exponent_bias)
        else:
            self.fp8_exponent_bits = -1
            self.fp8_exponent_bias = -1

        # FBGEMM's layout: tables one after another, each padded to a 128-byte cache line
        physical_offsets, size = [], 0
        for _, r, d, t, _ in self.embedding_specs:
            physical_offsets.append(size)
            nbytes = r * rounded_row_size_in_bytes(d, t, self.row_alignment, scale_bias_size_in_bytes)
            size += _round_up(nbytes, 128) if cacheline_alignment else nbytes
        self.weights_physical_offsets = physical_offsets
        self.weights_physical_placements = [int(EmbeddingLocation.HOST)] * T_
        self.host_size, self.dev_size, self.uvm_size = size, 0, 0

        fmap = self.feature_table_map
        self.register_buffer("D_offsets", ember.tensor(D_offsets, dtype=ember.int32))
        self.register_buffer("rows_per_table", ember.tensor([rows[t] for t in fmap], dtype=ember.int64))
        self.register_buffer("weights_tys", ember.tensor([tys[t].as_int() for t in fmap], dtype=ember.uint8))
        self.register_buffer("weights_offsets", ember.tensor([physical_offsets[t] for t in fmap], dtype=ember.int64))
        self.register_buffer("weights_placements",
                             ember.tensor([int(EmbeddingLocation.HOST)] * len(fmap), dtype=ember.int32))
        self.register_buffer("bounds_check_warning", ember.zeros(1, dtype=ember.int64))
        self.register_buffer("weights_host", ember.zeros(0, dtype=ember.uint8))
        self.weights_dev = ember.zeros(0, dtype=ember.uint8)
        self.weights_uvm = ember.zeros(0, dtype=ember.uint8)
        self.weight_initialized = False
        if weight_lists:
            self.initialize_weights()
            self.assign_embedding_weights(weight_lists)

    def forward(self, indices, offsets, per_sample_weights=None):
        if not self.weight_initialized:
            raise _err("expected weights to be set (initialize_weights, fill_random_weights or "
                       "assign_embedding_weights) before forward, but they are not", RuntimeError)
        before = int(self.bounds_check_warning[0])
        out = ember.ops.fbgemm.int_nbit_split_embedding_bounds_checked_lookup(
            self.weights_host, self.weights_offsets, self.weights_tys, self.D_offsets, self.total_D,
            self.rows_per_table, indices, offsets, int(self.pooling_mode), per_sample_weights, self.output_dtype,
            self.row_alignment, self.fp8_exponent_bits, self.fp8_exponent_bias, self.bounds_check_mode_int,
            self.bounds_check_warning)
        if self.bounds_check_mode_int == int(BoundsCheckMode.WARNING):
            repaired = int(self.bounds_check_warning[0]) - before
            if repaired:
                warnings.warn(f"IntNBitTableBatchedEmbeddingBagsCodegen: {repaired} out-of-range indices or offsets "
                              f"were repaired (BoundsCheckMode.WARNING)", stacklevel=2)
        return out

    def initialize_weights(self) -> None:
        if not self.weight_initialized:
            self.weights_host = ember.zeros(self.host_size, dtype=ember.uint8)
            self.weight_initialized = True

    def split_embedding_weights(self, split_scale_shifts: bool = True):
        """Per table, (weights, scale_bias) uint8 views of the buffer: weights (rows, bytes of codes
        or values), scale_bias (rows, 4) for INT8/INT4/INT2 tables and None for float tables; with
        split_scale_shifts=False, (whole padded rows, None)."""
        if not self.weight_initialized:
            raise _err("expected weights to be initialized, but they are not", RuntimeError)
        out = []
        for t, (_, rows, dim, ty, _) in enumerate(self.embedding_specs):
            offset = self.weights_physical_offsets[t]
            width = rounded_row_size_in_bytes(dim, ty, self.row_alignment, self.scale_bias_size_in_bytes)
            w = self.weights_host.detach()[offset:offset + rows * width].view(rows, width)
            if not split_scale_shifts:
                out.append((w, None))
                continue
            w = w[:, :unpadded_row_size_in_bytes(dim, ty, self.scale_bias_size_in_bytes)]
            if ty.is_float():
                out.append((w, None))
            else:
                sb = self.scale_bias_size_in_bytes
                out.append((w[:, sb:], w[:, :sb]))
        return out

    def fill_random_weights(self) -> None:
        """Random bytes in [0, 255) in every table's weights, table by table (scale and bias stay as
        they are), as FBGEMM's fill_random_weights does."""
        self.initialize_weights()
        for w, _ in self.split_embedding_weights():
            if w.numel():
                w.copy_(ember.randint(0, 255, tuple(w.shape), dtype=ember.uint8))

    def assign_embedding_weights(self, q_weight_list) -> None:
        """Copies (weights, scale_bias) pairs, one per table, shaped as split_embedding_weights()'s,
        into the tables (scale_bias None for float tables)."""
        self.initialize_weights()
        dests = self.split_embedding_weights()
        q_weight_list = list(q_weight_list)
        if len(q_weight_list) != len(dests):
            raise _err(f"expected {len(dests)} (weights, scale_bias) pairs, one per table, but got "
                       f"{len(q_weight_list)}")
        for t, ((dw, dsb), pair) in enumerate(zip(dests, q_weight_list, strict=True)):
            w, sb = pair[0], pair[1] if len(pair) > 1 else None
            if tuple(w.shape) != tuple(dw.shape):
                raise _err(f"expected table {t}'s weights of shape {tuple(dw.shape)}, but got {tuple(w.shape)}")
            dw.copy_(w)
            if (sb is None) != (dsb is None):
                raise _err(f"expected table {t}'s scale_bias to be {'None' if dsb is None else 'a tensor'}, but got "
                           f"{'None' if sb is None else 'a tensor'}")
            if sb is not None:
                if tuple(sb.shape) != tuple(dsb.shape):
                    raise _err(f"expected table {t}'s scale_bias of shape {tuple(dsb.shape)}, but got "
                               f"{tuple(sb.shape)}")
                dsb.copy_(sb)
