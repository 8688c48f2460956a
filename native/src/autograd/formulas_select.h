#pragma once
// Derivative helpers (see formulas.h) for shape ops, selection (indexing, sorting, order
// statistics), scans and complex-number ops. Index tensors are built with the plain ember:: ops:
// they are integers and carry no gradient.
#include <optional>
#include <string>
#include <vector>

#include "autograd/formulas.h"

namespace ember::autograd {

Tensor zeros_shaped(const IntList& sizes, const Tensor& like);

Tensor flat(const Tensor& t);

// gather's gradient: grad added into zeros of the input's shape at `index`. Without a recorded
// backward (Note [view backward]) it is added straight into the fresh zeros, one pass instead of
// scatter_add's copy of them (cross_entropy's backward runs this over the whole logits);
// the forward already checked index's shape and values.
Tensor gather_backward(const Tensor& grad, const IntList& sizes, int64_t dim, const Tensor& index);

// ---- views and shapes -------------------------------------------------------------------------

// unfold: element (window w, offset j) came from position w * step + j along `dimension`.
Tensor unfold_backward(const Tensor& grad, const IntList& sizes, int64_t dimension, int64_t size,
                       int64_t step);

Tensor diagonal_backward(const Tensor& grad, const IntList& sizes, int64_t offset, int64_t dim1,
                         int64_t dim2);

// The storage position of each element of a (sizes, strides, offset) view.
Tensor storage_positions(const IntList& sizes, const IntList& strides, int64_t offset, const Device& device);

int64_t storage_extent(const IntList& sizes, const IntList& strides, int64_t offset);

// as_strided reads self's storage: gradients (and tangents) are moved through a flat buffer
// indexed by storage position. Storage shared by several elements of self splits evenly.
Tensor as_strided_through_storage(const Tensor& values, const IntList& from_sizes,
                                  const IntList& from_strides, int64_t from_offset, const IntList& to_sizes,
                                  const IntList& to_strides, int64_t to_offset, bool average_to);

Tensor as_strided_backward(const Tensor& grad, const Tensor& self, const IntList& size, const IntList& stride,
                           std::optional<int64_t> storage_offset);

Tensor as_strided_jvp(const Tensor& self_t, const Tensor& self, const IntList& size, const IntList& stride,
                      std::optional<int64_t> storage_offset);

// repeat / tile: the result is [r0, s0, r1, s1, ...] folded; sum the repeat axes back.
Tensor repeat_backward(const Tensor& grad, const IntList& self_sizes, IntList repeats);

Tensor tile_backward(const Tensor& grad, const IntList& self_sizes, const IntList& dims);

IntList negated(IntList v);

// hstack / vstack / dstack: a cat of atleast_{1,2,3}d views, split back and reshaped.
std::vector<Tensor> stack_like_backward(const Tensor& grad, const std::vector<IntList>& sizes, int rank);

// meshgrid: output i varies along one dim (i, or the first two swapped for 'xy'); its gradient
// sums the others away.
std::vector<Tensor> meshgrid_backward(const std::vector<Tensor>& grads, const std::vector<IntList>& sizes,
                                      const std::string& indexing);

// repeat_interleave: output element j came from element source[j] along dim.
Tensor repeat_interleave_backward(const Tensor& grad, const IntList& self_sizes, const Tensor& repeats,
                                  std::optional<int64_t> dim);

// diff: the n-th forward difference of cat(prepend, self, append) along dim. One difference
// x[1:] - x[:-1] sends g back as [0, g] - [g, 0].
Tensor diff_backward(const Tensor& grad, int64_t n, int64_t dim, const Tensor& self, const Tensor& prepend,
                     const Tensor& append, int which);

// ---- selection --------------------------------------------------------------------------------

Tensor take_backward(const Tensor& grad, const IntList& self_sizes, const Tensor& index);

Tensor take_along_dim_backward(const Tensor& grad, const IntList& self_sizes, const Tensor& indices,
                               std::optional<int64_t> dim);

Tensor masked_select_backward(const Tensor& grad, const Tensor& self, const Tensor& mask);

Tensor masked_scatter_source_backward(const Tensor& grad, const Tensor& mask, const IntList& source_sizes);

// sort, topk, kthvalue, median, mode, cummax...: each value came from self at `indices` along dim.
Tensor select_values_backward(const Tensor& grad, const IntList& self_sizes, int64_t dim,
                              const Tensor& indices, bool keepdim);

Tensor select_values_jvp(const Tensor& self_t, int64_t dim, const Tensor& indices, bool keepdim);

Tensor sort_indices(const Tensor& self, int64_t dim);

Tensor scatter_reduce_self_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                                    const Tensor& src, const std::string& reduce, bool include_self,
                                    const Tensor& result);

Tensor scatter_reduce_src_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                                   const Tensor& src, const std::string& reduce, bool include_self,
                                   const Tensor& result);

Tensor scatter_reduce_jvp(const Tensor& self_t, const Tensor& src_t, const Tensor& self, int64_t dim,
                          const Tensor& index, const Tensor& src, const std::string& reduce,
                          bool include_self, const Tensor& result);

Tensor imag_unit();

// ---- reductions and scans ---------------------------------------------------------------------

// prod: d prod / d x_i is the product of the others, from exclusive cumulative products on both
// sides (exact when some x are zero).
Tensor prod_backward(const Tensor& grad, const Tensor& self, const std::optional<IntList>& dim, bool keepdim);

// cumprod: grad_i = sum_{k >= i} grad_k * prod_{j <= k, j != i} x_j. Without zeros that is
// reverse_cumsum(grad * result) / x; with zeros each i is computed with x_i replaced by 1.
Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim);

Tensor cumprod_jvp(const Tensor& self_t, const Tensor& self, const Tensor& result, int64_t dim);

// logcumsumexp: grad_i = sum_{k >= i} grad_k exp(x_i - y_k), summed in log space for the positive
// and the negative part of grad (no overflow): exp(x_i + log sum_{k >= i} exp(log grad_k - y_k)).
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim);

// d y_k = sum_{i <= k} exp(x_i - y_k) t_i, in log space as above
Tensor logcumsumexp_jvp(const Tensor& self_t, const Tensor& self, const Tensor& result, int64_t dim);

Tensor nan_kept(const Tensor& self);

Tensor nanmean_backward(const Tensor& grad, const Tensor& self, const std::optional<IntList>& dim,
                        bool keepdim);

Tensor nanmean_jvp(const Tensor& self_t, const Tensor& self, const std::optional<IntList>& dim, bool keepdim);

// ---- elementwise ------------------------------------------------------------------------------

// fmax / fmin: the gradient goes to the operand that was picked (self on ties, the number over NaN).
Tensor fpick_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self, bool max);

// trigamma (polygamma(1, x)), the derivative of digamma: the recurrence
// psi1(x) = psi1(x + 1) + 1/x^2 up to x >= 6, then the asymptotic series; x < 0.5 by the
// reflection psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x). Built from autograd ops, so digamma
// can be differentiated twice.
Tensor trigamma(const Tensor& self);

// sgn of a complex z (z / |z|): d sgn = (dz - sgn Re(conj(sgn) dz)) / |z|, and 0 at z = 0.
Tensor sgn_backward(const Tensor& grad, const Tensor& self, const Tensor& result);

Tensor sgn_jvp(const Tensor& self_t, const Tensor& self, const Tensor& result);

// angle: 0 (or pi) for real inputs; for complex z, d angle = Im(conj(z) dz) / |z|^2, which gives
// the gradient i z / |z|^2 * grad.
Tensor angle_backward(const Tensor& grad, const Tensor& self);

}  // namespace ember::autograd
