#pragma once
// Settings of the matrix products (the ops themselves are declared in native/ops/declarations.py).
#include <string>

#include "ember/export.h"

namespace ember {

// ember.set_float32_matmul_precision("highest" | "high" | "medium"): PyTorch's switch allowing
// float32 products in lower internal precision. The CPU kernels always compute in full float32
// (as PyTorch's CPU kernels do), so the setting is recorded and reported, not acted on.
EMBER_API void set_float32_matmul_precision(const std::string& precision);
EMBER_API std::string get_float32_matmul_precision();

// The BLAS/LAPACK library the products and decompositions call, as it describes itself
// (OpenBLAS's build configuration and core name).
EMBER_API std::string blas_config();

}  // namespace ember
