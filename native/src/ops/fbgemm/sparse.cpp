// FBGEMM's sparse-feature helpers (ember.ops.fbgemm.*): offsets from lengths, ranges within
// segments, permuting and bucketizing (table, sample)-major sparse features. Index bookkeeping
// done once per batch, so plain loops over int32/int64 data; every length and offset is checked
// before it is used to address memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ember/parallel.h"
#include "ops/dims.h"

namespace ember {

namespace {

void check_index_tensor(const char* op, const char* name, const Tensor& t) {
  EMBER_CHECK(t.dtype() == DType::Int32 || t.dtype() == DType::Int64, TypeError, "[", op, "] expected ", name,
              " of dtype int32 or int64, but got ", dtype_name(t.dtype()));
  EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              t.device().str());
}

template <typename I>
void complete_cumsum(const I* in, I* out, int64_t n) {
  // Accumulated in int64 so an overflow of the result type is caught, not wrapped.
  int64_t acc = 0;
  out[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc += static_cast<int64_t>(in[i]);
    EMBER_CHECK(acc >= std::numeric_limits<I>::min() && acc <= std::numeric_limits<I>::max(), ValueError,
                "[asynchronous_complete_cumsum] expected the running sum to fit in the input's dtype, but it "
                "reached ",
                acc, " at position ", i);
    out[i + 1] = static_cast<I>(acc);
  }
}

void check_cpu(const char* op, const char* name, const Tensor& t) {
  EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              name, " on ", t.device().str());
}

void check_dim(const char* op, const char* name, const Tensor& t, int64_t dim) {
  EMBER_CHECK(t.dim() == dim, ValueError, "[", op, "] expected ", dim, "-D ", name, ", but got shape ",
              dims::str(t.sizes()));
}

// Optional float weights: 1-D, CPU, a floating dtype, one per value.
Tensor checked_weights(const char* op, const Tensor& w, int64_t n, const char* per) {
  check_cpu(op, "weights", w);
  EMBER_CHECK(is_floating_point(w.dtype()), TypeError, "[", op,
              "] expected weights of a floating dtype, but got ", dtype_name(w.dtype()));
  check_dim(op, "weights", w, 1);
  EMBER_CHECK(w.numel() == n, ValueError, "[", op, "] expected one weight per entry of ", per, " (", n,
              "), but got ", w.numel());
  return w.contiguous();
}

std::string position(int64_t flat, int64_t cols) {
  if (cols == 0) return std::to_string(flat);
  return "[" + std::to_string(flat / cols) + ", " + std::to_string(flat % cols) + "]";
}

// Exclusive prefix sums (n + 1 entries, int64) of n lengths, checking that every length is
// non-negative and that their running sum stays within `limit` (the entries they address).
// cols > 0 names 2-D positions in messages.
template <typename L>
std::vector<int64_t> lengths_to_offsets(const char* op, const L* lengths, int64_t n, int64_t cols,
                                        int64_t limit, const char* limit_name) {
  std::vector<int64_t> offsets(static_cast<size_t>(n) + 1);
  int64_t acc = 0;
  offsets[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = static_cast<int64_t>(lengths[i]);
    EMBER_CHECK(len >= 0, ValueError, "[", op, "] expected non-negative lengths, but got ", len,
                " at position ", position(i, cols));
    // compared before adding, so the sum cannot overflow
    EMBER_CHECK(len <= limit - acc, ValueError, "[", op, "] expected the lengths to sum to at most ",
                limit_name, " (", limit, "), but they reach ", acc, " + ", len, " at position ",
                position(i, cols));
    acc += len;
    offsets[static_cast<size_t>(i) + 1] = acc;
  }
  return offsets;
}

std::vector<int64_t> offsets_of(const char* op, const Tensor& lengths, int64_t cols, int64_t limit,
                                const char* limit_name) {
  if (lengths.dtype() == DType::Int32)
    return lengths_to_offsets(op, lengths.data<int32_t>(), lengths.numel(), cols, limit, limit_name);
  return lengths_to_offsets(op, lengths.data<int64_t>(), lengths.numel(), cols, limit, limit_name);
}

