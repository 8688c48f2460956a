// CPU kernels of the fused transformer inference ops (interface in src/ops/kernels.h, op bodies
// in src/ops/transformer/fused.cpp). Both loops are written as axpy updates over contiguous rows
// (not dot-product reductions), so the compiler vectorizes them without reassociating sums.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// One task per (sequence, head): K^T of the head is copied once into a [head_dim, keys] scratch,
// then each query row gets its scores (axpy over keys), a max-subtracted softmax, and the
// weighted sum of value rows (axpy over features).
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
  const T factor = static_cast<T>(scale);
  parallel_for(0, sequences * heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> keys_t, scores;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / heads, h = task % heads;
      const int64_t q0 = qo[s], lq = qo[s + 1] - q0, k0 = ko[s], lk = ko[s + 1] - k0;
      if (lq == 0 || lk == 0) continue;  // no keys: the output rows stay zero (a "safe" softmax)
      const int64_t col = h * head_dim;
      keys_t.assign(static_cast<size_t>(head_dim * lk), T(0));
      for (int64_t j = 0; j < lk; ++j) {
        const T* krow = kp + (k0 + j) * ks + col;
        for (int64_t d = 0; d < head_dim; ++d) keys_t[d * lk + j] = krow[d];
      }
      scores.resize(static_cast<size_t>(lk));
      for (int64_t i = 0; i < lq; ++i) {
        const T* qrow = qp + (q0 + i) * qs + col;
        T* sc = scores.data();
        std::fill(sc, sc + lk, T(0));
        for (int64_t d = 0; d < head_dim; ++d) {
          const T qd = qrow[d] * factor;
          const T* kt = keys_t.data() + d * lk;
          for (int64_t j = 0; j < lk; ++j) sc[j] += qd * kt[j];
        }
        T top = sc[0];
        for (int64_t j = 1; j < lk; ++j) top = std::max(top, sc[j]);
        T total = 0;
        for (int64_t j = 0; j < lk; ++j) {
          sc[j] = std::exp(sc[j] - top);
          total += sc[j];
        }
        T* orow = op + (q0 + i) * os + col;
        for (int64_t j = 0; j < lk; ++j) {
          const T p = sc[j] / total;
          const T* vrow = vp + (k0 + j) * vs + col;
          for (int64_t d = 0; d < head_dim; ++d) orow[d] += p * vrow[d];
        }
      }
    }
  });
}

// out (contiguous [rows, features], holding the input) <- LayerNorm(out + residual) * weight + bias,
// mean and variance in two passes over each row.
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
                   double mean = 0;
                   for (int64_t c = 0; c < n; ++c) mean += x[c];
                   mean /= static_cast<double>(n);
                   double var = 0;
                   for (int64_t c = 0; c < n; ++c) var += (x[c] - mean) * (x[c] - mean);
                   var /= static_cast<double>(n);
                   const T m = static_cast<T>(mean), rstd = static_cast<T>(1.0 / std::sqrt(var + eps));
                   for (int64_t c = 0; c < n; ++c) x[c] = (x[c] - m) * rstd * w[c] + b[c];
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
