// RNN-T loss (Graves 2012): per-sequence forward/backward over the (T, U+1) lattice, with the
// gradient with respect to the logits (fused log-softmax) or to log-probabilities.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common.h"

namespace py = pybind11;

namespace emberaudio {
namespace {

inline double log_add(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

struct RnntShape {
  int64_t max_t, max_u1, vocab;
};

// One batch item: logits (max_t, max_u1, vocab), of which the first t_len x (u_len + 1) are used.
// Computes in double whatever the input dtype; writes the cost and (optionally) the gradient.
template <typename T>
void rnnt_one(const T* logits, const int32_t* targets, int64_t t_len, int64_t u_len, const RnntShape& s,
              int64_t blank, double clamp, bool fused, T* cost, T* grad) {
  const int64_t tn = t_len, un = u_len + 1, v = s.vocab;
  auto at = [&](int64_t t, int64_t u) { return logits + (t * s.max_u1 + u) * v; };
  std::vector<double> denom(tn * un, 0.0), lp_blank(tn * un), lp_emit(tn * un, -INFINITY);
  for (int64_t t = 0; t < tn; ++t) {
    for (int64_t u = 0; u < un; ++u) {
      const T* row = at(t, u);
      double d = 0.0;
      if (fused) {  // log-sum-exp of the row, so that log p = logit - denom
        double m = -INFINITY;
        for (int64_t k = 0; k < v; ++k) m = std::max(m, double(row[k]));
        double sum = 0.0;
        for (int64_t k = 0; k < v; ++k) sum += std::exp(double(row[k]) - m);
        d = m + std::log(sum);
      }
      denom[t * un + u] = d;
      lp_blank[t * un + u] = double(row[blank]) - d;
      if (u < un - 1) lp_emit[t * un + u] = double(row[targets[u]]) - d;
    }
  }
  // alpha(t, u): log-prob of reaching node (t, u); beta(t, u): of finishing from it (the final
  // blank at (T-1, U) included).
  std::vector<double> alpha(tn * un), beta(tn * un);
  for (int64_t t = 0; t < tn; ++t) {
    for (int64_t u = 0; u < un; ++u) {
      double a = (t == 0 && u == 0) ? 0.0 : -INFINITY;
      if (t > 0) a = log_add(a, alpha[(t - 1) * un + u] + lp_blank[(t - 1) * un + u]);
      if (u > 0) a = log_add(a, alpha[t * un + u - 1] + lp_emit[t * un + u - 1]);
      alpha[t * un + u] = a;
    }
  }
  for (int64_t t = tn - 1; t >= 0; --t) {
    for (int64_t u = un - 1; u >= 0; --u) {
      double b = (t == tn - 1 && u == un - 1) ? lp_blank[t * un + u] : -INFINITY;
      if (t < tn - 1) b = log_add(b, beta[(t + 1) * un + u] + lp_blank[t * un + u]);
      if (u < un - 1) b = log_add(b, beta[t * un + u + 1] + lp_emit[t * un + u]);
      beta[t * un + u] = b;
    }
  }
  const double log_likelihood = beta[0];
  *cost = T(-log_likelihood);
  if (grad == nullptr) return;
  for (int64_t t = 0; t < tn; ++t) {
    for (int64_t u = 0; u < un; ++u) {
      const T* row = at(t, u);
      T* g = grad + (t * s.max_u1 + u) * v;
      const double a = alpha[t * un + u];
      // d(-log P)/d(log p_k) = -exp(alpha + log p_k + beta(next) - log P) along used edges.
      const double next_blank = t < tn - 1 ? beta[(t + 1) * un + u] : (u == un - 1 ? 0.0 : -INFINITY);
      const double g_blank = -std::exp(a + lp_blank[t * un + u] + next_blank - log_likelihood);
      const double g_emit =
          u < un - 1 ? -std::exp(a + lp_emit[t * un + u] + beta[t * un + u + 1] - log_likelihood) : 0.0;
      // Through the softmax: add p_k times the node's occupancy exp(alpha + beta - log P).
      const double occupancy = fused ? std::exp(a + beta[t * un + u] - log_likelihood) : 0.0;
      for (int64_t k = 0; k < v; ++k) {
        double gk = fused ? std::exp(double(row[k]) - denom[t * un + u]) * occupancy : 0.0;
        if (k == blank) gk += g_blank;
        if (u < un - 1 && k == targets[u]) gk += g_emit;
        if (clamp > 0) gk = std::min(std::max(gk, -clamp), clamp);
        g[k] = T(gk);
      }
    }
  }
}

template <typename T>
py::tuple rnnt_impl(py::array_t<T, py::array::c_style> logits,
                    py::array_t<int32_t, py::array::c_style> targets,
                    py::array_t<int32_t, py::array::c_style> logit_lengths,
                    py::array_t<int32_t, py::array::c_style> target_lengths, int64_t blank, double clamp,
                    bool fused, bool need_grad) {
  if (logits.ndim() != 4) throw std::invalid_argument("logits must be 4-D (batch, time, target, class)");
  if (targets.ndim() != 2) throw std::invalid_argument("targets must be 2-D (batch, max target length)");
  if (logit_lengths.ndim() != 1) throw std::invalid_argument("logit_lengths must be 1-D");
  if (target_lengths.ndim() != 1) throw std::invalid_argument("target_lengths must be 1-D");
  const int64_t b = logits.shape(0);
  const RnntShape s{logits.shape(1), logits.shape(2), logits.shape(3)};
  if (logit_lengths.shape(0) != b)
    throw std::invalid_argument("batch dimension mismatch between logits and logit_lengths");
  if (target_lengths.shape(0) != b)
    throw std::invalid_argument("batch dimension mismatch between logits and target_lengths");
  if (targets.shape(0) != b)
    throw std::invalid_argument("batch dimension mismatch between logits and targets");
  if (blank < 0 || blank >= s.vocab)
    throw std::invalid_argument("blank must be within [0, logits.shape[-1])");
  if (targets.shape(1) + 1 != s.max_u1)
    throw std::invalid_argument("target length mismatch: logits.shape[2] must be targets.shape[1] + 1");
  const int32_t* ll = logit_lengths.data();
  const int32_t* tl = target_lengths.data();
  const int32_t* tg = targets.data();
  int64_t max_ll = 0, max_tl = 0;
  for (int64_t i = 0; i < b; ++i) {
    if (ll[i] < 1 || ll[i] > s.max_t)
      throw std::invalid_argument("logit_lengths[" + std::to_string(i) + "] = " + std::to_string(ll[i]) +
                                  " is outside [1, logits.shape[1] = " + std::to_string(s.max_t) + "]");
    if (tl[i] < 0 || tl[i] >= s.max_u1)
      throw std::invalid_argument("target_lengths[" + std::to_string(i) + "] = " + std::to_string(tl[i]) +
                                  " is outside [0, logits.shape[2] - 1 = " + std::to_string(s.max_u1 - 1) +
                                  "]");
    for (int64_t u = 0; u < tl[i]; ++u) {
      const int32_t y = tg[i * (s.max_u1 - 1) + u];
      if (y < 0 || y >= s.vocab)
        throw std::invalid_argument("targets[" + std::to_string(i) + ", " + std::to_string(u) +
                                    "] = " + std::to_string(y) +
                                    " is outside [0, num classes = " + std::to_string(s.vocab) + ")");
    }
    max_ll = std::max<int64_t>(max_ll, ll[i]);
    max_tl = std::max<int64_t>(max_tl, tl[i]);
  }
  if (b > 0 && max_ll != s.max_t)
    throw std::invalid_argument("input length mismatch: logits.shape[1] must equal max(logit_lengths)");
  if (b > 0 && max_tl + 1 != s.max_u1)
    throw std::invalid_argument("output length mismatch: logits.shape[2] must equal max(target_lengths) + 1");

  py::array_t<T> costs(b);
  py::object grads = py::none();
  T* gp = nullptr;
  if (need_grad) {
    py::array_t<T> g({b, s.max_t, s.max_u1, s.vocab});
    gp = g.mutable_data();
    std::fill(gp, gp + g.size(), T(0));
    grads = g;
  }
  T* cp = costs.mutable_data();
  const T* lp = logits.data();
  {
    py::gil_scoped_release release;
    parallel_for(b, [&](int64_t i) {
      const int64_t item = s.max_t * s.max_u1 * s.vocab;
      rnnt_one<T>(lp + i * item, tg + i * (s.max_u1 - 1), ll[i], tl[i], s, blank, clamp, fused, cp + i,
                  gp ? gp + i * item : nullptr);
    });
  }
  return py::make_tuple(costs, grads);
}

}  // namespace

void register_rnnt(py::module_& m) {
  m.def("rnnt_loss_f32", &rnnt_impl<float>, py::arg("logits"), py::arg("targets"), py::arg("logit_lengths"),
        py::arg("target_lengths"), py::arg("blank"), py::arg("clamp"), py::arg("fused_log_softmax"),
        py::arg("need_grad"));
  m.def("rnnt_loss_f64", &rnnt_impl<double>, py::arg("logits"), py::arg("targets"), py::arg("logit_lengths"),
        py::arg("target_lengths"), py::arg("blank"), py::arg("clamp"), py::arg("fused_log_softmax"),
        py::arg("need_grad"));
}

}  // namespace emberaudio
