#pragma once
// The device kernels' interfaces (internal to libember). src/ops/ computes shapes, dtypes and
// outputs; a backend (src/backend/<device>/) registers one function per stub.
#include <vector>

#include "ember/dispatch_stub.h"
#include "ember/generator.h"
#include "ember/pointwise_ops.h"
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember {

// The pointwise ops with kernels of their own, declared in native/ops/declarations.py
// (kernel=) and generated into ember/pointwise_ops.h as the X-macro lists
// EMBER_FORALL_UNARY_OPS / EMBER_FORALL_BINARY_OPS, _(Enum, name, Form, complex_ok, Entry).
// How an op's entry point computes (the forms of declarations.py's docstring):
enum class PointwiseForm { Float, Same, FloatOnly, Integral, Predicate, Compare };
struct PointwiseFacts {
  const char* name;  // the op's name, as errors give it
  PointwiseForm form;
  bool complex_ok;  // whether the entry point and kernel take complex inputs (complex=)
};

#define EMBER_POINTWISE_ENUM(op, name, form, complex_ok, entry) op,
enum class UnaryOp { EMBER_FORALL_UNARY_OPS(EMBER_POINTWISE_ENUM) };
enum class BinaryOp { EMBER_FORALL_BINARY_OPS(EMBER_POINTWISE_ENUM) };
#undef EMBER_POINTWISE_ENUM
#define EMBER_POINTWISE_FACTS(op, name, form, complex_ok, entry) {#name, PointwiseForm::form, complex_ok},
inline constexpr PointwiseFacts kUnaryFacts[] = {EMBER_FORALL_UNARY_OPS(EMBER_POINTWISE_FACTS)};
inline constexpr PointwiseFacts kBinaryFacts[] = {EMBER_FORALL_BINARY_OPS(EMBER_POINTWISE_FACTS)};
#undef EMBER_POINTWISE_FACTS
constexpr const PointwiseFacts& pointwise_facts(UnaryOp op) {
  return kUnaryFacts[static_cast<int>(op)];
}
constexpr const PointwiseFacts& pointwise_facts(BinaryOp op) {
  return kBinaryFacts[static_cast<int>(op)];
}

// out (of `out`'s dtype, bool for predicates) = op(in), in already of the compute dtype.
using UnaryFn = void (*)(UnaryOp, const Tensor& out, const Tensor& in);
extern DispatchStub<UnaryFn> unary_stub;

// out = op(a, b) with a, b of one compute dtype (broadcast to out's shape by strides); alpha
// scales b for Add/Sub. Comparisons and logical ops write bool.
using BinaryFn = void (*)(BinaryOp, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha);
extern DispatchStub<BinaryFn> binary_stub;

// Note [fused activations]: gelu (both forms), silu, mish and softplus run as one kernel pass
// forward and one backward (grad_in = grad_out * act'(in)), computed in float32 vectors for the
// 32- and 16-bit float dtypes (vec_math.h) and in float64 for float64. `beta` and `threshold`
// are softplus's; the others ignore them. The derivative formulas use the backward kernel unless
// a graph of the backward itself is being recorded (create_graph), where they compose ops.
enum class ActivationOp { Gelu, GeluTanh, Silu, Mish, Softplus, Hardswish, Hardsigmoid };
using ActivationFn = void (*)(ActivationOp, const Tensor& out, const Tensor& in, double beta,
                              double threshold);
extern DispatchStub<ActivationFn> activation_stub;
using ActivationBackwardFn = void (*)(ActivationOp, const Tensor& grad_in, const Tensor& grad_out,
                                      const Tensor& in, double beta, double threshold);
extern DispatchStub<ActivationBackwardFn> activation_backward_stub;

// Note [normalization kernels]: softmax, log_softmax, layer/RMS norm work on `rows` contiguous
// rows of `n` elements; group and batch norm on contiguous [batch, channels, spatial] data. The
// statistics (mean, rstd = 1/sqrt(var + eps), biased variance) are float32 for float16/bfloat16
// inputs and the input's dtype otherwise. Backward kernels take the saved statistics; each
// gradient pointer may be null (not wanted).
using SoftmaxFn = void (*)(const Tensor& out, const Tensor& in, int64_t rows, int64_t n, bool log);
extern DispatchStub<SoftmaxFn> softmax_stub;
using SoftmaxBackwardFn = void (*)(const Tensor& grad_in, const Tensor& grad_out, const Tensor& output,
                                   int64_t rows, int64_t n, bool log);
extern DispatchStub<SoftmaxBackwardFn> softmax_backward_stub;

struct RowNormArgs {
  const Tensor* out;
  const Tensor* mean;  // null for RMS norm
  const Tensor* rstd;
  const Tensor* input;
  const Tensor* weight;  // null: 1
  const Tensor* bias;    // null: 0
  int64_t rows, n;
  double eps;
  bool rms;  // x rstd w with rstd from mean(x^2): no centering
};
using LayerNormFn = void (*)(const RowNormArgs&);
extern DispatchStub<LayerNormFn> layer_norm_stub;
struct RowNormBackwardArgs {
  const Tensor* grad_input;
  const Tensor* grad_weight;  // null: not wanted
  const Tensor* grad_bias;
  const Tensor* grad_out;
  const Tensor* input;
  const Tensor* mean;
  const Tensor* rstd;
  const Tensor* weight;
  int64_t rows, n;
  bool rms;
};
using LayerNormBackwardFn = void (*)(const RowNormBackwardArgs&);
extern DispatchStub<LayerNormBackwardFn> layer_norm_backward_stub;

// groups > 0: group norm (statistics per sample and group); groups == 0: batch norm (per
// channel over batch and positions; training computes them into mean/rstd and moves the running
// statistics, evaluation reads them from mean/rstd).
struct ChannelNormArgs {
  const Tensor* out;
  const Tensor* mean;
  const Tensor* rstd;
  const Tensor* input;
  const Tensor* weight;
  const Tensor* bias;
  const Tensor* running_mean;  // batch norm training only; null: none
  const Tensor* running_var;
  int64_t batch, channels, spatial, groups;
  bool training;
  double momentum, eps;
};
using ChannelNormFn = void (*)(const ChannelNormArgs&);
extern DispatchStub<ChannelNormFn> channel_norm_stub;
struct ChannelNormBackwardArgs {
  const Tensor* grad_input;  // null: not wanted
  const Tensor* grad_weight;
  const Tensor* grad_bias;
  const Tensor* grad_out;
  const Tensor* input;
  const Tensor* mean;
  const Tensor* rstd;
  const Tensor* weight;
  int64_t batch, channels, spatial, groups;
  bool training;
};
using ChannelNormBackwardFn = void (*)(const ChannelNormBackwardArgs&);
extern DispatchStub<ChannelNormBackwardFn> channel_norm_backward_stub;

// Note [convolution kernels]: convolution as GEMMs over blocks of im2col columns
// (backend/cpu/conv_kernels.cpp), for contiguous float32/float64 [N, C, D, H, W] data (1-d and
// 2-d convolutions pass unit leading sizes). The three kernels of a regular convolution; a
// transposed one runs them with the roles of input and output exchanged.
struct ConvArgs {
  const Tensor* input;   // [N, in_channels, *input_size]; backward_input writes it
  const Tensor* weight;  // [out_channels, in_channels / groups, *kernel]; backward_weight writes it
  const Tensor* output;  // [N, out_channels, *output_size]; forward writes it, backward reads the gradient
  int64_t batch, in_channels, out_channels, groups;
  int64_t input_size[3], output_size[3], kernel[3], stride[3], padding[3], dilation[3];
  bool accumulate;  // forward: add to output (which holds the broadcast bias)
  // forward only: input, weight and output are channels last (Note [channels-last convolution])
  bool channels_last = false;
};
using ConvFn = void (*)(const ConvArgs&);
extern DispatchStub<ConvFn> conv_forward_stub;
extern DispatchStub<ConvFn> conv_backward_input_stub;
extern DispatchStub<ConvFn> conv_backward_weight_stub;

// Note [fused optimizers]: one call updates every parameter of an optimizer step, in place
// (params and state lists of equal length; matching shapes, contiguous, one floating dtype; the
// step counters are 0-dim tensors the kernel advances). The arithmetic follows the per-parameter
// Python loops of ember.optim in order, so either path gives the same numbers.
struct FusedSgdArgs {
  const std::vector<Tensor>* params;
  const std::vector<Tensor>* grads;
  const std::vector<Tensor>* momentum_buffers;  // empty without momentum
  double weight_decay, momentum, lr, dampening;
  bool nesterov, maximize, is_first_step;  // first step: the buffer starts as the gradient
};
struct FusedAdamArgs {
  const std::vector<Tensor>* params;
  const std::vector<Tensor>* grads;
  const std::vector<Tensor>* exp_avgs;
  const std::vector<Tensor>* exp_avg_sqs;
  const std::vector<Tensor>* max_exp_avg_sqs;  // empty without amsgrad
  const std::vector<Tensor>* state_steps;
  double lr, beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize, decoupled_weight_decay;
};
struct FusedAdagradArgs {
  const std::vector<Tensor>* params;
  const std::vector<Tensor>* grads;
  const std::vector<Tensor>* state_sums;
  const std::vector<Tensor>* state_steps;
  double lr, lr_decay, weight_decay, eps;
  bool maximize;
};
struct FusedRmspropArgs {
  const std::vector<Tensor>* params;
  const std::vector<Tensor>* grads;
  const std::vector<Tensor>* square_avgs;
  const std::vector<Tensor>* grad_avgs;         // empty unless centered
  const std::vector<Tensor>* momentum_buffers;  // empty without momentum
  const std::vector<Tensor>* state_steps;
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};
extern DispatchStub<void (*)(const FusedSgdArgs&)> fused_sgd_stub;
extern DispatchStub<void (*)(const FusedAdamArgs&)> fused_adam_stub;
extern DispatchStub<void (*)(const FusedAdagradArgs&)> fused_adagrad_stub;
extern DispatchStub<void (*)(const FusedRmspropArgs&)> fused_rmsprop_stub;

// Note [pooling kernels]: max and average pooling over contiguous [planes, D, H, W] (1-d and 2-d
// pass unit leading sizes) with windows given per spatial dim: output index o covers input
// [start[o], end[o]) with `step` (dilation; 1 for average), already clipped to the input. An
// average divides by `divisor` when positive, else by the product over dims of count[o].
// Backward reads the output's gradient from `output` and writes the input's into `input`, using
// `indices` (flat offsets in a plane) for max and the windows for average.
struct Window {
  const int64_t* start;
  const int64_t* end;
  const double* count;
  int64_t step;
};
struct PoolArgs {
  const Tensor* input;
  const Tensor* output;
  const Tensor* indices;  // max: written by forward, read by backward; null for average
  int64_t planes, in_size[3], out_size[3], taps;
  const Window* windows;  // three
  double divisor;
};
using PoolFn = void (*)(const PoolArgs&);
extern DispatchStub<PoolFn> max_pool_stub;
extern DispatchStub<PoolFn> avg_pool_stub;
extern DispatchStub<PoolFn> pool_backward_stub;

// out = cond ? a : b, a/b of out's dtype, cond bool; all broadcast to out.
using WhereFn = void (*)(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
extern DispatchStub<WhereFn> where_stub;

// out = clamp(in, lo, hi); a missing bound is NaN-free infinity-like (has_lo/has_hi false).
using ClampFn = void (*)(const Tensor& out, const Tensor& in, const Scalar* lo, const Scalar* hi);
extern DispatchStub<ClampFn> clamp_stub;

// quantize_per_tensor's codes for quint8 (is_signed false: uint8) or qint8 (int8), n contiguous
// values (Note [quantize arithmetic]): clamp(round_half_even(fma(x, inv_scale, zero_point))).
using QuantizeAffineFn = void (*)(const float* x, void* codes, int64_t n, float inv_scale, float zero_point,
                                  bool is_signed);
extern DispatchStub<QuantizeAffineFn> quantize_affine_stub;

using FillFn = void (*)(const Tensor& out, const Scalar& value);
extern DispatchStub<FillFn> fill_stub;
// out[i] = start + i * step (computed in double for floats, int64 for integers).
using ArangeFn = void (*)(const Tensor& out, const Scalar& start, const Scalar& step);
extern DispatchStub<ArangeFn> arange_stub;
// linspace: out[i] = start + i*step for i < n/2, end - (n-1-i)*step after (PyTorch's symmetric form).
using LinspaceFn = void (*)(const Tensor& out, double start, double end);
extern DispatchStub<LinspaceFn> linspace_stub;

// Reductions over the trailing `reduced_dims` dims of `in` (Note [reduction layout]).
enum class ReduceOp { Sum, Prod, Max, Min, All, Any, ArgMax, ArgMin };
using ReduceFn = void (*)(ReduceOp, const Tensor& out, const Tensor& in, int64_t reduced_dims);
extern DispatchStub<ReduceFn> reduce_stub;

// Inclusive scans along the last dim of contiguous `in` into contiguous `out` (same dtype).
// Max/Min also write the position of each running extreme into contiguous int64 `indices`
// (PyTorch's rule: ties and NaNs move it to the newer element; a NaN, once seen, stays).
// LogSumExp accumulates log(exp(acc) + exp(x)) stably (real floats).
enum class ScanOp { Sum, Prod, Max, Min, LogSumExp };
using ScanFn = void (*)(ScanOp, const Tensor& out, const Tensor& indices, const Tensor& in);
extern DispatchStub<ScanFn> scan_stub;

// Random draws into contiguous `out` from `gen`: Uniform in [a, b), Normal(mean a, std b),
// Integer in [a, b) (read as int64), Bernoulli(p) with p read elementwise from contiguous float64
// `probs` (or, with `probs` undefined, p = a for every element), Exponential(rate a). A Philox generator
// gives each element its own counter (Note [reproducible randomness]); an mt19937 one is drawn from serially,
// element after element, with PyTorch's CPU transformations (Note [PyTorch-compatible streams] in
// src/ops/random/random.cpp): NormalScalar is PyTorch's per-element Box-Muller (with the generator's cached
// second value), Normal its blocked 16-wide one (used on contiguous outputs of >= 16 elements);
// BernoulliFloat compares a 24-bit float uniform with p (p given as float32, float16 or bfloat16), Bernoulli
// a 53-bit double one (p given as float64, or a Python float).
enum class RandomKind { Uniform, Normal, NormalScalar, Integer, Bernoulli, BernoulliFloat, Exponential };
using RandomFn = void (*)(RandomKind, const Tensor& out, Generator& gen, const Scalar& a, const Scalar& b,
                          const Tensor& probs);
extern DispatchStub<RandomFn> random_stub;
// Philox blocks one draw of n elements uses: 4 per block for 32-bit uniforms, 2 otherwise.
inline uint64_t random_blocks(RandomKind kind, DType dtype, int64_t n) {
  const bool narrow = kind == RandomKind::Uniform && dtype != DType::Float64;
  return static_cast<uint64_t>(narrow ? (n + 3) / 4 : (n + 1) / 2);
}

// Gather: out[p] = self[p with p[dim] = index[p]], over index's shape (out has it too).
// Scatter*: out[p with p[dim] = index[p]] (=, +=, *=, max=, min=) src[p], over index's shape;
// out is the destination (a copy of self). Index values are checked: RuntimeError outside [0, size)
// (Note [negative indices]).
enum class IndexOp { Gather, Scatter, ScatterAdd, ScatterMul, ScatterMax, ScatterMin };
using IndexFn = void (*)(IndexOp, const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& src);
extern DispatchStub<IndexFn> index_stub;
// A 0-d tensor met by a 1-d index counts as 1-d of one element (PyTorch's ensure_nonempty_size).
inline int64_t nonempty_size(const Tensor& t, int64_t d) {
  return t.dim() == 0 ? 1 : t.sizes()[d];
}
inline int64_t nonempty_stride(const Tensor& t, int64_t d) {
  return t.dim() == 0 ? 0 : t.strides()[d];
}

// Advanced indexing (x[i, j], x[i, j] = v, index_put_): for every pair (b, r),
//   dst[dst_b[b] + dst_r[r]]  (=, or += when accumulating)  src[src_b[b] + src_r[r]]
// with element offsets from each tensor's data pointer (int64, contiguous). The ops layer has
// bounds-checked every offset; Put and Accumulate run in order, so duplicates are deterministic.
enum class AdvancedIndexMode { Get, Put, Accumulate };
using AdvancedIndexFn = void (*)(AdvancedIndexMode, const Tensor& dst, const Tensor& src, const Tensor& dst_b,
                                 const Tensor& src_b, const Tensor& dst_r, const Tensor& src_r);
extern DispatchStub<AdvancedIndexFn> advanced_index_stub;

// Sorts each row (last dim) of contiguous `in` into contiguous `values` and int64 `indices`,
// stably; NaN sorts after every number ascending and before them descending (as PyTorch).
using SortFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending);
extern DispatchStub<SortFn> sort_stub;

// The most frequent value of each row (last dim) of contiguous, stably sorted `sorted` (with the
// original positions `order`): the smallest such value, and the last position holding it.
using ModeFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& sorted,
                        const Tensor& order);
