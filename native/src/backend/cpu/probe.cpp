// fma_peak_probe: the benchmarks' measure of the machine (kernel in probe_kernels.cpp).
#include "ember/parallel.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<FmaProbeFn> fma_probe_stub("fma_peak_probe");

double fma_peak_probe(int threads, double seconds) {
  EMBER_CHECK(threads >= 1 && seconds > 0, ValueError,
              "[fma_peak_probe] expected threads >= 1 and seconds > 0, but got ", threads, " and ", seconds);
  const int saved = get_num_threads();
  set_num_threads(threads);
  const double rate = fma_probe_stub.get(DeviceType::CPU)(threads, seconds);
  set_num_threads(saved);
  return rate;
}

}  // namespace ember
