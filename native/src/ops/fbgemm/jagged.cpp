// FBGEMM's jagged-tensor ops (ember.ops.fbgemm.*), with fbgemm_gpu's schemas. A jagged tensor is
// `values` (L, D) or (L,) plus one or more offsets levels (Note [jagged layout] in
// jagged_kernels.h); its dense form is (B, max_lengths..., D), rows longer than a max length
// truncated (FBGEMM's documented behaviour), shorter ones padded.
//
// Every offsets tensor is checked in full before a kernel reads it: integer dtype, 1-D, first entry
// 0, non-decreasing, and its last entry at most the length of what it indexes (the next level, or
// the values). So no input can make a kernel address memory outside its tensors.
//
// The ops that return (values, offsets) are composites of these, in
// src/autograd/fbgemm_composites.cpp (Note [composite ops] there).
//
// Values past max_L in jagged_dense_bmm and jagged_softmax, which FBGEMM leaves uninitialized, are
// zeros here; the jagged-output elementwise ops treat dense positions past the dense tensor's
// bounds as zeros (x + 0 for the adds, 0 for the product).
#include <cstdint>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ops/dims.h"
#include "ops/fbgemm/jagged_checks.h"
#include "ops/fbgemm/jagged_kernels.h"

namespace ember {

DispatchStub<JaggedToDenseFn> jagged_to_dense_stub("jagged_to_padded_dense");
DispatchStub<DenseToJaggedFn> dense_to_jagged_stub("dense_to_jagged");
DispatchStub<JaggedDenseBmmFn> jagged_dense_bmm_stub("jagged_dense_bmm");
DispatchStub<JaggedJaggedBmmFn> jagged_jagged_bmm_stub("jagged_jagged_bmm");
DispatchStub<DenseVecJaggedFn> dense_vec_jagged_stub("batched_dense_vec_jagged_2d_mul");
DispatchStub<DenseVecJaggedBackwardFn> dense_vec_jagged_backward_stub(
    "batched_dense_vec_jagged_2d_mul_backward");
DispatchStub<JaggedSoftmaxFn> jagged_softmax_stub("jagged_softmax");
DispatchStub<JaggedSoftmaxBackwardFn> jagged_softmax_backward_stub("jagged_softmax_backward");

namespace {

using Levels = std::vector<std::vector<int64_t>>;

template <typename I>
void read_level(const char* op, size_t level, const Tensor& t, int64_t expected_last, const char* what,
                std::vector<int64_t>& out) {
  const Tensor c = t.contiguous();
  const I* p = c.data<I>();
  const int64_t n = c.numel();
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(p[i]);
    if (i == 0) {
      EMBER_CHECK(v == 0, ValueError, "[", op, "] expected offsets[", level, "][0] == 0, but got ", v);
    } else {
      EMBER_CHECK(v >= out[static_cast<size_t>(i - 1)], ValueError, "[", op, "] expected offsets[", level,
                  "] to be non-decreasing, but got ", out[static_cast<size_t>(i - 1)], " then ", v,
                  " at position ", i);
    }
    out[static_cast<size_t>(i)] = v;
  }
  EMBER_CHECK(out.back() <= expected_last, ValueError, "[", op, "] expected the last entry of offsets[",
              level, "] to be at most ", what, " (", expected_last, "), but got ", out.back());
}

// Checks every offsets level in full and returns them as int64. `total` is the length of the values
// the last level indexes. As in FBGEMM (whose documented example pads 3 of 4 values), a level may
// end before what it indexes: the rows after its last offset belong to no segment (zero gradient,
// zero output).
Levels check_offsets(const char* op, const std::vector<Tensor>& offsets, int64_t total) {
  EMBER_CHECK(!offsets.empty(), ValueError, "[", op, "] expected at least one offsets tensor, but got none");
  for (size_t l = 0; l < offsets.size(); ++l) {
    const Tensor& t = offsets[l];
    EMBER_CHECK(t.dtype() == DType::Int32 || t.dtype() == DType::Int64, TypeError, "[", op,
                "] expected offsets[", l, "] of dtype int32 or int64, but got ", dtype_name(t.dtype()));
    EMBER_CHECK(t.dim() == 1 && t.numel() >= 1, ValueError, "[", op, "] expected offsets[", l,
                "] to be 1-D with at least one entry, but got shape ", dims::str(t.sizes()));
    EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
                t.device().str());
  }
  Levels levels(offsets.size());
  for (size_t l = 0; l < offsets.size(); ++l) {
    const bool inner = l + 1 < offsets.size();
    const int64_t last = inner ? offsets[l + 1].numel() - 1 : total;
    const char* what = inner ? "the number of segments of the next level" : "the number of values";
    if (offsets[l].dtype() == DType::Int32)
      read_level<int32_t>(op, l, offsets[l], last, what, levels[l]);
    else
      read_level<int64_t>(op, l, offsets[l], last, what, levels[l]);
  }
  return levels;
}