extern DispatchStub<ModeFn> mode_stub;

// out[i] = beta * out[i] + alpha * a[i] @ b[i] for 3-D (batch, rows, cols) tensors of out's dtype,
// any strides (out must not overlap a or b). beta = 0 ignores out's values, NaN included.
using GemmFn = void (*)(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                        const Scalar& beta);
extern DispatchStub<GemmFn> gemm_stub;

// Exact int32 sums of a quantized GEMM (Note [int8 dot products] in int8_gemm_kernels.cpp):
// C[m * ldc + n] = column_offsets[n] (if given) + the sum over quads q < ceil(K / 4) of the dot
// product of the 4 uint8 bytes at base + rows[m] + quads[q] with w[n * ldw + 4q .. 4q + 3] (int8;
// k >= K counts as 0). The 4 bytes must be readable for every m and q. Returns false (C untouched) where this
// CPU has no exact int8 dot-product instruction.
struct Int8GemmArgs {
  int64_t M, N, K;
  const uint8_t* base;
  const int64_t* rows;   // [M] byte offsets
  const int64_t* quads;  // [ceil(K / 4)] byte offsets
  const int8_t* w;
  int64_t ldw;
  int32_t* C;
  int64_t ldc;
  const int32_t* column_offsets = nullptr;  // [N], added to every row
};
using Int8GemmFn = bool (*)(const Int8GemmArgs& args);
extern DispatchStub<Int8GemmFn> int8_gemm_stub;

