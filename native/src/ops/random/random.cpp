// Random ops: rand, randn, randint, randperm, normal, bernoulli, multinomial, poisson, binomial and the
// in-place uniform_/normal_/bernoulli_ (kernels: src/backend/cpu/random_kernels.cpp).
//
// Note [PyTorch-compatible streams]
// With an mt19937 generator (the default), every op draws what PyTorch's CPU build draws after the
// same manual_seed, in the same order, through the same transformations (ATen's
// DistributionsHelper/TransformationHelper and its CPU distribution kernels), so a script seeded
// the same way gets the same numbers:
// - draws are serial, one op after another, and within an op in the order its output's elements
//   lie in memory (PyTorch's TensorIterator order: dims sorted by stride), whatever the thread count;
// - float32 (and float16/bfloat16) uniforms take the low 24 bits of one 32-bit draw, float64 ones
//   the low 53 bits of a 64-bit draw made of two (first one high); uniform_(a, b) = fma(u, b - a, a);
// - normal_ on a contiguous tensor of >= 16 elements fills uniforms and turns each block of 16 into
//   normals by Box-Muller (a ragged end redraws and redoes the last 16); smaller or strided tensors
//   take scalar Box-Muller pairs in float64 (the second value cached in the generator);
// - randint takes one 32-bit draw per element (x % range + low), or a 64-bit one from range 2^28;
// - randperm swaps position i with i + (draw % (n - i)), i = 0 .. n - 2;
// - bernoulli(p) compares a float32 uniform with float p and a float64 one with float64 p;
//   bernoulli_(p: float) and dropout a float64 uniform with p;
// - multinomial without replacement (or with one sample) takes argmax / topk of p / Exp(1) draws;
//   with replacement a float64 uniform per sample searched in the row's normalised cumulative sum;
// - poisson and binomial take float64 uniforms (53 bits of a 64-bit draw) as their samplers ask.
// PyTorch's MKL builds on Intel CPUs instead draw bernoulli_(p: float) — and so dropout — from MKL's
// own stream; that stream is not reproduced (docs/random-streams.md).
// A Philox generator keeps Note [reproducible randomness] instead: values independent of threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<RandomFn> random_stub("random");

namespace {

Generator& pick(const std::shared_ptr<Generator>& g) {
  return g ? *g : Generator::default_generator();
}

Tensor allocate(const char* op, const IntList& size, DType dtype, std::optional<Device> device) {
  const Device d = device.value_or(Device());
  EMBER_CHECK(has_backend(d.type), NotImplementedError, "[", op, "] not implemented for ", d.str());
  return empty(size, dtype, d);
}

DType floating(const char* op, std::optional<DType> dtype) {
  const DType d = dtype.value_or(get_default_dtype());
  EMBER_CHECK(is_floating_point(d) && !is_float8(d), Error, "[", op,
              "] expected a floating point dtype, but got ", dtype_name(d));
  return d;
}

bool is_mt(const std::shared_ptr<Generator>& g) {
  return pick(g).kind() == GeneratorKind::MT19937;
}

// Draws into `out` (contiguous).
Tensor draw(RandomKind kind, const Tensor& out, const std::shared_ptr<Generator>& generator, const Scalar& a,
            const Scalar& b, const Tensor& probs = Tensor()) {
  random_stub.get(out.device().type)(kind, out, pick(generator), a, b, probs);
  return out;
}

// The dims of `t` ordered by stride, largest first (ties keep their order): the order in which
// PyTorch's TensorIterator visits an output's elements, which is memory order.
IntList memory_order(const Tensor& t) {
  IntList dims(static_cast<size_t>(t.dim()));
  std::iota(dims.begin(), dims.end(), 0);
  auto key = [&](int64_t d) {  // a dim of size 1 steps nowhere: put it first
    return t.sizes()[d] <= 1 ? std::numeric_limits<int64_t>::max() : t.strides()[d];
  };
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t x, int64_t y) { return key(x) > key(y); });
  return dims;
}

