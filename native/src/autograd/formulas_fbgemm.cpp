// The bodies of formulas_fbgemm.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_fbgemm.h"

namespace ember::autograd {

IntList jagged_max_lengths(const IntList& dense_sizes, const std::vector<Tensor>& offsets) {
  const size_t n = offsets.size();
  EMBER_CHECK(dense_sizes.size() > n, ValueError, "[dense_to_jagged] expected a dense tensor with more than ",
              n, " dims, but got ", dense_sizes.size());
  return IntList(dense_sizes.begin() + 1, dense_sizes.begin() + 1 + static_cast<std::ptrdiff_t>(n));
}

}  // namespace ember::autograd