// Factorizations of contiguous row-major [B, n, n] matrices, in place, one matrix per task.
// LU with partial pivoting of [B, m, n]: pivots int32 [B, min(m, n)] (1-based row swaps,
// LAPACK's convention), info int32 [B]: 0, or the 1-based index of the first zero pivot.
using LuFn = void (*)(const Tensor& a, const Tensor& pivots, const Tensor& info);
extern DispatchStub<LuFn> lu_stub;
// The lower Cholesky factor (strict upper part zeroed); info: 0, or the order of the first
// leading minor that is not positive-definite.
using CholeskyFn = void (*)(const Tensor& a, const Tensor& info);
extern DispatchStub<CholeskyFn> cholesky_stub;
// Solves T X = B in place of contiguous b [B, n, k]; t is [B, n, n] or [1, n, n] (shared),
// upper or lower triangular, with a unit diagonal when `unit` (then not read).
using TriangularSolveFn = void (*)(const Tensor& t, const Tensor& b, bool upper, bool unit);
extern DispatchStub<TriangularSolveFn> triangular_solve_stub;

// Fused transformer inference (src/ops/transformer/fused.cpp). Attention of packed sequences:
// out [Tq, E] (zeroed, contiguous) += softmax(scale * Q K^T) V per sequence and head, sequence s
// owning query rows [q_offsets[s], q_offsets[s+1]) and key/value rows likewise (offsets int64,
// checked); q, k, v are [rows, E] with unit column stride.
using PackedAttentionFn = void (*)(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                                   const Tensor& q_offsets, const Tensor& k_offsets, int64_t heads,
                                   double scale);