// Whether some values rows belong to no segment (then outputs over the values start zeroed).
bool has_loose_rows(const Levels& levels, int64_t total) {
  for (size_t l = 0; l + 1 < levels.size(); ++l)
    if (levels[l].back() < static_cast<int64_t>(levels[l + 1].size()) - 1) return true;
  return levels.back().back() < total;
}

Tensor new_rows(const Levels& levels, const IntList& shape, const Tensor& like) {
  return has_loose_rows(levels, shape[0]) ? zeros(shape, like.dtype(), like.device())
                                          : empty(shape, like.dtype(), like.device());
}

// The segments of the last level each dense row shows (Note [jagged layout]); empty for one level.
std::vector<int64_t> outer_segments(const Levels& levels, const IntList& max_lengths) {
  std::vector<int64_t> cur;
  if (levels.size() == 1) return cur;
  const int64_t B = static_cast<int64_t>(levels[0].size()) - 1;
  cur.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) cur[static_cast<size_t>(b)] = b;
  for (size_t l = 0; l + 1 < levels.size(); ++l) {
    const int64_t m = max_lengths[l];
    std::vector<int64_t> next;
    next.reserve(cur.size() * static_cast<size_t>(m));
    for (const int64_t s : cur) {
      const int64_t begin = s >= 0 ? levels[l][static_cast<size_t>(s)] : 0;
      const int64_t len = s >= 0 ? levels[l][static_cast<size_t>(s) + 1] - begin : 0;
      for (int64_t j = 0; j < m; ++j) next.push_back(j < len ? begin + j : -1);
    }
    cur.swap(next);
  }
  return cur;
}

JaggedLayout layout_of(const Levels& levels, const std::vector<int64_t>& outer, const IntList& max_lengths) {
  JaggedLayout lay;
  lay.outer_seg = outer.empty() && levels.size() == 1 ? nullptr : outer.data();
  lay.rows =
      levels.size() == 1 ? static_cast<int64_t>(levels[0].size()) - 1 : static_cast<int64_t>(outer.size());
  lay.offsets = levels.back().data();
  lay.max_len = max_lengths.back();
  return lay;
}

void check_max_lengths(const char* op, const IntList& max_lengths, size_t levels) {
  EMBER_CHECK(max_lengths.size() == levels, ValueError, "[", op,
              "] expected one max length per offsets tensor (", levels, "), but got ", max_lengths.size());
  for (const int64_t m : max_lengths)
    EMBER_CHECK(m >= 0, ValueError, "[", op, "] expected non-negative max lengths, but got ", m);
}

void check_values(const char* op, const char* name, const Tensor& values) {
  EMBER_CHECK(values.dim() == 1 || values.dim() == 2, ValueError, "[", op, "] expected ", name,
              " to be 1-D or 2-D, but got ", values.dim(), "-D");
}

Tensor to_padded_dense(const char* op, const Tensor& values, const std::vector<Tensor>& offsets,
                       const IntList& max_lengths, const Scalar& padding) {
  check_values(op, "values", values);
  check_max_lengths(op, max_lengths, offsets.size());
  const Levels levels = check_offsets(op, offsets, values.size(0));
  IntList shape{static_cast<int64_t>(levels[0].size()) - 1};
  shape.insert(shape.end(), max_lengths.begin(), max_lengths.end());
  if (values.dim() == 2) shape.push_back(values.size(1));
  Tensor dense = empty(shape, values.dtype(), values.device());  // checks the size for overflow
  if (dense.numel() == 0) return dense;
  // only now: a non-empty dense tensor bounds the number of dense rows the layout lists
  const std::vector<int64_t> outer = outer_segments(levels, max_lengths);
  const Tensor pad = full({1}, padding, values.dtype(), values.device());
  jagged_to_dense_stub.get(values.device().type)(layout_of(levels, outer, max_lengths), values.contiguous(),
                                                 dense, pad.data_ptr());
  return dense;
}

