// CPU kernels of the multi-tensor optimizer steps (interfaces in src/ops/kernels.h, Note
// [fused optimizers]): every parameter of a step in one call, each element read and written once,
// in the order of operations of the per-parameter Python loop so results agree with it.
#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <type_traits>
#include <utility>
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

// (v[0], ..., v[N-1]) as a tuple of references, for std::apply.
template <typename V, size_t... K>
auto as_refs(V* v, std::index_sequence<K...>) {
  return std::tie(v[K]...);
}

// Runs body(p, g, s...) over every element of the N lists (params, grads, then the state lists
// the step uses; every one holds a tensor per parameter). body is instantiated for scalars of the
// compute type and for its vectors, and assigns the values it updates.
//
// Note [optimizer body flags]: a step's options (momentum or not, weight decay, maximize, ...)
// are made compile-time constants by with_flags before the loop, and the body is copied into the
// loop with its captures as values. Tested at run time per vector, with the scalars read through
// the caller's closure (a float store may alias them), the SGD loop ran at a third of add_'s speed.
template <typename T, size_t N, typename F>
void for_each_element(const std::array<const std::vector<Tensor>*, N>& lists, const F& fn) {
  using C = acc_t<T>;
  const std::vector<Piece> pieces = pieces_of(*lists[0]);
  parallel_for(0, static_cast<int64_t>(pieces.size()), 1, [&](int64_t lo, int64_t hi) {
    const F body = fn;
    for (int64_t q = lo; q < hi; ++q) {
      const Piece& pc = pieces[q];
      T* ptr[N];
      for (size_t k = 0; k < N; ++k) ptr[k] = (*lists[k])[pc.index].template data<T>();
      int64_t i = pc.begin;
      if constexpr (std::is_same_v<T, C>) {
        constexpr int64_t L = kLanes<C>;
        for (; i + L <= pc.end; i += L) {
          Vec<C> v[N];
          for (size_t k = 0; k < N; ++k) v[k] = load(ptr[k] + i);
          std::apply(body, as_refs(v, std::make_index_sequence<N>{}));
          for (size_t k = 0; k < N; ++k)
            if (k != 1) store(ptr[k] + i, v[k]);
        }
      }
      for (; i < pc.end; ++i) {
        C v[N];
        for (size_t k = 0; k < N; ++k) v[k] = static_cast<C>(ptr[k][i]);
        std::apply(body, as_refs(v, std::make_index_sequence<N>{}));
        for (size_t k = 0; k < N; ++k)
          if (k != 1) ptr[k][i] = static_cast<T>(v[k]);
      }
    }
  });
}

// Calls f(std::bool_constant<b>...) for the runtime flags b... (Note [optimizer body flags]).
template <typename F>
void with_flags(const F& f) {
  f();
}
template <typename F, typename... B>
void with_flags(const F& f, bool first, B... rest) {
  auto bound = [&](auto flag) { with_flags([&](auto... others) { f(flag, others...); }, rest...); };
  if (first) {
    bound(std::true_type{});
  } else {
    bound(std::false_type{});
  }
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
  const bool first = a.is_first_step, nesterov = a.nesterov;
  with_flags(
      [&](auto use_buf, auto decay, auto maximize) {
        auto step = [=](auto& p, const auto& g0, auto& buf) {
          auto g = g0;
          if constexpr (maximize) g = -g0;
          if constexpr (decay) g = g + wd * p;
          if constexpr (use_buf) {
            buf = first ? g : buf * mom + g * damp;
            g = nesterov ? g + mom * buf : buf;
          }
          p = p + g * (-lr);
        };
        if constexpr (use_buf) {
          for_each_element<T>(std::array{a.params, a.grads, a.momentum_buffers}, step);
        } else {
          for_each_element<T>(std::array{a.params, a.grads}, [=](auto& p, const auto& g0) {
            auto unused = p;
            step(p, g0, unused);
          });
        }
      },
      a.momentum != 0, a.weight_decay != 0, a.maximize);
}

