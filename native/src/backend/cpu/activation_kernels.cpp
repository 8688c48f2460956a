// CPU kernels of the fused activations (interfaces in src/ops/kernels.h, Note [fused
// activations]): one pass forward and one pass backward, float32 on vec_math.h's vectors.
#include <cmath>

#include "backend/cpu/vec_loops.h"
#include "backend/cpu/vec_math.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

using vmath::VD;
using vmath::VF;

constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kTanhK = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kTanhC = 0.044715;

double sigmoid_of(double x) {
  return x < 0 ? std::exp(x) / (1.0 + std::exp(x)) : 1.0 / (1.0 + std::exp(-x));
}
// log(1 + e^x) without overflow
double softplus_of(double x) {
  return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
}
double mish_tanh(double x) {  // tanh(softplus(x)) = n (n + 2) / (n (n + 2) + 2), n = e^x
  const double n = std::exp(std::min(x, 20.0));
  return x > 20 ? 1.0 : n * (n + 2) / (n * (n + 2) + 2);
}

// gelu in float64: x/2 erfc(u), u = -x/sqrt 2. Far left erfc magnifies the rounding of u (its
// relative slope is 2u^2), so u's rounding error d is put back to first order:
// erfc(u + d) = erfc(u) - d 2/sqrt(pi) e^(-u^2).
double gelu_double(double x) {
  constexpr double kLo = -4.833646656726457e-17;  // sqrt(1/2) - kSqrtHalf
  const double u = -x * kSqrtHalf;
  const double d = std::isfinite(u) ? std::fma(-x, kSqrtHalf, -u) - x * kLo : 0.0;
  return 0.5 * x * (std::erfc(u) - d * 1.12837916709551257390 * std::exp(-u * u));
}

// clamp(x + 3, 0, 6), a NaN kept, as PyTorch's maximum/minimum keep it
VF shifted_relu6(VF x) {
  const VF y = x + 3.0f;
  const VF low = vmath::select(y < 0.0f, splat(0.0f), y);
  return vmath::select(low > 6.0f, splat(6.0f), low);
}
double shifted_relu6(double x) {
  const double y = x + 3.0;
  const double low = y < 0.0 ? 0.0 : y;
  return low > 6.0 ? 6.0 : low;
}

template <typename T>
void forward(ActivationOp op, const Tensor& out, const Tensor& in, double beta, double threshold) {
  switch (op) {
    case ActivationOp::Gelu:
      return vec_map<T, 1>({out, in}, [](VF x) { return vmath::gelu(x); }, gelu_double);
    case ActivationOp::GeluTanh:
      return vec_map<T, 1>(
          {out, in}, [](VF x) { return vmath::gelu_tanh(x); },
          [](double x) { return x * sigmoid_of(2 * kTanhK * (x + kTanhC * x * x * x)); });
    case ActivationOp::Silu:
      return vec_map<T, 1>(
          {out, in}, [](VF x) { return vmath::silu(x); }, [](double x) { return x * sigmoid_of(x); });
    case ActivationOp::Mish:
      return vec_map<T, 1>(
          {out, in}, [](VF x) { return vmath::mish(x); }, [](double x) { return x * mish_tanh(x); });
    case ActivationOp::Softplus: {
      const float bf = static_cast<float>(beta), tf = static_cast<float>(threshold);
      return vec_map<T, 1>(
          {out, in},
          [=](VF x) {
            const VF y = x * bf;
            return vmath::select(y > tf, x, vmath::softplus(y) / bf);
          },
          [=](double x) { return x * beta > threshold ? x : softplus_of(x * beta) / beta; });
    }
    case ActivationOp::Hardswish:  // x clamp(x + 3, 0, 6) / 6, in PyTorch's order of operations
      return vec_map<T, 1>(
          {out, in}, [](VF x) { return x * shifted_relu6(x) / 6.0f; },
          [](double x) { return x * shifted_relu6(x) / 6.0; });
    case ActivationOp::Hardsigmoid:
      return vec_map<T, 1>(
          {out, in}, [](VF x) { return shifted_relu6(x) / 6.0f; },
          [](double x) { return shifted_relu6(x) / 6.0; });
  }
}