template <typename I>
std::vector<int64_t> checked_permute(const char* op, const I* p, int64_t n, int64_t rows) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = static_cast<int64_t>(p[i]);
    // unsigned comparison: a negative entry is as out of range as one past the end
    EMBER_CHECK(static_cast<uint64_t>(k) < static_cast<uint64_t>(rows), IndexError, "[", op,
                "] expected every permute entry in [0, ", rows, "), but got ", k, " at position ", i);
    out[static_cast<size_t>(i)] = k;
  }
  return out;
}

// Copies block perm[i] of src (elements [src_off[b], src_off[b + 1])) to [dst_off[i], dst_off[i + 1])
// of dst, for every i; bytewise, so any dtype. Chunks of about 64 KiB over parallel_for.
void gather_blocks(const Tensor& src, Tensor& dst, const std::vector<int64_t>& perm,
                   const std::vector<int64_t>& src_off, const std::vector<int64_t>& dst_off) {
  const int64_t n = static_cast<int64_t>(perm.size());
  const int64_t item = src.element_size();
  const int64_t bytes = dst.numel() * item;
  if (n == 0 || bytes == 0) return;
  const auto* in = static_cast<const char*>(src.data_ptr());
  auto* out = static_cast<char*>(dst.data_ptr());
  const int64_t grain = std::max<int64_t>(1, n * (int64_t(1) << 16) / bytes);
  parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = perm[static_cast<size_t>(i)];
      const int64_t len = src_off[static_cast<size_t>(b) + 1] - src_off[static_cast<size_t>(b)];
      if (len > 0)
        std::memcpy(out + dst_off[static_cast<size_t>(i)] * item, in + src_off[static_cast<size_t>(b)] * item,
                    static_cast<size_t>(len * item));
    }
  });
}

// permute_1D_sparse_data and permute_2D_sparse_data: lengths (rows,) or (rows, cols); each output
// row i is input row permute[i], its lengths and its block of values (and weights).
std::tuple<Tensor, Tensor, std::optional<Tensor>> permute_sparse(
    const char* op, int64_t lengths_dim, const Tensor& permute, const Tensor& lengths, const Tensor& values,
    const std::optional<Tensor>& weights, std::optional<int64_t> permuted_lengths_sum) {
  check_index_tensor(op, "permute", permute);
  check_index_tensor(op, "lengths", lengths);
  check_cpu(op, "values", values);
  check_dim(op, "permute", permute, 1);
  check_dim(op, "lengths", lengths, lengths_dim);
  check_dim(op, "values", values, 1);
  const int64_t rows = lengths.size(0);
  const int64_t cols = lengths_dim == 2 ? lengths.size(1) : 1;
  const Tensor w = weights.has_value() ? checked_weights(op, *weights, values.numel(), "values") : Tensor();
  const Tensor perm_t = permute.contiguous();
  const Tensor lens = lengths.contiguous();
  const Tensor vals = values.contiguous();
  const std::vector<int64_t> perm = perm_t.dtype() == DType::Int32
                                        ? checked_permute(op, perm_t.data<int32_t>(), perm_t.numel(), rows)
                                        : checked_permute(op, perm_t.data<int64_t>(), perm_t.numel(), rows);
  const std::vector<int64_t> seg =
      offsets_of(op, lens, lengths_dim == 2 ? cols : 0, vals.numel(), "len(values)");
  // offsets of whole rows, in the input and in the output
  std::vector<int64_t> row_off(static_cast<size_t>(rows) + 1);
  for (int64_t r = 0; r <= rows; ++r) row_off[static_cast<size_t>(r)] = seg[static_cast<size_t>(r * cols)];
  const int64_t n = static_cast<int64_t>(perm.size());
  std::vector<int64_t> out_off(static_cast<size_t>(n) + 1);
  out_off[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = perm[static_cast<size_t>(i)];
    const int64_t len = row_off[static_cast<size_t>(b) + 1] - row_off[static_cast<size_t>(b)];
    EMBER_CHECK(
        len <= std::numeric_limits<int64_t>::max() - out_off[static_cast<size_t>(i)], ValueError, "[", op,
        "] expected the permuted lengths to sum to at most 2^63 - 1, but they overflow at position ", i);
    out_off[static_cast<size_t>(i) + 1] = out_off[static_cast<size_t>(i)] + len;
  }
  const int64_t total = out_off[static_cast<size_t>(n)];
  if (permuted_lengths_sum.has_value())
    EMBER_CHECK(*permuted_lengths_sum == total, ValueError, "[", op,
                "] expected permuted_lengths_sum to equal the sum of the permuted lengths (", total,
                "), but got ", *permuted_lengths_sum);

  Tensor out_lengths = lengths_dim == 2 ? empty({n, cols}, lens.dtype()) : empty({n}, lens.dtype());
  std::vector<int64_t> len_src(static_cast<size_t>(rows) + 1), len_dst(static_cast<size_t>(n) + 1);
  for (int64_t r = 0; r <= rows; ++r) len_src[static_cast<size_t>(r)] = r * cols;
  for (int64_t i = 0; i <= n; ++i) len_dst[static_cast<size_t>(i)] = i * cols;
  gather_blocks(lens, out_lengths, perm, len_src, len_dst);
  Tensor out_values = empty({total}, vals.dtype());
  gather_blocks(vals, out_values, perm, row_off, out_off);
  std::optional<Tensor> out_weights;
  if (weights.has_value()) {
    out_weights = empty({total}, w.dtype());
    gather_blocks(w, *out_weights, perm, row_off, out_off);
  }
  return {out_lengths, out_values, out_weights};
}