// In-place forms. Philox: draw into a contiguous scratch of self's shape, then copy. mt19937: draw in
// self's memory order (straight into self when its elements are dense in some dim order).
Tensor draw_into(const char* op, RandomKind kind, const Tensor& self,
                 const std::shared_ptr<Generator>& generator, const Scalar& a, const Scalar& b,
                 const Tensor& probs = Tensor()) {
  floating(op, self.dtype());
  self.bump_version();
  if (!is_mt(generator) || self.is_contiguous()) {
    Tensor scratch = self.is_contiguous() ? self : empty(self.sizes(), self.dtype(), self.device());
    draw(kind, scratch, generator, a, b, probs);
    if (!scratch.is_same(self)) copy_(self, scratch);
    return self;
  }
  if (kind == RandomKind::Normal) kind = RandomKind::NormalScalar;  // PyTorch: blocked only if contiguous
  const Tensor ordered = permute(self, memory_order(self));
  Tensor scratch = ordered.is_contiguous() ? ordered : empty(ordered.sizes(), self.dtype(), self.device());
  draw(kind, scratch, generator, a, b, probs);
  if (!scratch.is_same(ordered)) copy_(ordered, scratch);
  return self;
}

// Normal draws into a fresh tensor: blocked for >= 16 elements (PyTorch's rule), else scalar.
RandomKind normal_kind(int64_t numel) {
  return numel >= 16 ? RandomKind::Normal : RandomKind::NormalScalar;
}

// multinomial as PyTorch's CPU build samples it (Note [PyTorch-compatible streams]).
Tensor multinomial_mt19937(const Tensor& self, int64_t num_samples, bool replacement,
                           const std::shared_ptr<Generator>& generator) {
  if (!replacement || num_samples == 1) {
    // The largest p / q with q ~ Exp(1) per row (the Gumbel-max trick); q laid out as self is, so
    // its draws follow self's memory order.
    const IntList order = memory_order(self);
    IntList sizes, inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      sizes.push_back(self.sizes()[order[i]]);
      inverse[order[i]] = static_cast<int64_t>(i);
    }
    const Tensor q = permute(empty(sizes, self.dtype(), self.device()), inverse);
    draw_into("multinomial", RandomKind::Exponential, q, generator, 1.0, 0.0);
    const Tensor ratio = div(self, q);
    if (num_samples == 1) return argmax(ratio, -1, true);
    return std::get<1>(topk(ratio, num_samples, -1, true, true));
  }
  // With replacement: per row the cumulative sum (float32 for narrower dtypes), normalised, its
  // last entry set to 1; each sample is the first entry >= a float64 uniform.
  const bool wide = self.dtype() == DType::Float64;
  const Tensor probs =
      to_dtype(self.dim() == 1 ? unsqueeze(self, 0) : self, wide ? DType::Float64 : DType::Float32, false)
          .contiguous();
  const int64_t rows = probs.sizes()[0], k = probs.sizes()[1];
  Tensor out = empty({rows, num_samples}, DType::Int64, self.device());
  int64_t* o = out.data<int64_t>();
  auto sample = [&](auto zero) {
    using A = decltype(zero);
    const A* p = probs.data<A>();
    std::vector<A> cum(static_cast<size_t>(k));
    Generator& g = pick(generator);
    const auto lock = g.lock();
    for (int64_t r = 0; r < rows; ++r) {
      A sum = 0;
      for (int64_t j = 0; j < k; ++j) cum[j] = (sum += p[r * k + j]);
      for (A& c : cum) c /= sum;
      cum[k - 1] = 1;
      for (int64_t s = 0; s < num_samples; ++s) {
        const double u = static_cast<double>(g.random64() & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
        int64_t lo = 0, hi = k;
        while (hi > lo) {
          const int64_t mid = lo + (hi - lo) / 2;
          if (cum[mid] < u) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        o[r * num_samples + s] = lo;
      }
    }
  };
  if (wide) {
    sample(0.0);
  } else {
    sample(0.0f);
  }
  return self.dim() == 1 ? squeeze(out, IntList{0}) : out;
}

}  // namespace

