#pragma once
// Derivative helpers (see formulas.h) for the fbgemm:: ops of declarations.py (FBGEMM's
// recommendation kernels, src/ops/fbgemm/). The table-batched embedding ops have no formulas
// here: their backward runs the optimizer in place (ember/tbe, Note [fused optimizer backward]).
#include "autograd/formulas.h"
#include "ember/fbgemm_ops.h"

namespace ember::autograd {

// The max lengths a jagged tensor was padded to: the dense shape's dims after the batch, one per
// offsets level (the gradient of dense_to_jagged pads back to the dense input's shape).
IntList jagged_max_lengths(const IntList& dense_sizes, const std::vector<Tensor>& offsets);

}  // namespace ember::autograd