// bucketize_sparse_features: index v of segment i goes to bucket v % my_size as v / my_size;
// the output is bucket-major ((bucket, segment) lengths), keeping each segment's order.
template <typename L, typename I>
void bucketize(const I* indices, const std::vector<int64_t>& offsets, int64_t my_size, const char* weights,
               char* new_weights, int64_t wsize, L* new_lengths, I* new_indices, I* new_pos) {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  std::vector<int64_t> cursor(static_cast<size_t>(my_size * n) + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = offsets[static_cast<size_t>(i)]; j < offsets[static_cast<size_t>(i) + 1]; ++j)
      ++cursor[static_cast<size_t>((static_cast<int64_t>(indices[j]) % my_size) * n + i) + 1];
  for (int64_t k = 0; k < my_size * n; ++k)
    new_lengths[k] = static_cast<L>(cursor[static_cast<size_t>(k) + 1]);
  for (int64_t k = 0; k < my_size * n; ++k)
    cursor[static_cast<size_t>(k) + 1] += cursor[static_cast<size_t>(k)];
  for (int64_t i = 0; i < n; ++i) {
    const int64_t begin = offsets[static_cast<size_t>(i)];
    for (int64_t j = begin; j < offsets[static_cast<size_t>(i) + 1]; ++j) {
      const int64_t v = static_cast<int64_t>(indices[j]);
      const int64_t dst = cursor[static_cast<size_t>((v % my_size) * n + i)]++;
      new_indices[dst] = static_cast<I>(v / my_size);
      if (new_pos) new_pos[dst] = static_cast<I>(j - begin);
      if (new_weights)
        std::memcpy(new_weights + dst * wsize, weights + j * wsize, static_cast<size_t>(wsize));
    }
  }
}

template <typename I>
void check_nonnegative_indices(const I* p, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    EMBER_CHECK(p[j] >= 0, ValueError, "[bucketize_sparse_features] expected non-negative indices, but got ",
                static_cast<int64_t>(p[j]), " at position ", j);
}

