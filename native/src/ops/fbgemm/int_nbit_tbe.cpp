// FBGEMM's inference TBE lookup (ember.ops.fbgemm.int_nbit_split_embedding_codegen_lookup_function)
// and Ember's bounds-checked variant that ember.tbe.IntNBitTableBatchedEmbeddingBagsCodegen calls.
//
// Layout (fbgemm_gpu's): all tables live in one uint8 buffer, feature t's table at byte
// weights_offsets[t], rows of row_bytes = round_up(unpadded, row_alignment) bytes where unpadded
// is 4D (FP32), 2D (FP16, BF16), D (FP8), D + 4, ceil(D/2) + 4, ceil(D/4) + 4 (INT8, INT4, INT2:
// fp16 scale and bias at the row's front). Offsets hold T*B+1 entries, feature-major:
// bag (t, b) = indices[offsets[t*B + b] : offsets[t*B + b + 1]].
//
// Note [inference bounds check]: FBGEMM's op reads no row count; like it, the op derives each
// table's rows from the bytes up to the next table (or the buffer's end), so no index can reach
// outside the buffer, and raises IndexError for an index or offset out of range. The checked
// variant takes the real rows_per_table and a BoundsCheckMode: FATAL (and NONE) raise; WARNING
// and IGNORE leave a bad index out of its bag (not counted by MEAN) and clamp each offset into
// [previous offset, len(indices)] (offsets[0] to 0), counting the repairs into `warning`.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ember/writable.h"
#include "ops/fbgemm/int_list.h"
#include "ops/fbgemm/quantize_kernels.h"