template <typename T>
void adam_typed(const FusedAdamArgs& a) {
  using C = acc_t<T>;
  const std::vector<double> steps = advance(*a.state_steps);
  for (size_t i = 0; i < a.params->size(); ++i) {
    const double bc1 = 1 - std::pow(a.beta1, steps[i]), bc2_sqrt = std::sqrt(1 - std::pow(a.beta2, steps[i]));
    const C wd = C(a.weight_decay), b1 = C(a.beta1), b2 = C(a.beta2), eps = C(a.eps);
    // coefficients in double, then rounded once, as the Python loop passes them to its kernels
    const C step_size = C(-a.lr / bc1), bc2 = C(bc2_sqrt), decay = C(1 - a.lr * a.weight_decay);
    const C one_minus_b1 = C(1 - a.beta1), one_minus_b2 = C(1 - a.beta2);
    const auto p = one(*a.params, i), g = one(*a.grads, i), m = one(*a.exp_avgs, i),
               v = one(*a.exp_avg_sqs, i),
               mx = a.amsgrad ? one(*a.max_exp_avg_sqs, i) : std::vector<Tensor>{};
    with_flags(
        [&](auto amsgrad, auto maximize, auto with_decay, auto decoupled) {
          auto step = [=](auto& pp, const auto& g0, auto& mm, auto& vv, auto& mxx) {
            auto gg = g0;
            if constexpr (maximize) gg = -g0;
            if constexpr (with_decay) {
              if constexpr (decoupled) {
                pp = pp * decay;
              } else {
                gg = gg + wd * pp;
              }
            }
            mm = mm * b1 + gg * one_minus_b1;
            vv = vv * b2 + (gg * gg) * one_minus_b2;
            auto second = vv;
            if constexpr (amsgrad) {
              mxx = vmax(mxx, vv);
              second = mxx;
            }
            pp = pp + (mm / (vsqrt(second) / bc2 + eps)) * step_size;
          };
          if constexpr (amsgrad) {
            for_each_element<T>(std::array{&p, &g, &m, &v, &mx}, step);
          } else {
            for_each_element<T>(std::array{&p, &g, &m, &v},
                                [=](auto& pp, const auto& g0, auto& mm, auto& vv) {
                                  auto unused = vv;
                                  step(pp, g0, mm, vv, unused);
                                });
          }
        },
        a.amsgrad, a.maximize, a.weight_decay != 0, a.decoupled_weight_decay);
  }
}

template <typename T>
void adagrad_typed(const FusedAdagradArgs& a) {
  using C = acc_t<T>;
  const std::vector<double> steps = advance(*a.state_steps);
  for (size_t i = 0; i < a.params->size(); ++i) {
    const C clr = C(-a.lr / (1 + (steps[i] - 1) * a.lr_decay)), wd = C(a.weight_decay), eps = C(a.eps);
    const auto p = one(*a.params, i), g = one(*a.grads, i), s = one(*a.state_sums, i);
    with_flags(
        [&](auto maximize, auto with_decay) {
          for_each_element<T>(std::array{&p, &g, &s}, [=](auto& pp, const auto& g0, auto& ss) {
            auto gg = g0;
            if constexpr (maximize) gg = -g0;
            if constexpr (with_decay) gg = gg + wd * pp;
            ss = ss + gg * gg;
            pp = pp + (gg / (vsqrt(ss) + eps)) * clr;
          });
        },
        a.maximize, a.weight_decay != 0);
  }
}

template <typename T>
void rmsprop_typed(const FusedRmspropArgs& a) {
  using C = acc_t<T>;
  advance(*a.state_steps);
  const C lr = C(a.lr), alpha = C(a.alpha), eps = C(a.eps), wd = C(a.weight_decay), mom = C(a.momentum);
  const C one_minus_alpha = C(1 - a.alpha);
  with_flags(
      [&](auto centered, auto use_buf, auto maximize, auto with_decay) {
        auto step = [=](auto& p, const auto& g0, auto& sq, auto& ga, auto& buf) {
          auto g = g0;
          if constexpr (maximize) g = -g0;
          if constexpr (with_decay) g = g + wd * p;
          sq = sq * alpha + (g * g) * one_minus_alpha;
          auto avg = vsqrt(sq) + eps;
          if constexpr (centered) {
            ga = ga * alpha + g * one_minus_alpha;
            avg = vsqrt(sq - ga * ga) + eps;
          }
          if constexpr (use_buf) {
            buf = buf * mom + g / avg;
            p = p + buf * (-lr);
          } else {
            p = p + (g / avg) * (-lr);
          }
        };
        // the state lists this configuration uses; the others are never read
        if constexpr (centered && use_buf) {
          for_each_element<T>(std::array{a.params, a.grads, a.square_avgs, a.grad_avgs, a.momentum_buffers},
                              step);
        } else if constexpr (centered) {
          for_each_element<T>(std::array{a.params, a.grads, a.square_avgs, a.grad_avgs},
                              [=](auto& p, const auto& g0, auto& sq, auto& ga) {
                                auto unused = sq;
                                step(p, g0, sq, ga, unused);
                              });
        } else if constexpr (use_buf) {
          for_each_element<T>(std::array{a.params, a.grads, a.square_avgs, a.momentum_buffers},
                              [=](auto& p, const auto& g0, auto& sq, auto& buf) {
                                auto unused = sq;
                                step(p, g0, sq, unused, buf);
                              });
        } else {
          for_each_element<T>(std::array{a.params, a.grads, a.square_avgs},
                              [=](auto& p, const auto& g0, auto& sq) {
                                auto unused = sq;
                                step(p, g0, sq, unused, unused);
                              });
        }
      },
      a.centered, a.momentum > 0, a.maximize, a.weight_decay != 0);
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
