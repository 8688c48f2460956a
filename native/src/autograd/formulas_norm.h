#pragma once
// Derivative helpers of the fused normalizations (native_layer_norm, _fused_rms_norm,
// native_group_norm, native_batch_norm; see DERIVATIVES in native/ops/declarations.py).
//
// Note [fused normalization backward]: a plain backward calls the op's one-pass backward
// kernel. When the backward is itself recorded (create_graph), the gradients are composed from
// differentiable ops instead, recomputing the statistics from the input so that second
// derivatives see how they depend on it (the saved mean/rstd are constants to autograd).
#include <array>
#include <vector>

#include "autograd/formulas.h"

namespace ember::autograd {

// ---- layer norm -----------------------------------------------------------------------------------

std::vector<Tensor> layer_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                     const IntList& normalized_shape, const Tensor& weight,
                                     const Tensor& bias, const Tensor& mean, const Tensor& rstd, double eps,
                                     const std::array<bool, 3>& mask);

Tensor layer_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                      const Tensor& weight_t, const Tensor& bias_t, const Tensor& mean, const Tensor& rstd,
                      const IntList& normalized_shape);

// ---- RMS norm -------------------------------------------------------------------------------------

std::vector<Tensor> rms_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                   const IntList& normalized_shape, const Tensor& weight, const Tensor& rstd,
                                   double eps, const std::array<bool, 2>& mask);

Tensor rms_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight, const Tensor& weight_t,
                    const Tensor& rstd, const IntList& normalized_shape);

// ---- group norm: statistics per (sample, group), affine per channel -------------------------------

std::vector<Tensor> group_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                     const Tensor& weight, const Tensor& mean, const Tensor& rstd, int64_t N,
                                     int64_t C, int64_t HxW, int64_t group, double eps,
                                     const std::array<bool, 3>& mask);

Tensor group_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                      const Tensor& weight_t, const Tensor& bias_t, const Tensor& mean, const Tensor& rstd,
                      int64_t N, int64_t group);

// ---- batch norm: statistics per channel over batch and positions ------------------------------------

std::vector<Tensor> batch_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                     const Tensor& weight, const Tensor& running_mean,
                                     const Tensor& running_var, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool training, double eps,
                                     const std::array<bool, 3>& mask);

Tensor batch_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                      const Tensor& weight_t, const Tensor& bias_t, const Tensor& running_mean,
                      const Tensor& running_var, const Tensor& save_mean, const Tensor& save_invstd,
                      bool training, double eps);

}  // namespace ember::autograd
