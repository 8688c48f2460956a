// CPU kernels of the multi-tensor optimizer steps (interfaces in src/ops/kernels.h, Note
// [fused optimizers]): every parameter of a step in one call, each element read and written once,
// in the order of operations of the per-parameter Python loop so results agree with it.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/cpu/vec.h"
#include "backend/cpu/vec_math.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

using vmath::vmax;
using vmath::vsqrt;

// One work unit: elements [begin, end) of tensor `index`.
struct Piece {
  int64_t index, begin, end;
};
constexpr int64_t kPiece = int64_t(1) << 15;

std::vector<Piece> pieces_of(const std::vector<Tensor>& params) {
  std::vector<Piece> out;
  for (int64_t i = 0; i < static_cast<int64_t>(params.size()); ++i)
    for (int64_t b = 0; b < params[i].numel(); b += kPiece)
      out.push_back({i, b, std::min(params[i].numel(), b + kPiece)});
  return out;
}

// Runs fn(elem)(p, g, s0, s1, s2) over every element, with `lists` the per-parameter tensor lists
// (params, grads, then up to three state lists; an empty state list passes null pointers). fn is
// instantiated for scalars of the compute type and for its vectors.
template <typename T, typename F>
void for_each_element(const std::vector<const std::vector<Tensor>*>& lists, const F& fn) {
  using C = acc_t<T>;
  const std::vector<Tensor>& params = *lists[0];
  const std::vector<Piece> pieces = pieces_of(params);
  const int64_t n_lists = static_cast<int64_t>(lists.size());
  parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t q = lo; q < hi; ++q) {
      const Piece& pc = pieces[q];
      T* ptr[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
      for (int64_t k = 0; k < n_lists; ++k) {
        const std::vector<Tensor>& list = *lists[k];
        if (!list.empty()) ptr[k] = list[pc.index].template data<T>();
      }
      int64_t i = pc.begin;
      if constexpr (std::is_same_v<T, C>) {
        constexpr int64_t L = kLanes<C>;
        for (; i + L <= pc.end; i += L) {
          Vec<C> v[5];
          for (int k = 0; k < 5; ++k) v[k] = ptr[k] ? load(ptr[k] + i) : Vec<C>{};
          fn(v[0], v[1], v[2], v[3], v[4]);
          for (int k = 0; k < 5; ++k)
            if (ptr[k] && k != 1) store(ptr[k] + i, v[k]);
        }
      }
      for (; i < pc.end; ++i) {
        C v[5];
        for (int k = 0; k < 5; ++k) v[k] = ptr[k] ? static_cast<C>(ptr[k][i]) : C(0);
        fn(v[0], v[1], v[2], v[3], v[4]);
        for (int k = 0; k < 5; ++k)
          if (ptr[k] && k != 1) ptr[k][i] = static_cast<T>(v[k]);
      }
    }
  });
}

// The per-parameter step counters (0-dim tensors) advance by one; returns the new values.
std::vector<double> advance(const std::vector<Tensor>& steps) {
  std::vector<double> out;
  for (const Tensor& s : steps) {
    visit<kAllFloat | kInts>(s.dtype(), "optimizer step", [&](auto tag) {
      using S = typename decltype(tag)::type;
      S& v = *s.data<S>();
      v = static_cast<S>(static_cast<double>(v) + 1);
      out.push_back(static_cast<double>(v));
    });
  }
  return out;
}

// The lists whose elements stay shared by all parameters but whose scalars differ per parameter
// (bias corrections) run one parameter at a time.
std::vector<Tensor> one(const std::vector<Tensor>& list, size_t i) {
  return list.empty() ? std::vector<Tensor>{} : std::vector<Tensor>{list[i]};
}

template <typename T>
void sgd_typed(const FusedSgdArgs& a) {
  using C = acc_t<T>;
  const C wd = C(a.weight_decay), mom = C(a.momentum), lr = C(a.lr), damp = C(1 - a.dampening);
  const bool use_buf = a.momentum != 0, first = a.is_first_step, nesterov = a.nesterov, maximize = a.maximize;
  static const std::vector<Tensor> kNone;
  for_each_element<T>({a.params, a.grads, use_buf ? a.momentum_buffers : &kNone},
                      [&](auto& p, auto& g0, auto& buf, auto&, auto&) {
                        auto g = maximize ? -g0 : g0;
                        if (wd != 0) g = g + wd * p;
                        if (use_buf) {
                          buf = first ? g : buf * mom + g * damp;
                          g = nesterov ? g + mom * buf : buf;
                        }
                        p = p + g * (-lr);
                      });
}

