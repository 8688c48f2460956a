#pragma once
// Derivative helpers (see formulas.h) for the fbgemm:: ops of declarations.py (FBGEMM's
// recommendation kernels, src/ops/fbgemm/). The table-batched embedding ops have no formulas
// here: their backward runs the optimizer in place (ember/tbe, Note [fused optimizer backward]).
#include "autograd/formulas.h"
#include "ember/fbgemm_ops.h"

namespace ember::autograd {

// The max lengths a jagged tensor was padded to: the dense shape's dims after the batch, one per
// offsets level (the gradient of dense_to_jagged pads back to the dense input's shape).
inline IntList jagged_max_lengths(const IntList& dense_sizes, const std::vector<Tensor>& offsets) {
  const size_t n = offsets.size();
  EMBER_CHECK(dense_sizes.size() > n, ValueError, "[dense_to_jagged] expected a dense tensor with more than ",
              n, " dims, but got ", dense_sizes.size());
  return IntList(dense_sizes.begin() + 1, dense_sizes.begin() + 1 + static_cast<std::ptrdiff_t>(n));
}

}  // namespace ember::autograd