namespace ember {

DispatchStub<IntNBitTbeFn> int_nbit_tbe_stub("int_nbit_split_embedding_codegen_lookup_function");

namespace {

constexpr const char* kOp = "int_nbit_split_embedding_codegen_lookup_function";
constexpr const char* kCheckedOp = "int_nbit_split_embedding_bounds_checked_lookup";

int64_t unpadded_row_bytes(TbeWeightType ty, int64_t D) {
  switch (ty) {
    case TbeWeightType::FP32: return 4 * D;
    case TbeWeightType::FP16:
    case TbeWeightType::BF16: return 2 * D;
    case TbeWeightType::FP8: return D;
    case TbeWeightType::INT8: return D + 4;
    case TbeWeightType::INT4: return (D + 1) / 2 + 4;
    case TbeWeightType::INT2: return (D + 3) / 4 + 4;
  }
  return 0;
}

struct Lookup {
  const char* op;
  Tensor weights;  // uint8, 1-D, contiguous
  std::vector<int64_t> weights_offsets, tys, D_offsets;
  int64_t total_D;
  Tensor indices, offsets;
  int64_t pooling_mode;
  std::optional<Tensor> indice_weights;
  int64_t output_dtype, row_alignment, fp8_bits, fp8_bias;
};

Tensor run_lookup(const Lookup& L, const std::vector<int64_t>* rows_per_table, int64_t bounds_mode,
                  int64_t* repairs) {
  const char* op = L.op;
  const int64_t T = static_cast<int64_t>(L.weights_offsets.size());
  EMBER_CHECK(T >= 1, ValueError, "[", op, "] expected at least one feature in weights_offsets, but got 0");
  EMBER_CHECK(static_cast<int64_t>(L.tys.size()) == T, ValueError, "[", op,
              "] expected weights_tys of length ", T, " (one per feature), but got ", L.tys.size());
  EMBER_CHECK(static_cast<int64_t>(L.D_offsets.size()) == T + 1, ValueError, "[", op,
              "] expected D_offsets of length ", T + 1, ", but got ", L.D_offsets.size());
  EMBER_CHECK(L.D_offsets[0] == 0, ValueError, "[", op, "] expected D_offsets[0] == 0, but got ",
              L.D_offsets[0]);
  EMBER_CHECK(L.D_offsets[T] == L.total_D, ValueError, "[", op,
              "] expected total_D == D_offsets[-1] = ", L.D_offsets[T], ", but got ", L.total_D);
  EMBER_CHECK(L.row_alignment >= 1, ValueError, "[", op, "] expected a positive row_alignment, but got ",
              L.row_alignment);
  EMBER_CHECK(L.pooling_mode >= 0 && L.pooling_mode <= 2, ValueError, "[", op,
              "] expected pooling_mode 0 (SUM), 1 (MEAN) or 2 (NONE), but got ", L.pooling_mode);
  DType out_dt;
  if (L.output_dtype == 0) {
    out_dt = DType::Float32;
  } else if (L.output_dtype == 1) {
    out_dt = DType::Float16;
  } else if (L.output_dtype == 5) {
    out_dt = DType::BFloat16;
  } else {
    throw ValueError(std::string("[") + op +
                     "] expected output_dtype 0 (FP32), 1 (FP16) or 5 (BF16), but got " +
                     std::to_string(L.output_dtype));
  }

  // indices and offsets
  const Tensor& idx = L.indices;
  EMBER_CHECK(idx.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              idx.device().str());
  EMBER_CHECK(idx.dtype() == DType::Int32 || idx.dtype() == DType::Int64, TypeError, "[", op,
              "] expected indices of dtype int32 or int64, but got ", dtype_name(idx.dtype()));
  EMBER_CHECK(idx.dim() == 1, ValueError, "[", op, "] expected 1-D indices, but got ", idx.dim(), "-D");
  EMBER_CHECK(L.offsets.dtype() == DType::Int32 || L.offsets.dtype() == DType::Int64, TypeError, "[", op,
              "] expected offsets of dtype int32 or int64, but got ", dtype_name(L.offsets.dtype()));
  std::vector<int64_t> offsets = read_int_list(op, "offsets", L.offsets);
  const int64_t n_off = static_cast<int64_t>(offsets.size());
  EMBER_CHECK(n_off >= 1 && (n_off - 1) % T == 0, ValueError, "[", op,
              "] expected offsets of length T*B+1 with T = ", T, " features, but got ", n_off);
  const int64_t B = (n_off - 1) / T, N = idx.numel();
  if (bounds_mode == 1 || bounds_mode == 2) {
    for (int64_t i = 0; i < n_off; ++i) {
      const int64_t lo = i == 0 ? 0 : offsets[i - 1], hi = i == 0 ? 0 : N;
      const int64_t v = std::min(std::max(offsets[i], lo), hi);
      if (v != offsets[i]) ++*repairs;
      offsets[i] = v;
    }
  } else {
    for (int64_t i = 0; i < n_off; ++i) {
      const int64_t v = offsets[i];
      const bool ok = i == 0 ? v == 0 : (v >= offsets[i - 1] && v <= N && (i + 1 < n_off || v == N));
      if (!ok) {
        const int64_t bag = std::min(i, n_off - 2), t = bag / std::max<int64_t>(B, 1),
                      b = bag % std::max<int64_t>(B, 1);
        throw IndexError(std::string("[") + op +
                         "] expected offsets non-decreasing from 0 to len(indices) = " + std::to_string(N) +
                         ", but got offsets[" + std::to_string(i) + "] = " + std::to_string(v) +
                         (i > 0 ? " after " + std::to_string(offsets[i - 1]) : std::string()) + " (table " +
                         std::to_string(t) + ", bag " + std::to_string(b) + ")");
      }
    }
  }
  const float* psw = nullptr;
  Tensor w_contig;
  if (L.indice_weights && L.indice_weights->defined()) {
    const Tensor& w = *L.indice_weights;
    EMBER_CHECK(w.dtype() == DType::Float32, TypeError, "[", op,
                "] expected indice_weights of dtype float32, but got ", dtype_name(w.dtype()));
    EMBER_CHECK(w.dim() == 1 && w.numel() == N, ValueError, "[", op,
                "] expected 1-D indice_weights with one weight per index (", N, "), but got shape ",
                w.dim() == 1 ? std::to_string(w.numel()) : std::to_string(w.dim()) + "-D");
    EMBER_CHECK(L.pooling_mode != 2, ValueError, "[", op,
                "] expected no indice_weights with pooling_mode 2 (NONE), but got a tensor");
    w_contig = w.contiguous();
    psw = w_contig.data<float>();
  }

  // the features' tables
  const int64_t nbytes = L.weights.numel();
  const uint8_t* base = L.weights.data<uint8_t>();
  IntNBitTbeArgs args;
  args.op = op;
  args.features.resize(static_cast<size_t>(T));
  bool has_fp8 = false;
  for (int64_t t = 0; t < T; ++t) {
    TbeFeature& f = args.features[t];
    const int64_t ty = L.tys[t];
    EMBER_CHECK(
        ty >= 0 && ty <= 6, ValueError, "[", op,
        "] expected weights_tys of SparseType codes FP32 0, FP16 1, INT8 2, INT4 3, INT2 4, BF16 5 or FP8 6, "
        "but got ",
        ty, " for feature ", t);
    f.ty = static_cast<TbeWeightType>(ty);
    has_fp8 = has_fp8 || f.ty == TbeWeightType::FP8;
    f.D_start = L.D_offsets[t];
    f.D = L.D_offsets[t + 1] - L.D_offsets[t];
    EMBER_CHECK(f.D >= 0, ValueError, "[", op, "] expected non-decreasing D_offsets, but got D_offsets[",
                t + 1, "] = ", L.D_offsets[t + 1], " < ", L.D_offsets[t]);
    EMBER_CHECK(f.D <= (int64_t(1) << 40), ValueError, "[", op,
                "] expected embedding dims below 2^40, but got ", f.D, " for feature ", t);
    const int64_t unpadded = unpadded_row_bytes(f.ty, f.D);
    f.row_bytes = (unpadded + L.row_alignment - 1) / L.row_alignment * L.row_alignment;
    const int64_t off = L.weights_offsets[t];
    EMBER_CHECK(off >= 0 && off <= nbytes, ValueError, "[", op, "] expected weights_offsets[", t, "] in [0, ",
                nbytes, "] (the weight buffer's bytes), but got ", off);
    f.base = base + off;
    if (rows_per_table) {
      f.rows = (*rows_per_table)[t];
      EMBER_CHECK(f.rows >= 0 && (f.row_bytes == 0 || f.rows <= (nbytes - off) / f.row_bytes), ValueError,
                  "[", op, "] expected table ", t, "'s ", f.rows, " rows of ", f.row_bytes,
                  " bytes to fit in the weight buffer after weights_offsets[", t, "] = ", off, " (", nbytes,
                  " bytes), but they do not");
    } else {
      int64_t end = nbytes;  // the next table's start, or the buffer's end
      for (int64_t u = 0; u < T; ++u)
        if (L.weights_offsets[u] > off) end = std::min(end, L.weights_offsets[u]);
      f.rows = f.row_bytes == 0 ? std::numeric_limits<int64_t>::max() : (end - off) / f.row_bytes;
    }
  }
  if (has_fp8) {
    EMBER_CHECK(L.fp8_bits >= 1 && L.fp8_bits <= 7, ValueError, "[", op,
                "] expected fp8_exponent_bits in [1, 7] for an FP8 table, but got ", L.fp8_bits);
    EMBER_CHECK(L.fp8_bias >= 0 && L.fp8_bias <= 127, ValueError, "[", op,
                "] expected fp8_exponent_bias in [0, 127] for an FP8 table, but got ", L.fp8_bias);
  }
  if (L.pooling_mode == 2) {
    for (int64_t t = 1; t < T; ++t)
      EMBER_CHECK(args.features[t].D == args.features[0].D, ValueError, "[", op,
                  "] expected one embedding dim for every feature with pooling_mode 2 (NONE), but got ",
                  args.features[0].D, " and ", args.features[t].D);
  }

  Tensor out;
  if (L.pooling_mode == 2) {
    out = empty({N, args.features[0].D}, out_dt);
    if (out.numel() > 0)
      std::memset(out.data_ptr(), 0, static_cast<size_t>(out.numel() * out.element_size()));
  } else {
    out = empty({B, L.total_D}, out_dt);
  }
  std::atomic<int64_t> skipped{0};
  args.B = B;
  args.total_D = L.total_D;
  args.indices = idx.contiguous();
  args.offsets = offsets.data();
  args.weights = psw;
  args.pooling = static_cast<int>(L.pooling_mode);
  args.skip_bad_indices = bounds_mode == 1 || bounds_mode == 2;
  args.skipped = &skipped;
  args.fp8_exponent_bits = static_cast<int>(L.fp8_bits);
  args.fp8_exponent_bias = static_cast<int>(L.fp8_bias);
  args.out = out;
  int_nbit_tbe_stub.get(DeviceType::CPU)(args);
  *repairs += skipped.load();
  return out;
}

Tensor weight_buffer(const char* op, const Tensor& w) {
  EMBER_CHECK(w.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              w.device().str());
  EMBER_CHECK(w.dtype() == DType::UInt8, TypeError, "[", op,
              "] expected dev_weights of dtype uint8, but got ", dtype_name(w.dtype()));
  EMBER_CHECK(w.dim() == 1, ValueError, "[", op, "] expected 1-D dev_weights, but got ", w.dim(), "-D");
  return w.contiguous();
}

}  // namespace

Tensor int_nbit_split_embedding_codegen_lookup_function(
    const Tensor& dev_weights, const Tensor& uvm_weights, const Tensor& weights_placements,
    const Tensor& weights_offsets, const Tensor& weights_tys, const Tensor& D_offsets, int64_t total_D,
    int64_t max_int2_D, int64_t max_int4_D, int64_t max_int8_D, int64_t max_float16_D, int64_t max_float32_D,
    const Tensor& indices, const Tensor& offsets, int64_t pooling_mode,
    const std::optional<Tensor>& indice_weights, int64_t output_dtype,
    const std::optional<Tensor>& lxu_cache_weights, const std::optional<Tensor>& lxu_cache_locations,
    std::optional<int64_t> row_alignment, std::optional<int64_t> max_float8_D,
    std::optional<int64_t> fp8_exponent_bits, std::optional<int64_t> fp8_exponent_bias) {
  (void)weights_placements;  // every table is on the host
  (void)max_int2_D, (void)max_int4_D, (void)max_int8_D, (void)max_float16_D, (void)max_float32_D,
      (void)max_float8_D;
  (void)lxu_cache_locations;
  EMBER_CHECK(!lxu_cache_weights || !lxu_cache_weights->defined() || lxu_cache_weights->numel() == 0,
              NotImplementedError, "[", kOp,
              "] expected no lxu_cache_weights (there is no cache on the CPU), but got ",
              lxu_cache_weights->numel(), " elements");
  Lookup L;
  L.op = kOp;
  L.weights =
      weight_buffer(kOp, dev_weights.numel() > 0 || uvm_weights.numel() == 0 ? dev_weights : uvm_weights);
  L.weights_offsets = read_int_list(kOp, "weights_offsets", weights_offsets);
  L.tys = read_int_list(kOp, "weights_tys", weights_tys, /*allow_uint8=*/true);
  L.D_offsets = read_int_list(kOp, "D_offsets", D_offsets);
  L.total_D = total_D;
  L.indices = indices;
  L.offsets = offsets;
  L.pooling_mode = pooling_mode;
  L.indice_weights = indice_weights;
  L.output_dtype = output_dtype;
  L.row_alignment = row_alignment.value_or(1);
  L.fp8_bits = fp8_exponent_bits.value_or(-1);
  L.fp8_bias = fp8_exponent_bias.value_or(-1);
  int64_t repairs = 0;
  return run_lookup(L, nullptr, 0, &repairs);
}

Tensor int_nbit_split_embedding_bounds_checked_lookup(
    const Tensor& dev_weights, const Tensor& weights_offsets, const Tensor& weights_tys,
    const Tensor& D_offsets, int64_t total_D, const Tensor& rows_per_table, const Tensor& indices,
    const Tensor& offsets, int64_t pooling_mode, const std::optional<Tensor>& indice_weights,
    int64_t output_dtype, int64_t row_alignment, int64_t fp8_exponent_bits, int64_t fp8_exponent_bias,
    int64_t bounds_check_mode, const Tensor& warning) {
  EMBER_CHECK(bounds_check_mode >= 0 && bounds_check_mode <= 3, ValueError, "[", kCheckedOp,
              "] expected bounds_check_mode 0 (FATAL), 1 (WARNING), 2 (IGNORE) or 3 (NONE), but got ",
              bounds_check_mode);
  EMBER_CHECK(warning.dtype() == DType::Int64 && warning.numel() == 1 && warning.is_contiguous(), TypeError,
              "[", kCheckedOp, "] expected warning to be a one-element contiguous int64 tensor, but got ",
              dtype_name(warning.dtype()), " with ", warning.numel(), " elements");
  check_writable(warning);  // the repair count is written in place (Note [read-only storage])
  Lookup L;
  L.op = kCheckedOp;
  L.weights = weight_buffer(kCheckedOp, dev_weights);
  L.weights_offsets = read_int_list(kCheckedOp, "weights_offsets", weights_offsets);
  L.tys = read_int_list(kCheckedOp, "weights_tys", weights_tys, /*allow_uint8=*/true);
  L.D_offsets = read_int_list(kCheckedOp, "D_offsets", D_offsets);
  const std::vector<int64_t> rows = read_int_list(kCheckedOp, "rows_per_table", rows_per_table);
  EMBER_CHECK(rows.size() == L.weights_offsets.size(), ValueError, "[", kCheckedOp,
              "] expected rows_per_table of length ", L.weights_offsets.size(),
              " (one per feature), but got ", rows.size());
  L.total_D = total_D;
  L.indices = indices;
  L.offsets = offsets;
  L.pooling_mode = pooling_mode;
  L.indice_weights = indice_weights;
  L.output_dtype = output_dtype;
  L.row_alignment = row_alignment;
  L.fp8_bits = fp8_exponent_bits;
  L.fp8_bias = fp8_exponent_bias;
  int64_t repairs = 0;
  // NONE is treated as FATAL: every index is checked.
  Tensor out = run_lookup(L, &rows, bounds_check_mode == 3 ? 0 : bounds_check_mode, &repairs);
  warning.data<int64_t>()[0] += repairs;
  return out;
}

}  // namespace ember
