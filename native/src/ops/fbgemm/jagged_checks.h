#pragma once
// The argument checks of the jagged ops (src/ops/fbgemm/jagged.cpp) that their composites in
// src/autograd/fbgemm_composites.cpp run before composing: same messages, one definition.
#include <vector>

#include "ember/tensor.h"

namespace ember {

// x_values is 1-D or 2-D.
void check_jagged_values(const char* op, const Tensor& x_values);
// y is a dense operand fitting x: its batch size, jagged dims and D; every offsets level is
// checked in full.
void check_jagged_dense_operand(const char* op, const char* name, const Tensor& x_values,
                                const std::vector<Tensor>& x_offsets, const Tensor& y);

}  // namespace ember