extern DispatchStub<PackedAttentionFn> packed_attention_stub;
// In place on contiguous out [rows, features]: out = LayerNorm(out + residual) * weight + bias
// over each row (residual contiguous, or undefined for none).
using AddLayerNormFn = void (*)(const Tensor& out, const Tensor& residual, const Tensor& weight,
                                const Tensor& bias, double eps);
extern DispatchStub<AddLayerNormFn> add_layer_norm_stub;

// Unnormalized 1-D discrete Fourier transform of every row of a contiguous [B, n] complex64 or
// complex128 tensor, in place: forward uses e^{-2 pi i jk/n}, backward e^{+2 pi i jk/n}.
using FftFn = void (*)(const Tensor& data, bool forward);
extern DispatchStub<FftFn> fft_stub;
// The onesided unnormalized forward transform of every row of contiguous real in [B, n]
// (float32/float64) into contiguous out [B, n/2 + 1] of the matching complex dtype.
using FftR2cFn = void (*)(const Tensor& out, const Tensor& in);
extern DispatchStub<FftR2cFn> fft_r2c_stub;
// The unnormalized inverse of r2c: contiguous complex in [B, n/2 + 1] (a Hermitian spectrum's
// half) to contiguous real out [B, n]; the imaginary parts of bins 0 and n/2 are ignored.
using FftC2rFn = void (*)(const Tensor& out, const Tensor& in);
extern DispatchStub<FftC2rFn> fft_c2r_stub;

