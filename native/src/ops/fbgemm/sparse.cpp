// FBGEMM's sparse-feature helpers (ember.ops.fbgemm.*): offsets from lengths, ranges within
// segments, permuting and bucketizing (table, sample)-major sparse features. Index bookkeeping
// done once per batch, so plain loops over int32/int64 data; every length and offset is checked
// before it is used to address memory.
#include <cstdint>
#include <limits>
#include <string>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ops/dims.h"

namespace ember {

namespace {

void check_integral_1d(const char* op, const char* name, const Tensor& t) {
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

}  // namespace

Tensor asynchronous_complete_cumsum(const Tensor& t_in) {
  check_integral_1d("asynchronous_complete_cumsum", "t_in", t_in);
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

}  // namespace ember
