// CPU kernels of the fused transformer inference ops (interface in src/ops/kernels.h, op bodies
// in src/ops/transformer/fused.cpp).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/cpu/blas.h"
#include "backend/cpu/row_math.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// One task per (sequence, head): the scores S = scale Q_h K_h^T and the output P V_h are two
// OpenBLAS GEMMs reading the strided head columns in place; between them each score row gets a
// max-subtracted softmax (softmax_row). Tasks run in parallel, each GEMM
// single-threaded (Note [BLAS threads]).
template <typename T>
void packed_attention_typed(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& q_offsets, const Tensor& k_offsets, int64_t heads, double scale) {
  const int64_t sequences = q_offsets.numel() - 1;
  const int64_t head_dim = out.size(1) / heads;
  const int64_t qs = q.stride(0), ks = k.stride(0), vs = v.stride(0), os = out.stride(0);
  const T* qp = q.data<T>();
  const T* kp = k.data<T>();
  const T* vp = v.data<T>();
  T* op = out.data<T>();
  const int64_t* qo = q_offsets.data<int64_t>();
  const int64_t* ko = k_offsets.data<int64_t>();
  auto task = [&](int64_t t, std::vector<T>& scores) {
    const int64_t s = t / heads, h = t % heads;
    const int64_t q0 = qo[s], lq = qo[s + 1] - q0, k0 = ko[s], lk = ko[s + 1] - k0;
    if (lq == 0 || lk == 0) return;  // no keys: the output rows stay zero (a "safe" softmax)
    const int64_t col = h * head_dim;
    scores.resize(static_cast<size_t>(lq * lk));
    blas::gemm<T>({false, qs}, {true, ks}, lq, lk, head_dim, static_cast<T>(scale), qp + q0 * qs + col,
                  kp + k0 * ks + col, T(0), scores.data(), lk);
    for (int64_t i = 0; i < lq; ++i)
      softmax_row<T>(scores.data() + i * lk, scores.data() + i * lk, lk, false);
    blas::gemm<T>({false, lk}, {false, vs}, lq, head_dim, lk, T(1), scores.data(), vp + k0 * vs + col, T(0),
                  op + q0 * os + col, os);
  };
  // One (sequence, head) per problem, of the mean sequence's size: two GEMMs of lq x lk x head_dim.
  const int64_t tasks = sequences * heads, per = std::max<int64_t>(sequences, 1);
  const int64_t work = 4 * head_dim * ((qo[sequences] - qo[0]) / per) * ((ko[sequences] - ko[0]) / per);
  blas::for_each_problem(tasks, work, [&](int64_t begin, int64_t end) {
    std::vector<T> scores;
    for (int64_t t = begin; t < end; ++t) task(t, scores);
  });
}

// out (contiguous [rows, features], holding the input) <- LayerNorm(out + residual) * weight + bias,
// as layer_norm computes a row (layer_norm_row).
template <typename T>
void add_layer_norm_typed(const Tensor& out, const Tensor& residual, const Tensor& weight, const Tensor& bias,
                          double eps) {
  const int64_t rows = out.size(0), n = out.size(1);
  T* o = out.data<T>();
  const T* r = residual.defined() ? residual.data<T>() : nullptr;
  const T* w = weight.data<T>();
  const T* b = bias.data<T>();
  parallel_for(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t row = begin; row < end; ++row) {
                   T* x = o + row * n;
                   if (r != nullptr) {
                     const T* y = r + row * n;
                     for (int64_t c = 0; c < n; ++c) x[c] += y[c];
                   }
                   layer_norm_row<T>(x, x, n, w, b, eps);
                 }
               });
}

void packed_attention_kernel(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& q_offsets, const Tensor& k_offsets, int64_t heads, double scale) {
  visit<kFloats>(out.dtype(), "_packed_attention", [&](auto tag) {
    packed_attention_typed<typename decltype(tag)::type>(out, q, k, v, q_offsets, k_offsets, heads, scale);
  });
}

void add_layer_norm_kernel(const Tensor& out, const Tensor& residual, const Tensor& weight,
                           const Tensor& bias, double eps) {
  visit<kFloats>(out.dtype(), "_add_layer_norm", [&](auto tag) {
    add_layer_norm_typed<typename decltype(tag)::type>(out, residual, weight, bias, eps);
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(packed_attention_stub, &packed_attention_kernel);
EMBER_REGISTER_CPU_KERNEL(add_layer_norm_stub, &add_layer_norm_kernel);

}  // namespace ember::EMBER_CPU_NS
