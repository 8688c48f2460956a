#pragma once
// One allocator interface for every device. The CPU allocator returns 64-byte aligned memory;
// a device backend (the CUDA caching allocator) registers its own with set_allocator().
#include <cstddef>
#include <functional>
#include <memory>

#include "ember/device.h"
#include "ember/export.h"

namespace ember {

// Owning pointer to a buffer together with the function that releases it.
using DataPtr = std::unique_ptr<void, std::function<void(void*)>>;

class EMBER_API Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

constexpr size_t kCpuAlignment = 64;

EMBER_API Allocator* get_allocator(DeviceType type);  // NotImplementedError if none registered
EMBER_API void set_allocator(DeviceType type, Allocator* allocator);
// The CPU allocator's cache of large blocks (Note [caching CPU allocator]).
EMBER_API void cpu_empty_cache();
EMBER_API size_t cpu_cached_bytes();
// Bytes held by live CPU tensors' buffers (as requested; not counting the cache).
EMBER_API size_t cpu_allocated_bytes();

}  // namespace ember