// stft / istft of real signals (src/ops/fft/stft.cpp, Note [stft frames] there). stft: out
// [B, F, bins] (contiguous complex, frame-major as PyTorch computes it; bins = n/2 + 1, or n for
// both sides) with frame f of row b = window[j] * in[b][f * hop - pad + j], j < n = window.numel(),
// positions outside [0, L) read as `mode` pads; in [B, L] and window contiguous, of out's real dtype.
enum class StftPad { Constant, Reflect, Replicate, Circular };
using StftFn = void (*)(const Tensor& out, const Tensor& in, const Tensor& window, int64_t hop, int64_t pad,
                        StftPad mode);
extern DispatchStub<StftFn> stft_stub;
// istft: out [B, len] (real, contiguous) at t = inv_envelope[t] * the sum over frames f of
// window[j] * (the unnormalized inverse real transform of length n of in[b, :, f])[j], where
// t + start = f * hop + j; in [B, bins >= n/2 + 1, F] complex, any strides (bins above n/2 unread).
using IstftFn = void (*)(const Tensor& out, const Tensor& in, const Tensor& window,
                         const Tensor& inv_envelope, int64_t hop, int64_t start);
extern DispatchStub<IstftFn> istft_stub;

// Embedding lookups and bags (src/ops/embedding/embedding.cpp, Note [embedding bags] there).
// `indices` holds contiguous int32/int64 row numbers [N], unchecked: every kernel checks each
// one it reads against the table's rows (IndexError otherwise). `bounds` (contiguous int64
// [B + 1], checked non-decreasing within [0, N]) makes bag b the indices [bounds[b],
// bounds[b + 1]); undefined, every index is its own bag (plain embedding). `weights` is
// per_sample_weights (contiguous [N], the table's dtype) or undefined; padding_idx is a row bags
// leave out (-1: none).
enum class EmbeddingMode { Sum = 0, Mean = 1, Max = 2 };
struct EmbeddingBags {
  Tensor indices, bounds, weights;
  EmbeddingMode mode = EmbeddingMode::Sum;
  int64_t padding_idx = -1;
};
// out [B, D] (contiguous) = each bag's reduction of rows of table [R, D] (unit column stride);
// an empty bag gives zeros. Max also writes max_indices (int64 [B, D]): the row each maximum
// came from, -1 for an empty bag. Bags of one copy their row whatever the dtype.
using EmbeddingBagFn = void (*)(const Tensor& out, const Tensor& max_indices, const Tensor& table,
                                const EmbeddingBags& bags);