// values (total_L[, D]) at the jagged positions of `dense` (B, max_lengths...[, D]).
Tensor to_jagged(const char* op, const Tensor& dense, const std::vector<Tensor>& offsets,
                 std::optional<int64_t> total_L) {
  const size_t k = offsets.size();
  EMBER_CHECK(!offsets.empty(), ValueError, "[", op, "] expected at least one offsets tensor, but got none");
  EMBER_CHECK(dense.dim() == static_cast<int64_t>(k) + 1 || dense.dim() == static_cast<int64_t>(k) + 2,
              ValueError, "[", op, "] expected a dense tensor of ", k + 1, " or ", k + 2, " dims for ", k,
              " offsets levels, but got ", dense.dim(), "-D");
  int64_t total = -1;
  if (total_L) {
    EMBER_CHECK(*total_L >= 0, ValueError, "[", op, "] expected total_L >= 0, but got ", *total_L);
    total = *total_L;
  } else {
    // the last level's own last entry: read below through check_offsets once it is known valid
    const Tensor& t = offsets.back();
    EMBER_CHECK(t.dtype() == DType::Int32 || t.dtype() == DType::Int64, TypeError, "[", op,
                "] expected offsets[", k - 1, "] of dtype int32 or int64, but got ", dtype_name(t.dtype()));
    EMBER_CHECK(t.dim() == 1 && t.numel() >= 1, ValueError, "[", op, "] expected offsets[", k - 1,
                "] to be 1-D with at least one entry, but got shape ", dims::str(t.sizes()));
    const Tensor c = t.contiguous();
    total = t.dtype() == DType::Int32 ? int64_t(c.data<int32_t>()[c.numel() - 1])
                                      : c.data<int64_t>()[c.numel() - 1];
  }
  const Levels levels = check_offsets(op, offsets, total);
  const int64_t B = static_cast<int64_t>(levels[0].size()) - 1;
  EMBER_CHECK(dense.size(0) == B, ValueError, "[", op,
              "] expected the dense batch size to match the offsets (", B, "), but got ", dense.size(0));
  const IntList max_lengths(dense.sizes().begin() + 1,
                            dense.sizes().begin() + 1 + static_cast<std::ptrdiff_t>(k));
  IntList shape{total};
  if (dense.dim() == static_cast<int64_t>(k) + 2) shape.push_back(dense.size(-1));
  // several levels can hide values rows from every dense row (a truncated upper level)
  Tensor values = k > 1 || dense.numel() == 0 ? zeros(shape, dense.dtype(), dense.device())
                                              : new_rows(levels, shape, dense);
  if (values.numel() == 0 || dense.numel() == 0) return values;
  // only now: a non-empty dense tensor bounds the number of dense rows the layout lists
  const std::vector<int64_t> outer = outer_segments(levels, max_lengths);
  dense_to_jagged_stub.get(dense.device().type)(layout_of(levels, outer, max_lengths), dense.contiguous(),
                                                values);
  return values;
}

// A dense operand of the elementwise ops: B, the jagged dims and D must fit x.
void check_dense_operand(const char* op, const char* name, const Tensor& x_values, size_t k,
                         const Tensor& y) {
  const int64_t want = static_cast<int64_t>(k) + (x_values.dim() == 2 ? 2 : 1);
  EMBER_CHECK(y.dim() == want, ValueError, "[", op, "] expected ", name, " to have ", want, " dims, but got ",
              y.dim(), "-D");
  if (x_values.dim() == 2)
    EMBER_CHECK(y.size(-1) == x_values.size(1), ValueError, "[", op, "] expected ", name,
                "'s last dim to equal x_values' ", x_values.size(1), ", but got ", y.size(-1));
  EMBER_CHECK(y.dtype() == x_values.dtype(), TypeError, "[", op, "] expected ", name, " of x_values' dtype ",
              dtype_name(x_values.dtype()), ", but got ", dtype_name(y.dtype()));
}