template <typename T>
void backward(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& in, double beta,
              double threshold) {
  switch (op) {
    case ActivationOp::Gelu:  // Phi(x) + x phi(x)
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [](VF g, VF x) {
            return g * vmath::via_double(x, [](VD v) {
                     return 0.5 * vmath::erfc_d(v * -kSqrtHalf) + v * kInvSqrt2Pi * vmath::exp(-0.5 * v * v);
                   });
          },
          [](double g, double x) {
            return g * (0.5 * std::erfc(-x * kSqrtHalf) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x));
          });
    case ActivationOp::GeluTanh:  // with s = sigmoid(2u): s + 2 x s (1 - s) u'(x)
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [](VF g, VF x) {
            return g * vmath::via_double(x, [](VD v) {
                     const VD x2 = v * v;
                     const VD u2 = 2.0 * kTanhK * vmath::fmadd(kTanhC * v, x2, v);
                     const VD e = vmath::exp(-vmath::vabs(u2));
                     const VD s = vmath::select(u2 < 0.0, e / (1.0 + e), 1.0 / (1.0 + e));
                     return s + 2.0 * v * s * (1.0 - s) * kTanhK * (1.0 + 3.0 * kTanhC * x2);
                   });
          },
          [](double g, double x) {
            const double s = sigmoid_of(2 * kTanhK * (x + kTanhC * x * x * x));
            return g * (s + 2 * x * s * (1 - s) * kTanhK * (1 + 3 * kTanhC * x * x));
          });
    case ActivationOp::Silu:  // s (1 + x (1 - s))
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [](VF g, VF x) {
            return g * vmath::via_double(x, [](VD v) {
                     const VD s = vmath::sigmoid_d(v);
                     return s * (1.0 + v * (1.0 - s));
                   });
          },
          [](double g, double x) {
            const double s = sigmoid_of(x);
            return g * s * (1 + x * (1 - s));
          });
    case ActivationOp::Mish:  // t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [](VF g, VF x) {
            return g * vmath::via_double(x, [](VD v) {
                     const VD n = vmath::exp(vmath::select(v > 20.0, splat(20.0), v));
                     const VD q = n * (n + 2.0);
                     const VD t = vmath::select(v > 20.0, splat(1.0), q / (q + 2.0));
                     return t + v * vmath::sigmoid_d(v) * (1.0 - t * t);
                   });
          },
          [](double g, double x) {
            const double t = mish_tanh(x);
            return g * (t + x * sigmoid_of(x) * (1 - t * t));
          });
    case ActivationOp::Softplus: {
      const float bf = static_cast<float>(beta), tf = static_cast<float>(threshold);
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [=](VF g, VF x) {
            const VF y = x * bf;
            return vmath::select(y > tf, g, g * vmath::sigmoid(y));
          },
          [=](double g, double x) { return x * beta > threshold ? g : g * sigmoid_of(x * beta); });
    }
    case ActivationOp::Hardswish:  // 0 below -3, x/3 + 1/2 up to 3, 1 above (PyTorch's branches)
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [](VF g, VF x) {
            const VF mid = g * (x / 3.0f + 0.5f);
            return vmath::select(x < -3.0f, splat(0.0f), vmath::select(x <= 3.0f, mid, g));
          },
          [](double g, double x) { return x < -3.0   ? 0.0
                                          : x <= 3.0 ? g * (x / 3.0 + 0.5)
                                                     : g; });
    case ActivationOp::Hardsigmoid:  // 1/6 strictly inside (-3, 3), else 0
      return vec_map<T, 2>(
          {grad_in, grad_out, in},
          [](VF g, VF x) { return vmath::select((x > -3.0f) & (x < 3.0f), g / 6.0f, splat(0.0f)); },
          [](double g, double x) { return x > -3.0 && x < 3.0 ? g / 6.0 : 0.0; });
  }
}

void activation_kernel(ActivationOp op, const Tensor& out, const Tensor& in, double beta, double threshold) {
  visit<kAllFloat>(in.dtype(), "activation",
                   [&](auto tag) { forward<typename decltype(tag)::type>(op, out, in, beta, threshold); });
}

void activation_backward_kernel(ActivationOp op, const Tensor& grad_in, const Tensor& grad_out,
                                const Tensor& in, double beta, double threshold) {
  visit<kAllFloat>(in.dtype(), "activation_backward", [&](auto tag) {
    backward<typename decltype(tag)::type>(op, grad_in, grad_out, in, beta, threshold);
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(activation_stub, &activation_kernel);
EMBER_REGISTER_CPU_KERNEL(activation_backward_stub, &activation_backward_kernel);

}  // namespace ember::EMBER_CPU_NS
