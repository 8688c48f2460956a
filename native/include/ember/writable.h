#pragma once
// The read-only check of Tensor::bump_version alone (Note [read-only storage]), for code that
// writes a tensor's memory without bumping its version: batch_norm's running statistics, the
// FBGEMM kernels' in-place outputs, ember.distributed's collectives.
#include "ember/export.h"
#include "ember/tensor.h"

namespace ember {

// Error (RuntimeError in Python) if `t` shares the memory of a read-only NumPy array.
EMBER_API void check_writable(const Tensor& t);

}  // namespace ember