Tensor rand(const IntList& size, const std::shared_ptr<Generator>& generator, std::optional<DType> dtype,
            std::optional<Device> device) {
  return draw(RandomKind::Uniform, allocate("rand", size, floating("rand", dtype), device), generator, 0.0,
              1.0);
}

Tensor randn(const IntList& size, const std::shared_ptr<Generator>& generator, std::optional<DType> dtype,
             std::optional<Device> device) {
  const DType d = dtype.value_or(get_default_dtype());
  if (is_complex(d)) {
    // PyTorch draws a complex normal as its real view (real, imag interleaved) with std 1/sqrt(2),
    // so |z|^2 has mean 1 and the stream matches a real draw of twice the elements.
    IntList real_size = size;
    real_size.push_back(2);
    Tensor out = allocate("randn", real_size, to_real_dtype(d), device);
    draw(normal_kind(out.numel()), out, generator, 0.0, std::sqrt(0.5));
    return view_as_complex(out);
  }
  Tensor out = allocate("randn", size, floating("randn", d), device);
  return draw(normal_kind(out.numel()), out, generator, 0.0, 1.0);
}

namespace {

// One Poisson draw of rate `lambda` from `uniform` (doubles in [0, 1)), as PyTorch's CPU sampler
// does: products of uniforms below 10 (Knuth), Hormann's transformed rejection (PTRS) from 10.
template <typename Uniform>
double sample_poisson(double lambda, Uniform&& uniform) {
  if (lambda >= 10.0) {
    const double slam = std::sqrt(lambda), loglam = std::log(lambda);
    const double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    while (true) {
      const double u = uniform() - 0.5, v = uniform();
      const double us = 0.5 - std::fabs(u);
      const double k = std::floor((2.0 * a / us + b) * u + lambda + 0.43);
      if (us >= 0.07 && v <= vr) return k;
      if (k < 0.0 || (us < 0.013 && v > us)) continue;
      if (std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b) <=
          -lambda + k * loglam - std::lgamma(k + 1.0))
        return k;
    }
  }
  if (lambda == 0.0) return 0.0;
  const double enlam = std::exp(-lambda);
  double x = 0.0, prod = 1.0;
  while (true) {
    prod *= uniform();
    if (prod <= enlam) return x;
    x += 1.0;
  }
}