IntList jagged_dims(const Tensor& y, size_t k) {
  return IntList(y.sizes().begin() + 1, y.sizes().begin() + 1 + static_cast<std::ptrdiff_t>(k));
}

void check_floating(const char* op, const char* name, const Tensor& t) {
  const DType d = t.dtype();
  EMBER_CHECK(d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16,
              TypeError, "[", op, "] expected ", name, " of a floating dtype, but got ", dtype_name(d));
}

void check_same_dtype(const char* op, const char* name, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(), TypeError, "[", op, "] expected ", name, " of dtype ",
              dtype_name(a.dtype()), ", but got ", dtype_name(b.dtype()));
}

void check_max_L(const char* op, int64_t max_L) {
  EMBER_CHECK(max_L >= 0, ValueError, "[", op, "] expected max_L >= 0, but got ", max_L);
}

}  // namespace

Tensor jagged_to_padded_dense_forward(const Tensor& values, const std::vector<Tensor>& offsets,
                                      const IntList& max_lengths, double padding_value) {
  return to_padded_dense("jagged_to_padded_dense", values, offsets, max_lengths, Scalar(padding_value));
}

Tensor jagged_to_padded_dense(const Tensor& values, const std::vector<Tensor>& offsets,
                              const IntList& max_lengths, double padding_value) {
  return to_padded_dense("jagged_to_padded_dense", values, offsets, max_lengths, Scalar(padding_value));
}

Tensor jagged_to_padded_dense_backward(const Tensor& grad_output, const std::vector<Tensor>& offsets,
                                       int64_t total_L) {
  return to_jagged("jagged_to_padded_dense_backward", grad_output, offsets, total_L);
}

Tensor dense_to_jagged_forward(const Tensor& dense, const std::vector<Tensor>& offsets,
                               std::optional<int64_t> total_L) {
  return to_jagged("dense_to_jagged", dense, offsets, total_L);
}

Tensor jagged_1d_to_dense(const Tensor& values, const Tensor& offsets, int64_t max_sequence_length,
                          int64_t padding_value) {
  EMBER_CHECK(values.dim() == 1, ValueError, "[jagged_1d_to_dense] expected 1-D values, but got ",
              values.dim(), "-D");
  return to_padded_dense("jagged_1d_to_dense", values, {offsets}, {max_sequence_length},
                         Scalar(padding_value));
}

Tensor jagged_2d_to_dense(const Tensor& values, const Tensor& offsets, int64_t max_sequence_length) {
  EMBER_CHECK(values.dim() == 2, ValueError, "[jagged_2d_to_dense] expected 2-D values, but got ",
              values.dim(), "-D");
  return to_padded_dense("jagged_2d_to_dense", values, {offsets}, {max_sequence_length}, Scalar(0.0));
}

Tensor jagged_dense_elementwise_add(const Tensor& x_values, const std::vector<Tensor>& x_offsets,
                                    const Tensor& y) {
  const char* op = "jagged_dense_elementwise_add";
  check_values(op, "x_values", x_values);
  check_dense_operand(op, "y", x_values, x_offsets.size(), y);
  const Tensor dense =
      to_padded_dense(op, x_values, x_offsets, jagged_dims(y, x_offsets.size()), Scalar(0.0));
  EMBER_CHECK(dense.size(0) == y.size(0), ValueError, "[", op,
              "] expected y's batch size to match the offsets (", dense.size(0), "), but got ", y.size(0));
  return add(dense, y);
}

// The checks of a jagged-output elementwise op's operands (jagged_checks.h).
void check_jagged_values(const char* op, const Tensor& x_values) {
  check_values(op, "x_values", x_values);
}

void check_jagged_dense_operand(const char* op, const char* name, const Tensor& x_values,
                                const std::vector<Tensor>& x_offsets, const Tensor& y) {
  check_dense_operand(op, name, x_values, x_offsets.size(), y);
  const Levels levels = check_offsets(op, x_offsets, x_values.size(0));
  EMBER_CHECK(y.size(0) == static_cast<int64_t>(levels[0].size()) - 1, ValueError, "[", op, "] expected ",
              name, "'s batch size to match the offsets (", levels[0].size() - 1, "), but got ", y.size(0));
}