template <typename I>
void fill_ranges(const I* offsets, int64_t n, int64_t range_size, I* out) {
  const int64_t grain = std::max<int64_t>(1, n * (int64_t(1) << 14) / std::max<int64_t>(range_size, 1));
  parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t lo = static_cast<int64_t>(offsets[i]);
      const int64_t hi = i + 1 < n ? static_cast<int64_t>(offsets[i + 1]) : range_size;
      for (int64_t j = lo; j < hi; ++j) out[j] = static_cast<I>(j - lo);
    }
  });
}

template <typename I>
void check_offsets(const I* offsets, int64_t n, int64_t range_size) {
  const char* op = "offsets_range";
  EMBER_CHECK(n > 0 || range_size == 0, ValueError, "[", op,
              "] expected range_size == 0 for empty offsets (no segment to fill it), but got ", range_size);
  if (n == 0) return;
  EMBER_CHECK(offsets[0] == 0, ValueError, "[", op, "] expected offsets[0] == 0, but got ",
              static_cast<int64_t>(offsets[0]));
  for (int64_t i = 1; i < n; ++i)
    EMBER_CHECK(offsets[i] >= offsets[i - 1], ValueError, "[", op,
                "] expected offsets to be non-decreasing, but got ", static_cast<int64_t>(offsets[i - 1]),
                " then ", static_cast<int64_t>(offsets[i]), " at position ", i);
  EMBER_CHECK(static_cast<int64_t>(offsets[n - 1]) <= range_size, ValueError, "[", op,
              "] expected the last offset to be at most range_size (", range_size, "), but got ",
              static_cast<int64_t>(offsets[n - 1]));
}

}  // namespace

Tensor asynchronous_complete_cumsum(const Tensor& t_in) {
  check_index_tensor("asynchronous_complete_cumsum", "t_in", t_in);
  EMBER_CHECK(t_in.dim() == 1 || t_in.dim() == 2, ValueError,
              "[asynchronous_complete_cumsum] expected a 1-D or 2-D t_in, but got ", t_in.dim(), "-D");
  const Tensor in = t_in.contiguous();
  const int64_t rows = in.dim() == 2 ? in.size(0) : 1;
  const int64_t n = in.size(in.dim() - 1);
  Tensor out = in.dim() == 2 ? empty({rows, n + 1}, in.dtype()) : empty({n + 1}, in.dtype());
  for (int64_t r = 0; r < rows; ++r) {
    if (in.dtype() == DType::Int32)
      complete_cumsum(in.data<int32_t>() + r * n, out.data<int32_t>() + r * (n + 1), n);
    else
      complete_cumsum(in.data<int64_t>() + r * n, out.data<int64_t>() + r * (n + 1), n);
  }
  return out;
}

std::tuple<Tensor, Tensor, std::optional<Tensor>> permute_2D_sparse_data(
    const Tensor& permute, const Tensor& lengths, const Tensor& values, const std::optional<Tensor>& weights,
    std::optional<int64_t> permuted_lengths_sum) {
  return permute_sparse("permute_2D_sparse_data", 2, permute, lengths, values, weights, permuted_lengths_sum);
}

std::tuple<Tensor, Tensor, std::optional<Tensor>> permute_1D_sparse_data(
    const Tensor& permute, const Tensor& lengths, const Tensor& values, const std::optional<Tensor>& weights,
    std::optional<int64_t> permuted_lengths_sum) {
  return permute_sparse("permute_1D_sparse_data", 1, permute, lengths, values, weights, permuted_lengths_sum);
}

