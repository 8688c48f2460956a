#include <cstdlib>
#include <cstring>

#include "ember/dispatch_stub.h"

namespace ember {

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::AVX512: return "avx512";
    case CpuCapability::AVX2: return "avx2";
    default: return "default";
  }
}

CpuCapability cpu_capability() {
  static const CpuCapability chosen = [] {
    CpuCapability best = CpuCapability::Default;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = CpuCapability::AVX2;
    if (best == CpuCapability::AVX2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq")) {
      best = CpuCapability::AVX512;
    }
#endif
    const char* forced = std::getenv("EMBER_CPU_CAPABILITY");
    if (forced != nullptr) {
      for (CpuCapability c : {CpuCapability::Default, CpuCapability::AVX2}) {
        if (std::strcmp(forced, cpu_capability_name(c)) == 0 && c < best) best = c;
      }
    }
    return best;
  }();
  return chosen;
}

}  // namespace ember