// ---- products and softmax over one offsets level ----------------------------------------------

Tensor jagged_dense_bmm_forward(const Tensor& x_values, const Tensor& x_offsets, const Tensor& y,
                                int64_t max_L) {
  const char* op = "jagged_dense_bmm";
  check_floating(op, "x_values", x_values);
  check_same_dtype(op, "y", x_values, y);
  EMBER_CHECK(x_values.dim() == 2, ValueError, "[", op, "] expected 2-D x_values, but got ", x_values.dim(),
              "-D");
  EMBER_CHECK(y.dim() == 3, ValueError, "[", op, "] expected 3-D y, but got ", y.dim(), "-D");
  check_max_L(op, max_L);
  const Levels levels = check_offsets(op, {x_offsets}, x_values.size(0));
  const int64_t B = static_cast<int64_t>(levels[0].size()) - 1;
  EMBER_CHECK(y.size(0) == B, ValueError, "[", op, "] expected y's batch size to match the offsets (", B,
              "), but got ", y.size(0));
  EMBER_CHECK(y.size(1) == x_values.size(1), ValueError, "[", op,
              "] expected y.size(1) == x_values.size(1) (", x_values.size(1), "), but got ", y.size(1));
  Tensor out = new_rows(levels, {x_values.size(0), y.size(2)}, x_values);
  if (out.numel() == 0) return out;
  jagged_dense_bmm_stub.get(x_values.device().type)(x_values.contiguous(), levels[0].data(), B,
                                                    y.contiguous(), max_L, out);
  return out;
}

Tensor jagged_jagged_bmm_forward(const Tensor& x_values, const Tensor& y_values, const Tensor& x_offsets,
                                 int64_t max_L) {
  const char* op = "jagged_jagged_bmm";
  check_floating(op, "x_values", x_values);
  check_same_dtype(op, "y_values", x_values, y_values);
  EMBER_CHECK(x_values.dim() == 2 && y_values.dim() == 2, ValueError, "[", op,
              "] expected 2-D x_values and y_values, but got ", x_values.dim(), "-D and ", y_values.dim(),
              "-D");
  EMBER_CHECK(y_values.size(0) == x_values.size(0), ValueError, "[", op,
              "] expected y_values to have x_values' length ", x_values.size(0), ", but got ",
              y_values.size(0));
  check_max_L(op, max_L);
  const Levels levels = check_offsets(op, {x_offsets}, x_values.size(0));
  const int64_t B = static_cast<int64_t>(levels[0].size()) - 1;
  Tensor out = empty({B, x_values.size(1), y_values.size(1)}, x_values.dtype(), x_values.device());
  if (out.numel() == 0) return out;
  jagged_jagged_bmm_stub.get(x_values.device().type)(x_values.contiguous(), y_values.contiguous(),
                                                     levels[0].data(), B, max_L, out);
  return out;
}

Tensor jagged_jagged_bmm(const Tensor& x_values, const Tensor& y_values, const Tensor& x_offsets,
                         int64_t max_L) {
  return jagged_jagged_bmm_forward(x_values, y_values, x_offsets, max_L);
}

namespace {
struct DenseVecShape {
  Levels levels;
  int64_t B, H, D;
};

DenseVecShape check_dense_vec(const char* op, const Tensor& v, const Tensor& a_values,
                              const Tensor& a_offsets) {
  check_floating(op, "v", v);
  check_same_dtype(op, "a_values", v, a_values);
  EMBER_CHECK(v.dim() == 2 && a_values.dim() == 2, ValueError, "[", op,
              "] expected 2-D v and a_values, but got ", v.dim(), "-D and ", a_values.dim(), "-D");
  DenseVecShape s;
  s.levels = check_offsets(op, {a_offsets}, a_values.size(0));
  s.B = static_cast<int64_t>(s.levels[0].size()) - 1;
  s.H = s.B == 0 ? 1 : v.size(0) / s.B;  // as FBGEMM
  EMBER_CHECK(v.size(0) == s.B * s.H && s.H > 0, ValueError, "[", op,
              "] expected v.size(0) to be a positive multiple of the batch size ", s.B, ", but got ",
              v.size(0));
  EMBER_CHECK(a_values.size(1) % s.H == 0, ValueError, "[", op,
              "] expected a_values.size(1) to be a multiple of H = ", s.H, ", but got ", a_values.size(1));
  s.D = a_values.size(1) / s.H;
  return s;
}
}  // namespace