double unit_double(uint64_t bits) {  // the low 53 bits as a double in [0, 1)
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

// One Binomial(n, p) draw from `uniform` (doubles in [0, 1)), by the steps of PyTorch's CPU
// sampler, so an mt19937 stream gives its numbers: p <= 1/2 is sampled directly and a larger p as
// n minus the draw for 1 - p; inversion by geometric jumps when n p < 10 (the trials up to the
// next success are Geometric(p): jump straight to it), Hormann's BTRS (1993) otherwise. Unlike
// PyTorch's sampler, a NaN or infinite count cannot loop forever: NaN gives NaN, and infinity
// (with 0 < p) gives infinity.
template <typename Uniform>
double sample_binomial(double n, double p, Uniform&& uniform) {
  if (std::isnan(n) || std::isnan(p)) return std::numeric_limits<double>::quiet_NaN();
  if (n <= 0.0 || p <= 0.0) return 0.0;
  if (p >= 1.0 || std::isinf(n)) return n;
  const double q = p <= 0.5 ? p : 1.0 - p;  // the rarer outcome's probability
  double k = 0.0;
  if (n * q < 10.0) {
    const double log_1mq = std::log1p(-q);
    for (double trials = 0.0;; k += 1.0) {  // log(0) = -inf jumps past n
      trials += std::ceil(std::log(uniform()) / log_1mq);
      if (trials > n) break;
    }
  } else {
    const auto log_factorial = [](double x) { return std::lgamma(x + 1.0); };
    const double spq = std::sqrt(n * q * (1.0 - q));
    const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * q, c = n * q + 0.5;
    const double v_r = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq;
    const double log_r = std::log(q / (1.0 - q)), m = std::floor((n + 1.0) * q);
    const double log_f_m = m * log_r - log_factorial(m) - log_factorial(n - m);
    while (true) {
      const double u = uniform() - 0.5, v = uniform();
      const double us = 0.5 - std::fabs(u);
      k = std::floor((2.0 * a / us + b) * u + c);
      if (k < 0.0 || k > n) continue;
      if (us >= 0.07 && v <= v_r) break;
      // accept when v <= f(k) / f(m) times the hat's height, in logs
      if (std::log(v * alpha / (a / (us * us) + b)) <=
          k * log_r - log_factorial(k) - log_factorial(n - k) - log_f_m)
        break;
    }
  }
  return p <= 0.5 ? k : n - k;
}

// n float64 draws into out, element i = sample(i, uniform) for a sampler that takes as many
// uniforms as its rejection loop needs. MT19937 draws serially in element order, as PyTorch's CPU
// kernels take them; Philox gives element i its own stream, counter (offset + i, draw number), so
// the values depend on the seed only (Note [reproducible randomness]), however many draws a
// rejection takes.
template <typename Sample>
void draw_each(int64_t n, double* out, const std::shared_ptr<Generator>& generator, Sample&& sample) {
  Generator& g = pick(generator);
  if (is_mt(generator)) {
    const auto lock = g.lock();
    for (int64_t i = 0; i < n; ++i) out[i] = sample(i, [&] { return unit_double(g.random64()); });
    return;
  }
  const PhiloxState state = g.reserve(static_cast<uint64_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t c = state.offset + static_cast<uint64_t>(i);
    uint32_t j = 0;
    out[i] = sample(i, [&] {
      const Philox4 b =
          philox4x32({{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), j++, 0}},
                     static_cast<uint32_t>(state.seed), static_cast<uint32_t>(state.seed >> 32));
      return unit_double((static_cast<uint64_t>(b.v[0]) << 32) | b.v[1]);
    });
  }
}

}  // namespace

Tensor poisson(const Tensor& self, const std::shared_ptr<Generator>& generator) {
  floating("poisson", self.dtype());
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[poisson] not implemented for ",
              self.device().str());
  const Tensor rates = to_dtype(self, DType::Float64, false).contiguous();
  const double* r = rates.data<double>();
  const int64_t n = rates.numel();
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(r[i] >= 0.0, Error,
                "[poisson] invalid Poisson rate, expected rate to be non-negative, but got ", r[i]);
  Tensor samples = empty(rates.sizes(), DType::Float64, rates.device());
  draw_each(n, samples.data<double>(), generator,
            [&](int64_t i, auto&& uniform) { return sample_poisson(r[i], uniform); });
  return to_dtype(samples, self.dtype(), false);
}

Tensor binomial(const Tensor& count, const Tensor& prob, const std::shared_ptr<Generator>& generator) {
  const char* op = "binomial";
  EMBER_CHECK(is_floating_point(count.dtype()), ValueError, "[", op,
              "] binomial only supports floating-point dtypes for count, got: ", dtype_name(count.dtype()));
  floating(op, prob.dtype());
  EMBER_CHECK(count.dtype() == prob.dtype(), Error, "[", op,
              "] expected count and prob to have the same dtype, but got count of ",
              dtype_name(count.dtype()), " and prob of ", dtype_name(prob.dtype()));
  EMBER_CHECK(count.device().type == DeviceType::CPU && prob.device().type == DeviceType::CPU,
              NotImplementedError, "[", op, "] not implemented for ", prob.device().str());
  const IntList shape = pointwise::broadcast_shapes(op, count.sizes(), prob.sizes());
  const Tensor n = to_dtype(expand(count, shape), DType::Float64, false).contiguous();
  const Tensor p = to_dtype(expand(prob, shape), DType::Float64, false).contiguous();
  Tensor samples = empty(shape, DType::Float64, prob.device());
  draw_each(samples.numel(), samples.data<double>(), generator, [&](int64_t i, auto&& uniform) {
    return sample_binomial(n.data<double>()[i], p.data<double>()[i], uniform);
  });
  return to_dtype(samples, prob.dtype(), false);
}

