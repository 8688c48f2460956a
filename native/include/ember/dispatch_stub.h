#pragma once
// DispatchStub: one function pointer per (device, CPU capability) for a kernel family.
//
// Note [CPU capabilities]: each CPU kernel file is compiled for baseline x86-64 and with
// AVX2+FMA, and the vectorized ones also with AVX-512 (F/BW/VL/DQ), into different namespaces;
// all register here and the stub calls the best one this processor supports.
// EMBER_CPU_CAPABILITY=default|avx2 caps the choice (for tests of the narrower builds).
// Device backends register their kernel for their device type, so call sites never change
// when a CUDA kernel arrives.
#include <array>

#include "ember/device.h"
#include "ember/error.h"
#include "ember/export.h"

namespace ember {

enum class CpuCapability : int { Default = 0, AVX2 = 1, AVX512 = 2 };
constexpr int kNumCpuCapabilities = 3;
EMBER_API CpuCapability cpu_capability();  // what this process uses
EMBER_API const char* cpu_capability_name(CpuCapability c);

template <typename Fn>
struct DispatchStub {
  const char* name;
  std::array<Fn, kNumCpuCapabilities> cpu{};
  std::array<Fn, kNumDeviceTypes> device{};

  explicit constexpr DispatchStub(const char* n) : name(n) {}

  Fn get(DeviceType type) const {
    if (type == DeviceType::CPU) {
      for (int c = static_cast<int>(cpu_capability()); c >= 0; --c) {
        if (cpu[c]) return cpu[c];
      }
    } else if (device[static_cast<int>(type)]) {
      return device[static_cast<int>(type)];
    }
    throw NotImplementedError(std::string("[") + name + "] not implemented for " + device_type_name(type));
  }
};

}  // namespace ember

// In a CPU kernel file: EMBER_REGISTER_CPU_KERNEL(add_stub, &add_kernel);
#define EMBER_CPU_REGISTER_CONCAT2(a, b) a##b
#define EMBER_CPU_REGISTER_CONCAT(a, b) EMBER_CPU_REGISTER_CONCAT2(a, b)
#define EMBER_REGISTER_CPU_KERNEL(stub, fn)                                                 \
  static const bool EMBER_CPU_REGISTER_CONCAT(stub##_registered_, __LINE__) = [] {          \
    ::ember::stub.cpu[static_cast<int>(::ember::CpuCapability::EMBER_CPU_CAPABILITY)] = fn; \
    return true;                                                                            \
  }()