Tensor batched_dense_vec_jagged_2d_mul(const Tensor& v, const Tensor& a_values, const Tensor& a_offsets) {
  const DenseVecShape s = check_dense_vec("batched_dense_vec_jagged_2d_mul", v, a_values, a_offsets);
  Tensor out = empty({s.B * s.H, s.D}, v.dtype(), v.device());
  if (out.numel() == 0) return out;
  dense_vec_jagged_stub.get(v.device().type)(v.contiguous(), a_values.contiguous(), s.levels[0].data(), s.B,
                                             s.H, out);
  return out;
}

std::tuple<Tensor, Tensor> batched_dense_vec_jagged_2d_mul_backward(const Tensor& grad_output,
                                                                    const Tensor& v, const Tensor& a_values,
                                                                    const Tensor& a_offsets) {
  const char* op = "batched_dense_vec_jagged_2d_mul_backward";
  const DenseVecShape s = check_dense_vec(op, v, a_values, a_offsets);
  check_same_dtype(op, "grad_output", v, grad_output);
  EMBER_CHECK(grad_output.dim() == 2 && grad_output.size(0) == s.B * s.H && grad_output.size(1) == s.D,
              ValueError, "[", op, "] expected grad_output of shape (", s.B * s.H, ", ", s.D, "), but got ",
              dims::str(grad_output.sizes()));
  Tensor gv = zeros(v.sizes(), v.dtype(), v.device());
  Tensor ga = zeros(a_values.sizes(), a_values.dtype(), a_values.device());
  if (s.B * s.H > 0 && (gv.numel() > 0 || ga.numel() > 0))
    dense_vec_jagged_backward_stub.get(v.device().type)(grad_output.contiguous(), v.contiguous(),
                                                        a_values.contiguous(), s.levels[0].data(), s.B, s.H,
                                                        gv, ga);
  return {gv, ga};
}

Tensor jagged_softmax_forward(const Tensor& values, const Tensor& x_offsets, int64_t max_L) {
  const char* op = "jagged_softmax";
  check_floating(op, "values", values);
  EMBER_CHECK(values.dim() == 2, ValueError, "[", op, "] expected 2-D values, but got ", values.dim(), "-D");
  check_max_L(op, max_L);
  const Levels levels = check_offsets(op, {x_offsets}, values.size(0));
  Tensor out = new_rows(levels, values.sizes(), values);
  if (out.numel() == 0) return out;
  jagged_softmax_stub.get(values.device().type)(values.contiguous(), levels[0].data(),
                                                static_cast<int64_t>(levels[0].size()) - 1, max_L, out);
  return out;
}

Tensor jagged_softmax_backward(const Tensor& grad_output, const Tensor& output, const Tensor& x_offsets,
                               int64_t max_L) {
  const char* op = "jagged_softmax_backward";
  check_floating(op, "grad_output", grad_output);
  check_same_dtype(op, "output", grad_output, output);
  EMBER_CHECK(grad_output.dim() == 2 && output.sizes() == grad_output.sizes(), ValueError, "[", op,
              "] expected 2-D grad_output and output of one shape, but got ", dims::str(grad_output.sizes()),
              " and ", dims::str(output.sizes()));
  check_max_L(op, max_L);
  const Levels levels = check_offsets(op, {x_offsets}, grad_output.size(0));
  Tensor out = new_rows(levels, grad_output.sizes(), grad_output);
  if (out.numel() == 0) return out;
  jagged_softmax_backward_stub.get(grad_output.device().type)(
      grad_output.contiguous(), output.contiguous(), levels[0].data(),
      static_cast<int64_t>(levels[0].size()) - 1, max_L, out);
  return out;
}

}  // namespace ember