std::tuple<Tensor, Tensor, std::optional<Tensor>, std::optional<Tensor>> bucketize_sparse_features(
    const Tensor& lengths, const Tensor& indices, bool bucketize_pos, int64_t my_size,
    const std::optional<Tensor>& weights) {
  const char* op = "bucketize_sparse_features";
  check_index_tensor(op, "lengths", lengths);
  check_index_tensor(op, "indices", indices);
  check_dim(op, "lengths", lengths, 1);
  check_dim(op, "indices", indices, 1);
  EMBER_CHECK(my_size > 0, ValueError, "[", op, "] expected my_size > 0, but got ", my_size);
  const int64_t n = lengths.numel();
  EMBER_CHECK(n == 0 || my_size <= std::numeric_limits<int64_t>::max() / n, ValueError, "[", op,
              "] expected my_size * len(lengths) to fit in int64, but got ", my_size, " * ", n);
  const Tensor w = weights.has_value() ? checked_weights(op, *weights, indices.numel(), "indices") : Tensor();
  const Tensor lens = lengths.contiguous();
  const Tensor idx = indices.contiguous();
  const std::vector<int64_t> offsets = offsets_of(op, lens, 0, idx.numel(), "len(indices)");
  EMBER_CHECK(offsets.back() == idx.numel(), ValueError, "[", op,
              "] expected the lengths to sum to len(indices) (", idx.numel(), "), but they sum to ",
              offsets.back());
  if (idx.dtype() == DType::Int32) {
    check_nonnegative_indices(idx.data<int32_t>(), idx.numel());
    // a position within a segment is stored in the indices' dtype
    if (bucketize_pos)
      for (int64_t i = 0; i < n; ++i)
        EMBER_CHECK(offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)] - 1 <=
                        std::numeric_limits<int32_t>::max(),
                    ValueError, "[", op, "] expected positions to fit in the int32 indices, but segment ", i,
                    " has length ", offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)]);
  } else {
    check_nonnegative_indices(idx.data<int64_t>(), idx.numel());
  }

  Tensor new_lengths = empty({my_size * n}, lens.dtype());
  Tensor new_indices = empty({idx.numel()}, idx.dtype());
  std::optional<Tensor> new_weights, new_pos;
  if (weights.has_value()) new_weights = empty({idx.numel()}, w.dtype());
  if (bucketize_pos) new_pos = empty({idx.numel()}, idx.dtype());
  const char* wsrc = weights.has_value() ? static_cast<const char*>(w.data_ptr()) : nullptr;
  char* wdst = new_weights.has_value() ? static_cast<char*>(new_weights->data_ptr()) : nullptr;
  const int64_t wsize = weights.has_value() ? w.element_size() : 0;
  auto run = [&](auto l_tag, auto i_tag) {
    using L = decltype(l_tag);
    using I = decltype(i_tag);
    bucketize<L, I>(idx.data<I>(), offsets, my_size, wsrc, wdst, wsize, new_lengths.data<L>(),
                    new_indices.data<I>(), new_pos.has_value() ? new_pos->data<I>() : nullptr);
  };
  const bool l32 = lens.dtype() == DType::Int32, i32 = idx.dtype() == DType::Int32;
  if (l32 && i32)
    run(int32_t{}, int32_t{});
  else if (l32)
    run(int32_t{}, int64_t{});
  else if (i32)
    run(int64_t{}, int32_t{});
  else
    run(int64_t{}, int64_t{});
  return {new_lengths, new_indices, new_weights, new_pos};
}

Tensor offsets_range(const Tensor& offsets, int64_t range_size) {
  const char* op = "offsets_range";
  check_index_tensor(op, "offsets", offsets);
  check_dim(op, "offsets", offsets, 1);
  EMBER_CHECK(range_size >= 0, ValueError, "[", op, "] expected range_size >= 0, but got ", range_size);
  EMBER_CHECK(offsets.dtype() == DType::Int64 || range_size <= std::numeric_limits<int32_t>::max(),
              ValueError, "[", op, "] expected range_size to fit in the offsets' dtype int32, but got ",
              range_size);
  const Tensor off = offsets.contiguous();
  Tensor out = empty({range_size}, off.dtype());
  if (off.dtype() == DType::Int32) {
    check_offsets(off.data<int32_t>(), off.numel(), range_size);
    fill_ranges(off.data<int32_t>(), off.numel(), range_size, out.data<int32_t>());
  } else {
    check_offsets(off.data<int64_t>(), off.numel(), range_size);
    fill_ranges(off.data<int64_t>(), off.numel(), range_size, out.data<int64_t>());
  }
  return out;
}

}  // namespace ember