extern DispatchStub<EmbeddingBagFn> embedding_bag_stub;
// grad_table [R, D] (contiguous, zeroed) = the forward's adjoint for grad [B, D] (contiguous),
// by sorted segment sums: Sum/Mean gather every row's gradient once; Max routes grad[b, d] to
// row max_indices[b, d]. scale_by_freq divides each row's gradient by its number of uses.
using EmbeddingBackwardFn = void (*)(const Tensor& grad_table, const Tensor& grad, const EmbeddingBags& bags,
                                     const Tensor& max_indices, bool scale_by_freq);
extern DispatchStub<EmbeddingBackwardFn> embedding_backward_stub;
// out [N] (contiguous, the table's dtype) = dot(grad[bag of i], table[indices[i]]), 0 for an
// index outside every bag or equal to padding_idx: the gradient of Sum's per_sample_weights.
using EmbeddingWeightsBackwardFn = void (*)(const Tensor& out, const Tensor& grad, const Tensor& table,
                                            const EmbeddingBags& bags);
extern DispatchStub<EmbeddingWeightsBackwardFn> embedding_weights_backward_stub;
// Multiplies, in place, each distinct row of contiguous table [R, D] named by `indices` whose
// norm_type-norm exceeds max_norm by max_norm / (norm + 1e-7) (PyTorch's embedding_renorm_).
using EmbeddingRenormFn = void (*)(const Tensor& table, const Tensor& indices, double max_norm,
                                   double norm_type);
