#pragma once
// Helpers the derivative formulas of native/ops/declarations.py (DERIVATIVES) call. They live in
// ember::autograd and call the autograd-recording ops, so every formula is itself differentiable
// (create_graph=True). The engine sums broadcast gradients back to each input's shape and casts
// them to its dtype, so formulas need not.
#include <optional>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ember/vmap.h"

namespace ember::autograd {

Tensor num(double v);
Tensor num(const Scalar& v);

Tensor scale(const Tensor& grad, const Scalar& alpha);

// Differentiable arithmetic for the formula helpers (the ops' own names would be ambiguous
// with the ember:: ones under argument-dependent lookup).
Tensor plus(const Tensor& a, const Tensor& b);
Tensor minus(const Tensor& a, const Tensor& b);
Tensor times(const Tensor& a, const Tensor& b);

Tensor zeros_of(const Tensor& like);

// Sums the tangent contributions of several inputs (undefined where an input has none).
Tensor add_tangents(const Tensor& a, const Tensor& b);

// The tangent of a real reduction over `dim` (all dims when absent or empty): the local
// derivative `d` (the VJP of ones) contracted with the tangent.
Tensor reduction_jvp(const Tensor& d, const Tensor& t, const std::optional<IntList>& dim, bool keepdim);

Tensor real_part(const Tensor& t);

int64_t wrap_dim(int64_t d, int64_t n);

// The gradient of a reduction over `dim` (all dims when absent or empty), broadcast back.
Tensor sum_backward(const Tensor& grad, const IntList& sizes, const std::optional<IntList>& dim,
                    bool keepdim);

Tensor mean_backward(const Tensor& grad, const IntList& sizes, const std::optional<IntList>& dim,
                     bool keepdim);

// amax/amin: the gradient is shared evenly among the elements equal to the extreme.
Tensor extreme_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const IntList& dim,
                        bool keepdim);

Tensor logsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const IntList& dim,
                          bool keepdim);

// Gradients of ops that pick positions `index` along `dim`: added into zeros of the input shape.
Tensor index_select_backward(const Tensor& grad, const IntList& sizes, int64_t dim, const Tensor& index);

// Note [view backward]: without a recorded backward (no create_graph), a select or slice gradient
// is zeros with grad copied into the viewed part: one fill and one strided copy, not an index_add
// through an index tensor (many slices of one tensor each pay this, issue 18). A recorded backward
// keeps the differentiable index_add form, as does a gradient batched by vmap (the plain ops have
// no batching rule) or one that may carry a forward-mode tangent.
bool plain_view_backward(const Tensor& grad);

Tensor select_backward(const Tensor& grad, const IntList& sizes, int64_t dim, int64_t index);

Tensor slice_backward(const Tensor& grad, const IntList& sizes, int64_t dim, std::optional<int64_t> start,
                      int64_t step);

IntList inverse_permutation(const IntList& dims);

// Note [fused activations]: the one-pass backward kernel unless this backward is itself recorded.
bool fused_backward_ok();

Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim);

Tensor log_softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim);

// d/dself and d/dother of pow(self, other); 0 ** 0 contributes nothing, as in PyTorch.
Tensor pow_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other);
Tensor pow_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other, const Tensor& result);

// maximum/minimum: the winner gets the gradient; ties split it.
Tensor pick_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self, bool is_max);

Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max);

Tensor mask_backward(const Tensor& grad, const Tensor& keep);

// t [..., *in] at the flat in-plane offsets idx [..., *out] of the last `spatial` dims (max pooling's
// selected elements).
Tensor pool_gather(const Tensor& t, const Tensor& idx, int64_t spatial);

Tensor cumsum_backward(const Tensor& grad, int64_t dim);

// ---- activations ------------------------------------------------------------------------------

Tensor silu_grad(const Tensor& grad, const Tensor& self);

Tensor softplus_grad(const Tensor& grad, const Tensor& self, double beta, double threshold);

Tensor hardswish_grad(const Tensor& grad, const Tensor& self);

Tensor hardsigmoid_grad(const Tensor& grad, const Tensor& self);

// elu family: scale for x > 0, else input_scale * (result + alpha * scale).
Tensor elu_backward(const Tensor& grad, const Tensor& self, const Tensor& result, double alpha, double scale,
                    double input_scale);

Tensor mish_grad(const Tensor& grad, const Tensor& self);

Tensor gelu_grad(const Tensor& grad, const Tensor& self, const std::string& approximate);

Tensor logit_backward(const Tensor& grad, const Tensor& self, std::optional<double> eps);

// ---- reductions -------------------------------------------------------------------------------

Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<IntList>& dim,
                    const std::optional<Scalar>& correction, bool keepdim);

// Vector p-norm: sgn(x) |x|^(p-1) / norm^(p-1); p = inf picks the largest |x| (ties split).
Tensor norm_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const Scalar& p,
                     const std::optional<IntList>& dim, bool keepdim);

// cat: each input's slice of the gradient (the legacy 1-d empty inputs cat skips get zeros).
std::vector<Tensor> cat_backward(const Tensor& grad, const std::vector<IntList>& sizes, int64_t dim);

// The learnable fake-quantization ops' LSQ derivatives (Note [fake quant arithmetic]): the
// gradient to self (which = 0), scale (1) or zero_point (2), each qparam's summed over the
// elements it quantized (per tensor: all of them; per channel: all but the axis); and the tangent.
Tensor fake_quant_learnable_vjp(const Tensor& grad, const Tensor& self, const Tensor& scale,
                                const Tensor& zero_point, int64_t axis, int64_t quant_min, int64_t quant_max,
                                double grad_factor, bool per_channel, int which);
Tensor fake_quant_learnable_jvp(const Tensor& self_t, const Tensor& scale_t, const Tensor& zero_point_t,
                                const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                                int64_t axis, int64_t quant_min, int64_t quant_max, double grad_factor,
                                bool per_channel);

}  // namespace ember::autograd