Tensor randint(int64_t low, int64_t high, const IntList& size, const std::shared_ptr<Generator>& generator,
               std::optional<DType> dtype, std::optional<Device> device) {
  EMBER_CHECK(low < high, Error, "[randint] random_ expects 'from' to be less than 'to', but got from=", low,
              " >= to=", high);
  Tensor out = allocate("randint", size, dtype.value_or(DType::Int64), device);
  EMBER_CHECK(!is_complex(out.dtype()) && out.dtype() != DType::Bool, Error,
              "[randint] expected an integer or floating dtype, but got ", dtype_name(out.dtype()));
  return draw(RandomKind::Integer, out, generator, Scalar(low), Scalar(high));
}

Tensor normal(double mean, double std, const IntList& size, const std::shared_ptr<Generator>& generator,
              std::optional<DType> dtype, std::optional<Device> device) {
  EMBER_CHECK(std >= 0.0, Error, "[normal] normal expects std >= 0.0, but found std ", std);
  Tensor out = allocate("normal", size, floating("normal", dtype), device);
  return draw(normal_kind(out.numel()), out, generator, mean, std);
}

Tensor uniform_(const Tensor& self, double from, double to, const std::shared_ptr<Generator>& generator) {
  EMBER_CHECK(from <= to, Error,
              "[uniform_] uniform_ expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  return draw_into("uniform_", RandomKind::Uniform, self, generator, from, to);
}

Tensor normal_(const Tensor& self, double mean, double std, const std::shared_ptr<Generator>& generator) {
  EMBER_CHECK(std >= 0.0, Error, "[normal_] normal expects std >= 0.0, but found std ", std);
  return draw_into("normal_", normal_kind(self.numel()), self, generator, mean, std);
}

Tensor randperm(int64_t n, const std::shared_ptr<Generator>& generator, std::optional<DType> dtype,
                std::optional<Device> device) {
  EMBER_CHECK(n >= 0, Error, "[randperm] n must be non-negative, got", n);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  if (is_mt(generator)) {  // PyTorch's shuffle: position i swaps with i + draw % (n - i)
    Generator& g = pick(generator);
    const auto lock = g.lock();
    for (int64_t i = 0; i + 1 < n; ++i) {
      const auto z = static_cast<int64_t>(g.random() % static_cast<uint64_t>(n - i));
      std::swap(perm[i], perm[z + i]);
    }
  } else {
    // Fisher-Yates; step i uses Philox block offset + i, so the permutation depends on the seed only.
    const PhiloxState state = pick(generator).reserve(static_cast<uint64_t>(n));
    for (int64_t i = n - 1; i > 0; --i) {
      const Philox4 r = philox(state.seed, state.offset + static_cast<uint64_t>(i));
      const uint64_t draw64 = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
      std::swap(perm[i], perm[draw64 % static_cast<uint64_t>(i + 1)]);
    }
  }
  Tensor out = allocate("randperm", {n}, DType::Int64, device);
  std::copy(perm.begin(), perm.end(), out.data<int64_t>());
  return dtype && *dtype != DType::Int64 ? to_dtype(out, *dtype, false) : out;
}

Tensor bernoulli(const Tensor& self, const std::shared_ptr<Generator>& generator) {
  floating("bernoulli", self.dtype());
  const Tensor p = to_dtype(self, DType::Float64, false).contiguous();
  const double* pv = p.data<double>();
  for (int64_t i = 0; i < p.numel(); ++i) {
    EMBER_CHECK(pv[i] >= 0.0 && pv[i] <= 1.0, Error,
                "[bernoulli] Expected p_in >= 0 && p_in <= 1 to be true, but got ", pv[i]);
  }
  Tensor out = empty(self.sizes(), self.dtype(), self.device());
  // PyTorch compares float64 p with a 53-bit uniform, narrower p (as float) with a 24-bit one.
  const RandomKind kind = self.dtype() == DType::Float64 ? RandomKind::Bernoulli : RandomKind::BernoulliFloat;
  return draw(kind, out, generator, 0.0, 0.0, p);
}

Tensor bernoulli_(const Tensor& self, double p, const std::shared_ptr<Generator>& generator) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, Error,
              "[bernoulli_] bernoulli_ expects p to be in [0, 1], but got p=", p);
  // one probability for every element: passed as the scalar, with no probability tensor
  return draw_into("bernoulli_", RandomKind::Bernoulli, self, generator, p, 0.0);
}

Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement,
                   const std::shared_ptr<Generator>& generator) {
  EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Error,
              "[multinomial] prob_dist must be 1 or 2 dim, but got ", self.dim());
  EMBER_CHECK(is_floating_point(self.dtype()), Error,
              "[multinomial] multinomial only supports floating-point dtypes "
              "for input, but got: ",
              dtype_name(self.dtype()));
  EMBER_CHECK(num_samples > 0, Error, "[multinomial] cannot sample n_sample <= 0 samples");
  const int64_t k = self.sizes().back();
  EMBER_CHECK(replacement || num_samples <= k, Error,
              "[multinomial] cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  const Tensor probs =
      to_dtype(self.dim() == 1 ? unsqueeze(self, 0) : self, DType::Float64, false).contiguous();
  const int64_t rows = probs.sizes()[0];
  const double* p = probs.data<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double total = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      const double v = p[r * k + j];
      EMBER_CHECK(std::isfinite(v) && v >= 0.0, Error,
                  "[multinomial] probability tensor contains either `inf`, `nan` or element < 0");
      total += v;
    }
    EMBER_CHECK(total > 0.0, Error,
                "[multinomial] invalid multinomial distribution (sum of probabilities <= 0)");
  }
  if (is_mt(generator)) return multinomial_mt19937(self, num_samples, replacement, generator);
  // One Philox block per (row, sample): a uniform from two words for each draw.
  const PhiloxState state = pick(generator).reserve(static_cast<uint64_t>(rows * std::max(num_samples, k)));
  Tensor out = empty({rows, num_samples}, DType::Int64, self.device());
  int64_t* o = out.data<int64_t>();
  std::vector<double> weight(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(p + r * k, p + (r + 1) * k, weight.begin());
    for (int64_t s = 0; s < num_samples; ++s) {
      const Philox4 rnd =
          philox(state.seed, state.offset + static_cast<uint64_t>(r * std::max(num_samples, k) + s));
      double total = 0.0;
      for (double w : weight) total += w;
      const double u =
          static_cast<double>(((static_cast<uint64_t>(rnd.v[0]) << 32) | rnd.v[1]) >> 11) * 0x1.0p-53 * total;
      int64_t pick_index = k - 1;
      double cumulative = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        cumulative += weight[j];
        if (u < cumulative && weight[j] > 0.0) {
          pick_index = j;
          break;
        }
      }
      while (weight[pick_index] <= 0.0 && pick_index > 0) --pick_index;  // rounding at the top end
      o[r * num_samples + s] = pick_index;
      if (!replacement) weight[pick_index] = 0.0;  // drawn without replacement: remove it
    }
  }
  return self.dim() == 1 ? squeeze(out, IntList{0}) : out;
}

}  // namespace ember
