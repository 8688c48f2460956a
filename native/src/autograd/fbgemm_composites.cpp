// Note [composite ops]: FBGEMM ops whose bodies compose differentiable ops (PyTorch's
// CompositeImplicitAutograd). The ops that return (values, offsets) cannot carry a derivative
// formula themselves (a tuple with a Tensor[]), so they call the ember::autograd:: entry point of
// a single-output op that does (dense_to_jagged_forward, jagged_softmax_forward, ...) and gradients
// flow through it; their own generated wrappers pass through (NONDIFFERENTIABLE in
// declarations.py). Calling autograd entry points makes these bodies part of the autograd layer,
// so they live here rather than beside the kernels in src/ops/fbgemm/.
#include <optional>
#include <tuple>
#include <vector>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/fbgemm/jagged_checks.h"

namespace ember {

// ---- jagged outputs ---------------------------------------------------------------------------

std::tuple<Tensor, std::vector<Tensor>> dense_to_jagged(const Tensor& dense,
                                                        const std::vector<Tensor>& x_offsets,
                                                        std::optional<int64_t> total_L) {
  return {autograd::dense_to_jagged_forward(dense, x_offsets, total_L), x_offsets};
}

namespace {
// y's values at x's jagged positions, differentiably.
Tensor dense_at_jagged(const char* op, const char* name, const Tensor& x_values,
                       const std::vector<Tensor>& x_offsets, const Tensor& y) {
  check_jagged_dense_operand(op, name, x_values, x_offsets, y);
  return autograd::dense_to_jagged_forward(y, x_offsets, x_values.size(0));
}
}  // namespace

std::tuple<Tensor, std::vector<Tensor>> jagged_dense_elementwise_add_jagged_output(
    const Tensor& x_values, const std::vector<Tensor>& x_offsets, const Tensor& y) {
  const char* op = "jagged_dense_elementwise_add_jagged_output";
  check_jagged_values(op, x_values);
  const Tensor yj = dense_at_jagged(op, "y", x_values, x_offsets, y);
  return {autograd::add(x_values, yj, Scalar(int64_t(1)), std::nullopt), x_offsets};
}

std::tuple<Tensor, std::vector<Tensor>> jagged_dense_dense_elementwise_add_jagged_output(
    const Tensor& x_values, const std::vector<Tensor>& x_offsets, const Tensor& y_0, const Tensor& y_1) {
  const char* op = "jagged_dense_dense_elementwise_add_jagged_output";
  check_jagged_values(op, x_values);
  const Tensor y0 = dense_at_jagged(op, "y_0", x_values, x_offsets, y_0);
  const Tensor y1 = dense_at_jagged(op, "y_1", x_values, x_offsets, y_1);
  const Scalar one(int64_t(1));
  return {autograd::add(autograd::add(x_values, y0, one, std::nullopt), y1, one, std::nullopt), x_offsets};
}

std::tuple<Tensor, std::vector<Tensor>> jagged_dense_elementwise_mul(const Tensor& x_values,
                                                                     const std::vector<Tensor>& x_offsets,
                                                                     const Tensor& y) {
  const char* op = "jagged_dense_elementwise_mul";
  check_jagged_values(op, x_values);
  const Tensor yj = dense_at_jagged(op, "y", x_values, x_offsets, y);
  return {autograd::mul(x_values, yj, std::nullopt), x_offsets};
}

std::tuple<Tensor, Tensor> jagged_dense_bmm(const Tensor& x_values, const Tensor& x_offsets, const Tensor& y,
                                            int64_t max_L) {
  return {autograd::jagged_dense_bmm_forward(x_values, x_offsets, y, max_L), x_offsets};
}

std::tuple<Tensor, Tensor> jagged_softmax(const Tensor& values, const Tensor& x_offsets, int64_t max_L) {
  return {autograd::jagged_softmax_forward(values, x_offsets, max_L), x_offsets};
}

// ---- row gathers and products -----------------------------------------------------------------

std::vector<Tensor> group_index_select_dim0(const std::vector<Tensor>& input_group,
                                            const std::vector<Tensor>& indices_group) {
  EMBER_CHECK(input_group.size() == indices_group.size(), ValueError,
              "[group_index_select_dim0] expected as many index tensors as inputs (", input_group.size(),
              "), but got ", indices_group.size());
  // each group through the differentiable row gather
  std::vector<Tensor> out;
  out.reserve(input_group.size());
  for (size_t g = 0; g < input_group.size(); ++g)
    out.push_back(autograd::index_select_dim0(input_group[g], indices_group[g], 0, 0, false));
  return out;
}

Tensor permute102_baddbmm_permute102(const Tensor& bias, const Tensor& A, const Tensor& B) {
  const char* op = "permute102_baddbmm_permute102";
  EMBER_CHECK(A.dim() == 3 && B.dim() == 3 && bias.dim() == 2, ValueError, "[", op,
              "] expected A (m, B, k), B (B, k, n) and bias (B, n), but got shapes ", dims::str(A.sizes()),
              ", ", dims::str(B.sizes()), " and ", dims::str(bias.sizes()));
  EMBER_CHECK(A.size(1) == B.size(0) && A.size(2) == B.size(1) && bias.size(0) == B.size(0) &&
                  bias.size(1) == B.size(2),
              ValueError, "[", op, "] expected A (m, B, k), B (B, k, n) and bias (B, n), but got shapes ",
              dims::str(A.sizes()), ", ", dims::str(B.sizes()), " and ", dims::str(bias.sizes()));
  EMBER_CHECK(A.dtype() == B.dtype() && bias.dtype() == B.dtype(), TypeError, "[", op,
              "] expected A, B and bias of one dtype, but got ", dtype_name(A.dtype()), ", ",
              dtype_name(B.dtype()), " and ", dtype_name(bias.dtype()));
  // baddbmm over the batch dim B
  const Tensor r = autograd::baddbmm(autograd::unsqueeze(bias, 1), autograd::permute(A, {1, 0, 2}), B,
                                     Scalar(int64_t(1)), Scalar(int64_t(1)), std::nullopt);
  return autograd::permute(r, {1, 0, 2});
}

}  // namespace ember