extern DispatchStub<EmbeddingRenormFn> embedding_renorm_stub;

// The decompositions of ember.linalg (backend/cpu/decomposition_kernels.cpp). Inputs are
// contiguous row-major batches, read (and overwritten) by the kernel; outputs contiguous.
// info int32 [B]: 0, or > 0 where the iteration did not converge. A matrix with a NaN or inf
// entry gives NaN outputs (info 0).
// SVD of a [B, m, n] (LAPACK's gesdd): s [B, k] real, descending (k = min(m, n)). With
// compute_uv, u [B, m, m or k] and vh [B, n or k, n] (full or reduced, from their shapes).
using SvdFn = void (*)(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh,
                       const Tensor& info, bool compute_uv);
extern DispatchStub<SvdFn> svd_stub;
// Eigen-decomposition of Hermitian a [B, n, n] (its lower or upper triangle is read; LAPACK's
// syevd / heevd): w [B, n] real ascending; v [B, n, n] the eigenvectors as columns, when defined.
using EighFn = void (*)(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info, bool lower);
extern DispatchStub<EighFn> eigh_stub;
// Householder QR (LAPACK's geqrf): a [B, m, n] becomes R (upper part) and the reflectors (below
// the diagonal, unit leading entry implied); tau [B, min(m, n)].
using GeqrfFn = void (*)(const Tensor& a, const Tensor& tau);
extern DispatchStub<GeqrfFn> geqrf_stub;
// The product H_1 ... H_k of reflectors (LAPACK's orgqr / ungqr), first n columns, in place of
// q [B, m, n] (m >= n >= k); tau [B, k].
using OrgqrFn = void (*)(const Tensor& q, const Tensor& tau);
extern DispatchStub<OrgqrFn> orgqr_stub;
// LDL factorization with Bunch-Kaufman pivoting of symmetric (or, with `hermitian` and complex
// dtypes, Hermitian) a [B, n, n] from its lower triangle, in place (LAPACK's sytrf / hetrf): L
// (unit diagonal implied) below the diagonal, D's 1x1 and 2x2 blocks on and beside it; pivots
// int32 [B, n] in LAPACK's form; info [B] > 0 where D has an exact zero on its diagonal.
using LdlFactorFn = void (*)(const Tensor& a, const Tensor& pivots, const Tensor& info, bool hermitian);
extern DispatchStub<LdlFactorFn> ldl_factor_stub;
// Solves A X = B from ldl_factor's ld [B, n, n] and pivots [B, n] (valid: the caller checks
// them), b [B, n, k] overwritten by X (LAPACK's sytrs / hetrs).
using LdlSolveFn = void (*)(const Tensor& ld, const Tensor& pivots, const Tensor& b, bool hermitian);
extern DispatchStub<LdlSolveFn> ldl_solve_stub;
// Eigen-decomposition of a general a [B, n, n] (LAPACK's geev): w [B, n] and, when defined,
// v [B, n, n] (unit-norm columns, largest entry real), both of a's complex dtype.
using EigFn = void (*)(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info);
extern DispatchStub<EigFn> eig_stub;

// Strided copy with dtype conversion, same shape (the existing copy kernel).
// FLOP/s of `threads` threads running vector multiply-adds for about `seconds` (benchmarks only).
using FmaProbeFn = double (*)(int threads, double seconds);
extern DispatchStub<FmaProbeFn> fma_probe_stub;

using CopyFn = void (*)(const Tensor& dst, const Tensor& src);
extern DispatchStub<CopyFn> copy_stub;

}  // namespace ember
