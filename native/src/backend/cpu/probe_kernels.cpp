// The FMA-peak probe the benchmarks compare against (interface in src/ops/kernels.h): each
// thread runs independent chains of vector multiply-adds, enough to hide the FMA latency.
#include <chrono>
#include <vector>

#include "backend/cpu/vec.h"
#include "ember/parallel.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// Floating-point operations per second of one thread over about `seconds`.
double probe_one(double seconds) {
  using V = Vec<float>;
  constexpr int kChains = 12;  // latency 4-5 cycles x 2 FMA ports, with margin
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = splat<float>(1.0f + 1e-3f * i);
  const V mul = splat<float>(0.999999f), add = splat<float>(1e-7f);
  const int64_t inner = 1 << 16;
  int64_t rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    for (int64_t r = 0; r < inner; ++r) {
      for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * mul + add;
    }
    ++rounds;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < seconds);
  float sink = 0;
  for (int i = 0; i < kChains; ++i) sink += acc[i][0];
  volatile float keep = sink;  // the chains must not be optimized away
  (void)keep;
  return 2.0 * kLanes<float> * kChains * inner * rounds / elapsed;
}

double fma_probe_kernel(int threads, double seconds) {
  std::vector<double> rates(threads, 0.0);
  parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) rates[t] = probe_one(seconds);
  });
  double total = 0;
  for (double r : rates) total += r;
  return total;
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(fma_probe_stub, &fma_probe_kernel);

}  // namespace ember::EMBER_CPU_NS