template <typename T>
void adam_typed(const FusedAdamArgs& a) {
  using C = acc_t<T>;
  const std::vector<double> steps = advance(*a.state_steps);
  for (size_t i = 0; i < a.params->size(); ++i) {
    const double bc1 = 1 - std::pow(a.beta1, steps[i]), bc2_sqrt = std::sqrt(1 - std::pow(a.beta2, steps[i]));
    const C lr = C(a.lr), wd = C(a.weight_decay), b1 = C(a.beta1), b2 = C(a.beta2), eps = C(a.eps);
    // coefficients in double, then rounded once, as the Python loop passes them to its kernels
    const C step_size = C(-a.lr / bc1), bc2 = C(bc2_sqrt), decay = C(1 - a.lr * a.weight_decay);
    const C one_minus_b1 = C(1 - a.beta1), one_minus_b2 = C(1 - a.beta2);
    const bool amsgrad = a.amsgrad, maximize = a.maximize, decoupled = a.decoupled_weight_decay;
    (void)lr;
    const auto p = one(*a.params, i), g = one(*a.grads, i), m = one(*a.exp_avgs, i),
               v = one(*a.exp_avg_sqs, i), mx = amsgrad ? one(*a.max_exp_avg_sqs, i) : std::vector<Tensor>{};
    for_each_element<T>({&p, &g, &m, &v, &mx}, [&](auto& pp, auto& g0, auto& mm, auto& vv, auto& mxx) {
      auto gg = maximize ? -g0 : g0;
      if (wd != 0) {
        if (decoupled) {
          pp = pp * decay;
        } else {
          gg = gg + wd * pp;
        }
      }
      mm = mm * b1 + gg * one_minus_b1;
      vv = vv * b2 + (gg * gg) * one_minus_b2;
      auto second = vv;
      if (amsgrad) {
        mxx = vmax(mxx, vv);
        second = mxx;
      }
      pp = pp + (mm / (vsqrt(second) / bc2 + eps)) * step_size;
    });
  }
}

template <typename T>
void adagrad_typed(const FusedAdagradArgs& a) {
  using C = acc_t<T>;
  const std::vector<double> steps = advance(*a.state_steps);
  for (size_t i = 0; i < a.params->size(); ++i) {
    const C clr = C(-a.lr / (1 + (steps[i] - 1) * a.lr_decay)), wd = C(a.weight_decay), eps = C(a.eps);
    const bool maximize = a.maximize;
    const auto p = one(*a.params, i), g = one(*a.grads, i), s = one(*a.state_sums, i);
    for_each_element<T>({&p, &g, &s}, [&](auto& pp, auto& g0, auto& ss, auto&, auto&) {
      auto gg = maximize ? -g0 : g0;
      if (wd != 0) gg = gg + wd * pp;
      ss = ss + gg * gg;
      pp = pp + (gg / (vsqrt(ss) + eps)) * clr;
    });
  }
}

template <typename T>
void rmsprop_typed(const FusedRmspropArgs& a) {
  using C = acc_t<T>;
  advance(*a.state_steps);
  const C lr = C(a.lr), alpha = C(a.alpha), eps = C(a.eps), wd = C(a.weight_decay), mom = C(a.momentum);
  const C one_minus_alpha = C(1 - a.alpha);
  const bool centered = a.centered, maximize = a.maximize, use_buf = a.momentum > 0;
  static const std::vector<Tensor> kNone;
  for_each_element<T>({a.params, a.grads, a.square_avgs, centered ? a.grad_avgs : &kNone,
                       use_buf ? a.momentum_buffers : &kNone},
                      [&](auto& p, auto& g0, auto& sq, auto& ga, auto& buf) {
                        auto g = maximize ? -g0 : g0;
                        if (wd != 0) g = g + wd * p;
                        sq = sq * alpha + (g * g) * one_minus_alpha;
                        auto avg = vsqrt(sq) + eps;
                        if (centered) {
                          ga = ga * alpha + g * one_minus_alpha;
                          avg = vsqrt(sq - ga * ga) + eps;
                        }
                        if (use_buf) {
                          buf = buf * mom + g / avg;
                          p = p + buf * (-lr);
                        } else {
                          p = p + (g / avg) * (-lr);
                        }
                      });
}

template <template <typename> class Body, typename Args>
void by_dtype(const Args& a, const char* name) {
  if (a.params->empty()) return;
  visit<kAllFloat>((*a.params)[0].dtype(), name,
                   [&](auto tag) { Body<typename decltype(tag)::type>::run(a); });
}
template <typename T>
struct Sgd {
  static void run(const FusedSgdArgs& a) { sgd_typed<T>(a); }
};
template <typename T>
struct Adam {
  static void run(const FusedAdamArgs& a) { adam_typed<T>(a); }
};
template <typename T>
struct Adagrad {
  static void run(const FusedAdagradArgs& a) { adagrad_typed<T>(a); }
};
template <typename T>
struct Rmsprop {
  static void run(const FusedRmspropArgs& a) { rmsprop_typed<T>(a); }
};

void sgd_kernel(const FusedSgdArgs& a) {
  by_dtype<Sgd>(a, "_fused_sgd_");
}
void adam_kernel(const FusedAdamArgs& a) {
  by_dtype<Adam>(a, "_fused_adam_");
}
void adagrad_kernel(const FusedAdagradArgs& a) {
  by_dtype<Adagrad>(a, "_fused_adagrad_");
}
void rmsprop_kernel(const FusedRmspropArgs& a) {
  by_dtype<Rmsprop>(a, "_fused_rmsprop_");
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(fused_sgd_stub, &sgd_kernel);
EMBER_REGISTER_CPU_KERNEL(fused_adam_stub, &adam_kernel);
EMBER_REGISTER_CPU_KERNEL(fused_adagrad_stub, &adagrad_kernel);
EMBER_REGISTER_CPU_KERNEL(fused_rmsprop_stub, &rmsprop_kernel);

}  // namespace ember::EMBER_CPU_NS
