#pragma once
// Derivative helpers (see formulas.h) for embedding and embedding_bag. Every op involved is linear
// in the table and in the per-sample weights separately, so each VJP and JVP is another of the
// same ops (the forward gathers what a backward scattered, and the other way round); only
// scale_grad_by_freq and max mode need the small compositions below.
#include <vector>

#include "autograd/formulas.h"

namespace ember::autograd {

std::optional<Tensor> optional_tensor(const Tensor& t);

// The VJP of embedding_dense_backward (embedding's double backward): each index's row of the
// table-shaped gradient, dropped for padding_idx, divided by the row's uses for scale_grad_by_freq.
Tensor embedding_double_backward(const Tensor& grad, const Tensor& indices, int64_t padding_idx,
                                 bool scale_grad_by_freq);

// The tangent of _embedding_bag's output: the op itself on the table's tangent (max mode: the
// tangent at the maxima's rows), plus, for per_sample_weights, the op on their tangent.
Tensor embedding_bag_jvp(const Tensor& weight_t, const Tensor& psw_t, const Tensor& weight,
                         const Tensor& indices, const Tensor& offsets, int64_t mode,
                         const std::optional<Tensor>& psw, bool include_last_offset, int64_t padding_idx,
                         const Tensor& max_indices);

// The VJP of _embedding_bag_backward with respect to its gradient argument: the forward again on
// the table-shaped `grad` (its transpose), with scale_grad_by_freq's factors where they apply.
Tensor embedding_bag_backward_grad(const Tensor& grad, const Tensor& indices, const Tensor& offsets,
                                   const Tensor& max_indices, bool scale_grad_by_freq, int64_t mode,
                                   const Tensor& psw, bool include_last_offset, int64_t padding_idx);

// Its VJP with respect to per_sample_weights: dot(grad[row of i], grad_output[bag of i]) per index.
Tensor embedding_bag_backward_weights(const Tensor& grad, const Tensor& grad_output, const Tensor& indices,
                                      const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                                      bool include_last_offset, int64_t padding_idx);

}  // namespace ember::autograd
